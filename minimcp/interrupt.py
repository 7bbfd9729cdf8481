"""Ctrl-C in a program minimcp runs itself (``Server.run``, the command line): stop quietly, exit status 130."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio

__all__ = ["EXIT_INTERRUPTED", "is_interrupt", "run_until_interrupted"]

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


def run_until_interrupted(
    func: Callable[[*Ts], Awaitable[T]],
    *args: *Ts,
    backend: str,
    what: str,
    logger: logging.Logger,
) -> T:
    """``anyio.run(func, *args)``; Ctrl-C ends it with one log line naming ``what``, then ``SystemExit(130)``.

    On asyncio the first Ctrl-C cancels the main task and everything unwinds; on trio
    ``KeyboardInterrupt`` comes out of the task group wrapped in an exception group. Either
    way the caller sees neither a traceback nor a hang.
    """
    try:
        return anyio.run(func, *args, backend=backend)
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
    logger.warning("interrupted (ctrl-C): %s stopped", what)
    raise SystemExit(EXIT_INTERRUPTED)
