"""The backend module: cells settle once, and no task a session or a stdio transport started outlives it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from minimcp.core import _backend
from minimcp.core.config import Limits
from minimcp.core.session import Session
from minimcp.transports.memory import memory_pair
from minimcp.transports.stdio import StdioTransport, stdio_client
from minimcp.wire.errors import ConnectionClosed, McpError
from minimcp.wire.jsonrpc import Notification, Request
from tests.helpers import RawPeer
from tests.helpers.stdio import GatedSink, Silent


def _trio_tasks(task: Any) -> Iterator[Any]:
    yield task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            yield from _trio_tasks(child)


def live_tasks() -> set[Any]:
    """Every task of the running event loop (trio: the whole task tree, system tasks too)."""
    if _backend.backend_name() == "asyncio":
        return {t for t in asyncio.all_tasks() if not t.done()}
    import trio

    return set(_trio_tasks(trio.lowlevel.current_root_task()))


async def test_backend_name_names_the_running_loop(anyio_backend: str) -> None:
    assert _backend.backend_name() == anyio_backend


async def test_the_session_clock_is_the_backends_own_the_one_anyio_reads(anyio_backend: str) -> None:
    # running_backend hands a session the loop's clock on asyncio and trio's own on trio, so a request
    # sent reads it without anyio's backend lookup; it is the clock anyio.current_time reads.
    _loop, _cells, clock = _backend.running_backend()
    assert clock is not None and clock is not anyio.current_time
    before = anyio.current_time()
    now = clock()
    assert before <= now <= anyio.current_time()


async def test_a_cell_settles_once_and_its_waiter_gets_the_first_outcome() -> None:
    cell = _backend.new_cell(_backend.running_loop())
    got: list[Any] = []

    async def waiter() -> None:
        got.append(await cell.wait())

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.lowlevel.checkpoint()
        cell.settle(msgspec.Raw(b"1"), None)
        cell.settle(msgspec.Raw(b"2"), None)
        cell.settle(None, McpError(-1, "late"))
    assert [bytes(r) for r in got] == [b"1"]


async def test_a_cell_settled_with_an_error_raises_it() -> None:
    cell = _backend.new_cell(_backend.running_loop())
    cell.settle(None, McpError(-32001, "timed out"))
    with pytest.raises(McpError, match="timed out"):
        await cell.wait()


class SlowToStop:
    """Handlers that wait until cancelled, then take a while to clean up (shielded)."""

    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0

    def handle_request(self, session: Session, request: Request) -> Any:
        return self._handle()

    async def _handle(self) -> None:
        self.started += 1
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.2)
            self.stopped += 1

    def handle_notification(self, session: Session, notification: Notification) -> None:
        pass


async def test_after_a_session_closes_no_task_it_spawned_survives() -> None:
    before = live_tasks()
    a, b = memory_pair()
    handlers = SlowToStop()
    session = Session(a, handlers)
    peer = RawPeer(b)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        for i in range(5):
            await peer.send({"jsonrpc": "2.0", "id": i, "method": "block"})

        async def ask() -> None:
            with pytest.raises(ConnectionClosed):
                await session.request("question")

        tg.start_soon(ask)
        with anyio.fail_after(30):
            while handlers.started < 5 or session.pending_count < 1:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert len(live_tasks() - before) >= 5  # the handlers (and the read loop, the timer, the asker)
        session.close()
        with anyio.fail_after(30):
            await session.wait_closed()
        # run() has returned: every handler has finished its clean-up, none is left running.
        assert handlers.stopped == 5
        assert session.holds_nothing()
    assert live_tasks() - before == set()


async def test_after_stdio_client_exits_its_writer_task_is_gone(tmp_path: Any) -> None:
    # A child that never reads its stdin: the writer blocks on a full pipe until the close.
    code = "import sys, time; time.sleep(60)"
    limits = Limits(shutdown_timeout=0.2, stream_buffer_bytes=1 << 24)
    before = live_tasks()
    with anyio.fail_after(30):
        async with stdio_client([sys.executable, "-c", code], limits=limits) as transport:
            for _ in range(64):
                assert transport.send_nowait(b"x" * 65536)
            await anyio.sleep(0.05)  # the writer is now stuck on the pipe
    assert live_tasks() - before == set()


@pytest.mark.parametrize("owner", ["task group", "transport"])
async def test_a_stdio_transport_closed_with_its_writer_stuck_leaves_no_task(owner: str) -> None:
    before = live_tasks()
    sink = GatedSink()  # never opened: the writer stays stuck in its first write
    limits = Limits(shutdown_timeout=0.1)
    async with anyio.create_task_group() as tg:
        transport = StdioTransport(Silent(), sink, limits, tg if owner == "task group" else None)
        assert transport.send_nowait(b'{"jsonrpc": "2.0", "method": "m"}')
        with anyio.fail_after(30):
            await sink.entered.wait()
            await transport.aclose()
        # Closed: the writer has ended (not merely been told to), whoever held it.
        assert live_tasks() - before == set()


async def test_a_repeated_cancellation_from_the_peer_does_not_cut_the_handlers_clean_up_short() -> None:
    a, b = memory_pair()
    handlers = SlowToStop()
    session = Session(a, handlers)
    peer = RawPeer(b)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "block"})
        with anyio.fail_after(30):
            while handlers.started < 1:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        await peer.send(cancel)
        await anyio.sleep(0.05)  # the handler is now in its (shielded) clean-up
        await peer.send(cancel)
        with anyio.fail_after(30):
            while session.inflight_count:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert handlers.stopped == 1  # its clean-up ran to the end
        assert session.stats.cancelled_by_peer == 2
        tg.cancel_scope.cancel()


def private_loop_attributes(source: str) -> list[str]:
    """``asyncio._x`` / ``trio._x`` and ``._asyncio_x`` / ``._trio_x`` attributes in ``source`` (as written)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        if node.attr.startswith(("_asyncio", "_trio")) or (
            isinstance(owner, ast.Name) and owner.id in ("asyncio", "trio")
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_checker_sees_private_loop_attributes() -> None:
    source = "asyncio._get_running_loop\nwake._asyncio_future_blocking = True\ntrio._core\nasyncio.Future\nx._y\n"
    assert private_loop_attributes(source) == [
        "line 1: asyncio._get_running_loop", "line 2: wake._asyncio_future_blocking", "line 3: trio._core",
    ]


def test_no_private_asyncio_or_trio_attribute_outside_the_backend_module() -> None:
    import pathlib

    import minimcp

    package = pathlib.Path(minimcp.__file__).resolve().parent
    found = {
        str(path.relative_to(package)): reaches
        for path in sorted(package.rglob("*.py"))
        if path.name != "_backend.py" and (reaches := private_loop_attributes(path.read_text()))
    }
    assert found == {}
