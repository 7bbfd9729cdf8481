"""Authorization on the WebSocket server: the upgrade's bearer token, the principal in a tool, scopes per request."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Context, Limits, McpError, Server, connect_websocket
from minimcp.transports.websocket import WebSocketHandshakeError, websocket_client
from minimcp.wire import errors
from tests.helpers.auth_tokens import ISSUER, RESOURCE, FixedTokens, authorization, bearer
from tests.helpers.http import httpx
from tests.helpers.http import serving as http_serving
from tests.helpers.websocket import INIT, RawWs, http_get, serving

WRITE = frozenset({"bookings:write"})


class ScopedServer(Server):
    """``book`` needs ``bookings:write`` (what ``@tool(scopes=...)`` will declare)."""

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        if method == "tools/call" and msgspec.json.decode(params).get("name") == "book":
            return WRITE
        return frozenset()


def make_server(**limits: Any) -> ScopedServer:
    server = ScopedServer("auth", limits=Limits(**limits))
    server.booked = []  # type: ignore[attr-defined]

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the caller is."""
        auth = ctx.auth
        return "nobody" if auth is None else f"{auth.subject} {' '.join(sorted(auth.scopes))}"

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the caller a question (work pending until it answers)."""
        answer = await ctx.elicit("Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return type(answer).__name__

    @server.tool()
    async def book(what: str) -> str:
        """Book something (needs bookings:write)."""
        server.booked.append(what)  # type: ignore[attr-defined]
        return f"booked {what}"

    return server


async def text_of(client: Any, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    return str(result.content[0].text)


async def test_upgrade_without_a_token_or_with_a_bad_one_gets_401_and_no_websocket(anyio_backend: str) -> None:
    server = make_server()
    verifier = FixedTokens()
    with anyio.fail_after(20):
        async with serving(server, auth=authorization(verifier)) as url:
            async with RawWs.connect(url, subprotocols=["mcp"]) as raw:
                assert raw.response is not None and raw.response.status_code == 401
                challenge = raw.response.headers["WWW-Authenticate"]
                assert challenge.startswith('Bearer resource_metadata="http://127.0.0.1/.well-known/')
                assert "error=" not in challenge  # no credentials: no error code (RFC 6750 3.1)
            for token in ("nonsense", "carol-elsewhere"):
                async with RawWs.connect(url, subprotocols=["mcp"], headers=bearer(token)) as raw:
                    assert raw.response is not None and raw.response.status_code == 401
                    challenge = raw.response.headers["WWW-Authenticate"]
                    assert 'error="invalid_token"' in challenge and token not in challenge
            async with RawWs.connect(url, subprotocols=["mcp"], headers={"Authorization": "Basic YTpi"}) as raw:
                assert raw.response is not None and raw.response.status_code == 401
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(url, headers=bearer("nonsense")):
                    pass  # pragma: no cover
            assert info.value.status == 401
            assert not server.connections
            assert verifier.asked == ["nonsense", "carol-elsewhere", "nonsense"]


async def test_authorization_server_down_is_503_never_an_acceptance(anyio_backend: str) -> None:
    server = make_server()
    with anyio.fail_after(20):
        async with serving(server, auth=authorization()) as url:
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(url, headers=bearer("down")):
                    pass  # pragma: no cover
            assert info.value.status == 503
            assert not server.connections


async def test_a_token_without_the_required_scopes_gets_403(anyio_backend: str) -> None:
    server = make_server()
    with anyio.fail_after(20):
        async with serving(server, auth=authorization(required_scopes=["bookings:write"])) as url:
            async with RawWs.connect(url, subprotocols=["mcp"], headers=bearer("alice-1")) as raw:
                assert raw.response is not None and raw.response.status_code == 403
                challenge = raw.response.headers["WWW-Authenticate"]
                assert 'error="insufficient_scope"' in challenge and 'scope="bookings:write"' in challenge
            async with connect_websocket(url, headers=bearer("bob-1")) as client:
                assert await text_of(client, "whoami") == "bob bookings:read bookings:write"


async def test_an_accepted_token_is_the_principal_in_the_tool(anyio_backend: str) -> None:
    server = make_server()
    with anyio.fail_after(20):
        async with (
            serving(server, auth=authorization()) as url,
            connect_websocket(url, headers=bearer("alice-1")) as client,
        ):
            assert await text_of(client, "whoami") == "alice bookings:read"
            conn = next(iter(server.connections))
            assert conn.principal is not None and conn.principal.key == (ISSUER, "alice")


async def test_a_request_needing_scopes_the_token_lacks_is_refused_and_runs_nothing(anyio_backend: str) -> None:
    server = make_server()
    with anyio.fail_after(20):
        async with serving(server, auth=authorization(required_scopes=["bookings:read"])) as url:
            async with connect_websocket(url, headers=bearer("alice-1")) as client:
                with pytest.raises(McpError) as info:
                    await client.call_tool("book", {"what": "room 7"})
                assert info.value.code == errors.INSUFFICIENT_SCOPE == -32004
                data = info.value.data
                assert isinstance(data, dict)
                assert data["requiredScopes"] == ["bookings:read", "bookings:write"]
                assert 'error="insufficient_scope"' in data["wwwAuthenticate"]
                assert server.booked == []  # type: ignore[attr-defined]
                assert await text_of(client, "whoami") == "alice bookings:read"  # the connection goes on
            async with connect_websocket(url, headers=bearer("bob-1")) as client:
                assert await text_of(client, "book", what="room 7") == "booked room 7"
                assert server.booked == ["room 7"]  # type: ignore[attr-defined]


async def test_protected_resource_metadata_on_a_plain_get(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(make_server(), auth=authorization()) as url:
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                status, headers, body = await http_get("127.0.0.1", port, path)
                assert status == 200 and headers["content-type"] == "application/json"
                document = msgspec.json.decode(body)
                assert document["resource"] == RESOURCE
                assert document["authorization_servers"] == [ISSUER]
            status, _, _ = await http_get("127.0.0.1", port, "/mcp")  # not an upgrade, not the metadata
            assert status == 401


async def test_without_auth_nothing_changes(anyio_backend: str) -> None:
    server = make_server()
    with anyio.fail_after(20):
        async with serving(server) as url:
            async with connect_websocket(url, headers=bearer("alice-1")) as client:  # the header is ignored
                assert await text_of(client, "whoami") == "nobody"
                assert await text_of(client, "book", what="x") == "booked x"  # no scope check
                conn = next(iter(server.connections))
                assert conn.principal is None
                assert type(conn.session.dispatcher).__name__ == "ServerConnection"
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            status, _, _ = await http_get("127.0.0.1", port, "/.well-known/oauth-protected-resource/mcp")
            assert status == 404


async def test_connections_per_person_are_bounded_like_per_address(anyio_backend: str) -> None:
    """Three addresses, one person: with a bound of 2 per person (and per address), the person's third
    connection ends its least recently used idle one; another person is not counted with it."""
    server = make_server(max_sessions_per_client=2)
    with anyio.fail_after(30):
        async with serving(server, auth=authorization()) as url, contextlib.AsyncExitStack() as stack:
            raws = []
            for n, (address, token) in enumerate(
                [("127.0.0.2", "alice-1"), ("127.0.0.3", "bob-1"), ("127.0.0.4", "alice-2"), ("127.0.0.5", "alice-1")]
            ):
                raw = await stack.enter_async_context(
                    RawWs.connect(url, subprotocols=["mcp"], headers=bearer(token), local_host=address)
                )
                assert raw.response is not None and raw.response.status_code == 101
                await raw.send({**INIT, "id": f"init{n}"})
                assert (await raw.recv())["id"] == f"init{n}"
                raws.append(raw)
            assert await raws[0].close_code() == 1008
            rcvd = raws[0].protocol.close_rcvd
            assert rcvd is not None and rcvd.reason == "too many connections for your account (limit 2)"
            for n, raw in enumerate(raws[1:]):
                await raw.send({"jsonrpc": "2.0", "id": f"p{n}", "method": "ping"})
                assert (await raw.recv())["id"] == f"p{n}"


async def test_a_person_whose_connections_all_have_work_pending_is_refused_429(anyio_backend: str) -> None:
    server = make_server(max_sessions_per_client=1)
    with anyio.fail_after(30):
        async with (
            serving(server, auth=authorization()) as url,
            RawWs.connect(url, subprotocols=["mcp"], headers=bearer("alice-1"), local_host="127.0.0.2") as busy,
        ):
            await busy.send(INIT)
            assert (await busy.recv())["id"] == "init"
            call = {"name": "ask", "arguments": {}}
            await busy.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": call})
            assert (await busy.recv())["method"] == "elicitation/create"
            headers = bearer("alice-2")
            async with RawWs.connect(url, subprotocols=["mcp"], headers=headers, local_host="127.0.0.3") as refused:
                assert refused.response is not None and refused.response.status_code == 429
                assert b"too many connections for your account" in refused.response.body
            async with connect_websocket(url, headers=bearer("bob-1")) as client:  # another person
                assert await text_of(client, "whoami") == "bob bookings:read bookings:write"
            await busy.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert (await busy.recv())["id"] == "p"


async def test_refusals_are_counted_on_the_authorization_and_shown_on_the_http_metrics_page(
    anyio_backend: str,
) -> None:
    """Upgrades refused for their token or the required scopes, and requests refused for a scope, count on
    ``auth.metrics``: an HTTP app given the same object shows the WebSocket's refusals with its own."""
    auth = authorization(required_scopes=["bookings:read"])
    server = make_server()
    with anyio.fail_after(30):
        async with (
            serving(server, auth=auth) as url,
            http_serving(make_server(), auth=auth, metrics_path="/metrics") as (
                http_url,
                _app,
            ),
        ):
            for token in ("nonsense", "nonsense", "carol-elsewhere", "down", "mallory-other-issuer"):
                async with RawWs.connect(url, subprotocols=["mcp"], headers=bearer(token)) as raw:
                    assert raw.response is not None and raw.response.status_code in (401, 403, 503)
            async with RawWs.connect(url, subprotocols=["mcp"]) as raw:
                assert raw.response is not None and raw.response.status_code == 401
            async with connect_websocket(url, headers=bearer("alice-1")) as client:
                for _ in range(2):
                    with pytest.raises(McpError):
                        await client.call_tool("book", {"what": "room 7"})
            assert auth.metrics.refused == {"signature": 2, "audience": 1, "unavailable": 1, "missing": 1}
            assert auth.metrics.insufficient_scope == 3  # mallory's upgrade (no bookings:read), alice's two calls
            async with httpx.AsyncClient() as http:
                page = (await http.get(http_url.removesuffix("/mcp") + "/metrics")).text.splitlines()
    for line in (
        'minimcp_auth_refused_total{reason="signature"} 2',
        'minimcp_auth_refused_total{reason="missing"} 1',
        "minimcp_auth_insufficient_scope_total 3",
    ):
        assert line in page, line
