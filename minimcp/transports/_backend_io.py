"""The backends' own pieces only transports use: native events and clock, socket waits, an HTTP response's wait.

The rest of the contact with asyncio and trio is :mod:`minimcp.core._backend` (the session layer's,
which transports use too). Each piece here is looked up once by its owner, so a hot path goes straight to the running
backend's own objects: the events and clock of the HTTP and WebSocket transports, the socket waits
of minimcp's HTTP server, and the HTTP response's wait in the ASGI ``receive()`` (ended early
without cancelling anything: on asyncio by a future of its own, relayed by
:func:`minimcp.core._backend.relayed_wait`, the one place a private attribute of asyncio is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import select
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol

import anyio

from minimcp.core._backend import running_loop

__all__ = [
    "FutureWaker",
    "NativeEvent",
    "ReadinessWatch",
    "SocketWaits",
    "checkpoint",
    "end_wait",
    "native_cancel_scope_class",
    "native_clock",
    "native_event_class",
    "native_socket_waits",
    "native_task_group",
    "readiness_watch",
    "trio_cancel_scope",
]


# --- the running backend's own event, clock and socket waits (looked up once by their owners) --------


class NativeEvent(Protocol):
    """What ``asyncio.Event`` and ``trio.Event`` share: ``set()`` and ``await wait()``."""

    def set(self) -> None: ...

    async def wait(self) -> Any: ...


def native_event_class() -> Callable[[], NativeEvent]:
    """The running backend's own event class, looked up once by its caller.

    ``anyio.Event()`` looks the backend up at each creation; an owner that makes many
    events (an HTTP session's inbox) keeps this instead. Such an event belongs to the
    event loop it was first awaited in, as anyio's does.
    """
    if running_loop() is not None:
        return asyncio.Event
    import trio

    return trio.Event


class SocketWaits(NamedTuple):
    """A backend's waits for a socket to be readable / writable, and what one ended by ``notify_closing`` raises."""

    readable: Callable[[Any], Awaitable[None]]
    writable: Callable[[Any], Awaitable[None]]
    closed: type[Exception]


def native_socket_waits() -> SocketWaits:
    """The running backend's :class:`SocketWaits`, looked up once (minimcp's HTTP server): on trio its own (anyio's
    add two coroutine frames to each wait, ~390 bytes while an HTTP response waits), on asyncio anyio's."""
    if running_loop() is not None:
        return SocketWaits(anyio.wait_readable, anyio.wait_writable, anyio.ClosedResourceError)
    import trio

    return SocketWaits(trio.lowlevel.wait_readable, trio.lowlevel.wait_writable, trio.ClosedResourceError)


class ReadinessWatch:
    """trio on Linux: sockets waited on until readable through one epoll of its own, watched by one task.

    trio's ``wait_readable`` keeps, for each socket waited on, three coroutine frames, a closure and an
    entry of its I/O manager (~1.1 KB). minimcp's HTTP server waits here instead while a response waits
    for its client to leave (one per open call): the socket in this epoll (the kernel's memory), a dict
    entry and one frame (~0.5 KB). :meth:`run` (one task of the server) wakes a waiter when its socket is
    readable (data, the peer's close, an error); :meth:`wake` wakes it at once, and nothing else waiting
    on the socket. Level-triggered, and a socket leaves the epoll when its waiter is woken or cancelled,
    so a socket is in it only while someone waits, and never once closed.

    A socket can also be watched with no task at all (:meth:`call_when_readable`): a function of its
    owner is called, in :meth:`run`'s task, once it is readable (a parked HTTP response: the server's
    connection keeps no task while the response stays open, see ``minimcp.transports.h1_server``).
    """

    __slots__ = ("_epoll", "_lowlevel", "_waiting")

    def __init__(self) -> None:
        import trio

        self._epoll = select.epoll()
        self._lowlevel = trio.lowlevel
        # fd -> the task waiting for it to be readable, or the function to call then (call_when_readable)
        self._waiting: dict[int, Any] = {}

    async def run(self) -> None:
        """Wake the waiters of the sockets that are readable, until cancelled; then the epoll is closed."""
        epoll = self._epoll
        try:
            while True:
                await self._lowlevel.wait_readable(epoll.fileno())
                for fd, _ in epoll.poll(0):
                    self.wake(fd)
        finally:
            epoll.close()
            # A waiter the stop did not cancel (shielded) is woken: it waits again with trio's own wait (a
            # function watching a socket is called: its owner finds the watch closed, see call_when_readable).
            waiting, self._waiting = self._waiting, {}
            for waiter in waiting.values():
                self._resume(waiter)

    async def readable(self, fd: int) -> None:
        """Wait until ``fd`` is readable, or :meth:`wake`; one waiter per socket. After :meth:`run` has
        ended (the server stopped; a waiter shielded from that), trio's own wait."""
        lowlevel = self._lowlevel
        if self._epoll.closed:
            await lowlevel.wait_readable(fd)
            return
        self._epoll.register(fd, select.EPOLLIN)  # (readable, or the peer closed, or an error)
        task = self._waiting[fd] = lowlevel.current_task()
        await lowlevel.wait_task_rescheduled(functools.partial(self._abort, fd, task))

    def call_when_readable(self, fd: int, callback: Callable[[], object]) -> bool:
        """Call ``callback()`` (in :meth:`run`'s task; it must not raise) once ``fd`` is readable, or at
        :meth:`wake`; one watcher per socket, and the socket leaves the epoll before the call (to go on
        watching, call this again). False, and nothing is watched, once :meth:`run` has ended."""
        if self._epoll.closed:
            return False
        self._epoll.register(fd, select.EPOLLIN)
        self._waiting[fd] = callback
        return True

    def drop(self, fd: int, callback: Callable[[], object]) -> None:
        """Stop watching ``fd`` for ``callback`` (:meth:`call_when_readable`) without calling it."""
        if self._waiting.get(fd) == callback:  # (==: a bound method is made anew at each lookup)
            del self._waiting[fd]
            self._forget(fd)

    def wake(self, fd: int) -> bool:
        """End the wait on ``fd`` (or call its watcher); False if none waits here (see :meth:`readable`)."""
        waiter = self._waiting.pop(fd, None)
        if waiter is None:
            return False
        self._forget(fd)
        self._resume(waiter)
        return True

    def _resume(self, waiter: Any) -> None:
        """A task parked in :meth:`readable` is rescheduled; a watcher's function is called."""
        if isinstance(waiter, self._lowlevel.Task):
            self._lowlevel.reschedule(waiter)
        else:
            waiter()

    def _abort(self, fd: int, task: Any, _: Any) -> Any:
        """``task``'s wait was cancelled (the entry is taken out only if it is still its: a socket closed
        while waited on leaves the epoll, and its number may be a new socket's, waited on by another)."""
        if self._waiting.get(fd) is task:
            del self._waiting[fd]
            self._forget(fd)
        return self._lowlevel.Abort.SUCCEEDED

    def _forget(self, fd: int) -> None:
        with contextlib.suppress(OSError, ValueError):  # (the epoll closed: the server stops)
            self._epoll.unregister(fd)


def readiness_watch() -> ReadinessWatch | None:
    """A :class:`ReadinessWatch` on trio on Linux (epoll); else ``None``: the backend's own waits serve."""
    if running_loop() is not None or not sys.platform.startswith("linux"):
        return None
    return ReadinessWatch()


def native_task_group() -> contextlib.AbstractAsyncContextManager[Any]:
    """The running backend's own task group: on trio a nursery (``start_soon`` without anyio's wrapper: a task
    starts in ~5 µs against ~17 µs), on asyncio anyio's. Both have ``start_soon`` and ``cancel_scope.cancel()``
    (minimcp's HTTP server: a task per connection, and per parked response that ends)."""
    if running_loop() is not None:
        return anyio.create_task_group()
    import trio

    return trio.open_nursery()


def native_cancel_scope_class() -> Callable[[], Any]:
    """The running backend's own cancel scope class, looked up once (trio's: ~4.8 µs to make, enter and leave,
    against anyio's ~7.5 µs; asyncio has none of its own: anyio's). Both have ``cancel()`` and are context managers."""
    if running_loop() is not None:
        return anyio.CancelScope
    import trio

    return trio.CancelScope


def native_clock() -> Callable[[], float]:
    """The running backend's clock (the one ``anyio.current_time`` reads), looked up once by its caller."""
    loop = running_loop()
    if loop is not None:
        return loop.time
    import trio

    return trio.current_time


async def checkpoint() -> None:
    """``anyio.lowlevel.checkpoint()`` without its backend lookup (asyncio: ``sleep(0)``, as anyio does)."""
    if running_loop() is not None:
        await asyncio.sleep(0)
    else:
        import trio

        await trio.lowlevel.checkpoint()


def trio_cancel_scope() -> Any:
    """trio: a native cancel scope (an HTTP response's wait in ``receive()``; no anyio wrapper per response)."""
    import trio

    return trio.CancelScope()


#: What an HTTP response's wait in ``receive()`` is ended with on asyncio (see :func:`end_wait`): completing
#: it wakes that wait at once and with no race (on trio a cancel scope, which is not one of these).
FutureWaker = asyncio.Future


def end_wait(waker: Any) -> None:
    """End a wait made wakeable with ``waker``: an asyncio future of its own (completed, never cancelled), a function
    that ends it (an ASGI server's, called) or a trio cancel scope (cancelled).

    See :func:`minimcp.core._backend.relayed_wait`."""
    if isinstance(waker, asyncio.Future):
        if not waker.done():
            waker.set_result(None)
    elif callable(waker):
        waker()
    else:
        waker.cancel()
