"""JWTVerifier: JWT access tokens checked against their issuer's keys (JWKS), found through its metadata.

The keys come from the issuer's ``jwks_uri`` (given, or read from its metadata: RFC 8414
``/.well-known/oauth-authorization-server``, then OpenID discovery; the document must name the
configured issuer exactly), fetched with httpx on the running event loop (asyncio or trio), kept, and
fetched again when a token names a key (``kid``) not among them, at most once per
``Limits.auth_key_refetch_interval`` (concurrent requests share one fetch), and when they are older than
``Limits.auth_keys_max_age``. Signatures are checked with pyjwt (a key's algorithm fixed by the
verifier, never by the token: ``none`` is never taken, an HMAC algorithm only with a secret given
explicitly, never with a key of the key set). An issuer that cannot be reached makes tokens whose key
is not known refused ``unavailable`` (never accepted); tokens whose keys are kept go on verifying.

A token whose signature and claims verified is remembered under a SHA-256 hash of it (never the token),
with the principal it gave and the key that verified it, at most ``Limits.max_verified_tokens`` of them
(least recently used forgotten first), until its ``exp``: the same token again is not parsed nor
verified again, but its ``exp`` and ``nbf`` are checked against the clock (with the leeway) every time,
and it stops verifying as soon as a fetched key set no longer holds that key (the entries of the keys
withdrawn are dropped when the key set is fetched). Refusals are never remembered.
Needs the ``auth`` extra.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import math
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import anyio
import httpx
import jwt

from minimcp.auth.claims import check_window, finite_number, principal_from_claims
from minimcp.auth.fetch import Fetcher, FetchFailed
from minimcp.auth.principal import Principal, Refusal, TokenRefused
from minimcp.core.config import Limits

__all__ = ["DEFAULT_ALGORITHMS", "JWTVerifier"]

logger = logging.getLogger("minimcp.auth")

#: Asymmetric algorithms and the key each needs: key type (``kty``) and, for EC, curve (``crv``).
_KEY_OF: dict[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None), "RS384": ("RSA", None), "RS512": ("RSA", None),
    "PS256": ("RSA", None), "PS384": ("RSA", None), "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"), "ES384": ("EC", "P-384"), "ES512": ("EC", "P-521"), "ES256K": ("EC", "secp256k1"),
    "EdDSA": ("OKP", None),
}
_HMAC = frozenset({"HS256", "HS384", "HS512"})

#: What each of pyjwt's refusals means, the first that fits (subclasses before their bases).
_DECODE_REFUSALS: tuple[tuple[type[jwt.PyJWTError], Refusal, str], ...] = (
    (jwt.ExpiredSignatureError, "expired", "the token has expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid", "the token is not valid yet"),
    (jwt.InvalidIssuerError, "issuer", "the token was issued by another authorization server"),
    (jwt.InvalidSignatureError, "signature", "the token's signature does not verify"),
    (jwt.InvalidAlgorithmError, "algorithm", "the token's signing algorithm is not accepted"),
    (jwt.MissingRequiredClaimError, "malformed", "the token lacks a required claim (exp, iss)"),
    (jwt.PyJWTError, "malformed", "the token's claims are not valid"),
)

#: The algorithms taken unless told otherwise: every asymmetric one in common use (no HMAC, never ``none``).
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order asked: RFC 8414 (path inserted after the
    well-known prefix), OpenID discovery with the path inserted, then appended (OpenID Connect's own)."""
    parts = urllib.parse.urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(well_known: str) -> str:
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, well_known, "", ""))

    urls = [at("/.well-known/oauth-authorization-server" + path), at("/.well-known/openid-configuration" + path)]
    if path:
        urls.append(at(path + "/.well-known/openid-configuration"))
    return urls


class _Key(NamedTuple):
    """One usable key of a key set, and a digest of the JWK it was read from (what it is, whoever names it)."""

    jwk: jwt.PyJWK
    fingerprint: bytes


class _KeySet:
    """The signing keys of a key set, each as algorithm -> key: by ``kid``, and all of them."""

    def __init__(self, keys: Sequence[tuple[str | None, dict[str, _Key]]] = ()) -> None:
        self.all = [usable for _, usable in keys]
        self.by_kid: dict[str, dict[str, _Key]] = {}
        self.fingerprints = frozenset(key.fingerprint for _, usable in keys for key in usable.values())
        for kid, usable in keys:
            if kid is not None:
                self.by_kid.setdefault(kid, usable)


