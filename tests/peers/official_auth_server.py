"""A peer server written with the official MCP Python SDK, protected by the SDK's own authorization, for interop tests.

``python tests/peers/official_auth_server.py PORT ISSUER`` serves Streamable HTTP on
``http://127.0.0.1:PORT/mcp`` as a resource server (the SDK's ``AuthSettings`` with
``resource_server_url``): the SDK serves the RFC 9728 metadata at
``/.well-known/oauth-protected-resource/mcp`` naming ``ISSUER`` as the authorization server, answers
``401`` with its challenge, and checks each bearer token with the :class:`JWTTokenVerifier` below (the
SDK's ``TokenVerifier`` protocol: the issuer's signature from its JWKS, ``iss``, ``aud`` = this
resource, ``exp``). It requires ``bookings:read``. Tool: ``whoami()``, the token's subject and scopes
as JSON.

Only the official SDK's API (and PyJWT for the signature) is used here; minimcp is not imported.
"""

from __future__ import annotations

import json
import sys
import urllib.request

import anyio.to_thread
import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

REQUIRED = ["bookings:read"]


class JWTTokenVerifier:
    """The SDK's ``TokenVerifier``: a JWT access token of ``issuer`` for ``resource``, checked with its JWKS."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.issuer = issuer
        self.resource = resource
        self._keys: jwt.PyJWKClient | None = None

    def _decode(self, token: str) -> dict[str, object]:
        if self._keys is None:
            with urllib.request.urlopen(f"{self.issuer}/.well-known/oauth-authorization-server", timeout=10) as answer:
                self._keys = jwt.PyJWKClient(json.load(answer)["jwks_uri"])
        key = self._keys.get_signing_key_from_jwt(token)
        claims: dict[str, object] = jwt.decode(
            token, key.key, algorithms=["RS256", "ES256"], audience=self.resource, issuer=self.issuer
        )
        return claims

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = await anyio.to_thread.run_sync(self._decode, token)
        except (jwt.PyJWTError, OSError, KeyError, ValueError):
            return None
        scope = claims.get("scope")
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or ""),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=exp if isinstance(exp, int) else None,
            resource=self.resource,  # jwt.decode checked aud
            subject=str(claims.get("sub")),
        )


def build(port: int, issuer: str) -> MCPServer:
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        name="official-auth-peer",
        version="0.0.1",
        token_verifier=JWTTokenVerifier(issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]  # pydantic parses the string
            resource_server_url=resource,  # type: ignore[arg-type]
            required_scopes=REQUIRED,
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The token's subject and scopes."""
        token = get_access_token()
        assert token is not None
        return json.dumps({"sub": token.subject, "scopes": sorted(token.scopes), "client_id": token.client_id})

    return server


if __name__ == "__main__":
    port = int(sys.argv[1])
    build(port, sys.argv[2]).run("streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
