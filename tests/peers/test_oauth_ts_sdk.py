"""The TypeScript SDK's client with its OAuth provider books a table on the booking example behind a real NanoIDP.

The example runs in this process as its command line starts it (``--transport http --auth-issuer``);
``tests/peers/npm/ts_oauth_booking.mjs`` runs on the pinned Node with the pinned SDK
(``StreamableHTTPClientTransport`` with an in-memory, headless ``OAuthClientProvider``). From our
``401`` the SDK reads the RFC 9728 metadata the challenge names, discovers NanoIDP, registers itself
dynamically, and sends the person to authorize with PKCE (S256), ``state``, ``resource`` and the
challenge's scopes; the provider signs alice in by persona auto-login and reads the code from the
redirect; ``transport.finishAuth(code)`` gets the token, and a new connection books: the date is full,
the tool asks the person (a form), the SDK's handler accepts the proposed date. The booking is alice's.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import anyio

from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, WRITE
from tests.helpers.booking_auth import booking_behind
from tests.helpers.nanoidp import NanoIDP
from tests.helpers.npm_peer import NPM_PEERS, sdk_node

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

SCRIPT = NPM_PEERS / "ts_oauth_booking.mjs"
WAIT = 120  # seconds: node starts slowly on a busy machine


async def run_script(url: str, user: str) -> dict[str, Any]:
    node = sdk_node()  # installs the pinned npm peers on first use
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([str(node), str(SCRIPT), url, user], cwd=str(NPM_PEERS), check=False)
    lines = done.stdout.decode().strip().splitlines()
    assert lines, done.stderr.decode()[-3000:]
    report: dict[str, Any] = json.loads(lines[-1])
    assert done.returncode == 0 and "error" not in report, (report, done.stderr.decode()[-3000:])
    return report


def query_of(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


async def test_the_typescript_client_signs_alice_in_and_books_a_table(nanoidp: NanoIDP) -> None:
    async with booking_behind(nanoidp) as (app, url):
        report = await run_script(url, "alice")
        origin = url.removesuffix("/mcp")
        metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
        requests = report["requests"]

        # the first MCP request has no token: our 401 names our metadata and the scopes a person needs
        first = requests[0]
        assert (first["method"], first["url"], first["status"], first["bearer"]) == ("POST", url, 401, False)
        assert first["challenge"] == f'Bearer resource_metadata="{metadata_url}", scope="{READ} {WRITE}"'
        # RFC 9728 metadata from that challenge, then the authorization server's, then registration (RFC 7591)
        asked = [(r["method"], r["url"], r["status"]) for r in requests[1:]]
        assert asked[0] == ("GET", metadata_url, 200)
        registration = nanoidp.endpoint("registration")
        registered = asked.index(("POST", registration, 201))
        assert any(u.startswith(nanoidp.issuer + "/.well-known/") and s == 200 for _, u, s in asked[:registered])
        assert requests[1 + registered]["json"]["token_endpoint_auth_method"] == "none"  # a public client: PKCE
        client_id = report["client"]["client_id"]
        assert client_id.startswith("dcr-")  # registered dynamically at NanoIDP

        # one authorization: PKCE S256, our resource (RFC 8707), the challenge's scopes, state
        (authorization,) = report["authorizations"]
        assert authorization.startswith(nanoidp.endpoint("authorization") + "?")
        query = query_of(authorization)
        assert query["resource"] == url and query["code_challenge_method"] == "S256"
        assert query["client_id"] == client_id and query["response_type"] == "code"
        assert set(query["scope"].split()) == {READ, WRITE}
        (back,) = report["redirects"]
        assert back["state"] == query["state"] and "code" in back
        # the token request: the code, its verifier, our resource
        (token,) = [r for r in requests if r["url"] == nanoidp.endpoint("token")]
        assert token["status"] == 200 and token["form"]["grant_type"] == "authorization_code"
        assert {"code", "code_verifier", "resource", "client_id"} <= set(token["form"])
        assert token["form"]["resource"] == url
        assert report["tokens"]["token_type"].lower() == "bearer"

        # after finishAuth, every MCP request carries the token and none is refused
        mcp_after = [r for r in requests if r["url"] == url][1:]
        assert mcp_after and all(r["bearer"] and r["status"] in (200, 202) for r in mcp_after), mcp_after
        assert report["tools"] == ["add_to_calendar", "book_table", "booking_status"]  # not the provider's tool

        # the booking: 2025-12-25 is full, the person is asked (a form) and takes the next free date
        (question,) = report["asked"]
        assert "2025-12-25 is fully booked" in question["message"]
        booked = report["booked"]
        assert not booked.get("isError"), booked
        assert booked["structuredContent"]["status"] == "booked"
        assert booked["structuredContent"]["date"] == "2025-12-26"
        status = report["status"]["structuredContent"]
        assert (status["status"], status["booking_id"]) == ("booked", booked["structuredContent"]["booking_id"])
        (stored,) = app.memory.bookings.values()
        assert stored.owner == (nanoidp.issuer, "alice")
