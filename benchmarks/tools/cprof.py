"""Run a benchmark server under cProfile (for machines without py-spy), as the driver's server prefix.

    BENCH_SERVER_PREFIX="python benchmarks/tools/cprof.py prof.out" \\
        python benchmarks/driver.py roundtrip --server minimcp --wire http -c 100 --seconds 5
    python benchmarks/tools/prof_summary.py prof.out --per-rt-us <CPU per round trip of an unprofiled run>

The driver appends the server's own command (``python script args...``); the interpreter
is dropped and the script runs here, in this process, profiled. On SIGINT (what the driver
sends when a prefix is set) the server exits and the statistics are written. cProfile
counts every call (here in CPU time, one clock read per call and return), so it slows
Python-heavy code more than C-heavy code: read its shares, not its absolute times.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    out, _python, script, *rest = sys.argv[1:]
    sys.argv = [script, *rest]
    sys.path.insert(0, script.rsplit("/", 1)[0] if "/" in script else ".")
    profiler = cProfile.Profile(time.process_time)  # CPU time: on a busy machine wall time counts waiting too
    try:
        profiler.runcall(runpy.run_path, script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
