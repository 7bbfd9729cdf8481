"""Revision 2026-07-28 on the server: where runs wait between rounds (:class:`Parking`), and when they time out.

A :class:`~minimcp.server.mrtr.run.Run` that asked questions is parked under its handle until the
retry carrying the answers takes it, the bound drops it (its retry then replays), or its questions
time out: on asyncio one :class:`Sweep` per event loop times every parked run out (no timer or
cancel scope per park); on trio the run's own cancel scope does.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from minimcp.core._backend import call_at, loop_clock, loop_closed, loop_of
from minimcp.core.deadlines import Deadlines
from minimcp.transports._ports import PARK_OWNER
from minimcp.wire import errors
from minimcp.wire.errors import McpError

if TYPE_CHECKING:
    from minimcp.server.mrtr.run import Run

__all__ = ["Parking", "Sweep"]

logger = logging.getLogger("minimcp.modern")


class Parking:
    """Suspended runs by handle, bounded: the oldest are dropped (their retries replay).

    Runs parked under a :data:`~minimcp.transports._ports.PARK_OWNER` also count against that owner's own
    bound, and (with authorization on) against its person's, the same bound: one more at either is refused
    with ``-32003`` (and its run cancelled).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._owner_of: dict[str, str] = {}  # handle -> owner, for runs parked under an owner
        self._person_of: dict[str, Hashable] = {}  # handle -> person, for runs parked under one (auth on)
        # owner (a client address) or person (a Principal.key tuple) -> how many of its runs are parked
        self._owned: dict[Hashable, int] = {}
        # asyncio: the parked runs' timeouts, one sweep per event loop (made with its first parked
        # run): the last one used, and every one by its loop (a server shared by loops in threads).
        self._sweep: Sweep | None = None
        self._sweeps: list[Sweep] = []

    def __len__(self) -> int:
        return len(self._runs)

    def park(self, run: Run) -> None:
        """Keep ``run`` until its retry takes it.

        Raises:
            McpError: ``-32003``: the client of the request being served has its bound of parked calls.
        """
        owner = PARK_OWNER.get()
        if owner is not None:
            key, bound, person = owner
            owned = self._owned
            mine = owned.get(key, 0)
            if mine >= bound or (person is not None and owned.get(person, 0) >= bound):
                run.stop()
                whose = "this client" if mine >= bound else "your account"
                raise McpError(
                    errors.SERVER_BUSY,
                    f"too many calls waiting for answers from {whose} (limit {bound}); answer or abandon one first",
                )
            owned[key] = mine + 1
            self._owner_of[run.handle] = key
            if person is not None:
                owned[person] = owned.get(person, 0) + 1
                self._person_of[run.handle] = person
        self._runs[run.handle] = run
        while len(self._runs) > self.limit:
            handle, oldest = self._runs.popitem(last=False)
            self._disown(handle)
            logger.info("dropping the oldest parked call (limit %d); its retry will replay", self.limit)
            oldest.stop()

    def time_out(self, run: Run, waiter: Any, delay: float, laned: bool) -> Sweep:
        """asyncio: time ``run``'s open questions out in ``delay`` seconds (see :class:`Sweep`), while it
        waits on ``waiter`` (a future of its loop); the sweep to tell when they are answered (its ``let_go``)."""
        loop = loop_of(waiter)
        sweep = self._sweep
        if sweep is None or sweep.loop is not loop:
            sweep = self.sweep_of(loop)
        sweep.add(run, delay, laned)
        return sweep

    def sweep_of(self, loop: Any) -> Sweep:
        """asyncio: the sweep of ``loop``'s parked runs (made with the first), now the last one used."""
        # (the sweeps of closed loops go: their runs ended with them)
        self._sweeps = sweeps = [s for s in self._sweeps if not loop_closed(s.loop)]
        sweep = next((s for s in sweeps if s.loop is loop), None)
        if sweep is None:
            sweep = Sweep(loop)
            sweeps.append(sweep)
        self._sweep = sweep
        return sweep

    def peek(self, handle: str) -> Run | None:
        """The run parked under ``handle`` (left parked)."""
        return self._runs.get(handle)

    def take(self, handle: str) -> Run | None:
        run = self._runs.pop(handle, None)
        if run is not None and self._owner_of:  # (no owners: nothing to disown, no call)
            self._disown(handle)
        return run

    def discard(self, run: Run) -> None:
        if self._runs.get(run.handle) is run:
            del self._runs[run.handle]
            if self._owner_of:
                self._disown(run.handle)

    def _disown(self, handle: str) -> None:
        self._uncount(self._owner_of.pop(handle, None))
        if self._person_of:
            self._uncount(self._person_of.pop(handle, None))

    def _uncount(self, key: Hashable | None) -> None:
        if key is not None:
            mine = self._owned[key] - 1
            if mine:
                self._owned[key] = mine
            else:
                del self._owned[key]


class Sweep:
    """asyncio: when the open questions of parked calls time out, for every run of one event loop.

    The deadlines are a :class:`~minimcp.core.deadlines.Deadlines` (a FIFO lane per timeout: a question
    asked with the usual timeout is an append, an answered one goes stale where it is) served by
    one loop timer armed for the earliest: no timer handle per parked call, and none of the
    loop's timer-heap steps per round. Each run times out at its own deadline, as its own timer
    did (the timer is re-armed for whatever falls due next).
    """

    __slots__ = ("_deadlines", "_timer", "let_go", "loop", "now")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.now = loop_clock(loop)
        self._deadlines: Deadlines[Run] = Deadlines()
        self._timer: Any = None
        #: ``let_go(run, run.pending_timeout)``: ``run``'s questions were answered (or it ended), it is not
        #: timed any more; the answered runs at the front of its lane go at once (the deadlines' own method).
        self.let_go = self._deadlines.let_go

    def add(self, run: Run, delay: float, laned: bool) -> None:
        """Time ``run``'s open questions out ``delay`` seconds from now (``laned``: ``delay`` is the
        questions' whole timeout, so the run falls due after every earlier one asked with it)."""
        now = self.now()
        deadlines = self._deadlines
        if deadlines.add(run, now, delay) if laned else deadlines.move(run, now + delay):
            if self._timer is not None:
                self._timer.cancel()
            self._timer = call_at(self.loop, run.deadline, self._due)

    def _due(self) -> None:
        self._timer = None
        deadlines = self._deadlines
        for run in deadlines.due(self.now()):
            run.out_of_time()
        earliest = deadlines.earliest()
        if earliest != math.inf:
            self._timer = call_at(self.loop, earliest, self._due)
