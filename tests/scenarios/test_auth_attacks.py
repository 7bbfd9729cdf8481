"""Attacks on a minimcp server protected by a real NanoIDP (issue 29), over HTTP and WebSocket, each a test.

Every attack starts from a real token of the module's NanoIDP (or from none): a missing or malformed
header, a token in the query, ``alg: none``, HMAC signed with the issuer's public key, another issuer's
token (a second NanoIDP) and one naming another issuer, another audience, an expired and a not yet valid
token, a key the issuer never published (fetched again once, then refused), an oversized token, and the
authorization server stopped mid-test. Each is refused (``401`` with a challenge saying why, ``400`` for the
query, ``503`` when the keys cannot be fetched), no tool runs, and alice's genuine token still works on
the same server afterwards: the refusal is the attack's, not a broken server's.

Expired and not yet valid tokens are alice's real claims re-signed with NanoIDP's own key (read from its key
directory) with ``exp`` or ``nbf`` moved well past the verifier's 30 s leeway (300 s); the same moved by 5 s,
inside the leeway, is accepted, so the clock check is the one refusing. NanoIDP's shortest token lifetime
(one minute) would make the test wait 90 s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import (
    ALGORITHM,
    AUDIENCE,
    EXPIRED,
    MALFORMED,
    NOT_YET,
    OTHER_ISSUER,
    TIMEOUT,
    TOO_LARGE,
    UNKNOWN_KEY,
    Deployment,
    Ran,
    alg_none,
    assert_refused,
    attempt,
    build,
    header_and_claims,
    hmac_signed,
    issuer_key,
    now,
    public_key_pem,
    resigned,
    rogue_key,
)
from tests.helpers.http import httpx
from tests.helpers.nanoidp import NanoIDP, free_port

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module
second_nanoidp = idp.second_nanoidp  # another issuer

TRANSPORTS = pytest.mark.parametrize("transport", ["http", "websocket"])


@pytest.fixture(scope="module")
def site(nanoidp: NanoIDP) -> Deployment:
    return Deployment(nanoidp)


@contextlib.asynccontextmanager
async def protected(site: Deployment, transport: str, **verifier_options: Any) -> AsyncIterator[tuple[str, Ran]]:
    """A fresh server (and JWT verifier) on the deployment's port; on the way out alice's genuine token must
    still open a session and nothing but that must have run."""
    server, ran = build()
    alice = site.token("alice")
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier(**verifier_options)), transport) as url:
            yield url, ran
            assert ran.events == []  # no attempt reached a tool
            assert (await attempt(url, f"Bearer {alice}")).status == 200


# --- the header -----------------------------------------------------------------------------------


@TRANSPORTS
async def test_no_token_is_401_with_the_metadata_and_no_error(site: Deployment, transport: str) -> None:
    async with protected(site, transport) as (url, _):
        outcome = await attempt(url, None)
        assert outcome.status == 401
        assert set(outcome.challenge) == {"resource_metadata", "scope"}  # RFC 6750 3.1: no error code


@TRANSPORTS
async def test_a_malformed_header_is_401(site: Deployment, transport: str) -> None:
    token = site.token("alice")
    async with protected(site, transport) as (url, _):
        for header in ("Basic YWxpY2U6cGFzc3dvcmQ=", token, f"Bearer {token} {token}", "Bearer"):
            outcome = await attempt(url, header)
            assert outcome.status == 401, header
            assert outcome.challenge["error_description"] == MALFORMED


async def test_a_token_in_the_query_is_400_over_http_even_beside_a_good_header(site: Deployment) -> None:
    token = site.token("alice")
    async with protected(site, "http") as (url, _):
        for header in (None, f"Bearer {token}"):
            outcome = await attempt(url, header, query=f"?access_token={token}")
            assert outcome.status == 400
            assert outcome.challenge["error"] == "invalid_request"


async def test_a_token_in_the_query_is_not_taken_over_websocket(site: Deployment) -> None:
    async with protected(site, "websocket") as (url, _):
        outcome = await attempt(url, None, query=f"?access_token={site.token('alice')}")
        assert outcome.status == 401
        assert "error" not in outcome.challenge  # no credentials seen at all


@TRANSPORTS
async def test_an_oversized_token_is_refused_unread(site: Deployment, transport: str) -> None:
    fetches: list[str] = []
    bloated = resigned(site.token("alice"), *issuer_key(site.idp), padding="x" * 9000)  # signed by the issuer
    async with protected(site, transport, fetches=fetches) as (url, _):
        if transport == "http":
            await assert_refused(url, bloated, TOO_LARGE)
        else:  # the upgrade's header line is longer than the WebSocket parser reads (8 KiB): 431, unread
            assert (await attempt(url, f"Bearer {bloated}")).status == 431
        assert fetches == []  # refused before any key was looked for


# --- the signature --------------------------------------------------------------------------------


@TRANSPORTS
async def test_alg_none_is_refused(site: Deployment, transport: str) -> None:
    async with protected(site, transport) as (url, _):
        await assert_refused(url, alg_none(site.token("alice")), ALGORITHM)


@TRANSPORTS
async def test_hmac_signed_with_the_issuers_public_key_is_refused(site: Deployment, transport: str) -> None:
    forged = hmac_signed(site.token("alice"), public_key_pem(site.idp))
    async with protected(site, transport) as (url, _):
        await assert_refused(url, forged, ALGORITHM)


@TRANSPORTS
async def test_a_key_the_issuer_never_published_is_fetched_again_once_then_refused(
    site: Deployment, transport: str
) -> None:
    fetches: list[str] = []
    alice = site.token("alice")
    rogue = rogue_key()
    async with protected(site, transport, fetches=fetches) as (url, _):
        assert (await attempt(url, f"Bearer {alice}")).status == 200  # the keys are fetched and kept
        known = len(fetches)
        assert fetches[-1] == site.idp.jwks_uri
        await assert_refused(url, resigned(alice, rogue, "rogue-kid"), UNKNOWN_KEY)
        assert fetches[known:] == [site.idp.jwks_uri]  # fetched again once: it might have been a rotation
        await assert_refused(url, resigned(alice, rogue, "rogue-kid-2"), UNKNOWN_KEY)
        assert fetches[known:] == [site.idp.jwks_uri]  # not again within Limits.auth_key_refetch_interval


@TRANSPORTS
async def test_a_key_rotated_in_at_the_issuer_is_fetched_and_taken(second_nanoidp: NanoIDP, transport: str) -> None:
    """On the second NanoIDP (its tokens are made fresh by each test): rotating the module's would leave its
    kept tokens signed by a key no longer published after two rotations (NanoIDP keeps two previous keys)."""
    site = Deployment(second_nanoidp)
    fetches: list[str] = []
    async with protected(site, transport, fetches=fetches) as (url, _):
        assert (await attempt(url, f"Bearer {site.token('alice')}")).status == 200
        known = len(fetches)
        rotated = second_nanoidp.http.post(second_nanoidp.issuer + "/api/keys/rotate")
        assert rotated.status_code == 200, rotated.text
        fresh = site.token("bob")
        assert header_and_claims(fresh)[0]["kid"] == rotated.json()["new_kid"]
        assert (await attempt(url, f"Bearer {fresh}")).status == 200
        assert fetches[known:] == [second_nanoidp.jwks_uri]  # fetched again once, for the new key


# --- the claims -----------------------------------------------------------------------------------


@TRANSPORTS
async def test_another_issuers_token_is_refused(site: Deployment, second_nanoidp: NanoIDP, transport: str) -> None:
    theirs = second_nanoidp.token_for("alice", ["bookings:read"], site.resource)  # for this very resource
    renamed = resigned(site.token("alice"), *issuer_key(site.idp), iss=second_nanoidp.issuer)
    async with protected(site, transport) as (url, _):
        await assert_refused(url, theirs.access_token, UNKNOWN_KEY)  # not one of our issuer's keys
        await assert_refused(url, renamed, OTHER_ISSUER)  # our issuer's key, another issuer's name


@TRANSPORTS
async def test_a_token_for_another_audience_is_refused(site: Deployment, transport: str) -> None:
    elsewhere = site.token("alice", resource=f"http://127.0.0.1:{free_port()}/mcp")
    async with protected(site, transport) as (url, _):
        await assert_refused(url, elsewhere, AUDIENCE)


@TRANSPORTS
async def test_an_expired_token_is_refused_past_the_leeway(site: Deployment, transport: str) -> None:
    key, kid = issuer_key(site.idp)
    alice = site.token("alice")
    async with protected(site, transport) as (url, _):
        await assert_refused(url, resigned(alice, key, kid, exp=now() - 300), EXPIRED)
        assert (await attempt(url, f"Bearer {resigned(alice, key, kid, exp=now() - 5)}")).status == 200


@TRANSPORTS
async def test_a_token_not_yet_valid_is_refused_past_the_leeway(site: Deployment, transport: str) -> None:
    key, kid = issuer_key(site.idp)
    alice = site.token("alice")
    async with protected(site, transport) as (url, _):
        await assert_refused(url, resigned(alice, key, kid, nbf=now() + 300, iat=now() + 300), NOT_YET)
        assert (await attempt(url, f"Bearer {resigned(alice, key, kid, nbf=now() + 5)}")).status == 200


# --- the authorization server down ----------------------------------------------------------------


async def test_the_authorization_server_down_kept_keys_still_verify_unknown_ones_are_503(anyio_backend: str) -> None:
    """A NanoIDP of its own, stopped mid-test: alice's token (keys kept) goes on over HTTP and WebSocket; a
    token whose key is not kept is refused 503 ``unavailable`` (never accepted), and so is alice's at a
    verifier that kept nothing."""
    down = await anyio.to_thread.run_sync(idp.started)
    try:
        site = Deployment(down)
        alice = site.token("alice")
        rogue = resigned(alice, rogue_key(), "rogue-kid")
        server, ran = build()
        verifier = site.verifier()
        auth = site.authorization(verifier)
        with anyio.fail_after(TIMEOUT):
            async with (
                site.serving(server, auth, close_verifier=False) as url,
                site.serving(server, auth, "websocket", port=free_port(), close_verifier=False) as ws_url,
            ):
                assert (await attempt(url, f"Bearer {alice}")).status == 200  # the keys are fetched and kept
                await anyio.to_thread.run_sync(down.stop)
                with pytest.raises(httpx.TransportError):
                    async with httpx.AsyncClient() as client:
                        await client.get(down.metadata_url)
                for where in (url, ws_url):
                    assert (await attempt(where, f"Bearer {alice}")).status == 200
                    refused = await attempt(where, f"Bearer {rogue}")
                    assert (refused.status, refused.challenge) == (503, {})
                async with site.serving(server, site.authorization(site.verifier()), port=free_port()) as other:
                    assert (await attempt(other, f"Bearer {alice}")).status == 503  # nothing kept: never accepted
            await verifier.aclose()
        assert ran.events == []
    finally:
        down.stop()
