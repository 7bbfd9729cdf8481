"""Streamable HTTP and WebSocket on trio vs asyncio: the HTTP floor and minimcp on each server, in one run (issue 31).

    python benchmarks/http_backends.py                  # everything, about 10-15 minutes on 2 busy cores
    python benchmarks/http_backends.py --quick          # a smoke run (1 repeat, short windows, small fills)
    python benchmarks/http_backends.py --tree /work/h-h1srv --servers uvicorn,hypercorn-asyncio,hypercorn-trio,minimcp
    python benchmarks/http_backends.py --parts http,profile --repeats 5 --seconds 3
    python benchmarks/http_backends.py --summary benchmarks/results/http-backends-YYYYMMDD.json

Parts (``--parts``, all by default):

- ``http``: ``driver.py roundtrip --wire http`` at each ``-c`` for {the HTTP floor
  (``servers/floor_http.py``), minimcp (``StreamableHTTPApp``)} on each ``--servers`` entry:
  ``uvicorn`` (httptools, asyncio), ``hypercorn-asyncio``, ``hypercorn-trio``, and minimcp's own HTTP/1.1
  server when the tree has it (``minimcp-asyncio``, ``minimcp-trio``; ``minimcp`` is both; minimcp's app only,
  through ``serve_http(asgi_server="minimcp")``); ``serve_http-asyncio`` / ``serve_http-trio`` add
  ``serve_http`` with its own default choice. The apps on uvicorn and hypercorn run unguarded (``asgi_run.py``),
  the same way for the floor and minimcp. ``canned`` adds the canned-bytes ceiling (``servers/canned_http.py``:
  one asyncio Protocol writing prebuilt bytes, no ASGI; app and server both ``canned``), and a table of every
  row against it. Repeats are interleaved, the order reversed every other repeat.
- ``ws``: ``driver.py roundtrip --wire ws`` (minimcp's ``serve_websocket``) on asyncio and trio, each ``-c``.
- ``memory``: ``driver.py sessions --wire http`` (500 sessions x 10 pending): server RSS delta per pending
  elicitation, floor and minimcp on each server, once; also ``floor+``, the floor with minimcp's two structural
  obligations (the call in a task of its own, cancellable alone; a wait in ``receive()`` for the client to leave).
- ``trace``: ``driver.py pending --wire http --tracemalloc`` (``--trace-n`` open calls on one session): the
  traced bytes per open call by allocating file, minus the idle baseline, floor, floor+ and minimcp on each server.
- ``profile``: ``driver.py roundtrip`` (C=100) with the server under ``py-spy record --format raw``
  (``BENCH_SERVER_PREFIX``): self time by package / module (hypercorn, h11, trio, anyio, minimcp.*, ...).

The server processes (and the driver) run from ``--tree`` (default: this checkout), with ``PYTHONPATH`` set
to it. The machine is shared: the main figures are server CPU per round trip and ratios within this run;
every row carries the 1-minute load average taken just before it. Prints markdown tables and writes
``benchmarks/results/http-backends-YYYYMMDD.json`` (``--out`` to choose).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable
PY_SPY = str(Path(PY).parent / "py-spy")

FLOOR_ON_MINIMCP = [PY, str(HERE / "tools" / "floor_on_minimcp.py")]
#: the canned-bytes ceiling, run as a server prefix of the floor's command (which it ignores but for --tracemalloc)
CANNED = [PY, str(HERE / "servers" / "canned_http.py")]

#: server name -> (event loop, {app: the driver's ``--asgi``}); the floor on minimcp's own server runs through
#: ``tools/floor_on_minimcp.py`` (a server prefix); ``canned`` is its own app and server (``CANNED``, a prefix too)
SERVERS: dict[str, tuple[str, dict[str, str]]] = {
    "uvicorn": ("asyncio", {"floor": "uvicorn-httptools", "minimcp": "uvicorn-httptools"}),
    "hypercorn-asyncio": ("asyncio", {"floor": "hypercorn", "minimcp": "hypercorn"}),
    "hypercorn-trio": ("trio", {"floor": "hypercorn", "minimcp": "hypercorn"}),
    "minimcp-asyncio": ("asyncio", {"floor": "minimcp", "minimcp": "serve_http:minimcp"}),
    "minimcp-trio": ("trio", {"floor": "minimcp", "minimcp": "serve_http:minimcp"}),
    "serve_http-asyncio": ("asyncio", {"minimcp": "default"}),
    "serve_http-trio": ("trio", {"minimcp": "default"}),
    "canned": ("asyncio", {"canned": "canned"}),
}
APPS = ("canned", "floor", "minimcp")
#: memory and trace also run ``floor+``: the floor with minimcp's two structural obligations (the call in a task of
#: its own, cancellable alone; a wait in ``receive()`` for the client to leave; ``servers/floor_http.py``)
MEMORY_APPS = ("canned", "floor", "floor+", "minimcp")


def server_args(app: str, server: str, prefix: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The driver's arguments for ``app`` on ``server``, and the environment (a server prefix) it needs."""
    obliged = app == "floor+"
    if obliged:
        app = "floor"
    backend, asgi = SERVERS[server][0], SERVERS[server][1][app]
    argv = ["--server", "floor" if app == "canned" else app, "--wire", "http", "--backend", backend, "--asgi", asgi]
    chain = [*(prefix or []), *(FLOOR_ON_MINIMCP if app == "floor" and asgi == "minimcp" else []),
             *(CANNED if app == "canned" else [])]
    env = {"BENCH_SERVER_PREFIX": " ".join(chain)} if chain else {}
    return argv, ({**env, "BENCH_FLOOR_OBLIGED": "1"} if obliged else env)
