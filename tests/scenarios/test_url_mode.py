"""URL-mode elicitation: ids, completion notices, -32042, capability gating, URL safety.

The planned SEP-1036 conformance checks (not in the official suite) are covered
here; each test's docstring names the check ids it stands for.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import anyio
import pytest

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    Context,
    Declined,
    McpError,
    Server,
    UrlElicitationRequest,
    UrlElicitationRequired,
    memory_pair,
)
from minimcp.wire.urls import InvalidElicitationUrl, check_elicitation_url, inspect_url
from tests.helpers import raw_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import booking as booking_example  # noqa: E402

from tests.helpers.url_mode import asgi_call  # noqa: E402


class Person:
    """A URL handler: records what it was shown, answers as told, may 'visit' the page first."""

    def __init__(self, answer: Any = None, visit: Any = None) -> None:
        self.seen: list[UrlElicitationRequest] = []
        self.answer = answer if answer is not None else Accepted(None)
        self.visit = visit

    async def __call__(self, request: UrlElicitationRequest) -> Any:
        self.seen.append(request)
        if self.visit is not None:
            await self.visit(request)
        return self.answer


def url_server() -> Server:
    app = Server("urls")

    @app.tool()
    async def open_page(ctx: Context, url: str) -> str:
        answer = await ctx.elicit_url("Please open this page", url)
        match answer:
            case Accepted(eid):
                return f"accepted {eid}"
            case Declined():
                return "declined"
            case Cancelled(reason):
                return f"cancelled {reason}"
        return "?"  # pragma: no cover

    @app.tool()
    async def needs_step(ctx: Context) -> str:
        raise UrlElicitationRequired([ctx.url_elicitation("Sign in first", "https://auth.example.com/start")])

    return app


# --- server side: wire shape and gating ----------------------------------------------------------


async def test_url_request_shape_and_fresh_ids() -> None:
    """sep-1036-url-request-shape, sep-1036-url-param-valid, sep-1036-request-required-params."""
    async with raw_client(url_server()) as (peer, _):
        await peer.initialize(capabilities={"elicitation": {"form": {}, "url": {}}})
        ids = []
        for n in (1, 2):
            await peer.send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                             "params": {"name": "open_page", "arguments": {"url": "https://pay.example.com/x"}}})
            req = await peer.recv()
            assert req["method"] == "elicitation/create"
            params = req["params"]
            assert set(params) == {"mode", "message", "elicitationId", "url"}
            assert params["mode"] == "url" and params["url"] == "https://pay.example.com/x"
            assert len(params["elicitationId"]) >= 20
            ids.append(params["elicitationId"])
            await peer.send({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}})
            result = await peer.recv()
            assert result["result"]["content"][0]["text"] == f"accepted {params['elicitationId']}"
        assert ids[0] != ids[1]


@pytest.mark.parametrize(
    ("version", "caps"),
    [
        ("2025-11-25", {"elicitation": {}}),
        ("2025-11-25", {"elicitation": {"form": {}}}),
        ("2025-11-25", {}),
        ("2025-06-18", {"elicitation": {"url": {}}}),
    ],
)
async def test_no_url_request_to_a_client_that_did_not_declare_it(version: str, caps: dict[str, Any]) -> None:
    """sep-1036-server-no-undeclared-mode: a typed error before sending, as a tool error."""
    async with raw_client(url_server()) as (peer, conn):
        await peer.initialize(version, caps)
        reply = await peer.request(1, "tools/call", {"name": "open_page", "arguments": {"url": "https://a.example/x"}})
        assert reply["result"]["isError"] is True
        assert "URL-mode" in reply["result"]["content"][0]["text"]
        assert await peer.nothing_for(0.1)
        # -32042 is not sent to such a client either: a tool error instead
        step = await peer.request(2, "tools/call", {"name": "needs_step"})
        assert "error" not in step and step["result"]["isError"] is True
        assert conn.url_elicitations == set()


@pytest.mark.parametrize(
    "url",
    ["http://example.com/pay", "https://user:pw@example.com/", "ftp://example.com/", "/relative", "https://"],
)
async def test_unsafe_urls_are_refused_before_sending(url: str) -> None:
    async with raw_client(url_server()) as (peer, _):
        await peer.initialize(capabilities={"elicitation": {"url": {}}})
        reply = await peer.request(1, "tools/call", {"name": "open_page", "arguments": {"url": url}})
        assert reply["result"]["isError"] is True
        assert await peer.nothing_for(0.1)


def test_url_checks() -> None:
    assert check_elicitation_url("http://127.0.0.1:8000/x") == "http://127.0.0.1:8000/x"
    assert check_elicitation_url("http://localhost/x")
    assert check_elicitation_url("http://[::1]:80/x")
    for bad in ["http://10.0.0.1/", "javascript:alert(1)", "https://a b.com/"]:
        with pytest.raises(InvalidElicitationUrl):
            check_elicitation_url(bad)


async def test_url_elicitation_required_error_shape() -> None:
    """sep-1036-url-elicitation-required-error-code, -error-lists-elicitations, -error-elicitations-url-mode."""
    async with raw_client(url_server()) as (peer, conn):
        await peer.initialize(capabilities={"elicitation": {"url": {}}})
        reply = await peer.request(1, "tools/call", {"name": "needs_step"})
        error = reply["error"]
        assert error["code"] == -32042
        [item] = error["data"]["elicitations"]
        assert item["mode"] == "url" and item["url"] == "https://auth.example.com/start"
        assert item["message"] == "Sign in first" and item["elicitationId"] in conn.url_elicitations


async def test_decline_and_cancel_are_answers() -> None:
    async with raw_client(url_server()) as (peer, conn):
        await peer.initialize(capabilities={"elicitation": {"url": {}}})
        for action, text in (("decline", "declined"), ("cancel", "cancelled user")):
            await peer.send({"jsonrpc": "2.0", "id": action, "method": "tools/call",
                             "params": {"name": "open_page", "arguments": {"url": "https://a.example/"}}})
            req = await peer.recv()
            await peer.send({"jsonrpc": "2.0", "id": req["id"], "result": {"action": action}})
            assert (await peer.recv())["result"]["content"][0]["text"] == text
        assert conn.url_elicitations == set()


# --- completion ------------------------------------------------------------------------------------


async def test_completion_goes_to_the_owning_session_only() -> None:
    """sep-1036-complete-notification-initiator-only, sep-1036-complete-notification-elicitation-id."""
    app = url_server()
    async with raw_client(app) as (alice, alice_conn), raw_client(app) as (bob, bob_conn):
        await alice.initialize(capabilities={"elicitation": {"url": {}}})
        await bob.initialize(capabilities={"elicitation": {"url": {}}})
        step = await alice.request(1, "tools/call", {"name": "needs_step"})
        eid = step["error"]["data"]["elicitations"][0]["elicitationId"]
        with pytest.raises(ValueError, match="another session"):
            await bob_conn.complete_url_elicitation(eid)
        assert await app.complete_url_elicitation(eid) is True
        note = await alice.recv()
        assert note == {"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                        "params": {"elicitationId": eid}}
        assert await bob.nothing_for(0.1)
        # repeating is harmless: nothing more is sent
        assert await app.complete_url_elicitation(eid) is False
        assert await alice.nothing_for(0.1)
        assert await alice_conn.complete_url_elicitation("unknown") is False


# --- client side -----------------------------------------------------------------------------------


def test_inspect_url_flags_lookalike_hosts() -> None:
    plain = inspect_url("https://pay.example.com/deposit?x=1")
    assert (plain.host, plain.punycode, plain.mixed_scripts, plain.warning) == ("pay.example.com", False, False, False)
    puny = inspect_url("https://xn--pypal-4ve.com/login")
    assert puny.punycode and puny.warning and puny.host != puny.ascii_host
    mixed = inspect_url("https://p\u0430ypal.com/")
    assert mixed.mixed_scripts and mixed.warning


async def test_client_capabilities_follow_handlers() -> None:
    person = Person()
    assert Client(memory_pair()[0], url_handler=person).capabilities().elicitation == {"url": {}}

    async def form(q: Any) -> Any:
        return Declined()

    both = Client(memory_pair()[0], url_handler=person, elicitation_handler=form).capabilities()
    assert both.elicitation == {"form": {}, "url": {}}


async def test_client_rejects_undeclared_mode_and_treats_modeless_as_form() -> None:
    """sep-1036-client-rejects-undeclared-mode, sep-1036-client-modeless-is-form, -client-supports-declared-mode."""
    a, b = memory_pair()
    from tests.helpers import RawPeer

    peer = RawPeer(b)
    seen: list[str] = []

    async def form(q: Any) -> Any:
        seen.append(q.message)
        return Accepted({"x": "y"})

    async def fake_server() -> None:
        init = await peer.recv()
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})
        await peer.recv()  # initialized

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        async with Client(a, elicitation_handler=form):
            url_req = {"mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "e1"}
            reply = await peer.request(1, "elicitation/create", url_req)
            assert reply["error"]["code"] == -32602
            schema = {"type": "object", "properties": {"x": {"type": "string"}}}
            reply = await peer.request(2, "elicitation/create", {"message": "modeless", "requestedSchema": schema})
            assert reply["result"] == {"action": "accept", "content": {"x": "y"}}
            assert seen == ["modeless"]


async def test_url_handler_sees_host_and_never_fetches() -> None:
    """sep-1036-client-no-prefetch: the library only reports; opening is the application's choice."""
    person = Person(answer=Declined())
    app = url_server()
    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, url_handler=person) as client:
            result = await client.call_tool("open_page", {"url": "https://xn--pypal-4ve.com/pay"})
            assert result.text == "declined"
            [seen] = person.seen
            assert seen.url == "https://xn--pypal-4ve.com/pay"
            assert seen.info.punycode and seen.info.warning
            assert seen.server_name == "urls" and seen.message == "Please open this page"
        tg.cancel_scope.cancel()


