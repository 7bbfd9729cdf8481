"""Where an OAuth client keeps its tokens and registrations: the store protocol and the in-memory store.

:class:`~minimcp.auth.oauth_client.OAuthClient` keeps what it obtained in a :class:`TokenStore`:
the tokens of one resource at one authorization server (keyed by both: tokens are only ever sent
to the server they were issued for, by the issuer that issued them), and the client registration
at each authorization server (keyed by its issuer: credentials are never reused with another one,
SEP-2352). The default, :class:`MemoryTokenStore`, forgets everything with the process; a terminal
keeps them on disk (a file per authorization server and resource, mode ``0600``) by implementing
the same five methods. Neither :class:`Tokens` nor :class:`ClientCredentials` shows a secret in
its ``repr``, so a stray log line or traceback does not either.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Protocol

__all__ = ["ClientCredentials", "MemoryTokenStore", "TokenStore", "Tokens"]


@dataclasses.dataclass
class Tokens:
    """What a token endpoint answered (``expires_at``: wall-clock seconds, ``None`` when it did not say)."""

    access_token: str = dataclasses.field(repr=False)
    token_type: str = "Bearer"
    refresh_token: str | None = dataclasses.field(default=None, repr=False)
    expires_at: float | None = None
    scope: str | None = None

    def expires_within(self, seconds: float) -> bool:
        """True when the access token expires in less than ``seconds`` (never, when its lifetime is unknown)."""
        return self.expires_at is not None and self.expires_at - time.time() < seconds


@dataclasses.dataclass
class ClientCredentials:
    """A client registration at one authorization server: pre-registered, a metadata document URL, or
    dynamic. ``token_endpoint_auth_method``: ``client_secret_basic``, ``client_secret_post`` or ``none``."""

    client_id: str
    client_secret: str | None = dataclasses.field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    redirect_uri: str | None = None


class TokenStore(Protocol):
    """Where an :class:`~minimcp.auth.oauth_client.OAuthClient` keeps tokens and registrations.

    ``issuer`` is the authorization server's ``issuer`` exactly as its metadata says it; ``resource``
    the MCP server's resource URL (the ``resource`` parameter the tokens were asked for).
    """

    async def get_tokens(self, issuer: str, resource: str) -> Tokens | None: ...

    async def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        """Keep ``tokens`` (``None``: forget them, as after an ``invalid_grant``)."""
        ...

    async def get_client(self, issuer: str) -> ClientCredentials | None: ...

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        """Keep the registration at ``issuer`` (``None``: forget it)."""
        ...


class MemoryTokenStore:
    """A :class:`TokenStore` in this process (the default): one entry per authorization server and resource
    the application talks to."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], Tokens] = {}
        self._clients: dict[str, ClientCredentials] = {}

    async def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        return self._tokens.get((issuer, resource))

    async def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        if tokens is None:
            self._tokens.pop((issuer, resource), None)
        else:
            self._tokens[(issuer, resource)] = tokens

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client
