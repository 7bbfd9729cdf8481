"""What a session chooses once so that each request and message enters less Python code (issue #17's walk).

``benchmarks/tools/walk.py`` counts the file entries of one elicitating call; these tests pin the
choices that keep three of them off it: a handler task starts through the loop's own
``create_task``, a pending request's cell comes from a factory that is the cell class itself,
and a message handed to the transport goes straight to its ``send_nowait`` while the session
has nothing to check or record. Each choice keeps the behaviour it replaces (shown here too).
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from minimcp.core._backend import AsyncioCell, Handlers, TrioCell, cell_factory, running_loop
from minimcp.core.session import Session
from minimcp.core.trace import WireTrace
from minimcp.transports.memory import memory_pair
from minimcp.wire.jsonrpc import Notification, Request
from tests.helpers import RawPeer


class _Echo:
    def handle_request(self, session: Session, request: Request) -> Any:
        return self._echo(request)

    @staticmethod
    async def _echo(request: Request) -> Any:
        return msgspec.json.decode(request.params or b"{}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        pass  # pragma: no cover - none is sent here


async def test_a_handler_task_starts_through_the_loops_own_create_task() -> None:
    live: dict[Any, Any] = {}
    ran = anyio.Event()

    async def body() -> None:
        ran.set()

    async def blocked() -> None:
        await anyio.sleep_forever()

    async with Handlers(live, lambda: None) as handlers:
        loop = running_loop()
        if loop is not None:
            assert handlers.start == loop.create_task  # no function of minimcp's in between
        live[1] = handlers.start(body())
        live[2] = handlers.start(blocked())
        with anyio.fail_after(30):
            await ran.wait()
        live[2].cancel()  # the handle cancels its task; the block's end awaits it
    assert not live


async def test_a_detached_task_schedules_no_done_callback_and_ended_ones_are_let_go() -> None:
    """A 2026-07-28 run's task (``start_detached``) gets no done callback (the loop ran one more step per
    call for it); the tasks that ended are let go by sweeps, so the set holding them stays within about
    twice the tasks still running plus ``_FIRST_SWEEP``."""
    from minimcp.core import _backend

    ended = [0]
    release = anyio.Event()

    async def quick() -> None:
        ended[0] += 1

    async def held() -> None:
        await release.wait()
        ended[0] += 1

    async with Handlers({}, lambda: None) as handlers:
        loop = running_loop()
        held_handles = [handlers.start_detached(held()) for _ in range(10)]
        for n in range(1, 1001):
            handle = handlers.start_detached(quick())
            if loop is not None:
                assert not handle._callbacks  # type: ignore[attr-defined]  # (the future's own list)
            if n % 50 == 0:
                with anyio.fail_after(30):
                    while ended[0] < n:
                        await anyio.lowlevel.checkpoint()
        if loop is not None:
            assert len(handlers._runs) <= 2 * 10 + _backend._FIRST_SWEEP + 50  # (10 held, 50 since a wait)
        assert len(held_handles) == 10
        release.set()
        with anyio.fail_after(30):
            while ended[0] < 1010:
                await anyio.lowlevel.checkpoint()


async def test_a_cell_comes_from_the_cell_class_itself() -> None:
    loop = running_loop()
    make = cell_factory(loop)
    if loop is None:
        assert make is TrioCell
        return
    assert make is AsyncioCell and "__init__" not in vars(AsyncioCell)  # the future's own C __init__
    cell = make()
    assert cell.get_loop() is loop
    assert cell.cancel()  # no sink set: cancelling tells nobody, and works
    answered = make()
    answered.settle(msgspec.Raw(b"1"), None)
    assert await answered.wait() == msgspec.Raw(b"1")


async def test_sending_goes_straight_to_the_transport_while_nothing_needs_checking() -> None:
    a, b = memory_pair()
    session = Session(a, _Echo())
    lines: list[str] = []
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        peer = RawPeer(b)
        assert vars(session)["_sent_now"] == a.send_nowait  # the transport's own, no call of the session's
        assert (await peer.request(1, "echo", {"x": 1}))["result"] == {"x": 1}

        session.trace = WireTrace(lines.append)  # a trace records what is sent: the checking method again
        assert "_sent_now" not in vars(session)
        assert (await peer.request(2, "echo", {"x": 2}))["result"] == {"x": 2}
        assert any('"id": 2' in line or '"id":2' in line for line in lines if "send" in line)

        session.trace = None
        assert vars(session)["_sent_now"] == a.send_nowait
        session.close()
    # Closed: nothing is handed over any more.
    assert "_sent_now" not in vars(session)
    assert session._sent_now(b'{"jsonrpc":"2.0","method":"x"}', related=None) is False


def test_the_asyncio_stdio_read_loop_waits_on_the_transports_future_not_a_coroutine() -> None:
    """The read loop takes messages with ``receive_or_wait`` (bytes, or a future to await): one
    call per message, waiting or not; ``receive`` (a coroutine per wait) is never entered."""
    import asyncio
    import os
    import socket

    from minimcp.core.config import Limits
    from minimcp.transports._stdio_asyncio import LoopStdio

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        transport = await LoopStdio.open(theirs.fileno(), os.dup(theirs.fileno()), Limits())
        assert isinstance(transport.receive_or_wait(), asyncio.Future)  # nothing there yet

        async def never(*_: Any) -> bytes:
            raise AssertionError("the read loop entered receive()")

        transport.receive = never  # type: ignore[method-assign]
        session = Session(transport, _Echo())
        runner = loop.create_task(session.run())
        replies = b""
        for i in (1, 2, 3):  # one at a time: the loop waits on the transport's future in between
            ours.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"i":%d}}\n' % (i, i))
            while replies.count(b"\n") < i:
                replies += await asyncio.wait_for(loop.sock_recv(ours, 65536), 30)
        assert [msgspec.json.decode(line)["result"] for line in replies.splitlines()] == [{"i": 1}, {"i": 2}, {"i": 3}]
        ours.shutdown(socket.SHUT_WR)  # the end of input ends the session
        await asyncio.wait_for(runner, 30)
        ours.close()
        theirs.close()

    asyncio.run(main())


async def test_a_request_that_waited_for_room_leaves_the_table_when_its_awaiter_is_cancelled() -> None:
    """After waiting for room, the requester awaits the cell itself, as on the fast path: its
    cancellation takes the entry out at once (asyncio: within ``task.cancel()``), so a response
    in the same turn is an unknown one and never meets a finished cell; the peer is told."""
    from minimcp.core.session import Session as _Session
    from minimcp.wire.jsonrpc import Response

    a, b = memory_pair(buffer=1)
    session = _Session(a, _Echo())
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        assert a.send_nowait(b"filler")  # the output is full: the request waits for room
        handle: list[Any] = []
        outcome: list[str] = []

        async def ask() -> None:
            with anyio.CancelScope() as scope:
                handle.append(scope)
                loop = running_loop()
                if loop is not None:
                    import asyncio

                    handle.append(asyncio.current_task())
                await session.request("slow", timeout=None)
            outcome.append("cancelled" if scope.cancelled_caught else "answered")

        tg.start_soon(ask)
        with anyio.fail_after(30):
            assert await b.receive() == b"filler"
            req = msgspec.json.decode(await b.receive())
            assert req["method"] == "slow"
            if len(handle) == 2:  # asyncio: until the requester awaits its cell
                while getattr(session._pending.cells.get(req["id"]), "sink", None) is None:  # noqa: ASYNC110 - no event
                    await anyio.sleep(0.01)
        if len(handle) == 2:  # asyncio: cancel the task itself, answer in the same turn
            handle[1].cancel()
            assert session.pending_count == 0  # taken out by the cancellation, before the answer
            session._route(Response(id=req["id"], result=msgspec.Raw(b"{}")))
            assert session.stats.unknown_responses == 1
        else:
            handle[0].cancel()
        with anyio.fail_after(30):
            cancel = msgspec.json.decode(await b.receive())
        assert cancel["method"] == "notifications/cancelled" and cancel["params"]["requestId"] == req["id"]
        with anyio.fail_after(30):
            while not outcome:  # noqa: ASYNC110 - no event to wait on
                await anyio.sleep(0.01)
        assert session.pending_count == 0 and session.stats.cancelled_by_us == 1
        tg.cancel_scope.cancel()
