"""Streamable HTTP, two checkouts of minimcp side by side with the floor and the official SDK (JSON lines).

    python benchmarks/tools/http_before_after.py --before /path/to/old/checkout --after . --repeats 3 \\
        [--what rt100,rt1000,sessions,idle] [--variants before,after,floor,official] > rows.jsonl

Each figure runs for every variant back to back, and the whole set ``--repeats`` times, so
that load on the machine falls on all variants alike; take medians. minimcp and the floor are
served by uvicorn with httptools (``--asgi uvicorn-httptools``), the official SDK by its own
app on uvicorn. Each row is the driver's output plus ``variant`` and the 1-minute load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def run(trees: dict[str, str], variant: str, args: list[str]) -> None:
    tree = trees.get(variant, trees["after"])
    server = {"floor": "floor", "official": "official"}.get(variant, "minimcp")
    asgi = [] if variant == "official" else ["--asgi", "uvicorn-httptools"]
    cmd = [sys.executable, f"{tree}/benchmarks/driver.py", *args, "--server", server, "--wire", "http", *asgi]
    load = os.getloadavg()[0]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=tree), timeout=900)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        out = {"error": "\n".join(line for line in p.stderr.splitlines() if "POST failed" not in line)[-3000:]}
    out.update(variant=variant, load=round(load, 2), args=" ".join(args))
    print(json.dumps(out), flush=True)


FIGURES = {
    "rt100": ["roundtrip", "-c", "100", "--seconds", "4"],
    "rt1000": ["roundtrip", "-c", "1000", "--seconds", "5"],
    "sessions": ["sessions", "--sessions", "500", "--per", "10"],
    "idle": ["idle", "--sessions", "1000"],
    "pending10k": ["pending", "-n", "10000", "--fills", "3"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", default=".")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--what", default="rt100,rt1000,sessions,idle")
    parser.add_argument("--variants", default="before,after,floor,official")
    args = parser.parse_args()
    trees = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    for _ in range(args.repeats):
        for figure in args.what.split(","):
            for variant in args.variants.split(","):
                if variant == "official" and figure not in ("rt100", "rt1000"):
                    continue  # the official SDK's memory figures are in the main tables
                run(trees, variant, FIGURES[figure])


if __name__ == "__main__":
    main()
