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
        out["gc_types"] = [[name, n] for name, n in now.most_common(25) if n > 0]
    del objects
    if tracemalloc.is_tracing():
        out["traced"] = tracemalloc.get_traced_memory()[0]
        if snapshot == "base":
            _base = tracemalloc.take_snapshot()
        elif snapshot == "diff" and _base is not None:
            now = tracemalloc.take_snapshot()
            for key, limit in (("lineno", 25), ("filename", 15)):
                diff = now.compare_to(_base, key)
                out[f"top_{key}"] = [
                    [str(d.traceback[0]).replace(os.getcwd() + "/", ""), d.size_diff, d.count_diff]
                    for d in diff[:limit]
                ]
            del now
    else:
        out["traced"] = None
    return json.dumps(out)
