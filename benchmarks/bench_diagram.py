"""How long a large wire trace takes to draw, and to open in a browser.

Records a real server-side trace in memory (our client and server, the booking scenario's
shape: each call asks one question, ``--concurrency`` calls at a time), until it holds
``--messages`` messages; then times reading it, drawing the HTML page, the SVG and the text,
and (when Chromium is installed) how long headless Chromium takes to load the page and
paint a screenshot. Figures are printed (and written as JSON with ``--json``), never asserted.

    python benchmarks/bench_diagram.py                   # 10,000 messages
    python benchmarks/bench_diagram.py --messages 2000 --quick
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio

from minimcp import Accepted, Client, Context, ElicitationRequest, Limits, Server, memory_pair
from minimcp.core.trace import WireTrace
from minimcp.diagram.layout import read_trace, render_text
from minimcp.diagram.svg import render_html, render_svg

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


async def record(messages: int, concurrency: int) -> list[str]:
    """A real trace: calls that each ask one question, ``concurrency`` at a time."""
    lines: list[str] = []
    app = Server("bench", limits=Limits(elicitation_timeout=600), trace=WireTrace(lines.append))

    @app.tool()
    async def book(ctx: Context, n: int) -> str:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        answer = await ctx.elicit(f"Question {n}: go on?", schema)
        return f"call {n}: {type(answer).__name__}"

    async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        return Accepted({"ok": True})

    a, b = memory_pair()
    calls = max((messages - 3) // 4, 1)  # four messages a call, three for the handshake
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, elicitation_handler=person) as client:
            limiter = anyio.CapacityLimiter(concurrency)

            async def one(n: int) -> None:
                async with limiter:
                    await client.call_tool("book", {"n": n})

            async with anyio.create_task_group() as calls_tg:
                for n in range(calls):
                    calls_tg.start_soon(one, n)
        tg.cancel_scope.cancel()
    return lines


def timed(fn: Any, *args: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def browser_load(page: pathlib.Path) -> float | None:
    """Seconds for headless Chromium to start, load the page and paint a screenshot (None: no Chromium)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    with tempfile.TemporaryDirectory() as profile:
        start = time.perf_counter()
        subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={profile}/shot.png",
             "--window-size=1400,1000", page.as_uri()],
            capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        elapsed = time.perf_counter() - start
        return elapsed if pathlib.Path(profile, "shot.png").exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="one repeat, no browser")
    parser.add_argument("--json", type=pathlib.Path, help="write the figures here")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3

    lines = anyio.run(record, args.messages, args.concurrency)
    read_s, diagram = timed(read_trace, lines, repeats=repeats)
    html_s, html = timed(render_html, diagram, repeats=repeats)
    svg_s, svg = timed(render_svg, diagram, repeats=repeats)
    text_s, _ = timed(render_text, diagram, repeats=repeats)
    with tempfile.TemporaryDirectory() as folder:
        page = pathlib.Path(folder, "trace.html")
        page.write_text(html, encoding="utf-8")
        browser_s = None if args.quick else browser_load(page)
    figures = {
        "messages": len(diagram.events),
        "concurrency": args.concurrency,
        "read_s": round(read_s, 4),
        "html_s": round(html_s, 4),
        "svg_s": round(svg_s, 4),
        "text_s": round(text_s, 4),
        "html_mb": round(len(html.encode()) / 1e6, 2),
        "svg_mb": round(len(svg.encode()) / 1e6, 2),
        "chromium_load_and_paint_s": None if browser_s is None else round(browser_s, 2),
        "python": sys.version.split()[0],
    }
    print(f"{figures['messages']:,} messages ({args.concurrency} calls at a time), medians of {repeats}:")
    print(f"  read + lay out   {read_s:7.3f} s")
    print(f"  HTML page        {html_s:7.3f} s  ({figures['html_mb']} MB)")
    print(f"  SVG              {svg_s:7.3f} s  ({figures['svg_mb']} MB)")
    print(f"  text             {text_s:7.3f} s")
    if browser_s is not None:
        print(f"  Chromium: start, load and paint the page  {browser_s:.2f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
