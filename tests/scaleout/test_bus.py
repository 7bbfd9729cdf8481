"""The bus between workers (minimcp/scaleout/bus.py): in memory, and on a real Redis server.

The Redis tests start Debian's ``redis-server`` on a free loopback port as a tracked
subprocess (installed on first use when missing and we are root), and stop it in teardown.
They check that every subscriber hears each notice once, that a bad message on the channel is
ignored, and that the bus survives Redis going away and coming back: notices published while
it is down are dropped and counted, nothing hangs, and once Redis is back both sides reconnect
on their own and later notices arrive.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.abc
import pytest

from minimcp.scaleout.bus import InMemoryBus, RedisBus
from minimcp.server.bus import Notice
from tests.helpers import redis_server
from tests.helpers.redis_server import RedisProcess, free_port

redis = redis_server.redis  # the fixture

WAIT = 30  # seconds: generous bounds for a busy machine


async def eventually(condition: Callable[[], bool], what: str) -> None:
    with anyio.fail_after(WAIT):
        while not condition():  # noqa: ASYNC110 - the condition is another process's doing (Redis)
            await anyio.sleep(0.01)
    assert condition(), what


# --- in memory ------------------------------------------------------------------------------------


async def test_in_memory_bus_fans_out_to_every_subscriber_once() -> None:
    bus = InMemoryBus()
    heard: dict[str, list[Notice]] = {"a": [], "b": []}
    async with anyio.create_task_group() as tg:
        await tg.start(bus.run, heard["a"].append)
        await tg.start(bus.run, heard["b"].append)
        notices = [Notice("url_complete", "e1", "a"), Notice("list_changed", "tools", "b")]
        for notice in notices:
            bus.publish(notice)
        await eventually(lambda: all(len(h) == 2 for h in heard.values()), "both heard both")
        await anyio.sleep(0.05)
        assert heard == {"a": notices, "b": notices}  # in order, once each, the publisher too
        tg.cancel_scope.cancel()
    assert bus.stats.published == 2 and bus.stats.delivered == 4
    bus.publish(Notice("continued", "h", "a"))  # nobody listens any more: nothing breaks
    assert bus.stats.published == 3


async def test_in_memory_bus_is_bounded_and_a_failing_handler_does_not_stop_it() -> None:
    bus = InMemoryBus(max_queued=3)
    heard: list[Notice] = []

    def picky(notice: Notice) -> None:
        if notice.key == "bad":
            raise RuntimeError("boom")
        heard.append(notice)

    async with anyio.create_task_group() as tg:
        await tg.start(bus.run, picky)
        for i in range(10):  # published without a checkpoint: only 3 fit (4 on trio, whose waiting reader takes one)
            bus.publish(Notice("resource_updated", "bad" if i == 0 else f"r{i}", "w"))
        assert bus.stats.dropped in (6, 7)
        kept = 10 - bus.stats.dropped
        await eventually(lambda: len(heard) == kept - 1, "those after the bad one")
        bus.publish(Notice("resource_updated", "later", "w"))
        await eventually(lambda: len(heard) == kept, "the bus goes on after a failing handler")
        tg.cancel_scope.cancel()


def test_notices_name_a_known_kind() -> None:
    with pytest.raises(ValueError, match="unknown bus notice kind 'reboot'"):
        Notice("reboot", "x", "w")


def test_redis_bus_without_coredis_names_the_extra_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "coredis", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"RedisBus needs the coredis package.*pip install 'minimcp\[redis\]'"):
        RedisBus("redis://127.0.0.1:1/0")
    InMemoryBus()  # the in-process bus needs no extra


def test_redis_bus_with_coredis_constructs_without_connecting() -> None:
    bus = RedisBus("redis://127.0.0.1:1/0")  # nothing listens there: construction does not connect
    assert not bus.connected


# --- a real Redis ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def listening(*buses: RedisBus) -> AsyncIterator[dict[RedisBus, list[Notice]]]:
    heard: dict[RedisBus, list[Notice]] = {bus: [] for bus in buses}
    async with anyio.create_task_group() as tg:
        for bus in buses:
            await tg.start(bus.run, heard[bus].append)
        await eventually(lambda: all(bus.connected for bus in buses), "subscribed")
        yield heard
        tg.cancel_scope.cancel()


async def test_redis_bus_reaches_every_worker_once(redis: RedisProcess) -> None:
    a, b, c = (RedisBus(redis.url, channel="test:bus") for _ in range(3))
    async with listening(a, b, c) as heard:
        notice = Notice("url_complete", "e-123", "w2")
        b.publish(notice)
        await eventually(lambda: all(len(h) == 1 for h in heard.values()), "all three heard it")
        await anyio.sleep(0.2)
        assert all(h == [notice] for h in heard.values())


async def test_redis_bus_ignores_what_is_not_a_notice(redis: RedisProcess) -> None:
    import coredis

    bus = RedisBus(redis.url, channel="test:bus")
    async with listening(bus) as heard:
        async with coredis.Redis.from_url(redis.url) as raw:
            await raw.publish("test:bus", b"\x93not-a-notice")
        bus.publish(Notice("list_changed", "tools", "w1"))
        await eventually(lambda: len(heard[bus]) == 1, "the real notice after the junk")
        assert bus.stats.dropped == 1


async def test_redis_bus_survives_a_restart_of_redis(redis: RedisProcess) -> None:
    a, b = RedisBus(redis.url, channel="test:bus", backoff=(0.05, 0.5)), RedisBus(redis.url, channel="test:bus")
    async with listening(a, b) as heard:
        redis.stop()
        await eventually(lambda: not a.connected and not b.connected, "both saw Redis go")
        a.publish(Notice("list_changed", "tools", "w1"))  # nowhere to go: dropped at once, counted
        assert a.stats.dropped == 1
        redis.start()
        await eventually(lambda: a.connected and b.connected, "both reconnected on their own")
        notice = Notice("resource_updated", "file:///a", "w1")
        a.publish(notice)
        await eventually(lambda: heard[b][-1:] == [notice], "a notice after the restart arrives")
        assert a.stats.reconnects >= 1 and b.stats.reconnects >= 1


async def test_redis_bus_does_not_hold_up_a_server_when_redis_is_down() -> None:
    bus = RedisBus(f"redis://127.0.0.1:{free_port()}/0", backoff=(0.05, 0.2))
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(WAIT):
            await tg.start(bus.run, lambda notice: None)  # started, though nothing answers
        assert not bus.connected
        bus.publish(Notice("continued", "h", "w"))
        assert bus.stats.dropped == 1
        tg.cancel_scope.cancel()
