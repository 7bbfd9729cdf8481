"""Run every benchmark: minimcp side by side with the official SDK and the floor.

    python benchmarks/run.py            # the lot (about 15 minutes on 2 cores)
    python benchmarks/run.py --quick    # a smoke run (under a minute)
    python benchmarks/run.py --only stdio-pending,stdio-roundtrip --repeats 5
    python benchmarks/run.py --million  # also 1,000,000 pending elicitations on minimcp (~6 GB)

Every measurement runs in fresh processes (``driver.py`` for stdio / WebSocket /
Streamable HTTP, the server a separate process; ``inmemory.py`` for the in-process
runs). Repeats are interleaved (A B C, A B C, ...) and medians are quoted.

Writes ``benchmarks/results/<stamp>.json`` and ``latest.json`` (machine, package
versions, every raw row, the medians and the target check), ``benchmarks/results/chart.png``
and every table in ``benchmarks/results/latest.md``. Figures are printed, never asserted:
the exit status only says whether every run completed with every answer checked.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PY = sys.executable

try:
    import uvloop  # noqa: F401

    HAVE_UVLOOP = True
except ImportError:
    HAVE_UVLOOP = False


# --- the plan ------------------------------------------------------------------------------------


class Job:
    def __init__(self, group: str, argv: list[str], timeout: float, repeats: int | None = None) -> None:
        self.group = group
        self.argv = argv
        self.timeout = timeout
        self.repeats = repeats  # None: the run's --repeats

    def __repr__(self) -> str:
        return " ".join(self.argv)


def backends() -> list[str]:
    return ["asyncio", "uvloop", "trio"] if HAVE_UVLOOP else ["asyncio", "trio"]


def plan(args: argparse.Namespace) -> list[Job]:
    drv = [PY, str(HERE / "driver.py")]
    mem = [PY, str(HERE / "inmemory.py")]
    jobs: list[Job] = []
    add = jobs.append
    quick = args.quick
    win = ["--seconds", "1" if quick else "1.5"]
    if args.only and "scaleout" in args.only.split(","):
        jobs += scaleout_jobs(quick)
    # 8. 10,000 pending calls over Streamable HTTP on one process (10,000 open response streams, one session):
    #    minimcp as shipped (serve_http) and the HTTP floor on the same ASGI server (uvicorn httptools), adjacent
    #    runs, 3 fills each (only with --only http-10k; --quick: 1,000)
    if args.only and "http-10k" in args.only.split(","):
        pend = [*drv, "pending", "--wire", "http", "-n", "1000" if quick else "10000", "--fills", "3",
                "--fill-timeout", "300"]
        add(Job("http-10k", [*pend, "--server", "minimcp"], 1200))
        add(Job("http-10k", [*pend, "--server", "floor", "--asgi", "uvicorn-httptools"], 1200))

    # 9. revision 2026-07-28 over Streamable HTTP beside the handshake era (only with --only http-modern): parked
    #    calls (no connection held while a call waits: the driver's pool is 100 sockets) and round trips, adjacent runs
    if args.only and "http-modern" in args.only.split(","):
        http = [*drv, "--wire", "http", "--server", "minimcp"]
        n = "1000" if quick else "10000"
        add(Job("http-modern", [*http[:2], "pending", *http[2:], "--era", "modern", "-n", n, "--fills", "3",
                                "--fill-timeout", "300"], 1200, 1))
        for c in (100, 1000):
            for era in ("handshake", "modern"):
                add(Job("http-modern", [*http[:2], "roundtrip", *http[2:], "--era", era, "-c", str(c), *win,
                                        "--max-seconds", "60"], 300))

    if quick:
        for s in ("minimcp", "official", "floor"):
            add(Job("stdio-pending", [*drv, "pending", "--server", s, "-n", "1000", "--fills", "2"], 60, 1))
            add(Job("stdio-roundtrip", [*drv, "roundtrip", "--server", s, "-c", "100", *win], 60, 1))
        for s in ("minimcp", "official"):
            add(Job("memory-pending", [*mem, "pending", "--server", s, "-n", "500"], 60, 1))
            add(Job("memory-roundtrip", [*mem, "roundtrip", "--server", s, "-c", "100", *win], 60, 1))
        add(Job("ws-roundtrip", [*drv, "roundtrip", "--server", "minimcp", "--wire", "ws", "-c", "100", *win], 60, 1))
        return jobs

    # 1. pending, stdio (server a separate process, the raw driver for all three)
    for b in backends():
        for s in ("minimcp", "floor", "official"):
            # medians of --repeats on asyncio (the official SDK's 10,000: 20 s a run, once); one run elsewhere
            one = None if b == "asyncio" else 1
            fills = "1" if s == "official" else "3"  # the fill/drain/refill check is for minimcp and the floor
            add(Job("stdio-pending", [*drv, "pending", "--server", s, "--backend", b, "-n", "1000"], 120, one))
            add(Job("stdio-pending", [*drv, "pending", "--server", s, "--backend", b, "-n", "10000",
                                      "--fills", fills], 300, 1 if s == "official" else one))
        for s in ("minimcp", "floor"):
            fills = "3" if b == "asyncio" else "1"
            add(Job("stdio-pending", [*drv, "pending", "--server", s, "--backend", b, "-n", "100000",
                                      "--fills", fills], 600, 1))
    # where the bytes go: one tracemalloc run per server at N = 10,000 (timings not used)
    for s in ("minimcp", "floor", "official"):  # (the official SDK at 3,000: tracing it is slow)
        n = "3000" if s == "official" else "10000"
        add(Job("stdio-tracemalloc", [*drv, "pending", "--server", s, "-n", n, "--fills", "2", "--tracemalloc"],
                300, 1))
    if args.million:
        add(Job("stdio-pending", [*drv, "pending", "--server", "minimcp", "-n", "1000000"], 1800, 1))
        add(Job("stdio-pending", [*drv, "pending", "--server", "floor", "-n", "1000000"], 1800, 1))

    # 2. round trips, stdio
    for b in backends():
        for s in ("minimcp", "floor", "official"):
            for c in (1, 100, 1000, 10000):
                if s == "official" and c == 10000 and b != "asyncio":
                    continue  # about a minute per run: asyncio only
                reps = 1 if (s == "official" and c == 10000) or b != "asyncio" else None
                mx = "120" if s == "official" else "30"
                add(Job("stdio-roundtrip", [*drv, "roundtrip", "--server", s, "--backend", b, "-c", str(c), *win,
                                            "--max-seconds", mx], 400, reps))

    # 3. in memory (each SDK with its own client), WebSocket and Streamable HTTP round trips
    for b in backends():
        for s in ("minimcp", "official"):
            add(Job("memory-pending", [*mem, "pending", "--server", s, "--backend", b, "-n", "1000"], 120))
            add(Job("memory-pending", [*mem, "pending", "--server", s, "--backend", b, "-n", "10000"], 300,
                    None if b == "asyncio" and s == "minimcp" else 1))
            for c in (1, 100, 1000):
                add(Job("memory-roundtrip", [*mem, "roundtrip", "--server", s, "--backend", b, "-c", str(c), *win],
                        200, None if b == "asyncio" else 1))
        for c in (1, 100, 1000):
            add(Job("ws-roundtrip", [*drv, "roundtrip", "--server", "minimcp", "--wire", "ws", "--backend", b,
                                     "-c", str(c), *win], 200, None if b == "asyncio" else 1))
            for s in ("minimcp", "official"):
                if s == "official" and b == "trio":
                    continue  # its HTTP app is served by uvicorn (asyncio only)
                add(Job("http-roundtrip", [*drv, "roundtrip", "--server", s, "--wire", "http", "--backend", b,
                                           "-c", str(c), *win, "--max-seconds", "60"], 300,
                        None if b == "asyncio" and c == 100 else 1))

    # 4. many sessions: 1,000 sessions x 10 pending (WebSocket: minimcp; Streamable HTTP: both, 500 x 10,
    #    since 10,000 open response streams need more sockets than this machine's 20,000 descriptors allow)
    add(Job("sessions", [*drv, "sessions", "--server", "minimcp", "--wire", "ws", "--sessions", "1000",
                         "--per", "10", "--fills", "3"], 300))
    add(Job("sessions", [*drv, "sessions", "--server", "minimcp", "--wire", "ws", "--backend", "trio",
                         "--sessions", "1000", "--per", "10"], 300, 1))
    for s in ("minimcp", "official"):
        add(Job("sessions", [*drv, "sessions", "--server", s, "--wire", "http", "--sessions", "500", "--per", "10"],
                300, 1))

    # 6. Streamable HTTP: minimcp and the HTTP floor on each ASGI server and loop, side by side (adjacent runs),
    #    with minimcp's own serve_http and the official SDK beside them (only with --only http-servers)
    if args.only and "http-servers" in args.only.split(","):
        from servers.asgi_run import ASGI_SERVERS, supports

        for c in (100, 1000):
            cc = ["-c", str(c), *win, "--max-seconds", "60"]
            for asgi in ASGI_SERVERS:
                for b in backends():
                    # trio at C = 1,000: hypercorn falls so far behind that the driver runs out of its
                    # 15,000 sockets (answers wait for connections) and the run never ends; run it by hand
                    if supports(asgi, b) and not (b == "trio" and c == 1000 and asgi == "hypercorn"):
                        for s in ("minimcp", "floor"):
                            add(Job("http-servers", [*drv, "roundtrip", "--server", s, "--wire", "http",
                                                     "--backend", b, "--asgi", asgi, *cc], 300))
            for s in ("minimcp", "official"):  # serve_http's default (guarded) and the official SDK
                add(Job("http-servers", [*drv, "roundtrip", "--server", s, "--wire", "http", *cc], 300))

    # 7. serve_http's default before (uvicorn h11, guarded) and after (uvicorn httptools, guarded), beside the
    #    HTTP floor on both and the official SDK, adjacent runs (only with --only http-default)
    if args.only and "http-default" in args.only.split(","):
        for c in (100, 1000):
            cc = ["-c", str(c), *win, "--max-seconds", "60"]
            rt = [*drv, "roundtrip", "--wire", "http", *cc]
            add(Job("http-default", [*rt, "--server", "minimcp", "--asgi", "serve_http:uvicorn-h11"], 300))
            add(Job("http-default", [*rt, "--server", "floor", "--asgi", "uvicorn-h11"], 300))
            add(Job("http-default", [*rt, "--server", "minimcp"], 300))  # as shipped: serve_http's own choice
            add(Job("http-default", [*rt, "--server", "floor", "--asgi", "uvicorn-httptools"], 300))
            add(Job("http-default", [*rt, "--server", "official"], 300))

    # 5. footprint: idle sessions (the import times and idle RSS are measured by run.py itself)
    for s in ("minimcp", "official"):
        add(Job("idle", [*drv, "idle", "--server", s, "--wire", "http", "--sessions", "1000"], 200, 1))
        add(Job("idle", [*mem, "idle", "--server", s, "--sessions", "1000"], 200, 1))
    add(Job("idle", [*drv, "idle", "--server", "minimcp", "--wire", "ws", "--sessions", "1000"], 200, 1))
    return jobs


def scaleout_jobs(quick: bool) -> list[Job]:
    """Workers behind haproxy with Redis as the bus (bench_scaleout.py; only with --only scaleout)."""
    sc = [PY, str(HERE / "bench_scaleout.py")]
    if quick:  # a smoke run: every path once, small
        return [Job("scaleout", [*sc, "roundtrip", "--workers", str(w), "-c", "20", "--seconds", "1"], 120, 1)
                for w in (1, 2)] + [
            Job("scaleout", [*sc, "pending", "--workers", "2", "-n", "1000"], 180, 1),
            Job("scaleout", [*sc, "pending", "--workers", "3", "-n", "3000", "--sessions", "30"], 240, 1)]
    jobs = []
    for w in (1, 2):
        jobs.append(Job("scaleout", [*sc, "roundtrip", "--workers", str(w), "-c", "100", "--seconds", "3"], 300))
    for w in (1, 2):
        jobs.append(Job("scaleout", [*sc, "pending", "--workers", str(w), "-n", "10000"], 900))
    jobs.append(Job("scaleout", [*sc, "pending", "--workers", "3", "-n", "30000", "--sessions", "300",
                                 "--fill-timeout", "900"], 2400, 1))
    return jobs


# --- running -------------------------------------------------------------------------------------


def run_job(job: Job) -> dict[str, Any] | None:
    t0 = time.perf_counter()
    # its own process group, so that a timeout ends the driver's server too (it would linger otherwise)
    with subprocess.Popen(job.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=HERE.parent,
                          start_new_session=True) as child:
        try:
            stdout, stderr = child.communicate(timeout=job.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)
            stdout, stderr = child.communicate()
            print(f"  TIMEOUT after {job.timeout:.0f} s: {job}\n{stderr[-2000:]}", flush=True)
            return {"error": "timeout", "argv": job.argv[1:], "stderr": stderr[-2000:]}
    proc = subprocess.CompletedProcess(job.argv, child.returncode, stdout, stderr)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"  FAILED ({proc.returncode}): {job}\n{proc.stderr[-2000:]}", flush=True)
        return {"error": proc.stderr[-2000:], "argv": job.argv[1:]}
    row: dict[str, Any] = json.loads(lines[-1])
    row["group"] = job.group
    row["loadavg_1min"] = round(os.getloadavg()[0], 2)  # the machine is shared: how busy it was meanwhile
    row["wall_seconds"] = round(wall, 2)
    return row


def import_times(repeats: int) -> dict[str, Any]:
    """Seconds to import each stack in a fresh interpreter (median), above a bare interpreter's start."""
    probes = {
        "minimcp": "import minimcp, minimcp.server.server",
        "official": "import mcp.server.mcpserver",
        "floor": "import asyncio, msgspec",
    }
    out: dict[str, Any] = {}
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    for name, stmt in probes.items():
        times = []
        for _ in range(repeats):
            code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
            r = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=True)
            times.append(float(r.stdout.strip()))
        out[name] = round(statistics.median(times), 4)
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"nproc": os.cpu_count(), "python": sys.version.split()[0],
                            "implementation": platform.python_implementation(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["memory_bytes"] = int(f.readline().split()[1]) * 1024
    except OSError:
        pass
    versions = {}
    for pkg in ("minimcp", "mcp", "anyio", "msgspec", "trio", "uvloop", "pydantic", "uvicorn", "hypercorn",
                "websockets", "httpx", "starlette", "matplotlib", "httptools", "granian"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    info["packages"] = versions
    try:
        info["minimcp_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                text=True, cwd=HERE.parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "minimcp"], capture_output=True, text=True,
                               cwd=HERE.parent).stdout.strip()
        info["minimcp_tree_dirty"] = bool(dirty)
    except OSError:
        pass
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, under a minute")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement (median quoted)")
    parser.add_argument("--only", help="comma-separated groups (stdio-pending, stdio-roundtrip, ...; "
                        "http-servers: the ASGI servers side by side; http-default: serve_http's default before "
                        "and after; scaleout: workers behind haproxy; http-10k: 10,000 pending over HTTP; "
                        "http-modern: revision 2026-07-28 over HTTP; those five only when named)")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 pending (minimcp and floor)")
    parser.add_argument("--no-tables", action="store_true", help="do not rewrite benchmarks/results/latest.md")
    parser.add_argument("--out", help="results file (default: results/<stamp>.json)")
    args = parser.parse_args()
    jobs = plan(args)
    if args.only:
        wanted = set(args.only.split(","))
        jobs = [j for j in jobs if j.group in wanted]
    repeats = 1 if args.quick else args.repeats
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    started = time.perf_counter()
    failures = 0
    for r in range(repeats):
        for job in jobs:
            if r >= (job.repeats or repeats):
                continue
            label = " ".join(a for a in job.argv[2:] if a != "--seconds")
            print(f"[{time.perf_counter() - started:6.0f} s] {r + 1}/{repeats} {Path(job.argv[1]).stem} {label}",
                  flush=True)
            row = run_job(job)
            if row is None or "error" in row:
                failures += 1
                rows.append(row or {})
                continue
            row["repeat"] = r
            rows.append(row)
    imports = import_times(3 if args.quick else 7) if args.only is None or "footprint" in (args.only or "") else {}

    import report

    doc: dict[str, Any] = {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": args.quick, "repeats": repeats, "machine": machine(),
        "seconds": round(time.perf_counter() - started, 1), "import_seconds": imports, "rows": rows,
        "loadavg": {"before": load_before, "after": os.getloadavg()},  # the machine is shared: say how busy
    }
    doc["summary"] = report.summarize(doc)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    scaleout_only = bool(args.only) and set(args.only.split(",")) == {"scaleout"}
    name = ("scaleout-" if scaleout_only else "") + ("quick.json" if args.quick else f"{stamp}.json")
    out = Path(args.out) if args.out else RESULTS / name
    out.write_text(json.dumps(doc, indent=1))
    # the server comparison alone is a side study: it leaves latest.json and the chart to the full run
    side_study = bool(args.only) and set(args.only.split(",")) <= {"http-servers", "http-default", "scaleout",
                                                                     "http-10k", "http-modern"}
    if not args.quick and not side_study:
        (RESULTS / "latest.json").write_text(json.dumps(doc, indent=1))
    if not scaleout_only:
        print(report.text_tables(doc))
    if any(r.get("group") == "http-servers" for r in rows):
        import report_http

        doc["http_servers"] = report_http.summarize(doc)
        out.write_text(json.dumps(doc, indent=1))
        print(report_http.markdown(doc))
    if any(r.get("group") == "scaleout" for r in rows):
        import bench_scaleout

        doc["scaleout"] = bench_scaleout.summarize(doc)
        out.write_text(json.dumps(doc, indent=1))
        print(bench_scaleout.markdown(doc))
    if any(r.get("group") == "http-default" for r in rows):
        import report_http

        doc["http_default"] = report_http.summarize(doc, "http-default")
        out.write_text(json.dumps(doc, indent=1))
        print(report_http.default_markdown(doc))
    if any(r.get("group") == "http-10k" for r in rows):
        import report_http

        print(report_http.pending_markdown(doc))
    if any(r.get("group") == "http-modern" for r in rows):
        import report_http

        print(report_http.modern_markdown(doc))
    if not args.quick and not side_study:
        chart = report.chart(doc, RESULTS / "chart.png")
        if chart:
            print(f"chart: {chart}")
        if not args.no_tables and not args.only:
            report.write_tables(doc, RESULTS / "latest.md")
    print(f"results: {out}  ({doc['seconds']:.0f} s, {failures} failed runs)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
