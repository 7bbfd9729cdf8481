"""Authorization on revision 2026-07-28 over HTTP (issue 29): the person per request, not per connection.

One connection serves every 2026-07-28 POST of a worker, so the person travels with each request:
``ctx.auth`` is the caller's own; a ``requestState`` is bound to its person (another person's token on
it is refused with -32602, runs nothing, and leaves the state to its owner; a refreshed token of the
same person goes on); an operation needing scopes the token lacks is answered ``403`` before anything
runs; ``tools/list`` leaves out what the caller's scopes do not allow. The app checks each POST's token
itself (``StreamableHTTPApp(server, auth=...)``; its ``401`` is tested in ``test_auth.py``).

Every async test runs on asyncio and on trio; servers bind 127.0.0.1.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Context, Limits, Server
from minimcp.auth.config import Authorization
from minimcp.transports.http import StreamableHTTPApp
from minimcp.wire import errors
from tests.helpers.auth_tokens import READ, WRITE, authorization, bearer
from tests.helpers.http import httpx, serving_asgi
from tests.helpers.http_modern import Modern, accept, complete_text, error_of, input_required, modern_http

TIMEOUT = 20
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Counts:
    def __init__(self) -> None:
        self.started = 0
        self.continued = 0


def make_server(counts: Counts, *, replay: bool = False, limits: Limits | None = None) -> Server:
    server = Server("auth28", state_key=b"k" * 32, replay_every_retry=replay, limits=limits)

    @server.tool()
    async def whoami(ctx: Context) -> str:
        who = ctx.auth
        return "nobody" if who is None else f"{who.subject} {' '.join(sorted(who.scopes))}"

    @server.tool()
    async def book(ctx: Context, room: str) -> str:
        counts.started += 1
        answer = await ctx.elicit("Your name?", NAME_FORM)
        counts.continued += 1
        who = ctx.auth
        assert who is not None and isinstance(answer, Accepted)
        return f"{who.subject} booked {room} for {answer.value['name']} ({' '.join(sorted(who.scopes))})"

    return server


@contextlib.asynccontextmanager
async def served(server: Server, *, auth: Authorization | bool | None = True) -> AsyncIterator[Modern]:
    """``server`` behind an app checking tokens with ``auth`` (``True``: a new :func:`authorization`)."""
    app = StreamableHTTPApp(server, auth=authorization() if auth is True else auth or None)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(app) as base, modern_http(base + "/mcp") as client:
            yield client


async def call(
    client: Modern,
    token: str,
    name: str,
    arguments: dict[str, Any],
    *,
    state: str | None = None,
    responses: dict[str, Any] | None = None,
) -> Any:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    return await client.request("tools/call", params, **bearer(token))


async def test_ctx_auth_is_the_callers_own_on_the_one_shared_connection(anyio_backend: str) -> None:
    counts = Counts()
    async with served(make_server(counts)) as client:
        alice = await call(client, "alice-1", "book", {"room": "12"})  # parked, under alice
        assert alice.status_code == 200, alice.text
        key, _question, state = input_required(alice.json())
        for token, expected in [("bob-1", f"bob {READ} {WRITE}"), ("alice-1", f"alice {READ}")]:
            r = await call(client, token, "whoami", {})
            assert r.status_code == 200, r.text
            assert complete_text(r.json()) == expected
        done = await call(client, "alice-1", "book", {"room": "12"}, state=state, responses={key: accept(name="Al")})
        assert complete_text(done.json()) == f"alice booked 12 for Al ({READ})"


async def test_without_authorization_ctx_auth_is_none(anyio_backend: str) -> None:
    async with served(make_server(Counts()), auth=False) as client:
        r = await client.request("tools/call", {"name": "whoami", "arguments": {}})
        assert complete_text(r.json()) == "nobody"


@pytest.mark.parametrize("replay", [False, True], ids=["parked", "replay-every-retry"])
@pytest.mark.parametrize("intruder", ["bob-1", "mallory-other-issuer"])
async def test_another_persons_token_on_a_state_is_refused_and_leaves_it_to_its_owner(
    anyio_backend: str, replay: bool, intruder: str
) -> None:
    counts = Counts()
    async with served(make_server(counts, replay=replay)) as client:
        key, _question, state = input_required((await call(client, "alice-1", "book", {"room": "7"})).json())
        refused = await call(client, intruder, "book", {"room": "7"}, state=state, responses={key: accept(name="B")})
        reply = error_of(refused, 400, errors.INVALID_PARAMS)
        assert reply["error"]["data"] == {"reason": "invalid_request_state"}
        assert (counts.started, counts.continued) == (1, 0)  # nothing ran: no replay, no answer delivered
        # Not used up: its owner retries with it.
        done = await call(client, "alice-1", "book", {"room": "7"}, state=state, responses={key: accept(name="Al")})
        assert complete_text(done.json()) == f"alice booked 7 for Al ({READ})"
        assert counts.continued == 1


@pytest.mark.parametrize("replay", [False, True], ids=["parked", "replay-every-retry"])
async def test_a_refreshed_token_of_the_same_person_goes_on_with_its_own_scopes(
    anyio_backend: str, replay: bool
) -> None:
    counts = Counts()
    async with served(make_server(counts, replay=replay)) as client:
        key, _question, state = input_required((await call(client, "alice-1", "book", {"room": "3"})).json())
        done = await call(client, "alice-2", "book", {"room": "3"}, state=state, responses={key: accept(name="Al")})
        # ctx.auth after the retry is the retry's token: the same person, the scopes it has now.
        assert complete_text(done.json()) == f"alice booked 3 for Al ({READ} {WRITE})"


def needs_write_to_book(method: str, params: Any) -> frozenset[str]:
    """``scopes_needed`` of a server whose ``book`` tool needs ``bookings:write`` (``@tool(scopes=...)`` to come)."""
    if method == "tools/call" and msgspec.json.decode(params).get("name") == "book":
        return frozenset({WRITE})
    return frozenset()


async def test_an_operation_needing_scopes_the_token_lacks_is_403_before_anything_runs(anyio_backend: str) -> None:
    counts = Counts()
    server = make_server(counts)
    server.scopes_needed = needs_write_to_book  # type: ignore[method-assign]
    auth = authorization()
    async with served(server, auth=auth) as client:
        refused = await call(client, "alice-1", "book", {"room": "9"})
        assert refused.status_code == 403, refused.text
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert 'error="insufficient_scope"' in challenge
        assert f'scope="{WRITE}"' in challenge
        assert "resource_metadata=" in challenge
        assert refused.json()["error"]["data"] == {"reason": "insufficient_scope", "scopes": [WRITE]}
        assert counts.started == 0
        assert auth.metrics.insufficient_scope == 1  # counted as the other era's 403s are
        # What needs no more scopes is served; the same person, stepped up, gets the call.
        assert complete_text((await call(client, "alice-1", "whoami", {})).json()) == f"alice {READ}"
        stepped_up = await call(client, "alice-2", "book", {"room": "9"})
        assert stepped_up.status_code == 200, stepped_up.text
        input_required(stepped_up.json())
        assert counts.started == 1


async def test_parked_calls_are_bounded_per_person_as_per_address(anyio_backend: str) -> None:
    """With authorization on, ``max_parked_per_client`` bounds a person's parked calls wherever they come from
    (``-32003``, the run ends); another person parks on the same address; a finished call frees its place."""
    counts = Counts()
    server = make_server(counts, limits=Limits(max_parked_per_client=2))
    async with served(server) as client, contextlib.AsyncExitStack() as stack:

        async def from_address(address: str) -> Modern:
            transport = httpx.AsyncHTTPTransport(local_address=address)
            http = await stack.enter_async_context(httpx.AsyncClient(transport=transport, timeout=10))
            return Modern(http, client.url)

        here, there, elsewhere = [await from_address(a) for a in ("127.0.0.2", "127.0.0.3", "127.0.0.4")]
        key, _question, state = input_required((await call(here, "alice-1", "book", {"room": "1"})).json())
        input_required((await call(there, "alice-2", "book", {"room": "2"})).json())  # the same person
        assert len(server.parking) == 2
        refused = (await call(elsewhere, "alice-1", "book", {"room": "3"})).json()
        assert refused["error"]["code"] == errors.SERVER_BUSY, refused
        assert "your account (limit 2)" in refused["error"]["message"]
        assert len(server.parking) == 2  # the refused run did not stay parked
        input_required((await call(elsewhere, "bob-1", "book", {"room": "4"})).json())  # another person
        assert len(server.parking) == 3
        done = await call(here, "alice-1", "book", {"room": "1"}, state=state, responses={key: accept(name="Al")})
        assert complete_text(done.json()) == f"alice booked 1 for Al ({READ})"
        input_required((await call(elsewhere, "alice-1", "book", {"room": "5"})).json())  # her place is free again


def listing_server() -> Server:
    """Three tools: one open, one needing :data:`WRITE`, one needing a scope no token here has."""
    server = Server("list28", state_key=b"k" * 32)

    @server.tool
    async def public() -> str:
        return "open"

    @server.tool(scopes=[WRITE])
    async def book(room: str) -> str:
        return f"booked {room}"

    @server.tool(scopes=["admin"])
    async def audit() -> str:
        return "audited"

    return server


async def listed(client: Modern, token: str | None) -> set[str]:
    headers = bearer(token) if token is not None else {}
    reply = await client.request("tools/list", None, **headers)
    assert reply.status_code == 200, reply.text
    return {tool["name"] for tool in reply.json()["result"]["tools"]}


async def test_tools_list_hides_what_the_callers_scopes_do_not_allow(anyio_backend: str) -> None:
    """Each POST's own person decides its list (the one shared connection serves everyone, in any order)."""
    async with served(listing_server()) as client:
        assert await listed(client, "alice-1") == {"public"}
        assert await listed(client, "bob-1") == {"public", "book"}
        assert await listed(client, "alice-1") == {"public"}  # bob's list is not what alice is shown next
        assert await listed(client, "alice-2") == {"public", "book"}  # her refreshed token grants more


async def test_without_authorization_tools_list_shows_every_tool(anyio_backend: str) -> None:
    async with served(listing_server(), auth=False) as client:
        assert await listed(client, None) == {"public", "book", "audit"}
