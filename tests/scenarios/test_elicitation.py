"""Elicitation end to end: ``ctx.elicit`` on the server, the wire, the client's handler.

Covers the three answers, the per-revision wire shapes (generic forms and the booking
contract of ``docs/booking.md``), capability gating, server-side validation of
answers, the secret guard, timeouts, cancellation cascades in both directions, disconnects
with many pending questions, and the client side of ``elicitation/create``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.util
import pathlib
import random
import sys
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Annotated, Any, Literal, TypedDict

import anyio
import anyio.lowlevel
import msgspec
import pytest

import minimcp
from minimcp import (
    Accepted,
    Cancelled,
    Client,
    ConnectionClosed,
    Context,
    Declined,
    ElicitationRequest,
    FormDefinitionError,
    Limits,
    RequestTimeout,
    Server,
)
from minimcp.forms import NO_DEFAULT, SensitiveFieldError
from minimcp.transports.memory import memory_pair
from tests.helpers import RawPeer, connected, raw_client

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load_booking() -> ModuleType:
    """``examples/booking.py`` as a module (it is a script, not part of a package)."""
    name = "minimcp_example_booking"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / "booking.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


booking = _load_booking()


# --- forms and a server whose tools ask them -------------------------------------------------------


class Seats(msgspec.Struct):
    count: Annotated[int, msgspec.Meta(ge=1, le=10, description="How many seats")]
    section: Literal["front", "back"] = "front"
    note: str | None = None


SEATS_SCHEMA_2025_11_25 = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "description": "How many seats", "minimum": 1, "maximum": 10},
        "section": {"type": "string", "enum": ["front", "back"], "default": "front"},
        "note": {"type": "string"},
    },
    "required": ["count"],
}
# 2025-06-18 allows defaults on booleans only: the select loses its default.
SEATS_SCHEMA_2025_06_18 = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "description": "How many seats", "minimum": 1, "maximum": 10},
        "section": {"type": "string", "enum": ["front", "back"]},
        "note": {"type": "string"},
    },
    "required": ["count"],
}

RAW_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "vip": {"type": "boolean", "default": False}},
    "required": ["name"],
}


class Extras(msgspec.Struct):
    extras: list[Literal["wine", "cake", "flowers"]]


class Login(msgspec.Struct):
    user: str
    password: str


class Numbered(msgspec.Struct):
    answer: int


class Named(TypedDict):
    name: str


@dataclasses.dataclass
class State:
    """What the test server's tools saw."""

    answers: list[Any] = dataclasses.field(default_factory=list)
    started: int = 0
    ended: int = 0
    tool_cancelled: anyio.Event = dataclasses.field(default_factory=anyio.Event)


def make_server(state: State, **kwargs: Any) -> Server:
    app = Server("elicit-test", "1.0.0", **kwargs)

    @app.tool()
    async def ask(ctx: Context, timeout: float | None = None) -> str:
        """Ask for seats; returns the repr of the answer."""
        state.started += 1
        try:
            if timeout is None:
                answer = await ctx.elicit("How many seats?", Seats)
            else:
                answer = await ctx.elicit("How many seats?", Seats, timeout=timeout)
        except anyio.get_cancelled_exc_class():
            state.tool_cancelled.set()
            raise
        finally:
            state.ended += 1
        state.answers.append(answer)
        return repr(answer)

    @app.tool()
    async def ask_raw(ctx: Context) -> str:
        """A raw dict schema form: the tool gets the validated dict."""
        answer = await ctx.elicit("Who are you?", RAW_SCHEMA)
        state.answers.append(answer)
        if isinstance(answer, Accepted):
            return msgspec.json.encode(answer.value).decode()
        return repr(answer)

    @app.tool()
    async def ask_typeddict(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", Named)
        state.answers.append(answer)
        return repr(answer)

    @app.tool()
    async def ask_multi(ctx: Context) -> str:
        answer = await ctx.elicit("Anything extra?", Extras)
        state.answers.append(answer)
        return repr(answer)

    @app.tool()
    async def ask_secret(ctx: Context) -> str:
        answer = await ctx.elicit("Log in", Login)
        state.answers.append(answer)
        return repr(answer)

    @app.tool()
    async def numbered(ctx: Context, n: int) -> str:
        answer = await ctx.elicit(f"question {n}", Numbered)
        if isinstance(answer, Accepted):
            return f"{n}:{answer.value.answer}"
        return f"{n}:{answer!r}"

    @app.tool()
    async def stall() -> str:
        """Never answers (until cancelled)."""
        await anyio.sleep_forever()
        return ""  # pragma: no cover

    @app.tool()
    async def hold(ctx: Context) -> str:
        state.started += 1
        try:
            answer = await ctx.elicit("hold on", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        finally:
            state.ended += 1
        return repr(answer)

    return app


# --- raw wire helpers ------------------------------------------------------------------------------


def call_msg(id_: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments or {}}}


async def answer(peer: RawPeer, id_: Any, action: str, content: dict[str, Any] | None = None) -> None:
    result: dict[str, Any] = {"action": action}
    if content is not None:
        result["content"] = content
    await peer.send({"jsonrpc": "2.0", "id": id_, "result": result})


async def recv_elicitation(peer: RawPeer) -> dict[str, Any]:
    msg = await peer.recv()
    assert msg.get("method") == "elicitation/create", msg
    assert "id" in msg
    return msg


async def recv_result(peer: RawPeer, id_: Any) -> dict[str, Any]:
    msg = await peer.recv()
    assert msg.get("id") == id_ and "result" in msg, msg
    result: dict[str, Any] = msg["result"]
    return result


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c.get("type") == "text")


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - library counters have no event to wait on
            await anyio.sleep(0.005)


