"""Which ``requestState`` tokens were already used: each is good for one retry (revision 2026-07-28).

A sealed state proves that this server issued it, not that nobody used it yet.
The server records the id of every state a retry brings (:meth:`StateSealer.state_id
<minimcp.server.mrtr.state.StateSealer.state_id>`) until that state expires, and refuses a state
whose id is recorded. The record sits behind :class:`UsedStates`, a one-method
store, so that several workers can share it: :class:`MemoryUsedStates` is the
in-process default; :class:`RedisUsedStates` keeps the records in Redis (``SET key 1
NX PXAT expires_at``), so a state used on one worker is refused on every other.

A store that cannot answer raises :class:`StoreUnavailable`: the retry is refused
(``-32603``, "try again later") and the state stays unused. Never the other way: a
store that is down never lets a state through. The retry's checks, this one among them, are
:mod:`minimcp.server.mrtr.retry`.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

import anyio
import anyio.abc
import anyio.lowlevel

from minimcp.scaleout._redis import RedisClient, safe_url
from minimcp.wire.errors import MinimcpError

__all__ = ["MemoryUsedStates", "RedisUsedStates", "StoreUnavailable", "UsedStates"]

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


class RedisUsedStates:
    """The used states of every worker of a service, in Redis, through ``coredis`` (extra ``minimcp[redis]``).

    Each record is ``SET <prefix><state id> 1 NX PXAT <expiry>``: atomic in Redis, so of
    concurrent retries with one state on any number of workers exactly one is let through,
    and Redis forgets the record on its own once the state has expired (plus ``clock_skew``,
    for workers whose clocks run ahead of Redis's). Nothing is held in the process.

    Lifecycle: the Redis client is opened by :meth:`run`, which keeps it until cancelled;
    every ``consume`` (from any number of concurrent tool calls) uses that one client.
    The Streamable HTTP app starts it in its task group for you
    (:meth:`minimcp.Server.run_background`); elsewhere, wrap your serving in
    ``async with RedisUsedStates(url) as used_states:`` (or start ``used_states.run``
    in your own task group with ``await tg.start(...)``). Several runners may share one
    store: one owns the client, the others wait to take over.

    Fails closed: while it is not running, or while Redis does not answer within
    ``timeout`` (down, restarting, unreachable), ``consume`` raises
    :class:`StoreUnavailable` and the retry is refused with ``-32603`` ("try again
    later"); a state is never let through unrecorded. A Redis without persistence forgets
    its records when it restarts (then a state used before the restart works once more
    until it expires): turn on ``appendonly`` where that matters.

    Args:
        url: ``redis://[:password@]host:port/db`` (``rediss://`` for TLS, ``unix://`` for a socket).
        prefix: Prepended to each state id to make its key.
        timeout: Seconds one record may take before the retry is refused.
        clock_skew: Seconds a record is kept past its state's expiry.
    """

    def __init__(self, url: str, *, prefix: str = "minimcp:used:", timeout: float = 5.0, clock_skew: float = 60.0):
        self._redis = RedisClient(url, name="RedisUsedStates")  # checks the URL and the extra at once
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
        self.clock_skew = clock_skew
        self._nx = self._redis.coredis.tokens.PureToken.NX
        self._failing = False  # warned about this outage already

    @property
    def running(self) -> bool:
        """Whether a client is open (records can be made)."""
        return self._redis.client is not None

    async def consume(self, key: str, expires_at: float) -> bool:
        client = self._redis.client
        if client is None:
            raise StoreUnavailable("the Redis store of used states is not running (start RedisUsedStates.run)")
        try:
            with anyio.fail_after(self.timeout):
                done = await client.set(
                    self.prefix + key, b"1", condition=self._nx, pxat=math.ceil((expires_at + self.clock_skew) * 1000)
                )
        except Exception as exc:  # down, restarting, unreachable, timed out: refuse, never allow
            if not self._failing:  # once per outage; the refusals themselves are logged by the server
                self._failing = True
                logger.warning("used states: Redis at %s does not answer (%r); retries are refused until it does",
                               safe_url(self.url), exc)  # fmt: skip
            raise StoreUnavailable(f"Redis did not answer: {exc!r}") from exc
        if self._failing:
            self._failing = False
            logger.warning("used states: Redis at %s answers again", safe_url(self.url))
        return bool(done)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the Redis client open until cancelled (start it in the server's task group).

        Opening the client does not wait for Redis (connections are made per command), so a
        server starts while Redis is down; its retries are refused until Redis answers.
        """
        await self._redis.run(task_status=task_status)

    async def __aenter__(self) -> RedisUsedStates:
        await self._redis.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._redis.__aexit__(exc_type, exc, tb)
