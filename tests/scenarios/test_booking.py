"""The booking example over stdio with the minimcp client (its contract: docs/booking.md)."""

from __future__ import annotations

import base64
import contextlib
import re
import sys
from collections import deque
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Cancelled, Declined, ElicitationRequest, check_form, connect_stdio
from minimcp.forms import FormDefinitionError, compile_form
from tests.helpers import RawPeer, connected, raw_client
from tests.helpers.booking import (
    BOOKING,
    DEPOSIT_ARGS,
    KEY,
    ROOT,
    URL_SESSION,
    ask_deposit,
    booked_or_refused,
    modern_call,
    retry,
)
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture
from tests.helpers.url_mode import asgi_call

sys.path.insert(0, str(ROOT / "examples"))

import booking

Answer = Accepted[dict[str, Any]] | Declined | Cancelled


def scripted(answers: list[Answer], seen: list[ElicitationRequest]) -> Any:
    queue = deque(answers)

    async def handler(question: ElicitationRequest) -> Answer:
        seen.append(question)
        if not queue:
            await anyio.sleep_forever()
        return queue.popleft()

    return handler


def test_every_form_of_the_example_compiles() -> None:
    """How an app asserts that its forms are valid: check_form on each."""
    import datetime

    check_form(booking.date_question_schema(datetime.date(2025, 12, 26)))
    form = compile_form(booking.date_question_schema(datetime.date(2025, 12, 26)))
    assert [f.name for f in form.fields] == ["accept_alternative", "date"]
    with pytest.raises(FormDefinitionError, match="date"):
        check_form({"type": "object", "properties": {"date": {"type": "object"}}})


async def test_booking_flows_over_stdio() -> None:
    seen: list[ElicitationRequest] = []
    handler = scripted(
        [
            Accepted({"accept_alternative": True}),  # 12-25 full -> default 12-26
            Accepted({"accept_alternative": True, "date": "2025-12-27"}),  # 12-25 -> 12-27 full again
            Accepted({"accept_alternative": True, "date": "2025-12-25"}),  # -> the same full date again
            Accepted({"accept_alternative": True, "date": "2025-12-27"}),  # third answer full too
            Accepted({"accept_alternative": False}),
            Declined(),
            Cancelled(),
        ],
        seen,
    )
    with anyio.fail_after(60):
        async with connect_stdio(BOOKING, elicitation_handler=handler) as client:
            names = {t.name for t in await client.list_tools()}
            assert names == {"book_table", "confirm_deposit", "add_to_calendar", "booking_status"}

            free = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert free.structured_content is not msgspec_unset()
            assert free.structured_content["status"] == "booked"  # type: ignore[index]
            booking_id = free.structured_content["booking_id"]  # type: ignore[index]

            alt = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4})
            assert alt.structured_content is not None
            alt_id = alt.structured_content["booking_id"]
            assert alt.structured_content == {
                "status": "booked", "date": "2025-12-26", "party_size": 4, "booking_id": alt_id
            }
            assert alt_id != booking_id and f"(booking {alt_id})" in alt.text
            assert "2025-12-25" in seen[0].message and "4" in seen[0].message
            date_field = {f.name: f for f in seen[0].form.fields}["date"]
            assert date_field.default == "2025-12-26"

            three = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert three.structured_content is not None
            assert three.structured_content["status"] == "not_booked"
            assert len(seen) == 4  # at most three questions in that call

            no = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert no.structured_content["status"] == "not_booked"  # type: ignore[index]
            dec = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert dec.structured_content["status"] == "declined"  # type: ignore[index]
            can = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert can.structured_content["status"] == "cancelled"  # type: ignore[index]
            assert "later" in can.text

            status = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert status.structured_content["status"] == "booked"  # type: ignore[index]
            unknown = await client.call_tool("booking_status", {"booking_id": "nope"})
            assert unknown.is_error is True and "nope" in unknown.text
            confirm = await client.call_tool("confirm_deposit", {"booking_id": booking_id})
            assert confirm.structured_content["status"] == "booked"  # type: ignore[index]

            bad_date = await client.call_tool("book_table", {"date": "2025-13-45", "party_size": 2})
            assert bad_date.is_error is True and "'date'" in bad_date.text
            bad_size = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2.5})
            assert bad_size.is_error is True and "'party_size'" in bad_size.text


