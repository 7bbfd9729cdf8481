"""The machine clients: client credentials against NanoIDP and our server; private_key_jwt, workload identity
(jwt-bearer) and enterprise-managed authorization (token exchange, ID-JAG) against a scripted token endpoint.

A refused grant is raised once, with the server's error, and never retried nor swapped for another grant.
"""

from __future__ import annotations

import base64
import json

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from minimcp import connect_http
from minimcp.auth import (
    AuthorizationFailed,
    ClientCredentialsAuth,
    EnterpriseAuth,
    JWTBearerAuth,
    MemoryTokenStore,
)
from minimcp.auth.machine import client_assertion
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, Deployment, build
from tests.helpers.nanoidp import NanoIDP
from tests.helpers.scripted_as import IDP, ISSUER, MCP, Scripted

nanoidp = idp.nanoidp  # the fixture: one NanoIDP for this module

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@pytest.fixture(scope="module")
def site(nanoidp: NanoIDP) -> Deployment:
    return Deployment(nanoidp)


# --- client credentials at a real authorization server -------------------------------------------


async def test_client_credentials_at_nanoidp_call_our_server_as_the_client(site: Deployment, nanoidp: NanoIDP) -> None:
    registered = nanoidp.register_client(confidential=True, scopes=[READ])
    assert registered.client_secret is not None
    server, ran = build()
    store = MemoryTokenStore()
    auth = ClientCredentialsAuth(registered.client_id, registered.client_secret, scopes=[READ], store=store)
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, site.authorization(site.verifier())) as url,
            connect_http(url, auth=auth) as client,
        ):
            me = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            await client.call_tool("whoami", {})
    assert me["sub"] == registered.client_id and me["iss"] == nanoidp.issuer and me["scopes"] == [READ]
    assert ran.events == ["whoami", "whoami"]
    kept = await store.get_tokens(nanoidp.issuer, url)
    assert kept is not None and kept.refresh_token is None  # RFC 6749 §4.4.3: none for this grant
    assert nanoidp.introspect(kept.access_token)["aud"] in (url, [url])  # asked with resource (RFC 8707)


async def test_a_wrong_client_secret_is_refused_once_with_the_servers_error(site: Deployment, nanoidp: NanoIDP) -> None:
    registered = nanoidp.register_client(confidential=True, scopes=[READ])
    server, _ = build()
    auth = ClientCredentialsAuth(registered.client_id, "not-the-secret", scopes=[READ])
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, site.authorization(site.verifier())) as url,
            httpx.AsyncClient(auth=auth) as http,
        ):
            with pytest.raises(AuthorizationFailed) as refused:
                await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.value.reason == "token" and refused.value.error == "invalid_client"


# --- private_key_jwt (scripted: NanoIDP does not offer it) ---------------------------------------


