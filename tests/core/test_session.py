"""The session: routing, the pending table, deadlines, cancellation both ways, close."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import ConnectionClosed, Limits, McpError, RequestTimeout, TooManyPending
from minimcp.core.dispatch import Deferred
from minimcp.core.pending import PendingBudget, ProgressWatch
from minimcp.core.session import Session
from minimcp.core.transport import MessageTooLarge
from minimcp.transports.memory import memory_pair
from minimcp.wire.jsonrpc import Notification, Request
from tests.helpers import RawPeer


class Recorder:
    """A dispatcher whose handlers tests control."""

    def __init__(self) -> None:
        self.notifications: list[str] = []
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self.release = anyio.Event()

    def handle_request(self, session: Session, request: Request) -> Any:
        if request.method.startswith("deferred/"):
            self.started.append(request.id)
            return Finishing(self, request.method.removeprefix("deferred/"))
        return self._handle(session, request)

    async def _handle(self, session: Session, request: Request) -> Any:
        self.started.append(request.id)
        if request.method == "echo":
            return msgspec.json.decode(request.params or b"{}")
        if request.method == "block":
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(request.id)
                raise
            return {"released": True}
        if request.method == "crash":
            raise RuntimeError("secret internal detail /etc/passwd")
        if request.method == "fail":
            raise McpError(-32099, "custom failure", {"why": "test"})
        raise McpError(-32601, f"Method not found: {request.method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        self.notifications.append(notification.method)


class Finishing(Deferred):
    """A two-step answer: the session awaits the work, then ``finish`` shapes (or refuses) it."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: Recorder, how: str) -> None:
        super().__init__(self._work(recorder, how))
        self.recorder = recorder

    @staticmethod
    async def _work(recorder: Recorder, how: str) -> Any:
        if how == "raise":
            raise ValueError("shaped by finish")
        if how == "block":
            await recorder.release.wait()
        return {"worked": how}

    def finish(self, value: Any, error: BaseException | None) -> Any:
        self.recorder.notifications.append(f"finish {type(error).__name__ if error else value}")
        if isinstance(error, ValueError):
            return {"error_became": str(error)}
        return super().finish(value, error)


async def start(tg: anyio.abc.TaskGroup, *, limits: Limits | None = None) -> tuple[Session, RawPeer, Recorder]:
    a, b = memory_pair(limits=limits)
    rec = Recorder()
    session = Session(a, rec, limits=limits)
    await tg.start(session.run)
    return session, RawPeer(b), rec


async def test_request_resolves_with_the_matching_response() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        results: dict[int, Any] = {}

        async def call(n: int) -> None:
            results[n] = msgspec.json.decode(await session.request("m", {"n": n}))

        for n in range(3):
            tg.start_soon(call, n)
        sent = [await peer.recv() for _ in range(3)]
        assert session.pending_count == 3
        for msg in reversed(sent):  # answer in reverse order
            await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"echo": msg["params"]["n"]}})
        with anyio.fail_after(5):
            while len(results) < 3:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        assert results == {n: {"echo": n} for n in range(3)}
        assert session.pending_count == 0
        tg.cancel_scope.cancel()


async def test_ids_match_by_exact_type_and_unknown_ids_are_counted() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        got: list[Any] = []

        async def call() -> None:
            got.append(msgspec.json.decode(await session.request("m")))

        tg.start_soon(call)
        msg = await peer.recv()
        assert isinstance(msg["id"], int)
        # the same id as a string is a different id: dropped and counted
        await peer.send({"jsonrpc": "2.0", "id": str(msg["id"]), "result": {"wrong": True}})
        await peer.send({"jsonrpc": "2.0", "id": 999, "result": {}})
        await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"right": True}})
        await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"duplicate": True}})
        with anyio.fail_after(5):
            while not got or session.stats.unknown_responses < 3:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        assert got == [{"right": True}]
        assert session.stats.unknown_responses == 3
        tg.cancel_scope.cancel()


