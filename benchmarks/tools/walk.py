"""The walk of one elicitating call: which library files the server passes through, in order.

    python benchmarks/tools/walk.py [--tree DIR] [--backend asyncio|trio] [--era legacy|modern] [--show]

The booking example (``examples/booking.py``) runs over stdio with a profiler installed in the
server process: every Python call into a file of the ``minimcp/`` package from
another file (or from the event loop) is recorded with a CLOCK_MONOTONIC stamp (shared by all processes on Linux). The client (this
process, over the same checkout's ``connect_stdio``) books 2025-12-25 for two and accepts the
alternative, noting when it sent ``tools/call`` and when the result came back; the server's
records inside that window are the walk.

Printed (one JSON line): the distinct files entered, the number of file entries (calls that
cross into a library file; calls within a file and returns are not counted), and the number of
re-entries (a file entered again after the walk had entered another file; wire/jsonrpc.py and
wire/types.py, the codecs, left out: jsonrpc.py and types.py in a tree of the flat layout).
Run it on two checkouts to compare a refactoring's walk before and after; ``--show`` prints the
sequence of file entries.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

PROFILER = r"""
import os, sys, time, atexit
_root = os.environ["WALK_ROOT"]
_out = open(os.environ["WALK_OUT"], "w")
_clock = time.clock_gettime
_mono = time.CLOCK_MONOTONIC
_rows = []
def _prof(frame, event, arg):
    if event == "call":
        f = frame.f_code.co_filename
        if f.startswith(_root):
            back = frame.f_back
            caller = back.f_code.co_filename if back is not None else ""
            if caller != f:  # a call into this file from another one (or from the event loop)
                _rows.append((_clock(_mono), f[len(_root):], frame.f_code.co_name))
def _dump():
    for t, f, n in _rows:
        _out.write(f"{t:.9f} {f} {n}\n")
    _out.close()
atexit.register(_dump)
import threading
threading.setprofile(_prof)
sys.setprofile(_prof)
"""


#: The file of the example's page server (see ``main``).
PAGE_SERVER = "transports/asgi_server.py"


def run(tree: Path, backend: str, era: str) -> tuple[list[tuple[float, str, str]], float, float]:
    sys.path.insert(0, str(tree))
    import anyio

    from minimcp import Accepted, connect_stdio

    with tempfile.TemporaryDirectory() as tmp:
        boot = Path(tmp) / "sitecustomize.py"
        boot.write_text(PROFILER)
        out = Path(tmp) / "walk.txt"
        env = dict(os.environ, PYTHONPATH=f"{tmp}:{tree}", WALK_ROOT=str(tree / "minimcp") + "/",
                   WALK_OUT=str(out))
        window: list[float] = []

        async def person(question: object) -> Accepted[dict[str, object]]:
            return Accepted({"accept_alternative": True})

        async def main() -> None:
            async with connect_stdio([sys.executable, str(tree / "examples" / "booking.py"), "--backend", backend],
                                     elicitation_handler=person, era=era, env=env) as client:
                await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})  # warm up (the same call)
                window.append(time.clock_gettime(time.CLOCK_MONOTONIC))
                await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                window.append(time.clock_gettime(time.CLOCK_MONOTONIC))

        anyio.run(main, backend="asyncio")
        rows = []
        for line in out.read_text().splitlines():
            t, f, name = line.split(" ", 2)
            rows.append((float(t), f, name))
    return rows, window[0], window[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--backend", default="asyncio")
    parser.add_argument("--era", default="legacy")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    rows, start, end = run(args.tree.resolve(), args.backend, args.era)
    # The example also serves its browser pages (uvicorn, in the same loop); uvicorn's main loop wakes
    # every 0.1 s, and each wake resumes the page server's coroutine in transports/asgi_server.py. Those
    # resumptions are no step of the call, whatever the window they fall in.
    entries = [(f, n) for t, f, n in rows if start <= t <= end and f != PAGE_SERVER]
    codecs = {"wire/jsonrpc.py", "wire/types.py", "jsonrpc.py", "types.py"}  # this layout, and the flat one
    loops = 0
    left: set[str] = set()
    for (prev, _), (cur, _) in itertools.pairwise(entries):
        left.add(prev)
        if cur in left and cur not in codecs:
            loops += 1
    files = sorted({f for f, _ in entries})
    print(json.dumps({"tree": str(args.tree), "era": args.era, "backend": args.backend,
                      "file_entries": len(entries), "files": len(files),
                      "file_list": files, "reentries": loops}))
    if args.show:
        for f, n in entries:
            print(f"  {f:40} {n}")


if __name__ == "__main__":
    main()