async def test_minus_32042_is_typed_on_the_client_and_consent_helper_retries() -> None:
    booking = booking_example.build()
    booking.pages_url = "http://127.0.0.1:9"
    completed: list[str] = []

    async def visit(request: UrlElicitationRequest) -> None:
        status, page = await asgi_call(booking.pages, "POST", request.url)
        assert status == 200 and "authorized" in page

    person = Person(visit=visit)
    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(booking.server.serve, a)
        async with Client(b, url_handler=person, on_elicitation_complete=completed.append) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            booking_id = made.structured_content["booking_id"]  # type: ignore[index]
            with pytest.raises(UrlElicitationRequired) as info:
                await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            [step] = info.value.elicitations
            assert step.url.startswith("http://127.0.0.1:9/authorize/") and info.value.code == -32042
            added = await client.call_tool_with_consent("add_to_calendar", {"booking_id": booking_id},
                                                        completion_timeout=5)
            assert added.structured_content["status"] == "added"  # type: ignore[index]
            assert len(person.seen) == 1 and completed == [person.seen[0].elicitation_id]
            # authorization holds for this session: no more steps
            again = await client.call_tool("add_to_calendar", {"booking_id": booking_id})
            assert again.structured_content["status"] == "added"  # type: ignore[index]
            unknown = await client.call_tool("add_to_calendar", {"booking_id": "B9999"})
            assert unknown.is_error is True
        tg.cancel_scope.cancel()


