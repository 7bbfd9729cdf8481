"""JWTVerifier against a real issuer on loopback: discovery, keys and their refetch, and each attack refused."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import time
import types
from typing import Any

import anyio
import pytest

from minimcp.auth import Authorization, JWTVerifier, Principal, TokenRefused
from minimcp.core.config import Limits
from tests.helpers.issuer import RESOURCE, Issuer, claims, public_jwk, public_pem, serving, sign, unsigned

jwt = pytest.importorskip("jwt")


async def refusal(verifier: Any, token: str) -> str:
    """The reason ``verifier`` refuses ``token`` (fails the test when it accepts it)."""
    with pytest.raises(TokenRefused) as refused:
        await verifier.verify(token)
    assert not token or token not in refused.value.description
    return refused.value.reason


async def test_a_token_gives_its_principal_keys_found_through_rfc8414_metadata() -> None:
    issuer = Issuer(path="/realms/shop")  # a Keycloak-style issuer with a path: metadata path-inserted
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        payload = claims(url, aud=[RESOURCE, "https://other.example.com"])
        principal = await verifier.verify(sign(payload))
        assert principal == Principal(
            issuer=url, subject="alice", client_id="booking-app",
            scopes=frozenset({"bookings:read", "bookings:write"}),
            audience=(RESOURCE, "https://other.example.com"), expires_at=float(payload["exp"]), claims=payload,
        )
        assert principal.key == (url, "alice")
        # Kept: more tokens (another key of the same set, ES256) fetch nothing.
        await verifier.verify(sign(claims(url), key="ec", kid="e1", alg="ES256"))
        await verifier.verify(sign(claims(url)))
        await verifier.aclose()
    assert (issuer.hits["metadata"], issuer.hits["jwks"]) == (1, 1)


async def test_openid_discovery_is_asked_when_rfc8414_metadata_is_missing() -> None:
    issuer = Issuer(path="/tenant")
    issuer.metadata_at = "openid"
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        principal = await verifier.verify(sign(claims(url, scope=None, scp=["a", "b"], azp=None, client_id="cli")))
        await verifier.aclose()
    assert (principal.scopes, principal.client_id) == (frozenset({"a", "b"}), "cli")
    assert issuer.hits["/.well-known/oauth-authorization-server/tenant"] == 1  # asked first, not there
    assert issuer.hits["metadata"] == 1


async def test_a_jwks_uri_given_is_used_without_discovery() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, jwks_uri=url + "/jwks")
        assert (await verifier.verify(sign(claims(url)))).subject == "alice"
        await verifier.aclose()
    assert (issuer.hits["metadata"], issuer.hits["jwks"]) == (0, 1)


async def test_keys_given_are_used_without_any_fetch() -> None:
    url = "https://as.example.com"
    verifier = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]})
    assert (await verifier.verify(sign(claims(url)))).subject == "alice"
    assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unknown_key"


async def test_a_metadata_document_naming_another_issuer_is_not_used(caplog: pytest.LogCaptureFixture) -> None:
    issuer = Issuer()
    issuer.metadata_issuer = "https://evil.example.com"
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        with caplog.at_level(logging.WARNING, logger="minimcp.auth"):
            assert await refusal(verifier, sign(claims(url))) == "unavailable"
        await verifier.aclose()
    assert issuer.hits["jwks"] == 0
    assert any("evil.example.com" in r.getMessage() for r in caplog.records)


# --- attacks ------------------------------------------------------------------------------------------


async def test_alg_none_is_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        assert await refusal(verifier, unsigned(claims(url), {"alg": "none", "kid": "k1"})) == "algorithm"
        assert await refusal(verifier, unsigned(claims(url), {"alg": "None"})) == "algorithm"
        assert await refusal(verifier, unsigned(claims(url), {"kid": "k1"})) == "algorithm"  # no alg at all
    assert issuer.hits["jwks"] == 0  # refused before any key was looked for
    with pytest.raises(ValueError, match="none"):
        JWTVerifier(url, algorithms=["RS256", "none"])


def hmac_signed(payload: dict[str, Any], secret: bytes, header: dict[str, Any]) -> str:
    """``payload`` signed HS256 with ``secret`` by hand (pyjwt itself will not use a public key as one)."""
    head = unsigned(payload, header)
    mac = hmac.new(secret, head[:-1].encode(), hashlib.sha256).digest()
    return head + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


async def test_hmac_signed_with_the_public_key_is_refused() -> None:
    """The classic confusion: HS256 with the issuer's public key (PEM, or its JWK) as the shared secret."""
    issuer = Issuer()
    async with serving(issuer) as url:
        forged = hmac_signed(claims(url), public_pem("rsa"), {"alg": "HS256", "typ": "JWT", "kid": "k1"})
        assert await refusal(JWTVerifier(url), forged) == "algorithm"
        # With HMAC on (a secret given explicitly), the public key is still never the HMAC key.
        mixed = JWTVerifier(url, algorithms=["RS256", "HS256"], secret="a-real-shared-secret-of-32-bytes!")
        assert await refusal(mixed, forged) == "signature"
        shared = jwt.encode(claims(url), "a-real-shared-secret-of-32-bytes!", algorithm="HS256")
        assert (await mixed.verify(shared)).subject == "alice"
        assert (await mixed.verify(sign(claims(url)))).subject == "alice"
        await mixed.aclose()
    with pytest.raises(ValueError, match="secret"):
        JWTVerifier(url, algorithms=["HS256"])
    with pytest.raises(ValueError, match="32 bytes"):
        JWTVerifier(url, algorithms=["HS256"], secret="short")


