"""Embedding cost: the import time of a stdio server on minimcp and its idle memory, beside the floors.

* **Import**: CPU seconds from a fresh interpreter's first statement to a built one-tool ``Server``
  (``import minimcp``, ``Server(...)``, ``@app.tool()``), median of ``--runs`` interpreters,
  beside ``import asyncio, msgspec`` (what ``floor_asyncio.py`` imports; run.py's floor probe) and
  ``import anyio, msgspec, asyncio``. One ``-X importtime`` breakdown per tree is saved in
  ``results/embed-importtime-<tree>.txt``.
* **Idle RSS**: a stdio server after the handshake and 50 answered ``ask`` calls (the
  driver of ``driver.py``), after a ``gc.collect()`` in the server, read from ``/proc`` outside:
  ``floor_asyncio.py``, ``floor_anyio.py`` and, per tree, the embedded server (``EMBED_SERVER``
  below: the probe's one-tool server plus the ``stats`` tool, started with ``app.run()``, as an
  embedding program would) beside minimcp's benchmark server (``servers/minimcp_server.py``).
  The benchmark server parses its command line with :mod:`argparse`, whose help formatter
  imports :mod:`shutil` and with it zlib, bz2 and lzma (about 0.5 MB); the floors read
  ``sys.argv`` by hand, so the embedded server is the like-for-like figure.

Every tree gets its ``.pyc`` files first (``compileall``), as an installed package has them.
Several trees (``--tree NAME=PATH``, e.g. a checkout of another commit) are measured in the
same run, one interpreter of each in turn.

    python benchmarks/bench_embed.py [--runs 15] [--tree main=/tmp/main --tree this=.]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import driver  # noqa: E402

PY = sys.executable
SERVER_PROBE = """
import minimcp
from minimcp import Context, Server
app = Server("embed", "1.0.0")
@app.tool()
async def ask(ctx: Context, i: int) -> str:
    return str(i)
"""
#: The embedded stdio server: the probe's tool asking one question (the driver's ``ask``), the floors'
#: ``stats`` tool, run with ``app.run()``; no command line parsed (as the floors).
EMBED_SERVER = """
import sys
sys.path[:0] = [{tree!r}, {servers!r}]
import msgspec
from instrument import stats_text
from minimcp import Accepted, Context, Server

class Answer(msgspec.Struct):
    answer: str

app = Server("embed", "1.0.0")

@app.tool()
async def ask(ctx: Context, i: int) -> str:
    reply = await ctx.elicit(f"Answer for call {{i}}", Answer)
    return reply.value.answer if isinstance(reply, Accepted) else "no answer"

@app.tool()
async def stats(collect: bool = False, snapshot: str = "") -> str:
    return stats_text(collect, snapshot)

