"""The realistic tool: the booking example beside the one-field benchmark tool and the raw floors, over stdio.

For each server: server RSS per pending elicitation at N = 10,000, the time until all 10,000 are
pending, and round trips/s at C = 100 (``driver.py``; asyncio; the example's server is
``servers/booking_server.py``, its floor ``servers/floor_booking.py``). Several minimcp trees
(``--tree NAME=PATH``, e.g. a checkout of another commit with this checkout's ``benchmarks/``
copied in) are measured in the same run, runs interleaved; medians of ``--repeats``.

    python benchmarks/bench_booking.py [--repeats 5] [--tree main=/tmp/main --tree this=.]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable


def run(tree: Path, argv: list[str]) -> dict[str, Any]:
    r = subprocess.run([PY, str(tree / "benchmarks" / "driver.py"), *argv], capture_output=True, text=True,
                       cwd=tree, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise SystemExit(f"failed: {argv} in {tree}\n{r.stderr[-2000:]}")
    row: dict[str, Any] = json.loads(lines[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("-c", type=int, default=100)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--out", default=str(HERE / "results" / "booking-latest.json"))
    args = parser.parse_args()
    trees = {k: Path(v).resolve() for k, v in (t.split("=", 1) for t in args.tree)} or {"this": HERE.parent}
    first = next(iter(trees.values()))
    plan: list[tuple[str, Path, str]] = [("floor", first, "floor"), ("floor-booking", first, "floor-booking")]
    for name, path in trees.items():
        plan += [(f"minimcp {name}", path, "minimcp"), (f"booking {name}", path, "booking")]
    rows: dict[str, dict[str, list[float]]] = {
        label: {"rss": [], "fill": [], "rt": [], "cpu_fill_us": [], "cpu_rt_us": []} for label, _, _ in plan
    }
    for r in range(args.repeats):
        for label, path, server in plan:
            p = run(path, ["pending", "--server", server, "-n", str(args.n)])["fills"][0]
            rt = run(path, ["roundtrip", "--server", server, "-c", str(args.c), "--seconds", "1.5"])
            rows[label]["rss"].append(p["bytes_per_pending_rss"])
            rows[label]["fill"].append(p["seconds_to_all_pending"])
            rows[label]["rt"].append(rt["round_trips_per_second"])
            # server CPU per call: steadier than wall-clock figures when the machine is shared
            rows[label]["cpu_fill_us"].append(p["server_cpu_seconds_fill"] / args.n * 1e6)
            rows[label]["cpu_rt_us"].append(rt["server_cpu_share"] / rt["round_trips_per_second"] * 1e6)
            print(f"[{r + 1}/{args.repeats}] {label:24s} {p['bytes_per_pending_rss']:6d} B/pending "
                  f"fill {p['seconds_to_all_pending']:.3f} s  {rt['round_trips_per_second']:9,.0f} rt/s", flush=True)
    med = {label: {k: statistics.median(v) for k, v in m.items()} for label, m in rows.items()}
    print(f"\n{'server':24s} {'RSS/pending':>12s} {'fill ' + str(args.n):>12s} {'rt/s C=' + str(args.c):>12s} "
          f"{'CPU/call fill':>14s} {'CPU/round trip':>15s}")
    for label, m in med.items():
        print(f"{label:24s} {m['rss'] / 1024:10.2f} KB {m['fill']:10.3f} s {m['rt']:12,.0f} "
              f"{m['cpu_fill_us']:11.1f} µs {m['cpu_rt_us']:12.1f} µs")
    fb = med["floor-booking"]
    for name in trees:
        b, t = med[f"booking {name}"], med[f"minimcp {name}"]
        print(f"{name}: booking / tool memory {b['rss'] / t['rss']:.2f}x (target <= 1.5x); "
              f"fill {b['fill'] / fb['fill']:.2f}x the booking floor's, round trips {b['rt'] / fb['rt']:.2f}x "
              f"(targets: within 2x); server CPU per call: fill {b['cpu_fill_us'] / fb['cpu_fill_us']:.2f}x, "
              f"round trip {b['cpu_rt_us'] / fb['cpu_rt_us']:.2f}x the booking floor's")
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n": args.n, "c": args.c,
           "trees": {k: str(v) for k, v in trees.items()}, "rows": rows, "medians": med}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