async def test_timeout_over_stdio_is_a_cancel() -> None:
    seen: list[ElicitationRequest] = []
    command = [*BOOKING, "--elicitation-timeout", "0.3"]
    with anyio.fail_after(60):
        async with connect_stdio(command, elicitation_handler=scripted([], seen)) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert result.structured_content["status"] == "cancelled"  # type: ignore[index]
            assert "later" in result.text
            assert len(seen) == 1
            with anyio.fail_after(5):  # our handler is cancelled by the server's notifications/cancelled
                while client.session.inflight_count:  # noqa: ASYNC110 - polling the client's own table
                    await anyio.sleep(0.01)


async def test_client_without_elicitation_is_not_asked() -> None:
    with anyio.fail_after(60):
        async with connect_stdio(BOOKING) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert result.is_error is True
            assert "2025-12-25" in result.text and "2025-12-26" in result.text
            deposit = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
            assert deposit.is_error is True and "deposit" in deposit.text


# --- booking ids are unguessable (issue 15, item 12) ---------------------------------------------------------

BOOKING_ID = re.compile(r"[A-Za-z0-9_-]{16,}")  # URL-safe text; 16 base64url characters carry 96 bits


async def test_booking_ids_are_unguessable_and_never_sequential() -> None:
    """Ids carry at least 96 random bits: every one of the first 16 characters varies freely across bookings."""
    app = booking.build()
    ids: list[str] = []
    with anyio.fail_after(60):
        async with connected(app.server) as (client, _):
            for _ in range(300):
                made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
                assert isinstance(made.structured_content, dict)
                ids.append(made.structured_content["booking_id"])
            for guess in ("B0001", "B0002", "1", "0001"):  # what a counter would have handed out
                tried = await client.call_tool("booking_status", {"booking_id": guess})
                assert tried.is_error is True
    assert len(set(ids)) == len(ids) == len(app.bookings)
    for booking_id in ids:
        assert BOOKING_ID.fullmatch(booking_id), booking_id
        assert len(base64.urlsafe_b64decode(booking_id + "=" * (-len(booking_id) % 4))) >= 12
    # A counter (or a timestamp) keeps its leading characters; random ids use most of the 64 symbols
    # at every position (about 63 of 64 over 300 ids; fewer than 40 would be astronomically unlikely).
    for position in range(16):
        seen = {booking_id[position] for booking_id in ids}
        assert len(seen) >= 40, f"position {position} took only {len(seen)} values: not random"
    assert ids != sorted(ids)


# --- 2026-07-28: one booking per call, however often its deposit round is replayed (issue 15, item 2) ----------

PAGES = "http://127.0.0.1:9"










@pytest.mark.usefixtures("booking_retries")
async def test_replaying_the_deposit_round_makes_one_booking() -> None:
    app = booking.build()
    app.pages_url = PAGES
    with anyio.fail_after(30):
        async with raw_client(app.server) as (peer, _):
            key, url, state = await ask_deposit(peer)
            accept = {key: {"action": "accept"}}
            made = booked_or_refused(await retry(peer, 2, accept, state))
            assert made is not None
            # The same round again: replayed from its state (or refused once states are single-use).
            assert booked_or_refused(await retry(peer, 3, accept, state)) in (made, None)
            # A replay that declines now does not undo the call's booking either.
            late = await retry(peer, 4, {key: {"action": "decline"}}, state)
            assert "error" in late or late["result"]["structuredContent"]["booking_id"] == made
            assert list(app.bookings) == [made] and len(app.deposits) == 1
            # The one page pays the one booking.
            assert (await asgi_call(app.pages, "POST", url))[0] == 200
            assert app.bookings[made].status == "booked"


@pytest.mark.usefixtures("booking_retries")
async def test_concurrent_retries_of_one_deposit_round_make_one_booking() -> None:
    app = booking.build()
    app.pages_url = PAGES
    with anyio.fail_after(30):
        async with raw_client(app.server) as (peer, _):
            key, _, state = await ask_deposit(peer)
            for n in range(2, 6):  # four retries at once: one resumes the parked call, the others race it
                await peer.send(modern_call(n, "book_table", DEPOSIT_ARGS, answers={key: {"action": "accept"}},
                                            state=state))
            outcomes = {booked_or_refused(await peer.recv(timeout=20)) for _ in range(4)}
            assert len(app.bookings) == 1 and outcomes - {None} == set(app.bookings)


