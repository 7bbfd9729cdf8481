"""Shared by the WebSocket authorization tests: a verifier that maps fixed token strings to principals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import anyio.lowlevel

from minimcp.auth.config import Authorization
from minimcp.auth.principal import Principal, TokenRefused

ISSUER = "https://issuer.test"
RESOURCE = "http://127.0.0.1/mcp"


def person(subject: str, scopes: Iterable[str] = (), audience: str = RESOURCE) -> Principal:
    """A principal of :data:`ISSUER` for :data:`RESOURCE` (or ``audience``)."""
    return Principal(issuer=ISSUER, subject=subject, scopes=frozenset(scopes), audience=(audience,))


#: The tokens :class:`FixedVerifier` knows by default.
TOKENS: dict[str, Principal] = {
    "alice-token": person("alice", ["bookings:read"]),
    "alice-token-2": person("alice", ["bookings:read"]),  # a refreshed token of the same person
    "bob-token": person("bob", ["bookings:read", "bookings:write"]),
    "elsewhere-token": person("carol", ["bookings:read"], audience="https://other.test/mcp"),
}


class FixedVerifier:
    """Accepts exactly the tokens of its table; ``"down"`` stands for an authorization server that is down."""

    def __init__(self, tokens: Mapping[str, Principal] = TOKENS) -> None:
        self.tokens = dict(tokens)
        self.seen: list[str] = []

    async def verify(self, token: str) -> Principal:
        await anyio.lowlevel.checkpoint()  # a real verifier awaits (keys, introspection)
        self.seen.append(token)
        if token == "down":
            raise TokenRefused("unavailable", "the authorization server cannot be reached")
        found = self.tokens.get(token)
        if found is None:
            raise TokenRefused("signature", "the token's signature does not verify")
        return found


def authorization(verifier: FixedVerifier | None = None, **options: Any) -> Authorization:
    """An :class:`Authorization` for :data:`RESOURCE` checked by ``verifier`` (a new :class:`FixedVerifier`)."""
    return Authorization(
        verifier or FixedVerifier(),
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        scopes_supported=["bookings:read", "bookings:write"],
        **options,
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def http_get(host: str, port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET (no upgrade): status, headers (lower-case names) and body, read to EOF."""
    async with await anyio.connect_tcp(host, port) as stream:
        await stream.send(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        data = b""
        with anyio.fail_after(5):
            while True:
                try:
                    data += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body
