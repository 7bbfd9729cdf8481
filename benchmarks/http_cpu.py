"""Streamable HTTP server CPU per round trip: two checkouts' ``serve_http`` as shipped, interleaved, beside the floor.

    python benchmarks/http_cpu.py --before /work/main --after . --repeats 3 [-c 100,1000] [--seconds 3]
        [--variants before,after,floor,official] [--env after-gc:BENCH_GC=10000,BENCH_FREEZE=1] > rows.jsonl
    python benchmarks/http_cpu.py --summary rows.jsonl

Each repeat runs every variant back to back for each ``-c`` (the order alternating between
repeats), so that load on the machine falls on all alike; the summary gives medians of the
server's CPU per round trip (its CPU seconds in the window over the round trips) and of the
round trips/s. minimcp runs on ``serve_http`` with its default ASGI server (uvicorn with
httptools, guarded), the floor on uvicorn with httptools, the official SDK on its own app.
``--env NAME:K=V,...`` adds a variant: the "after" tree with those environment variables
(e.g. the benchmark server's analysis switches, ``BENCH_GC`` / ``BENCH_FREEZE``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict


def run_one(tree: str, server: str, c: int, seconds: float, env: dict[str, str]) -> dict[str, object]:
    asgi = {"floor": ["--asgi", "uvicorn-httptools"], "official": []}.get(server, ["--asgi", "default"])
    cmd = [sys.executable, f"{tree}/benchmarks/driver.py", "roundtrip", "--server", server, "--wire", "http",
           *asgi, "-c", str(c), "--seconds", str(seconds), "--max-seconds", "60"]
    load = os.getloadavg()[0]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": tree, **env}, timeout=600)
    try:
        out: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": p.stderr[-2000:], "load": round(load, 2)}
    rate = float(out["round_trips_per_second"])  # type: ignore[arg-type]
    share = float(out["server_cpu_share"])  # type: ignore[arg-type]
    out["cpu_us_per_rt"] = round(share / rate * 1e6, 1) if rate else None
    out["load"] = round(load, 2)
    return out


def summary(path: str) -> None:
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    by: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    for r in rows:
        if "error" not in r:
            by[(r["variant"], r["c"])].append(r)
    loads = [r["load"] for r in rows]
    print(f"load average (1 min) during the runs: {min(loads)}-{max(loads)}")
    print("| variant | C | round trips/s | server CPU per rt (µs) | p50 / p99 (ms) | runs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for (variant, c), rs in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = {k: statistics.median(r[k] for r in rs) for k in ("round_trips_per_second", "cpu_us_per_rt",
                                                                  "p50_ms", "p99_ms")}
        cpus = sorted(r["cpu_us_per_rt"] for r in rs)
        print(f"| {variant} | {c} | {med['round_trips_per_second']:,.0f} | {med['cpu_us_per_rt']:,.0f} "
              f"({cpus[0]:,.0f}-{cpus[-1]:,.0f}) | {med['p50_ms']:,.0f} / {med['p99_ms']:,.0f} | {len(rs)} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="/work/main")
    parser.add_argument("--after", default=".")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-c", default="100,1000")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--variants", default="before,after,floor,official")
    parser.add_argument("--env", action="append", default=[], metavar="NAME:K=V,...")
    parser.add_argument("--summary", metavar="ROWS")
    args = parser.parse_args()
    if args.summary:
        summary(args.summary)
        return
    trees = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    variants: list[tuple[str, str, str, dict[str, str]]] = []
    for v in args.variants.split(","):
        server = v if v in ("floor", "official") else "minimcp"
        variants.append((v, trees.get(v, trees["after"]), server, {}))
    for spec in args.env:
        name, _, pairs = spec.partition(":")
        env = dict(p.split("=", 1) for p in pairs.split(",") if p)
        variants.append((name, trees["after"], "minimcp", env))
    for r in range(args.repeats):
        for c in (int(x) for x in args.c.split(",")):
            order = variants if r % 2 == 0 else variants[::-1]
            for name, tree, server, env in order:
                out = run_one(tree, server, c, args.seconds, env)
                out.update(variant=name, repeat=r)
                out.setdefault("c", c)
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
