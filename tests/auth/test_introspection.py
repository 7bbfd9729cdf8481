"""IntrospectionVerifier against a real introspection endpoint on loopback: outcomes, the bounded cache, failures."""

from __future__ import annotations

import hashlib
import logging
import time
import urllib.parse
from typing import Any

import anyio
import pytest

from minimcp.auth import Authorization, IntrospectionVerifier, TokenRefused
from minimcp.core.config import Limits
from tests.helpers.issuer import CLIENT, RESOURCE, Issuer, serving

OPAQUE = "opaque-token-of-alice-0123456789"


def active(url: str, **changes: Any) -> dict[str, Any]:
    """An introspection answer for an active token of alice's, issued by ``url``, for five minutes."""
    answer: dict[str, Any] = {
        "active": True, "iss": url, "sub": "alice", "client_id": "booking-app", "scope": "bookings:read",
        "aud": RESOURCE, "exp": int(time.time()) + 300, "token_type": "Bearer",
    }
    answer.update(changes)
    return {name: value for name, value in answer.items() if value is not None}


def verifier_of(url: str, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(url + "/introspect", client_id=CLIENT[0], client_secret=CLIENT[1], **options)


async def refusal(verifier: IntrospectionVerifier, token: str) -> str:
    with pytest.raises(TokenRefused) as refused:
        await verifier.verify(token)
    assert token not in refused.value.description
    return refused.value.reason


async def test_an_active_token_gives_its_principal_and_is_asked_once() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        issuer.answers[OPAQUE] = active(url)
        verifier = verifier_of(url, issuer=url)
        principal = await verifier.verify(OPAQUE)
        assert (principal.issuer, principal.subject, principal.client_id) == (url, "alice", "booking-app")
        assert (principal.scopes, principal.audience) == (frozenset({"bookings:read"}), (RESOURCE,))
        assert principal.expires_at == issuer.answers[OPAQUE]["exp"]
        assert await verifier.verify(OPAQUE) == principal  # remembered
        await verifier.aclose()
    assert issuer.hits["introspect"] == 1
    form = urllib.parse.parse_qs(issuer.seen[-1].decode())
    assert form == {"token": [OPAQUE], "token_type_hint": ["access_token"]}


async def test_an_inactive_token_is_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = verifier_of(url)
        assert await refusal(verifier, "revoked-or-unknown") == "inactive"
        issuer.answers["odd"] = {"active": "true"}  # only the JSON true is active
        assert await refusal(verifier, "odd") == "inactive"
        await verifier.aclose()


async def test_the_answer_is_checked_issuer_times_and_types() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        now = int(time.time())
        issuer.answers.update({
            "tok-other-issuer": active("https://other-as.example.com"),
            "tok-expired": active(url, exp=now - 120),
            "tok-early": active(url, nbf=now + 120),
            "tok-bad-scope": active(url, scope=["a", "b"]),
            "tok-bad-exp": active(url, exp="tomorrow"),
            "tok-no-iss": active(url, iss=None),
        })
        verifier = verifier_of(url, issuer=url)
        assert await refusal(verifier, "tok-other-issuer") == "issuer"
        assert await refusal(verifier, "tok-expired") == "expired"
        assert await refusal(verifier, "tok-early") == "not_yet_valid"
        assert await refusal(verifier, "tok-bad-scope") == "malformed"
        assert await refusal(verifier, "tok-bad-exp") == "malformed"
        assert (await verifier.verify("tok-no-iss")).issuer == url  # the configured issuer
        await verifier.aclose()
        unnamed = verifier_of(url)  # no issuer configured: the answer's, else the endpoint's origin
        assert (await unnamed.verify("tok-other-issuer")).issuer == "https://other-as.example.com"
        assert (await unnamed.verify("tok-no-iss")).issuer == url
        await unnamed.aclose()


async def test_a_token_for_another_audience_is_refused_by_authorization() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        issuer.answers["mine"] = active(url)
        issuer.answers["theirs"] = active(url, aud=["https://other.example.com/mcp"])
        auth = Authorization(verifier_of(url), resource=RESOURCE, authorization_servers=[url])
        assert (await auth.authenticate("Bearer mine")).subject == "alice"
        with pytest.raises(TokenRefused) as refused:
            await auth.authenticate("Bearer theirs")
        assert refused.value.reason == "audience"


async def test_the_cache_is_keyed_by_a_hash_and_bounded() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        for name in ("a", "b", "c"):
            issuer.answers[f"token-{name}"] = active(url, sub=name)
        verifier = verifier_of(url, limits=Limits(max_introspection_cache=2))
        for name in ("a", "b", "a", "c"):  # c evicts b (a was used more recently)
            assert (await verifier.verify(f"token-{name}")).subject == name
        assert issuer.hits["introspect"] == 3
        remembered = set(verifier._cache)
        assert remembered == {hashlib.sha256(f"token-{n}".encode()).digest() for n in ("a", "c")}
        await verifier.verify("token-a")
        await verifier.verify("token-c")
        assert issuer.hits["introspect"] == 3
        await verifier.verify("token-b")  # forgotten: asked again
        assert issuer.hits["introspect"] == 4
        await verifier.aclose()


async def test_an_outcome_is_reused_until_its_ttl_or_the_token_expiry() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        issuer.answers["short"] = active(url, exp=time.time() + 0.3)
        issuer.answers["long"] = active(url)
        verifier = verifier_of(url, limits=Limits(introspection_cache_ttl=0.5), leeway=0)
        await verifier.verify("short")
        await verifier.verify("long")
        assert issuer.hits["introspect"] == 2
        await anyio.sleep(0.35)
        issuer.answers["short"] = {"active": False}  # what the server says once it has expired
        assert await refusal(verifier, "short") == "inactive"  # not remembered past exp: asked again
        await verifier.verify("long")  # still remembered
        assert issuer.hits["introspect"] == 3
        await anyio.sleep(0.2)
        issuer.answers["long"] = {"active": False}  # revoked: seen once the ttl has passed
        assert await refusal(verifier, "long") == "inactive"
        assert issuer.hits["introspect"] == 4
        await verifier.aclose()


async def test_a_server_down_refuses_unavailable_while_remembered_tokens_verify() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        issuer.answers[OPAQUE] = active(url)
        verifier = verifier_of(url)
        await verifier.verify(OPAQUE)
    assert (await verifier.verify(OPAQUE)).subject == "alice"
    assert await refusal(verifier, "another-token") == "unavailable"
    await verifier.aclose()


async def test_wrong_client_credentials_refuse_unavailable_and_are_not_remembered() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        issuer.answers[OPAQUE] = active(url)
        wrong = IntrospectionVerifier(url + "/introspect", client_id=CLIENT[0], client_secret="wrong")
        assert await refusal(wrong, OPAQUE) == "unavailable"
        assert await refusal(wrong, OPAQUE) == "unavailable"
        await wrong.aclose()
    assert issuer.hits["introspect"] == 2


async def test_an_oversized_token_is_refused_unsent() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = verifier_of(url, limits=Limits(max_token_bytes=100))
        assert await refusal(verifier, "x" * 101) == "too_large"
        await verifier.aclose()
    assert issuer.hits["introspect"] == 0


def test_the_endpoint_must_be_an_http_url() -> None:
    with pytest.raises(ValueError, match="absolute"):
        IntrospectionVerifier("/introspect", client_id="a", client_secret="b")


async def test_tokens_never_appear_in_log_records(caplog: pytest.LogCaptureFixture) -> None:
    issuer = Issuer()
    with caplog.at_level(logging.DEBUG):
        async with serving(issuer) as url:
            issuer.answers[OPAQUE] = active(url)
            verifier = verifier_of(url)
            await verifier.verify(OPAQUE)
            assert await refusal(verifier, "inactive-token-zzz") == "inactive"
            wrong = IntrospectionVerifier(url + "/introspect", client_id=CLIENT[0], client_secret="wrong")
            assert await refusal(wrong, "token-with-wrong-client-yyy") == "unavailable"
            await wrong.aclose()
        assert await refusal(verifier, "token-while-down-xxx") == "unavailable"
        await verifier.aclose()
    assert any(r.name == "minimcp.auth" for r in caplog.records)
    for record in caplog.records:
        text = record.getMessage() + repr(record.args)
        for token in (OPAQUE, "inactive-token-zzz", "token-with-wrong-client-yyy", "token-while-down-xxx"):
            assert token not in text


async def test_a_client_given_is_used_and_left_open() -> None:
    httpx = pytest.importorskip("httpx")
    issuer = Issuer()
    async with serving(issuer) as url, httpx.AsyncClient(headers={"X-Probe": "mine"}) as client:
        issuer.answers[OPAQUE] = active(url)
        verifier = verifier_of(url, http_client=client)
        assert (await verifier.verify(OPAQUE)).subject == "alice"
        await verifier.aclose()
        assert not client.is_closed
        assert (await client.get(url + "/jwks")).status_code == 200
    assert issuer.headers[0][b"x-probe"] == b"mine"
