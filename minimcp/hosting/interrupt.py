"""Ctrl-C and SIGTERM in a program minimcp runs itself (``Server.run``, the command line): stop quietly.

Ctrl-C ends with exit status 130, as shells expect of an interrupted program. SIGTERM (what a
service manager, a container runtime or an MCP client ending a stdio server sends) is a request to
stop: the server is cancelled and winds down as on any cancellation (an HTTP server stops
accepting and gives open connections its graceful time), and the call returns.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio

__all__ = ["EXIT_INTERRUPTED", "is_interrupt", "run_until_stopped"]

#: The shells' status for a program ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for member in exc.exceptions for leaf in _leaves(member)]
    return [exc]


def _is_cancellation(exc: BaseException) -> bool:
    # asyncio.CancelledError, trio.Cancelled: named here without importing either loop.
    kind = type(exc)
    return kind.__name__ in ("CancelledError", "Cancelled") and kind.__module__.split(".")[0] in ("asyncio", "trio")


def is_interrupt(exc: BaseException) -> bool:
    """``KeyboardInterrupt``, alone or in exception groups (trio wraps it) beside nothing but cancellations.

    A group that also holds a real error is not an interrupt: that error must not be hidden.
    """
    leaves = _leaves(exc)
    return any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves) and all(
        isinstance(leaf, KeyboardInterrupt) or _is_cancellation(leaf) for leaf in leaves
    )


async def _stop_on_sigterm(scope: anyio.CancelScope, stopped: list[bool]) -> None:
    """Cancel ``scope`` at the first SIGTERM (and note it in ``stopped``)."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            stopped.append(True)
            scope.cancel()
            return


def _can_watch_sigterm() -> bool:
    """Signal handlers can be set in the main thread only, and there is no SIGTERM to receive on Windows."""
    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


def run_until_stopped(
    func: Callable[[*Ts], Awaitable[T]],
    *args: *Ts,
    backend: str,
    what: str,
    logger: logging.Logger,
    interrupted: str | None = None,
) -> T | None:
    """``anyio.run(func, *args)`` until it returns, SIGTERM stops it, or Ctrl-C interrupts it.

    SIGTERM (POSIX, main thread): ``func`` is cancelled, one line naming ``what`` is logged,
    and this returns ``None``. Ctrl-C: one line (``interrupted``, or one naming ``what``), then
    ``SystemExit(130)``; on asyncio the first Ctrl-C cancels the main task and everything
    unwinds, on trio ``KeyboardInterrupt`` comes out of the task group wrapped in an exception
    group. Either way the caller sees neither a traceback nor a hang.
    """
    stopped: list[bool] = []

    async def main() -> T | None:
        if not _can_watch_sigterm():
            return await func(*args)
        result: T | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_sigterm, tg.cancel_scope, stopped)
            result = await func(*args)
            tg.cancel_scope.cancel()  # (it returned by itself: the watch ends)
        return result

    try:
        result = anyio.run(main, backend=backend)
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
        logger.warning("%s", interrupted or f"interrupted (ctrl-C): {what} stopped")
        raise SystemExit(EXIT_INTERRUPTED) from None
    if stopped:
        logger.warning("terminated (SIGTERM): %s stopped", what)
    return result

