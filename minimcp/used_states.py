"""Which ``requestState`` tokens were already used: each is good for one retry (revision 2026-07-28).

A sealed state proves that this server issued it, not that nobody used it yet.
The server records the id of every state a retry brings (:meth:`StateSealer.state_id
<minimcp.state.StateSealer.state_id>`) until that state expires, and refuses a state
whose id is recorded. The record sits behind :class:`UsedStates`, a one-method
store, so that several workers can share it (say, ``SET key 1 NX PXAT expires_at``
on Redis); :class:`MemoryUsedStates` is the in-process default.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

__all__ = ["MemoryUsedStates", "UsedStates"]

logger = logging.getLogger(__name__)


class UsedStates(Protocol):
    """Where a server records the ``requestState`` tokens it has seen."""

    async def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` as used until ``expires_at`` (a ``time.time()`` value).

        Returns True for the first use of ``key``, and False for every later one
        (and, in a store that had to forget records early, for any state it can no
        longer vouch for). Must be atomic: of concurrent calls with one key, exactly
        one returns True.
        """
        ...


class MemoryUsedStates:
    """The used states of one process, kept until they expire, at most ``limit`` of them.

    The records are a dict of id -> expiry and a FIFO of ids: states are sealed with
    one TTL, so the oldest record is also the first to expire and pruning is a pop
    from the left. When the table is full, the oldest record is forgotten and every
    state expiring no later than it is refused from then on (``floor``): under a
    flood the oldest states stop working early, but no state works twice and newer
    calls go on.

    Args:
        limit: Records kept at most (``Limits.max_used_states``).
        clock: Wall-clock seconds, like the states' expiry times.
    """

    def __init__(self, limit: int, *, clock: Callable[[], float] = time.time) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._clock = clock
        self._expiry: dict[str, float] = {}
        self._order: deque[str] = deque()
        #: States expiring at or before this are refused (records forgotten at the limit).
        self.floor = 0.0

    def __len__(self) -> int:
        return len(self._expiry)

    async def consume(self, key: str, expires_at: float) -> bool:
        # No await before the check-and-set: one event loop runs it atomically.
        self._prune(self._clock())
        if expires_at <= self.floor or key in self._expiry:
            return False
        if len(self._expiry) >= self.limit:
            if self.floor == 0.0:
                logger.warning(
                    "%d requestState records held (the limit): the oldest are forgotten, and the states "
                    "they named are refused from now on", self.limit
                )
            oldest = self._order.popleft()
            self.floor = max(self.floor, self._expiry.pop(oldest))
        self._expiry[key] = expires_at
        self._order.append(key)
        return True

    def _prune(self, now: float) -> None:
        order, expiry = self._order, self._expiry
        while order and expiry[order[0]] < now:
            del expiry[order.popleft()]
