"""Two checkouts of minimcp side by side: the same benchmarks, interleaved, medians.

    python benchmarks/tools/compare_trees.py BEFORE_DIR AFTER_DIR [--repeats 3] [--out FILE]

Each checkout runs its own ``benchmarks/driver.py`` and ``benchmarks/inmemory.py`` (so each
measures its own library), jobs alternate between the two (A B, A B, ...) so that a busy spell
of the machine hits both, and the table gives the median of each figure per checkout with the
after/before ratio. Used for the before/after table of a refactoring (issue #17): server memory
per pending elicitation at 10,000 and 100,000, time to 10,000 pending, round trips/s at C=100
and C=1,000, over stdio, in memory and WebSocket, on asyncio and trio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

# (label, script, arguments, the figures to read from its JSON row)
Job = tuple[str, str, list[str], dict[str, str]]

PENDING = {"bytes/pending": "fills.0.bytes_per_pending_rss", "s to fill": "fills.0.seconds_to_all_pending"}
ROUNDTRIP = {"rt/s": "round_trips_per_second", "p99 ms": "p99_ms", "server CPU µs/rt": "=server_us_per_rt"}


def jobs(backend: str, seconds: float) -> list[Job]:
    b = ["--backend", backend]
    win = ["--seconds", str(seconds)]
    out: list[Job] = [
        ("stdio pending 10k", "driver.py", ["pending", "--server", "minimcp", *b, "-n", "10000", "--fills", "1"],
         PENDING),
        ("stdio pending 100k", "driver.py", ["pending", "--server", "minimcp", *b, "-n", "100000", "--fills", "1"],
         PENDING),
    ]
    for c in ("100", "1000"):
        out.append((f"stdio C={c}", "driver.py", ["roundtrip", "--server", "minimcp", *b, "-c", c, *win], ROUNDTRIP))
        out.append((f"memory C={c}", "inmemory.py", ["roundtrip", "--server", "minimcp", *b, "-c", c, *win],
                    ROUNDTRIP))
        out.append((f"ws C={c}", "driver.py", ["roundtrip", "--server", "minimcp", "--wire", "ws", *b, "-c", c, *win],
                    ROUNDTRIP))
    out.append(("memory pending 10k", "inmemory.py", ["pending", "--server", "minimcp", *b, "-n", "10000"],
                {"bytes/pending (both sides)": "bytes_per_pending_rss_both_sides",
                 "s to fill": "seconds_to_all_pending"}))
    return out


def dig(row: dict[str, Any], path: str) -> float | None:
    if path == "=server_us_per_rt":  # the server's CPU per round trip (steadier than a rate on a busy machine)
        share, rate = row.get("server_cpu_share"), row.get("round_trips_per_second")
        return share / rate * 1e6 if share and rate else None
    value: Any = row
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)] if int(part) < len(value) else None
        elif isinstance(value, dict):
            value = value.get(part)
        if value is None:
            return None
    return float(value)


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def run(tree: Path, script: str, argv: list[str]) -> dict[str, Any] | None:
    cmd = [sys.executable, str(tree / "benchmarks" / script), *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tree)
    except subprocess.TimeoutExpired:
        print(f"  timeout: {' '.join(cmd)}", file=sys.stderr)
        return None
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not rows:
        print(f"  failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-1500:]}", file=sys.stderr)
        return None
    row: dict[str, Any] = json.loads(rows[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--repeats", type=int, default=3, help="rounds on asyncio (trio: one)")
    parser.add_argument("--backends", default="asyncio,trio")
    parser.add_argument("--seconds", type=float, default=1.5, help="each round-trip window")
    parser.add_argument("--out", type=Path, help="write the raw figures as JSON here")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    figures: dict[tuple[str, str, str, str], list[float]] = {}
    for backend in args.backends.split(","):
        rounds = args.repeats if backend == "asyncio" else 1
        for r in range(rounds):
            for label, script, argv, reads in jobs(backend, args.seconds):
                for side, tree in (trees.items() if r % 2 == 0 else reversed(trees.items())):
                    row = run(tree, script, argv)
                    for name, path in reads.items():
                        value = dig(row, path) if row else None
                        if value is not None:
                            figures.setdefault((backend, label, name, side), []).append(value)
                print(f"  {backend} round {r + 1}/{rounds}: {label}", file=sys.stderr, flush=True)
    table = ["| backend | measure | figure | before | after | after/before |", "|---|---|---|---:|---:|---:|"]
    raw: list[dict[str, Any]] = []
    seen: list[tuple[str, str, str]] = []
    for backend, label, name, _side in figures:
        if (backend, label, name) not in seen:
            seen.append((backend, label, name))
    for backend, label, name in seen:
        b = figures.get((backend, label, name, "before"), [])
        a = figures.get((backend, label, name, "after"), [])
        mb = statistics.median(b) if b else None
        ma = statistics.median(a) if a else None
        ratio = f"{ma / mb:.2f}" if mb and ma is not None else "-"
        table.append(f"| {backend} | {label} | {name} | {fmt(mb)} | {fmt(ma)} | {ratio} |")
        raw.append({"backend": backend, "measure": label, "figure": name, "before": b, "after": a})
    print("\n".join(table))
    if args.out:
        args.out.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