async def test_a_token_of_another_issuer_is_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        assert await refusal(verifier, sign(claims("https://other-as.example.com"))) == "issuer"
        assert await refusal(verifier, sign(claims(url + "/"))) == "issuer"  # exact, not "the same enough"
        assert await refusal(verifier, sign(claims(url, iss=None))) == "malformed"
        await verifier.aclose()


async def test_a_token_for_another_audience_is_refused_by_authorization() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        auth = Authorization(JWTVerifier(url), resource="HTTPS://MCP.example.com/mcp", authorization_servers=[url])
        assert (await auth.authenticate("Bearer " + sign(claims(url)))).subject == "alice"
        for audience in ("https://other.example.com/mcp", ["https://mcp.example.com/other"], None):
            with pytest.raises(TokenRefused) as refused:
                await auth.authenticate("Bearer " + sign(claims(url, aud=audience)))
            assert refused.value.reason == "audience"


async def test_an_expired_token_is_refused_past_the_leeway() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, leeway=30)
        now = int(time.time())
        assert await refusal(verifier, sign(claims(url, iat=now - 600, exp=now - 60))) == "expired"
        assert (await verifier.verify(sign(claims(url, iat=now - 600, exp=now - 10)))).subject == "alice"
        assert await refusal(verifier, sign(claims(url, exp=None))) == "malformed"  # exp is required
        await verifier.aclose()


async def test_a_token_not_yet_valid_is_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, leeway=30)
        now = int(time.time())
        assert await refusal(verifier, sign(claims(url, nbf=now + 120))) == "not_yet_valid"
        assert await refusal(verifier, sign(claims(url, iat=now + 120))) == "not_yet_valid"
        assert (await verifier.verify(sign(claims(url, nbf=now + 10)))).subject == "alice"
        await verifier.aclose()


async def test_a_bad_signature_is_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        good = sign(claims(url))
        head, _, rest = good.partition(".")
        tampered = head + "." + sign(claims(url, sub="mallory")).split(".")[1] + "." + rest.split(".")[1]
        assert await refusal(verifier, tampered) == "signature"
        assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k1")) == "signature"  # kid borrowed
        # An EC signature under the RSA key's kid: the key fixes the algorithm, not the token.
        assert await refusal(verifier, sign(claims(url), key="ec", kid="k1", alg="ES256")) == "algorithm"
        await verifier.aclose()


async def test_an_unknown_kid_refetches_once_then_is_refused_within_the_interval() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(auth_key_refetch_interval=60.0))
        await verifier.verify(sign(claims(url)))
        assert issuer.hits["jwks"] == 1
        assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unknown_key"
        assert issuer.hits["jwks"] == 2  # fetched again once for the new kid
        issuer.keys.append(public_jwk("rsa3", "k3"))  # even a key now published waits for the interval
        assert await refusal(verifier, sign(claims(url), key="rsa3", kid="k3")) == "unknown_key"
        assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unknown_key"
        assert issuer.hits["jwks"] == 2
        assert (await verifier.verify(sign(claims(url)))).subject == "alice"  # known keys go on verifying
        await verifier.aclose()


