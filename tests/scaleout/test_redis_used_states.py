"""Single use across workers (issue 18): ``RedisUsedStates`` on a real ``redis-server``.

Two :class:`~minimcp.Server` objects with one sealing key and one Redis stand for two workers
behind a load balancer: a ``requestState`` used on one is refused on the other, and of
concurrent retries spread over both exactly one continues. With Redis down, or the store not
running, retries are refused with ``-32603`` (fail closed) and the state stays good for later.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp import Server
from minimcp.scaleout.redis_used_states import RedisUsedStates
from minimcp.server.mrtr.used_states import StoreUnavailable
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers import redis_server
from tests.helpers.modern import accept, complete, error_of, input_required, modern_peer, only
from tests.helpers.redis_server import RedisProcess, free_port
from tests.helpers.state_keys import worker

redis = redis_server.redis  # the fixture
KEY = "ab" * 32
WAIT = 30


@contextlib.asynccontextmanager
async def workers(url: str, count: int = 2) -> AsyncIterator[list[Server]]:
    """``count`` servers sharing one key and one Redis store of used states."""
    async with contextlib.AsyncExitStack() as stack:
        servers = []
        for _ in range(count):
            used = await stack.enter_async_context(RedisUsedStates(url, prefix="test:used:"))
            server = worker(KEY)
            server.used_states = used
            servers.append(server)
        yield servers


async def first_round(server: Server) -> tuple[str, str]:
    async with modern_peer(server) as (m, _):
        requests, state = input_required(await m.call("greet"))
    key, _ = only(requests)
    return key, state


async def retry(server: Server, key: str, state: str) -> dict[str, Any]:
    async with modern_peer(server) as (m, _):
        return await m.call("greet", responses={key: accept(name="Ada")}, state=state)


async def test_a_state_used_on_one_worker_is_refused_on_another(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b):
            key, state = await first_round(a)
            assert complete(await retry(a, key, state))["content"][0]["text"] == "hello Ada"
            refused = error_of(await retry(b, key, state), -32602)
            assert refused["data"] == {"reason": "request_state_used"} and "already used" in refused["message"]
            # ... and a fresh state from A is good once on B (replayed there).
            key, state = await first_round(a)
            assert complete(await retry(b, key, state))["content"][0]["text"] == "hello Ada"
            error_of(await retry(a, key, state), -32602)


async def test_of_four_concurrent_retries_across_two_workers_exactly_one_continues(redis: RedisProcess) -> None:
    outcomes: list[dict[str, Any]] = []
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b):
            key, state = await first_round(a)

            async def one(server: Server) -> None:
                outcomes.append(await retry(server, key, state))

            async with anyio.create_task_group() as tg:
                for server in (a, b, a, b):
                    tg.start_soon(one, server)
    done = [o for o in outcomes if "result" in o]
    refused = [o for o in outcomes if "error" in o]
    assert len(done) == 1 and complete(done[0])["content"][0]["text"] == "hello Ada"
    assert len(refused) == 3 and all(o["error"]["data"] == {"reason": "request_state_used"} for o in refused)


async def test_many_concurrent_records_of_one_state_let_exactly_one_through(redis: RedisProcess) -> None:
    wins: list[bool] = []
    with anyio.fail_after(WAIT):
        async with RedisUsedStates(redis.url) as one, RedisUsedStates(redis.url) as other:
            expires = time.time() + 60

            async def record(store: RedisUsedStates, key: str) -> None:
                wins.append(await store.consume(key, expires))

            async with anyio.create_task_group() as tg:
                for n in range(50):
                    tg.start_soon(record, one if n % 2 else other, "same")
            assert wins.count(True) == 1 and len(wins) == 50
            assert all([await one.consume(f"k{n}", expires) for n in range(20)])


async def test_a_record_lasts_until_the_state_expires_plus_the_clock_skew(redis: RedisProcess) -> None:
    import coredis

    with anyio.fail_after(WAIT):
        async with RedisUsedStates(redis.url, prefix="p:", clock_skew=30) as used:
            assert await used.consume("s1", time.time() + 100)
        async with coredis.Redis.from_url(redis.url) as raw:
            ttl_ms = await raw.pttl("p:s1")
    assert 100_000 < ttl_ms <= 130_000


async def test_redis_down_refuses_the_retry_and_the_state_stays_good(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url, 1) as (a,):
            key, state = await first_round(a)
            redis.stop()
            error = error_of(await retry(a, key, state), -32603)
            assert "store of used states is unavailable" in error["message"]
            assert error["data"] == {"reason": "state_store_unavailable"}
            assert "redis" not in error["message"].lower()  # no internal detail on the wire
            redis.start()
            assert complete(await retry(a, key, state))["content"][0]["text"] == "hello Ada"  # not used up
            error_of(await retry(a, key, state), -32602)


async def test_a_store_that_is_not_running_refuses(redis: RedisProcess) -> None:
    server = worker(KEY)
    server.used_states = RedisUsedStates(redis.url)  # never started
    with anyio.fail_after(WAIT):
        key, state = await first_round(server)
        error_of(await retry(server, key, state), -32603)
    with pytest.raises(StoreUnavailable, match="not running"):
        await RedisUsedStates(redis.url).consume("k", time.time() + 60)


async def test_unreachable_redis_refuses_within_the_timeout() -> None:
    with anyio.fail_after(WAIT):
        async with RedisUsedStates(f"redis://127.0.0.1:{free_port()}/0", timeout=2) as used:
            with pytest.raises(StoreUnavailable, match="Redis did not answer"):
                await used.consume("k", time.time() + 60)


async def test_the_http_app_runs_the_store_while_it_runs(redis: RedisProcess) -> None:
    used = RedisUsedStates(redis.url)
    server = worker(KEY)
    server.used_states = used
    app, other = StreamableHTTPApp(server), StreamableHTTPApp(server)  # two apps of one server share the store
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            assert used.running
            await tg.start(other.run)
            assert await used.consume("k", time.time() + 60)
            tg.cancel_scope.cancel()
    assert not used.running


async def test_entering_twice_is_refused(redis: RedisProcess) -> None:
    used = RedisUsedStates(redis.url)
    with anyio.fail_after(WAIT):
        async with used:
            with pytest.raises(RuntimeError, match="entered already"):
                await used.__aenter__()
            assert used.running


async def test_several_runners_one_owner_the_next_takes_over(redis: RedisProcess) -> None:
    used = RedisUsedStates(redis.url)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as outer:
            first = anyio.CancelScope()

            async def owner(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                with first:
                    await used.run(task_status=task_status)

            await outer.start(owner)
            await outer.start(used.run)
            before = used._redis.client
            first.cancel()
            while used._redis.client is before or not used.running:  # noqa: ASYNC110 - the second runner opens its own
                await anyio.sleep(0.01)
            assert await used.consume("k", time.time() + 60)
            outer.cancel_scope.cancel()


def test_without_coredis_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "coredis", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"minimcp\[redis\]"):
        RedisUsedStates("redis://127.0.0.1:1/0")


async def test_a_malformed_url_is_refused_naming_it() -> None:
    for url in ("mysql://127.0.0.1/x", "127.0.0.1:6379"):
        with pytest.raises(ValueError, match="needs a redis://, rediss:// or unix:// URL"):
            RedisUsedStates(url)
    with pytest.raises(ValueError, match=r"mysql://\*\*\*@h"):
        RedisUsedStates("mysql://user:secret@h/x")  # the password never shows
    with anyio.fail_after(WAIT), pytest.raises(ValueError, match="Port"):
        async with RedisUsedStates("redis://127.0.0.1:notaport/0"):  # fails the start, at once
            pass  # pragma: no cover
