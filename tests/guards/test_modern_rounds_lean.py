"""A 2026-07-28 round trip in memory costs the server one task: the run answers the requests it serves (issue 19).

The read loop takes a ``tools/call`` over (``minimcp.server.mrtr.rounds.take_over``): a new call starts its
run, a retry hands its parked run the answers; the run's own task sends ``input_required`` and
the final result. No handler task per request waits on the run's outcome. Counted, not timed:
the tasks the server starts per round trip (call, ``input_required``, retry, result), and on
asyncio the loop timers a parked call adds (none: one sweep times every parked call out).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from minimcp import Accepted, Context, Limits, Server
from minimcp.server.mrtr.run import Run
from minimcp.server.mrtr.state import StateSealer, _Mac, _unb64, b64url
from tests.helpers import raw_client
from tests.helpers.modern import NAME_FORM, Modern, accept, complete, input_required, only, text_of, wait_until

TIMEOUT = 30
ROUNDS = 5


def ask_server(timeout: float = 600) -> Server:
    server = Server("lean", limits=Limits(elicitation_timeout=timeout))

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)
        return f"hello {answer.value['name']}" if isinstance(answer, Accepted) else "no"

    return server


@asynccontextmanager
async def counting_tasks() -> AsyncIterator[Callable[[], int]]:
    """Count the tasks started from here on (asyncio: the loop's ``create_task``; trio: an instrument)."""
    started = 0
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        original = loop.create_task

        def create_task(*args: Any, **kwargs: Any) -> Any:
            nonlocal started
            started += 1
            return original(*args, **kwargs)

        loop.create_task = create_task  # type: ignore[method-assign]
        try:
            yield lambda: started
        finally:
            del loop.create_task  # (the class's method again)
        return
    import trio

    class Spawned(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            nonlocal started
            started += 1

    instrument = Spawned()
    trio.lowlevel.add_instrument(instrument)
    try:
        yield lambda: started
    finally:
        trio.lowlevel.remove_instrument(instrument)


async def round_trip(m: Modern, name: str) -> None:
    requests, state = input_required(await m.call("greet"))
    key, _ = only(requests)
    msg = await m.call("greet", responses={key: accept(name=name)}, state=state)
    assert text_of(complete(msg)) == f"hello {name}"


async def test_a_round_trip_starts_one_task_on_the_server(anyio_backend: str) -> None:
    """The run is the only task per round trip (it was three: a handler for each request, and the run)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with counting_tasks() as started, raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await round_trip(m, "Ada")  # (the first request locks the connection's era)
            before = started()
            for n in range(ROUNDS):
                await round_trip(m, f"n{n}")
            assert started() - before == ROUNDS, f"{started() - before} tasks for {ROUNDS} round trips"
            assert len(server.parking) == 0


async def test_a_parked_call_adds_no_timer_and_no_task(anyio_backend: str) -> None:
    """asyncio: parked calls are timed out by one sweep, not by a loop timer each; on either backend
    parking a call starts no task beside its run (trio: the run's own cancel scope times it out)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with counting_tasks() as started, raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await round_trip(m, "Ada")  # (the sweep's own timer is armed with the first parked call)
            loop: Any = asyncio.get_running_loop() if anyio_backend == "asyncio" else None
            states = []
            timers = len(loop._scheduled) if loop is not None else 0
            before = started()
            for _ in range(ROUNDS):
                requests, state = input_required(await m.call("greet"))
                states.append((only(requests)[0], state))
            assert len(server.parking) == ROUNDS
            assert started() - before == ROUNDS
            if loop is not None:
                assert len(loop._scheduled) <= timers + 1, "a loop timer per parked call"
            for n, (key, state) in enumerate(states):
                msg = await m.call("greet", responses={key: accept(name=f"p{n}")}, state=state)
                assert text_of(complete(msg)) == f"hello p{n}"


async def test_parked_calls_still_time_out_each_at_its_own_deadline(anyio_backend: str) -> None:
    """The sweep times a parked call out at its question's timeout, earlier ones first, and a retry
    after that finds the call timed out (as with a timer each)."""
    server = ask_server(timeout=0.2)
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await round_trip(m, "Ada")
            first = input_required(await m.call("greet"))
            await anyio.sleep(0.1)
            second = input_required(await m.call("greet"))
            assert len(server.parking) == 2
            await wait_until(lambda: len(server.parking) < 2, TIMEOUT)  # the first falls due first
            assert len(server.parking) == 1
            await wait_until(lambda: len(server.parking) == 0, TIMEOUT)
            for requests, state in (first, second):
                key, _ = only(requests)
                msg = await m.call("greet", responses={key: accept(name="late")}, state=state)
                assert text_of(complete(msg)) == "no"  # the answer came after the timeout: no answer


async def test_a_finished_call_leaves_nothing_for_the_garbage_collector(anyio_backend: str) -> None:
    """A run and its context pointed at each other: every finished call left a cycle for the
    collector to find (about a tenth of a round trip's CPU). Now, with the collector off, no run
    of a finished call is left in memory (and answered runs leave the sweep's lane at once)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await round_trip(m, "Ada")
            gc.collect()
            gc.disable()
            try:
                for n in range(ROUNDS):
                    await round_trip(m, f"n{n}")

                def runs_left() -> int:
                    return sum(isinstance(o, Run) for o in gc.get_objects())

                with contextlib.suppress(TimeoutError):  # (the last run's task ends just after its reply)
                    await wait_until(lambda: runs_left() == 0, 10)
                left = runs_left()
            finally:
                gc.enable()
            assert not left, f"{left} runs of finished calls still in memory"


def test_the_state_mac_is_hmac_sha256_as_before() -> None:
    """The sealer's MAC (prepared SHA-256 states, copied per token) is the standard HMAC-SHA256, for
    keys of any length: tokens sealed before still open, and the other way round."""
    for size in (32, 63, 64, 65, 200):
        key = bytes(range(size % 256)) * (size // 256) + bytes(range(size % 256))
        key = (key + b"k" * size)[:size]
        for data in (b"", b"x", b"y" * 1000):
            assert _Mac(key)(data) == hmac.new(key, data, hashlib.sha256).digest()
    sealer = StateSealer(b"s" * 32, version="v1")
    token = sealer.seal({"t": "greet"}, now=1000.0, ttl=60)
    _version, body, mac = token.split(".")
    expected = hmac.new(b"s" * 32, _unb64(body), hashlib.sha256).digest()
    assert mac == b64url(expected)
    assert sealer.open(token, now=1001.0, binding={"t": "greet"})["t"] == "greet"
