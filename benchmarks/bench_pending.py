"""Many concurrent pending elicitations, side by side: minimcp, the official SDK and the floor.

The pending scenario of ``run.py`` on its own. One session; N concurrent
``tools/call``s whose tool asks one question each; the client parks every
question until all N are pending, then answers them in random order. Printed:
time until all N are pending, time to drain, server memory per pending
elicitation, and the check that every result carries its own answer.

    python benchmarks/bench_pending.py --quick              # the smoke run .ci/run does (~15 s)
    python benchmarks/bench_pending.py -n 10000 -n 100000   # stdio, all three servers
    python benchmarks/bench_pending.py -n 100000 --backend trio --server minimcp

The servers run as separate processes over stdio, driven by ``driver.py`` (the
same raw JSON-lines client for all three); ``--memory`` adds the in-process runs
(each SDK with its own client). Figures are printed, never asserted; the exit
status is non-zero only when a run fails or an answer reached the wrong call.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(argv: list[str], timeout: float) -> dict | None:  # type: ignore[type-arg]
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, cwd=HERE.parent)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"FAILED: {' '.join(argv)}\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, action="append", help="pending elicitations (repeatable)")
    parser.add_argument("--quick", action="store_true", help="N = 1,000, asyncio, under 30 s")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--server", choices=["minimcp", "official", "floor"], action="append")
    parser.add_argument("--fills", type=int, default=1, help="fill and drain this many times per process")
    parser.add_argument("--memory", action="store_true", help="also in memory (client and server in one process)")
    args = parser.parse_args()
    sizes = args.n or ([1000] if args.quick else [1000, 10_000])
    servers = args.server or ["minimcp", "official", "floor"]
    failed = 0
    print(f"{'server':<9} {'wire':<6} {'backend':<8} {'N':>9} {'to all pending':>15} {'drain':>9} "
          f"{'bytes/pending':>14}  answers")
    for n in sizes:
        for server in servers:
            if server == "official" and n > 20_000:
                print(f"{server:<9} stdio  {args.backend:<8} {n:>9,}  skipped (about 50 KB and 4 ms per pending)")
                continue
            row = run(["benchmarks/driver.py", "pending", "--server", server, "--backend", args.backend,
                       "-n", str(n), "--fills", str(args.fills)], 1800)
            if row is None:
                failed += 1
                continue
            for f in row["fills"]:
                ok = "all own" if not f["wrong_answers"] and not f["errors"] else "WRONG"
                print(f"{server:<9} {'stdio':<6} {args.backend:<8} {n:>9,} {f['seconds_to_all_pending']:>13.3f} s "
                      f"{f['seconds_to_drain']:>7.3f} s {f['bytes_per_pending_rss']:>10,} RSS  {ok}")
            if args.memory and server != "floor":
                mrow = run(["benchmarks/inmemory.py", "pending", "--server", server, "--backend", args.backend,
                            "-n", str(n)], 1800)
                if mrow is None:
                    failed += 1
                    continue
                print(f"{server:<9} {'memory':<6} {args.backend:<8} {n:>9,} {mrow['seconds_to_all_pending']:>13.3f} s "
                      f"{mrow['seconds_to_drain']:>7.3f} s {mrow['bytes_per_pending_rss_both_sides']:>10,} RSS, "
                      "both sides  all own")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
