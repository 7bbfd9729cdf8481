"""In-memory runs: client and server in one process, each SDK driven by its own client.

minimcp: ``Server`` + ``Client`` over ``memory_pair`` (the same bytes a socket
would carry). Official SDK: ``MCPServer`` + ``mcp.Client(server, mode="legacy")``
(its in-memory transport, 2025-11-25 handshake). The same tool, the same question,
the same answers; memory figures cover both sides (one process).

    python benchmarks/inmemory.py pending   --server minimcp --backend asyncio -n 10000
    python benchmarks/inmemory.py roundtrip --server official --backend trio -c 100
    python benchmarks/inmemory.py idle      --server minimcp --sessions 1000

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))

from driver import pct, token

PAGE = os.sysconf("SC_PAGE_SIZE")
LIMITS_KW = dict(max_pending_outbound=4_000_000, max_inflight_inbound=4_000_000,
                 elicitation_timeout=3600, request_timeout=3600, max_request_time=7200)


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


Answerer = Callable[[int], Awaitable[str]]  # question number -> the answer to give
Caller = Callable[[int], Awaitable[str]]    # call number -> the tool's result text


async def with_minimcp(answer: Answerer, body: Callable[[Caller, Any], Awaitable[Any]], sessions: int = 1) -> Any:
    from minimcp_server import build

    from minimcp import Accepted, Client, Limits, memory_pair

    limits = Limits(**LIMITS_KW)  # type: ignore[arg-type]
    app = build(limits)

    async def handler(q: Any) -> Any:
        return Accepted({"answer": await answer(int(q.message.rsplit(" ", 1)[1]))})

    async with anyio.create_task_group() as tg:
        clients: list[Any] = []
        try:
            for _ in range(sessions):
                a, b = memory_pair(buffer=1 << 20)
                await tg.start(app.serve, a)
                client = Client(b, elicitation_handler=handler, limits=limits)
                await client.__aenter__()
                clients.append(client)
            first = clients[0]

            async def call(i: int) -> str:
                return (await first.call_tool("ask", {"i": i})).text  # type: ignore[no-any-return]

            return await body(call, clients)
        finally:
            for c in reversed(clients):  # task groups nest: close the last opened first
                await c.aclose()
            tg.cancel_scope.cancel()


async def with_official(answer: Answerer, body: Callable[[Caller, Any], Awaitable[Any]], sessions: int = 1) -> Any:
    import mcp_types as types
    from mcp import Client
    from official_server import mcp

    async def callback(context: Any, params: Any) -> Any:
        text = await answer(int(params.message.rsplit(" ", 1)[1]))
        return types.ElicitResult(action="accept", content={"answer": text})

    clients: list[Any] = []
    try:
        for _ in range(sessions):
            client = Client(mcp, mode="legacy", elicitation_callback=callback, read_timeout_seconds=3600)
            await client.__aenter__()
            clients.append(client)
        first = clients[0]

        async def call(i: int) -> str:
            result = await first.call_tool("ask", {"i": i})
            return result.content[0].text  # type: ignore[no-any-return]

        return await body(call, clients)
    finally:
        for c in reversed(clients):
            await c.__aexit__(None, None, None)


async def scenario_pending(args: argparse.Namespace) -> dict[str, Any]:
    n = args.n
    parked: list[tuple[int, anyio.Event, list[str]]] = []
    all_parked = anyio.Event()
    mode = {"park": False}

    async def answer(i: int) -> str:
        if not mode["park"]:
            return token(i)
        ev, box = anyio.Event(), []  # type: ignore[var-annotated]
        parked.append((i, ev, box))
        if len(parked) == n:
            all_parked.set()
        await ev.wait()
        return box[0]  # type: ignore[no-any-return]

    async def body(call: Caller, clients: Any) -> dict[str, Any]:
        for i in range(50):  # warm-up
            assert await call(-1 - i) == token(-1 - i)
        gc.collect()
        if args.tracemalloc:
            tracemalloc.start()
        base_rss = rss()
        base_traced = tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
        mode["park"] = True
        results: dict[int, str] = {}
        done = anyio.Event()

        async def one(i: int) -> None:
            results[i] = await call(i)
            if len(results) == n:
                done.set()

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
            await all_parked.wait()
            t_pending = time.perf_counter() - t0
            gc.collect()
            full_rss = rss()
            full_traced = tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
            random.shuffle(parked)
            t1 = time.perf_counter()
            for i, ev, box in parked:
                box.append(token(i))
                ev.set()
            parked.clear()
            await done.wait()
            t_drain = time.perf_counter() - t1
        if args.tracemalloc:
            tracemalloc.stop()
        wrong = sum(results[i] != token(i) for i in range(n))
        if wrong:
            raise SystemExit(f"{wrong} results carried another call's answer")
        gc.collect()
        out = {"scenario": "pending", "n": n, "seconds_to_all_pending": round(t_pending, 4),
               "seconds_to_drain": round(t_drain, 4), "wrong_answers": wrong,
               "bytes_per_pending_rss_both_sides": round((full_rss - base_rss) / n),
               "rss_after_drain_delta": rss() - base_rss}
        if args.tracemalloc:
            out["bytes_per_pending_traced_both_sides"] = round((full_traced - base_traced) / n)
        return out

    runner = with_minimcp if args.server == "minimcp" else with_official
    return await runner(answer, body)  # type: ignore[no-any-return]


async def scenario_roundtrip(args: argparse.Namespace) -> dict[str, Any]:
    c = args.c

    async def answer(i: int) -> str:
        return token(i)

    async def body(call: Caller, clients: Any) -> dict[str, Any]:
        counter = iter(range(1 << 62))
        state: dict[str, Any] = {"measure": False, "stop": False, "lat": [], "done": 0, "wrong": 0}
        warm = anyio.Event()

        async def caller() -> None:
            while not state["stop"]:
                i = next(counter)
                t0 = time.perf_counter()
                text = await call(i)
                if text != token(i):
                    state["wrong"] += 1
                state["done"] += 1
                if state["done"] >= max(c, 200):
                    warm.set()
                if state["measure"]:
                    state["lat"].append(time.perf_counter() - t0)

        async with anyio.create_task_group() as tg:
            t_start = time.perf_counter()
            for _ in range(c):
                tg.start_soon(caller)
            with anyio.move_on_after(args.max_seconds):
                await warm.wait()
            await anyio.sleep(max(0.0, 0.5 - (time.perf_counter() - t_start)))
            state["measure"] = True
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            await anyio.sleep(args.seconds)
            while len(state["lat"]) < c and time.perf_counter() - t0 < args.max_seconds:  # noqa: ASYNC110 (at least one wave)
                await anyio.sleep(0.05)
            elapsed = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            lat = state["lat"]
            state["measure"] = False
            state["stop"] = True
        if state["wrong"]:
            raise SystemExit(f"{state['wrong']} results carried another call's answer")
        return {"scenario": "roundtrip", "c": c, "calls": len(lat), "seconds": round(elapsed, 3),
                "round_trips_per_second": round(len(lat) / elapsed, 1),
                "p50_ms": round(pct(lat, 0.5) * 1e3, 3), "p99_ms": round(pct(lat, 0.99) * 1e3, 3),
                "process_cpu_share": round(cpu / elapsed, 3), "wrong_answers": 0}

    runner = with_minimcp if args.server == "minimcp" else with_official
    return await runner(answer, body)  # type: ignore[no-any-return]


async def scenario_idle(args: argparse.Namespace) -> dict[str, Any]:
    """Bytes per idle initialized session (both sides, one process)."""
    gc.collect()
    tracemalloc.start()
    base_rss, base_traced = rss(), tracemalloc.get_traced_memory()[0]

    async def answer(i: int) -> str:
        return token(i)

    async def body(call: Caller, clients: Any) -> dict[str, Any]:
        gc.collect()
        return {"rss": rss(), "traced": tracemalloc.get_traced_memory()[0]}

    runner = with_minimcp if args.server == "minimcp" else with_official
    t0 = time.perf_counter()
    full = await runner(answer, body, sessions=args.sessions)
    elapsed = time.perf_counter() - t0
    tracemalloc.stop()
    return {"scenario": "idle", "sessions": args.sessions, "seconds_to_open_and_close": round(elapsed, 3),
            "bytes_per_idle_session_traced_both_sides": round((full["traced"] - base_traced) / args.sessions),
            "bytes_per_idle_session_rss_both_sides": round((full["rss"] - base_rss) / args.sessions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["pending", "roundtrip", "idle"])
    parser.add_argument("--server", choices=["minimcp", "official"], default="minimcp")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("-c", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    fn = {"pending": scenario_pending, "roundtrip": scenario_roundtrip, "idle": scenario_idle}[args.scenario]
    backend = "trio" if args.backend == "trio" else "asyncio"
    options = {"use_uvloop": True} if args.backend == "uvloop" else {}
    row = anyio.run(fn, args, backend=backend, backend_options=options)
    row.update(server=args.server, wire="memory", backend=args.backend)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
