"""The booking example with ``--auth-issuer`` (docs/booking.md, "Authorization"), against a real NanoIDP.

The example runs in this process exactly as its command line starts it (``booking.serve``), over
Streamable HTTP (both eras) and WebSocket. People get their tokens from NanoIDP by the whole
authorization code + PKCE flow, for the example's resource; the minimcp client sends them as a
static bearer header. The pages' sign-in is NanoIDP's persona picker, submitted as a browser would
(``NanoIDP.sign_in_at``), with the browser's cookies in an httpx client.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import pathlib
import sys
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from minimcp import Accepted, McpError, connect_http, connect_websocket
from minimcp.client.answers import UrlElicitationRequest
from minimcp.hosting.websocket import INSUFFICIENT_SCOPE
from minimcp.wire import errors
from tests.helpers import nanoidp as idp
from tests.helpers.http_modern import accept, body, input_required, meta, modern_headers
from tests.helpers.nanoidp import NanoIDP
from tests.helpers.websocket import RawWs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import booking

BOOKING = pathlib.Path(booking.__file__)
nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

READ, WRITE, CONFIRM = "bookings:read", "bookings:write", "deposits:confirm"
PERSON = [READ, WRITE]
WAIT = 60
URL_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
JSON_SSE = "application/json, text/event-stream"
V_LEGACY = "2025-11-25"


class Served:
    """The example as started by its command line, and what a test needs of it."""

    def __init__(self, app: booking.BookingApp, url: str, idp: NanoIDP) -> None:
        self.app = app
        self.url = url  # the MCP endpoint (http:// or ws://)
        self.resource = url.replace("ws://", "http://", 1)
        self.idp = idp
        #: Every access token handed out in this test (none may appear in a log line).
        self.tokens: list[str] = []

    async def token(self, user: str, scopes: list[str], resource: str | None = None) -> str:
        got = await anyio.to_thread.run_sync(lambda: self.idp.token_for(user, scopes, resource or self.resource))
        self.tokens.append(got.access_token)
        return got.access_token

    @property
    def metadata_url(self) -> str:
        parts = urllib.parse.urlsplit(self.resource)
        return f"http://{parts.netloc}/.well-known/oauth-protected-resource/mcp"


@contextlib.asynccontextmanager
async def serving(server: NanoIDP, transport: str = "http") -> AsyncIterator[Served]:
    args = booking.parse_args(["--transport", transport, "--auth-issuer", server.issuer, "--elicitation-timeout", "60"])
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(WAIT):
            app, url = await tg.start(booking.serve, args)
        yield Served(app, url, server)
        tg.cancel_scope.cancel()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def challenge_of(response: httpx.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", ...`` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    return {k.strip(): v.strip('"') for k, v in (p.split("=", 1) for p in value[7:].split('", ') if p)}


def structured(result: Any) -> dict[str, Any]:
    content = result.structured_content
    assert isinstance(content, dict), result
    return content


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


# --- a browser: cookies, and NanoIDP's persona picker ----------------------------------------------


class Browser:
    """One person's browser: its own cookies; signs in at NanoIDP when a page sends it there."""

    def __init__(self, server: NanoIDP) -> None:
        self.idp = server
        self.http = httpx.AsyncClient(follow_redirects=False, timeout=30)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def open(self, url: str, method: str = "GET", *, as_user: str | None = None) -> httpx.Response:
        """Request a page; when it sends the browser to sign in and ``as_user`` is given, sign in and come back."""
        answer = await self.http.request(method, url)
        if answer.status_code != 303 or as_user is None:
            return answer
        location = answer.headers["location"]
        assert location.startswith(self.idp.endpoint("authorization") + "?"), location
        back = await anyio.to_thread.run_sync(self.idp.sign_in_at, location, as_user)
        callback = await self.http.get(back)  # the page server's /callback: who signed in, then back
        assert callback.status_code == 303, (callback.status_code, callback.text)
        page = urllib.parse.urljoin(url, callback.headers["location"])
        assert page == url, (page, url)
        return await self.http.request(method, url)