ELICIT_CAPS: dict[str, Any] = {"elicitation": {}}


# --- 1. the three answers, as the tool sees them -----------------------------------------------------


async def test_accept_gives_a_typed_struct() -> None:
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({"count": 2, "section": "back"})

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        result = await client.call_tool("ask")
    assert result.is_error is not True
    assert state.answers == [Accepted(Seats(count=2, section="back", note=None))]
    assert isinstance(state.answers[0].value, Seats)
    assert result.text == "Accepted(value=Seats(count=2, section='back', note=None))"


async def test_decline_gives_declined() -> None:
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        return Declined()

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        result = await client.call_tool("ask")
    assert state.answers == [Declined()]
    assert result.text == "Declined()" and result.is_error is not True


async def test_cancel_gives_cancelled_by_user() -> None:
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        return Cancelled()

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        result = await client.call_tool("ask")
    assert state.answers == [Cancelled("user")]
    assert result.text == "Cancelled(reason='user')" and result.is_error is not True


async def test_typeddict_form_gives_a_dict() -> None:
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({"name": "Ann"})

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        await client.call_tool("ask_typeddict")
    assert state.answers == [Accepted({"name": "Ann"})]


# --- 2. the wire ------------------------------------------------------------------------------------


async def test_wire_2025_11_25_form_request() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        req = await recv_elicitation(peer)
        params = req["params"]
        assert params["mode"] == "form"
        assert params["message"] == "How many seats?"
        assert params["requestedSchema"] == SEATS_SCHEMA_2025_11_25
        await answer(peer, req["id"], "accept", {"count": 3})
        result = await recv_result(peer, 1)
        assert text_of(result) == "Accepted(value=Seats(count=3, section='front', note=None))"


async def test_wire_2025_06_18_has_no_mode_and_no_string_defaults() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-06-18", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        req = await recv_elicitation(peer)
        params = req["params"]
        assert "mode" not in params
        assert params["message"] == "How many seats?"
        assert params["requestedSchema"] == SEATS_SCHEMA_2025_06_18
        await answer(peer, req["id"], "decline")
        assert text_of(await recv_result(peer, 1)) == "Declined()"


async def test_wire_2025_06_18_keeps_boolean_defaults() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-06-18", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_raw"))
        req = await recv_elicitation(peer)
        assert req["params"]["requestedSchema"]["properties"]["vip"] == {"type": "boolean", "default": False}
        await answer(peer, req["id"], "cancel")
        assert text_of(await recv_result(peer, 1)) == "Cancelled(reason='user')"


BOOKING_SCHEMA_2025_11_25 = {
    "type": "object",
    "properties": {
        "accept_alternative": {"type": "boolean", "description": "Try another date?"},
        "date": {
            "type": "string",
            "format": "date",
            "description": "Alternative date (YYYY-MM-DD)",
            "default": "2025-12-26",
        },
    },
    "required": ["accept_alternative"],
}
BOOKING_SCHEMA_2025_06_18 = {
    "type": "object",
    "properties": {
        "accept_alternative": {"type": "boolean", "description": "Try another date?"},
        "date": {"type": "string", "format": "date", "description": "Alternative date (YYYY-MM-DD)"},
    },
    "required": ["accept_alternative"],
}