app.run()
"""
FLOOR_PROBES = {
    "floor: import asyncio, msgspec": "import asyncio, msgspec",
    "floor: import anyio, msgspec, asyncio": "import anyio, msgspec, asyncio",
}
# what a stdio server must not load (lazy until used)
NOT_FOR_STDIO = ("minimcp.client.client", "minimcp.transports.http", "minimcp.transports.websocket", "minimcp.cli",
                 "minimcp.diagram.layout", "uvicorn", "websockets", "hypercorn", "httpx")


def timed(code: str, tree: Path | None) -> float:
    """CPU seconds the statement takes in a fresh interpreter (wall time swings with a shared machine's load)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    wrapped = f"import time\nt = time.process_time()\n{code}\nprint(time.process_time() - t)\n"
    r = subprocess.run([PY, "-c", wrapped], capture_output=True, text=True, env=env, check=True, cwd="/")
    return float(r.stdout.strip())


def import_breakdown(tree: Path) -> tuple[str, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = SERVER_PROBE + "import sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    r = subprocess.run([PY, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env, check=True,
                       cwd="/")
    return r.stderr, r.stdout.split()


async def idle_rss(command: list[str]) -> int:
    conn = driver.StdioConn(command)
    await conn.start()
    try:
        await asyncio.wait_for(conn.handshake(), 60)
        calls = driver.Calls()
        calls.target = 50
        for _ in range(50):
            calls.start(conn)
        conn.flush()
        await asyncio.wait_for(calls.reached.wait(), 60)
        if calls.wrong or calls.errors:
            raise SystemExit(f"{command}: {calls.wrong} wrong answers, {calls.errors} errors")
        await conn.stats(True)
        return driver.proc_rss(conn.pid)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="a minimcp checkout to measure (default: this one); repeatable")
    parser.add_argument("--out", default=str(HERE / "results" / "embed-latest.json"))
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": str(HERE.parent)}
    trees = {name: str(Path(path).resolve()) for name, path in trees.items()}
    for path in trees.values():
        subprocess.run([PY, "-m", "compileall", "-q", f"{path}/minimcp", f"{path}/benchmarks"], check=True,
                       capture_output=True)
    imports: dict[str, list[float]] = {name: [] for name in [*FLOOR_PROBES, *(f"minimcp {t}" for t in trees)]}
    rss: dict[str, list[int]] = {
        name: [] for name in ["floor_asyncio", "floor_anyio", *(f"minimcp {t}" for t in trees),
                              *(f"minimcp {t} (benchmark server)" for t in trees)]
    }
    for _ in range(args.runs):
        for label, code in FLOOR_PROBES.items():
            imports[label].append(timed(code, None))
        for name, path in trees.items():
            imports[f"minimcp {name}"].append(timed(SERVER_PROBE, Path(path)))
    servers = HERE / "servers"
    embed_scripts = {}
    for name, path in trees.items():
        script = HERE / "results" / f"embed-server-{name}.py"
        script.write_text(EMBED_SERVER.format(tree=path, servers=str(servers)))
        embed_scripts[name] = script
    for _ in range(max(3, args.runs // 3)):
        rss["floor_asyncio"].append(asyncio.run(idle_rss([PY, str(servers / "floor_asyncio.py")])))
        rss["floor_anyio"].append(asyncio.run(idle_rss([PY, str(servers / "floor_anyio.py")])))
        for name, path in trees.items():
            rss[f"minimcp {name}"].append(asyncio.run(idle_rss([PY, str(embed_scripts[name])])))
            cmd = [PY, str(Path(path) / "benchmarks" / "servers" / "minimcp_server.py")]
            rss[f"minimcp {name} (benchmark server)"].append(asyncio.run(idle_rss(cmd)))
    for script in embed_scripts.values():
        script.unlink()
    loaded: dict[str, list[str]] = {}
    for name, path in trees.items():
        text, modules = import_breakdown(Path(path))
        (HERE / "results" / f"embed-importtime-{name}.txt").write_text(text)
        loaded[name] = [m for m in modules if m.split(".")[0] in ("minimcp", "anyio") or m in NOT_FOR_STDIO]
    med_i = {k: statistics.median(v) for k, v in imports.items()}
    med_r = {k: statistics.median(v) for k, v in rss.items()}
    floor_i = med_i["floor: import asyncio, msgspec"]
    print(f"{'import (median of ' + str(args.runs) + ')':45s} {'ms':>7s} {'x floor':>8s}")
    for k, v in med_i.items():
        print(f"{k:45s} {v * 1e3:7.1f} {v / floor_i:7.2f}x")
    print(f"{'idle stdio server RSS (median)':45s} {'MB':>7s} {'x asyncio floor':>16s} {'x anyio floor':>14s}")
    for k, v in med_r.items():
        print(f"{k:45s} {v / 2**20:7.1f} {v / med_r['floor_asyncio']:15.2f}x {v / med_r['floor_anyio']:13.2f}x")
    doc: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": args.runs, "trees": trees,
        "loadavg": os.getloadavg(), "import_seconds": imports, "import_median": med_i,
        "idle_rss": rss, "idle_rss_median": med_r, "modules": loaded,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
