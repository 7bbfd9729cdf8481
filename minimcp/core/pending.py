"""One session's pending table: the requests we sent that await a response, with their deadlines.

Every entry leaves the table exactly once, by one of :meth:`PendingTable.resolve` (a response
or an error response came), :meth:`~PendingTable.abandon` (the requester gave up),
:meth:`~PendingTable.expire` (its deadline passed) or :meth:`~PendingTable.close` (the
connection ended). Each hands back only what it took out (or says it took nothing), so the caller settles
the entry's cell once, whatever races. The table does no I/O and imports no event loop: the
cells come from :mod:`minimcp.core._backend`, the clock from the caller.

Calls parked on revision 2026-07-28 (``minimcp.server.mrtr.parking.Parking``) are not in this table. A
parked call is a whole handler waiting for the client's next round, not a request of ours
waiting for a response, and it belongs to the server, not to a session: on that revision a
retry may arrive on any HTTP request, with no session in between. Server side, asyncio, 10,000
waiting (``benchmarks/bench_modern.py --server-only``): about 2.07 KB per waiting call here, 3.12 KB
per parked call there (its task and the tool's suspended frames); ``benchmarks/README.md``,
"Revision 2026-07-28", says when and how this was measured.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from minimcp.core.deadlines import Deadlines
from minimcp.wire.jsonrpc import RequestId
from minimcp.wire.types import ProgressParams

__all__ = ["PendingBudget", "PendingTable", "ProgressWatch"]


class PendingBudget:
    """A bound on pending requests shared by several sessions (a whole server's)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


@dataclasses.dataclass(frozen=True, slots=True)
class ProgressWatch:
    """How a request wants its progress notifications handled (see :meth:`Session.request
    <minimcp.core.session.Session.request>`)."""

    token: int | str
    callback: Callable[[ProgressParams], None] | None = None
    reset_timeout: bool = False


class _Entry(Protocol):
    id: RequestId
    progress: int | str | None
    deadline: float
    laned: bool
    timeout: float
    started: float


C = TypeVar("C", bound=_Entry)


class PendingTable(Generic[C]):
    """Pending requests by id, their deadlines, and the progress tokens that route to them.

    Args:
        budget: The bound shared with other sessions (each entry counts once while held).
    """

    __slots__ = ("budget", "cells", "deadlines", "progress")

    def __init__(self, budget: PendingBudget) -> None:
        self.budget = budget
        self.cells: dict[RequestId, C] = {}
        #: The one deadline structure (FIFO lanes plus a heap; see :mod:`minimcp.core.deadlines`).
        self.deadlines: Deadlines[C] = Deadlines()
        #: progress token -> (entry, what to do with its progress)
        self.progress: dict[int | str, tuple[C, ProgressWatch]] = {}

    def __len__(self) -> int:
        return len(self.cells)

    def __bool__(self) -> bool:
        return bool(self.cells) or bool(self.deadlines)

    def holds(self, cell: C) -> bool:
        """Whether ``cell`` is still pending (not yet taken out by any path)."""
        return self.cells.get(cell.id) is cell

    def open(self, cell: C, now: float, timeout: float | None) -> bool:
        """Register ``cell`` under its id (its clock started unless ``timeout`` is ``None``).

        Returns True when its deadline is sooner than any the timer waits for (wake it).
        """
        cell.deadline = math.inf
        cell.laned = False
        self.cells[cell.id] = cell
        self.budget.used += 1
        if timeout is None:
            return False
        cell.started = now
        cell.timeout = timeout
        return self.deadlines.add(cell, now, timeout)

    def watch(self, cell: C, watch: ProgressWatch) -> None:
        """Route progress carrying ``watch.token`` to ``cell`` while it is pending."""
        cell.progress = watch.token
        self.progress[watch.token] = (cell, watch)

    def progressed(self, token: int | str, now: float, max_time: float) -> tuple[ProgressWatch | None, bool]:
        """Progress carrying ``token`` came: the watch it goes to (``None``: its request is over),
        and whether the deadline moved sooner than what the timer waits for (it never does:
        a deadline is only pushed back, up to ``started + max_time``)."""
        entry = self.progress.get(token)
        if entry is None:
            return None, False
        cell, watch = entry
        moved = False
        if watch.reset_timeout and self.holds(cell) and cell.deadline != math.inf:
            new = min(now + cell.timeout, cell.started + max_time)
            moved = new > cell.deadline and self.deadlines.move(cell, new)
        return watch, moved

    def resolve(self, id_: RequestId) -> C | None:
        """Take out the entry a response with ``id_`` answers (``None``: unknown, late or duplicate)."""
        cell = self.cells.pop(id_, None)
        if cell is not None:  # (as _out, inline: every response comes this way)
            self.budget.used -= 1
            self.deadlines.forget(cell)
            if cell.progress is not None:
                self.progress.pop(cell.progress, None)
        return cell

    def abandon(self, cell: C) -> bool:
        """Take ``cell`` out because its requester gave up (False: it had already left)."""
        if self.cells.get(cell.id) is not cell:
            return False
        del self.cells[cell.id]
        self._out(cell)
        return True

    def expire(self, now: float, hold: bool, max_time: float) -> list[C]:
        """Take out the entries whose deadline has passed, and return them (the caller settles each).

        ``hold``: a person is answering a question of the peer's, so due entries are pushed
        back by their timeout instead, up to ``started + max_time`` in total.
        """
        out: list[C] = []
        for cell in self.deadlines.due(now):
            if self.cells.get(cell.id) is not cell:  # pragma: no cover - resolution always forgets the deadline
                continue
            hard = cell.started + max_time
            if hold and now < hard:
                self.deadlines.move(cell, min(now + cell.timeout, hard))  # the timer looks again next
                continue
            del self.cells[cell.id]
            self.budget.used -= 1
            self._drop_progress(cell)
            out.append(cell)
        return out

    def close(self) -> list[C]:
        """Take out every entry (the connection ended); the caller settles each."""
        cells = list(self.cells.values())
        self.cells.clear()
        self.budget.used -= len(cells)
        self.progress.clear()
        self.deadlines.clear()
        return cells

    def _out(self, cell: C) -> None:
        self.budget.used -= 1
        self.deadlines.forget(cell)
        self._drop_progress(cell)

    def _drop_progress(self, cell: C) -> None:
        if cell.progress is not None:
            self.progress.pop(cell.progress, None)
