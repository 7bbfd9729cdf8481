"""Server memory per parked 2026-07-28 call over a real ASGI server (``serve_http`` as shipped), trees side by side.

Runs ``driver.py pending --wire http --era modern`` (the benchmark server in a process of its
own, the driver's raw HTTP client) once per tree and per round, the trees alternated, and prints
per fill: server RSS per parked call (full minus the idle baseline taken after the warm-up),
RSS after the drain, and the connections the driver opened. With ``--trace`` the server runs
under tracemalloc: traced bytes per parked call, and where they sit, grouped as ours (minimcp),
the benchmark tool, asyncio, and the ASGI server's connection objects.

The driver keeps its HTTP connections alive between a call and its retry, at most
``--max-sockets`` of them (the driver's default for this era: 100). The warm-up (50 calls at
once) opens about 50; a fill with more sockets opens the rest, and those idle keep-alive
connections are the client's, not the parked calls': ``--max-sockets 50`` fills on the
warm-up's connections only (``connects_fill`` 0), so the difference between the two is their cost.

    python benchmarks/park_http.py --tree before=/work/main --tree after=. -n 10000 --fills 3 --rounds 2
    python benchmarks/park_http.py --tree after=. --trace -n 10000

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: How traced bytes are grouped (first match on the allocating file).
GROUPS = (
    ("minimcp", "minimcp/"),
    ("benchmark tool", "benchmarks/"),
    ("uvicorn (connections)", "uvicorn/"),
    ("asyncio", "asyncio/"),
    ("weakref set (task set)", "_weakrefset.py"),
)


def run_driver(tree: str, args: argparse.Namespace, trace: bool) -> dict[str, Any]:
    # The tree's own driver: its benchmark server imports the minimcp of the checkout it sits in.
    driver = Path(tree).resolve() / "benchmarks" / "driver.py"
    command = [sys.executable, str(driver), "pending", "--wire", "http", "--era", "modern",
               "-n", str(args.n), "--fills", str(args.fills), "--fill-timeout", "600",
               "--backend", args.backend]
    if args.max_sockets:
        command += ["--max-sockets", str(args.max_sockets)]
    if trace:
        command.append("--tracemalloc")
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"driver failed ({tree}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def sockets_of(pid: int) -> int:
    """How many sockets process ``pid`` has open (its listening socket and its connections)."""
    fds = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # (a descriptor closed meanwhile)
            count += os.readlink(fd).startswith("socket:")
    return count


def load_driver(tree: str) -> Any:
    """The tree's ``benchmarks/driver.py`` as a module (its servers import the tree's minimcp)."""
    path = Path(tree).resolve() / "benchmarks" / "driver.py"
    spec = importlib.util.spec_from_file_location(f"park_http_driver_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    driver = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = driver  # (its msgspec structs resolve their annotations through it)
    spec.loader.exec_module(driver)
    return driver


async def settled(driver: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``--settle S``: the driver's pending scenario, each figure taken ``S`` seconds after the fill (or drain).

    By then the timers the ASGI server armed per request (uvicorn's keep-alive timer and
    ``_uvicorn_guard``'s header timer, cancelled by the connection's next request but held by
    asyncio's timer heap until due) have gone, and with a settle longer than uvicorn's
    keep-alive timeout (5 s) so have the idle keep-alive connections: what is left is what the
    parked calls hold. The server's sockets are counted at each figure.
    """
    import asyncio

    server = driver.NetServer(driver.server_command("minimcp", "http", args.backend, args.trace))
    port = await server.start()
    client = driver.RawHttp("127.0.0.1", port, max_sockets=args.max_sockets or 100)
    conn = driver.ModernHttpConn(f"http://127.0.0.1:{port}/mcp", client)
    out: dict[str, Any] = {"fills": []}
    try:
        await conn.start()
        calls = driver.Calls()
        calls.target = 50
        conn.on_question = driver.answer_now
        for _ in range(calls.target):
            calls.start(conn)
        conn.flush()
        await asyncio.wait_for(calls.reached.wait(), 120)
        await asyncio.sleep(args.settle)
        base = await conn.stats(True, "base" if args.trace else "")
        out["idle"] = {**base, "sockets": sockets_of(server.pid)}
        for k in range(args.fills):
            parked: list[tuple[Any, int]] = []
            all_parked = asyncio.Event()

            def park(c: Any, eid: Any, i: int, parked: list[Any] = parked, done: asyncio.Event = all_parked) -> None:
                parked.append((eid, i))
                if len(parked) == args.n:
                    done.set()

            conn.on_question = park
            calls = driver.Calls()
            calls.target = args.n
            connects0 = client.connects
            for _ in range(args.n):
                calls.start(conn)
            conn.flush()
            await asyncio.wait_for(all_parked.wait(), 600)
            sockets_filled = sockets_of(server.pid)
            await asyncio.sleep(args.settle)
            full = await conn.stats(True, "diff" if args.trace and k == 0 else "")
            full["sockets_at_fill_end"], full["sockets"] = sockets_filled, sockets_of(server.pid)
            full["connects_fill"] = client.connects - connects0
            conn.on_question = driver.answer_now
            for eid, i in parked:
                conn.respond(eid, driver.accept(i))
            conn.flush()
            await asyncio.wait_for(calls.reached.wait(), 600)
            if calls.wrong or calls.errors:
                raise SystemExit(f"{calls.wrong} wrong answers, {calls.errors} errors")
            await asyncio.sleep(args.settle)
            after = await conn.stats(True)
            out["fills"].append({"full": full, "after": after})
    finally:
        await conn.close()
        client.close()
        await server.close()
    return out