async def test_error_response_raises_mcp_error_with_code_and_data() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)

        async def answer() -> None:
            msg = await peer.recv()
            error = {"code": -32602, "message": "bad", "data": [1]}
            await peer.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})

        tg.start_soon(answer)
        with pytest.raises(McpError) as info:
            await session.request("m")
        assert (info.value.code, info.value.message, info.value.data) == (-32602, "bad", [1])
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("how", ["request", "start_request"])
async def test_timeout_raises_and_tells_the_peer_and_late_answer_is_harmless(how: str) -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        with pytest.raises(RequestTimeout):
            await getattr(session, how)("slow", timeout=0.05)
        req = await peer.recv()
        cancel = await peer.recv()
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"] == {"requestId": req["id"], "reason": "slow timed out after 0.05 s"}
        assert session.pending_count == 0
        await peer.send({"jsonrpc": "2.0", "id": req["id"], "result": {}})
        with anyio.fail_after(5):
            while session.stats.unknown_responses < 1:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        assert session.stats.timeouts == 1
        tg.cancel_scope.cancel()


async def test_per_call_timeout_overrides_session_default() -> None:
    limits = Limits(request_timeout=0.01)
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg, limits=limits)

        async def answer_late() -> None:
            msg = await peer.recv()
            await anyio.sleep(0.2)
            await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"ok": 1}})

        tg.start_soon(answer_late)
        raw = await session.request("m", timeout=60)
        assert msgspec.json.decode(raw) == {"ok": 1}
        with pytest.raises(RequestTimeout):
            await session.request("m")  # the 0.01 s default applies
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("how", ["request", "start_request"])
async def test_cancelling_the_waiter_removes_the_entry_and_tells_the_peer(how: str) -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        with anyio.move_on_after(0.1):
            await getattr(session, how)("m", timeout=None)
        req = await peer.recv()
        cancel = await peer.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": req["id"], "reason": "cancelled by the requester"},
        }
        assert session.pending_count == 0
        assert session.stats.cancelled_by_us == 1
        tg.cancel_scope.cancel()


async def test_pending_bound_raises_too_many_pending_before_sending() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg, limits=Limits(max_pending_outbound=2))
        for _ in range(2):
            tg.start_soon(session.request, "m")
        await peer.recv()
        await peer.recv()
        with pytest.raises(TooManyPending):
            await session.request("m")
        assert await peer.nothing_for(0.1)
        tg.cancel_scope.cancel()


async def test_a_deferred_answer_is_awaited_then_finished_in_every_case() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, rec = await start(tg)
        assert (await peer.request(1, "deferred/plain"))["result"] == {"worked": "plain"}
        assert (await peer.request(2, "deferred/raise"))["result"] == {"error_became": "shaped by finish"}
        await peer.send({"jsonrpc": "2.0", "id": 3, "method": "deferred/block"})
        with anyio.fail_after(5):
            while 3 not in rec.started:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        assert await peer.nothing_for(0.2)  # cancelled: finish saw it and let it through, no response
        assert session.inflight_count == 0
        cancelled = anyio.get_cancelled_exc_class().__name__
        assert rec.notifications == ["finish {'worked': 'plain'}", "finish ValueError", f"finish {cancelled}"]
        # awaited directly (the HTTP transport and the modern revision do), it does both steps too
        assert await Finishing(rec, "plain") == {"worked": "plain"}
        tg.cancel_scope.cancel()


async def test_a_timed_out_request_that_waited_for_room_is_sent_before_its_cancellation() -> None:
    a, b = memory_pair(buffer=1)
    session = Session(a, Recorder())
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        assert a.send_nowait(b"filler")  # the output is full: the next request waits for room
        outcome: list[str] = []

        async def ask() -> None:
            with pytest.raises(RequestTimeout):
                await session.request("slow", timeout=0.05)
            outcome.append("timed out")

        tg.start_soon(ask)
        with anyio.fail_after(30):  # the deadline passes while the request still waits for room
            while session.pending_count or not session.stats.timeouts:  # noqa: ASYNC110 - no event to wait on
                await anyio.sleep(0.01)
        assert await b.receive() == b"filler"
        req = msgspec.json.decode(await b.receive())
        assert req["method"] == "slow"  # the request went out once there was room...
        cancel = msgspec.json.decode(await b.receive())
        assert cancel["method"] == "notifications/cancelled"  # ...and only then its cancellation
        assert cancel["params"]["requestId"] == req["id"]
        with anyio.move_on_after(0.1):
            raise AssertionError(f"sent after the cancellation: {await b.receive()!r}")  # told once
        assert outcome == ["timed out"]
        tg.cancel_scope.cancel()


async def test_a_request_cancelled_in_the_same_read_leaves_nothing_behind() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        for _ in range(3):  # both lines wait together, so one turn of the read loop takes both
            assert peer.transport.send_nowait(b'{"jsonrpc":"2.0","id":"x","method":"block"}')
            cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}'
            assert peer.transport.send_nowait(cancel)
            assert await peer.nothing_for(0.1)  # no response to a cancelled request
            assert session.inflight_count == 0  # and its id is free again
        assert session.stats.cancelled_by_peer == 3
        assert (await peer.request("x", "echo", {"again": True}))["result"] == {"again": True}
        tg.cancel_scope.cancel()


