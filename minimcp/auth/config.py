"""Authorization: the one object that turns authorization on for a server, and its checks of a request's token."""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection, Sequence

from minimcp.auth.principal import Principal, TokenRefused, Verifier

__all__ = ["Authorization", "canonical_resource"]

#: Bytes an ``Authorization`` header may carry at most by default (a JWT with many claims is ~2 KB).
DEFAULT_MAX_TOKEN_BYTES = 8192


def canonical_resource(url: str) -> str:
    """The canonical form of a resource URL (RFC 8707; MCP "canonical server URI"): scheme and host in
    lower case, default port dropped, no fragment, no trailing slash on a path (``"/"`` alone kept).

    Raises:
        ValueError: ``url`` is not an absolute ``http``/``https`` URL, or it has a fragment.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"a resource must be an absolute http(s) URL, not {url!r}")
    if parts.fragment:
        raise ValueError(f"a resource URL has no fragment (RFC 8707 §2): {url!r}")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != (443 if scheme == "https" else 80):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    return urllib.parse.urlunsplit((scheme, host, path, parts.query, ""))


def _audience_names(audience: Collection[str], resource: str) -> bool:
    for name in audience:
        try:
            if canonical_resource(name) == resource:
                return True
        except ValueError:
            continue
    return False


class Authorization:
    """Authorization for one MCP endpoint: every request must carry a bearer token for this resource.

    Give it to :class:`~minimcp.transports.http.StreamableHTTPApp` (``auth=``), ``serve_http`` /
    ``server.run("http")`` and the WebSocket server; without it nothing is checked. It checks the
    token's audience itself (the token must name :attr:`resource`), whatever the verifier did.

    Args:
        verifier: Checks a token (:class:`~minimcp.auth.jwt.JWTVerifier`,
            :class:`~minimcp.auth.introspection.IntrospectionVerifier`, or your own).
        resource: This server's resource URL, its MCP endpoint as clients reach it
            (``https://mcp.example.com/mcp``); tokens must name it in ``aud``.
        authorization_servers: Issuers whose tokens this server takes (RFC 9728
            ``authorization_servers``; at least one).
        scopes_supported: The scopes this server knows (published in its metadata).
        required_scopes: Scopes every request needs, whatever it asks for (challenged in ``401``s).
        challenge_scopes: The scopes a ``401`` asks a client to get (``scope=``; MCP clients ask for
            exactly these): default ``required_scopes``, else ``scopes_supported``. Give them when the
            supported scopes include some a person's client should not ask for (a provider's, say).
        resource_name: A name for people, published in the metadata.
        hide_unpermitted: ``tools/list`` (and the prompt and resource lists) leave out what the
            caller's scopes do not allow.
        max_token_bytes: Longest ``Authorization`` header taken (longer: refused unread).
    """

    def __init__(
        self,
        verifier: Verifier,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        scopes_supported: Sequence[str] = (),
        required_scopes: Sequence[str] = (),
        challenge_scopes: Sequence[str] = (),
        resource_name: str | None = None,
        hide_unpermitted: bool = True,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    ) -> None:
        if not authorization_servers:
            raise ValueError("authorization_servers must name at least one issuer (RFC 9728)")
        self.verifier = verifier
        self.resource = canonical_resource(resource)
        self.authorization_servers = tuple(authorization_servers)
        self.scopes_supported = tuple(scopes_supported)
        self.required_scopes = frozenset(required_scopes)
        self.challenge_scopes = frozenset(challenge_scopes or required_scopes or scopes_supported)
        self.resource_name = resource_name
        self.hide_unpermitted = hide_unpermitted
        self.max_token_bytes = max_token_bytes

    async def authenticate(self, header: str | None) -> Principal:
        """The principal of a request whose ``Authorization`` header is ``header``.

        Raises:
            TokenRefused: no bearer token, a token the verifier refuses, or one for another audience.
        """
        if header is None:
            raise TokenRefused("missing", "this resource needs a bearer token")
        if len(header) > self.max_token_bytes:
            raise TokenRefused("too_large", "the token is too large")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise TokenRefused("malformed", "the Authorization header is not 'Bearer <token>'")
        principal = await self.verifier.verify(token)
        if not _audience_names(principal.audience, self.resource):
            raise TokenRefused("audience", "the token was not issued for this resource")
        return principal
