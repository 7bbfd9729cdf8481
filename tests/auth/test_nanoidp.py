"""The real authorization server harness (tests/helpers/nanoidp.py) does what the authorization tests rely on."""

from __future__ import annotations

import urllib.parse

import jwt
import pytest

from tests.helpers import nanoidp as idp
from tests.helpers.nanoidp import NanoIDP, TokenError

nanoidp = idp.nanoidp  # the fixture: one server for this module

RESOURCE = "http://127.0.0.1:8000/mcp"
SCOPES = ["bookings:read", "bookings:write"]


def verified(server: NanoIDP, token: str, audience: str) -> dict[str, object]:
    """The claims of ``token``, its RS256 signature checked against the served JWKS."""
    key = jwt.PyJWKClient(server.jwks_uri).get_signing_key_from_jwt(token)
    claims: dict[str, object] = jwt.decode(
        token, key, algorithms=["RS256"], audience=audience, issuer=server.issuer, options={"require": ["exp"]}
    )
    return claims


def test_discovery_names_the_endpoints_the_flow_uses(nanoidp: NanoIDP) -> None:
    metadata = nanoidp.metadata
    assert metadata["issuer"] == nanoidp.issuer
    assert "S256" in metadata["code_challenge_methods_supported"]
    assert {"bookings:read", "bookings:write", "deposits:confirm", "mcp:read", "mcp:write"} <= set(
        metadata["scopes_supported"]
    )
    for name in ("authorization", "token", "registration", "introspection", "userinfo"):
        assert nanoidp.endpoint(name).startswith(nanoidp.issuer + "/")
    rfc8414 = nanoidp.http.get(nanoidp.oauth_metadata_url)
    assert rfc8414.status_code == 200
    assert rfc8414.json()["issuer"] == nanoidp.issuer


def test_alices_token_names_the_resource_the_issuer_alice_and_the_scopes(nanoidp: NanoIDP) -> None:
    tokens = nanoidp.token_for("alice", SCOPES, RESOURCE)
    claims = verified(nanoidp, tokens.access_token, RESOURCE)
    assert claims["aud"] == RESOURCE
    assert claims["iss"] == nanoidp.issuer
    assert claims["sub"] == "alice"
    assert str(claims["scope"]).split() == SCOPES
    assert claims["client_id"] == nanoidp.client.client_id
    assert jwt.get_unverified_header(tokens.access_token)["alg"] == "RS256"


def test_a_token_for_one_resource_is_refused_for_another(nanoidp: NanoIDP) -> None:
    tokens = nanoidp.token_for("alice", ["mcp:read"], RESOURCE)
    with pytest.raises(jwt.InvalidAudienceError):
        verified(nanoidp, tokens.access_token, "http://127.0.0.1:8001/mcp")


def test_a_tampered_token_fails_the_signature_check(nanoidp: NanoIDP) -> None:
    header, payload, signature = nanoidp.token_for("alice", ["mcp:read"], RESOURCE).access_token.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    with pytest.raises(jwt.InvalidSignatureError):
        verified(nanoidp, f"{header}.{payload}.{flipped}", RESOURCE)


def test_an_invalid_resource_is_refused_as_invalid_target(nanoidp: NanoIDP) -> None:
    with pytest.raises(TokenError) as refused:
        nanoidp.token_for("alice", SCOPES, "http://127.0.0.1:8000/mcp#fragment")  # RFC 8707: no fragment
    assert refused.value.error == "invalid_target"


def test_the_token_request_cannot_widen_the_granted_resource(nanoidp: NanoIDP) -> None:
    verifier, challenge = idp.pkce_pair()
    code = nanoidp.authorize("alice", SCOPES, RESOURCE, code_challenge=challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": nanoidp.client.redirect_uri,
        "code_verifier": verifier,
        "client_id": nanoidp.client.client_id,
        "resource": "http://127.0.0.1:9999/other",
    }
    answer = nanoidp.http.post(nanoidp.endpoint("token"), data=form)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_target"


