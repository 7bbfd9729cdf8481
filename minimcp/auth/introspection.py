"""IntrospectionVerifier: opaque access tokens checked by asking their authorization server (RFC 7662).

Each token not seen lately is POSTed to the introspection endpoint (form ``token=…``, the resource
server's client credentials as HTTP basic); the outcome is remembered under a SHA-256 hash of the
token (never the token) until ``min(exp, Limits.introspection_cache_ttl)``, at most
``Limits.max_introspection_cache`` outcomes (least recently used forgotten first). An endpoint that
cannot be asked makes tokens not remembered refused ``unavailable`` (never accepted; not remembered).
Needs the ``auth`` extra (httpx).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import time
import urllib.parse

import httpx

from minimcp.auth.claims import check_times, principal_from_claims
from minimcp.auth.fetch import Fetcher, FetchFailed
from minimcp.auth.principal import Principal, Refusal, TokenRefused
from minimcp.core.config import Limits

__all__ = ["IntrospectionVerifier"]

logger = logging.getLogger("minimcp.auth")

#: A remembered outcome: until when (wall clock), and the principal or the refusal (reason, description).
_Outcome = tuple[float, Principal | tuple[Refusal, str]]


class IntrospectionVerifier:
    """Checks access tokens by introspection at their authorization server (RFC 7662).

    Args:
        endpoint: The introspection endpoint (``introspection_endpoint`` of the server's metadata).
        client_id: This resource server's client id at the authorization server.
        client_secret: Its secret (sent as HTTP basic authentication).
        issuer: The authorization server's issuer: the principal's ``issuer``, and, when the answer
            names one (``iss``), it must be this. ``None``: the answer's ``iss``, else the endpoint's
            origin (``https://as.example.com``).
        leeway: Seconds of clock difference allowed on the answer's ``exp`` and ``nbf``.
        http_client: The client to ask with (yours, never closed here); ``None``: one made on first
            use, closed by :meth:`aclose`.
        limits: Its bounds: ``max_token_bytes``, ``max_introspection_cache``,
            ``introspection_cache_ttl``, ``auth_fetch_timeout``, ``max_auth_response_bytes``.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        leeway: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        limits: Limits | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the introspection endpoint must be an absolute http(s) URL, not {endpoint!r}")
        self.endpoint = endpoint
        self.issuer = issuer
        self.leeway = leeway
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._credentials = (client_id, client_secret)
        self._limits = limits or Limits()
        self._fetcher = Fetcher(self._limits, http_client)
        self._cache: collections.OrderedDict[bytes, _Outcome] = collections.OrderedDict()

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` speaks for.

        Raises:
            TokenRefused: ``too_large``, ``inactive``, ``issuer``, ``expired``, ``not_yet_valid``,
                ``malformed`` (an answer with claims of the wrong type), or ``unavailable``.
        """
        if len(token) > self._limits.max_token_bytes:
            raise TokenRefused("too_large", "the token is too large")
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        outcome = self._remembered(digest, now)
        if outcome is None:
            try:
                answer = await self._fetcher.json(
                    "POST", self.endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=self._credentials,
                )
            except FetchFailed as error:
                logger.warning("token introspection failed: %s", error)
                raise TokenRefused("unavailable", "the authorization server could not be asked") from None
            now = time.time()
            outcome = self._read(answer, now)
            self._remember(digest, outcome)
        result = outcome[1]
        if isinstance(result, Principal):
            return result
        raise TokenRefused(*result)

    def _remembered(self, digest: bytes, now: float) -> _Outcome | None:
        outcome = self._cache.get(digest)
        if outcome is None:
            return None
        if outcome[0] <= now:
            del self._cache[digest]
            return None
        self._cache.move_to_end(digest)
        return outcome

    def _remember(self, digest: bytes, outcome: _Outcome) -> None:
        limit = self._limits.max_introspection_cache
        self._cache[digest] = outcome
        self._cache.move_to_end(digest)
        while len(self._cache) > limit:
            self._cache.popitem(last=False)

    def _read(self, answer: dict[str, object], now: float) -> _Outcome:
        """What an introspection answer means, and until when it may be reused."""
        until = now + self._limits.introspection_cache_ttl
        try:
            if answer.get("active") is not True:
                raise TokenRefused("inactive", "the token is not active")
            named = answer.get("iss")
            if named is not None and (not isinstance(named, str) or (self.issuer is not None and named != self.issuer)):
                raise TokenRefused("issuer", "the token was issued by another authorization server")
            check_times(answer, now, self.leeway)
            principal = principal_from_claims(answer, self.issuer or named or self._origin)
        except TokenRefused as refused:
            return (until, (refused.reason, refused.description))
        if principal.expires_at is not None:
            until = min(until, principal.expires_at)
        return (until, principal)

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (one given to it is left open)."""
        await self._fetcher.aclose()