async def test_a_rotated_key_is_fetched_when_a_token_names_it() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(auth_key_refetch_interval=0.01))
        await verifier.verify(sign(claims(url)))
        issuer.keys = [public_jwk("rsa2", "k2")]  # rotation: k1 withdrawn, k2 published
        await anyio.sleep(0.02)
        assert (await verifier.verify(sign(claims(url), key="rsa2", kid="k2"))).subject == "alice"
        await anyio.sleep(0.02)
        assert await refusal(verifier, sign(claims(url))) == "unknown_key"  # the withdrawn key is gone
        await verifier.aclose()
    assert issuer.hits["metadata"] == 1  # discovered once; only the key set is fetched again


async def test_keys_older_than_their_max_age_are_fetched_again() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(auth_keys_max_age=0.05, auth_key_refetch_interval=0.01))
        await verifier.verify(sign(claims(url)))
        issuer.keys = [public_jwk("rsa2", "k1")]  # k1 now names another key: the old one is withdrawn
        assert (await verifier.verify(sign(claims(url)))).subject == "alice"  # still within its age
        await anyio.sleep(0.1)
        assert await refusal(verifier, sign(claims(url))) == "signature"
        assert (await verifier.verify(sign(claims(url), key="rsa2"))).subject == "alice"
        await verifier.aclose()
    assert issuer.hits["jwks"] == 2


async def test_concurrent_unknown_kids_share_one_fetch() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        token = sign(claims(url))
        await verifier.verify(token)  # the keys are fetched (one fetch), then:
        reasons: list[str] = []

        async def one(token: str) -> None:
            try:
                await verifier.verify(token)
                reasons.append("ok")
            except TokenRefused as refused:
                reasons.append(refused.reason)

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one, token)
            for _ in range(5):
                tg.start_soon(one, sign(claims(url), key="rsa2", kid="nope"))
        await verifier.aclose()
    assert sorted(reasons) == ["ok"] * 10 + ["unknown_key"] * 5
    assert (issuer.hits["metadata"], issuer.hits["jwks"]) == (1, 2)  # the five unknown kids: one fetch


async def test_a_first_token_with_an_unknown_kid_fetches_the_keys_once() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unknown_key"
        await verifier.aclose()
    assert (issuer.hits["metadata"], issuer.hits["jwks"]) == (1, 1)


async def test_an_oversized_token_is_refused_unread() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(max_token_bytes=4096))
        big = sign(claims(url, padding="x" * 5000))
        assert await refusal(verifier, big) == "too_large"
        assert await refusal(verifier, "x" * 1_000_000) == "too_large"
        await verifier.aclose()
    assert sum(issuer.hits.values()) == 0


@pytest.mark.parametrize(
    "token", ["", "abc", "a.b.c", "a.b.c.d.e", "eyJhbGciOiJSUzI1NiJ9.%%%.x", "e30.e30.", "W10.e30.x"],
)
async def test_a_malformed_token_is_refused(token: str) -> None:
    verifier = JWTVerifier("https://as.example.com", keys={"keys": [public_jwk("rsa", "k1")]})
    assert await refusal(verifier, token) in ("malformed", "algorithm")


async def test_claims_of_the_wrong_type_are_refused() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        for bad in ({"scope": ["a"]}, {"scope": None, "scp": 3}, {"aud": 5}, {"client_id": 7}, {"sub": 9}):
            assert await refusal(verifier, sign(claims(url, **bad))) == "malformed"
        await verifier.aclose()


