"""Hostile retries on revision 2026-07-28: each ``requestState`` works once, answers cannot pad it,
and an answer after the question's timeout is a timeout.

Each test states one guarantee of ``docs/guarantees.md`` (section "Exactly once on 2026-07-28"),
over the in-memory transport and over Streamable HTTP, on asyncio and trio:

1. single use -- a used state is refused with ``-32602``; of concurrent retries with one state
   exactly one continues; another connection that resumes the parked call uses the state up; the
   store behind it (:mod:`minimcp.server.mrtr.used_states`) is a seam a shared store can fill;
2. what a state carries -- only the usable part of each answer; a call whose own answers are too
   large to carry ends with a tool error, not with a state the server would refuse;
3. late answers -- the booking ends ``cancelled`` (nothing booked) whether the late retry finds the
   call parked or replays it; a parked call is gone once its timeout passes.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

import minimcp.server.mrtr.rounds
import minimcp.server.mrtr.takeover
import minimcp.server.server
from minimcp import Accepted, Cancelled, Context, Elicit, Limits, Server
from minimcp.server.mrtr.state import StateSealer
from minimcp.server.mrtr.used_states import MemoryUsedStates
from tests.helpers import raw_client
from tests.helpers.modern import (
    NAME_FORM,
    VALUE_FORM,
    Modern,
    accept,
    booking_app,
    complete,
    error_of,
    input_required,
    only,
    text_of,
    wait_until,
)
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture

httpx = pytest.importorskip("httpx")

import booking as booking_example  # noqa: E402  (tests.test_modern put examples/ on sys.path)

from tests.helpers import http_modern as over_http  # noqa: E402
from tests.helpers.http import serving  # noqa: E402

KEY = b"s" * 32
FULL = {"date": "2025-12-25", "party_size": 2}
USED = {"reason": "request_state_used"}
TIMEOUT = 30


@contextlib.asynccontextmanager
async def modern_peers(server: Server, count: int) -> AsyncIterator[list[Modern]]:
    """``count`` raw 2026-07-28 clients, each on its own in-memory connection to ``server``."""
    async with contextlib.AsyncExitStack() as stack:
        yield [Modern((await stack.enter_async_context(raw_client(server)))[0]) for _ in range(count)]


def booking(*, elicitation_timeout: float = 300.0) -> booking_example.BookingApp:
    app = booking_example.build(elicitation_timeout=elicitation_timeout)
    app.pages_url = "http://127.0.0.1:9"
    return app


def status_of(msg: dict[str, Any]) -> str:
    status: str = complete(msg)["structuredContent"]["status"]
    return status


# === 1. single use ===============================================================================


@pytest.mark.usefixtures("booking_retries")
async def test_a_used_state_is_refused() -> None:
    """A retry with a state that already finished its round -> -32602 "already used"; one booking."""
    app = booking_app()
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 1) as (m,):
            requests, state = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            answer = {key: accept(accept_alternative=True)}
            assert status_of(await m.call("book_table", FULL, responses=answer, state=state)) == "booked"
            again = error_of(await m.call("book_table", FULL, responses=answer, state=state), -32602)
            assert again["data"] == USED and "already used" in again["message"]
            # A re-ask (the answer missing) hands out a new state and uses up the one it came with.
            requests, first = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            _, second = input_required(await m.call("book_table", FULL, responses={}, state=first))
            assert second != first
            error_of(await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=first),
                     -32602)
            assert status_of(
                await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=second)
            ) == "booked"
    assert len(app.bookings) == 2


@pytest.mark.usefixtures("booking_retries")
async def test_concurrent_retries_with_one_state_make_one_booking() -> None:
    """Four connections retry with the same state at once: exactly one books, three get -32602."""
    app = booking_app()
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 4) as peers:
            requests, state = input_required(await peers[0].call("book_table", FULL))
            key, _ = only(requests)
            replies: list[dict[str, Any]] = []

            async def retry(m: Modern) -> None:
                answer = {key: accept(accept_alternative=True)}
                replies.append(await m.call("book_table", FULL, responses=answer, state=state))

            async with anyio.create_task_group() as tg:
                for m in peers:
                    tg.start_soon(retry, m)
    booked = [r for r in replies if "result" in r]
    refused = [r for r in replies if "error" in r]
    assert len(booked) == 1 and status_of(booked[0]) == "booked"
    assert len(refused) == 3 and all(r["error"]["code"] == -32602 and r["error"]["data"] == USED for r in refused)
    assert len(app.bookings) == 1


@pytest.mark.usefixtures("booking_retries")
async def test_another_connection_resuming_the_call_uses_the_state_up() -> None:
    """A second connection holding the state resumes the parked call; the owner's retry is refused."""
    app = booking_app()
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 2) as (owner, other):
            requests, state = input_required(await owner.call("book_table", FULL))
            key, _ = only(requests)
            answer = {key: accept(accept_alternative=True)}
            assert status_of(await other.call("book_table", FULL, responses=answer, state=state)) == "booked"
            error_of(await owner.call("book_table", FULL, responses=answer, state=state), -32602)
            assert len(app.server.parking) == 0
    assert len(app.bookings) == 1