async def test_the_memory_transport_fast_paths() -> None:
    a, b = memory_pair(buffer=2, limits=Limits(max_message_bytes=10))
    assert b.receive_nowait() is None
    assert a.send_nowait(b"one") and a.send_nowait(b"x" * 11)
    assert not a.send_nowait(b"three")  # the buffer is full: the caller waits in send
    assert b.receive_nowait() == b"one"
    with pytest.raises(MessageTooLarge):
        b.receive_nowait()
    a.close()
    assert not a.send_nowait(b"closed")
    with pytest.raises(anyio.EndOfStream):
        b.receive_nowait()


async def test_read_loop_never_waits_for_a_handler() -> None:
    async with anyio.create_task_group() as tg:
        _, peer, rec = await start(tg)
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "block"})
        reply = await peer.request(2, "echo", {"x": 1})
        assert reply == {"jsonrpc": "2.0", "id": 2, "result": {"x": 1}}
        rec.release.set()
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"released": True}}
        tg.cancel_scope.cancel()


async def test_peer_cancellation_stops_the_handler_and_sends_no_response() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, rec = await start(tg)
        await peer.send({"jsonrpc": "2.0", "id": "a", "method": "block"})
        with anyio.fail_after(5):
            while "a" not in rec.started:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}})
        with anyio.fail_after(5):
            while "a" not in rec.cancelled:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        assert await peer.nothing_for(0.2)
        assert session.inflight_count == 0
        assert session.stats.cancelled_by_peer == 1
        # unknown and malformed cancellations are ignored; the session keeps working
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "zzz"}})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
        assert (await peer.request(3, "echo", {}))["result"] == {}
        tg.cancel_scope.cancel()


async def test_initialize_cannot_be_cancelled() -> None:
    class SlowInit(Recorder):
        async def handle_request(self, session: Session, request: Request) -> Any:
            await anyio.sleep(0.1)
            return {"ok": True}

    a, b = memory_pair()
    peer = RawPeer(b)
    async with anyio.create_task_group() as tg:
        await tg.start(Session(a, SlowInit()).run)
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
        tg.cancel_scope.cancel()


async def test_inflight_bound_answers_busy() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, rec = await start(tg, limits=Limits(max_inflight_inbound=2))
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "block"})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "block"})
        reply = await peer.request(3, "echo", {})
        assert reply["id"] == 3 and reply["error"]["code"] == -32003
        assert session.stats.rejected_busy == 1
        rec.release.set()
        assert {(await peer.recv())["id"], (await peer.recv())["id"]} == {1, 2}
        tg.cancel_scope.cancel()


async def test_handler_errors_become_error_responses_without_internal_text() -> None:
    async with anyio.create_task_group() as tg:
        _, peer, _ = await start(tg)
        crash = await peer.request(1, "crash")
        assert crash["error"] == {"code": -32603, "message": "internal error"}
        assert "passwd" not in str(crash)
        fail = await peer.request(2, "fail")
        assert fail["error"] == {"code": -32099, "message": "custom failure", "data": {"why": "test"}}
        assert (await peer.request(3, "nope"))["error"]["code"] == -32601
        tg.cancel_scope.cancel()


async def test_parse_and_envelope_errors() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        await peer.send(b"{not json")
        parse = await peer.recv()
        assert parse["error"]["code"] == -32700 and "id" not in parse
        await peer.send({"jsonrpc": "1.0", "id": 5, "method": "echo"})
        bad = await peer.recv()
        assert bad["id"] == 5 and bad["error"]["code"] == -32600
        await peer.send({"jsonrpc": "2.0", "id": 1.5, "method": "echo"})
        bad = await peer.recv()
        assert bad["error"]["code"] == -32600 and "id" not in bad and "float" in bad["error"]["message"]
        await peer.send(b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]')
        batch = await peer.recv()
        assert batch["error"]["code"] == -32600 and "batch" in batch["error"]["message"]
        assert session.stats.invalid_messages == 4
        assert (await peer.request(9, "echo", {"still": "alive"}))["result"] == {"still": "alive"}
        tg.cancel_scope.cancel()