async def test_an_issuer_down_refuses_unknown_keys_while_cached_keys_verify() -> None:
    issuer = Issuer()
    limits = Limits(auth_key_refetch_interval=0.01)
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=limits)
        await verifier.verify(sign(claims(url)))
    # The issuer is gone (its port refuses connections).
    assert (await verifier.verify(sign(claims(url)))).subject == "alice"
    assert (await verifier.verify(sign(claims(url), key="ec", kid="e1", alg="ES256"))).subject == "alice"
    await anyio.sleep(0.02)
    assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unavailable"
    assert await refusal(verifier, sign(claims(url), key="rsa2", kid="k2")) == "unavailable"  # within the interval
    await verifier.aclose()
    # Never reached at all: nothing is accepted.
    never = JWTVerifier(url, limits=limits)
    assert await refusal(never, sign(claims(url))) == "unavailable"
    await never.aclose()


async def test_a_key_set_is_bounded() -> None:
    issuer = Issuer()
    issuer.keys = [public_jwk("rsa2", f"spare{i}") for i in range(5)] + [public_jwk("rsa", "k1")]
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(max_auth_keys=5))
        assert await refusal(verifier, sign(claims(url))) == "unknown_key"  # k1 is the sixth: not kept
        await verifier.aclose()
        issuer.padding = 300_000  # a key set larger than max_auth_response_bytes
        large = JWTVerifier(url)
        assert await refusal(large, sign(claims(url))) == "unavailable"
        await large.aclose()


async def test_a_token_without_kid_uses_the_one_key_that_fits() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url)
        assert (await verifier.verify(sign(claims(url), kid=None))).subject == "alice"  # the only RSA key
        issuer.keys.append(public_jwk("rsa2", "k2"))
        fresh = JWTVerifier(url)
        assert await refusal(fresh, sign(claims(url), kid=None)) == "unknown_key"  # two RSA keys: which?
        await verifier.aclose()
        await fresh.aclose()


def test_the_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="HS999"):
        JWTVerifier("https://as.example.com", algorithms=["HS999"])
    with pytest.raises(ValueError, match="HMAC"):
        JWTVerifier("https://as.example.com", secret="x" * 40)
    with pytest.raises(ValueError, match="leeway"):
        JWTVerifier("https://as.example.com", leeway=-1)
    with pytest.raises(ValueError, match="key set"):
        JWTVerifier("https://as.example.com", keys={"kty": "RSA"})


async def test_tokens_never_appear_in_log_records(caplog: pytest.LogCaptureFixture) -> None:
    issuer = Issuer()
    tokens = []
    with caplog.at_level(logging.DEBUG):
        async with serving(issuer) as url:
            verifier = JWTVerifier(url, limits=Limits(auth_key_refetch_interval=0.01))
            tokens = [
                sign(claims(url)), sign(claims(url, exp=1)), sign(claims(url), key="rsa2", kid="k1"),
                sign(claims(url), key="rsa2", kid="k9"), sign(claims("https://x.example.com")),
            ]
            for token in tokens:
                with pytest.raises(TokenRefused) if token is not tokens[0] else contextlib.nullcontext():
                    await verifier.verify(token)
        await anyio.sleep(0.02)
        tokens.append(sign(claims(url), key="rsa2", kid="k8"))
        assert await refusal(verifier, tokens[-1]) == "unavailable"  # logs the failed fetch
        await verifier.aclose()
    assert any(r.name == "minimcp.auth" for r in caplog.records)
    for record in caplog.records:
        text = record.getMessage() + repr(record.args)
        for token in tokens:
            assert token.split(".")[2] not in text and token.split(".")[1] not in text



# --- tokens remembered as verified --------------------------------------------------------------------


def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every token pyjwt is asked to read from now on (its header: the first step of a verification)."""
    read = jwt.get_unverified_header
    seen: list[str] = []

    def counting(token: str) -> Any:
        seen.append(token)
        return read(token)

    monkeypatch.setattr(jwt, "get_unverified_header", counting)
    return seen


def clock_at(monkeypatch: pytest.MonkeyPatch, wall: float) -> None:
    """The verifier's wall clock set to ``wall`` (its monotonic clock, for key ages, left running)."""
    monkeypatch.setattr("minimcp.auth.jwt.time", types.SimpleNamespace(time=lambda: wall, monotonic=time.monotonic))


