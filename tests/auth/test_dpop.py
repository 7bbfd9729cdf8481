"""DPoP (RFC 9449) in the OAuth clients, against a scripted authorization server and MCP endpoint.

A proof per request (fresh ``jti``, ``htm``, ``htu`` without query, ``ath`` at the server, signed by the key in
its ``jwk``), the ``DPoP`` scheme for a bound token, the authorization server's and the server's nonces, and
none of it where the authorization server does not offer DPoP.
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.parse
from typing import Any

import httpx
import jwt
import pytest

from minimcp.auth import ClientCredentialsAuth, DPoP, OAuthClient
from minimcp.auth.discovery import parse_challenge
from tests.helpers.scripted_as import ISSUER, MCP, Scripted

AS_NONCE, RS_NONCE = "as-nonce-1", "rs-nonce-1"


def proof_claims(proof: str, method: str, url: str) -> dict[str, Any]:
    """The claims of a valid proof for ``method url`` (asserts its header, signature and binding)."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    key = jwt.PyJWK(header["jwk"], "ES256").key
    claims: dict[str, Any] = jwt.decode(proof, key, algorithms=["ES256"])
    parts = urllib.parse.urlsplit(url)
    assert claims["htm"] == method and claims["htu"] == f"{parts.scheme}://{parts.netloc}{parts.path}"
    assert isinstance(claims["jti"], str) and isinstance(claims["iat"], int)
    return claims


def b64_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def ath(token: str) -> str:
    return b64_sha256(token)


def thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638: the required members in lexicographic order, no whitespace, SHA-256."""
    return b64_sha256(json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":")))


class DPoPWorld(Scripted):
    """Token endpoint and MCP endpoint both requiring DPoP proofs, and (``nonces``) their nonces."""

    def __init__(self, *, nonces: bool, **metadata: Any) -> None:
        metadata.setdefault("dpop_signing_alg_values_supported", ["ES256"])
        super().__init__(**metadata)
        self.nonces = nonces
        self.jtis: list[str] = []
        self.bound: dict[str, str] = {}  # access token -> the thumbprint of the key it is bound to (cnf.jkt)
        self.token = self.token_with_proof
        self.mcp = self.mcp_with_proof

    def token_with_proof(self, form: dict[str, str], request: httpx.Request) -> httpx.Response:
        claims = proof_claims(request.headers["dpop"], "POST", f"{ISSUER}/token")
        self.jtis.append(claims["jti"])
        if self.nonces and claims.get("nonce") != AS_NONCE:
            return httpx.Response(400, headers={"dpop-nonce": AS_NONCE}, json={"error": "use_dpop_nonce"})
        answer = self.issue("DPoP")
        self.bound[answer.json()["access_token"]] = thumbprint(
            jwt.get_unverified_header(request.headers["dpop"])["jwk"]
        )
        return answer

    def mcp_with_proof(self, request: httpx.Request) -> httpx.Response | None:
        token = request.headers["authorization"].removeprefix("DPoP ")
        claims = proof_claims(request.headers["dpop"], request.method, str(request.url))
        assert claims["ath"] == ath(token)
        assert thumbprint(jwt.get_unverified_header(request.headers["dpop"])["jwk"]) == self.bound[token]
        self.jtis.append(claims["jti"])
        if self.nonces and claims.get("nonce") != RS_NONCE:
            challenge = 'DPoP error="use_dpop_nonce", error_description="a nonce, please"'
            return httpx.Response(401, headers={"www-authenticate": challenge, "dpop-nonce": RS_NONCE})
        return None


def code_flow(world: Scripted, **options: Any) -> OAuthClient:
    async def browser(url: str) -> dict[str, str]:
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        return {"code": "the-code", "state": query["state"]}

    return OAuthClient(browser, client_id="app", http=world.http(), **options)


def auth_code_metadata() -> dict[str, Any]:
    return {"authorization_endpoint": f"{ISSUER}/authorize", "code_challenge_methods_supported": ["S256"]}


@pytest.mark.parametrize("nonces", [False, True])
async def test_proofs_at_the_token_endpoint_and_the_server_with_the_dpop_scheme(nonces: bool) -> None:
    world = DPoPWorld(nonces=nonces, **auth_code_metadata())
    async with world.client(code_flow(world, dpop=True)) as http:
        assert (await http.post(f"{MCP}?x=1", content=b"{}")).status_code == 200
        assert (await http.get(MCP)).status_code == 200
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    token_attempts = [form["grant_type"] for form, _ in world.token_requests]
    assert token_attempts == ["authorization_code"] * (2 if nonces else 1)  # one retry with the AS's nonce
    bound = [r for r in world.mcp_requests if r.headers.get("authorization", "").startswith("DPoP ")]
    assert len(bound) == (4 if nonces else 3)  # one retry with the server's nonce, then it is kept
    assert not any(r.headers.get("authorization", "").startswith("Bearer") for r in world.mcp_requests)
    assert len(set(world.jtis)) == len(world.jtis)  # a fresh proof every time, retries included


async def test_the_servers_nonce_is_sent_from_then_on() -> None:
    world = DPoPWorld(nonces=True, **auth_code_metadata())
    async with world.client(code_flow(world, dpop=True)) as http:
        for _ in range(3):
            assert (await http.post(MCP, content=b"{}")).status_code == 200
    nonces = [
        jwt.decode(r.headers["dpop"], options={"verify_signature": False}).get("nonce") for r in world.mcp_requests[1:]
    ]
    assert nonces == [None, RS_NONCE, RS_NONCE, RS_NONCE]  # first unauthenticated request not counted


async def test_no_dpop_where_the_authorization_server_does_not_offer_it() -> None:
    world = Scripted(**auth_code_metadata())
    async with world.client(code_flow(world, dpop=True)) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    [(_, token_request)] = world.token_requests
    assert "dpop" not in token_request.headers
    assert world.mcp_requests[-1].headers["authorization"].startswith("Bearer ")
    assert "dpop" not in world.mcp_requests[-1].headers


async def test_without_dpop_asked_a_server_offering_it_gets_bearer() -> None:
    world = Scripted(dpop_signing_alg_values_supported=["ES256"], **auth_code_metadata())
    async with world.client(code_flow(world)) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    assert "dpop" not in world.token_requests[0][1].headers


async def test_a_machine_client_uses_the_applications_key() -> None:
    key = DPoP()
    world = DPoPWorld(nonces=True)
    async with world.client(ClientCredentialsAuth("robot", "s", dpop=key, http=world.http())) as http:
        assert (await http.post(MCP, content=b"{}")).status_code == 200
    proofs = [r.headers["dpop"] for _, r in world.token_requests] + [world.mcp_requests[-1].headers["dpop"]]
    assert {json.dumps(jwt.get_unverified_header(p)["jwk"], sort_keys=True) for p in proofs} == {
        json.dumps(key.jwk, sort_keys=True)
    }
    assert world.token_requests[-1][0]["grant_type"] == "client_credentials"


def test_the_thumbprint_is_rfc_7638s() -> None:
    key = DPoP()
    assert key.thumbprint == thumbprint(key.jwk) and len(key.thumbprint) == 43


def test_a_dpop_challenge_is_read_as_a_bearer_one_is() -> None:
    challenge = parse_challenge('DPoP error="use_dpop_nonce", resource_metadata="http://mcp.test/prm"')
    assert challenge.error == "use_dpop_nonce" and challenge.resource_metadata == "http://mcp.test/prm"
    assert parse_challenge('Basic realm="x"').params == {}
