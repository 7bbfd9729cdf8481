"""The booking example (``examples/booking.py``) as a benchmark server over stdio.

The example's own server and tool, unchanged, plus the ``stats`` tool every benchmark server
has; only the set of full dates is the benchmark's (``floor_booking.FULL_DATES``: every other
day from 2030-01-01), so each of the driver's calls hits a full date of its own and is asked
the example's question once.

    python benchmarks/servers/booking_server.py [--backend asyncio|uvloop|trio] [--tracemalloc]

``BENCH_CPROFILE=FILE`` in the environment writes a cProfile of the run to FILE when stdin closes.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run from a checkout
sys.path.insert(0, str(ROOT / "examples"))

import anyio  # noqa: E402
import booking  # noqa: E402
from floor_booking import FULL_DATES  # noqa: E402
from instrument import stats_text  # noqa: E402


async def main() -> None:
    booking.FULL_DATES = FULL_DATES
    app = booking.build(elicitation_timeout=3600)

    @app.server.tool()
    async def stats(collect: bool = False, snapshot: str = "") -> str:
        """This process's memory (benchmark instrumentation)."""
        return stats_text(collect, snapshot)

    await app.server.serve_stdio()


if __name__ == "__main__":
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--transport", choices=["stdio"], default="stdio")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    options = {"use_uvloop": True} if args.backend == "uvloop" else {}
    profile = os.environ.get("BENCH_CPROFILE")  # analysis: a cProfile of the whole run, written at the end
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main, backend="trio" if args.backend == "trio" else "asyncio", backend_options=options)
    if profile:
        profiler.disable()
        profiler.dump_stats(profile)