async def test_a_token_that_verified_is_not_read_again_and_refusals_are_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = "https://as.example.com"
    verifier = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]})
    read = parses(monkeypatch)
    token, forged = sign(claims(url)), sign(claims(url), key="rsa2")
    first = await verifier.verify(token)
    assert await verifier.verify(token) is first
    assert await refusal(verifier, forged) == "signature"
    assert await refusal(verifier, forged) == "signature"
    assert read == [token, forged, forged]  # the token once; a refused one every time
    never = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]}, limits=Limits(max_verified_tokens=0))
    await never.verify(token)
    await never.verify(token)
    assert read[3:] == [token, token]


async def test_a_remembered_token_past_its_exp_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "https://as.example.com"
    verifier = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]}, leeway=30)
    now = int(time.time())
    token = sign(claims(url, exp=now + 60))
    await verifier.verify(token)
    read = parses(monkeypatch)
    clock_at(monkeypatch, now + 60 + 29)  # within the leeway: still taken, not read again
    assert (await verifier.verify(token)).subject == "alice"
    clock_at(monkeypatch, now + 60 + 31)
    assert await refusal(verifier, token) == "expired"
    assert read == []  # refused by its remembered exp, against the clock
    assert len(verifier._verified) == 0  # and forgotten


async def test_a_remembered_token_is_checked_against_its_nbf(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "https://as.example.com"
    verifier = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]}, leeway=30)
    now = int(time.time())
    token = sign(claims(url, nbf=now + 20))  # taken now: within the leeway
    await verifier.verify(token)
    clock_at(monkeypatch, now - 20)  # the clock stepped back: nbf is 40 s ahead
    assert await refusal(verifier, token) == "not_yet_valid"


async def test_a_remembered_token_stops_verifying_when_its_key_is_withdrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(auth_key_refetch_interval=0.01))
        token, kept = sign(claims(url)), sign(claims(url, sub="bob"), key="ec", kid="e1", alg="ES256")
        await verifier.verify(token)
        await verifier.verify(kept)
        issuer.keys = [public_jwk("rsa2", "k2"), public_jwk("ec", "e1")]  # k1 withdrawn, e1 kept
        await anyio.sleep(0.02)
        read = parses(monkeypatch)
        assert (await verifier.verify(sign(claims(url), key="rsa2", kid="k2"))).subject == "alice"  # refetch
        assert issuer.hits["jwks"] == 2
        assert await refusal(verifier, token) == "unknown_key"  # forgotten with its key: read, then refused
        assert (await verifier.verify(kept)).subject == "bob"  # its key is still published: not read again
        assert read[1:] == [token]
        await verifier.aclose()


async def test_a_remembered_token_stops_verifying_when_its_kid_names_another_key_after_max_age() -> None:
    issuer = Issuer()
    async with serving(issuer) as url:
        verifier = JWTVerifier(url, limits=Limits(auth_keys_max_age=0.05, auth_key_refetch_interval=0.01))
        token = sign(claims(url))
        await verifier.verify(token)
        issuer.keys = [public_jwk("rsa2", "k1")]  # the same kid, another key
        assert (await verifier.verify(token)).subject == "alice"  # the keys are not old yet
        await anyio.sleep(0.1)
        assert await refusal(verifier, token) == "signature"  # the keys fetched again on a remembered token
        await verifier.aclose()
    assert issuer.hits["jwks"] == 2


async def test_the_remembered_tokens_are_bounded_and_keyed_by_their_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "https://as.example.com"
    verifier = JWTVerifier(url, keys={"keys": [public_jwk("rsa", "k1")]}, limits=Limits(max_verified_tokens=3))
    tokens = [sign(claims(url, sub=f"person-{n}")) for n in range(5)]
    for token in tokens:
        await verifier.verify(token)
    remembered = verifier._verified
    assert list(remembered) == [hashlib.sha256(t.encode()).digest() for t in tokens[2:]]  # the 3 used last
    text = repr(remembered)
    for token in tokens:  # neither the token, nor its payload or signature, is anywhere in what is kept
        assert token.encode() not in remembered and token.split(".")[2] not in text and token.split(".")[1] not in text
    read = parses(monkeypatch)
    await verifier.verify(tokens[2])  # remembered (and now the most recently used)
    await verifier.verify(tokens[0])  # forgotten: read again, and the least recently used (tokens[3]) goes
    assert read == [tokens[0]]
    assert list(remembered) == [hashlib.sha256(t.encode()).digest() for t in (tokens[4], tokens[2], tokens[0])]