@pytest.mark.usefixtures("booking_retries")
async def test_a_deposit_round_replayed_on_another_worker_finds_the_calls_booking() -> None:
    """One call id, one booking, even where no record says the state was used (another process, same data)."""
    first, second = booking.build(state_key=KEY), booking.build(state_key=KEY)
    second.bookings, second.by_call, second.deposits = first.bookings, first.by_call, first.deposits  # one store
    first.pages_url = second.pages_url = PAGES
    with anyio.fail_after(30):
        async with raw_client(first.server) as (peer, _), raw_client(second.server) as (other, _):
            earlier = await peer.request(9, "tools/call", modern_call(9, "book_table", {"date": "2025-12-24",
                                                                                        "party_size": 2})["params"])
            earlier_id = earlier["result"]["structuredContent"]["booking_id"]
            key, url, state = await ask_deposit(peer)
            accept = {key: {"action": "accept"}}
            made = booked_or_refused(await retry(peer, 2, accept, state))
            assert booked_or_refused(await retry(other, 3, accept, state)) == made
            assert list(first.bookings) == [earlier_id, made] and list(first.deposits) == [url.rsplit("/", 1)[1]]
            assert first.bookings[earlier_id].party_size == 2 and first.bookings[made].party_size == 8


# --- calendar authorizations are bounded and end with their session (issue 15, item 9) ------------------------



async def needs_authorization(peer: RawPeer, id_: int, booking_id: str) -> str:
    """``add_to_calendar`` without authorization: the -32042 step's elicitationId."""
    reply = await peer.request(id_, "tools/call", {"name": "add_to_calendar", "arguments": {"booking_id": booking_id}})
    assert reply["error"]["code"] == -32042, reply
    [step] = reply["error"]["data"]["elicitations"]
    assert step["url"].endswith("/authorize/" + step["elicitationId"])
    eid: str = step["elicitationId"]
    return eid


async def book(peer: RawPeer, id_: int) -> str:
    made = await peer.request(id_, "tools/call", {"name": "book_table",
                                                  "arguments": {"date": "2025-12-24", "party_size": 2}})
    booking_id: str = made["result"]["structuredContent"]["booking_id"]
    return booking_id


async def test_unauthorized_calendar_calls_keep_one_pending_authorization_per_session() -> None:
    app = booking.build()
    app.pages_url = PAGES
    with anyio.fail_after(120):
        async with raw_client(app.server) as (alice, alice_conn):
            await alice.initialize("2025-11-25", URL_SESSION)
            booking_id = await book(alice, 1)
            eids = {await needs_authorization(alice, n, booking_id) for n in range(2, 2002)}
            assert len(eids) == 1  # 2,000 calls, one pending authorization, one page
            [eid] = eids
            assert list(app.authorizations) == [eid] and alice_conn.url_elicitations == {eid}
            async with raw_client(app.server) as (bob, _):
                await bob.initialize("2025-11-25", URL_SESSION)
                bobs = await needs_authorization(bob, 1, booking_id)
                assert bobs != eid and set(app.authorizations) == {eid, bobs}
            # Bob's session ended: his entry is gone, and so is his page.
            assert list(app.authorizations) == [eid]
            assert (await asgi_call(app.pages, "GET", f"{PAGES}/authorize/{bobs}"))[0] == 404
            assert (await asgi_call(app.pages, "POST", f"{PAGES}/authorize/{bobs}"))[0] == 404
            # Alice's page still works, once; then her retry succeeds and nothing is pending.
            assert (await asgi_call(app.pages, "POST", f"{PAGES}/authorize/{eid}"))[0] == 200
            note = await alice.recv()
            assert note["method"] == "notifications/elicitation/complete"
            assert note["params"] == {"elicitationId": eid}
            added = await alice.request(9000, "tools/call", {"name": "add_to_calendar",
                                                            "arguments": {"booking_id": booking_id}})
            assert added["result"]["structuredContent"]["status"] == "added"
            assert app.authorizations == {}
            # A session that ends with its authorization pending leaves nothing behind.
            async with raw_client(app.server) as (carol, _):
                await carol.initialize("2025-11-25", URL_SESSION)
                for n in range(1, 51):
                    await needs_authorization(carol, n, booking_id)
                assert len(app.authorizations) == 1
        assert app.authorizations == {}