async def test_a_state_this_process_never_saw_replays_once() -> None:
    """After a restart (same key) the retry replays the call, and that uses the state up too."""
    first = booking_app()
    first.server.sealer = StateSealer(KEY)
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(first.server, 1) as (m,):
            requests, state = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
        second = booking_app()
        second.server.sealer = StateSealer(KEY)
        answer = {key: accept(accept_alternative=True)}
        async with modern_peers(second.server, 1) as (m,):
            assert status_of(await m.call("book_table", FULL, responses=answer, state=state)) == "booked"
            error_of(await m.call("book_table", FULL, responses=answer, state=state), -32602)
    assert len(second.bookings) == 1 and not first.bookings


class Recorded:
    """A store of used states as a shared one would be: records every call, refuses repeats."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    async def consume(self, key: str, expires_at: float) -> bool:
        await anyio.lowlevel.checkpoint()  # a real store awaits its network here
        first = all(key != seen for seen, _ in self.calls)
        self.calls.append((key, expires_at))
        return first


async def test_the_used_states_store_is_a_seam() -> None:
    """``Server(used_states=...)``: the server asks the given store, with the state's id and expiry."""
    store = Recorded()
    server = booking_example.build().server
    server.used_states = store
    explicit = Server("x", used_states=store)
    assert explicit.used_states is store
    assert isinstance(Server("y", limits=Limits(max_used_states=7)).used_states, MemoryUsedStates)
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(server, 1) as (m,):
            requests, state = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            before = time.time()
            assert status_of(await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)},
                                          state=state)) == "booked"
            error_of(await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=state),
                     -32602)
    assert [k for k, _ in store.calls] == [StateSealer.state_id(state)] * 2
    assert before < store.calls[0][1] <= time.time() + server.state_ttl


async def test_memory_store_is_atomic_bounded_and_never_forgets_a_live_state() -> None:
    """MemoryUsedStates: one winner per key under concurrency; records expire with their state; at the
    limit the oldest record goes and states expiring no later than it are refused from then on."""
    now = [100.0]
    store = MemoryUsedStates(3, clock=lambda: now[0])
    wins: list[bool] = []

    async def use(key: str) -> None:
        wins.append(await store.consume(key, 200.0))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(use, "same")
    assert wins.count(True) == 1 and len(store) == 1
    assert await store.consume("b", 210.0) and await store.consume("c", 220.0)
    assert await store.consume("d", 230.0)  # the limit: "same" (expiring at 200) is forgotten ...
    assert len(store) == 3 and store.floor == 200.0
    assert not await store.consume("same", 200.0)  # ... but still refused
    assert not await store.consume("older", 150.0)  # and so is any state expiring before it
    assert not await store.consume("b", 210.0)
    now[0] = 215.0  # "b" expired: its record goes, nothing else
    assert await store.consume("e", 240.0)
    assert len(store) == 3 and not await store.consume("c", 220.0)
    with pytest.raises(ValueError, match="at least 1"):
        MemoryUsedStates(0)


# === 2. what a state carries =====================================================================


PAD = "x" * 150_000


def padded(**content: Any) -> dict[str, Any]:
    """An accept answer padded with 150 KB in extra fields, inside and outside its content."""
    return {"action": "accept", "content": {**content, "padding": PAD}, "padding": PAD, "_meta": {"pad": PAD}}