DEFAULT_SERVERS = "uvicorn,hypercorn-asyncio,hypercorn-trio"
DEFAULT_PROFILES = ("floor@hypercorn-trio,minimcp@hypercorn-trio,minimcp@uvicorn,floor@uvicorn,"
                    "floor@hypercorn-asyncio,minimcp@hypercorn-asyncio")
PARTS = ("http", "ws", "memory", "trace", "profile")


def expand_servers(spec: str) -> list[str]:
    out: list[str] = []
    for name in spec.split(","):
        names = ["minimcp-asyncio", "minimcp-trio"] if name == "minimcp" else [name]
        for n in names:
            if n not in SERVERS:
                raise SystemExit(f"unknown server {n!r} (one of {', '.join(SERVERS)}, minimcp)")
            out.append(n)
    return out


# --- running the driver ----------------------------------------------------------------------------


def run_driver(tree: Path, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One ``driver.py`` run from ``tree`` in its own process group (a timeout ends its server too)."""
    cmd = [PY, str(tree / "benchmarks" / "driver.py"), *argv]
    load = round(os.getloadavg()[0], 2)
    t0 = time.perf_counter()
    full_env = {**os.environ, "PYTHONPATH": str(tree), **(env or {})}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree,
                          env=full_env, start_new_session=True) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            stdout, stderr = child.communicate()
            return {"error": f"timeout after {timeout:.0f} s", "stderr": stderr[-1500:], "load": load}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if child.returncode != 0 or not lines:
        return {"error": f"exit {child.returncode}", "stderr": stderr[-1500:], "load": load}
    row: dict[str, Any] = json.loads(lines[-1])
    row["load"] = load
    row["wall_seconds"] = round(time.perf_counter() - t0, 2)
    return row


def cpu_us_per_rt(row: dict[str, Any]) -> float | None:
    rate = row.get("round_trips_per_second") or 0.0
    share = row.get("server_cpu_share")
    return round(share / rate * 1e6, 1) if rate and share is not None else None


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def http_points(servers: list[str], apps: tuple[str, ...] = APPS) -> list[tuple[str, str]]:
    return [(app, s) for s in servers for app in apps if (app[:-1] if app == "floor+" else app) in SERVERS[s][1]]


def run_roundtrips(args: argparse.Namespace, tree: Path, servers: list[str], parts: set[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cs = [int(x) for x in args.c.split(",")]
    points: list[tuple[str, str, str]] = []  # (wire, app, server)
    if "http" in parts:
        points += [("http", app, s) for app, s in http_points(servers)]
    if "ws" in parts:
        points += [("ws", "minimcp", b) for b in ("asyncio", "trio")]
    for r in range(args.repeats):
        for c in cs:
            order = points if r % 2 == 0 else points[::-1]
            for wire, app, server in order:
                env: dict[str, str] = {}
                if wire == "http":
                    spec, env = server_args(app, server)
                    argv = ["roundtrip", *spec]
                else:
                    argv = ["roundtrip", "--server", app, "--wire", "ws", "--backend", server]
                argv += ["-c", str(c), "--seconds", str(args.seconds), "--max-seconds", str(args.max_seconds)]
                row = run_driver(tree, argv, args.timeout, env)
                row.update(part=wire, app=app, srv=server, c=c, repeat=r)
                row["cpu_us_per_rt"] = cpu_us_per_rt(row)
                log(f"  {wire} {app}@{server} C={c} r{r}: "
                    + (row["error"] if "error" in row else
                       f"{row['round_trips_per_second']:,.0f}/s cpu {row['cpu_us_per_rt']} µs/rt "
                       f"p50 {row['p50_ms']:.0f} ms load {row['load']}"))
                rows.append(row)
    return rows


def run_memory(args: argparse.Namespace, tree: Path, servers: list[str]) -> list[dict[str, Any]]:
    rows = []
    for app, server in http_points(servers, MEMORY_APPS):
        spec, env = server_args(app, server)
        argv = ["sessions", *spec, "--sessions", str(args.mem_sessions), "--per", str(args.mem_per),
                "--fill-timeout", "240"]
        row = run_driver(tree, argv, 300, env)
        out: dict[str, Any] = {"part": "memory", "app": app, "srv": server, "load": row["load"],
                               "n": args.mem_sessions * args.mem_per}
        if "error" in row:
            out.update(error=row["error"], stderr=row.get("stderr", ""))
        else:
            fill = row["fills"][0]
            out.update({k: fill[k] for k in ("bytes_per_pending_rss", "gc_objects_per_pending", "rss_before",
                                             "rss_full", "seconds_to_all_pending", "seconds_to_drain",
                                             "server_cpu_seconds_fill", "server_cpu_seconds_drain")})
        log(f"  memory {app}@{server}: {out.get('error') or out['bytes_per_pending_rss']} B/pending")
        rows.append(out)
    return rows


def short_file(name: str) -> str:
    for cut in ("site-packages/", "/minimcp/", "/benchmarks/servers/", "/lib/python3."):
        if cut in name:
            tail = name.split(cut, 1)[1]
            if cut == "/minimcp/":
                return "minimcp/" + tail
            if cut == "/lib/python3.":
                return "stdlib:" + tail.split("/", 1)[1]
            return tail
    return name


def run_trace(args: argparse.Namespace, tree: Path, servers: list[str]) -> list[dict[str, Any]]:
    rows = []
    for app, server in http_points(servers, MEMORY_APPS):
        spec, env = server_args(app, server)
        n = args.trace_n
        argv = ["pending", *spec, "-n", str(n), "--tracemalloc", "--fill-timeout", "240"]
        row = run_driver(tree, argv, 300, env)
        out: dict[str, Any] = {"part": "trace", "app": app, "srv": server, "n": n, "load": row["load"]}
        if "error" in row:
            out.update(error=row["error"], stderr=row.get("stderr", ""))
        else:
            fill = row["fills"][0]
            by_file: Counter[str] = Counter()
            for where, size, _count in fill.get("top_filename", []):
                by_file[short_file(where.rsplit(":", 1)[0])] += size
            out.update(bytes_per_pending_traced=fill.get("bytes_per_pending_traced"),
                       bytes_per_pending_rss=fill.get("bytes_per_pending_rss"),
                       top_files=[[f, round(b / n)] for f, b in by_file.most_common(12)])
        log(f"  trace {app}@{server}: {out.get('error') or out['bytes_per_pending_traced']} B/pending traced")
        rows.append(out)
    return rows


# --- profiles --------------------------------------------------------------------------------------

_BENCH_FILES = {"canned_http.py", "floor_http.py", "floor_asyncio.py", "minimcp_server.py", "asgi_run.py",
                "instrument.py"}
_STDLIB = Path(sysconfig.get_paths()["stdlib"])


def frame_group(frame: str) -> str:
    """``func (path:line)`` -> package (``minimcp.<subpackage>`` for ours, the module for the stdlib)."""
    path = frame.rsplit(" (", 1)[-1].rstrip(")").rsplit(":", 1)[0]
    if path.startswith("<attrs generated"):  # attrs' generated __init__/__eq__: charged to the class's package
        return path.rsplit(" ", 1)[-1].split(".", 1)[0].rstrip(">")
    if path.startswith("<frozen"):
        return "stdlib:" + path.strip("<>").split(" ", 1)[-1]
    if "/minimcp/" in "/" + path:
        parts = ("/" + path).split("/minimcp/", 1)[1].split("/")
        return "minimcp." + ".".join(parts[:2]).removesuffix(".py")
    tail = path.split("site-packages/", 1)[-1]
    if "/lib/python3." in tail:
        tail = tail.split("/lib/python3.", 1)[1].split("/", 1)[-1]
    first = tail.split("/", 1)[0]
    if first in _BENCH_FILES:
        return "benchmark app"
    if (_STDLIB / first).exists() or "/" not in tail:
        return "stdlib:" + first.removesuffix(".py")
    return first


#: leaf frames that are the event loop waiting in epoll (py-spy counts some of them as active on a busy machine)
_WAITS = ("select (selectors.py", "get_events (trio/_core/_io_epoll.py")


def summarise_profile(path: str) -> dict[str, Any]:
    """Self samples by package and by function; start-up imports and the loop's epoll waits left out."""
    groups: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    loop_callers: Counter[str] = Counter()  # the event loop's / async library's self time, by who asked for it
    total = waits = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            if "importlib._bootstrap" in stack:  # start-up imports, not the traffic
                continue
            leaf = stack.rsplit(";", 1)[-1]
            n = int(count)
            if any(w in leaf for w in _WAITS):
                waits += n
                continue
            total += n
            group = frame_group(leaf)
            groups[group] += n
            if group in _LOOP_GROUPS:
                loop_callers[_caller(stack.split(";"))] += n
            where = short_file(leaf.rsplit(" (", 1)[-1].rstrip(")").rsplit(":", 1)[0])
            functions[f"{leaf.split(' (', 1)[0]} ({where})"] += n
    return {"samples": total, "epoll_wait_samples_left_out": waits,
            "self_by_group": [[g, round(100 * n / total, 1)] for g, n in groups.most_common()] if total else [],
            "top_functions": [[fn, round(100 * n / total, 1)] for fn, n in functions.most_common(15)] if total else [],
            "loop_self_by_caller": [[fn, round(100 * n / total, 1)] for fn, n in loop_callers.most_common(10)]
            if total else []}


_LOOP_GROUPS = {"trio", "anyio", "outcome", "stdlib:asyncio", "stdlib:contextlib", "stdlib:selectors"}


def _caller(frames: list[str]) -> str:
    """The innermost frame of an application or server (not of the loop itself): ``(scheduler)`` when none."""
    for frame in reversed(frames):
        group = frame_group(frame)
        if group not in _LOOP_GROUPS and not group.startswith("stdlib:") and not frame.startswith("<module>"):
            where = short_file(frame.rsplit(" (", 1)[-1].rstrip(")").rsplit(":", 1)[0])
            return f"{frame.split(' (', 1)[0]} ({where})"
    return "(scheduler)"


def run_profiles(args: argparse.Namespace, tree: Path, servers: list[str]) -> list[dict[str, Any]]:
    rows = []
    wanted = [p.split("@", 1) for p in args.profiles.split(",") if p]
    if any(s.startswith("minimcp-") for s in servers):
        wanted += [[app, s] for s in servers if s.startswith("minimcp-") for app in ("floor", "minimcp")]
    keep = Path(args.profile_dir) if args.profile_dir else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    for app, server in wanted:
        if server not in SERVERS or app not in SERVERS[server][1]:
            continue
        fd, raw = tempfile.mkstemp(prefix=f"prof-{app}-{server}-", suffix=".txt", dir=keep)
        os.close(fd)
        spy = [PY_SPY, "record", "--nonblocking", "--format", "raw", "-r", str(args.profile_rate), "-o", raw, "--"]
        spec, env = server_args(app, server, spy)
        argv = ["roundtrip", *spec, "-c", "100", "--seconds", str(args.profile_seconds), "--max-seconds", "30"]
        row = run_driver(tree, argv, 120, env)
        out: dict[str, Any] = {"part": "profile", "app": app, "srv": server, "c": 100, "load": row["load"],
                               "round_trips_per_second_profiled": row.get("round_trips_per_second")}
        if "error" in row:
            out.update(error=row["error"], stderr=row.get("stderr", ""))
        else:
            out.update(summarise_profile(raw))
            out["file"] = raw if keep else None
        if not keep:
            os.unlink(raw)
        log(f"  profile {app}@{server}: {out.get('error') or out['self_by_group'][:4]}")
        rows.append(out)
    return rows


# --- the summary -----------------------------------------------------------------------------------


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[tuple[str, str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("part") in ("http", "ws") and "error" not in r:
            by[(r["part"], r["app"], r["srv"], r["c"])].append(r)
    points: dict[str, dict[str, Any]] = {}
    for (part, app, srv, c), rs in by.items():
        points[f"{part}|{app}|{srv}|{c}"] = {
            "part": part, "app": app, "srv": srv, "c": c, "runs": len(rs),
            "round_trips_per_second": med([r["round_trips_per_second"] for r in rs]),
            "cpu_us_per_rt": med([r["cpu_us_per_rt"] for r in rs if r["cpu_us_per_rt"] is not None]),
            "cpu_us_range": [min(r["cpu_us_per_rt"] or 0 for r in rs), max(r["cpu_us_per_rt"] or 0 for r in rs)],
            "p50_ms": med([r["p50_ms"] for r in rs]), "p99_ms": med([r["p99_ms"] for r in rs]),
            "driver_cpu_share": med([r["driver_cpu_share"] for r in rs]),
            "load": med([r["load"] for r in rs]),
        }
    failed = [f"{r.get('part')} {r.get('app')}@{r.get('srv')} C={r.get('c')}: {r['error']}"
              for r in rows if "error" in r]
    return {"points": points, "gap": gap(points), "failed": failed}


def gap(points: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The trio gap in server CPU per round trip (C=100 and C=1,000): the server's share and minimcp's own."""
    out: dict[str, Any] = {}
    servers = ("uvicorn", "hypercorn-asyncio", "hypercorn-trio")
    for c in sorted({p["c"] for p in points.values()}):
        f: dict[str, float] = {}
        m: dict[str, float] = {}
        for srv in servers:
            for app, into in (("floor", f), ("minimcp", m)):
                p = points.get(f"http|{app}|{srv}|{c}")
                if p and p["cpu_us_per_rt"] is not None:
                    into[srv] = p["cpu_us_per_rt"]
        if len(f) < 3 or len(m) < 3:
            continue
        uv, ha, ht = servers
        out[str(c)] = {
            "total_us": round(m[ht] - m[uv], 1),
            "server_us": round(f[ht] - f[uv], 1),
            "server_hypercorn_vs_uvicorn_us": round(f[ha] - f[uv], 1),
            "server_trio_vs_asyncio_us": round(f[ht] - f[ha], 1),
            "minimcp_own_us": round((m[ht] - f[ht]) - (m[uv] - f[uv]), 1),
            "minimcp_own_on_hypercorn_asyncio_us": round((m[ha] - f[ha]) - (m[uv] - f[uv]), 1),
            "minimcp_own_trio_vs_asyncio_us": round((m[ht] - f[ht]) - (m[ha] - f[ha]), 1),
            "minimcp_over_floor_us": {s: round(m[s] - f[s], 1) for s in servers},
        }
    return out


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def markdown(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    pts = s["points"]
    lines = [f"Run {doc['when']}, tree {doc['tree']} ({doc.get('tree_commit')}), {doc['repeats']} repeats x "
             f"{doc['seconds']} s windows; load average (1 min) {doc['loadavg']['before'][0]:.2f} before, "
             f"{doc['loadavg']['after'][0]:.2f} after, rows {doc['load_range'][0]}-{doc['load_range'][1]}; "
             f"{doc['wall_seconds']:.0f} s in all.", ""]
    http = [p for p in pts.values() if p["part"] == "http"]
    if http:
        lines += ["### Streamable HTTP round trips (medians; CPU: server CPU seconds / round trips, min-max)", "",
                  "| app | server | C | round trips/s | server CPU per rt (µs) | p50 / p99 (ms) | vs same app on "
                  "uvicorn (rt/s) | minimcp / floor (CPU) | C=1,000 / C=100 (rt/s) | driver CPU | load |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        order = list(SERVERS)
        for p in sorted(http, key=lambda p: (p["c"], order.index(p["srv"]), p["app"])):
            base = pts.get(f"http|{p['app']}|uvicorn|{p['c']}")
            floor = pts.get(f"http|floor|{p['srv']}|{p['c']}")
            small = pts.get(f"http|{p['app']}|{p['srv']}|100")
            vs = f"{p['round_trips_per_second'] / base['round_trips_per_second']:.2f}x" if base else "-"
            mf = (f"{p['cpu_us_per_rt'] / floor['cpu_us_per_rt']:.2f}x"
                  if floor and p["app"] == "minimcp" and floor["cpu_us_per_rt"] else "-")
            scale = (f"{p['round_trips_per_second'] / small['round_trips_per_second']:.2f}x"
                     if small and p["c"] != 100 else "-")
            lo, hi = p["cpu_us_range"]
            lines.append(f"| {p['app']} | {p['srv']} | {p['c']:,} | {_n(p['round_trips_per_second'])} | "
                         f"{_n(p['cpu_us_per_rt'])} ({lo:,.0f}-{hi:,.0f}) | {_n(p['p50_ms'])} / {_n(p['p99_ms'])} | "
                         f"{vs} | {mf} | {scale} | {p['driver_cpu_share']:.2f} | {p['load']:.1f} |")
        lines.append("")
    if s["gap"]:
        lines += ["### The trio gap in server CPU per round trip (minimcp on hypercorn-trio minus minimcp on "
                  "uvicorn), split", "",
                  "| C | total (µs) | server: floor hc-trio - floor uvicorn | of it hypercorn vs uvicorn (asyncio) "
                  "| of it trio vs asyncio (hypercorn) | minimcp's own: (m - f) hc-trio - (m - f) uvicorn "
                  "| of it on hypercorn-asyncio | of it trio vs asyncio | minimcp - floor: uvicorn / hc-asyncio / "
                  "hc-trio |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for c, g in s["gap"].items():
            mo = g["minimcp_over_floor_us"]
            total = g["total_us"] or 1.0
            lines.append(f"| {int(c):,} | {g['total_us']:,.0f} | {g['server_us']:,.0f} "
                         f"({100 * g['server_us'] / total:.0f}%) | {g['server_hypercorn_vs_uvicorn_us']:,.0f} | "
                         f"{g['server_trio_vs_asyncio_us']:,.0f} | {g['minimcp_own_us']:,.0f} "
                         f"({100 * g['minimcp_own_us'] / total:.0f}%) | "
                         f"{g['minimcp_own_on_hypercorn_asyncio_us']:,.0f} | "
                         f"{g['minimcp_own_trio_vs_asyncio_us']:,.0f} "
                         f"| {mo['uvicorn']:,.0f} / {mo['hypercorn-asyncio']:,.0f} / {mo['hypercorn-trio']:,.0f} |")
        lines.append("")
    ws = [p for p in pts.values() if p["part"] == "ws"]
    if ws:
        lines += ["### WebSocket round trips (minimcp's serve_websocket; medians)", "",
                  "| backend | C | round trips/s | server CPU per rt (µs) | p50 / p99 (ms) | trio / asyncio (rt/s) "
                  "| C=1,000 / C=100 | load |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for p in sorted(ws, key=lambda p: (p["c"], p["srv"])):
            a = pts.get(f"ws|minimcp|asyncio|{p['c']}")
            small = pts.get(f"ws|minimcp|{p['srv']}|100")
            ratio = (f"{p['round_trips_per_second'] / a['round_trips_per_second']:.2f}x"
                     if a and p["srv"] == "trio" else "-")
            scale = (f"{p['round_trips_per_second'] / small['round_trips_per_second']:.2f}x"
                     if small and p["c"] != 100 else "-")
            lines.append(f"| {p['srv']} | {p['c']:,} | {_n(p['round_trips_per_second'])} | {_n(p['cpu_us_per_rt'])} | "
                         f"{_n(p['p50_ms'])} / {_n(p['p99_ms'])} | {ratio} | {scale} | {p['load']:.1f} |")
        lines.append("")
    mem = [r for r in doc["rows"] if r.get("part") == "memory"]
    trace = {(r["app"], r["srv"]): r for r in doc["rows"] if r.get("part") == "trace"}
    if mem or trace:
        mem_n = f"{doc.get('mem_sessions', 500)} sessions x {doc.get('mem_per', 10)}"
        lines += [f"### Memory per pending elicitation over HTTP (RSS: {mem_n}; traced: {doc.get('trace_n', '')} "
                  "open calls on one session, tracemalloc, minus the idle baseline)", "",
                  "| app | server | RSS per pending (B) | minimcp / floor | minimcp / floor+ | traced per open call "
                  "(B) | top files (traced B per open call) |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
        floor_rss = {r["srv"]: r.get("bytes_per_pending_rss") for r in mem if r["app"] == "floor"}
        plus_rss = {r["srv"]: r.get("bytes_per_pending_rss") for r in mem if r["app"] == "floor+"}
        keys = [(r["app"], r["srv"]) for r in mem] + [k for k in trace if k not in {(r["app"], r["srv"]) for r in mem}]
        memd = {(r["app"], r["srv"]): r for r in mem}
        for app, srv in keys:
            m = memd.get((app, srv), {})
            t = trace.get((app, srv), {})
            rss = m.get("bytes_per_pending_rss")
            ratios = [f"{rss / fl:.2f}x" if app == "minimcp" and rss and fl else "-"
                      for fl in (floor_rss.get(srv), plus_rss.get(srv))]
            files = ", ".join(f"{f} {b:,}" for f, b in t.get("top_files", [])[:6] if b >= 50)
            lines.append(f"| {app} | {srv} | {m.get('error') or _n(rss)} | {' | '.join(ratios)} | "
                         f"{t.get('error') or _n(t.get('bytes_per_pending_traced'))} | {files} |")
        lines.append("")
    prof = [r for r in doc["rows"] if r.get("part") == "profile"]
    if prof:
        groups: list[str] = []
        for r in prof:
            for g, share in r.get("self_by_group", []):
                if share >= 1.0 and g not in groups:
                    groups.append(g)
        lines += ["### Profiles: self time by package (py-spy, C=100): server CPU µs per round trip (the unprofiled "
                  "median times the share of samples) and % of samples", "",
                  "| package | " + " | ".join(f"{r['app']}@{r['srv']}" for r in prof) + " |",
                  "| --- |" + " ---: |" * len(prof)]
        cpus = []
        for r in prof:
            p = pts.get(f"http|{r['app']}|{r['srv']}|100")
            cpus.append(p["cpu_us_per_rt"] if p else None)
        for g in groups:
            cells = []
            for r, cpu in zip(prof, cpus, strict=True):
                share = dict(r.get("self_by_group", [])).get(g)
                us = f"{cpu * share / 100:,.0f} µs " if cpu and share is not None else ""
                cells.append(f"{us}({share:.1f}%)" if share is not None else "-")
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
        cpu_row = [_n(cpu) for cpu in cpus]
        lines.append("| (server CPU per rt, µs, unprofiled median) | " + " | ".join(cpu_row) + " |")
        lines.append("| (samples; epoll waits left out) | " + " | ".join(
            f"{r.get('samples', '-')}; {r.get('epoll_wait_samples_left_out', '-')}" for r in prof) + " |")
        lines.append("")
        for r in prof:
            top = "; ".join(f"{fn} {share}%" for fn, share in r.get("top_functions", [])[:8])
            lines.append(f"- {r['app']}@{r['srv']} top functions (self): {top or r.get('error')}")
            callers = "; ".join(f"{fn} {share}%" for fn, share in r.get("loop_self_by_caller", [])[:6])
            if callers:
                lines.append(f"  - the loop's and async libraries' self time, by the app or server frame that asked: "
                             f"{callers}")
        lines.append("")
    lines += ceiling(doc)
    lines += targets(doc)
    if s["failed"]:
        lines += ["Failed runs:", *[f"- {f}" for f in s["failed"]], ""]
    return "\n".join(lines)


def ceiling(doc: dict[str, Any]) -> list[str]:
    """Every HTTP row against the canned-bytes ceiling (issue 31): round trips/s, server CPU and RSS per pending."""
    pts = doc["summary"]["points"]
    mem = {(r["app"], r["srv"]): r.get("bytes_per_pending_rss") for r in doc["rows"] if r.get("part") == "memory"}
    order = list(SERVERS)
    rows = []
    for p in sorted((p for p in pts.values() if p["part"] == "http" and p["app"] != "canned"),
                    key=lambda p: (p["c"], order.index(p["srv"]), p["app"])):
        top = pts.get(f"http|canned|canned|{p['c']}")
        if not top:
            continue
        rt = p["round_trips_per_second"] / top["round_trips_per_second"]
        cpu = (f"{p['cpu_us_per_rt'] / top['cpu_us_per_rt']:.2f}x"
               if p["cpu_us_per_rt"] and top["cpu_us_per_rt"] else "-")
        m, c = mem.get((p["app"], p["srv"])), mem.get(("canned", "canned"))
        rss = f"{m / c:.2f}x" if m and c and p["c"] == 100 else "-"
        rows.append(f"| {p['app']} | {p['srv']} | {p['c']:,} | {rt:.2f}x | {cpu} | {rss} |")
    if not rows:
        return []
    return ["### Against the canned-bytes ceiling (servers/canned_http.py; this run's medians; RSS per pending "
            "once, shown on the C=100 rows)", "",
            "| app | server | C | round trips/s, app / canned | server CPU per rt, app / canned | "
            "RSS per pending, app / canned |", "| --- | --- | ---: | ---: | ---: | ---: |", *rows, ""]


def targets(doc: dict[str, Any]) -> list[str]:
    """Issue 31's targets, each trio server against minimcp on uvicorn (asyncio), from this run's medians."""
    pts = doc["summary"]["points"]
    mem = {(r["app"], r["srv"]): r.get("bytes_per_pending_rss") for r in doc["rows"] if r.get("part") == "memory"}

    def rate(part: str, app: str, srv: str, c: int) -> float | None:
        p = pts.get(f"{part}|{app}|{srv}|{c}")
        return p["round_trips_per_second"] if p else None

    def ratio(a: float | None, b: float | None, goal: str) -> str:
        return f"{a / b:.2f}x ({goal})" if a and b else "-"

    lines = ["### Issue 31's targets (this run's medians; trio against minimcp on uvicorn / asyncio)", "",
             "| what | figure |", "| --- | --- |"]
    for srv in ("hypercorn-trio", "minimcp-trio"):
        if not any(p["srv"] == srv for p in pts.values()):
            continue
        for c in (100, 1000):
            here, there = rate("http", "minimcp", srv, c), rate("http", "minimcp", "uvicorn", c)
            lines.append(f"| HTTP rt/s, minimcp@{srv} / minimcp@uvicorn, C={c:,} | {ratio(here, there, '>= 0.67x')} |")
            cpu_here, cpu_there = (pts.get(f"http|minimcp|{x}|{c}", {}).get("cpu_us_per_rt") for x in (srv, "uvicorn"))
            lines.append(f"| HTTP server CPU per rt, minimcp@{srv} / minimcp@uvicorn, C={c:,} | "
                         f"{ratio(cpu_here, cpu_there, 'reference')} |")
        lines.append(f"| HTTP rt/s, minimcp@{srv} C=1,000 / C=100 | "
                     f"{ratio(rate('http', 'minimcp', srv, 1000), rate('http', 'minimcp', srv, 100), '>= 0.8x')} |")
        m, f, plus = mem.get(("minimcp", srv)), mem.get(("floor", srv)), mem.get(("floor+", srv))
        if m and f:
            lines.append(f"| RSS per pending, minimcp / floor on {srv} | {ratio(m, f, '<= 1.25x')} |")
        if m and plus:
            lines.append(f"| RSS per pending, minimcp / floor+ on {srv} | {ratio(m, plus, 'reference')} |")
    if rate("ws", "minimcp", "trio", 100):
        for c in (100, 1000):
            here, there = rate("ws", "minimcp", "trio", c), rate("ws", "minimcp", "asyncio", c)
            lines.append(f"| WebSocket rt/s, trio / asyncio, C={c:,} | {ratio(here, there, '>= 0.67x')} |")
        lines.append(f"| WebSocket rt/s, trio C=1,000 / C=100 | "
                     f"{ratio(rate('ws', 'minimcp', 'trio', 1000), rate('ws', 'minimcp', 'trio', 100), '>= 0.8x')} |")
    return [*lines, ""] if len(lines) > 4 else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(HERE.parent), help="run the driver and servers from this checkout")
    parser.add_argument("--servers", default=DEFAULT_SERVERS,
                        help=f"comma-separated: {', '.join(SERVERS)}, minimcp (= minimcp-asyncio,minimcp-trio)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated: {', '.join(PARTS)}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-c", default="100,1000", help="concurrent callers (round trips)")
    parser.add_argument("--seconds", type=float, default=2.0, help="measured window per round-trip run")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="the driver's cap on a window")
    parser.add_argument("--timeout", type=float, default=120.0, help="kill a round-trip run after this long")
    parser.add_argument("--mem-sessions", type=int, default=500)
    parser.add_argument("--mem-per", type=int, default=10)
    parser.add_argument("--trace-n", type=int, default=1000, help="open calls in the tracemalloc run")
    parser.add_argument("--profiles", default=DEFAULT_PROFILES, help="app@server,... (minimcp-* servers added)")
    parser.add_argument("--profile-seconds", type=float, default=4.0)
    parser.add_argument("--profile-rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--profile-dir", help="keep the raw py-spy profiles here")
    parser.add_argument("--quick", action="store_true", help="1 repeat, 1 s windows, 100 x 10 sessions, 300 traced")
    parser.add_argument("--out", help="results file (default: benchmarks/results/http-backends-YYYYMMDD.json)")
    parser.add_argument("--summary", metavar="JSON", help="print the tables of an earlier run and exit")
    args = parser.parse_args()
    if args.summary:  # (the profiles summarised again from their raw files, when they were kept)
        doc = json.loads(Path(args.summary).read_text())
        for r in doc["rows"]:
            if r.get("part") == "profile" and r.get("file") and Path(r["file"]).exists():
                r.update(summarise_profile(r["file"]))
        doc["summary"] = summarize(doc["rows"])
        Path(args.summary).write_text(json.dumps(doc, indent=1))
        print(markdown(doc))
        return
    if args.quick:
        args.repeats, args.seconds, args.mem_sessions, args.trace_n, args.profile_seconds = 1, 1.0, 100, 300, 2.0
    tree = Path(args.tree).resolve()
    servers = expand_servers(args.servers)
    parts = set(args.parts.split(","))
    if parts - set(PARTS):
        raise SystemExit(f"unknown parts: {parts - set(PARTS)}")
    commit = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True,
                            text=True).stdout.strip()[:100]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if parts & {"http", "ws"}:
        log(f"round trips ({args.repeats} repeats, C={args.c})")
        rows += run_roundtrips(args, tree, servers, parts)
    if "memory" in parts:
        log(f"memory ({args.mem_sessions} sessions x {args.mem_per})")
        rows += run_memory(args, tree, servers)
    if "trace" in parts:
        log(f"tracemalloc ({args.trace_n} open calls)")
        rows += run_trace(args, tree, servers)
    if "profile" in parts:
        log("profiles (py-spy)")
        rows += run_profiles(args, tree, servers)
    loads = [r["load"] for r in rows if "load" in r] or [0.0]
    doc: dict[str, Any] = {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "argv": sys.argv[1:],
        "tree": str(tree), "tree_commit": commit, "servers": servers, "repeats": args.repeats,
        "seconds": args.seconds, "nproc": os.cpu_count(), "python": sys.version.split()[0],
        "loadavg": {"before": load_before, "after": os.getloadavg()}, "load_range": [min(loads), max(loads)],
        "wall_seconds": round(time.perf_counter() - t0, 1), "mem_sessions": args.mem_sessions,
        "mem_per": args.mem_per, "trace_n": args.trace_n, "rows": rows,
    }
    doc["summary"] = summarize(rows)
    out = Path(args.out) if args.out else HERE / "results" / f"http-backends-{datetime.date.today():%Y%m%d}.json"
    out.write_text(json.dumps(doc, indent=1))
    print(markdown(doc))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