async def test_on_connection_closed_is_told_once_per_ended_connection() -> None:
    """The hook the example drops per-session state with: called once, with that connection, after it ended."""
    from minimcp import Server

    app = Server("hook")
    ended: list[Any] = []

    def closed(conn: Any) -> None:
        ended.append(conn)
        raise RuntimeError("a failing hook is logged; the server goes on")

    app.on_connection_closed = closed
    async with raw_client(app) as (_, first):
        async with raw_client(app) as (peer, second):
            assert (await peer.request(1, "ping"))["result"] == {}
        assert ended == [second] and second not in app.connections
    assert ended == [second, first] and app.connections == set()


async def test_pending_authorizations_are_bounded_oldest_dropped_first() -> None:
    app = booking.build(max_pending_authorizations=3)
    app.pages_url = PAGES
    with anyio.fail_after(60):
        async with raw_client(app.server) as (first, _):
            await first.initialize("2025-11-25", URL_SESSION)
            booking_id = await book(first, 1)
            eids = [await needs_authorization(first, 2, booking_id)]
            async with contextlib.AsyncExitStack() as stack:
                for _ in range(4):
                    peer, _ = await stack.enter_async_context(raw_client(app.server))
                    await peer.initialize("2025-11-25", URL_SESSION)
                    eids.append(await needs_authorization(peer, 1, booking_id))
                    assert len(app.authorizations) <= 3
                assert list(app.authorizations) == eids[-3:]
                # The dropped pages are gone; a session whose page was dropped gets a new one.
                assert (await asgi_call(app.pages, "POST", f"{PAGES}/authorize/{eids[0]}"))[0] == 404
                renewed = await needs_authorization(first, 3, booking_id)
                assert renewed not in eids and list(app.authorizations) == [*eids[-2:], renewed]
                assert (await asgi_call(app.pages, "POST", f"{PAGES}/authorize/{renewed}"))[0] == 200


# --- a client that answers a question with a JSON-RPC error (issue 16, the booking contract) -------------------


@pytest.mark.parametrize("party_size", [2, 8], ids=["date-question", "deposit"])
async def test_a_json_rpc_error_answer_is_a_tool_error_and_books_nothing(party_size: int) -> None:
    """FastMCP checks the form itself and answers -32603: a tool error saying so, not the client's error."""
    app = booking.build()
    app.pages_url = PAGES
    date = "2025-12-25" if party_size == 2 else "2025-12-24"
    with anyio.fail_after(30):
        async with raw_client(app.server) as (peer, _):
            await peer.initialize("2025-11-25", {"elicitation": {"form": {}, "url": {}}})
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "book_table", "arguments": {"date": date, "party_size": party_size}}})
            ask = await peer.recv()
            assert ask["method"] == "elicitation/create"
            refusal = "Elicitation response failed validation:\n" + "x" * 5000
            await peer.send({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32603, "message": refusal}})
            reply = await peer.recv()
            assert reply["id"] == 1 and "error" not in reply, reply  # not the client's error passed on
            result = reply["result"]
            assert result["isError"] is True and "structuredContent" not in result
            [block] = result["content"]
            assert "could not answer the question" in block["text"]
            assert "Elicitation response failed validation: xxx" in block["text"] and len(block["text"]) < 400
            assert app.bookings == {} and app.deposits == {}
            assert (await peer.request(2, "ping"))["result"] == {}  # the session goes on


# --- the pages check Host and Origin like the MCP endpoint (issue 15, item 13) ----------------------------------