def es256_key() -> tuple[str, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode(), key.public_key()


async def test_private_key_jwt_signs_a_fresh_assertion_naming_the_client_for_the_issuer() -> None:
    pem, public = es256_key()
    world = Scripted(token_endpoint_auth_methods_supported=["private_key_jwt"])  # no PKCE listed: not needed here
    auth = ClientCredentialsAuth("robot", private_key=pem, http=world.http())
    async with world.client(auth) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    [(form, request)] = world.token_requests
    assert form["grant_type"] == "client_credentials" and form["resource"] == MCP and "scope" not in form
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert "authorization" not in request.headers and "client_secret" not in form
    claims = jwt.decode(form["client_assertion"], public, algorithms=["ES256"], audience=ISSUER)
    assert claims["iss"] == claims["sub"] == "robot" and 0 < claims["exp"] - claims["iat"] <= 60
    again = jwt.decode(client_assertion("robot", ISSUER, pem), public, algorithms=["ES256"], audience=ISSUER)
    assert again["jti"] != claims["jti"]


async def test_client_credentials_ask_for_the_challenges_scope_with_the_secret_in_basic() -> None:
    world = Scripted(scope="mcp:read mcp:write")
    auth = ClientCredentialsAuth("robot", "s3cret:/x", http=world.http())
    async with world.client(auth) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    [(form, request)] = world.token_requests  # the second request used the kept token
    assert form["scope"] == "mcp:read mcp:write" and "client_id" not in form
    scheme, _, pair = request.headers["authorization"].partition(" ")
    assert scheme == "Basic" and base64.b64decode(pair).decode() == "robot:s3cret%3A%2Fx"


async def test_a_token_about_to_expire_is_granted_anew_before_it_is_sent() -> None:
    world = Scripted()
    world.token = lambda form, request: world.issue(expires_in=5)  # within the 30 s refresh margin
    auth = ClientCredentialsAuth("robot", "s", http=world.http())
    async with world.client(auth) as http:
        for _ in range(3):
            assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert [form["grant_type"] for form, _ in world.token_requests] == ["client_credentials"] * 3
    sent = [r.headers.get("authorization", "") for r in world.mcp_requests]
    assert sent == ["", "Bearer access-1-secret", "Bearer access-2-secret", "Bearer access-3-secret"]  # one 401 only


def test_client_credentials_need_a_secret_or_a_key() -> None:
    with pytest.raises(ValueError, match="client_secret or a private_key"):
        ClientCredentialsAuth("robot")


# --- workload identity (jwt-bearer) ---------------------------------------------------------------


async def test_the_workload_jwt_is_the_grant_read_anew_for_each_sign_in() -> None:
    world = Scripted(grant_types_supported=[JWT_BEARER])
    handed: list[str] = []

    async def workload_token() -> str:
        handed.append(f"workload-jwt-{len(handed) + 1}")
        return handed[-1]

    auth = JWTBearerAuth(workload_token, http=world.http())
    async with world.client(auth) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
        world.valid.clear()  # the server forgets the token: the next 401 signs in again
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    forms = [form for form, _ in world.token_requests]
    assert [f["assertion"] for f in forms] == ["workload-jwt-1", "workload-jwt-2"]
    assert all(f["grant_type"] == JWT_BEARER and f["resource"] == MCP for f in forms)
    assert all("client_id" not in f for f in forms)  # anonymous: RFC 7523 §3.1 makes client authentication optional
    assert all("authorization" not in r.headers for _, r in world.token_requests)


@pytest.mark.parametrize("error", ["invalid_grant", "invalid_scope", "unauthorized_client"])
async def test_a_refused_workload_grant_is_raised_without_retry_or_another_grant(error: str) -> None:
    world = Scripted(grant_types_supported=[JWT_BEARER, "client_credentials", "authorization_code"])
    world.token = lambda form, request: httpx.Response(400, json={"error": error, "error_description": "no"})
    auth = JWTBearerAuth("expired-workload-jwt", client_id="workload", http=world.http())
    async with world.client(auth) as http:
        with pytest.raises(AuthorizationFailed) as refused:
            await http.post(MCP, content=b"{}")
    assert refused.value.reason == "token" and refused.value.error == error
    assert [form["grant_type"] for form, _ in world.token_requests] == [JWT_BEARER]
    assert world.token_requests[0][0]["client_id"] == "workload"
    assert len(world.mcp_requests) == 1


# --- enterprise-managed authorization (token exchange, then the ID-JAG as a jwt-bearer grant) ------


async def test_the_id_token_is_exchanged_at_the_idp_and_the_id_jag_granted_at_the_server() -> None:
    world = Scripted(grant_types_supported=[JWT_BEARER], scope="mcp:read")
    auth = EnterpriseAuth(
        f"{IDP}/token", "the-id-token", client_id="mcp-client", client_secret="mcp-secret",
        idp_client_id="idp-client", http=world.http(),
    )  # fmt: skip
    async with world.client(auth) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    [(exchange, idp_request)] = world.idp_requests
    assert exchange == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "subject_token": "the-id-token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": ISSUER,
        "resource": MCP,
        "scope": "mcp:read",
        "client_id": "idp-client",
    }
    assert "authorization" not in idp_request.headers
    [(grant, request)] = world.token_requests
    assert grant == {"grant_type": JWT_BEARER, "assertion": "the-id-jag", "resource": MCP, "scope": "mcp:read"}
    assert base64.b64decode(request.headers["authorization"].removeprefix("Basic ")) == b"mcp-client:mcp-secret"


async def test_an_idp_refusing_the_exchange_stops_before_the_authorization_server() -> None:
    world = Scripted(grant_types_supported=[JWT_BEARER])
    world.idp_token = lambda form, request: httpx.Response(400, json={"error": "invalid_grant"})
    auth = EnterpriseAuth(
        f"{IDP}/token", "stale-id-token", client_id="c", client_secret="s", idp_client_id="i",
        idp_client_secret="is", http=world.http(),
    )  # fmt: skip
    async with world.client(auth) as http:
        with pytest.raises(AuthorizationFailed) as refused:
            await http.post(MCP, content=b"{}")
    assert refused.value.error == "invalid_grant" and "identity provider" in refused.value.description
    assert world.token_requests == []
    [(exchange, idp_request)] = world.idp_requests
    assert "client_id" not in exchange and idp_request.headers["authorization"].startswith("Basic ")
