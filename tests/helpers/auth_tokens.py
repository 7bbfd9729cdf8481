"""The tests' one Verifier: fixed token strings mapped to Principals, and the Authorization that trusts it.

Used by every test of authorization on a transport (HTTP on both eras, WebSocket); the JWT verifier
and the introspection verifier are tested against real issuers in ``tests/auth/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio.lowlevel

from minimcp.auth.config import Authorization
from minimcp.auth.principal import Principal, TokenRefused

ISSUER = "https://as.example"
RESOURCE = "http://127.0.0.1/mcp"
READ, WRITE = "bookings:read", "bookings:write"


def person(
    subject: str, *scopes: str, audience: str = RESOURCE, issuer: str = ISSUER, client_id: str = "app"
) -> Principal:
    """A principal of ``subject`` at ``issuer`` (:data:`ISSUER`), granted ``scopes``, for ``audience``."""
    return Principal(
        issuer=issuer,
        subject=subject,
        client_id=client_id,
        scopes=frozenset(scopes),
        audience=(audience,),
        expires_at=4_000_000_000.0,
        claims={"sub": subject, "scope": " ".join(scopes)},
    )


#: The tokens :class:`FixedTokens` knows by default: ``alice-2`` is a refreshed token of the same person
#: (more scopes); ``carol-elsewhere`` names another resource; ``mallory-other-issuer`` names "alice" at
#: another issuer (so another person).
TOKENS: dict[str, Principal] = {
    "alice-1": person("alice", READ),
    "alice-2": person("alice", READ, WRITE),
    "bob-1": person("bob", READ, WRITE),
    "carol-elsewhere": person("carol", READ, audience="https://other.example/mcp"),
    "mallory-other-issuer": person("alice", issuer="https://evil.example"),
}

#: The tokens :class:`FixedTokens` refuses by default with a reason of their own (others: a bad signature).
REFUSALS: dict[str, TokenRefused] = {
    "down": TokenRefused("unavailable", "the authorization server did not answer"),
    "old": TokenRefused("expired", "the token has expired"),
}


class FixedTokens:
    """Accepts exactly the tokens of ``tokens``; ``refusals`` maps other tokens to the refusal to raise.
    Anything else is refused as a bad signature. Records every token it was asked about (:attr:`asked`)."""

    def __init__(
        self, tokens: Mapping[str, Principal] = TOKENS, refusals: Mapping[str, TokenRefused] = REFUSALS
    ) -> None:
        self.tokens = dict(tokens)
        self.refusals = dict(refusals)
        self.asked: list[str] = []

    async def verify(self, token: str) -> Principal:
        await anyio.lowlevel.checkpoint()  # a real verifier awaits (keys, introspection)
        self.asked.append(token)
        refused = self.refusals.get(token)
        if refused is not None:
            raise refused
        principal = self.tokens.get(token)
        if principal is None:
            raise TokenRefused("signature", "the token's signature does not verify")
        return principal


def authorization(verifier: FixedTokens | None = None, **options: Any) -> Authorization:
    """An :class:`Authorization` for :data:`RESOURCE` trusting :data:`ISSUER`, checked by ``verifier`` (a new
    :class:`FixedTokens`); ``scopes_supported`` is :data:`READ` and :data:`WRITE` unless given."""
    options.setdefault("scopes_supported", [READ, WRITE])
    return Authorization(
        verifier if verifier is not None else FixedTokens(),
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        **options,
    )


def bearer(token: str) -> dict[str, str]:
    """The ``Authorization`` header carrying ``token`` (``**bearer(t)`` for a keyword-header helper)."""
    return {"authorization": f"Bearer {token}"}