FOREIGN = [
    pytest.param({"host": "evil.example"}, id="rebound-host"),  # DNS rebinding: our address under another name
    pytest.param({"host": "evil.example:9"}, id="rebound-host-port"),
    pytest.param({"origin": "https://evil.example"}, id="cross-site-form"),  # a form on another site posting here
    pytest.param({"origin": "http://127.0.0.1.evil.example:9"}, id="lookalike-origin"),
    pytest.param({"origin": "null"}, id="opaque-origin"),  # a sandboxed frame or a redirect chain
]
SAME_ORIGIN = {"origin": PAGES, "content-type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize("foreign", FOREIGN)
async def test_pages_refuse_foreign_hosts_and_cross_site_posts(foreign: dict[str, str]) -> None:
    app = booking.build()
    app.pages_url = PAGES
    with anyio.fail_after(30):
        async with raw_client(app.server) as (peer, _):
            await peer.initialize("2025-11-25", URL_SESSION)
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "book_table", "arguments": {"date": "2025-12-24", "party_size": 8}}})
            ask = await peer.recv()
            deposit_url = ask["params"]["url"]
            await peer.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
            booking_id = (await peer.recv())["result"]["structuredContent"]["booking_id"]
            authorize_url = f"{PAGES}/authorize/{await needs_authorization(peer, 2, booking_id)}"
            for url in (deposit_url, authorize_url):
                for method in ("GET", "POST"):
                    status, page = await asgi_call(app.pages, method, url, {**SAME_ORIGIN, **foreign})
                    assert status == 403, (method, url, page)
                    assert "not allowed" in page
            # Nothing changed: not paid, not authorized, no completion sent.
            assert app.bookings[booking_id].status == "deposit_pending"
            assert all(not d.paid for d in app.deposits.values()) and len(app.authorizations) == 1
            assert await peer.nothing_for(0.1)
            # The person's own browser -- a plain form POST from the page itself -- still works.
            for url in (deposit_url, authorize_url):
                status, page = await asgi_call(app.pages, "GET", url, {"origin": PAGES})
                assert status == 200 and '<form method="post">' in page
                status, page = await asgi_call(app.pages, "POST", url, SAME_ORIGIN)
                assert status == 200, page
            assert app.bookings[booking_id].status == "booked" and app.authorizations == {}
            notes = [await peer.recv(), await peer.recv()]
            assert {n["method"] for n in notes} == {"notifications/elicitation/complete"}


async def test_pages_accept_loopback_names_as_the_mcp_endpoint_does() -> None:
    app = booking.build()
    app.pages_url = PAGES
    for host in ("127.0.0.1:9", "localhost:8123", "LOCALHOST", "[::1]:80"):
        scheme_host = host.lower()
        status, _ = await asgi_call(app.pages, "GET", f"{PAGES}/deposit/unknown",
                                    {"host": host, "origin": f"http://{scheme_host}"})
        assert status == 404  # allowed through; the page itself is unknown
    custom = booking.build(allowed_hosts=("booking.example",), allowed_origins=("https://booking.example",))
    custom.pages_url = "https://booking.example"
    assert (await asgi_call(custom.pages, "GET", "https://booking.example/deposit/x"))[0] == 404
    assert (await asgi_call(custom.pages, "GET", f"{PAGES}/deposit/x"))[0] == 403


def msgspec_unset() -> object:
    import msgspec

    return msgspec.UNSET


# --- a dropped copy of a 2026-07-28 call is not its end (issue 18, the never-park mode) --------------------------


async def test_a_deposit_page_outlives_a_dropped_copy_until_no_retry_can_come() -> None:
    """The page stays when the parked copy goes (its retry replays and needs it); it goes once the state expired."""
    app = booking.build()
    app.pages_url = PAGES
    app.server.replay_every_retry = True  # every copy is dropped as soon as it asks
    app.server.state_ttl = 0.0  # ... and no retry can come back once the next call starts
    with anyio.fail_after(30):
        async with raw_client(app.server) as (peer, _):
            _, url, _ = await ask_deposit(peer)
            first = url.rsplit("/", 1)[1]
            status = await peer.request(5, "tools/call",
                                        modern_call(5, "booking_status", {"booking_id": "x"})["params"])
            assert status["result"]["isError"] is True  # a round trip: the dropped copy has run its clean-up
            assert list(app.deposits) == [first]
            _, url, _ = await ask_deposit(peer)
            assert list(app.deposits) == [url.rsplit("/", 1)[1]]  # the expired one is gone, unbooked


async def test_completed_calendar_authorizations_are_bounded() -> None:
    app = booking.build(max_pending_authorizations=2)
    for n in range(3):
        app._remember_authorization(f"e{n}", None)
        assert await app.authorize(f"e{n}")
    assert list(app.completed_authorizations) == ["e1", "e2"]
