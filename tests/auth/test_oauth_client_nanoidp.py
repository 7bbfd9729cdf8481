"""Our OAuth client against a real authorization server (NanoIDP) and our own server protected by it.

``connect_http(url, auth=OAuthClient(...))``: the first 401 makes the client discover the server's resource
metadata and NanoIDP's, register (RFC 7591), sign alice in headlessly (NanoIDP's persona sign-in, by
``login_hint``) and call tools as her; a token about to expire is refreshed; ``book`` needs ``bookings:write``
and a token with ``bookings:read`` only is stepped up through the server's 403; no token reaches the logs.
"""

from __future__ import annotations

import json
import time

import anyio
import pytest

from minimcp import connect_http
from minimcp.auth import MemoryTokenStore, OAuthClient
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, WRITE, Deployment, build, named, signing_in
from tests.helpers.nanoidp import NanoIDP

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module


@pytest.fixture(scope="module")
def site(nanoidp: NanoIDP) -> Deployment:
    return Deployment(nanoidp)


def alice(store: MemoryTokenStore, scopes: list[str]) -> OAuthClient:
    return signing_in("alice", store, scopes)


async def test_alice_signs_in_calls_refreshes_and_steps_up(
    site: Deployment, nanoidp: NanoIDP, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    server, ran = build()
    store = MemoryTokenStore()
    oauth = alice(store, [READ])
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, site.authorization(site.verifier())) as url,
            connect_http(url, auth=oauth, elicitation_handler=named) as client,
        ):
            me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            assert me["sub"] == "alice" and me["iss"] == nanoidp.issuer
            assert READ in me["scopes"] and WRITE not in me["scopes"]
            first = await store.get_tokens(nanoidp.issuer, url)
            assert first is not None and first.refresh_token is not None
            first_access, first_refresh = first.access_token, first.refresh_token

            first.expires_at = time.time()  # about to expire: refreshed before the next request
            me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            assert me["sub"] == "alice"
            refreshed = await store.get_tokens(nanoidp.issuer, url)
            assert refreshed is not None and refreshed.access_token != first_access
            assert refreshed.refresh_token not in (None, first_refresh)  # NanoIDP rotates them

            result = await client.call_tool("book", {"room": "blue"})  # 403 insufficient_scope, then step-up
            assert result.is_error is not True
            assert result.content[0].text == "alice booked blue for Alice"  # type: ignore[union-attr]
            me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            assert {READ, WRITE} <= set(me["scopes"])
    assert ran.events.count("booked blue") == 1
    stepped = await store.get_tokens(nanoidp.issuer, url)
    assert stepped is not None
    for secret in {first_access, first_refresh, refreshed.access_token, stepped.access_token, stepped.refresh_token}:
        assert secret is not None and secret not in caplog.text
    assert "signing in at" in caplog.text


async def test_a_second_connection_uses_the_kept_tokens_without_signing_in(site: Deployment, nanoidp: NanoIDP) -> None:
    server, _ = build()
    store = MemoryTokenStore()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url:
            async with connect_http(url, auth=alice(store, [READ])) as client:
                await client.call_tool("whoami", {})
            kept = await store.get_tokens(nanoidp.issuer, url)
            no_browser = OAuthClient(None, store=store)  # signing in would fail: it has no browser
            async with connect_http(url, auth=no_browser) as client:
                me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            assert me["sub"] == "alice"
            assert await store.get_tokens(nanoidp.issuer, url) is kept