async def test_consent_helper_stops_when_the_person_declines() -> None:
    booking = booking_example.build()
    booking.pages_url = "http://127.0.0.1:9"
    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(booking.server.serve, a)
        async with Client(b, url_handler=Person(answer=Declined())) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            with pytest.raises(UrlElicitationRequired):
                await client.call_tool_with_consent(
                    "add_to_calendar", {"booking_id": made.structured_content["booking_id"]}  # type: ignore[index]
                )
        tg.cancel_scope.cancel()


# --- the booking deposit flow ---------------------------------------------------------------------


async def run_deposit(person: Person, *, pay_after: bool) -> tuple[dict[str, Any], list[str], Any]:
    booking = booking_example.build()
    booking.pages_url = "http://127.0.0.1:9"
    completed: list[str] = []
    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(booking.server.serve, a)
        async with Client(b, url_handler=person, on_elicitation_complete=completed.append) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
            structured = dict(result.structured_content or {})
            if pay_after and structured.get("status") == "deposit_pending":
                status, page = await asgi_call(booking.pages, "GET", person.seen[0].url)
                assert status == 200 and "Pay deposit" in page and "<form method=\"post\">" in page
                status, page = await asgi_call(booking.pages, "POST", person.seen[0].url)
                assert status == 200 and "paid" in page
                assert await client.wait_elicitation_complete(structured["elicitation_id"], timeout=5)
                now = await client.call_tool("booking_status", {"booking_id": structured["booking_id"]})
                structured["after_payment"] = now.structured_content["status"]  # type: ignore[index]
                again = await client.call_tool("confirm_deposit", {"booking_id": structured["booking_id"]})
                structured["after_confirm"] = again.structured_content["status"]  # type: ignore[index]
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    return structured, completed, booking


