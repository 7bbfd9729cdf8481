"""Our OAuth client over WebSocket: ``connect_websocket(url, auth=OAuthClient(...))`` against our WebSocket server
protected by a real NanoIDP.

The token goes on the upgrade request. A ``401`` on the upgrade starts the flow (discovery from the challenge,
registration, alice signed in headlessly), then the upgrade is tried again with the token; a ``403
insufficient_scope`` on the upgrade (the server's ``required_scopes``) signs in for the union of the scopes.
The server checks a token at the upgrade only, so a token about to expire is refreshed before the next
connection, which then upgrades at the first try.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

from minimcp import McpError, connect_websocket
from minimcp.auth import AuthorizationFailed, MemoryTokenStore, OAuthClient
from minimcp.transports.websocket import WebSocketHandshakeError
from minimcp.wire import errors
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, WRITE, Deployment, build, named, signing_in
from tests.helpers.nanoidp import NanoIDP

pytest.importorskip("websockets", reason="the ws extra (websockets) is not installed")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module


@pytest.fixture(scope="module")
def site(nanoidp: NanoIDP) -> Deployment:
    return Deployment(nanoidp)


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_401_on_the_upgrade_signs_in_and_a_reconnection_refreshes_first(
    site: Deployment, nanoidp: NanoIDP, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    server, _ = build()
    auth = site.authorization(site.verifier())
    store = MemoryTokenStore()
    oauth = signing_in("alice", store, [READ])
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, auth, "websocket") as url:
            async with connect_websocket(url, auth=oauth) as client:
                me = json.loads(text(await client.call_tool("whoami", {})))
                assert me["sub"] == "alice" and me["iss"] == nanoidp.issuer
                assert READ in me["scopes"] and WRITE not in me["scopes"]
                with pytest.raises(McpError) as info:  # the open socket keeps its token: the server says so
                    await client.call_tool("book", {"room": "blue"})
                assert info.value.code == errors.INSUFFICIENT_SCOPE
            assert auth.metrics.refused == {"missing": 1}  # the first upgrade, without a token
            first = await store.get_tokens(nanoidp.issuer, site.resource)  # keyed by the resource (http://...)
            assert first is not None and first.refresh_token is not None
            first_access = first.access_token

            first.expires_at = time.time()  # about to expire: refreshed before the next upgrade
            async with connect_websocket(url, auth=oauth) as client:
                assert json.loads(text(await client.call_tool("whoami", {})))["sub"] == "alice"
            assert auth.metrics.refused == {"missing": 1}  # upgraded at the first try, with the fresh token
            fresh = await store.get_tokens(nanoidp.issuer, site.resource)
            assert fresh is not None and fresh.access_token != first_access
    for secret in (first_access, fresh.access_token, fresh.refresh_token):
        assert secret is not None and secret not in caplog.text


async def test_a_403_on_the_upgrade_signs_in_again_for_the_union_of_scopes(site: Deployment, nanoidp: NanoIDP) -> None:
    server, ran = build()
    auth = site.authorization(site.verifier(), required_scopes=[WRITE])
    store = MemoryTokenStore()
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, auth, "websocket") as url,
            connect_websocket(url, auth=signing_in("alice", store, [READ]), elicitation_handler=named) as client,
        ):
            me = json.loads(text(await client.call_tool("whoami", {})))
            assert {READ, WRITE} <= set(me["scopes"])
            assert text(await client.call_tool("book", {"room": "blue"})) == "alice booked blue for Alice"
    assert auth.metrics.refused == {"missing": 1} and auth.metrics.insufficient_scope == 1
    assert ran.events.count("booked blue") == 1


async def test_a_refused_upgrade_says_why(site: Deployment, nanoidp: NanoIDP) -> None:
    server, ran = build()
    auth = site.authorization(site.verifier())
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, auth, "websocket") as url:
            with pytest.raises(WebSocketHandshakeError) as refused:
                async with connect_websocket(url):
                    pass
            assert refused.value.status == 401
            assert refused.value.www_authenticate is not None
            assert "/.well-known/oauth-protected-resource/mcp" in refused.value.www_authenticate
            with pytest.raises(AuthorizationFailed) as failed:  # no browser: the flow stops, and says where
                async with connect_websocket(url, auth=OAuthClient(None)):
                    pass
            assert failed.value.reason == "browser"
    assert ran.events == []
