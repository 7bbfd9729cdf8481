"""Python bytecodes per in-memory round trip, by function: 2026-07-28 beside the handshake era.

``instr_modern.py`` counts machine instructions for the whole process; this counts what the
interpreter runs, per Python function, so the two eras' Python paths (and the raw floor's, from
``floor_modern.py``) can be set side by side function by function. Counted with the tracer's
``opcode`` events (``sys.settrace``, ``f_trace_opcodes``), asyncio, C = 100, raw client: one run
of N calls and one of 2N after a warm-up, the difference over N. Deterministic, so a change of a
few bytecodes shows; the tracer's own cost is not counted.

    python benchmarks/tools/ops_modern.py                    # minimcp, both eras: totals by file, minimcp's functions
    python benchmarks/tools/ops_modern.py --floor            # the raw floor instead
    python benchmarks/tools/ops_modern.py --era modern --top 60 --all   # every function, not only minimcp's

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # tools/, benchmarks/
import bench_modern
import floor_modern

Counts = collections.Counter[tuple[str, str]]


def _where(frame: FrameType) -> tuple[str, str]:
    """(file, function): a file under minimcp/ or benchmarks/ by its path there, any other by its last parts."""
    name = frame.f_code.co_filename.replace("\\", "/")
    for root in ("minimcp/", "benchmarks/", "asyncio/", "anyio/", "sniffio/"):
        if root in name:
            name = root + name.rsplit(root, 1)[1]
            break
    return name, frame.f_code.co_qualname


def count(fn: Callable[[str, int, int], Awaitable[Any]], era: str, calls: int) -> Counts:
    """Bytecodes run per function while ``fn(era, calls, 100)`` runs (its set-up and end included)."""
    counts: Counts = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            counts[_where(frame)] += 1
        return tracer

    sys.settrace(tracer)
    try:
        asyncio.run(fn(era, calls, 100))  # type: ignore[arg-type]
    finally:
        sys.settrace(None)
    return counts


def per_round_trip(fn: Callable[[str, int, int], Awaitable[Any]], era: str, calls: int) -> dict[tuple[str, str], float]:
    """Bytecodes per round trip by function: (runs of ``2 * calls`` - ``calls``) / ``calls``, after a warm-up."""
    asyncio.run(fn(era, calls, 100))  # type: ignore[arg-type]  # (warm: imports, caches, specialisation)
    one, two = count(fn, era, calls), count(fn, era, 2 * calls)
    return {k: (v - one.get(k, 0)) / calls for k, v in two.items() if v != one.get(k, 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--floor", action="store_true", help="the raw floor (floor_modern.py) instead of minimcp")
    parser.add_argument("--era", choices=["legacy", "modern"], help="one era only")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=40, help="functions shown per era")
    parser.add_argument("--all", action="store_true", help="every function, not only minimcp's")
    args = parser.parse_args()
    fn = floor_modern.floor_round_trips if args.floor else bench_modern.server_round_trips
    totals: dict[str, float] = {}
    for era in [args.era] if args.era else ["legacy", "modern"]:
        per = per_round_trip(fn, era, args.calls)
        totals[era] = sum(per.values())
        by_file: dict[str, float] = collections.defaultdict(float)
        for (file, _), v in per.items():
            by_file[file] += v
        mine = sum(v for (file, _), v in per.items() if file.startswith("minimcp/"))
        print(f"== {era}: {totals[era]:,.0f} bytecodes per round trip ({mine:,.0f} in minimcp)")
        for file, v in sorted(by_file.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {v:7.0f}  {file}")
        print("  -- by function")
        shown = [(k, v) for k, v in per.items() if args.all or k[0].startswith("minimcp/")]
        for (file, name), v in sorted(shown, key=lambda kv: -kv[1])[: args.top]:
            print(f"  {v:7.0f}  {file}:{name}")
    if len(totals) == 2:
        print(f"handshake era / 2026-07-28, bytecodes: {totals['legacy'] / totals['modern']:.3f}")


if __name__ == "__main__":
    main()