class _Verified(NamedTuple):
    """A token that verified: the principal it gave, its times, and the key it verified under (``None``: the secret)."""

    principal: Principal
    exp: float
    nbf: float | None
    fingerprint: bytes | None


def _read_keys(document: Mapping[str, Any], algorithms: frozenset[str], limit: int) -> _KeySet:
    """The signing keys of a key set. Keys of another use, type or algorithm, or that do not parse, are left out."""
    found = document.get("keys")
    if not isinstance(found, list):
        raise FetchFailed("the key set has no 'keys' list")
    if len(found) > limit:
        logger.warning("the key set has %d keys; only the first %d are kept (Limits.max_auth_keys)", len(found), limit)
    keys: list[tuple[str | None, dict[str, _Key]]] = []
    for jwk in found[:limit]:
        if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
            continue
        kid = jwk.get("kid")
        if kid is not None and not isinstance(kid, str):
            continue
        usable: dict[str, _Key] = {}
        fingerprint = hashlib.sha256(json.dumps(jwk, sort_keys=True).encode()).digest()
        for alg in sorted(algorithms & _KEY_OF.keys()):
            kty, crv = _KEY_OF[alg]
            if jwk.get("kty") != kty or (crv is not None and jwk.get("crv") != crv) or jwk.get("alg", alg) != alg:
                continue
            try:
                usable[alg] = _Key(jwt.PyJWK(jwk, alg), fingerprint)
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                continue
        if usable:
            keys.append((kid, usable))
    return _KeySet(keys)