@pytest.mark.usefixtures("booking_retries")
async def test_padded_answers_do_not_grow_the_state() -> None:
    """150 KB of extra fields in each answer: the next state grows by well under 1 KB; the call books."""
    app = booking_app()
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 1) as (m,):
            requests, state1 = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            requests, state2 = input_required(
                await m.call("book_table", FULL, responses={key: padded(accept_alternative=True, date="2025-12-27")},
                             state=state1)
            )
            assert len(state2) - len(state1) < 1024, len(state2) - len(state1)
            key, _ = only(requests)
            result = complete(
                await m.call("book_table", FULL, responses={key: padded(accept_alternative=True)}, state=state2)
            )
    assert result["structuredContent"]["status"] == "booked"
    assert result["structuredContent"]["date"] == "2025-12-28"


def long_answers_server(cleaned: list[str]) -> Server:
    server = Server("long", state_key=KEY)
    server.sealer = StateSealer(KEY, max_bytes=4096)

    @server.tool()
    async def three_values(ctx: Context) -> str:
        values = []
        try:
            for n in (1, 2, 3):
                answer = await ctx.elicit(f"Value {n}?", VALUE_FORM)
                assert isinstance(answer, Accepted)
                values.append(answer.value["value"])
        finally:
            cleaned.append("three_values")
        return ",".join(values)

    return server


async def test_answers_too_large_to_carry_end_the_call_with_a_tool_error() -> None:
    """A call whose own (valid) answers would make a state over the sealer's max_bytes ends at once
    with a tool error saying so; nothing stays parked, and no oversized state is handed out."""
    cleaned: list[str] = []
    server = long_answers_server(cleaned)
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(server, 1) as (m,):
            requests, state = input_required(await m.call("three_values"))
            key, _ = only(requests)
            requests, state = input_required(
                await m.call("three_values", responses={key: accept(value="a" * 1000)}, state=state)
            )
            key, _ = only(requests)
            result = complete(await m.call("three_values", responses={key: accept(value="b" * 3000)}, state=state))
            assert result["isError"] is True
            assert "too large" in text_of(result) and "three_values" in text_of(result)
            await wait_until(lambda: cleaned == ["three_values"])
            assert len(server.parking) == 0


# === 3. late answers =============================================================================


async def test_a_late_answer_to_a_dropped_call_is_cancelled_and_books_nothing() -> None:
    """The person answers after the elicitation timeout: the parked call was dropped at the timeout
    (nothing left), and the late retry replays to ``status: "cancelled"``; nothing is booked."""
    app = booking(elicitation_timeout=0.3)
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 1) as (m,):
            requests, state = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            await wait_until(lambda: len(app.server.parking) == 0, timeout=TIMEOUT)
            msg = await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=state)
            result = complete(msg)
            assert result["structuredContent"]["status"] == "cancelled" and "later" in text_of(result)
            assert len(app.server.parking) == 0
    assert not app.bookings


