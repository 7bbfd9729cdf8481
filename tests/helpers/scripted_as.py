"""A protected MCP endpoint, its authorization server and an identity provider, scripted (httpx.MockTransport).

For the grants no real server here offers (``private_key_jwt``, jwt-bearer, token exchange) and for DPoP:
the token endpoint's answer is the test's (``token``), the MCP endpoint accepts the tokens issued, presented
with their scheme (``Bearer`` or ``DPoP``), and everything asked is recorded.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import httpx

MCP = "http://mcp.test/mcp"
ISSUER = "http://as.test"
IDP = "http://idp.test"

#: The token endpoint's behaviour: the form and the request → the answer (``None``: issue a Bearer token).
TokenHandler = Callable[[dict[str, str], httpx.Request], "httpx.Response | None"]


def form_of(request: httpx.Request) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(request.content.decode()))


class Scripted:
    """The three servers; ``token`` (and ``idp_token``) script the token endpoints; ``mcp`` may check a request."""

    def __init__(self, *, scope: str | None = None, **metadata: Any) -> None:
        self.metadata: dict[str, Any] = {
            "issuer": ISSUER,
            "token_endpoint": f"{ISSUER}/token",
            "grant_types_supported": ["client_credentials"],
        }
        self.metadata.update(metadata)
        self.metadata = {k: v for k, v in self.metadata.items() if v is not None}
        self.scope = scope
        self.valid: dict[str, str] = {}  # access token -> its scheme
        self.token_requests: list[tuple[dict[str, str], httpx.Request]] = []
        self.idp_requests: list[tuple[dict[str, str], httpx.Request]] = []
        self.mcp_requests: list[httpx.Request] = []  # copies: a retried request is the same object, re-headed
        self.token: TokenHandler = lambda form, request: None
        self.idp_token: TokenHandler = lambda form, request: None
        self.mcp: Callable[[httpx.Request], httpx.Response | None] = lambda request: None

    def issue(self, scheme: str = "Bearer", **extra: Any) -> httpx.Response:
        access = f"access-{len(self.valid) + 1}-secret"
        self.valid[access] = scheme
        return httpx.Response(200, json={"access_token": access, "token_type": scheme, "expires_in": 3600, **extra})

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.host == "mcp.test":
            if url.path == "/.well-known/oauth-protected-resource/mcp":
                return httpx.Response(200, json={"resource": MCP, "authorization_servers": [ISSUER]})
            self.mcp_requests.append(httpx.Request(request.method, request.url, headers=request.headers.copy()))
            scheme, _, token = request.headers.get("authorization", "").partition(" ")
            if self.valid.get(token) != scheme:
                challenge = f'Bearer scope="{self.scope}"' if self.scope else "Bearer"
                return httpx.Response(401, headers={"www-authenticate": challenge})
            return self.mcp(request) or httpx.Response(200, json={"ok": True})
        if url.host == "as.test" and url.path == "/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.metadata)
        if url.host == "as.test" and url.path == "/token":
            form = form_of(request)
            self.token_requests.append((form, request))
            return self.token(form, request) or self.issue()
        if url.host == "idp.test" and url.path == "/token":
            form = form_of(request)
            self.idp_requests.append((form, request))
            return self.idp_token(form, request) or httpx.Response(
                200,
                json={
                    "access_token": "the-id-jag",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "token_type": "N_A",
                },
            )
        return httpx.Response(404)

    def http(self) -> httpx.AsyncClient:
        """A client for the authorization servers (give it to the OAuth client as ``http=``)."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))

    def client(self, auth: httpx.Auth) -> httpx.AsyncClient:
        """A client for the MCP endpoint, signing in with ``auth``."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle), auth=auth)
