"""Which ``requestState`` tokens were already used: each is good for one retry (revision 2026-07-28).

A sealed state proves that this server issued it, not that nobody used it yet.
The server records the id of every state a retry brings (:meth:`StateSealer.state_id
<minimcp.server.mrtr.state.StateSealer.state_id>`) until that state expires, and refuses a state
whose id is recorded. The record sits behind :class:`UsedStates`, a one-method
store, so that several workers can share it: :class:`MemoryUsedStates` is the
in-process default; :class:`~minimcp.scaleout.redis_used_states.RedisUsedStates` keeps the
records in Redis (``SET key 1 NX PXAT expires_at``), so a state used on one worker is refused on every other.

A store that cannot answer raises :class:`StoreUnavailable`: the retry is refused
(``-32603``, "try again later") and the state stays unused. Never the other way: a
store that is down never lets a state through. The retry's checks, this one among them, are
:mod:`minimcp.server.mrtr.retry`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from minimcp.wire.errors import MinimcpError

if TYPE_CHECKING:
    pass

__all__ = ["MemoryUsedStates", "StoreUnavailable", "UsedStates"]

logger = logging.getLogger("minimcp.used_states")


class UsedStates(Protocol):
    """Where a server records the ``requestState`` tokens it has seen."""

    async def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` as used until ``expires_at`` (a ``time.time()`` value).

        Returns True for the first use of ``key``, and False for every later one
        (and, in a store that had to forget records early, for any state it can no
        longer vouch for). Must be atomic: of concurrent calls with one key, exactly
        one returns True.

        Raises:
            StoreUnavailable: the store could not tell (the retry is refused, the state
                stays unused).
        """
        ...


class StoreUnavailable(MinimcpError):
    """The store of used states cannot answer now (e.g. Redis is down): refuse the retry."""


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
        return self.consume_now(key, expires_at)

    def consume_now(self, key: str, expires_at: float) -> bool:
        """:meth:`consume` without a coroutine (no await in it: one event loop runs it atomically)."""
        expiry, order = self._expiry, self._order
        if order and expiry[order[0]] < (now := self._clock()):  # (_prune's first test: no call when nothing expired)
            self._prune(now)
        if expires_at <= self.floor or key in expiry:
            return False
        if len(expiry) >= self.limit:
            if self.floor == 0.0:
                logger.warning(
                    "%d requestState records held (the limit): the oldest are forgotten, and the states "
                    "they named are refused from now on", self.limit
                )
            oldest = self._order.popleft()
            self.floor = max(self.floor, self._expiry.pop(oldest))
        expiry[key] = expires_at
        order.append(key)
        return True

    def _prune(self, now: float) -> None:
        order, expiry = self._order, self._expiry
        while order and expiry[order[0]] < now:
            del expiry[order.popleft()]


