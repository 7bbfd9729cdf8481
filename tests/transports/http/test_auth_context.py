"""``ctx.auth`` over real HTTP in resource readers, template readers, the completion handler and prompts (issue 29).

Both eras, with a bearer token checked by the app (:mod:`tests.helpers.auth_tokens`) and without
authorization (``None``). On 2026-07-28 every request carries its own person on the one shared
connection: two people alternating each see themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp import Context, Server
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.auth_tokens import READ, WRITE, authorization, bearer
from tests.helpers.http import Raw, httpx, serving, serving_asgi
from tests.helpers.http_modern import Modern, modern_http

TIMEOUT = 20
ALICE = f"alice {READ}"
BOB = f"bob {READ} {WRITE}"


def make_server() -> Server:
    server = Server("whoasks", state_key=b"k" * 32)

    def who(ctx: Context) -> str:
        principal = ctx.auth
        return "nobody" if principal is None else f"{principal.subject} {' '.join(sorted(principal.scopes))}"

    @server.resource("who://me", scopes=[READ])
    async def me(ctx: Context) -> str:
        return who(ctx)

    @server.resource_template("who://{name}/card")
    async def card(ctx: Context, name: str) -> str:
        return f"{name}: {who(ctx)}"

    @server.prompt()
    async def greet(ctx: Context) -> str:
        return f"hello {who(ctx)}"

    @server.completion
    async def suggest(ref: dict[str, Any], name: str, value: str, other: dict[str, str], ctx: Context) -> list[str]:
        return [who(ctx), value]

    return server


#: (method, params, what its answer says of the person ``who`` asking)
ASKED: list[tuple[str, dict[str, Any], Any]] = [
    ("resources/read", {"uri": "who://me"}, lambda r, who: r["contents"][0]["text"] == who),
    ("resources/read", {"uri": "who://ann/card"}, lambda r, who: r["contents"][0]["text"] == f"ann: {who}"),
    ("prompts/get", {"name": "greet"}, lambda r, who: r["messages"][0]["content"]["text"] == f"hello {who}"),
    (
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "x", "value": "v"}},
        lambda r, who: r["completion"]["values"] == [who, "v"],
    ),
]


@contextlib.asynccontextmanager
async def handshake_session(url: str, token: str | None) -> AsyncIterator[Raw]:
    """A 2025-11-25 session whose every request carries ``token`` (none: no header)."""
    headers = bearer(token) if token is not None else {}
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None), headers=headers) as http:
        raw = Raw(http, url)
        await raw.initialize()
        yield raw


async def ask_all(raw: Raw, who: str) -> None:
    for n, (method, params, says) in enumerate(ASKED, 1):
        reply = await raw.call({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        assert "result" in reply and says(reply["result"], who), (method, reply, who)


@pytest.mark.parametrize("auth", [True, False], ids=["auth", "no-auth"])
async def test_on_2025_11_25_each_session_sees_its_own_person_or_none(auth: bool) -> None:
    options: dict[str, Any] = {"auth": authorization()} if auth else {}
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(), **options) as (url, _app):
            alice_token, bob_token = ("alice-1", "bob-1") if auth else (None, None)
            async with handshake_session(url, alice_token) as alice, handshake_session(url, bob_token) as bob:
                await ask_all(alice, ALICE if auth else "nobody")
                await ask_all(bob, BOB if auth else "nobody")


@contextlib.asynccontextmanager
async def modern(auth: bool) -> AsyncIterator[Modern]:
    app = StreamableHTTPApp(make_server(), auth=authorization() if auth else None)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(app) as base, modern_http(base + "/mcp") as client:
            yield client


async def modern_ask_all(client: Modern, token: str | None, who: str) -> None:
    headers = bearer(token) if token is not None else {}
    for method, params, says in ASKED:
        r = await client.request(method, params, **headers)
        assert r.status_code == 200, r.text
        result = r.json()["result"]
        assert result["resultType"] == "complete" and says(result, who), (method, result, who)


async def test_on_2026_07_28_each_request_sees_its_own_person() -> None:
    async with modern(auth=True) as client:
        refreshed = f"alice {READ} {WRITE}"
        for token, who in [("alice-1", ALICE), ("bob-1", BOB), ("alice-2", refreshed), ("alice-1", ALICE)]:
            await modern_ask_all(client, token, who)


async def test_on_2026_07_28_without_authorization_ctx_auth_is_none() -> None:
    async with modern(auth=False) as client:
        await modern_ask_all(client, None, "nobody")
