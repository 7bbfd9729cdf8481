"""Server instructions per stdio round trip, counted by valgrind: a CPU figure a busy machine cannot blur.

    python benchmarks/instructions.py [--tree DIR ...] [--calls 2000] [-c 100]

Each tree's benchmark server (``benchmarks/servers/minimcp_server.py``, stdio, asyncio) runs
under ``valgrind --tool=cachegrind --cache-sim=no``, which counts the instructions the
process executes. This checkout's client makes ``-c`` callers ask the ``ask`` tool (one
question, answered at once) 200 times in all, then, in a second server, ``200 + --calls``
times; the difference over ``--calls`` is the server's instructions per round trip, with
start-up, imports and warm-up taken out. Wall-clock and CPU-time figures swing by 20 % when
other jobs share the cores; this one moves by well under 1 % between runs. It counts work,
not time: cache misses and system calls are not in it.

Prints one JSON line per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the client: this checkout's

import anyio  # noqa: E402 (after the path)

from minimcp import Accepted, connect_stdio  # noqa: E402

BASE = 200


async def _serve(tree: Path, calls: int, callers: int, log: str) -> None:
    async def answer(question: Any) -> Accepted[dict[str, Any]]:
        return Accepted({"answer": "yes"})

    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", f"--log-file={log}",
           sys.executable, str(tree / "benchmarks" / "servers" / "minimcp_server.py"),
           "--transport", "stdio", "--backend", "asyncio"]
    async with connect_stdio(cmd, elicitation_handler=answer) as client:

        async def caller(n: int) -> None:
            for i in range(n):
                await client.call_tool("ask", {"i": i})

        async with anyio.create_task_group() as tg:
            for k in range(callers):
                tg.start_soon(caller, calls // callers + (k < calls % callers))


def instructions(tree: Path, calls: int, callers: int) -> int:
    """The instructions of one server process that answered ``calls`` round trips, then exited."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "valgrind.txt")
        anyio.run(_serve, tree, calls, callers, log)
        for _ in range(100):  # valgrind writes its summary as the process exits
            text = Path(log).read_text() if os.path.exists(log) else ""
            if (found := re.search(r"I\s+refs:\s+([\d,]+)", text)) is not None:
                return int(found.group(1).replace(",", ""))
            anyio.run(anyio.sleep, 0.1)
    raise SystemExit(f"no instruction count from valgrind for {tree}: {text[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", help="a checkout (default: this one); repeatable")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("-c", type=int, default=100, help="concurrent callers")
    args = parser.parse_args()
    for tree in args.tree or [ROOT]:
        tree = tree.resolve()
        base = instructions(tree, BASE, args.c)
        more = instructions(tree, BASE + args.calls, args.c)
        print(json.dumps({"tree": str(tree), "c": args.c, "calls": args.calls,
                          "server_instructions_per_round_trip": round((more - base) / args.calls)}), flush=True)


if __name__ == "__main__":
    main()
