"""Shared by the 2026-07-28 authorization tests: a verifier of fixed tokens, and an app whose modern leg checks them."""

from __future__ import annotations

from collections.abc import Mapping

from minimcp.auth.config import Authorization
from minimcp.auth.principal import Principal, TokenRefused
from minimcp.auth.resource import challenge
from minimcp.transports.http import StreamableHTTPApp
from minimcp.transports.http._asgi import Receive, Scope, Send, respond

ISSUER = "https://as.example"
RESOURCE = "https://mcp.example/mcp"
READ, WRITE = "bookings:read", "bookings:write"


def person(subject: str, *scopes: str) -> Principal:
    return Principal(issuer=ISSUER, subject=subject, scopes=frozenset(scopes), audience=(RESOURCE,))


#: Fixed tokens and whom they name: alice's refreshed token is another token of the same person (more scopes).
TOKENS: dict[str, Principal] = {
    "alice-1": person("alice", READ),
    "alice-2": person("alice", READ, WRITE),
    "bob-1": person("bob", READ, WRITE),
    "mallory-other-issuer": Principal(issuer="https://evil.example", subject="alice", audience=(RESOURCE,)),
}


class FixedTokens:
    """A :class:`~minimcp.auth.principal.Verifier` that knows the :data:`TOKENS` and nothing else."""

    def __init__(self, tokens: Mapping[str, Principal] = TOKENS) -> None:
        self.tokens = dict(tokens)

    async def verify(self, token: str) -> Principal:
        principal = self.tokens.get(token)
        if principal is None:
            raise TokenRefused("signature", "the token's signature does not verify")
        return principal


def authorization() -> Authorization:
    return Authorization(
        FixedTokens(), resource=RESOURCE, authorization_servers=[ISSUER], scopes_supported=[READ, WRITE]
    )


def bearer(token: str) -> str:
    return "Bearer " + token


def guard_modern_leg(app: StreamableHTTPApp, auth: Authorization) -> None:
    """Check every 2026-07-28 POST of ``app``'s modern leg against ``auth`` (401 when refused) and hand the
    leg the principal, as the app does once it takes ``auth=`` itself (the leg's own part -- 403 and the
    person per request -- is what is tested; this stands in for the app's 401 only)."""
    leg = app._stateless
    leg.auth = auth
    post = leg.post

    async def checked(
        headers: Mapping[str, str], receive: Receive, send: Send, scope: Scope, *, principal: Principal | None = None
    ) -> None:
        try:
            principal = await auth.authenticate(headers.get("authorization"))
        except TokenRefused as exc:
            await respond(send, 401, headers=[(b"www-authenticate", challenge(auth, exc).encode())])
            return
        await post(headers, receive, send, scope, principal=principal)

    leg.post = checked  # type: ignore[method-assign]