async def test_error_without_id_uses_null_on_older_revisions() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        session.protocol_version = "2025-06-18"
        await peer.send(b"{oops")
        assert (await peer.recv())["id"] is None
        tg.cancel_scope.cancel()


async def test_batches_are_processed_on_2025_03_26() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        session.protocol_version = "2025-03-26"
        await peer.send(
            b'[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}},'
            b'{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":2,"method":"initialize"},7]'
        )
        replies = [await peer.recv() for _ in range(3)]
        by_id = {r.get("id"): r for r in replies}
        assert by_id[1]["result"] == {"a": 1}
        assert by_id[2]["error"]["code"] == -32600
        assert by_id[None]["error"]["code"] == -32600
        tg.cancel_scope.cancel()


async def test_oversized_message_is_refused_and_session_continues() -> None:
    limits = Limits(max_message_bytes=200)
    async with anyio.create_task_group() as tg:
        _, peer, _ = await start(tg, limits=limits)
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"x": "y" * 500}})
        err = await peer.recv()
        assert err["error"]["code"] == -32600 and "200" in err["error"]["message"]
        assert (await peer.request(2, "echo", {"ok": 1}))["result"] == {"ok": 1}
        tg.cancel_scope.cancel()


async def test_close_resolves_every_pending_entry_and_cancels_handlers() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, rec = await start(tg)
        errors: list[BaseException] = []

        async def call() -> None:
            try:
                await session.request("m", timeout=30)
            except ConnectionClosed as exc:
                errors.append(exc)

        for _ in range(100):
            tg.start_soon(call)
        await peer.send({"jsonrpc": "2.0", "id": "h", "method": "block"})
        with anyio.fail_after(5):
            while session.pending_count < 100 or "h" not in rec.started:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        await peer.transport.aclose()  # the peer goes away
        await session.wait_closed()
        with anyio.fail_after(5):
            while len(errors) < 100:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        assert rec.cancelled == ["h"]
        assert session.holds_nothing()
        assert session.closed
        with pytest.raises(ConnectionClosed):
            await session.request("after")


async def test_local_close_fails_pending_requests() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        failures: list[BaseException] = []

        async def call() -> None:
            try:
                await session.request("m")
            except ConnectionClosed as exc:
                failures.append(exc)

        tg.start_soon(call)
        await peer.recv()
        session.close()
        await session.wait_closed()
        await anyio.sleep(0.01)
        assert len(failures) == 1
        assert session.holds_nothing()


async def test_notifications_reach_the_dispatcher() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, rec = await start(tg)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/something"})
        await peer.request(1, "echo", {})
        assert rec.notifications == ["notifications/something"]
        assert session.stats.notifications_received == 1
        tg.cancel_scope.cancel()


async def test_deadline_heap_is_compacted_when_requests_finish_early() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)

        async def answer_all(n: int) -> None:
            for _ in range(n):
                msg = await peer.recv()
                await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})

        tg.start_soon(answer_all, 3000)
        for _ in range(3000):
            await session.request("m", timeout=600)
        # finished requests leave no unbounded trail of stale deadlines
        assert len(session._pending.deadlines) <= 2100
        tg.cancel_scope.cancel()


async def test_human_wait_pauses_request_clocks() -> None:
    """An answer that comes six timeouts late, while a person is still answering, is taken."""
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        session.begin_human_wait()

        async def answer_late() -> None:
            msg = await peer.recv()
            await anyio.sleep(0.3)
            # Answered while the wait is still open: the clock must not have fired meanwhile.
            # (Ending the wait first would leave the answer a race against a 0.05 s clock.)
            await peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"late": True}})

        tg.start_soon(answer_late)
        with anyio.fail_after(30):
            raw = await session.request("m", timeout=0.05)
        session.end_human_wait()
        assert msgspec.json.decode(raw) == {"late": True}
        tg.cancel_scope.cancel()


