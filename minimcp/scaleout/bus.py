"""A bus between the workers of one service: small notices, published by one, heard by all.

Several worker processes behind a load balancer serve one MCP service; a few things one
worker learns must reach another:

- a URL elicitation completed (``url_complete``, key: the elicitation id): only the worker
  holding the client's session can tell that client;
- a list changed or a resource was updated (``list_changed``, key: ``tools`` / ``prompts`` /
  ``resources``; ``resource_updated``, key: the URI): every worker tells its own sessions;
- a parked 2026-07-28 call continued on another worker (``continued``, key: the call's
  handle): the worker that parked it drops its copy at once.

A :class:`~minimcp.server.bus.Bus` (the protocol ``Server(bus=...)`` accepts, in
:mod:`minimcp.server.bus`) publishes a :class:`~minimcp.server.bus.Notice` and runs a subscriber
(in the server's task group) that hands every notice to a callback. Notices carry only random
ids and kinds; a forged one is a hint the receiver re-checks against its own tables, never an instruction to trust.
Every worker hears its own notices too; the receiver skips those (``Notice.origin``).

- :class:`InMemoryBus`: one hub for several apps in one process (tests, a demo).
- :class:`RedisBus`: Redis pub/sub through ``coredis`` (extra ``minimcp[redis]``, imported
  here only when a RedisBus runs). Redis down or restarted: failures are logged, publishing
  drops notices (each worker still acts on its own at once), the subscriber reconnects with
  backoff; nothing waits on Redis.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
from anyio.streams.memory import MemoryObjectSendStream

from minimcp.scaleout._redis import client_failure, import_coredis, safe_url
from minimcp.server.bus import BusStats, Notice

__all__ = ["InMemoryBus", "RedisBus"]

logger = logging.getLogger("minimcp.bus")

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Notice).decode


class InMemoryBus:
    """One hub shared by several servers in one process.

    Args:
        max_queued: Notices waiting per subscriber before new ones are dropped (and counted).
    """

    def __init__(self, *, max_queued: int = 10_000) -> None:
        self.max_queued = max_queued
        self.stats = BusStats()
        self._subscribers: list[MemoryObjectSendStream[Notice]] = []

    def publish(self, notice: Notice) -> None:
        self.stats.published += 1
        for stream in list(self._subscribers):
            try:
                stream.send_nowait(notice)
            except anyio.WouldBlock:
                self.stats.dropped += 1
                logger.warning("in-memory bus: a subscriber is %d notices behind; dropped %s", self.max_queued, notice)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # a subscriber on its way out

    async def run(
        self,
        deliver: Callable[[Notice], None],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        send, receive = anyio.create_memory_object_stream[Notice](self.max_queued)
        self._subscribers.append(send)
        try:
            task_status.started()
            async with receive:
                async for notice in receive:
                    self.stats.delivered += 1
                    _deliver(deliver, notice)
        finally:
            self._subscribers.remove(send)
            send.close()


def _deliver(deliver: Callable[[Notice], None], notice: Notice) -> None:
    try:
        deliver(notice)
    except Exception:  # one bad notice must not stop the bus
        logger.exception("bus: handling %s failed", notice)


class RedisBus:
    """Redis pub/sub on one channel, through ``coredis`` (runs on asyncio and trio).

    Args:
        url: ``redis://[:password@]host:port/db`` (``rediss://`` for TLS).
        channel: The pub/sub channel every worker of the service shares.
        max_queued: Notices waiting to be published before new ones are dropped.
        backoff: First and largest wait, in seconds, between two tries to reach Redis.

    Raises:
        ImportError: ``coredis`` is not installed (the message names the ``minimcp[redis]`` extra).
    """

    def __init__(
        self,
        url: str,
        *,
        channel: str = "minimcp:bus",
        max_queued: int = 10_000,
        backoff: tuple[float, float] = (0.1, 5.0),
    ) -> None:
        self._coredis = import_coredis("RedisBus")  # here, so that a missing extra shows at once
        self.url = url
        self.channel = channel
        self.backoff = backoff
        self.stats = BusStats()
        self.connected = False  #: the subscriber is listening now
        self._outbox_send, self._outbox = anyio.create_memory_object_stream[bytes](max_queued)

    def publish(self, notice: Notice) -> None:
        if not self.connected:
            self.stats.dropped += 1
            logger.warning("redis bus: not connected to %s; dropped %s", safe_url(self.url), notice)
            return
        try:
            self._outbox_send.send_nowait(_encode(notice))
        except anyio.WouldBlock:
            self.stats.dropped += 1
            waiting = self._outbox_send.statistics().current_buffer_used
            logger.warning("redis bus: %d notices wait to be published; dropped %s", waiting, notice)
        else:
            self.stats.published += 1

    async def run(
        self,
        deliver: Callable[[Notice], None],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        coredis = self._coredis
        from coredis.retry import NoRetryPolicy

        first, most = self.backoff
        wait = first
        started = False
        while True:
            try:
                async with coredis.Redis.from_url(self.url) as client:
                    # No retries inside the client: a lost connection ends this try, and the loop below
                    # connects and subscribes afresh (so the subscription is never silently gone).
                    pubsub_options: dict[str, Any] = {"retry_policy": NoRetryPolicy(), "max_idle_seconds": 5}
                    async with (
                        client.pubsub(
                            channels=[self.channel], ignore_subscribe_messages=True, **pubsub_options
                        ) as pubsub,
                        anyio.create_task_group() as tg,
                    ):
                        tg.start_soon(self._publisher, client)
                        self.connected, wait = True, first
                        logger.info("redis bus: listening on %s at %s", self.channel, safe_url(self.url))
                        if not started:
                            task_status.started()
                            started = True
                        async for message in pubsub:
                            self._heard(deliver, message)
                raise ConnectionError("the subscription ended")
            except BaseException as exc:  # Redis down, restarted, unreachable, or its client failing on the way
                if not client_failure(exc):
                    raise
                if anyio.current_effective_deadline() == -math.inf:  # we are being cancelled:
                    await anyio.lowlevel.checkpoint()  # end with the cancellation, not the client's clean-up errors
                if self.connected:
                    self.stats.reconnects += 1
                self.connected = False
                logger.warning("redis bus: %s: %s; trying again in %.1f s", safe_url(self.url), exc, wait)
                if not started:  # the server does not wait for Redis to start serving
                    task_status.started()
                    started = True
                await anyio.sleep(wait)
                wait = min(wait * 2, most)
            finally:
                self.connected = False

    def _heard(self, deliver: Callable[[Notice], None], message: Any) -> None:
        if message.get("type") != "message":
            return
        try:
            notice = _decode(message["data"])
        except (msgspec.DecodeError, ValueError, KeyError):
            self.stats.dropped += 1
            logger.warning("redis bus: ignored a message on %s that is not a notice", self.channel)
            return
        self.stats.delivered += 1
        _deliver(deliver, notice)

    async def _publisher(self, client: Any) -> None:
        async for data in self._outbox:
            with anyio.fail_after(5):  # Redis gone quiet: this try ends and the loop reconnects
                await client.publish(self.channel, data)
