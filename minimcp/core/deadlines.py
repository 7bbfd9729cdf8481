"""When each pending request times out: one structure per session, no timer per request (sans-I/O).

Requests sent with the same timeout fall due in the order they were sent, because the
clock only moves forward. So each timeout value gets a lane, a FIFO of entries: adding
one is an append, and the earliest deadline of a lane is its head (a lane is a list while
short, then a deque). No tuple, heap step or sequence number per request. Deadlines that
leave that order (pushed back by progress or while a person answers, or lanes beyond
``max_lanes`` distinct timeouts) go to one heap.

Finished requests are not searched for: their entry's ``deadline`` becomes infinity and the
stale entry is dropped when it reaches the front, or when stale entries outnumber live ones
(and exceed ``COMPACT_AFTER``, 1024), all at once.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from typing import Generic, Protocol, TypeVar

#: Distinct timeout values that get a FIFO lane each; entries with other timeouts share the heap.
MAX_LANES = 32
#: Stale entries (finished requests) tolerated before a compaction, if they also outnumber live ones.
COMPACT_AFTER = 1024
#: A lane is a list up to this many entries (taking its head off moves at most these), then a deque: a deque's
#: first block is 760 bytes per session and timeout, 92 bytes per pending call at 10 calls a session.
SMALL_LANE = 32

_INF = math.inf


class Timed(Protocol):
    """What an entry carries (the session's pending requests)."""

    deadline: float
    #: Its live place is its lane (not the heap).
    laned: bool


E = TypeVar("E", bound=Timed)


class Deadlines(Generic[E]):
    """The deadlines of one session's pending requests.

    Args:
        max_lanes: Distinct timeout values that get a lane; the rest share the heap.
    """

    def __init__(self, max_lanes: int = MAX_LANES) -> None:
        self._lanes: dict[float, list[E] | deque[E]] = {}
        self._heap: list[tuple[float, int, E]] = []
        self._seq = itertools.count()
        self._max_lanes = max_lanes
        self._entries = 0
        self._stale = 0
        # What the timer waits for: the earliest deadline when it last looked, or an earlier one
        # added since (which is when the timer must be woken).
        self._target = math.inf

    def __len__(self) -> int:
        """Entries held, stale ones included."""
        return self._entries

    def add(self, entry: E, now: float, timeout: float) -> bool:
        """Start ``entry``'s clock: it falls due at ``now + timeout``.

        Returns True when that is sooner than what the timer waits for (wake it).
        """
        entry.deadline = deadline = now + timeout
        self._entries += 1
        lane = self._lanes.get(timeout)
        if lane is None:
            if len(self._lanes) >= self._max_lanes:
                return self._push(entry, deadline)
            lane = self._lanes[timeout] = []
        elif len(lane) >= SMALL_LANE and type(lane) is list:
            lane = self._lanes[timeout] = deque(lane)
        entry.laned = True
        lane.append(entry)
        if deadline < self._target:  # (as _sooner: one call less per request)
            self._target = deadline
            return True
        return False

    def move(self, entry: E, deadline: float) -> bool:
        """Give ``entry`` a new deadline (True: wake the timer, as for :meth:`add`)."""
        self.forget(entry)
        self._entries += 1
        return self._push(entry, deadline)

    def forget(self, entry: E) -> None:
        """``entry`` is over (or moves): its entry goes stale."""
        if entry.deadline == math.inf:
            return
        entry.deadline = math.inf
        entry.laned = False
        self._stale += 1
        if self._stale > COMPACT_AFTER and self._stale * 2 > self._entries:
            self._compact()

    def let_go(self, entry: E, timeout: float | None) -> None:
        """:meth:`forget` ``entry``, added with ``timeout``; then the stale entries at the front of that
        timeout's lane go (not the whole of :meth:`earliest`: the one lane the entry was in).

        What the timer waits for is left as it was: at worst it wakes once for nothing, and
        :meth:`earliest` then finds the next live deadline.
        """
        if entry.deadline == _INF:
            return
        entry.deadline = _INF
        laned = entry.laned
        if laned:
            entry.laned = False
            lane = self._lanes.get(timeout)  # type: ignore[arg-type]
            if lane and lane[0] is entry:
                # The usual answer: at its lane's front (answered about in the order asked). It goes,
                # and the stale entries behind it (as below, without counting it stale first).
                del lane[0]
                dropped = 0
                while lane and not lane[0].laned:
                    del lane[0]
                    dropped += 1
                self._entries -= dropped + 1
                if dropped:
                    self._stale -= dropped
                if self._stale > COMPACT_AFTER and self._stale * 2 > self._entries:
                    self._compact()
                return
        self._stale += 1
        if laned and lane is not None:
            dropped = 0
            while lane and not lane[0].laned:
                del lane[0]
                dropped += 1
            self._entries -= dropped
            self._stale -= dropped
        if self._stale > COMPACT_AFTER and self._stale * 2 > self._entries:
            self._compact()

    def earliest(self) -> float:
        """The earliest live deadline (infinity if none), which the timer then waits for; stale
        entries in front are dropped."""
        best = math.inf
        dropped = 0  # (counted here, taken off once: this runs once per answered 2026-07-28 round)
        for lane in self._lanes.values():
            while lane:
                head = lane[0]
                if head.laned:
                    if head.deadline < best:
                        best = head.deadline
                    break
                del lane[0]
                dropped += 1
        heap = self._heap
        while heap:
            deadline, _, entry = heap[0]
            if entry.deadline == deadline and not entry.laned:
                if deadline < best:
                    best = deadline
                break
            heapq.heappop(heap)
            dropped += 1
        if dropped:
            self._entries -= dropped
            self._stale -= dropped
        self._target = best
        return best

    def due(self, now: float) -> list[E]:
        """Take out the live entries due at ``now`` (each stops being timed: its deadline is infinity)."""
        out: list[E] = []
        for lane in self._lanes.values():
            while lane:
                head = lane[0]
                if head.laned and head.deadline > now:
                    break
                del lane[0]
                self._entries -= 1
                if head.laned:
                    head.laned = False
                    head.deadline = math.inf
                    out.append(head)
                else:
                    self._stale -= 1
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, _, entry = heapq.heappop(heap)
            self._entries -= 1
            if entry.deadline != deadline or entry.laned:
                self._stale -= 1
                continue
            entry.deadline = math.inf
            out.append(entry)
        return out

    def clear(self) -> None:
        self._lanes.clear()
        self._heap.clear()
        self._entries = self._stale = 0
        self._target = math.inf

    def _push(self, entry: E, deadline: float) -> bool:
        entry.deadline = deadline
        entry.laned = False
        heapq.heappush(self._heap, (deadline, next(self._seq), entry))
        return self._sooner(deadline)

    def _sooner(self, deadline: float) -> bool:
        if deadline < self._target:
            self._target = deadline
            return True
        return False

    def _compact(self) -> None:
        lanes: dict[float, list[E] | deque[E]] = {}
        for timeout, lane in self._lanes.items():
            live: list[E] | deque[E] = [e for e in lane if e.laned]
            if len(live) > SMALL_LANE:
                live = deque(live)
            if live:
                lanes[timeout] = live
        self._lanes = lanes
        self._heap = [item for item in self._heap if item[2].deadline == item[0] and not item[2].laned]
        heapq.heapify(self._heap)
        self._entries = sum(map(len, lanes.values())) + len(self._heap)
        self._stale = 0
