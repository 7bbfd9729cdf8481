"""Revision 2026-07-28 beside the handshake era: parked calls and round trips (in memory).

A tool asks one question. On the handshake era the question is a nested
``elicitation/create`` waiting in the pending table; on 2026-07-28 it is an
``input_required`` result and the tool is parked until the retry. This measures,
with client and server in one process over the in-memory transport:

* memory per waiting call (tracemalloc, both sides) with N calls waiting;
* elicitation round trips per second at C concurrent callers, each answered at once.

and, with a raw client (``raw_client.py``: bytes only, its allocations left out) in
place of minimcp's, what the *server* alone holds per waiting call and how many round
trips it serves; beside them the floor of a parked call: a bare task suspended in a
coroutine awaiting a future (what any server that keeps the tool's coroutine alive pays).

    python benchmarks/bench_modern.py            # N = 10,000; C = 100
    python benchmarks/bench_modern.py --quick
    python benchmarks/bench_modern.py --profile  # tracemalloc diff of the server at N parked (by line)
    python benchmarks/bench_modern.py --server-only --cpu  # round trips per CPU second (a busy machine)

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import secrets
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Client, Context, Limits, Server, memory_pair

sys.path.insert(0, str(Path(__file__).resolve().parent))
from raw_client import RawClient


class Pick(msgspec.Struct):
    n: int


def build(max_parked_per_client: int = 1000) -> Server:
    app = Server("bench", limits=Limits(elicitation_timeout=600, request_timeout=600,
                                        max_parked_per_client=max_parked_per_client),
                 state_key=secrets.token_bytes(32))  # (one process: a key of its own, said so)

    @app.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"q {i}", Pick)
        return str(answer.value.n) if isinstance(answer, Accepted) else "?"

    return app


async def waiting(era: str, n: int) -> float:
    """Bytes per waiting call with ``n`` calls waiting for their person (both sides)."""
    app = build()
    release = anyio.Event()
    asked = 0
    all_asked = anyio.Event()

    async def answer(question: Any) -> Any:
        nonlocal asked
        asked += 1
        if asked == n:
            all_asked.set()
        await release.wait()
        return Accepted({"n": int(question.message.split()[1])})

    a, b = memory_pair(buffer=n + 64)
    limits = Limits(request_timeout=600)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, era=era, elicitation_handler=answer, limits=limits) as client:
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            done = 0

            async def call(i: int) -> None:
                nonlocal done
                assert (await client.call_tool("ask", {"i": i})).text == str(i)
                done += 1

            for i in range(n):
                tg.start_soon(call, i)
            await all_asked.wait()
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] - base
            tracemalloc.stop()
            release.set()
            while done < n:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    return used / n


async def round_trips(era: str, calls: int, concurrency: int) -> float:
    app = build()

    async def answer(question: Any) -> Any:
        return Accepted({"n": int(question.message.split()[1])})

    a, b = memory_pair(buffer=4096)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, era=era, elicitation_handler=answer) as client:
            todo = iter(range(calls))

            async def worker() -> None:
                for i in todo:
                    assert (await client.call_tool("ask", {"i": i})).text == str(i)

            start = time.perf_counter()
            async with anyio.create_task_group() as workers:
                for _ in range(concurrency):
                    workers.start_soon(worker)
            elapsed = time.perf_counter() - start
        tg.cancel_scope.cancel()
    return calls / elapsed


LEAVE_OUT = [
    tracemalloc.Filter(False, "*/raw_client.py", all_frames=True),  # the client's bytes
    tracemalloc.Filter(False, tracemalloc.__file__),
]


async def server_waiting(era: str, n: int, profile: bool = False) -> float:
    """Bytes the server holds per waiting call with ``n`` waiting (parked on 2026-07-28), raw client."""
    app = build()
    a, b = memory_pair(buffer=n + 64)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        client = RawClient(b, era)
        tg.start_soon(client.reader)
        await client.handshake()
        await client.fill(64)  # warm every path once
        await client.drain(64)
        gc.collect()
        tracemalloc.start(64 if profile else 4)  # 4: deep enough to see the client's own frame
        base = tracemalloc.take_snapshot().filter_traces(LEAVE_OUT)
        await client.fill(n)
        gc.collect()
        now = tracemalloc.take_snapshot().filter_traces(LEAVE_OUT)
        tracemalloc.stop()
        used = sum(s.size for s in now.statistics("filename")) - sum(s.size for s in base.statistics("filename"))
        if profile:
            for key in ("lineno", "traceback"):
                print(f"--- top by {key} ({era}, server side, per waiting call)")
                for d in now.compare_to(base, key)[: 30 if key == "lineno" else 25]:
                    if d.size_diff <= 0:
                        continue
                    where = d.traceback.format()[-1].strip() if key == "lineno" else "\n      ".join(
                        line.strip() for line in d.traceback.format()[-12:]
                    )
                    print(f"{d.size_diff / n:8.0f} B {d.count_diff / n:5.2f} obj  {where}")
        await client.drain(n)
        tg.cancel_scope.cancel()
    return used / n


HTTP_LEAVE_OUT = [
    tracemalloc.Filter(False, "*/raw_http_client.py"),  # what the driver keeps (the states it holds)
    tracemalloc.Filter(False, tracemalloc.__file__),
]


async def http_waiting(n: int, profile: bool = False) -> float:
    """Bytes the Streamable HTTP app holds per parked call (2026-07-28), POSTs driven in-process, no socket."""
    from raw_http_client import RawHttpClient

    from minimcp.transports.http import StreamableHTTPApp

    app = StreamableHTTPApp(build(max_parked_per_client=n + 64))
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        client = RawHttpClient(app)
        await client.fill(64)  # warm every path once
        await client.drain()
        gc.collect()
        tracemalloc.start(25 if profile else 1)
        base = tracemalloc.take_snapshot().filter_traces(HTTP_LEAVE_OUT)
        await client.fill(n)
        gc.collect()
        now = tracemalloc.take_snapshot().filter_traces(HTTP_LEAVE_OUT)
        tracemalloc.stop()
        used = sum(s.size for s in now.statistics("filename")) - sum(s.size for s in base.statistics("filename"))
        if profile:
            print("--- top by line (modern over HTTP, the app, per parked call)")
            for d in now.compare_to(base, "lineno")[:25]:
                if d.size_diff > 0:
                    print(f"{d.size_diff / n:8.0f} B {d.count_diff / n:5.2f} obj  {d.traceback.format()[-1].strip()}")
        await client.drain()
        tg.cancel_scope.cancel()
    return used / n


async def http_round_trips(calls: int, concurrency: int) -> float:
    """2026-07-28 round trips/s through the HTTP app in-process (two POSTs each), ``concurrency`` callers."""
    from raw_http_client import RawHttpClient

    from minimcp.transports.http import StreamableHTTPApp

    app = StreamableHTTPApp(build(max_parked_per_client=concurrency + 64))
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        client = RawHttpClient(app)
        rate = await _timed_calls(client.call, calls, concurrency)
        tg.cancel_scope.cancel()
    return rate


async def floor_waiting(n: int) -> float:
    """Bytes per bare asyncio task suspended in a coroutine awaiting a future (the floor of a parked call)."""
    import asyncio

    loop = asyncio.get_running_loop()

    async def tool(fut: asyncio.Future[int]) -> int:
        return await fut

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    futures = [loop.create_future() for _ in range(n)]
    tasks = [loop.create_task(tool(f)) for f in futures]
    await asyncio.sleep(0)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    for f in futures:
        f.set_result(1)
    await asyncio.gather(*tasks)
    return used / n


#: What times the round trips: the wall clock, or (``--cpu``) this process's CPU time (client and
#: server: one process), which other processes on a busy machine do not disturb.
CLOCK = time.perf_counter


async def _timed_calls(call: Callable[[int], Awaitable[str]], calls: int, concurrency: int) -> float:
    """Round trips per second: ``calls`` calls made by ``concurrency`` workers, each checking its own answer."""
    todo = iter(range(calls))

    async def worker() -> None:
        for i in todo:
            assert await call(i) == str(i)

    start = CLOCK()
    async with anyio.create_task_group() as workers:
        for _ in range(concurrency):
            workers.start_soon(worker)
    return calls / (CLOCK() - start)

async def server_round_trips(era: str, calls: int, concurrency: int) -> float:
    """Round trips/s the server serves at ``concurrency`` callers (raw client: one elicitation per call)."""
    app = build()
    a, b = memory_pair(buffer=4096)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        client = RawClient(b, era)
        tg.start_soon(client.reader)
        await client.handshake()
        rate = await _timed_calls(client.call, calls, concurrency)
        tg.cancel_scope.cancel()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--profile", action="store_true", help="where the server's bytes go per waiting call")
    parser.add_argument("--server-only", action="store_true", help="only the raw-client (server side) figures")
    parser.add_argument("--cpu", action="store_true",
                        help="raw-client round trips per second of this process's CPU time (not the wall clock)")
    parser.add_argument("--http", action="store_true",
                        help="2026-07-28 through the Streamable HTTP app in-process (raw_http_client.py): "
                        "bytes per parked call and round trips, no ASGI server")
    args = parser.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    n, calls, rounds = (1_000, 1_000, 1) if args.quick else (10_000, 5_000, 3)
    if args.http:
        if args.profile:
            anyio.run(http_waiting, n, True, backend=args.backend)
            return
        mem = anyio.run(http_waiting, n, backend=args.backend)
        rates = [anyio.run(http_round_trips, calls, 100, backend=args.backend) for _ in range(rounds)]
        per = "CPU second" if args.cpu else "s"
        print(f"modern over HTTP, in-process ({args.backend}): {mem / 1024:.2f} KB per parked call (N={n:,}, "
              f"the app), {statistics.median(rates):,.0f} round trips/{per} (C=100)")
        return
    if args.profile:
        for era in ("legacy", "modern"):
            anyio.run(server_waiting, era, n, True, backend=args.backend)
        return
    if args.backend == "asyncio":
        print(f"floor  (asyncio): {anyio.run(floor_waiting, n) / 1024:.2f} KB per bare task awaiting a future")
    figures: dict[str, list[float]] = {"legacy": [], "modern": []}
    for _ in range(rounds):  # the eras alternate: a noisy machine hits both alike
        for era in ("legacy", "modern"):
            figures[era].append(anyio.run(server_round_trips, era, calls, 100, backend=args.backend))
    per = "CPU second" if args.cpu else "s"
    for era in ("legacy", "modern"):
        mem = anyio.run(server_waiting, era, n, backend=args.backend)
        rate = statistics.median(figures[era])
        print(f"{era:6} ({args.backend}): {mem / 1024:.2f} KB per waiting call (N={n:,}, server side, raw client), "
              f"{rate:,.0f} round trips/{per} (C=100, raw client; {1e6 / rate:.0f} µs each)")
    ratio = statistics.median(figures["modern"]) / statistics.median(figures["legacy"])
    print(f"modern / legacy round trips: {ratio:.2f}")
    if args.server_only:
        return
    for era in ("legacy", "modern"):
        mem = anyio.run(waiting, era, n, backend=args.backend)
        rts = statistics.median(anyio.run(round_trips, era, calls, 100, backend=args.backend) for _ in range(rounds))
        print(f"{era:6} ({args.backend}): {mem / 1024:.1f} KB per waiting call (N={n:,}, both sides), "
              f"{rts:,.0f} elicitation round trips/s (C=100)")


if __name__ == "__main__":
    main()
