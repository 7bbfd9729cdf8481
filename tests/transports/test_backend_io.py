"""The transports' backend pieces: the HTTP server's ReadinessWatch (trio on Linux), on asyncio and trio."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import anyio
import anyio.abc
import pytest

from minimcp.transports._backend_io import ReadinessWatch, native_cancel_scope_class, native_task_group, readiness_watch


def test_the_watch_is_made_on_trio_on_linux_only() -> None:
    # (outside any event loop: not asyncio, so trio's, on Linux)
    assert isinstance(readiness_watch(), ReadinessWatch) is sys.platform.startswith("linux")


async def test_the_watch_wakes_a_waiter_on_data_on_the_peer_s_close_and_on_wake_and_forgets_a_cancelled_wait(
    anyio_backend: str,
) -> None:
    watch = readiness_watch()
    if anyio_backend != "trio" or not sys.platform.startswith("linux"):
        assert watch is None  # asyncio: its own waits (a reader of the selector) serve
        return
    assert watch is not None
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    fd = ours.fileno()
    woken: list[str] = []

    async def wait(why: str, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await watch.readable(fd)
        woken.append(why)

    async def waiting() -> None:
        while fd not in watch._waiting:  # the watch's own state: the waiter got there
            await anyio.lowlevel.checkpoint()

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.run)
                # data
                async with anyio.create_task_group() as waits:
                    await waits.start(wait, "data")
                    peer.send(b"x")
                assert woken == ["data"] and ours.recv(10) == b"x"
                # wake, with nothing to read
                async with anyio.create_task_group() as waits:
                    await waits.start(wait, "wake")
                    await waiting()
                    watch.wake(fd)
                    watch.wake(fd)  # (nothing waits any more: nothing happens)
                assert woken == ["data", "wake"]
                # a cancelled wait leaves the socket out of the epoll: it can be waited on again
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    await watch.readable(fd)
                async with anyio.create_task_group() as waits:
                    waits.start_soon(wait, "after a cancelled wait")
                    await waiting()
                    waits.cancel_scope.cancel()
                assert fd not in watch._waiting
                assert woken == ["data", "wake"]
                # the peer's close
                async with anyio.create_task_group() as waits:
                    await waits.start(wait, "closed")
                    peer.close()
                assert woken == ["data", "wake", "closed"] and ours.recv(10) == b""
                tg.cancel_scope.cancel()
    finally:
        ours.close()
        peer.close()
    with pytest.raises(ValueError):  # run's end closed its epoll
        watch._epoll.fileno()


async def test_a_cancelled_wait_never_takes_the_entry_of_a_later_waiter_on_the_same_fd_number(
    anyio_backend: str,
) -> None:
    # A socket closed while waited on leaves the epoll (the kernel's doing) and its number may be a new socket's:
    # the old wait, cancelled later, must not take the new waiter's entry (it would never be woken again).
    watch = readiness_watch()
    if watch is None:
        assert anyio_backend != "trio" or not sys.platform.startswith("linux")
        return
    old, old_peer = socket.socketpair()
    new, new_peer = socket.socketpair()
    for s in (old, new):
        s.setblocking(False)
    fd = old.fileno()
    woken: list[str] = []

    async def wait(why: str, scope: anyio.CancelScope, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        with scope:
            task_status.started()
            await watch.readable(fd)
            woken.append(why)

    async def parked(before: Any) -> None:
        while watch._waiting.get(fd) in (None, before):  # the waiter got there
            await anyio.lowlevel.checkpoint()

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.run)
                first, second = anyio.CancelScope(), anyio.CancelScope()
                await tg.start(wait, "old", first)
                await parked(None)
                old_task = watch._waiting[fd]
                os.dup2(new.fileno(), fd)  # the number is the new socket's now (the old one left the epoll)
                await tg.start(wait, "new", second)
                await parked(old_task)
                first.cancel()  # the old wait gives up
                new_peer.send(b"x")
                while "new" not in woken:
                    await anyio.lowlevel.checkpoint()
                tg.cancel_scope.cancel()
    finally:
        for s in (old, old_peer, new, new_peer):
            s.close()
    assert woken == ["new"]


async def test_a_waiter_the_stop_did_not_cancel_is_woken_and_waits_with_trio_s_own_wait(anyio_backend: str) -> None:
    watch = readiness_watch()
    if watch is None:
        assert anyio_backend != "trio" or not sys.platform.startswith("linux")
        return
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    fd = ours.fileno()
    returns: list[str] = []

    async def shielded_waits() -> None:
        with anyio.CancelScope(shield=True), anyio.fail_after(10):  # (its own bound: the stop cannot end it)
            await watch.readable(fd)  # woken when run ends
            returns.append("woken")
            await watch.readable(fd)  # run has ended: trio's own wait
            returns.append("readable")

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(shielded_waits)
                async with anyio.create_task_group() as running:
                    running.start_soon(watch.run)
                    while fd not in watch._waiting:
                        await anyio.lowlevel.checkpoint()
                    running.cancel_scope.cancel()  # the stop
                while not returns:
                    await anyio.lowlevel.checkpoint()
                peer.send(b"x")
    finally:
        ours.close()
        peer.close()
    assert returns == ["woken", "readable"]


async def test_the_watch_calls_a_watcher_once_when_readable_not_after_drop_and_refuses_once_run_has_ended(
    anyio_backend: str,
) -> None:
    watch = readiness_watch()
    if anyio_backend != "trio" or not sys.platform.startswith("linux"):
        assert watch is None
        return
    assert watch is not None
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    fd = ours.fileno()
    called: list[str] = []
    called_again = anyio.Event()

    def watcher() -> None:
        called.append(ours.recv(10).decode())
        if len(called) == 2:
            called_again.set()

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.run)
                assert watch.call_when_readable(fd, watcher)
                peer.send(b"a")
                while not called:  # noqa: ASYNC110 - the watch's own task calls it
                    await anyio.sleep(0.01)
                assert fd not in watch._waiting  # called once: the socket left the epoll
                # dropped before the data comes: not called
                assert watch.call_when_readable(fd, watcher)
                watch.drop(fd, lambda: None)  # (another watcher's drop leaves it)
                assert fd in watch._waiting
                watch.drop(fd, watcher)
                peer.send(b"b")
                await anyio.sleep(0.05)
                assert called == ["a"] and fd not in watch._waiting
                # watched again: the data waiting since is seen at once; wake() calls it too
                assert watch.call_when_readable(fd, watcher)
                await called_again.wait()
                assert called == ["a", "b"]
                assert watch.call_when_readable(fd, lambda: called.append("woken"))
                assert watch.wake(fd) and called == ["a", "b", "woken"]
                tg.cancel_scope.cancel()
        assert not watch.call_when_readable(fd, watcher)  # run has ended (the epoll is closed)
    finally:
        ours.close()
        peer.close()


async def test_the_server_s_task_group_and_cancel_scopes_are_the_backend_s_own(anyio_backend: str) -> None:
    scope_class = native_cancel_scope_class()
    started: list[int] = []

    async def child(i: int) -> None:
        started.append(i)
        await anyio.sleep_forever()

    async with native_task_group() as tasks:
        if anyio_backend == "trio":
            import trio

            assert scope_class is trio.CancelScope and isinstance(tasks, trio.Nursery)
        else:
            assert scope_class is anyio.CancelScope and isinstance(tasks, anyio.abc.TaskGroup)
        tasks.start_soon(child, 1)
        with scope_class() as scope:
            scope.cancel()
            await anyio.sleep_forever()  # (cancelled: the scope catches it)
        while not started:  # noqa: ASYNC110 - the child's own progress
            await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()  # ends the child
    assert started == [1]