async def test_pending_budget_is_shared_and_always_given_back() -> None:
    """A server-wide bound across sessions; every exit path (answer, timeout, cancel, close) returns its slot."""
    from minimcp.core.pending import PendingBudget

    budget = PendingBudget(3)
    a1, b1 = memory_pair()
    a2, b2 = memory_pair()
    s1 = Session(a1, Recorder(), budget=budget)
    s2 = Session(a2, Recorder(), budget=budget)
    p1, p2 = RawPeer(b1), RawPeer(b2)

    async def waiting(session: Session) -> None:
        with contextlib.suppress(ConnectionClosed):
            await session.request("m")

    async with anyio.create_task_group() as tg:
        await tg.start(s1.run)
        await tg.start(s2.run)
        tg.start_soon(waiting, s1)
        tg.start_soon(waiting, s1)
        await p1.recv()
        await p1.recv()
        with pytest.raises(RequestTimeout):
            await s2.request("slow", timeout=0.01)  # times out: its slot comes back
        assert [(await p2.recv())["method"] for _ in range(2)] == ["slow", "notifications/cancelled"]
        tg.start_soon(waiting, s2)
        answered = await p2.recv()
        assert budget.used == 3
        with pytest.raises(TooManyPending):
            await s2.request("one too many")
        await p2.send({"jsonrpc": "2.0", "id": answered["id"], "result": {}})
        with anyio.fail_after(5):
            while budget.used != 2:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        with anyio.move_on_after(0.05):
            await s2.request("cancelled locally", timeout=None)
        assert budget.used == 2
        s1.close()
        await s1.wait_closed()
        assert budget.used == 0
        tg.cancel_scope.cancel()


# --- endings of requests started without a coroutine (start_request) and read in bursts ---------------


def _collect_unretrieved(anyio_backend: str) -> list[dict[str, Any]]:
    """What asyncio's exception handler reports ("exception was never retrieved"); trio has none."""
    """Install a loop exception handler (asyncio) and return the list it fills."""
    seen: list[dict[str, Any]] = []
    if anyio_backend == "asyncio":
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: seen.append(ctx))
    return seen


# 1. params that fail to encode leave the pending entry, the shared budget and the progress watch behind
async def test_unencodable_params_leave_nothing_pending() -> None:
    budget = PendingBudget(10)
    a, _ = memory_pair()
    session = Session(a, Recorder(), budget=budget)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with pytest.raises((TypeError, msgspec.EncodeError)):
            await session.request("m", {"x": object()}, timeout=None, progress=ProgressWatch("tok"))
        assert session.pending_count == 0
        assert budget.used == 0
        assert not session._pending.progress
        tg.cancel_scope.cancel()


# 2a. a request that timed out while waiting for room, then cancelled: its future's exception is never retrieved
async def test_timed_out_while_waiting_for_room_then_cancelled_logs_nothing(anyio_backend: str) -> None:
    seen = _collect_unretrieved(anyio_backend)
    a, _ = memory_pair(buffer=1)
    session = Session(a, Recorder())
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        assert a.send_nowait(b"filler")  # the request has to wait for room

        with anyio.move_on_after(0.3):  # gives up after the 0.05 s timeout has fired
            await session.request("slow", timeout=0.05)
        assert session.pending_count == 0
        tg.cancel_scope.cancel()
    for _ in range(3):
        gc.collect()
        await anyio.lowlevel.checkpoint()
    assert [c["message"] for c in seen] == []


# 2b. a handler's nested request still waiting for room when the session closes
class Asker(Recorder):
    """A handler that sends a nested request and waits for it."""

    def handle_request(self, session: Session, request: Request) -> Any:
        return self._ask(session)

    async def _ask(self, session: Session) -> Any:
        self.started.append(1)
        return await session.request("nested", timeout=None, related="h")


async def test_close_with_a_nested_request_waiting_for_room_logs_nothing(anyio_backend: str) -> None:
    seen = _collect_unretrieved(anyio_backend)
    a, b = memory_pair(buffer=1)
    rec = Asker()
    session = Session(a, rec)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        await b.send(b'{"jsonrpc":"2.0","id":"h","method":"tools/call"}')
        assert a.send_nowait(b"filler")  # the output is full before the handler asks
        with anyio.fail_after(5):
            while not rec.started:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        assert session.pending_count == 1  # the nested request waits for room
        session.close()
        with anyio.fail_after(5):
            await session.wait_closed()
        tg.cancel_scope.cancel()
    for _ in range(3):
        gc.collect()
        await anyio.lowlevel.checkpoint()
    assert [c["message"] for c in seen] == []


# 3. trio: a request and its cancellation in one read, the handler needing no checkpoint
async def test_a_quick_request_cancelled_in_the_same_read_gets_no_response() -> None:
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        assert peer.transport.send_nowait(b'{"jsonrpc":"2.0","id":"x","method":"echo","params":{"a":1}}')
        cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}'
        assert peer.transport.send_nowait(cancel)
        with anyio.move_on_after(0.2):
            got = await peer.recv()
            raise AssertionError(f"response to a cancelled request: {got}")
        assert session.stats.cancelled_by_peer == 1
        tg.cancel_scope.cancel()


