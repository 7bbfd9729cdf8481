"""The ``stats`` tool's body, shared by every benchmark server (minimcp, official SDK, floor).

``stats(collect, snapshot)`` returns JSON: this process's RSS, the bytes tracemalloc
traces (when on), the number of objects the cyclic GC tracks, and -- with
``snapshot="base"`` then ``snapshot="diff"`` -- where the traced bytes went since
the base snapshot, by allocating line and by allocating file.
"""

from __future__ import annotations

import gc
import json
import os
import tracemalloc
from collections import Counter
from typing import Any

_base: tracemalloc.Snapshot | None = None
_base_types: Counter[str] | None = None
_PAGE = os.sysconf("SC_PAGE_SIZE")
#: lines (and object types) the diff lists; ``BENCH_TRACE_LINES`` for a longer list (analysis)
_LINES = int(os.environ.get("BENCH_TRACE_LINES", "25"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def _type_name(o: object) -> str:
    t = type(o)
    if t.__name__ in ("coroutine", "frame"):
        code = getattr(o, "cr_code", None) or getattr(o, "f_code", None)
        if code is not None:
            return f"{t.__name__} {code.co_qualname}"
    return f"{t.__module__}.{t.__qualname__}"


def stats_text(collect: bool = False, snapshot: str = "") -> str:
    global _base, _base_types
    if collect:
        gc.collect()
    objects = gc.get_objects()
    out: dict[str, Any] = {"rss": rss_bytes(), "gc_objects": len(objects)}
    if snapshot == "base":  # what the cyclic GC tracks, by type (the GC's work grows with it)
        _base_types = Counter(_type_name(o) for o in objects)
    elif snapshot == "diff" and _base_types is not None:
        now = Counter(_type_name(o) for o in objects)
        now.subtract(_base_types)
        out["gc_types"] = [[name, n] for name, n in now.most_common(_LINES) if n > 0]
    del objects
    if tracemalloc.is_tracing():
        out["traced"] = tracemalloc.get_traced_memory()[0]
        if snapshot == "base":
            _base = tracemalloc.take_snapshot()
        elif snapshot == "diff" and _base is not None:
            now = tracemalloc.take_snapshot()
            for key, limit in (("lineno", _LINES), ("filename", 15)):
                diff = now.compare_to(_base, key)
                out[f"top_{key}"] = [
                    [str(d.traceback[0]).replace(os.getcwd() + "/", ""), d.size_diff, d.count_diff]
                    for d in diff[:limit]
                ]
            del now
    else:
        out["traced"] = None
    return json.dumps(out)


#: Analysis counters: ``asks`` is counted by each server's ask tool, the rest by :func:`count_writes`.
COUNTS = {"asks": 0, "writes": 0, "tasks": 0, "timers": 0}


def time_gc(path: str) -> None:
    """Analysis only: the cyclic GC's passes and CPU time by generation, written to ``path`` as they go."""
    import json
    import time

    totals = {str(g): [0, 0.0, 0] for g in range(3)}  # passes, CPU seconds, objects collected
    started: list[float] = [0.0]
    heap: list[int] = []  # objects tracked at each full pass
    last_dump = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        now = time.process_time()
        if phase == "start":
            started[0] = now
            if info["generation"] == 2 and COUNTS["asks"]:
                heap.append(len(gc.get_objects()))  # (a full pass is coming anyway)
            return
        if not COUNTS["asks"]:
            return  # start-up and the handshake: not counted
        row = totals[str(info["generation"])]
        row[0] += 1
        row[1] += now - started[0]
        row[2] += info["collected"]
        if now - last_dump[0] > 0.25:
            last_dump[0] = now
            with open(path, "w") as f:
                json.dump({"cpu": now, "gc": totals, "asks": COUNTS["asks"], "heap": heap,
                           "us_per_ask": {g: round(r[1] / COUNTS["asks"] * 1e6, 1) for g, r in totals.items()}}, f)

    gc.callbacks.append(on_gc)


def count_writes(path: str) -> None:
    """Analysis only: socket writes (non-empty transport writes), tasks, timers and ``ask`` calls, to ``path``."""
    import asyncio
    import asyncio.selector_events as selector_events
    import json
    import time

    write = selector_events._SelectorSocketTransport.write
    last = [0.0]

    def counted(self: Any, data: Any) -> None:
        if data:
            COUNTS["writes"] += 1
            now = time.monotonic()
            if now - last[0] > 0.25:
                last[0] = now
                with open(path, "w") as f:
                    json.dump(COUNTS, f)
        write(self, data)

    selector_events._SelectorSocketTransport.write = counted  # type: ignore[method-assign]
    create_task = asyncio.BaseEventLoop.create_task
    call_at = asyncio.BaseEventLoop.call_at

    def counted_task(self: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS["tasks"] += 1
        return create_task(self, *args, **kwargs)

    def counted_timer(self: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS["timers"] += 1
        return call_at(self, *args, **kwargs)

    asyncio.BaseEventLoop.create_task = counted_task  # type: ignore[method-assign]
    asyncio.BaseEventLoop.call_at = counted_timer  # type: ignore[method-assign]


def analysis_hooks() -> None:
    """The switches of an analysis run, from the environment: ``BENCH_COUNT=path`` (:func:`count_writes`),
    ``BENCH_GCSTATS=path`` (:func:`time_gc`)."""
    if os.environ.get("BENCH_COUNT"):
        count_writes(os.environ["BENCH_COUNT"])
    if os.environ.get("BENCH_GCSTATS"):
        time_gc(os.environ["BENCH_GCSTATS"])
