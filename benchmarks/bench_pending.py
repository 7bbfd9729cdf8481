"""Many concurrent pending elicitations on one session (minimcp only, in memory).

A tool asks one question per call; the client parks every question until all N
calls are pending, then answers them all in random order. Reports the time
until all N are pending, the time to drain, and server-side memory per pending
elicitation (tracemalloc, the server's allocations while everything is parked).

    python benchmarks/bench_pending.py            # N = 1,000 and 10,000
    python benchmarks/bench_pending.py --quick    # N = 500 (smoke run)
    python benchmarks/bench_pending.py -n 100000 --backend trio

The side-by-side comparison with the official SDK (issue 7) builds on this.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Client, Context, ElicitationRequest, Limits, Server, memory_pair


class Pick(msgspec.Struct):
    n: int


def build_server() -> Server:
    app = Server("bench", limits=Limits(elicitation_timeout=600, request_timeout=600))

    @app.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"question {i}", Pick)
        assert isinstance(answer, Accepted) and answer.value.n == i, (i, answer)
        return str(answer.value.n)

    return app


async def run_once(n: int) -> dict[str, Any]:
    app = build_server()
    parked: list[tuple[int, anyio.Event, list[int]]] = []
    all_parked = anyio.Event()

    async def handler(q: ElicitationRequest) -> Accepted[dict[str, Any]]:
        i = int(q.message.split()[1])
        ev = anyio.Event()
        box: list[int] = []
        parked.append((i, ev, box))
        if len(parked) == n:
            all_parked.set()
        await ev.wait()
        return Accepted({"n": box[0]})

    a, b = memory_pair(buffer=n + 16)
    limits = Limits(request_timeout=600, max_request_time=3600)
    results: dict[int, str] = {}
    async with anyio.create_task_group() as tg:
        conn = await tg.start(app.serve, a)
        async with Client(b, elicitation_handler=handler, limits=limits) as client:

            async def call(i: int) -> None:
                results[i] = (await client.call_tool("ask", {"i": i})).text

            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            t0 = time.perf_counter()
            for i in range(n):
                tg.start_soon(call, i)
            await all_parked.wait()
            t_pending = time.perf_counter() - t0
            assert conn.session.pending_count == n
            parked_bytes = tracemalloc.get_traced_memory()[0] - base
            tracemalloc.stop()
            random.shuffle(parked)
            t1 = time.perf_counter()
            for i, ev, box in parked:
                box.append(i)
                ev.set()
            while len(results) < n:
                await anyio.sleep(0.01)
            t_drain = time.perf_counter() - t1
        tg.cancel_scope.cancel()
    assert all(results[i] == str(i) for i in range(n)), "an answer reached the wrong call"
    return {
        "n": n,
        "seconds_to_all_pending": round(t_pending, 3),
        "seconds_to_drain": round(t_drain, 3),
        # client and server share this process here: the figure covers both sides
        "bytes_per_pending_both_sides": round(parked_bytes / n),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, action="append")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    sizes = args.n or ([500] if args.quick else [1_000, 10_000])
    for n in sizes:
        row = anyio.run(run_once, n, backend=args.backend)
        row["backend"] = args.backend
        row["python"] = sys.version.split()[0]
        print(json.dumps(row))


if __name__ == "__main__":
    main()