async def test_a_late_answer_to_a_parked_call_is_cancelled_and_books_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The retry comes after the question's timeout but before the park is dropped (the server's
    clock jumped): the parked call goes on with ``Cancelled("timeout")``; nothing is booked."""
    app = booking(elicitation_timeout=120)
    with anyio.fail_after(TIMEOUT):
        async with modern_peers(app.server, 1) as (m,):
            requests, state = input_required(await m.call("book_table", FULL))
            key, _ = only(requests)
            assert len(app.server.parking) == 1
            later = types.SimpleNamespace(time=lambda: time.time() + 200)
            monkeypatch.setattr(minimcp.server.mrtr.rounds, "time", later)
            # (the retry is taken over by the read loop)
            monkeypatch.setattr(minimcp.server.mrtr.takeover, "time", later)
            msg = await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=state)
            assert status_of(msg) == "cancelled"
            assert len(app.server.parking) == 0
    assert not app.bookings


async def test_a_late_answer_in_a_gathered_round_is_cancelled_timeout() -> None:
    """``ctx.gather`` on 2026-07-28: a late round gives ``Cancelled("timeout")`` for each question."""
    server = Server("gather")
    seen: list[Any] = []

    @server.tool()
    async def both(ctx: Context) -> str:
        got = await ctx.gather(timeout=0.3, first=Elicit("First?", NAME_FORM), second=Elicit("Second?", NAME_FORM))
        seen.append(got)
        return "done"

    with anyio.fail_after(TIMEOUT):
        async with modern_peers(server, 1) as (m,):
            requests, state = input_required(await m.call("both"))
            await wait_until(lambda: len(server.parking) == 0, timeout=TIMEOUT)
            answers = {k: accept(name="Ada") for k in requests}
            assert text_of(complete(await m.call("both", responses=answers, state=state))) == "done"
    assert seen == [{"first": Cancelled("timeout"), "second": Cancelled("timeout")}]


# === the same over Streamable HTTP ===============================================================


def http_retry(key: str, state: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"name": "book_table", "arguments": FULL, "inputResponses": {key: answer}, "requestState": state}


@pytest.mark.usefixtures("booking_retries")
async def test_http_a_used_state_is_refused_and_concurrent_retries_book_once() -> None:
    """Over HTTP: a finished round's state again -> 400 / -32602; four concurrent POSTs with one
    state -> one booking; a retry from another HTTP client resumes the call and the owner's is refused."""
    app = booking_app()
    answer = accept(accept_alternative=True)
    with anyio.fail_after(TIMEOUT):
        async with serving(app.server) as (url, http_app):
            async with over_http.modern_http(url) as m:
                key, _, state = over_http.input_required(await m.call("book_table", FULL))
                assert over_http.complete_text(await m.call("book_table", FULL, responses={key: answer}, state=state))
                r = await m.request("tools/call", http_retry(key, state, answer))
                assert over_http.error_of(r, 400, -32602)["error"]["data"] == USED

                key, _, state = over_http.input_required(await m.call("book_table", FULL))
                statuses: list[int] = []

                async def retry() -> None:
                    async with over_http.modern_http(url) as other:
                        statuses.append((await other.request("tools/call", http_retry(key, state, answer))).status_code)

                async with anyio.create_task_group() as tg:
                    for _ in range(4):
                        tg.start_soon(retry)
                assert sorted(statuses) == [200, 400, 400, 400]

                key, _, state = over_http.input_required(await m.call("book_table", FULL))
                async with over_http.modern_http(url) as other:
                    assert (await other.request("tools/call", http_retry(key, state, answer))).status_code == 200
                r = await m.request("tools/call", http_retry(key, state, answer))
                assert over_http.error_of(r, 400, -32602)["error"]["data"] == USED
            assert http_app.session_count == 0 and len(app.server.parking) == 0
    assert len(app.bookings) == 3


@pytest.mark.usefixtures("booking_retries")
async def test_http_padded_answers_do_not_grow_the_state() -> None:
    app = booking_app()
    with anyio.fail_after(TIMEOUT):
        async with serving(app.server) as (url, _), over_http.modern_http(url) as m:
            key, _, state1 = over_http.input_required(await m.call("book_table", FULL))
            key, _, state2 = over_http.input_required(
                await m.call("book_table", FULL, responses={key: padded(accept_alternative=True, date="2025-12-27")},
                             state=state1)
            )
            assert len(state2) - len(state1) < 1024, len(state2) - len(state1)
            reply = await m.call("book_table", FULL, responses={key: padded(accept_alternative=True)}, state=state2)
    assert reply["result"]["structuredContent"]["status"] == "booked"


async def test_http_a_late_answer_is_cancelled_and_the_parked_call_is_gone() -> None:
    """Over HTTP: the parked call is gone once its timeout passes (the POST long ended); the late
    retry ends the call ``cancelled``; nothing booked, nothing held."""
    app = booking(elicitation_timeout=0.3)
    with anyio.fail_after(TIMEOUT):
        async with serving(app.server) as (url, http_app), over_http.modern_http(url) as m:
            key, _, state = over_http.input_required(await m.call("book_table", FULL))
            await wait_until(lambda: len(app.server.parking) == 0, timeout=TIMEOUT)
            reply = await m.call("book_table", FULL, responses={key: accept(accept_alternative=True)}, state=state)
            assert reply["result"]["structuredContent"]["status"] == "cancelled"
            assert http_app.session_count == 0 and len(app.server.parking) == 0
    assert not app.bookings