@pytest.mark.parametrize(
    ("version", "schema"),
    [("2025-11-25", BOOKING_SCHEMA_2025_11_25), ("2025-06-18", BOOKING_SCHEMA_2025_06_18)],
)
async def test_booking_full_date_question_per_revision(version: str, schema: dict[str, Any]) -> None:
    async with raw_client(booking.build_server()) as (peer, _):
        await peer.initialize(version, ELICIT_CAPS)
        await peer.send(call_msg(1, "book_table", {"date": "2025-12-25", "party_size": 4}))
        req = await recv_elicitation(peer)
        params = req["params"]
        assert "2025-12-25" in params["message"] and "4" in params["message"]
        assert params["requestedSchema"] == schema
        if version == "2025-06-18":
            assert "mode" not in params
        else:
            assert params.get("mode", "form") == "form"
        # accept without a date: the default (next free date) is booked
        await answer(peer, req["id"], "accept", {"accept_alternative": True})
        result = await recv_result(peer, 1)
        assert result.get("isError") is not True
        assert result["structuredContent"]["status"] == "booked"
        assert result["structuredContent"]["date"] == "2025-12-26"
        assert result["structuredContent"]["party_size"] == 4
        assert await peer.nothing_for(0.05)


async def test_multi_select_to_a_2025_06_18_client_is_a_tool_error() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-06-18", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_multi"))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert await peer.nothing_for(0.1)
        assert state.answers == []
        # the session is fine afterwards
        assert (await peer.request(2, "ping"))["result"] == {}


async def test_multi_select_to_a_2025_11_25_client_is_sent() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_multi"))
        req = await recv_elicitation(peer)
        assert req["params"]["requestedSchema"]["properties"]["extras"] == {
            "type": "array",
            "items": {"type": "string", "enum": ["wine", "cake", "flowers"]},
        }
        await answer(peer, req["id"], "accept", {"extras": ["cake", "wine"]})
        await recv_result(peer, 1)
        assert state.answers == [Accepted(Extras(extras=["cake", "wine"]))]


async def test_multi_select_to_a_2025_06_18_client_error_names_the_field() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-06-18", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_multi"))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert "'extras'" in text_of(result) and "2025-06-18" in text_of(result)
        assert "internal error" not in text_of(result)
        assert await peer.nothing_for(0.05)


NOT_ASKED = [
    ("2024-11-05", {"elicitation": {}}),
    ("2025-03-26", {"elicitation": {}}),
    ("2025-06-18", {}),
    ("2025-11-25", {}),
    ("2025-11-25", {"elicitation": {"url": {}}}),  # URL mode only: no forms
]


@pytest.mark.parametrize(("version", "caps"), NOT_ASKED)
async def test_booking_client_not_asked_gets_tool_error_naming_next_free_date(
    version: str, caps: dict[str, Any]
) -> None:
    async with raw_client(booking.build_server()) as (peer, _):
        await peer.initialize(version, caps)
        await peer.send(call_msg(1, "book_table", {"date": "2025-12-25", "party_size": 2}))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert "2025-12-25" in text_of(result) and "2025-12-26" in text_of(result)
        assert await peer.nothing_for(0.1)


@pytest.mark.parametrize(("version", "caps"), NOT_ASKED)
async def test_generic_tool_client_not_asked_gets_tool_error_and_nothing_is_sent(
    version: str, caps: dict[str, Any]
) -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, conn):
        await peer.initialize(version, caps)
        await peer.send(call_msg(1, "ask"))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert "elicitation" in text_of(result) and "How many seats?" in text_of(result)
        assert await peer.nothing_for(0.1)
        assert state.answers == []
        assert conn.session.stats.requests_sent == 0


async def test_real_client_without_handler_is_not_asked() -> None:
    state = State()
    async with connected(make_server(state)) as (client, conn):
        result = await client.call_tool("ask")
        assert result.is_error is True
        assert conn.session.stats.requests_sent == 0


# --- 3. server-side validation of answers ----------------------------------------------------------


async def test_booking_bad_answer_type_is_tool_error_and_nothing_is_booked() -> None:
    app = booking.build()
    async with raw_client(app.server) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "book_table", {"date": "2025-12-25", "party_size": 2}))
        req = await recv_elicitation(peer)
        await answer(peer, req["id"], "accept", {"accept_alternative": "maybe"})
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert "accept_alternative" in text_of(result) and "boolean" in text_of(result)
        assert "structuredContent" not in result
        assert app.bookings == {}  # nothing was booked; the next call makes the only booking
        await peer.send(call_msg(3, "book_table", {"date": "2025-12-24", "party_size": 2}))
        booked = await recv_result(peer, 3)
        assert booked["structuredContent"]["status"] == "booked"
        booking_id = booked["structuredContent"]["booking_id"]
        assert [b.booking_id for b in app.bookings.values()] == [booking_id]


