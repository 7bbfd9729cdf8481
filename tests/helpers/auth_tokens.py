"""A test Verifier: fixed token strings mapped to Principals (the JWT verifier and NanoIDP stand in later)."""

from __future__ import annotations

from collections.abc import Mapping

from minimcp.auth.config import Authorization
from minimcp.auth.principal import Principal, TokenRefused

ISSUER = "https://as.example"
RESOURCE = "http://127.0.0.1/mcp"


def person(subject: str, *scopes: str, audience: str = RESOURCE, client_id: str = "app") -> Principal:
    """A principal of ``subject`` at :data:`ISSUER`, granted ``scopes``, for ``audience``."""
    return Principal(
        issuer=ISSUER,
        subject=subject,
        client_id=client_id,
        scopes=frozenset(scopes),
        audience=(audience,),
        expires_at=4_000_000_000.0,
        claims={"sub": subject, "scope": " ".join(scopes)},
    )


class FixedTokens:
    """Accepts exactly the tokens of ``tokens``; ``refusals`` maps other tokens to the refusal to raise.
    Anything else is refused as a bad signature. Records every token it was asked about."""

    def __init__(
        self, tokens: Mapping[str, Principal], refusals: Mapping[str, TokenRefused] | None = None
    ) -> None:
        self.tokens = dict(tokens)
        self.refusals = dict(refusals or {})
        self.asked: list[str] = []

    async def verify(self, token: str) -> Principal:
        self.asked.append(token)
        refused = self.refusals.get(token)
        if refused is not None:
            raise refused
        principal = self.tokens.get(token)
        if principal is None:
            raise TokenRefused("signature", "the token's signature does not verify")
        return principal


def authorization(verifier: FixedTokens, **options: object) -> Authorization:
    """An :class:`Authorization` for :data:`RESOURCE` trusting :data:`ISSUER`."""
    return Authorization(
        verifier,
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        **options,  # type: ignore[arg-type]
    )
