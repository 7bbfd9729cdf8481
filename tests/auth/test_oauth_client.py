"""The OAuth client's rules against a scripted server and authorization server (httpx.MockTransport, no sockets).

What the conformance suite does not check: PKCE refused when the metadata does not list it (and the opt-out),
``invalid_grant`` on refresh forgetting the tokens and signing in again, refresh before expiry, a kept token
adopted from the store, concurrent 401s signing in once; plus the sans-I/O discovery helpers and what
``import minimcp`` loads.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

import anyio
import httpx
import pytest

from minimcp.auth import AuthorizationFailed, MemoryTokenStore, OAuthClient, Tokens
from minimcp.auth.discovery import discovery_urls, parse_challenge, resource_matches, resource_metadata_urls

MCP = "http://mcp.test/mcp"
ISSUER = "http://as.test"


class World:
    """A protected MCP endpoint and its authorization server, scripted; records what was asked."""

    def __init__(self, **metadata: Any) -> None:
        self.metadata: dict[str, Any] = {
            "issuer": ISSUER,
            "authorization_endpoint": f"{ISSUER}/authorize",
            "token_endpoint": f"{ISSUER}/token",
            "registration_endpoint": f"{ISSUER}/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
        self.metadata.update(metadata)
        self.metadata = {k: v for k, v in self.metadata.items() if v is not None}
        self.valid: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.asked: list[str] = []  # "METHOD path"
        self.challenges: dict[str, str] = {}  # code -> PKCE challenge
        self.issued = 0
        self.expires_in = 3600

    def tokens(self) -> dict[str, Any]:
        self.issued += 1
        access, refresh = f"access-{self.issued}-secret", f"refresh-{self.issued}-secret"
        self.valid.add(access)
        self.refresh_tokens.add(refresh)
        return {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in, "refresh_token": refresh}

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        self.asked.append(f"{request.method} {url.path}")
        if url.host == "mcp.test":
            if url.path == "/.well-known/oauth-protected-resource/mcp":
                return httpx.Response(200, json={"resource": MCP, "authorization_servers": [ISSUER]})
            if url.path == "/mcp":
                token = request.headers.get("authorization", "").removeprefix("Bearer ")
                if token in self.valid:
                    return httpx.Response(200, json={"ok": True})
                return httpx.Response(401, headers={"www-authenticate": 'Bearer scope="mcp:read"'})
            return httpx.Response(404)
        if url.path == "/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.metadata)
        if url.path == "/register":
            return httpx.Response(201, json={"client_id": "client-1", "token_endpoint_auth_method": "none"})
        if url.path == "/token":
            form = dict(urllib.parse.parse_qsl(request.content.decode()))
            if form["grant_type"] == "refresh_token":
                if form["refresh_token"] not in self.refresh_tokens:
                    return httpx.Response(400, json={"error": "invalid_grant"})
                self.refresh_tokens.discard(form["refresh_token"])
                return httpx.Response(200, json=self.tokens())
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == self.challenges[form["code"]]
            assert form["resource"] == MCP
            return httpx.Response(200, json=self.tokens())
        return httpx.Response(404)

    async def browser(self, authorization_url: str) -> Mapping[str, str]:
        self.asked.append("GET /authorize")
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorization_url).query))
        assert query["code_challenge_method"] == "S256" and query["resource"] == MCP
        code = f"code-{len(self.challenges)}"
        self.challenges[code] = query["code_challenge"]
        return {"code": code, "state": query["state"], "iss": ISSUER}

    def client(self, oauth: OAuthClient) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle), auth=oauth)

    def oauth(self, **options: Any) -> OAuthClient:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self.handle))
        return OAuthClient(self.browser, http=http, **options)


async def test_a_401_signs_in_and_the_request_is_retried_with_the_token() -> None:
    world = World()
    oauth = world.oauth()
    async with world.client(oauth) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert world.asked.count("GET /authorize") == 1
    assert world.asked.count("POST /register") == 1


async def test_pkce_is_refused_when_the_metadata_does_not_list_it_before_anything_is_registered() -> None:
    world = World(code_challenge_methods_supported=None)
    async with world.client(world.oauth()) as http:
        with pytest.raises(AuthorizationFailed) as refused:
            await http.post(MCP, content=b"{}")
    assert refused.value.reason == "pkce"
    assert "POST /register" not in world.asked and "GET /authorize" not in world.asked
    # the explicit opt-out proceeds (S256 all the same)
    async with world.client(world.oauth(allow_unlisted_pkce=True)) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200


async def test_pkce_without_s256_is_refused_even_with_the_opt_out() -> None:
    world = World(code_challenge_methods_supported=["plain"])
    async with world.client(world.oauth(allow_unlisted_pkce=True)) as http:
        with pytest.raises(AuthorizationFailed, match="S256"):
            await http.post(MCP, content=b"{}")


async def test_a_token_about_to_expire_is_refreshed_before_use() -> None:
    world = World()
    world.expires_in = 10  # within the default refresh margin (30 s)
    oauth = world.oauth()
    async with world.client(oauth) as http:
        await http.post(MCP, content=b"{}")
        await http.post(MCP, content=b"{}")
    assert world.asked.count("GET /authorize") == 1
    assert world.asked.count("POST /token") == 2  # the code, then one refresh
    kept = await oauth.store.get_tokens(ISSUER, MCP)
    assert kept is not None and kept.access_token == "access-2-secret"


async def test_invalid_grant_forgets_the_tokens_and_signs_in_again() -> None:
    world = World()
    store = MemoryTokenStore()
    oauth = world.oauth(store=store)
    async with world.client(oauth) as http:
        await http.post(MCP, content=b"{}")
        world.valid.clear()  # the server no longer takes the token
        world.refresh_tokens.clear()  # nor the authorization server the refresh token
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert world.asked.count("GET /authorize") == 2
    kept = await store.get_tokens(ISSUER, MCP)
    assert kept is not None and kept.access_token == "access-2-secret"


async def test_a_401_with_a_refresh_token_refreshes_without_the_browser() -> None:
    world = World()
    async with world.client(world.oauth()) as http:
        await http.post(MCP, content=b"{}")
        world.valid.clear()
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert world.asked.count("GET /authorize") == 1


async def test_tokens_kept_in_the_store_are_used_without_signing_in() -> None:
    world = World()
    store = MemoryTokenStore()
    world.valid.add("kept-secret")
    await store.set_tokens(ISSUER, MCP, Tokens("kept-secret", expires_at=time.time() + 3600))
    async with world.client(world.oauth(store=store)) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert "GET /authorize" not in world.asked


async def test_concurrent_401s_sign_in_once() -> None:
    world = World()
    async with world.client(world.oauth()) as http:

        async def call() -> None:
            assert (await http.post(MCP, content=b"{}")).status_code == 200

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(call)
    assert world.asked.count("GET /authorize") == 1
    assert world.asked.count("POST /mcp") == 10  # each once without, once with the token


async def test_no_registration_possible_says_what_to_configure() -> None:
    world = World(registration_endpoint=None)
    async with world.client(world.oauth()) as http:
        with pytest.raises(AuthorizationFailed, match="client_id") as refused:
            await http.post(MCP, content=b"{}")
    assert refused.value.reason == "registration"


async def test_nothing_secret_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    caplog.set_level("DEBUG")
    oauth = world.oauth(client_id="pre", client_secret="client-secret-value")
    async with world.client(oauth) as http:
        await http.post(MCP, content=b"{}")
    assert "signed in at" in caplog.text
    for secret in ("access-1-secret", "refresh-1-secret", "client-secret-value", "code-0"):
        assert secret not in caplog.text
    kept = await oauth.store.get_tokens(ISSUER, MCP)
    client = await oauth.store.get_client(ISSUER)
    assert kept is not None and client is not None
    assert kept.access_token not in repr(kept) and "client-secret-value" not in repr(client)


def test_challenge_parameters_are_read() -> None:
    challenge = parse_challenge('Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/x"')
    assert (challenge.error, challenge.scopes, challenge.resource_metadata) == ("insufficient_scope", ["a", "b"], "http://h/x")
    assert parse_challenge(None).params == {} and parse_challenge("Basic realm=x").params == {}


def test_discovery_orders() -> None:
    assert resource_metadata_urls("http://h/mcp", parse_challenge('Bearer resource_metadata="http://h/custom"')) == [
        "http://h/custom", "http://h/.well-known/oauth-protected-resource/mcp", "http://h/.well-known/oauth-protected-resource",
    ]  # fmt: skip
    assert discovery_urls("https://a/t1") == [
        "https://a/.well-known/oauth-authorization-server/t1",
        "https://a/.well-known/openid-configuration/t1",
        "https://a/t1/.well-known/openid-configuration",
    ]


def test_a_resource_names_its_server_or_a_parent_of_it_on_the_same_origin() -> None:
    assert resource_matches("http://h/mcp", "http://h/mcp")
    assert resource_matches("http://H:80", "http://h/mcp")
    assert not resource_matches("https://evil.example.com/mcp", "http://h/mcp")
    assert not resource_matches("http://h/mcp2", "http://h/mcp")


def test_import_minimcp_loads_no_oauth_client() -> None:
    probe = (
        "import minimcp, minimcp.transports.http, minimcp.hosting.http, sys\n"
        "print(sorted(m for m in sys.modules if m.startswith('minimcp.auth')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
