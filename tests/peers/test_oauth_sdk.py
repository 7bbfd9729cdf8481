"""The official Python SDK's OAuth client against our HTTP server protected by a real NanoIDP (issue 29), headless.

The SDK's ``OAuthClientProvider`` does the whole dance from our ``401``: it reads the RFC 9728 metadata the
challenge points to, checks its ``resource`` against the URL it connects to, discovers NanoIDP's metadata,
registers itself dynamically, and sends the person to the authorization URL with PKCE and ``resource``.
The person is headless here: the redirect handler follows that URL with httpx, adding
``login_hint=persona-auto-login:alice`` (NanoIDP then redirects at once), and hands the code and state to
the callback handler. The token it gets names our resource; the tool it calls sees alice in ``ctx.auth``.
Our ``401`` names every scope the server supports (no ``required_scopes``): the SDK registers the client
for the scopes of that first challenge, and NanoIDP (RFC 7591 lets it) refuses a later authorization for
more (``invalid_scope``), so a step-up on our ``403`` would need a client registered for more; the SDK
does not register again. That is between the SDK and the authorization server, not our server's answer.

The same client then books a table on the booking example (``examples/booking.py --auth-issuer``, as its
command line starts it): the date is full, the tool asks the person (a form), the SDK's elicitation
callback takes the proposed date, and the booking is alice's.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import anyio
import pytest

from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, WRITE, Deployment, build
from tests.helpers.booking_auth import booking_behind
from tests.helpers.http import httpx
from tests.helpers.nanoidp import NanoIDP, free_port

mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the official MCP SDK's HTTP client (httpx2) is not installed")
sdk_auth = pytest.importorskip("mcp.client.auth")
sdk_shared = pytest.importorskip("mcp.shared.auth")
sdk_http = pytest.importorskip("mcp.client.streamable_http")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class HeadlessPerson:
    """The SDK's redirect and callback handlers: ``user`` signs in at NanoIDP by persona auto-login."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.authorization_urls: list[str] = []
        self.answers: list[dict[str, str]] = []

    async def redirect(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        hint = urllib.parse.urlencode({"login_hint": f"persona-auto-login:{self.user}"})
        async with httpx.AsyncClient(timeout=10) as browser:
            answer = await browser.get(f"{authorization_url}&{hint}")
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        back = urllib.parse.urlsplit(answer.headers["location"])
        self.answers.append(dict(urllib.parse.parse_qsl(back.query)))

    async def callback(self) -> Any:
        answer = self.answers[-1]
        assert "error" not in answer, answer
        return sdk_shared.AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


def provider(resource: str, person: HeadlessPerson, storage: Memory) -> Any:
    metadata = sdk_shared.OAuthClientMetadata(
        client_name="official SDK against minimcp",
        redirect_uris=[f"http://127.0.0.1:{free_port()}/callback"],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return sdk_auth.OAuthClientProvider(resource, metadata, storage, person.redirect, person.callback)


async def name_al(context: Any, params: Any) -> Any:
    """The SDK's elicitation callback: the name to book under."""
    return mcp.types.ElicitResult(action="accept", content={"name": "Al"})


def text(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_signs_alice_in_and_calls_a_tool_as_alice(nanoidp: NanoIDP, mode: str) -> None:
    site = Deployment(nanoidp)  # a port of its own: the SDK checks our metadata's resource against its URL
    server, ran = build()
    person, storage = HeadlessPerson("alice"), Memory()
    auth = site.authorization(site.verifier())
    with anyio.fail_after(TIMEOUT * 2):
        async with (
            site.serving(server, auth) as url,
            httpx2.AsyncClient(auth=provider(url, person, storage), timeout=20) as http,
            mcp.Client(
                sdk_http.streamable_http_client(url, http_client=http), mode=mode, elicitation_callback=name_al
            ) as client,
        ):
            me = json.loads(text(await client.call_tool("whoami", {})))
            assert (me["iss"], me["sub"]) == (nanoidp.issuer, "alice")
            assert {READ, WRITE} <= set(me["scopes"])
            assert me["client_id"] == storage.client_info.client_id  # registered dynamically at NanoIDP
            assert storage.client_info.client_id.startswith("dcr-")

            (first,) = person.authorization_urls
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(first).query))
            assert first.startswith(nanoidp.endpoint("authorization") + "?")
            assert query["resource"] == site.resource  # RFC 8707, from our metadata
            assert query["code_challenge_method"] == "S256"
            assert {READ, WRITE} <= set(query["scope"].split())  # from our 401's challenge

            assert text(await client.call_tool("book", {"room": "1"})) == "alice booked 1 for Al"
            assert len(person.authorization_urls) == 1  # one sign-in, one token for both calls
    assert ran.events == ["whoami", "book 1", "booked 1"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_signs_alice_in_and_books_a_table_on_the_booking_example(
    nanoidp: NanoIDP, mode: str
) -> None:
    person, storage = HeadlessPerson("alice"), Memory()
    asked: list[str] = []

    async def take_the_proposed_date(context: Any, params: Any) -> Any:
        asked.append(params.message)
        proposed = params.requested_schema["properties"]["date"]["default"]
        return mcp.types.ElicitResult(action="accept", content={"accept_alternative": True, "date": proposed})

    with anyio.fail_after(TIMEOUT * 2):
        async with booking_behind(nanoidp) as (app, url):
            async with (
                httpx2.AsyncClient(auth=provider(url, person, storage), timeout=20) as http,
                mcp.Client(
                    sdk_http.streamable_http_client(url, http_client=http),
                    mode=mode,
                    elicitation_callback=take_the_proposed_date,
                ) as client,
            ):
                tools = {tool.name for tool in (await client.list_tools()).tools}
                assert tools == {"book_table", "booking_status", "add_to_calendar"}  # not the provider's tool
                made = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                assert not made.is_error, made
                booked = made.structured_content
                assert booked is not None
                assert (booked["status"], booked["date"]) == ("booked", "2025-12-26")
                status = await client.call_tool("booking_status", {"booking_id": booked["booking_id"]})
                assert status.structured_content is not None and status.structured_content["status"] == "booked"
            (first,) = person.authorization_urls  # one sign-in for the whole booking
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(first).query))
            assert query["resource"] == url and query["code_challenge_method"] == "S256"
            # our 401's challenge (what a person needs); the SDK adds offline_access, which NanoIDP offers
            assert set(query["scope"].split()) - {"offline_access"} == {READ, WRITE}
            (question,) = asked
            assert question.startswith("2025-12-25 is fully booked")
            (stored,) = app.memory.bookings.values()
            assert stored.owner == (nanoidp.issuer, "alice")
            assert stored.booking_id == booked["booking_id"]
