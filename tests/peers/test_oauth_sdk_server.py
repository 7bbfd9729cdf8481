"""Our OAuth client against the official Python SDK's server protected by its own authorization (issue 30).

The server (``tests/peers/official_auth_server.py``) is the SDK's ``MCPServer`` as a resource server:
``AuthSettings(issuer_url=<NanoIDP>, resource_server_url=..., required_scopes=["bookings:read"],
validate_token_resource=True)`` with a ``TokenVerifier`` of its own that checks NanoIDP's JWTs. Our client
(``connect_http(url, auth=OAuthClient(HeadlessBrowser({"login_hint": "persona-auto-login:alice"}), ...))``)
reads the RFC 9728 metadata the SDK's ``401`` points to, checks its ``resource``, discovers NanoIDP, registers
there, signs alice in headlessly and calls a tool as her.

What the SDK's server does against the spec (2.3.0), seen here:

* its ``401`` to a request without a token says ``error="invalid_token"``; RFC 6750 §3.1 says a request
  without authentication gets no error code (harmless: clients sign in either way);
* neither its ``401`` nor its ``403 insufficient_scope`` names a ``scope`` (MCP 2025-11-25, "Scope
  Selection Strategy" and "Runtime Insufficient Scope Errors": servers SHOULD), so a client learns the
  scopes only from the metadata's ``scopes_supported`` (the SDK fills it with ``required_scopes``), and a
  ``403`` tells it nothing to step up to: ours, asked for too little, signs in again for what it asked and
  gives up after ``max_authorizations``, leaving the server's ``403``.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import AsyncIterator, Mapping

import anyio
import httpx
import pytest

from minimcp import McpError, connect_http
from minimcp.auth import MemoryTokenStore
from minimcp.auth.discovery import parse_challenge
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, signing_in
from tests.helpers.interop import serving_script
from tests.helpers.nanoidp import REPO, NanoIDP, free_port

pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

SERVER = REPO / "tests" / "peers" / "official_auth_server.py"


@contextlib.asynccontextmanager
async def official_protected(issuer: str) -> AsyncIterator[str]:
    """The SDK's protected server on a free port, trusting ``issuer``; yields its URL."""
    port = free_port()
    async with serving_script(SERVER, str(port), issuer, port=port, wait=TIMEOUT):
        yield f"http://127.0.0.1:{port}/mcp"


async def test_our_client_discovers_registers_signs_alice_in_and_calls_a_tool(nanoidp: NanoIDP) -> None:
    asked: list[str] = []

    async def record(request: httpx.Request) -> None:
        asked.append(f"{request.method} {request.url.copy_with(query=None)}")

    store = MemoryTokenStore()
    async with httpx.AsyncClient(event_hooks={"request": [record]}, timeout=TIMEOUT) as http:
        oauth = signing_in("alice", store, None, http=http)  # no scopes: the SDK's metadata names them
        with anyio.fail_after(TIMEOUT * 2):
            async with official_protected(nanoidp.issuer) as url, connect_http(url, auth=oauth) as client:
                me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
    assert me["sub"] == "alice" and READ in me["scopes"]
    prm = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert asked == [
        f"GET {prm}",  # from the SDK's challenge
        f"GET {nanoidp.oauth_metadata_url}",  # RFC 8414 first
        f"POST {nanoidp.endpoint('registration')}",
        f"POST {nanoidp.endpoint('token')}",
    ]
    kept = await store.get_tokens(nanoidp.issuer, url)
    assert kept is not None and kept.scope is not None and READ in kept.scope.split()


async def test_the_sdk_403_names_no_scope_so_a_token_asked_for_too_little_stays_refused(nanoidp: NanoIDP) -> None:
    oauth = signing_in("alice", MemoryTokenStore(), ["mcp:read"])  # asks for a scope the server does not want
    browser = oauth.browser
    assert browser is not None
    sign_ins: list[str] = []

    async def counted(authorization_url: str) -> Mapping[str, str]:
        sign_ins.append(urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)["scope"][0])
        return await browser(authorization_url)

    oauth.browser = counted
    with anyio.fail_after(TIMEOUT * 2):
        async with official_protected(nanoidp.issuer) as url:
            token = await anyio.to_thread.run_sync(lambda: nanoidp.token_for("alice", ["mcp:read"], url).access_token)
            async with httpx.AsyncClient(timeout=TIMEOUT) as http:
                answer = await http.post(url, json={}, headers={"Authorization": f"Bearer {token}"})
            with pytest.raises(McpError, match="HTTP 403"):
                async with connect_http(url, auth=oauth):
                    pass
    challenge = parse_challenge(answer.headers.get("www-authenticate"))
    assert answer.status_code == 403 and challenge.error == "insufficient_scope"
    assert challenge.scopes is None  # the SDK names no scope: nothing to step up to
    assert sign_ins == ["mcp:read offline_access"] * oauth.max_authorizations
