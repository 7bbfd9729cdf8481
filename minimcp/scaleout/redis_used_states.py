"""The used states of every worker of a service, kept in Redis: the shared store behind ``Server(used_states=...)``.

:class:`~minimcp.server.mrtr.used_states.UsedStates` is the store's protocol and
:class:`~minimcp.server.mrtr.used_states.MemoryUsedStates` the in-process default; this one lets
several workers refuse a state used on any of them. It logs as ``minimcp.used_states``, with them.
"""

from __future__ import annotations

import logging
import math
from types import TracebackType

import anyio
import anyio.abc

from minimcp.scaleout._redis import RedisClient, safe_url
from minimcp.server.mrtr.used_states import StoreUnavailable

__all__ = ["RedisUsedStates"]

logger = logging.getLogger("minimcp.used_states")


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
