"""asyncio: when the open questions of parked 2026-07-28 calls time out, one timer per event loop.

Used by :class:`minimcp.server.mrtr.run.Parking`: a parked run's questions are added when it waits and
let go of when they are answered; a run whose time is up has its answer cell settled as
:data:`TIMED_OUT`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import msgspec

from minimcp.core.deadlines import Deadlines

if TYPE_CHECKING:
    from minimcp.server.mrtr.run import Run

__all__ = ["TIMED_OUT", "Sweep"]

#: What a parked run's answer cell is settled with when its questions time out.
TIMED_OUT = msgspec.Raw(b"null")


class Sweep:
    """asyncio: when the open questions of parked calls time out, for every run of one event loop.

    The deadlines are a :class:`~minimcp.core.deadlines.Deadlines` (a FIFO lane per timeout: a question
    asked with the usual timeout is an append, an answered one goes stale where it is) served by
    one loop timer armed for the earliest: no timer handle per parked call, and none of the
    loop's timer-heap steps per round. Each run times out at its own deadline, as its own timer
    did (the timer is re-armed for whatever falls due next).
    """

    __slots__ = ("_deadlines", "_timer", "let_go", "loop")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self._deadlines: Deadlines[Run] = Deadlines()
        self._timer: Any = None
        #: ``let_go(run, run.pending_timeout)``: ``run``'s questions were answered (or it ended), it is not
        #: timed any more; the answered runs at the front of its lane go at once (the deadlines' own method).
        self.let_go = self._deadlines.let_go

    def add(self, run: Run, delay: float, laned: bool) -> None:
        """Time ``run``'s open questions out ``delay`` seconds from now (``laned``: ``delay`` is the
        questions' whole timeout, so the run falls due after every earlier one asked with it)."""
        now = self.loop.time()
        deadlines = self._deadlines
        if deadlines.add(run, now, delay) if laned else deadlines.move(run, now + delay):
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_at(run.deadline, self._due)

    def _due(self) -> None:
        self._timer = None
        deadlines = self._deadlines
        for run in deadlines.due(self.loop.time()):
            cell = run._answer_cell
            if cell is not None and not cell.done():  # (an asyncio future: the sweep is asyncio's)
                cell.set_result(TIMED_OUT)
        earliest = deadlines.earliest()
        if earliest != math.inf:
            self._timer = self.loop.call_at(earliest, self._due)
