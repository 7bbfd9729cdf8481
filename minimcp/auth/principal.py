"""Who a bearer token names (Principal), why one is refused (TokenRefused), and what checks one (Verifier)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from minimcp.wire.errors import MinimcpError

__all__ = ["Principal", "Refusal", "TokenRefused", "Verifier"]

#: Why a token is refused. Each but ``"unavailable"`` is a ``401 invalid_token`` (``"missing"``: a
#: ``401`` without an error code, as RFC 6750 §3.1 says of a request with no credentials);
#: ``"unavailable"``: the authorization server could not be asked (``503``; never an acceptance).
Refusal = Literal[
    "missing", "malformed", "signature", "unknown_key", "algorithm", "issuer", "audience", "expired",
    "not_yet_valid", "inactive", "too_large", "unavailable",
]


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """The person (or client) a verified access token speaks for: ``ctx.auth`` in a tool.

    Everything a server binds to a person (its sessions, sealed ``requestState``, URL elicitations)
    is keyed by :attr:`key`, never by the token's bytes: a refreshed token keeps them.
    """

    #: The authorization server that issued the token (``iss``), exactly as it says it.
    issuer: str
    #: The person (``sub``); ``None`` for a token of a client acting for itself.
    subject: str | None
    #: The OAuth client the token was issued to (``client_id`` / ``azp``), when the token says.
    client_id: str | None = None
    #: The scopes the token grants.
    scopes: frozenset[str] = frozenset()
    #: The audiences the token names (``aud``; RFC 8707 resource indicators).
    audience: tuple[str, ...] = ()
    #: When the token expires (seconds since the epoch), when it says.
    expires_at: float | None = None
    #: Every claim the token carries (JWT claims, or the introspection answer).
    claims: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        """``(iss, sub)``; ``(iss, "client:" + client_id)`` for a token without a subject."""
        if self.subject is not None:
            return (self.issuer, self.subject)
        return (self.issuer, f"client:{self.client_id or ''}")


class TokenRefused(MinimcpError):
    """A token was not accepted; :attr:`reason` says why in one word, :attr:`description` in a short
    sentence fit for ``error_description`` (it never quotes the token)."""

    def __init__(self, reason: Refusal, description: str) -> None:
        super().__init__(description)
        self.reason: Refusal = reason
        self.description = description


class Verifier(Protocol):
    """Checks one access token: a token in, a :class:`Principal` out, or :class:`TokenRefused`.

    A verifier checks what the token itself proves (signature or introspection, issuer, expiry);
    the audience is checked again by :class:`~minimcp.auth.config.Authorization`, whatever the
    verifier. It never blocks the event loop (key and introspection fetches are awaited).
    """

    async def verify(self, token: str) -> Principal: ...
