"""Revision 2026-07-28 beside the handshake era: parked calls and round trips (in memory).

A tool asks one question. On the handshake era the question is a nested
``elicitation/create`` waiting in the pending table; on 2026-07-28 it is an
``input_required`` result and the tool is parked until the retry. This measures,
with client and server in one process over the in-memory transport:

* memory per waiting call (tracemalloc, both sides) with N calls waiting;
* elicitation round trips per second at C concurrent callers, each answered at once.

    python benchmarks/bench_modern.py            # N = 10,000; C = 100
    python benchmarks/bench_modern.py --quick

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Client, Context, Limits, Server, memory_pair


class Pick(msgspec.Struct):
    n: int


def build() -> Server:
    app = Server("bench", limits=Limits(elicitation_timeout=600, request_timeout=600))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    n, calls, rounds = (1_000, 1_000, 1) if args.quick else (10_000, 5_000, 3)
    for era in ("legacy", "modern"):
        mem = anyio.run(waiting, era, n, backend=args.backend)
        rts = statistics.median(anyio.run(round_trips, era, calls, 100, backend=args.backend) for _ in range(rounds))
        print(f"{era:6} ({args.backend}): {mem / 1024:.1f} KB per waiting call (N={n:,}, both sides), "
              f"{rts:,.0f} elicitation round trips/s (C=100)")


if __name__ == "__main__":
    main()