class JWTVerifier:
    """Checks JWT access tokens (RFC 9068) issued by one authorization server.

    Args:
        issuer: The issuer, exactly as its tokens' ``iss`` and its metadata's ``issuer`` say.
        jwks_uri: Where its key set is; ``None``: read from its metadata.
        keys: A key set (``{"keys": [...]}``) to use instead of fetching one (no fetch at all
            unless ``jwks_uri`` is given too: then these are the first keys, refreshed from there).
        algorithms: The algorithms taken. ``none`` never; HMAC (``HS256``...) only with ``secret``.
        secret: A shared secret for HMAC-signed tokens (at least 32 bytes); only the HMAC
            algorithms listed in ``algorithms`` use it, and they use nothing else.
        leeway: Seconds of clock difference allowed on ``exp``, ``nbf`` and ``iat``.
        http_client: The client to fetch with (yours, never closed here); ``None``: one made on
            first use, closed by :meth:`aclose`.
        limits: Its bounds: ``max_token_bytes``, ``max_auth_keys``, ``auth_key_refetch_interval``,
            ``auth_keys_max_age``, ``auth_fetch_timeout``, ``max_auth_response_bytes``,
            ``max_verified_tokens``.

    Raises:
        ValueError: an algorithm it does not know, ``none``, HMAC without a secret (or a secret without
            HMAC, or shorter than 32 bytes), or ``keys`` that is not a key set.
    """

    def __init__(
        self,
        issuer: str,
        *,
        jwks_uri: str | None = None,
        keys: Mapping[str, Any] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        secret: str | bytes | None = None,
        leeway: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        limits: Limits | None = None,
    ) -> None:
        allowed = frozenset(algorithms)
        unknown = allowed - _KEY_OF.keys() - _HMAC
        if unknown:
            raise ValueError(f"algorithms not taken by JWTVerifier: {sorted(unknown)} (never 'none')")
        if not allowed:
            raise ValueError("algorithms must name at least one algorithm")
        secret_bytes = secret.encode() if isinstance(secret, str) else secret
        if (allowed & _HMAC) and secret_bytes is None:
            raise ValueError("an HMAC algorithm needs an explicit secret= (never a public key)")
        if secret_bytes is not None and not allowed & _HMAC:
            raise ValueError("secret= is for HMAC algorithms: list the ones to take in algorithms=")
        if secret_bytes is not None and len(secret_bytes) < 32:
            raise ValueError("an HMAC secret must have at least 32 bytes")
        if not math.isfinite(leeway) or leeway < 0:
            raise ValueError("leeway must be a number of seconds, 0 or more")
        self.issuer = issuer
        self.algorithms = allowed
        self.leeway = leeway
        self._secret = secret_bytes
        self._limits = limits or Limits()
        self._fetcher = Fetcher(self._limits, http_client)
        self._jwks_uri = jwks_uri
        #: Whether keys come from the issuer at all (not: only the key set given).
        self._fetches = jwks_uri is not None or keys is None
        self._keys = _KeySet()
        if keys is not None:
            try:
                self._keys = _read_keys(keys, allowed, self._limits.max_auth_keys)
            except FetchFailed as error:
                raise ValueError(f"keys= must be a key set (JWKS): {error}") from None
        self._fetched_at: float | None = time.monotonic() if keys is not None else None
        self._last_attempt = -math.inf
        #: The last fetch failed or was made for an unknown key: the next waits for the interval.
        self._spent = False
        #: Fetches ended (got keys or failed; not cancelled).
        self._finished = 0
        self._last_failed = False
        self._inflight: anyio.Event | None = None
        #: Tokens that verified, by the SHA-256 of the token (least recently used first).
        self._verified: collections.OrderedDict[bytes, _Verified] = collections.OrderedDict()

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` speaks for.

        Raises:
            TokenRefused: ``too_large``, ``malformed``, ``algorithm``, ``unknown_key``, ``signature``,
                ``issuer``, ``expired``, ``not_yet_valid``, or ``unavailable`` (the issuer's keys
                could not be fetched).
        """
        if len(token) > self._limits.max_token_bytes:
            raise TokenRefused("too_large", "the token is too large")
        digest = hashlib.sha256(token.encode()).digest()
        if digest in self._verified:
            if self._stale() and self._may_fetch():  # fetched again first (a withdrawn key then drops it)
                await self._refresh(spend=False)
            known = self._recall(digest)
            if known is not None:
                return known
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("malformed", "the token is not a signed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise TokenRefused("algorithm", "the token's signing algorithm is not accepted")
        kid = header.get("kid")
        if alg in _HMAC:
            assert self._secret is not None  # HMAC is only allowed with a secret (__init__)
            claims = self._decode(token, self._secret, alg)
            fingerprint = None
        else:
            key = await self._key(kid if isinstance(kid, str) else None, alg)
            claims = self._decode(token, key.jwk, alg)
            fingerprint = key.fingerprint
        principal = principal_from_claims(claims, self.issuer)
        exp = finite_number(claims.get("exp"))
        if exp is not None:  # (always: pyjwt required a numeric exp)
            self._remember(digest, _Verified(principal, exp, finite_number(claims.get("nbf")), fingerprint))
        return principal

    def _recall(self, digest: bytes) -> Principal | None:
        """The principal of a token that verified before, its times checked now; ``None``: not remembered (or
        no longer: expired, or its key withdrawn).

        Raises:
            TokenRefused: ``expired`` or ``not_yet_valid`` (the clock, with the leeway).
        """
        known = self._verified.get(digest)
        if known is None:
            return None
        if known.fingerprint is not None and known.fingerprint not in self._keys.fingerprints:
            del self._verified[digest]  # its key was withdrawn: verified again (and refused)
            return None
        try:
            check_window(known.exp, known.nbf, time.time(), self.leeway)
        except TokenRefused as refused:
            if refused.reason == "expired":
                del self._verified[digest]
            raise
        self._verified.move_to_end(digest)
        return known.principal

    def _remember(self, digest: bytes, verified: _Verified) -> None:
        cache = self._verified
        cache[digest] = verified
        cache.move_to_end(digest)
        while len(cache) > self._limits.max_verified_tokens:
            cache.popitem(last=False)

    def _decode(self, token: str, key: jwt.PyJWK | bytes, alg: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss"], "verify_aud": False},
            )
        except jwt.PyJWTError as error:
            for kind, reason, description in _DECODE_REFUSALS:
                if isinstance(error, kind):
                    raise TokenRefused(reason, description) from None
            raise  # not reached: the last entry takes any PyJWTError
        return claims

    # --- keys -------------------------------------------------------------------------------------

    def _find(self, kid: str | None, alg: str) -> _Key | None:
        if kid is not None:
            by_alg = self._keys.by_kid.get(kid)
            if by_alg is None:
                return None
            key = by_alg.get(alg)
            if key is None:
                raise TokenRefused("algorithm", "the token's algorithm does not fit its key")
            return key
        # No kid: the one key that fits the algorithm, if there is only one.
        fitting = [by_alg[alg] for by_alg in self._keys.all if alg in by_alg]
        return fitting[0] if len(fitting) == 1 else None

    def _may_fetch(self) -> bool:
        """Whether the keys may be fetched now: the last fetch neither failed nor was made for an unknown key,
        or it was ``auth_key_refetch_interval`` ago."""
        if not self._fetches:
            return False
        return not self._spent or time.monotonic() - self._last_attempt >= self._limits.auth_key_refetch_interval

    def _stale(self) -> bool:
        max_age = self._limits.auth_keys_max_age
        return max_age is not None and self._fetched_at is not None and time.monotonic() - self._fetched_at > max_age

    async def _key(self, kid: str | None, alg: str) -> _Key:
        if self._stale() and self._may_fetch():
            await self._refresh(spend=False)  # a failure keeps the keys in use (and what they verified)
        key = self._find(kid, alg)
        for _ in range(3):  # a fetch cancelled under a waiter lets it try again, a few times
            if key is not None:
                return key
            if self._inflight is None and not self._may_fetch():
                break
            finished = self._finished
            # The first fetch is not a refetch: a key rotated in just after it is still fetched.
            await self._refresh(spend=self._fetched_at is not None)
            key = self._find(kid, alg)
            if self._finished != finished:
                break  # a fetch ended (ours or another's): the keys it found are the answer
        if key is not None:
            return key
        if self._last_failed:
            raise TokenRefused("unavailable", "the authorization server's keys could not be fetched")
        if kid is None:
            raise TokenRefused("unknown_key", "the token names no key (kid) and no single key fits it")
        raise TokenRefused("unknown_key", "the token is signed with a key the issuer does not publish")

    async def _refresh(self, *, spend: bool) -> None:
        """Fetch the keys, or wait for the fetch under way (one at a time, whoever asks). ``spend``: the
        fetch is for a key not known (the next one waits ``auth_key_refetch_interval``; a failed one too)."""
        inflight = self._inflight
        if inflight is not None:
            await inflight.wait()
            return
        done = self._inflight = anyio.Event()
        before = self._last_attempt, self._spent
        self._last_attempt, self._spent = time.monotonic(), True
        try:
            self._keys = _read_keys(await self._fetch_key_set(), self.algorithms, self._limits.max_auth_keys)
            self._forget_withdrawn()
            self._fetched_at = time.monotonic()
            self._last_failed, self._spent = False, spend
        except FetchFailed as error:
            self._last_failed = True
            logger.warning("the keys of %s could not be fetched: %s", self.issuer, error)
        except BaseException:
            self._last_attempt, self._spent = before  # cancelled: as if not tried
            raise
        finally:
            self._inflight = None
            done.set()
        self._finished += 1

    def _forget_withdrawn(self) -> None:
        """Drop the tokens remembered as verified under a key the key set just fetched no longer holds."""
        kept = self._keys.fingerprints
        withdrawn = [d for d, v in self._verified.items() if v.fingerprint is not None and v.fingerprint not in kept]
        for digest in withdrawn:
            del self._verified[digest]

    async def _fetch_key_set(self) -> dict[str, Any]:
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover()
        return await self._fetcher.json("GET", self._jwks_uri)

    async def _discover(self) -> str:
        """The issuer's ``jwks_uri``, from the first of its metadata documents that names it as issuer."""
        failures = []
        for url in metadata_urls(self.issuer):
            try:
                document = await self._fetcher.json("GET", url)
            except FetchFailed as error:
                failures.append(str(error))
                continue
            if document.get("issuer") != self.issuer:
                logger.warning(
                    "the metadata at %s names issuer %r, not %r: not used (RFC 8414 §3.3)",
                    url, document.get("issuer"), self.issuer,
                )
                failures.append(f"{url}: another issuer")
                continue
            jwks_uri = document.get("jwks_uri")
            if isinstance(jwks_uri, str) and jwks_uri:
                return jwks_uri
            failures.append(f"{url}: no jwks_uri")
        raise FetchFailed("no usable metadata: " + "; ".join(failures))

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (one given to it is left open)."""
        await self._fetcher.aclose()