@pytest.mark.parametrize(
    ("content", "field", "detail"),
    [
        ({"section": "front"}, "count", "required"),
        ({"count": 0}, "count", ">= 1"),
        ({"count": 11}, "count", "<= 10"),
        ({"count": 2.5}, "count", "integer"),
        ({"count": "2"}, "count", "integer"),
        ({"count": 2, "section": "middle"}, "section", "'front', 'back'"),
        ({"count": 2, "note": None}, "note", "string"),
    ],
)
async def test_bad_answers_are_tool_errors_naming_the_field(content: dict[str, Any], field: str, detail: str) -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        req = await recv_elicitation(peer)
        await answer(peer, req["id"], "accept", content)
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert f"'{field}'" in text_of(result) and detail in text_of(result)
        assert state.answers == []  # business code never saw the bad data


async def test_accept_without_content_is_checked_like_an_empty_answer() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        req = await recv_elicitation(peer)
        await answer(peer, req["id"], "accept")
        result = await recv_result(peer, 1)
        assert result["isError"] is True and "'count'" in text_of(result)
        assert state.answers == []


async def test_unknown_fields_in_the_answer_are_dropped() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_raw"))
        req = await recv_elicitation(peer)
        await answer(peer, req["id"], "accept", {"name": "Ann", "admin": True, "vip": True})
        result = await recv_result(peer, 1)
        assert result.get("isError") is not True
        assert msgspec.json.decode(text_of(result)) == {"name": "Ann", "vip": True}
        assert state.answers == [Accepted({"name": "Ann", "vip": True})]
        # and for a Struct form the value is built from the named fields only
        await peer.send(call_msg(2, "ask"))
        req = await recv_elicitation(peer)
        await answer(peer, req["id"], "accept", {"count": 1, "sneaky": "x"})
        await recv_result(peer, 2)
        assert state.answers[-1] == Accepted(Seats(count=1))


# --- 4. the secret guard ------------------------------------------------------------------------------


async def test_secret_field_is_refused_before_anything_is_sent() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, conn):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_secret"))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        assert await peer.nothing_for(0.1)
        assert conn.session.stats.requests_sent == 0
        assert state.answers == []


async def test_secret_field_tool_error_points_to_url_mode() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask_secret"))
        result = await recv_result(peer, 1)
        assert result["isError"] is True
        text = text_of(result)
        assert "'password'" in text and "URL mode" in text and "elicit_url" in text
        assert "internal error" not in text
        assert await peer.nothing_for(0.05)


# --- 5. timeouts ---------------------------------------------------------------------------------------


async def test_timeout_is_cancelled_timeout_and_the_client_is_told() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, conn):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask", {"timeout": 0.1}))
        req = await recv_elicitation(peer)
        got = [await peer.recv(), await peer.recv()]  # the result and the cancellation, in any order
        results = [m for m in got if m.get("id") == 1]
        cancels = [m for m in got if m.get("method") == "notifications/cancelled"]
        assert len(results) == 1 and len(cancels) == 1, got
        assert text_of(results[0]["result"]) == "Cancelled(reason='timeout')"
        assert results[0]["result"].get("isError") is not True
        assert cancels[0]["params"]["requestId"] == req["id"]
        assert state.answers == [Cancelled("timeout")]
        assert conn.session.pending_count == 0
        # a late answer is harmless: counted and dropped
        before = conn.session.stats.unknown_responses
        await answer(peer, req["id"], "accept", {"count": 1})
        assert (await peer.request(2, "ping")) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert conn.session.stats.unknown_responses == before + 1
        assert state.answers == [Cancelled("timeout")]
        assert await peer.nothing_for(0.05)


async def test_booking_elicitation_timeout_is_cancelled_status() -> None:
    async with raw_client(booking.build_server(elicitation_timeout=0.1)) as (peer, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "book_table", {"date": "2025-12-25", "party_size": 2}))
        req = await recv_elicitation(peer)
        got = [await peer.recv(), await peer.recv()]
        results = [m for m in got if m.get("id") == 1]
        cancels = [m for m in got if m.get("method") == "notifications/cancelled"]
        assert len(results) == 1 and len(cancels) == 1, got
        assert cancels[0]["params"]["requestId"] == req["id"]
        result = results[0]["result"]
        assert result.get("isError") is not True
        assert result["structuredContent"]["status"] == "cancelled"
        assert result["structuredContent"]["date"] == "2025-12-25"
        assert "try again later" in text_of(result).lower()