def report_settled(name: str, row: dict[str, Any], args: argparse.Namespace, per_call: list[float]) -> None:
    idle = row["idle"]
    print(f"{name}: idle RSS {idle['rss'] / 2**20:.1f} MB, {idle['sockets']} server sockets "
          f"(figures {args.settle:g} s after each fill and drain)")
    for k, fill in enumerate(row["fills"]):
        full, after = fill["full"], fill["after"]
        rss = (full["rss"] - idle["rss"]) / args.n
        per_call.append(rss)
        line = (f"  fill {k + 1}: {rss / 1024:.2f} KB RSS per parked call (full {full['rss'] / 2**20:.1f} MB, "
                f"after drain {after['rss'] / 2**20:.1f} MB), "
                f"{(full['gc_objects'] - idle['gc_objects']) / args.n:.2f} GC objects per call; server sockets "
                f"{full['sockets_at_fill_end']} at the fill's end, {full['sockets']} at the figure; "
                f"driver connects {full['connects_fill']}")
        if full.get("traced") is not None:
            line += (f"; traced {(full['traced'] - idle['traced']) / args.n:.0f} B per call, "
                     f"{(after['traced'] - idle['traced']) / 2**10:.0f} KB left after the drain")
        print(line)
        for key in ("top_lineno",):
            for where, size, count in full.get(key, []):
                print(f"    {size / args.n:7.0f} B {count / args.n:5.2f} obj  {where}")
        for type_name, count in full.get("gc_types", []):
            print(f"    gc: {count / args.n:5.2f} per call  {type_name}")


def group_of(where: str) -> str:
    for name, part in GROUPS:
        if part in where:
            return name
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="a checkout to measure (its minimcp on PYTHONPATH); default: this one")
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--fills", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="runs per tree, the trees alternated")
    parser.add_argument("--max-sockets", type=int, default=0, help="the driver's sockets (default: its own, 100)")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--trace", action="store_true", help="tracemalloc in the server (slow; RSS then inflated)")
    parser.add_argument("--settle", type=float, default=0.0, help="take each figure this many seconds after "
                        "the fill or drain (past uvicorn's 5 s keep-alive: idle connections closed, per-request "
                        "timers gone); 0: the driver's pending scenario as run.py runs it")
    args = parser.parse_args()
    trees = [t.partition("=")[::2] for t in args.tree] or [("this", str(HERE.parent))]
    per_call: dict[str, list[float]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        for name, path in trees:
            if args.settle:
                import asyncio

                report_settled(name, asyncio.run(settled(load_driver(path), args)), args, per_call[name])
                continue
            row = run_driver(path, args, args.trace)
            idle = row["idle"]["rss"]
            print(f"{name} round {r + 1}: idle RSS {idle / 2**20:.1f} MB")
            for k, fill in enumerate(row["fills"]):
                per_call[name].append(fill["bytes_per_pending_rss"])
                line = (f"  fill {k + 1}: {fill['bytes_per_pending_rss'] / 1024:.2f} KB RSS per parked call "
                        f"(full {fill['rss_full'] / 2**20:.1f} MB, "
                        f"after drain {fill['rss_after_drain'] / 2**20:.1f} MB), "
                        f"{fill['gc_objects_per_pending']:.2f} GC objects per call, "
                        f"driver connects: fill {fill.get('connects_fill')}, drain {fill.get('connects_drain')}")
                if "bytes_per_pending_traced" in fill:
                    line += (f"; traced {fill['bytes_per_pending_traced']} B per call, "
                             f"{fill['traced_after_drain_delta'] / 2**10:.0f} KB traced left after the drain")
                print(line)
                if "top_lineno" in fill:
                    groups: dict[str, int] = {}
                    for where, size, _count in fill["top_filename"]:
                        groups[group_of(where)] = groups.get(group_of(where), 0) + size
                    print("    traced by group (top files), per parked call:",
                          ", ".join(f"{g} {b / args.n:.0f} B" for g, b in sorted(groups.items(), key=lambda x: -x[1])))
                    for where, size, count in fill["top_lineno"]:
                        print(f"    {size / args.n:7.0f} B {count / args.n:5.2f} obj  {where}")
                    for name_, count in fill.get("gc_types", []):
                        print(f"    gc: {count / args.n:5.2f} per call  {name_}")
    if args.rounds > 1 or len(trees) > 1:
        for name, values in per_call.items():
            print(f"{name}: median {statistics.median(values) / 1024:.2f} KB RSS per parked call over "
                  f"{len(values)} fills ({', '.join(f'{v / 1024:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