@contextlib.asynccontextmanager
async def browsers(server: NanoIDP, count: int) -> AsyncIterator[list[Browser]]:
    made = [Browser(server) for _ in range(count)]
    try:
        yield made
    finally:
        for browser in made:
            await browser.aclose()


def page_steps(
    seen: list[str], check: Callable[[str], Awaitable[None]]
) -> Callable[[UrlElicitationRequest], Awaitable[Any]]:
    """A URL handler that records the page and runs ``check`` on it (the people's browsers) before accepting."""

    async def handler(request: UrlElicitationRequest) -> Any:
        seen.append(request.url)
        await check(request.url)
        return Accepted(None)

    return handler


def connected(served: Served, transport: str, era: str, token: str, **options: Any) -> Any:
    """The minimcp client of ``served`` with ``token`` as its bearer header (HTTP on ``era``, or WebSocket)."""
    if transport == "http":
        return connect_http(served.url, headers=bearer(token), era=era, **options)
    return connect_websocket(served.url, headers=bearer(token), **options)


# --- discovery and refusals -----------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_metadata_and_the_401_challenge(nanoidp: NanoIDP, transport: str) -> None:
    async with serving(nanoidp, transport) as served, httpx.AsyncClient(timeout=30) as http:
        origin = served.metadata_url.split("/.well-known")[0]
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            document = (await http.get(origin + path)).json()
            assert document == {
                "resource": served.resource,
                "authorization_servers": [nanoidp.issuer],
                "bearer_methods_supported": ["header"],
                "scopes_supported": [READ, WRITE, CONFIRM],
                "resource_name": "Restaurant booking",
            }
        alien = await served.token("alice", PERSON, "http://127.0.0.1:9/mcp")  # for another resource
        expected = f'Bearer resource_metadata="{served.metadata_url}", scope="bookings:read bookings:write"'
        if transport == "http":
            init = body(1, "initialize", {"protocolVersion": V_LEGACY, "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "0"}}, envelope=False)  # fmt: skip
            headers = {"accept": JSON_SSE, "content-type": "application/json"}
            refused = await http.post(served.url, json=init, headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == expected
            refused = await http.post(served.url, json=init, headers={**headers, **bearer(alien)})
        else:
            async with RawWs.connect(served.url, subprotocols=["mcp"]) as raw:
                assert raw.response is not None and raw.response.status_code == 401
                assert raw.response.headers["WWW-Authenticate"] == expected
            async with RawWs.connect(served.url, subprotocols=["mcp"], headers=bearer(alien)) as raw:
                assert raw.response is not None
                refused = httpx.Response(raw.response.status_code, headers=dict(raw.response.headers.raw_items()))
        assert refused.status_code == 401
        params = challenge_of(refused)
        assert params["error"] == "invalid_token" and params["scope"] == "bookings:read bookings:write"
        assert params["resource_metadata"] == served.metadata_url and alien not in refused.headers["www-authenticate"]
        assert not served.app.memory.bookings


async def test_a_token_without_the_scope_gets_403_naming_it_on_both_eras(nanoidp: NanoIDP) -> None:
    async with serving(nanoidp) as served, httpx.AsyncClient(timeout=30) as http:
        reader = await served.token("alice", [READ])
        person = await served.token("alice", PERSON)
        provider = await served.token("bob", [CONFIRM])  # the payment provider's client stands in
        base = {"accept": JSON_SSE, "content-type": "application/json", **bearer(reader)}
        init = body(1, "initialize", {"protocolVersion": V_LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "0"}}, envelope=False)  # fmt: skip
        opened = await http.post(served.url, json=init, headers=base)
        assert opened.status_code == 200, opened.text
        session = {**base, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": V_LEGACY}
        call = body(2, "tools/call", {"name": "book_table", "arguments": {"date": "2025-12-24", "party_size": 2}},
                    envelope=False)  # fmt: skip
        legacy = await http.post(served.url, json=call, headers=session)
        modern = await http.post(
            served.url,
            json=body(3, "tools/call", {"name": "book_table", "arguments": {"date": "2025-12-24", "party_size": 2}}),
            headers={**modern_headers("tools/call", "book_table"), **bearer(reader)},
        )
        for refused in (legacy, modern):
            assert refused.status_code == 403, refused.text
            params = challenge_of(refused)
            assert (params["error"], params["scope"]) == ("insufficient_scope", WRITE)
            assert params["resource_metadata"] == served.metadata_url
        # confirm_deposit is the provider's: a person's ordinary token gets 403 naming deposits:confirm
        confirm = body(4, "tools/call", {"name": "confirm_deposit", "arguments": {"booking_id": "x"}})
        as_person = {**modern_headers("tools/call", "confirm_deposit"), **bearer(person)}
        refused = await http.post(served.url, json=confirm, headers=as_person)
        assert refused.status_code == 403 and challenge_of(refused)["scope"] == CONFIRM
        # listing the tools needs bookings:read (the provider's token has none)
        listing = await http.post(served.url, json=body(5, "tools/list"),
                                  headers={**modern_headers("tools/list"), **bearer(provider)})  # fmt: skip
        assert listing.status_code == 403 and challenge_of(listing)["scope"] == READ
        assert not served.app.memory.bookings  # nothing ran


async def test_on_an_open_websocket_a_missing_scope_is_an_error_and_the_connection_goes_on(nanoidp: NanoIDP) -> None:
    async with serving(nanoidp, "ws") as served:
        reader = await served.token("alice", [READ])
        async with connect_websocket(served.url, headers=bearer(reader)) as client:
            assert {t.name for t in await client.list_tools()} == {"booking_status"}  # what the token may call
            with pytest.raises(McpError) as refused:
                await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert refused.value.code == INSUFFICIENT_SCOPE and WRITE in str(refused.value.data)
            result = await client.call_tool("booking_status", {"booking_id": "nope"})
            assert result.is_error and "Unknown booking_id" in text(result)
        assert not served.app.memory.bookings


# --- everything belongs to a person ---------------------------------------------------------------


@pytest.mark.parametrize("transport,era", [("http", "legacy"), ("http", "modern"), ("ws", "legacy")])
async def test_a_booking_is_its_persons_and_another_person_sees_an_unknown_id(
    nanoidp: NanoIDP, transport: str, era: str
) -> None:
    async with serving(nanoidp, transport) as served:
        alice, bob = await served.token("alice", PERSON), await served.token("bob", PERSON)
        async with connected(served, transport, era, alice) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            booking_id = structured(made)["booking_id"]
            mine = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert structured(mine)["status"] == "booked"
        async with connected(served, transport, era, bob) as client:
            theirs = await client.call_tool("booking_status", {"booking_id": booking_id})
            unknown = await client.call_tool("booking_status", {"booking_id": "no-such-booking-id"})
            assert theirs.is_error and unknown.is_error
            assert text(theirs) == text(unknown).replace("no-such-booking-id", booking_id)
            calendar = await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            assert calendar.is_error and "Unknown booking_id" in text(calendar)
        (stored,) = served.app.memory.bookings.values()
        assert stored.owner == (nanoidp.issuer, "alice")


async def test_another_persons_token_on_a_session_is_404_and_a_new_token_of_its_person_goes_on(
    nanoidp: NanoIDP,
) -> None:
    async with serving(nanoidp) as served, httpx.AsyncClient(timeout=30) as http:
        alice, alice_again, bob = [await served.token(u, PERSON) for u in ("alice", "alice", "bob")]
        assert alice != alice_again
        base = {"accept": JSON_SSE, "content-type": "application/json"}
        init = body(1, "initialize", {"protocolVersion": V_LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "0"}}, envelope=False)  # fmt: skip
        opened = await http.post(served.url, json=init, headers={**base, **bearer(alice)})
        session = {**base, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": V_LEGACY}
        call = body(2, "tools/call", {"name": "book_table", "arguments": {"date": "2025-12-24", "party_size": 2}},
                    envelope=False)  # fmt: skip
        hijack = await http.post(served.url, json=call, headers={**session, **bearer(bob)})
        assert hijack.status_code == 404, hijack.text
        assert not served.app.memory.bookings
        own = await http.post(served.url, json=call, headers={**session, **bearer(alice_again)})
        assert own.status_code == 200, own.text
        assert '"booked"' in own.text and len(served.app.memory.bookings) == 1


async def test_a_2026_retry_with_another_persons_token_is_refused_and_the_owners_still_works(nanoidp: NanoIDP) -> None:
    async with serving(nanoidp) as served, httpx.AsyncClient(timeout=httpx.Timeout(30, read=None)) as http:
        alice, bob = await served.token("alice", PERSON), await served.token("bob", PERSON)
        arguments = {"date": "2025-12-25", "party_size": 2}  # full: the tool asks for another date

        async def call(token: str, n: int, **extra: Any) -> httpx.Response:
            params = {"name": "book_table", "arguments": arguments, "_meta": meta(URL_CAPS), **extra}
            return await http.post(served.url, json=body(n, "tools/call", params),
                                   headers={**modern_headers("tools/call", "book_table"), **bearer(token)})  # fmt: skip

        first = await call(alice, 1)
        key, entry, state = input_required(first.json())
        assert entry["method"] == "elicitation/create"
        answers = {key: accept(accept_alternative=True, date="2025-12-26")}
        stolen = await call(bob, 2, inputResponses=answers, requestState=state)
        reply = stolen.json()
        assert reply["error"]["code"] == errors.INVALID_PARAMS, reply
        assert not served.app.memory.bookings
        own = (await call(alice, 3, inputResponses=answers, requestState=state)).json()
        assert own["result"]["resultType"] == "complete", own
        assert own["result"]["structuredContent"]["status"] == "booked"
        assert own["result"]["structuredContent"]["date"] == "2025-12-26"
        (stored,) = served.app.memory.bookings.values()
        assert stored.owner == (nanoidp.issuer, "alice")


# --- the pages sign the person in -----------------------------------------------------------------


@pytest.mark.parametrize("transport,era", [("http", "legacy"), ("http", "modern"), ("ws", "legacy")])
async def test_the_deposit_page_signs_in_and_serves_only_its_person(
    nanoidp: NanoIDP, transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving(nanoidp, transport) as served, browsers(nanoidp, 3) as (nobody, bobs, alices):
        alice = await served.token("alice", PERSON)
        app = served.app

        def deposit_paid() -> bool:
            return any(d.paid for d in app.memory.deposits.values())

        async def people_at_the_page(url: str) -> None:
            anonymous = await nobody.open(url)  # not signed in: off to the authorization server, nothing read
            assert anonymous.status_code == 303
            assert anonymous.headers["location"].startswith(nanoidp.endpoint("authorization") + "?")
            cookie = anonymous.headers["set-cookie"]
            assert cookie.startswith(booking.SIGN_IN_COOKIE + "=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
            assert (await nobody.open(url, "POST")).status_code == 303 and not deposit_paid()
            wrong = await bobs.open(url, as_user="bob")
            assert wrong.status_code == 403 and not deposit_paid()
            assert (await bobs.open(url, "POST")).status_code == 403 and not deposit_paid()
            right = await alices.open(url, as_user="alice")
            assert right.status_code == 200 and "Pay the deposit" in right.text
            paid = await alices.open(url, "POST")
            assert paid.status_code == 200 and "Deposit paid" in paid.text and deposit_paid()

        seen: list[str] = []
        async with connected(served, transport, era, alice, url_handler=page_steps(seen, people_at_the_page)) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-26", "party_size": 8})
            assert structured(result)["status"] == "booked", result  # paid on the page, then accepted
            assert "/deposit/" in seen[0]
            status = await client.call_tool("booking_status", {"booking_id": structured(result)["booking_id"]})
            assert structured(status)["status"] == "booked"
        lines = [f"{r.name}: {r.getMessage()}" for r in caplog.records]
        assert lines and not [line[:200] for line in lines if any(t in line for t in served.tokens)]
        if transport == "ws":  # the websockets core logs every handshake header at DEBUG: credentials redacted
            assert "websockets.client: > Authorization: [redacted]" in lines
            assert "websockets.server: < Authorization: [redacted]" in lines


async def test_the_providers_client_confirms_any_persons_deposit_and_the_person_is_told(nanoidp: NanoIDP) -> None:
    async with serving(nanoidp) as served:
        alice, provider = await served.token("alice", PERSON), await served.token("bob", [CONFIRM])

        async def later(url: str) -> None:
            pass  # the person agrees to open the page; the provider reports the payment

        async with connected(served, "http", "legacy", alice, url_handler=page_steps([], later)) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-26", "party_size": 8})
            assert structured(made)["status"] == "deposit_pending"
            arguments = {"booking_id": structured(made)["booking_id"]}
            with pytest.raises(McpError, match="deposits:confirm"):  # a person's ordinary token: 403
                await client.call_tool("confirm_deposit", arguments)
            assert structured(await client.call_tool("booking_status", arguments))["status"] == "deposit_pending"
            async with connected(served, "http", "legacy", provider) as payments:
                confirmed = await payments.call_tool("confirm_deposit", arguments)
                assert structured(confirmed)["status"] == "booked"
                with pytest.raises(McpError, match="bookings:read"):  # the provider's token reads nothing
                    await payments.call_tool("booking_status", arguments)
            with anyio.fail_after(WAIT):
                await client.wait_elicitation_complete(structured(made)["elicitation_id"])
            assert structured(await client.call_tool("booking_status", arguments))["status"] == "booked"


async def test_a_callback_not_started_in_this_browser_is_refused(nanoidp: NanoIDP) -> None:
    async with serving(nanoidp) as served, browsers(nanoidp, 2) as (started, other):
        pages = served.app.pages_url
        assert pages is not None
        went = await started.open(f"{pages}/deposit/someone-deposit")
        back = await anyio.to_thread.run_sync(nanoidp.sign_in_at, went.headers["location"], "alice")
        refused = await other.http.get(back)  # another browser, without the sign-in's cookie
        assert refused.status_code == 403 and booking.PERSON_COOKIE not in refused.headers.get("set-cookie", "")
        replayed = await started.http.get(back)
        assert replayed.status_code == 303  # the browser that started it is signed in
        page = urllib.parse.urljoin(pages, replayed.headers["location"])
        assert (await started.http.get(page)).status_code == 403  # a page not for alice


@pytest.mark.parametrize("transport,era", [("http", "legacy"), ("http", "modern"), ("ws", "legacy")])
async def test_the_calendar_page_signs_in_and_serves_only_its_person(
    nanoidp: NanoIDP, transport: str, era: str
) -> None:
    async with serving(nanoidp, transport) as served, browsers(nanoidp, 2) as (bobs, alices):
        alice = await served.token("alice", PERSON)

        async def people_at_the_page(url: str) -> None:
            wrong = await bobs.open(url, as_user="bob")
            assert wrong.status_code == 403
            assert (await bobs.open(url, "POST")).status_code == 403
            assert not served.app.memory.completed_authorizations and not served.app.authorized
            right = await alices.open(url, as_user="alice")
            assert right.status_code == 200 and "Authorize calendar access" in right.text
            done = await alices.open(url, "POST")
            assert done.status_code == 200 and "authorized" in done.text

        seen: list[str] = []
        async with connected(served, transport, era, alice, url_handler=page_steps(seen, people_at_the_page)) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            arguments = {"booking_id": structured(made)["booking_id"]}
            if era == "modern":
                added = await client.call_tool("add_to_calendar", arguments)
            else:
                added = await client.call_tool_with_consent("add_to_calendar", arguments, completion_timeout=WAIT)
            assert structured(added)["status"] == "added", added
            assert len(seen) == 1 and "/authorize/" in seen[0]


async def test_the_program_started_with_auth_issuer_logs_no_token_nor_code(
    nanoidp: NanoIDP, tmp_path: pathlib.Path
) -> None:
    """The real command line and logging set-up (INFO on stderr): a session, a refusal, a page sign-in."""
    port = idp.free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    log_file = tmp_path / "stderr.txt"
    argv = [sys.executable, str(BOOKING), "--transport", "http", "--port", str(port), "--auth-issuer", nanoidp.issuer]
    with log_file.open("wb") as sink:
        process = await anyio.open_process(argv, stdin=None, stdout=None, stderr=sink)
    try:
        for _ in range(WAIT * 20):  # its stderr announces the endpoint once it serves
            if "mcp: " in log_file.read_text():
                break
            await anyio.sleep(0.05)
        pages = log_file.read_text().split("pages: ", 1)[1].split()[0].rstrip("/")
        got = [await anyio.to_thread.run_sync(functools.partial(nanoidp.token_for, u, PERSON, resource))
               for u in ("alice", "bob")]  # fmt: skip
        tokens = [tokens_of.access_token for tokens_of in got]
        async with httpx.AsyncClient(timeout=30) as http, browsers(nanoidp, 1) as (browser,):
            base = {"accept": JSON_SSE, "content-type": "application/json"}
            init = body(1, "initialize", {"protocolVersion": V_LEGACY, "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "0"}}, envelope=False)  # fmt: skip
            opened = await http.post(resource, json=init, headers={**base, **bearer(tokens[0])})
            assert opened.status_code == 200, opened.text
            session = {**base, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": V_LEGACY}
            assert (await http.post(resource, json=init, headers={**session, **bearer(tokens[1])})).status_code == 404
            assert (await http.post(resource, json=init, headers={**base, **bearer(tokens[0][:-4])})).status_code == 401
            went = await browser.open(f"{pages}/deposit/unknown-deposit")
            back = await anyio.to_thread.run_sync(nanoidp.sign_in_at, went.headers["location"], "alice")
            assert (await browser.http.get(back)).status_code == 303
            code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))["code"]
    finally:
        process.terminate()
        with anyio.fail_after(WAIT):
            await process.wait()
    logged = log_file.read_text()
    assert "authorization on: tokens of" in logged
    assert not [secret for secret in (*tokens, code) if secret in logged], logged[-2000:]


def test_the_command_line_checks_the_authorization_options(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, complaint in (
        (["--auth-issuer", "http://127.0.0.1:1"], "stdio never uses"),
        (["--transport", "http", "--page-client-id", "x"], "need --auth-issuer"),
        (["--transport", "http", "--auth-issuer", "http://127.0.0.1:1", "--page-client-secret", "s"], "needs --page"),
        (["--transport", "http", "--auth-issuer", "ftp://x"], "not an http"),
    ):
        with pytest.raises(SystemExit):
            booking.parse_args(argv)
        assert complaint in capsys.readouterr().err
    args = booking.parse_args(["--transport", "ws", "--port", "7", "--auth-issuer", "https://as.example/tenant/"])
    assert args.auth_issuer == "https://as.example/tenant/"  # an issuer is kept exactly (iss is compared as is)
    assert booking.resource_of(args) == "http://127.0.0.1:7/mcp"
    args = booking.parse_args(["--transport", "http", "--public-url", "https://booking.example",
                               "--auth-issuer", "https://as.example"])  # fmt: skip
    assert booking.resource_of(args) == "https://booking.example/mcp"
    args = booking.parse_args(["--transport", "http", "--auth-issuer", "https://as.example",
                               "--auth-audience", "https://api.example/mcp"])  # fmt: skip
    assert booking.resource_of(args) == "https://api.example/mcp"