# 4. the read loop drains a burst without yielding: quick handlers never run, the burst is refused as busy
async def test_a_burst_of_quick_requests_is_not_refused_as_busy() -> None:
    a, b = memory_pair(buffer=1000)
    session = Session(a, Recorder(), limits=Limits(max_inflight_inbound=10))
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        for i in range(50):
            assert b.send_nowait(msgspec.json.encode({"jsonrpc": "2.0", "id": i, "method": "echo"}))
        with anyio.fail_after(5):
            out = [msgspec.json.decode(await b.receive()) for _ in range(50)]
        assert [m for m in out if "error" in m] == []
        assert session.stats.rejected_busy == 0
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # asyncio.wait_for is asyncio's own
async def test_asyncio_wait_for_around_start_request_ends_it_and_tells_the_peer(anyio_backend: str) -> None:
    seen = _collect_unretrieved(anyio_backend)
    async with anyio.create_task_group() as tg:
        session, peer, _ = await start(tg)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(session.start_request("m", timeout=None), 0.05)
        req = await peer.recv()
        assert (await peer.recv())["params"]["requestId"] == req["id"]
        assert session.pending_count == 0 and session.budget.used == 0

        tg.cancel_scope.cancel()
    gc.collect()
    await anyio.lowlevel.checkpoint()
    assert [c["message"] for c in seen] == []



class BusyLoopTransport:
    """A transport without a no-wait path whose ``send`` takes a few steps, on an event loop that
    is busy (other work holding the CPU) for ``busy`` seconds between the first two. The output
    always has room: only the loop is slow, as on a loaded machine."""

    def __init__(self, inner: Any, busy: float) -> None:
        self.inner = inner
        self.busy = busy
        self.slow_sends = 0

    async def send(self, message: bytes, *, related: Any = None) -> None:
        if b"notifications/cancelled" in message:
            self.slow_sends += 1
            await anyio.lowlevel.checkpoint()
            time.sleep(self.busy)  # noqa: ASYNC251 - the point: nothing else runs meanwhile
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
        await self.inner.send(message)

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("how", ["request", "start_request", "timeout"])
async def test_a_cancellation_notice_is_not_dropped_because_the_loop_was_busy(how: str) -> None:
    # On a loaded machine a scheduler turn can take seconds (seen: 3 s on trio). A notice used to
    # be given 1 s of wall time from before its first step, so it was dropped although the output
    # had room all along, and the peer never heard that the request was given up.
    a, b = memory_pair()
    transport = BusyLoopTransport(a, busy=1.5)
    session = Session(transport, Recorder())
    peer = RawPeer(b)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        if how == "timeout":
            with pytest.raises(RequestTimeout):
                await session.request("m", timeout=0.05)
        else:
            with anyio.move_on_after(0.1):
                await getattr(session, how)("m", timeout=None)
        req = await peer.recv()
        cancel = await peer.recv(timeout=30)
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"]["requestId"] == req["id"]
        assert transport.slow_sends == 1
        assert session.pending_count == 0
        tg.cancel_scope.cancel()


class StuckTransport(BusyLoopTransport):
    """The peer stopped reading: a notice never finds room."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, busy=0)
        self.reached = anyio.Event()

    async def send(self, message: bytes, *, related: Any = None) -> None:
        if b"notifications/cancelled" in message:
            self.slow_sends += 1
            self.reached.set()
            await anyio.sleep_forever()
        await self.inner.send(message)


@pytest.mark.parametrize("how", ["request", "start_request", "timeout"])
async def test_a_notice_the_output_never_takes_is_given_up_after_notice_timeout(how: str) -> None:
    a, b = memory_pair()
    transport = StuckTransport(a)
    session = Session(transport, Recorder(), limits=Limits(notice_timeout=0.2))
    peer = RawPeer(b)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(30):  # the requester is not held beyond the bound
            if how == "timeout":
                with pytest.raises(RequestTimeout):
                    await session.request("m", timeout=0.05)
            else:
                with anyio.move_on_after(0.1):
                    await getattr(session, how)("m", timeout=None)
        await peer.recv()
        with anyio.fail_after(30):
            await transport.reached.wait()
        assert transport.slow_sends == 1
        assert session.pending_count == 0 and session.budget.used == 0
        # the session still works
        tg.start_soon(session.request, "echo")
        req = await peer.recv()
        assert req["method"] == "echo"
        tg.cancel_scope.cancel()
