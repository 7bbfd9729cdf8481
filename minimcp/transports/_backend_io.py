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
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol

import anyio

from minimcp.core._backend import running_loop

__all__ = [
    "FutureWaker",
    "NativeEvent",
    "SocketWaits",
    "checkpoint",
    "end_wait",
    "native_clock",
    "native_event_class",
    "native_socket_waits",
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
