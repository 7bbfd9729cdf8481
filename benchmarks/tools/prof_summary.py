"""Summarise a py-spy profile (``-f raw``) or a cProfile file of a benchmark server: where the time goes.

    BENCH_SERVER_PREFIX="py-spy record -r 500 -f raw -o prof.txt --" \\
        python benchmarks/driver.py roundtrip --server minimcp --wire http -c 100 --seconds 5
    python benchmarks/tools/prof_summary.py prof.txt [--per-rt-us 950] [--top 15]

Without py-spy: ``BENCH_SERVER_PREFIX="python benchmarks/tools/cprof.py prof.out"`` (see cprof.py),
then the same command on ``prof.out`` (read with pstats: own time per function instead of
own samples, cumulative time instead of inclusive samples; "samples" are then microseconds).

Prints the share of the samples by component (the file of the innermost frame: the
ASGI server and HTTP parser, the event loop, anyio, each part of minimcp, msgspec's
callers ...), the top functions by their own samples and by inclusive samples
(the function anywhere on the stack). With ``--per-rt-us`` (the server's CPU per round
trip from the driver's row) shares are also given in µs per round trip.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")

# (substring of the file path or function, component); the first that matches wins
COMPONENTS = [
    ("h11/", "HTTP parsing (h11)"),
    ("httptools/parser", "HTTP parsing (httptools)"),
    ("httptools.parser", "HTTP parsing (httptools)"),  # cProfile: the C parser's methods
    ("_socket.socket", "socket calls (send / recv)"),  # cProfile: C methods
    ("select.epoll", "event loop (asyncio)"),
    ("builtins.compile", "start-up imports (inside the sampling window)"),
    ("marshal.loads", "start-up imports (inside the sampling window)"),
    ("builtins.exec", "start-up imports (inside the sampling window)"),
    ("uvicorn/", "ASGI server (uvicorn protocol and ASGI glue)"),
    ("hypercorn/", "ASGI server (hypercorn)"),
    ("granian/", "ASGI server (granian glue)"),
    ("minimcp/transports/_uvicorn_guard", "ASGI server (minimcp's uvicorn guard)"),
    ("minimcp/transports/http/_headers", "header checks (Host / Origin / MCP headers)"),
    ("minimcp/transports/http/_session_table", "session lookup / table"),
    ("minimcp/transports/http/_sse", "SSE framing"),
    ("minimcp/transports/_ports", "session activity (the WebSocket watchdog's reads)"),
    ("minimcp/transports/http", "Streamable HTTP app (minimcp/transports/http/)"),
    ("minimcp/transports/asgi_server", "ASGI server (minimcp's wrapper)"),
    ("minimcp/jsonrpc", "JSON-RPC decode / encode (minimcp, msgspec)"),
    ("minimcp/", "MCP session, server, context, tool (minimcp core)"),
    ("anyio/", "anyio (task groups, cancel scopes, events, streams)"),
    ("asyncio/", "event loop (asyncio)"),
    ("selectors", "event loop (asyncio)"),
    ("uvloop", "event loop (uvloop)"),
    ("trio/", "event loop (trio)"),
    ("benchmarks/servers", "benchmark tool / floor"),
    ("floor_http", "benchmark tool / floor"),
    ("msgspec", "msgspec"),
    ("secrets", "session ids"),
    ("<frozen importlib", "start-up imports (inside the sampling window)"),
]


ROOT = __file__.rsplit("/benchmarks/", 1)[0] + "/"  # this checkout: its paths are matched relative to it


def component(func: str, file: str) -> str:
    file = file.removeprefix(ROOT)
    for key, name in COMPONENTS:
        if key in file or key in func:
            return name
    return f"other ({file.rsplit('/', 2)[-1] if file else func})"


def parse(path: str) -> list[tuple[list[tuple[str, str]], int]]:
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            frames = []
            for part in stack.split(";"):
                m = FRAME.match(part)
                if m:
                    frames.append((m.group(1), m.group(2)))
            if frames:
                out.append((frames, int(count)))
    return out


def parse_pstats(path: str) -> tuple[Counter[str], Counter[str], Counter[str]] | None:
    """A cProfile file: (µs by component, own µs by function, cumulative µs by function); None if not one."""
    import pstats

    try:
        stats = pstats.Stats(path)
    except (ValueError, TypeError, EOFError, OSError):
        return None
    comp: Counter[str] = Counter()
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for (file, _line, func), (_cc, _nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        name = f"{func} ({short(file)})"
        comp[component(func, file)] += round(tt * 1e6)
        own[name] += round(tt * 1e6)
        incl[name] = max(incl[name], round(ct * 1e6))
    return comp, own, incl


def short(file: str) -> str:
    file = file.removeprefix(ROOT)
    for marker in ("site-packages/", "python3.11/", "httpbench/"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--per-rt-us", type=float, default=0.0)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    with open(args.profile, "rb") as f:
        binary = b"\0" in f.read(4096)
    profiled = parse_pstats(args.profile) if binary else None
    if profiled is not None:
        comp, own, incl = profiled
        total = sum(own.values())
    else:
        samples = parse(args.profile)
        total = sum(n for _, n in samples)
        comp = Counter()
        own = Counter()
        incl = Counter()
        for frames, n in samples:
            func, file = frames[-1]  # innermost last in py-spy's raw output
            comp[component(func, file)] += n
            own[f"{func} ({short(file)})"] += n
            for name in {f"{fn} ({short(fl)})" for fn, fl in frames}:
                incl[name] += n

    def fmt(n: int) -> str:
        share = n / total
        us = f" | {share * args.per_rt_us:,.0f} µs" if args.per_rt_us else ""
        return f"{share * 100:5.1f}%{us}"

    unit = " | µs per round trip" if args.per_rt_us else ""
    sep = " | ---:" if unit else ""
    print(f"{total} samples\n\n| component (innermost frame) | share{unit} |\n| --- | ---:{sep} |")
    rest = 0
    for name, n in comp.most_common():
        if n < 0.01 * total:
            rest += n
            continue
        print(f"| {name} | {fmt(n)} |")
    print(f"| everything under 1% each | {fmt(rest)} |")
    print(f"\n| function (own samples) | share{unit} |\n| --- | ---:{' | ---:' if unit else ''} |")
    for name, n in own.most_common(args.top):
        print(f"| `{name}` | {fmt(n)} |")
    print(f"\n| function (inclusive) | share{unit} |\n| --- | ---:{' | ---:' if unit else ''} |")
    shown = 0
    for name, n in incl.most_common():
        if n > 0.8 * total:  # the run loop and the frames every sample passes through
            continue
        print(f"| `{name}` | {fmt(n)} |")
        shown += 1
        if shown == args.top:
            break


if __name__ == "__main__":
    main()