# --- 6. cascades from the client's cancellation --------------------------------------------------------


async def test_cancelling_the_tool_call_cancels_its_question() -> None:
    state = State()
    async with raw_client(make_server(state)) as (peer, conn):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(7, "ask"))
        req = await recv_elicitation(peer)
        assert conn.session.pending_count == 1 and conn.session.inflight_count == 1
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "stop"}}
        )
        note = await peer.recv()
        assert note["method"] == "notifications/cancelled"
        assert note["params"]["requestId"] == req["id"]
        assert await peer.nothing_for(0.2)  # no response for the cancelled tools/call
        with anyio.fail_after(5):
            await state.tool_cancelled.wait()
        assert state.ended == 1 and state.answers == []
        await wait_until(lambda: conn.session.inflight_count == 0)
        assert conn.session.pending_count == 0
        # a late answer to the cancelled question changes nothing
        await answer(peer, req["id"], "accept", {"count": 1})
        assert (await peer.request(8, "ping"))["result"] == {}
        assert state.answers == []


async def test_client_call_timeout_cancels_tool_and_handler_despite_paused_clock() -> None:
    state = State()
    handler_started = anyio.Event()
    handler_cancelled = anyio.Event()

    async def handler(q: ElicitationRequest) -> Any:
        handler_started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handler_cancelled.set()
            raise
        return Declined()  # pragma: no cover

    limits = Limits(max_request_time=0.3)
    async with connected(make_server(state), elicitation_handler=handler, limits=limits) as (client, conn):
        start = anyio.current_time()
        with pytest.raises(RequestTimeout), anyio.fail_after(30):
            await client.call_tool("ask", timeout=0.2)
        elapsed = anyio.current_time() - start
        assert handler_started.is_set()
        # the clock was paused while the person was being asked, up to max_request_time
        assert 0.28 <= elapsed < 30
        with anyio.fail_after(5):
            await state.tool_cancelled.wait()
            await handler_cancelled.wait()
        await wait_until(lambda: conn.session.pending_count == 0 and conn.session.inflight_count == 0)
        assert client.session.pending_count == 0
        await wait_until(lambda: client.session.inflight_count == 0)
        assert state.answers == []
        await client.ping()


async def test_client_clock_is_paused_while_the_handler_runs() -> None:
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        await anyio.sleep(0.4)  # longer than the call's timeout
        return Accepted({"count": 5})

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        result = await client.call_tool("ask", timeout=0.15)
    assert result.text == "Accepted(value=Seats(count=5, section='front', note=None))"


async def test_client_clock_runs_again_once_the_handler_is_done() -> None:
    state = State()
    block = {"on": False}

    async def handler(q: ElicitationRequest) -> Any:
        if block["on"]:
            await anyio.sleep_forever()
        return Accepted({"count": 1})

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        # after an answered question ...
        assert (await client.call_tool("ask")).is_error is not True
        with pytest.raises(RequestTimeout), anyio.fail_after(30):  # paused, it would wait an hour
            await client.call_tool("stall", timeout=0.1)
        # ... and after a question the server gave up on (the handler was cancelled)
        block["on"] = True
        assert (await client.call_tool("ask", {"timeout": 0.05})).text == "Cancelled(reason='timeout')"
        await wait_until(lambda: client.session.inflight_count == 0)
        with pytest.raises(RequestTimeout), anyio.fail_after(30):  # paused, it would wait an hour
            await client.call_tool("stall", timeout=0.1)


# --- 7. the server's cancellation reaches the client's handler -----------------------------------------


async def test_server_timeout_cancels_the_client_handler_and_no_response_is_sent() -> None:
    state = State()
    handler_cancelled = anyio.Event()

    async def handler(q: ElicitationRequest) -> Any:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handler_cancelled.set()
            raise
        return Declined()  # pragma: no cover

    async with connected(make_server(state), elicitation_handler=handler) as (client, conn):
        result = await client.call_tool("ask", {"timeout": 0.1})
        assert result.text == "Cancelled(reason='timeout')"
        with anyio.fail_after(5):
            await handler_cancelled.wait()
        await anyio.sleep(0.1)
        assert conn.session.stats.responses_received == 0  # the client never answered the question
        assert conn.session.stats.unknown_responses == 0
        assert client.session.stats.cancelled_by_peer == 1
        await wait_until(lambda: client.session.inflight_count == 0)
        await client.ping()


# --- 8. disconnect with 1,000 pending questions ---------------------------------------------------------

N = 1000