def test_pkce_is_required_and_the_verifier_must_match(nanoidp: NanoIDP) -> None:
    client = nanoidp.client
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "scope": "mcp:read",
        "state": "s",
        "login_hint": "persona-auto-login:alice",
    }
    answer = nanoidp.http.get(nanoidp.endpoint("authorization"), params=params)  # no code_challenge
    assert answer.status_code == 302
    assert "error=invalid_request" in answer.headers["location"]
    assert "code=" not in answer.headers["location"]

    verifier, challenge = idp.pkce_pair()
    code = nanoidp.authorize("alice", ["mcp:read"], RESOURCE, code_challenge=challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client.redirect_uri,
        "client_id": client.client_id,
        "resource": RESOURCE,
    }
    wrong = nanoidp.http.post(nanoidp.endpoint("token"), data={**form, "code_verifier": idp.pkce_pair()[0]})
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"
    right = nanoidp.http.post(nanoidp.endpoint("token"), data={**form, "code_verifier": verifier})
    assert right.status_code == 200, right.text
    assert "access_token" in right.json()


def test_refresh_rotates_the_refresh_token_and_keeps_the_person_and_audience(nanoidp: NanoIDP) -> None:
    first = nanoidp.token_for("alice", SCOPES, RESOURCE)
    assert first.refresh_token is not None
    second = nanoidp.refresh(first.refresh_token)
    assert second.refresh_token is not None
    assert second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    claims = verified(nanoidp, second.access_token, RESOURCE)
    assert (claims["sub"], claims["aud"]) == ("alice", RESOURCE)
    with pytest.raises(TokenError) as reused:
        nanoidp.refresh(first.refresh_token)  # rotated: the old one is revoked
    assert reused.value.error == "invalid_grant"


def test_introspection_answers_active_sub_aud_and_scope(nanoidp: NanoIDP) -> None:
    tokens = nanoidp.token_for("alice", SCOPES, RESOURCE)
    answer = nanoidp.introspect(tokens.access_token)
    assert answer["active"] is True
    assert (answer["sub"], answer["aud"], answer["iss"]) == ("alice", RESOURCE, nanoidp.issuer)
    assert answer["scope"].split() == SCOPES
    assert nanoidp.introspect("not-a-token") == {"active": False}


def test_bobs_token_names_bob(nanoidp: NanoIDP) -> None:
    alice = verified(nanoidp, nanoidp.token_for("alice", SCOPES, RESOURCE).access_token, RESOURCE)
    bob = verified(nanoidp, nanoidp.token_for("bob", SCOPES, RESOURCE).access_token, RESOURCE)
    assert bob["sub"] == "bob"
    assert bob["sub"] != alice["sub"]


def test_an_unknown_person_cannot_sign_in(nanoidp: NanoIDP) -> None:
    with pytest.raises(TokenError) as refused:
        nanoidp.token_for("mallory", SCOPES, RESOURCE)
    assert refused.value.error == "invalid_request"


def test_a_confidential_page_client_gets_an_id_token_and_userinfo(nanoidp: NanoIDP) -> None:
    page = nanoidp.register_client(confidential=True, name="deposit page")
    assert page.client_secret is not None
    tokens = nanoidp.token_for("bob", ["openid", "profile", "email"], None, client=page, extra={"nonce": "n-1"})
    assert tokens.id_token is not None
    identity = verified(nanoidp, tokens.id_token, page.client_id)
    assert (identity["sub"], identity["nonce"]) == ("bob", "n-1")
    userinfo = nanoidp.http.get(
        nanoidp.endpoint("userinfo"), headers={"Authorization": f"Bearer {tokens.access_token}"}
    )
    assert userinfo.status_code == 200
    assert userinfo.json()["sub"] == "bob"


def test_a_page_that_builds_its_own_request_signs_the_person_in_through_the_picker(nanoidp: NanoIDP) -> None:
    page = nanoidp.register_client(confidential=True, name="calendar page")
    assert page.client_secret is not None
    verifier, challenge = idp.pkce_pair()
    query = {
        "response_type": "code",
        "client_id": page.client_id,
        "redirect_uri": page.redirect_uri,
        "scope": "openid",
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    url = nanoidp.endpoint("authorization") + "?" + urllib.parse.urlencode(query)
    back = urllib.parse.urlsplit(nanoidp.sign_in_at(url, "bob"))
    answer = dict(urllib.parse.parse_qsl(back.query))
    assert answer["state"] == "st-1"
    form = {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": page.redirect_uri}
    tokens = nanoidp.http.post(
        nanoidp.endpoint("token"), data={**form, "code_verifier": verifier}, auth=(page.client_id, page.client_secret)
    )
    assert tokens.status_code == 200, tokens.text
    assert verified(nanoidp, tokens.json()["id_token"], page.client_id)["sub"] == "bob"
