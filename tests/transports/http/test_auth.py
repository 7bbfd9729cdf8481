"""Streamable HTTP with authorization on (``StreamableHTTPApp(auth=...)``), over real HTTP on both backends.

A small test verifier maps fixed token strings to principals (tests/helpers/auth_tokens.py); the JWT
verifier and a real authorization server are exercised elsewhere. Covered: the RFC 9728 metadata at both
well-known paths, 401 challenges (missing, bad, wrong audience), 503 when the authorization server is
down, 400 for a token in the query string, 403 ``insufficient_scope`` naming every scope an operation needs
(and nothing ran), list hiding, sessions bound to their person (404 to anyone else, a refreshed token
keeps it), ``ctx.auth`` in a tool, refusal counters, no token in logs or traces, and revision 2026-07-28
POSTs authenticated the same way.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest

import minimcp
from minimcp import Server
from minimcp.auth.principal import TokenRefused
from minimcp.core.trace import WireTrace
from tests.helpers.auth_tokens import ISSUER, FixedTokens, authorization, person
from tests.helpers.http import JSON_SSE, Raw, dump, httpx, initialize_request, req, serving
from tests.helpers.http_modern import body as modern_body
from tests.helpers.http_modern import modern_headers

ALL_SCOPES = ("admin", "bookings:read", "bookings:write", "deposits:confirm")
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = "/.well-known/oauth-protected-resource"

ALICE = person("alice", "bookings:read")
#: Alice again, with a refreshed token that grants more.
ALICE_REFRESHED = person("alice", "bookings:read", "bookings:write", "deposits:confirm")
BOB = person("bob", *ALL_SCOPES)


def tokens() -> FixedTokens:
    return FixedTokens(
        {
            "alice-1": ALICE,
            "alice-2": ALICE_REFRESHED,
            "bob-1": BOB,
            "carol-elsewhere": person("carol", *ALL_SCOPES, audience="https://other.example/mcp"),
        },
        {
            "down": TokenRefused("unavailable", "the authorization server did not answer"),
            "old": TokenRefused("expired", "the token has expired"),
        },
    )


def build() -> tuple[Server, list[str]]:
    """A server with open and scoped tools, prompts and resources; ``ran`` lists the tools that ran."""
    server = Server("guarded")
    ran: list[str] = []

    @server.tool
    async def public() -> str:
        ran.append("public")
        return "open"

    @server.tool(scopes=["bookings:write", "deposits:confirm"])
    async def book(date: str) -> str:
        ran.append("book")
        return f"booked {date}"

    @server.tool
    async def whoami(ctx: minimcp.Context) -> str:
        who = ctx.auth
        assert who is not None
        return json.dumps({"key": list(who.key), "scopes": sorted(who.scopes)})

    @server.prompt(scopes=["admin"])
    async def audit() -> str:
        return "audit everything"

    @server.prompt()
    async def hello() -> str:
        return "hi"

    @server.resource("res://open")
    async def opened() -> str:
        return "open"

    @server.resource("res://secret", scopes=["admin"])
    async def secret() -> str:
        return "secret"

    @server.resource_template("res://{id}/private", scopes=["admin"])
    async def private(id: str) -> str:
        return f"private {id}"

    return server, ran


class Bearer(Raw):
    """A hand-driven session whose requests carry ``Authorization: Bearer <token>`` (when a token is set)."""

    def __init__(self, http: Any, url: str, token: str | None) -> None:
        super().__init__(http, url)
        self.token = token

    def headers(self, **extra: str) -> dict[str, str]:
        headers = super().headers(**extra)
        if self.token is not None:
            headers.setdefault("authorization", f"Bearer {self.token}")
        return headers


def client() -> Any:
    return httpx.AsyncClient(timeout=httpx.Timeout(10, read=None))


def challenge_of(response: Any) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", ...`` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer ")
    found: dict[str, str] = {}
    for part in value[len("Bearer ") :].split('", '):
        name, _, quoted = part.partition("=")
        found[name.strip()] = quoted.strip('"')
    return found


def call(id: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return req(id, "tools/call", {"name": name, "arguments": arguments or {}})


def text_of(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


# --- discovery ---------------------------------------------------------------------------------------


async def test_the_metadata_is_served_at_both_well_known_paths_without_a_token() -> None:
    server, _ = build()
    auth = authorization(tokens(), scopes_supported=ALL_SCOPES, resource_name="Guarded")
    async with serving(server, auth=auth) as (url, _app), client() as http:
        base = url.removesuffix("/mcp")
        for path in (PRM_PATH, PRM_ROOT):
            response = await http.get(base + path)
            assert response.status_code == 200, path
            assert response.headers["content-type"] == "application/json"
            assert response.json() == {
                "resource": "http://127.0.0.1/mcp",
                "authorization_servers": [ISSUER],
                "bearer_methods_supported": ["header"],
                "scopes_supported": list(ALL_SCOPES),
                "resource_name": "Guarded",
            }
        assert (await http.post(base + PRM_PATH, content=b"{}")).status_code == 405
        # the Host check applies to the metadata as to the endpoint
        assert (await http.get(base + PRM_PATH, headers={"host": "evil.example"})).status_code == 403
        assert (await http.get(base + "/.well-known/other")).status_code == 404


async def test_without_auth_there_is_no_metadata_route() -> None:
    server, _ = build()
    async with serving(server) as (url, _app), client() as http:
        assert (await http.get(url.removesuffix("/mcp") + PRM_PATH)).status_code == 404


# --- 401, 400, 503 -----------------------------------------------------------------------------------


async def test_a_request_without_a_token_gets_401_with_the_metadata_url_and_the_scopes() -> None:
    server, _ = build()
    auth = authorization(tokens(), scopes_supported=ALL_SCOPES)
    async with serving(server, auth=auth) as (url, _app), client() as http:
        raw = Bearer(http, url, None)
        response = await raw.post(initialize_request())
        assert response.status_code == 401
        assert challenge_of(response) == {
            "resource_metadata": "http://127.0.0.1/.well-known/oauth-protected-resource/mcp",
            "scope": " ".join(sorted(ALL_SCOPES)),
        }
        assert response.json()["error"]["code"] == -32600  # a JSON-RPC error body, as the app's other errors
        async with raw.get() as streamed:
            assert streamed.status_code == 401
        deleted = await http.delete(url, headers={"mcp-session-id": "x"})
        assert deleted.status_code == 401
        malformed = await raw.post(initialize_request(), authorization="Basic YWxpY2U6cHc=")
        assert malformed.status_code == 401
        assert challenge_of(malformed)["error"] == "invalid_token"


@pytest.mark.parametrize(
    ("token", "description"),
    [
        ("forged", "the token's signature does not verify"),
        ("carol-elsewhere", "the token was not issued for this resource"),
        ("old", "the token has expired"),
    ],
)
async def test_a_refused_token_gets_401_invalid_token_saying_why(token: str, description: str) -> None:
    server, ran = build()
    async with serving(server, auth=authorization(tokens())) as (url, _app), client() as http:
        response = await Bearer(http, url, token).post(initialize_request())
        assert response.status_code == 401
        found = challenge_of(response)
        assert found["error"] == "invalid_token"
        assert found["error_description"] == description
        assert token not in response.headers["www-authenticate"] and token.encode() not in response.content
        assert response.json()["error"]["message"] == description
        assert ran == []


async def test_an_authorization_server_that_cannot_be_asked_gets_503_never_an_acceptance() -> None:
    server, _ = build()
    async with serving(server, auth=authorization(tokens())) as (url, _app), client() as http:
        response = await Bearer(http, url, "down").post(initialize_request())
        assert response.status_code == 503
        assert "www-authenticate" not in response.headers
        assert "authorization server could not be reached" in response.json()["error"]["message"]


async def test_a_token_in_the_query_string_is_refused_400_unread() -> None:
    server, _ = build()
    verifier = tokens()
    async with serving(server, auth=authorization(verifier)) as (url, _app), client() as http:
        raw = Bearer(http, url + "?access_token=alice-1", "alice-1")  # even with a good header too
        response = await raw.post(initialize_request())
        assert response.status_code == 400
        found = challenge_of(response)
        assert found["error"] == "invalid_request"
        assert "Authorization header" in found["error_description"]
        encoded = await Bearer(http, url + "?x=1&access%5Ftoken=alice-1", None).post(initialize_request())
        assert encoded.status_code == 400
        assert verifier.asked == []  # the token in the URL was never checked, so never accepted
        fine = await Bearer(http, url + "?access_tokens=1&x=access_token", "alice-1").post(initialize_request())
        assert fine.status_code == 200


# --- sessions bound to their person ------------------------------------------------------------------


async def test_another_persons_token_on_a_session_gets_404_as_an_unknown_session_and_the_owner_goes_on() -> None:
    server, ran = build()
    async with serving(server, auth=authorization(tokens())) as (url, app), client() as http:
        alice = Bearer(http, url, "alice-1")
        await alice.initialize()
        bob = Bearer(http, url, "bob-1")
        bob.session_id, bob.version = alice.session_id, alice.version
        nobody = Bearer(http, url, "bob-1")
        nobody.session_id, nobody.version = "no-such-session", alice.version

        stolen, unknown = await bob.post(call(1, "public")), await nobody.post(call(1, "public"))
        assert stolen.status_code == unknown.status_code == 404
        assert stolen.content == unknown.content  # nothing tells the session exists
        async with bob.get() as streamed:
            assert streamed.status_code == 404
        assert (await http.delete(url, headers=bob.headers())).status_code == 404
        assert ran == [] and app.session_count == 1

        assert text_of(await alice.call(call(2, "public"))) == "open"
        assert ran == ["public"]


async def test_a_refreshed_token_of_the_same_person_keeps_the_session_and_ctx_auth_sees_it() -> None:
    server, ran = build()
    async with serving(server, auth=authorization(tokens())) as (url, _app), client() as http:
        alice = Bearer(http, url, "alice-1")
        await alice.initialize()
        before = json.loads(text_of(await alice.call(call(1, "whoami"))))
        assert before == {"key": [ISSUER, "alice"], "scopes": ["bookings:read"]}

        alice.token = "alice-2"  # other bytes, same (iss, sub)
        after = json.loads(text_of(await alice.call(call(2, "whoami"))))
        assert after == {"key": [ISSUER, "alice"], "scopes": ["bookings:read", "bookings:write", "deposits:confirm"]}
        assert text_of(await alice.call(call(3, "book", {"date": "2025-12-25"}))) == "booked 2025-12-25"
        assert ran == ["book"]


# --- scopes ------------------------------------------------------------------------------------------


async def test_a_call_without_the_tools_scopes_gets_403_naming_all_of_them_and_nothing_runs() -> None:
    server, ran = build()
    auth = authorization(tokens(), scopes_supported=ALL_SCOPES)
    async with serving(server, auth=auth) as (url, _app), client() as http:
        alice = Bearer(http, url, "alice-1")
        await alice.initialize()
        refused = await alice.post(call(7, "book", {"date": "2025-12-25"}))
        assert refused.status_code == 403
        found = challenge_of(refused)
        assert found["error"] == "insufficient_scope"
        assert found["scope"] == "bookings:write deposits:confirm"  # every scope the call needs, not only the missing
        assert found["resource_metadata"].endswith(PRM_PATH)
        assert refused.json()["id"] == 7
        assert ran == []

        for request in (
            req(8, "prompts/get", {"name": "audit"}),
            req(9, "resources/read", {"uri": "res://secret"}),
            req(10, "resources/read", {"uri": "res://42/private"}),  # through the template
        ):
            answer = await alice.post(request)
            assert answer.status_code == 403, request
            assert challenge_of(answer)["scope"] == "admin"

        # what needs no scope still works on the same session
        assert text_of(await alice.call(call(11, "public"))) == "open"
        opened = await alice.call(req(12, "resources/read", {"uri": "res://open"}))
        assert opened["result"]["contents"][0]["text"] == "open"
        unknown = await alice.call(call(13, "nope"))  # an unknown tool needs no scope: the handler refuses it
        assert unknown["error"]["code"] == -32602

        bob = Bearer(http, url, "bob-1")
        await bob.initialize()
        assert text_of(await bob.call(call(1, "book", {"date": "2025-12-26"}))) == "booked 2025-12-26"
        audit = await bob.call(req(2, "prompts/get", {"name": "audit"}))
        assert audit["result"]["messages"][0]["content"]["text"] == "audit everything"
        assert ran == ["public", "book"]


async def test_required_scopes_are_challenged_in_401_and_refused_with_403_on_any_request() -> None:
    server, _ = build()
    auth = authorization(tokens(), scopes_supported=ALL_SCOPES, required_scopes=["admin"])
    async with serving(server, auth=auth) as (url, _app), client() as http:
        missing = await Bearer(http, url, None).post(initialize_request())
        assert challenge_of(missing)["scope"] == "admin"
        lacking = await Bearer(http, url, "alice-1").post(initialize_request())
        assert lacking.status_code == 403
        assert challenge_of(lacking)["scope"] == "admin"
        bob = Bearer(http, url, "bob-1")
        await bob.initialize()
        assert text_of(await bob.call(call(1, "public"))) == "open"


async def test_challenge_scopes_are_what_a_401_asks_for_and_the_metadata_still_lists_every_scope() -> None:
    server, _ = build()
    person_scopes = ["bookings:read", "bookings:write"]
    auth = authorization(tokens(), scopes_supported=ALL_SCOPES, challenge_scopes=person_scopes)
    async with serving(server, auth=auth) as (url, _app), client() as http:
        missing = await Bearer(http, url, None).post(initialize_request())
        assert missing.status_code == 401 and challenge_of(missing)["scope"] == "bookings:read bookings:write"
        document = (await http.get(url.removesuffix("/mcp") + PRM_PATH)).json()
        assert document["scopes_supported"] == list(ALL_SCOPES)
    assert authorization(tokens(), scopes_supported=ALL_SCOPES).challenge_scopes == frozenset(ALL_SCOPES)  # default


@pytest.mark.parametrize("hide", [True, False])
async def test_lists_hide_what_the_callers_scopes_do_not_allow(hide: bool) -> None:
    server, _ = build()
    async with serving(server, auth=authorization(tokens(), hide_unpermitted=hide)) as (url, _app), client() as http:

        async def names(raw: Bearer, method: str, key: str, field: str) -> set[str]:
            answer = await raw.call(req(1, method))
            return {item[field] for item in answer["result"][key]}

        alice, bob = Bearer(http, url, "alice-1"), Bearer(http, url, "bob-1")
        await alice.initialize()
        await bob.initialize()
        everything = {
            "tools": {"public", "book", "whoami"},
            "prompts": {"audit", "hello"},
            "resources": {"res://open", "res://secret"},
            "templates": {"res://{id}/private"},
        }
        for raw in (alice, bob):
            seen = {
                "tools": await names(raw, "tools/list", "tools", "name"),
                "prompts": await names(raw, "prompts/list", "prompts", "name"),
                "resources": await names(raw, "resources/list", "resources", "uri"),
                "templates": await names(raw, "resources/templates/list", "resourceTemplates", "uriTemplate"),
            }
            if raw is bob or not hide:
                assert seen == everything
            else:
                assert seen == {
                    "tools": {"public", "whoami"},
                    "prompts": {"hello"},
                    "resources": {"res://open"},
                    "templates": set(),
                }
        alice.token = "alice-2"  # a refreshed token with more scopes shows more (no admin yet)
        assert await names(alice, "tools/list", "tools", "name") == everything["tools"]


async def test_without_a_principal_nothing_is_hidden_and_scopes_are_not_checked() -> None:
    server, ran = build()
    async with serving(server) as (url, _app), client() as http:
        raw = Raw(http, url)
        await raw.initialize()
        listed = await raw.call(req(1, "tools/list"))
        assert {t["name"] for t in listed["result"]["tools"]} == {"public", "book", "whoami"}
        assert text_of(await raw.call(call(2, "book", {"date": "d"}))) == "booked d"
        assert ran == ["book"]


# --- metrics, logs, traces ---------------------------------------------------------------------------


async def test_refusals_are_counted_by_reason_on_the_metrics_page() -> None:
    server, _ = build()
    auth = authorization(tokens())
    async with serving(server, auth=auth, metrics_path="/metrics") as (url, _app), client() as http:
        for token in (None, "forged", "forged", "carol-elsewhere", "down"):
            await Bearer(http, url, token).post(initialize_request())
        await Bearer(http, url + "?access_token=x", None).post(initialize_request())
        alice = Bearer(http, url, "alice-1")
        await alice.initialize()
        await alice.post(call(1, "book", {"date": "d"}))
        page = (await http.get(url.removesuffix("/mcp") + "/metrics")).text
    for line in (
        'minimcp_auth_refused_total{reason="missing"} 1',
        'minimcp_auth_refused_total{reason="signature"} 2',
        'minimcp_auth_refused_total{reason="audience"} 1',
        'minimcp_auth_refused_total{reason="unavailable"} 1',
        'minimcp_auth_refused_total{reason="query_token"} 1',
        "minimcp_auth_insufficient_scope_total 1",
    ):
        assert line in page.splitlines(), line


async def test_tokens_never_reach_the_logs_or_the_wire_trace(caplog: pytest.LogCaptureFixture) -> None:
    lines: list[str] = []
    server, _ = build()
    server.trace = WireTrace(lines.append)
    caplog.set_level(logging.DEBUG)
    async with serving(server, auth=authorization(tokens())) as (url, _app), client() as http:
        for token in ("forged", "down", "carol-elsewhere"):
            await Bearer(http, url, token).post(initialize_request())
        alice = Bearer(http, url, "alice-1")
        await alice.initialize()
        await alice.post(call(1, "book", {"date": "d"}))
        await alice.call(call(2, "whoami"))
        bob = Bearer(http, url, "bob-1")
        bob.session_id, bob.version = alice.session_id, alice.version
        await bob.post(call(3, "public"))
    assert lines  # the trace did record the session
    recorded = "\n".join(lines) + "\n".join(r.getMessage() for r in caplog.records)
    for token in ("forged", "down", "carol-elsewhere", "alice-1", "bob-1"):
        assert token not in recorded, token


# --- revision 2026-07-28 -----------------------------------------------------------------------------


async def test_a_2026_07_28_post_is_authenticated_the_same_way() -> None:
    server, ran = build()
    listing = dump(modern_body(1, "tools/list"))
    async with serving(server, auth=authorization(tokens())) as (url, _app), client() as http:
        missing = await http.post(url, content=listing, headers=modern_headers("tools/list"))
        assert missing.status_code == 401
        assert challenge_of(missing)["resource_metadata"].endswith(PRM_PATH)
        forged = await http.post(url, content=listing, headers=modern_headers("tools/list", authorization="Bearer x"))
        assert forged.status_code == 401 and challenge_of(forged)["error"] == "invalid_token"
        # a 2026-07-28 body without the version header (the app finds the era in the body) is checked too
        plain = {"accept": JSON_SSE, "content-type": "application/json"}
        assert (await http.post(url, content=listing, headers=plain)).status_code == 401
        calling = dump(modern_body(2, "tools/call", {"name": "public", "arguments": {}}))
        down = modern_headers("tools/call", "public", authorization="Bearer down")
        assert (await http.post(url, content=calling, headers=down)).status_code == 503
        assert ran == []

        bob = modern_headers("tools/list", authorization="Bearer bob-1")
        accepted = await http.post(url, content=listing, headers=bob)
        assert accepted.status_code == 200
        assert "public" in accepted.text


# --- auth=None costs nothing -------------------------------------------------------------------------


def test_an_app_without_auth_loads_nothing_of_authorization() -> None:
    code = (
        "import sys, minimcp\n"
        "from minimcp.transports.http import StreamableHTTPApp\n"
        "StreamableHTTPApp(minimcp.Server('x'))\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('minimcp.auth') or m.endswith('http._auth'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