async def test_disconnect_with_1000_pending_elicitations_raw_peer() -> None:
    state = State()
    app = make_server(state)
    async with raw_client(app) as (peer, conn):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        for i in range(N):
            await peer.send(call_msg(i, "hold"))
        await wait_until(lambda: conn.session.pending_count == N)
        assert state.started == N and state.ended == 0
        await peer.transport.aclose()
        await wait_until(lambda: conn not in app.connections)
        assert state.ended == N
        assert conn.session.holds_nothing()
        assert conn.session.closed
        assert app.connections == set()


async def test_disconnect_with_1000_pending_elicitations_real_client() -> None:
    state = State()
    app = make_server(state)
    release = anyio.Event()  # never set: the person never answers
    handler_started = 0
    handler_cancelled = 0
    call_outcomes: list[type[BaseException] | None] = []

    async def handler(q: ElicitationRequest) -> Any:
        nonlocal handler_started, handler_cancelled
        handler_started += 1
        try:
            await release.wait()
        except anyio.get_cancelled_exc_class():
            handler_cancelled += 1
            raise
        return Declined()  # pragma: no cover

    a, b = memory_pair(buffer=4 * N)
    async with anyio.create_task_group() as server_tg:
        conn = await server_tg.start(app.serve, a)
        async with Client(b, elicitation_handler=handler) as client:

            async def call() -> None:
                try:
                    await client.call_tool("hold")
                except ConnectionClosed:
                    call_outcomes.append(ConnectionClosed)
                else:  # pragma: no cover
                    call_outcomes.append(None)

            with anyio.fail_after(20):
                async with anyio.create_task_group() as calls:
                    for _ in range(N):
                        calls.start_soon(call)
                    # every question is pending on the server and being shown by a running handler
                    await wait_until(lambda: conn.session.pending_count == N and handler_started == N)
                    assert client.session.inflight_count == N
                    client.session.close()  # the client's end of the connection goes away
            assert call_outcomes == [ConnectionClosed] * N
            with anyio.fail_after(5):
                await client.session.wait_closed()
            assert handler_cancelled == N
            assert client.session.holds_nothing()
        await wait_until(lambda: conn not in app.connections)
        assert state.ended == N
        assert conn.session.holds_nothing()
        assert app.connections == set()
        server_tg.cancel_scope.cancel()


# --- 9. 1,000 concurrent questions answered in random order ---------------------------------------------


async def test_1000_concurrent_elicitations_answered_in_random_order() -> None:
    state = State()
    app = make_server(state)
    parked: list[tuple[int, anyio.Event]] = []
    all_parked = anyio.Event()
    answer_order: list[int] = []

    async def handler(q: ElicitationRequest) -> Any:
        n = int(q.message.split()[-1])
        ev = anyio.Event()
        parked.append((n, ev))
        if len(parked) == N:
            all_parked.set()
        await ev.wait()
        answer_order.append(n)
        return Accepted({"answer": n * 3 + 1})

    results: dict[int, Any] = {}
    a, b = memory_pair(buffer=4 * N)
    async with anyio.create_task_group() as server_tg:
        conn = await server_tg.start(app.serve, a)
        async with Client(b, elicitation_handler=handler) as client:

            async def call(i: int) -> None:
                results[i] = await client.call_tool("numbered", {"n": i})

            with anyio.fail_after(20):
                async with anyio.create_task_group() as calls:
                    for i in range(N):
                        calls.start_soon(call, i)
                    await all_parked.wait()
                    await wait_until(lambda: conn.session.pending_count == N)
                    order = list(parked)
                    random.Random(20251225).shuffle(order)
                    for k, (_, ev) in enumerate(order):
                        ev.set()
                        if k % 50 == 0:
                            await anyio.lowlevel.checkpoint()
        server_tg.cancel_scope.cancel()
    assert sorted(results) == list(range(N))
    for i, result in results.items():
        assert result.is_error is not True
        assert result.text == f"{i}:{i * 3 + 1}"
    assert sorted(answer_order) == list(range(N))
    assert answer_order != sorted(answer_order)  # really out of order
    assert conn.session.holds_nothing()


# --- 10. the client side of elicitation/create ------------------------------------------------------------


