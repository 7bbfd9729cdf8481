"""Our OAuth client books a table on the booking example (``examples/booking.py --auth-issuer``) behind NanoIDP.

``connect_http(url, auth=OAuthClient(...), era=...)`` on both protocol eras: the client asks for
``bookings:read`` only; the example's ``401`` makes it discover the example's metadata and NanoIDP's,
register, and sign alice in headlessly. A token about to expire is refreshed (no new sign-in). Booking
needs ``bookings:write``: the example's ``403 insufficient_scope`` makes the client sign in again for
both scopes, and the booking (a full date, the proposed one taken in a form) is alice's. The example lists only
the tools the token may use: ``book_table`` appears after the step-up.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from minimcp import Accepted, ElicitationRequest, connect_http
from minimcp.auth import MemoryTokenStore
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, TIMEOUT, WRITE, signing_in
from tests.helpers.booking_auth import booking_behind
from tests.helpers.nanoidp import NanoIDP

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_alice_books_with_a_read_token_refreshed_then_stepped_up_to_write(nanoidp: NanoIDP, era: str) -> None:
    store = MemoryTokenStore()
    oauth = signing_in("alice", store, [READ])
    browser = oauth.browser
    assert browser is not None
    asked: list[set[str]] = []  # the scopes of each sign-in

    async def headless(authorization_url: str) -> Mapping[str, str]:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)
        asked.append(set(query["scope"][0].split()) - {"offline_access"})
        return await browser(authorization_url)

    oauth.browser = headless
    questions: list[str] = []

    async def take_the_proposed_date(request: ElicitationRequest) -> Accepted[dict[str, Any]]:
        questions.append(request.message)
        return Accepted({"accept_alternative": True})

    with anyio.fail_after(TIMEOUT * 2):
        async with (
            booking_behind(nanoidp) as (app, url),
            connect_http(url, auth=oauth, era=era, elicitation_handler=take_the_proposed_date) as client,
        ):
            tools = {tool.name for tool in await client.list_tools()}  # needs bookings:read: the first sign-in
            assert tools == {"booking_status"}  # the example lists only what the token may use
            assert asked == [{READ}]
            first = await store.get_tokens(nanoidp.issuer, url)
            assert first is not None and first.refresh_token is not None
            read_token = first.access_token

            first.expires_at = time.time()  # about to expire: refreshed before the next request
            unknown = await client.call_tool("booking_status", {"booking_id": "no-such-booking"})
            assert unknown.is_error
            refreshed = await store.get_tokens(nanoidp.issuer, url)
            assert refreshed is not None and refreshed.access_token != read_token
            assert asked == [{READ}]  # refreshed, not signed in again

            made = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})  # 403, step-up
            assert not made.is_error, made
            booked = made.structured_content
            assert booked is not None and (booked["status"], booked["date"]) == ("booked", "2025-12-26")
            assert asked == [{READ}, {READ, WRITE}]  # the union of what was asked and what the 403 named
            status = await client.call_tool("booking_status", {"booking_id": booked["booking_id"]})
            assert status.structured_content is not None and status.structured_content["status"] == "booked"
            assert {"book_table", "booking_status"} <= {tool.name for tool in await client.list_tools()}
    assert len(questions) == 1 and questions[0].startswith("2025-12-25 is fully booked")
    (stored,) = app.memory.bookings.values()
    assert stored.owner == (nanoidp.issuer, "alice") and stored.booking_id == booked["booking_id"]
    stepped = await store.get_tokens(nanoidp.issuer, url)
    assert stepped is not None and stepped.scope is not None and {READ, WRITE} <= set(stepped.scope.split())
