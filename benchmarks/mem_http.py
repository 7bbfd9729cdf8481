"""Where a Streamable HTTP server's bytes go: per idle session and per pending elicitation, by owner.

    python benchmarks/mem_http.py idle [--sessions 1000] [--frames 25]
    python benchmarks/mem_http.py sessions [--sessions 500 --per 10] [--frames 25]
    python benchmarks/mem_http.py ... --rss-only      # no tracemalloc: server RSS only

The benchmark server (``servers/minimcp_server.py``: the real app on ``serve_http``, uvicorn) runs
as the driver's child, with tracemalloc keeping ``--frames`` frames per allocation; its ``stats``
tool is replaced by a richer one (same keys): ``top_lineno`` attributes each allocation to the
innermost frame in ``minimcp/`` (else the innermost outside the standard library: uvicorn,
anyio, ...), so a line of ours is charged with what anyio or asyncio allocates on its behalf;
``top_filename`` is the allocating file itself; ``gc_types`` counts the objects the cyclic GC tracks,
by type. ``idle`` opens ``--sessions`` initialized sessions beside a first one and reports per
session; ``sessions`` is ``driver.py sessions`` (the first fill: per pending elicitation).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import sysconfig
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "servers"))

_STDLIB = sysconfig.get_paths()["stdlib"]
_base: tracemalloc.Snapshot | None = None
_base_types: Counter[str] | None = None


def _owner(tb: tracemalloc.Traceback) -> str:
    frames = list(tb)  # oldest first
    for frame in reversed(frames):
        if "/minimcp/" in frame.filename:
            return f"{frame.filename.split('/minimcp/', 1)[1]}:{frame.lineno}"
    for frame in reversed(frames):
        if not frame.filename.startswith(_STDLIB) or "site-packages" in frame.filename:
            name = frame.filename.split("site-packages/", 1)[-1]
            return f"{name}:{frame.lineno}"
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}"


def _type_name(o: object) -> str:
    t = type(o)
    if t.__name__ in ("coroutine", "frame", "async_generator"):
        code = getattr(o, "cr_code", None) or getattr(o, "ag_code", None) or getattr(o, "f_code", None)
        if code is not None:
            return f"{t.__name__} {code.co_qualname}"
    return f"{t.__module__}.{t.__qualname__}"


def rich_stats(collect: bool = False, snapshot: str = "") -> str:
    """The ``stats`` tool of ``servers/instrument.py``, with owners and every type."""
    from instrument import rss_bytes

    global _base, _base_types
    if collect:
        gc.collect()
    objects = gc.get_objects()
    out: dict[str, Any] = {"rss": rss_bytes(), "gc_objects": len(objects)}
    if snapshot == "base":
        _base_types = Counter(_type_name(o) for o in objects)
    elif snapshot == "diff" and _base_types is not None:
        now_types = Counter(_type_name(o) for o in objects)
        now_types.subtract(_base_types)
        out["gc_types"] = [[name, n] for name, n in now_types.most_common(40) if n > 0]
    del objects
    out["traced"] = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
    if tracemalloc.is_tracing():
        if snapshot == "base":
            _base = tracemalloc.take_snapshot()
        elif snapshot == "diff" and _base is not None:
            now = tracemalloc.take_snapshot()
            owners: Counter[str] = Counter()
            blocks: Counter[str] = Counter()
            for d in now.compare_to(_base, "traceback"):
                key = _owner(d.traceback)
                owners[key] += d.size_diff
                blocks[key] += d.count_diff
            out["top_lineno"] = [[k, v, blocks[k]] for k, v in owners.most_common(40)]
            out["top_filename"] = [
                [str(d.traceback[0].filename).split("site-packages/", 1)[-1].split("/minimcp/", 1)[-1],
                 d.size_diff, d.count_diff]
                for d in now.compare_to(_base, "filename")[:20]
            ]
            del now
    return json.dumps(out)


def serve(frames: int) -> None:
    if frames:
        tracemalloc.start(frames)
    import minimcp_server

    minimcp_server.stats_text = rich_stats  # the stats tool's body looks it up at each call
    import anyio

    parser = argparse.Namespace(transport="http", backend="asyncio", tracemalloc=False, port=0, worker_id=None,
                                redis=None, backlog=0, asgi="default")
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(minimcp_server.main, parser)


def _per(rows: list[list[Any]], n: int, limit: int = 25) -> list[str]:
    return [f"{round(size / n):>7,} B {blocks / n:6.2f} blk  {name}" for name, size, blocks in rows[:limit]
            if abs(size / n) >= 8]


async def idle(args: argparse.Namespace) -> dict[str, Any]:
    import driver

    async with driver.open_sessions(args, 1) as (pid, conns):
        first = conns[0]
        for _ in range(20):  # warm-up: lazily built state exists before the baseline
            await first.call("tools/call", {"name": "stats", "arguments": {"collect": False}})
        warm = [driver.HttpConn(first.url, first.client) for _ in range(20)]
        for c in warm:
            await c.handshake()
        await asyncio.gather(*(c.close() for c in warm))
        await asyncio.sleep(0.3)
        base = await first.stats(True, "base")
        rss0 = driver.proc_rss(pid)
        extra = [driver.HttpConn(first.url, first.client) for _ in range(args.sessions)]
        sem = asyncio.Semaphore(50)

        async def up(c: Any) -> None:
            async with sem:
                await c.handshake()

        await asyncio.gather(*(up(c) for c in extra))
        await asyncio.sleep(0.5)
        full = await first.stats(True, "diff")
        rss1 = driver.proc_rss(pid)
        await asyncio.gather(*(c.close() for c in extra), return_exceptions=True)
    n = args.sessions
    out: dict[str, Any] = {
        "scenario": "idle", "sessions": n,
        "bytes_per_idle_session_rss": round((full["rss"] - base["rss"]) / n),
        "bytes_per_idle_session_rss_external": round((rss1 - rss0) / n),
        "gc_objects_per_session": round((full["gc_objects"] - base["gc_objects"]) / n, 2),
    }
    if full.get("traced") is not None:
        out["bytes_per_idle_session_traced"] = round((full["traced"] - base["traced"]) / n)
    for key in ("top_lineno", "top_filename", "gc_types"):
        if key in full:
            out[key] = full[key]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["idle", "sessions", "serve"])
    parser.add_argument("--sessions", type=int, default=0)
    parser.add_argument("--per", type=int, default=10)
    parser.add_argument("--frames", type=int, default=25)
    parser.add_argument("--rss-only", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the raw row")
    args = parser.parse_args()
    if args.scenario == "serve":
        serve(args.frames)
        return
    import driver

    frames = 0 if args.rss_only else args.frames

    def command(*_a: Any, **_k: Any) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "serve", "--frames", str(frames)]

    driver.server_command = command
    driver.TOOL = "ask"
    ns = argparse.Namespace(
        url=None, server="minimcp", wire="http", backend="asyncio", tracemalloc=not args.rss_only, asgi="default",
        sessions=args.sessions or (1000 if args.scenario == "idle" else 500), per=args.per, fills=1,
        watch=[], fill_timeout=600, max_sockets=15_000, call_offset=0, barrier=False, era="handshake",
    )
    ns.n = ns.sessions * ns.per
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.scenario == "idle":
        row = asyncio.run(idle(ns))
        n = ns.sessions
    else:
        row = asyncio.run(driver.scenario_pending(ns))
        fill = row["fills"][0]
        row = {k: v for k, v in fill.items() if not k.startswith("after_drain")}
        n = ns.n
    if args.json:
        print(json.dumps(row))
        return
    print({k: v for k, v in row.items() if not isinstance(v, list)})
    if "top_lineno" in row:
        print(f"-- per {'idle session' if args.scenario == 'idle' else 'pending elicitation'}, by owner "
              "(innermost minimcp frame, else innermost non-stdlib frame):")
        print("\n".join(_per(row["top_lineno"], n, 40)))
        print("-- by allocating file:")
        print("\n".join(_per(row["top_filename"], n, 20)))
    if "gc_types" in row:
        print("-- GC-tracked objects per unit, by type:")
        print(", ".join(f"{v / n:.2f} {k}" for k, v in row["gc_types"] if v / n >= 0.05))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