@contextlib.asynccontextmanager
async def client_with_raw_server(
    version: str = "2025-11-25", **options: Any
) -> AsyncIterator[tuple[Client, RawPeer, dict[str, Any]]]:
    """A minimcp Client whose server is a RawPeer (which answers the handshake)."""
    a, b = memory_pair()
    peer = RawPeer(b)
    handshake: dict[str, Any] = {}
    done = anyio.Event()

    async def serve_handshake() -> None:
        init = await peer.recv()
        handshake.update(init)
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": init["id"],
                "result": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "serverInfo": {"name": "raw-server", "version": "9"},
                },
            }
        )
        note = await peer.recv()
        assert note["method"] == "notifications/initialized"
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_handshake)
        async with Client(a, **options) as client:
            with anyio.fail_after(5):
                await done.wait()
            yield client, peer, handshake
        tg.cancel_scope.cancel()


def elicit_msg(id_: Any, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "elicitation/create", "params": params}


FORM_PARAMS = {
    "message": "Pick a table",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "seats": {"type": "integer", "minimum": 1, "maximum": 8, "title": "Seats"},
            "area": {"type": "string", "enum": ["inside", "terrace"], "default": "terrace"},
        },
        "required": ["seats"],
    },
}


async def test_client_declares_form_elicitation_only_with_a_handler() -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return Declined()

    async with client_with_raw_server(elicitation_handler=handler) as (_, _, init):
        assert init["params"]["capabilities"] == {"elicitation": {"form": {}}}
    async with client_with_raw_server() as (_, _, init):
        assert "elicitation" not in init["params"]["capabilities"]


async def test_client_refuses_url_mode_without_url_support() -> None:
    called = []

    async def handler(q: ElicitationRequest) -> Any:
        called.append(q)
        return Accepted({})

    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(
            "u1",
            "elicitation/create",
            {"mode": "url", "message": "Pay the deposit", "url": "https://example.com/pay", "elicitationId": "e1"},
        )
        assert reply["id"] == "u1" and reply["error"]["code"] == -32602
        assert "url" in reply["error"]["message"].lower()
        # refused for the mode itself, not merely for a missing schema
        reply = await peer.request(
            "u2", "elicitation/create", {**FORM_PARAMS, "mode": "url", "url": "https://x.example/"}
        )
        assert reply["error"]["code"] == -32602 and "url" in reply["error"]["message"].lower()
        assert called == []


async def test_client_without_handler_answers_method_not_found() -> None:
    async with client_with_raw_server() as (_, peer, _):
        reply = await peer.request("e1", "elicitation/create", FORM_PARAMS)
        assert reply["id"] == "e1" and reply["error"]["code"] == -32601


async def test_client_with_only_a_url_handler_refuses_form_questions() -> None:
    async def url_handler(q: Any) -> Any:
        return Declined()  # pragma: no cover - never asked here

    async with client_with_raw_server(url_handler=url_handler) as (_, peer, init):
        assert init["params"]["capabilities"] == {"elicitation": {"url": {}}}
        reply = await peer.request("f1", "elicitation/create", FORM_PARAMS)
        assert reply["id"] == "f1" and reply["error"]["code"] == -32602


@pytest.mark.parametrize("mode", [None, "form"])
async def test_client_handler_gets_the_parsed_question(mode: str | None) -> None:
    questions: list[ElicitationRequest] = []

    async def handler(q: ElicitationRequest) -> Any:
        questions.append(q)
        return Accepted({"seats": 2, "area": "inside"})

    params = dict(FORM_PARAMS)
    if mode is not None:
        params["mode"] = mode
    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(3, "elicitation/create", params)
        assert reply == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"action": "accept", "content": {"seats": 2, "area": "inside"}},
        }
    (q,) = questions
    assert q.message == "Pick a table"
    assert q.server_name == "raw-server"
    assert q.protocol_version == "2025-11-25"
    seats, area = q.form.fields
    assert (seats.name, seats.kind, seats.required, seats.title) == ("seats", "integer", True, "Seats")
    assert (seats.minimum, seats.maximum) == (1, 8)
    assert (area.name, area.kind, area.required, area.default) == ("area", "select", False, "terrace")
    assert [v for v, _ in area.options] == ["inside", "terrace"]
    assert seats.default is NO_DEFAULT


@pytest.mark.parametrize(("answer_", "wire"), [(Declined(), "decline"), (Cancelled("user"), "cancel")])
async def test_client_decline_and_cancel_send_no_content(answer_: Any, wire: str) -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return answer_

    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(4, "elicitation/create", FORM_PARAMS)
        assert reply["result"] == {"action": wire}


@pytest.mark.parametrize(("fill", "content"), [(True, {"seats": 2, "area": "terrace"}), (False, {"seats": 2})])
async def test_client_fill_defaults(fill: bool, content: dict[str, Any]) -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({"seats": 2})

    async with client_with_raw_server(elicitation_handler=handler, fill_defaults=fill) as (_, peer, _):
        reply = await peer.request(5, "elicitation/create", FORM_PARAMS)
        assert reply["result"] == {"action": "accept", "content": content}


