"""A session's deadline timer, armed only while a deadline is ahead: a loop callback on asyncio, a task on trio.

:class:`DeadlineTimer` is a base of :class:`~minimcp.core.session.Session` (which sets the
attributes below). The deadlines themselves are in the session's pending table
(:mod:`minimcp.core.deadlines`); what falls due is handled by ``Requests._expire``
(:mod:`minimcp.core._requests`). An idle session has no timer at all: on asyncio the timer is
one ``loop.call_at`` handle, re-armed when a sooner deadline comes and cancelled on close;
on trio (no loop callbacks) it is a task in the session's task group, started with the
first deadline and ending when none is left. A standing timer task per session, as before,
cost about 4.3 KB per idle session (its anyio task, cancel scope and wake event).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc

from minimcp.core._backend import Cell
from minimcp.core.pending import PendingTable

__all__ = ["DeadlineTimer"]

logger = logging.getLogger("minimcp.session")


class DeadlineTimer:
    """The timer half of a session (the session sets these attributes and provides the methods)."""

    name: str
    now: Callable[[], float]
    _pending: PendingTable[Cell]
    _closed: bool
    _loop: Any
    _tg: anyio.abc.TaskGroup | None
    #: The loop's TimerHandle on asyncio; on trio ``True`` while its task runs. ``None``: no timer.
    _timer: Any
    #: trio: what wakes the timer task for a sooner deadline (while it waits).
    _timer_wake: anyio.Event | None

    # The session's (Requests._expire: take the due entries out and settle them; Session.close).
    _expire: Callable[[float], None]
    close: Callable[[], None]

    def _arm_timer(self) -> None:
        """A deadline came, or moved sooner than the timer waits for: have it fire by then."""
        if self._closed:
            return
        loop = self._loop
        if loop is None:  # trio (or not running yet: run() arms it)
            if self._timer is not None:
                wake = self._timer_wake
                if wake is not None:
                    wake.set()
            elif self._tg is not None and self._pending.deadlines:
                self._timer = True
                self._tg.start_soon(self._timer_task)
            return
        at = self._pending.deadlines.earliest()
        handle = self._timer
        if handle is not None:
            if handle.when() <= at:
                return
            handle.cancel()
        self._timer = None if at == math.inf else loop.call_at(at, self._on_timer)

    def _on_timer(self) -> None:
        """asyncio: the earliest deadline has come (a callback of the loop: no task, no scope)."""
        self._timer = None
        try:
            self._expire(self.now())
        except Exception:  # pragma: no cover - a failing timer ends the session, as a failing task would
            logger.exception("%s: the deadline timer failed", self.name)
            self.close()
            return
        self._arm_timer()

    async def _timer_task(self) -> None:
        """trio: serve the deadlines while any is ahead, then end (:meth:`_arm_timer` starts it again)."""
        try:
            while True:
                earliest = self._pending.deadlines.earliest()
                if earliest == math.inf:
                    return
                delay = earliest - self.now()
                if delay > 0:
                    wake = self._timer_wake = anyio.Event()
                    with anyio.move_on_after(delay):
                        await wake.wait()
                    self._timer_wake = None
                self._expire(self.now())
        finally:
            self._timer = None
            self._timer_wake = None