async def test_deposit_accept_then_pay_completes_and_notifies_once() -> None:
    person = Person()
    structured, completed, booking = await run_deposit(person, pay_after=True)
    assert structured["status"] == "deposit_pending"
    assert list(booking.bookings) == [structured["booking_id"]]
    assert structured["elicitation_id"] == person.seen[0].elicitation_id
    assert structured["after_payment"] == "booked" and structured["after_confirm"] == "booked"
    assert completed == [structured["elicitation_id"]]  # once, though confirm_deposit ran again
    assert "deposit" in person.seen[0].message and "8" in person.seen[0].message


async def test_deposit_paid_before_the_answer_books_directly() -> None:
    holder: dict[str, Any] = {}

    async def visit(request: UrlElicitationRequest) -> None:
        status, _ = await asgi_call(holder["booking"].pages, "POST", request.url)
        assert status == 200

    person = Person(visit=visit)
    original = booking_example.build

    def capture(**kw: Any) -> Any:
        holder["booking"] = original(**kw)
        return holder["booking"]

    booking_example.build = capture
    try:
        structured, _, _ = await run_deposit(person, pay_after=False)
    finally:
        booking_example.build = original
    assert structured["status"] == "booked"


@pytest.mark.parametrize(("answer", "status"), [(Declined(), "declined"), (Cancelled(), "cancelled")])
async def test_deposit_decline_or_cancel_leaves_no_booking(answer: Any, status: str) -> None:
    structured, completed, booking = await run_deposit(Person(answer=answer), pay_after=False)
    assert structured["status"] == status and "booking_id" not in structured
    assert booking.bookings == {} and booking.deposits == {}
    assert completed == []


async def test_deposit_needs_url_mode() -> None:
    booking = booking_example.build()
    booking.pages_url = "http://127.0.0.1:9"

    async def form(q: Any) -> Any:
        return Declined()

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(booking.server.serve, a)
        async with Client(b, elicitation_handler=form) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 9})
            assert result.is_error is True and "deposit" in result.text and "payment links" in result.text
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            cal = await client.call_tool("add_to_calendar", {"booking_id": made.structured_content["booking_id"]})  # type: ignore[index]
            assert cal.is_error is True and "URL-mode" in cal.text
        tg.cancel_scope.cancel()


async def test_client_ignores_unknown_and_repeated_completion_ids() -> None:
    completed: list[str] = []
    a, b = memory_pair()
    from tests.helpers import RawPeer

    peer = RawPeer(b)

    async def fake_server() -> None:
        init = await peer.recv()
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})
        await peer.recv()

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        async with Client(a, url_handler=Person(), on_elicitation_complete=completed.append) as client:
            note = {"jsonrpc": "2.0", "method": "notifications/elicitation/complete"}
            await peer.send({**note, "params": {"elicitationId": "never-seen"}})
            url_req = {"mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "e1"}
            assert (await peer.request(1, "elicitation/create", url_req))["result"] == {"action": "accept"}
            await peer.send({**note, "params": {"elicitationId": "e1"}})
            await peer.send({**note, "params": {"elicitationId": "e1"}})
            await peer.send({**note, "params": {}})
            assert await client.wait_elicitation_complete("e1", timeout=5)
            # a ping from the "server" is read after the notices, so they were all handled
            assert (await peer.request(2, "ping"))["result"] == {}
            assert completed == ["e1"]


async def test_mcp_error_of_other_codes_stays_generic() -> None:
    app = Server("x")

    @app.tool()
    async def bad() -> str:
        raise McpError(-32099, "custom")

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b) as client:
            with pytest.raises(McpError) as info:
                await client.call_tool("bad")
            assert not isinstance(info.value, UrlElicitationRequired) and info.value.code == -32099
        tg.cancel_scope.cancel()