async def test_client_fill_defaults_reaches_the_server_tool() -> None:
    # Accepted({}) on a form whose only required-less field has a default: the server gets it.
    state = State()

    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({"name": "Bo"})

    async with connected(make_server(state), elicitation_handler=handler) as (client, _):
        result = await client.call_tool("ask_raw")
    assert msgspec.json.decode(result.text) == {"name": "Bo", "vip": False}


async def test_client_fill_defaults_with_empty_answer() -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({})

    params = {
        "message": "Terrace?",
        "requestedSchema": {"type": "object", "properties": {"area": {"type": "string", "default": "terrace"}}},
    }
    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(6, "elicitation/create", params)
        assert reply["result"] == {"action": "accept", "content": {"area": "terrace"}}


@pytest.mark.parametrize(
    "bad",
    [{}, {"seats": 0}, {"seats": "two"}, {"seats": 2, "area": "roof"}],
)
async def test_client_handler_with_invalid_content_sends_an_error_not_an_accept(bad: dict[str, Any]) -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return Accepted(bad)

    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(7, "elicitation/create", FORM_PARAMS)
        assert "result" not in reply
        assert reply["id"] == 7 and reply["error"]["code"] == -32603


async def test_client_refuses_a_schema_outside_the_restricted_subset() -> None:
    called = []

    async def handler(q: ElicitationRequest) -> Any:
        called.append(q)
        return Accepted({})

    params = {
        "message": "Address?",
        "requestedSchema": {
            "type": "object",
            "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
        },
    }
    async with client_with_raw_server(elicitation_handler=handler) as (_, peer, _):
        reply = await peer.request(8, "elicitation/create", params)
        assert reply["error"]["code"] == -32602 and "address" in reply["error"]["message"]
        missing = await peer.request(9, "elicitation/create", {"message": "no schema"})
        assert missing["error"]["code"] == -32602
    assert called == []


# --- 11. an app asserting that all its forms compile -------------------------------------------------------


class DateQuestion(msgspec.Struct):
    """The booking question, as a typed form."""

    accept_alternative: Annotated[bool, msgspec.Meta(description="Try another date?")]
    date: Annotated[datetime.date, msgspec.Meta(description="Alternative date (YYYY-MM-DD)")] | None = None


class Where(msgspec.Struct):
    city: str


class NestedQuestion(msgspec.Struct):
    accept_alternative: bool
    where: Where


APP_FORMS: list[Any] = [
    DateQuestion,
    Seats,
    Extras,
    booking.date_question_schema(datetime.date(2025, 12, 26)),
]


@pytest.mark.parametrize("form", APP_FORMS, ids=lambda f: getattr(f, "__name__", "booking_schema"))
def test_app_forms_compile(form: Any) -> None:
    minimcp.check_form(form)  # raises if the form cannot be asked
    compiled = minimcp.compile_form(form)
    assert compiled.schema_for("2025-11-25")["type"] == "object"


def test_typed_date_question_matches_the_booking_contract() -> None:
    compiled = minimcp.compile_form(DateQuestion)
    schema = compiled.schema_for("2025-11-25")
    assert schema == {
        "type": "object",
        "properties": {
            "accept_alternative": {"type": "boolean", "description": "Try another date?"},
            "date": {"type": "string", "format": "date", "description": "Alternative date (YYYY-MM-DD)"},
        },
        "required": ["accept_alternative"],
    }
    value = compiled.build({"accept_alternative": True, "date": "2025-12-26"})
    assert value == DateQuestion(True, datetime.date(2025, 12, 26))


def test_nested_form_fails_the_check_naming_the_field() -> None:
    with pytest.raises(FormDefinitionError) as info:
        minimcp.check_form(NestedQuestion)
    assert info.value.field == "where"
    assert "'where'" in str(info.value) and "nested" in str(info.value)


def test_secret_form_fails_the_check_unless_opted_out() -> None:
    with pytest.raises(SensitiveFieldError) as info:
        minimcp.check_form(Login)
    assert info.value.field == "password" and "elicit_url" in str(info.value)
    minimcp.check_form(Login, allow_sensitive={"password"})


def test_multi_select_form_compiles_but_cannot_be_rendered_for_2025_06_18() -> None:
    minimcp.check_form(Extras)
    with pytest.raises(FormDefinitionError) as info:
        minimcp.compile_form(Extras).schema_for("2025-06-18")
    assert info.value.field == "extras"
