"""``python -m minimcp diagram TRACE -o FILE``: draw a wire trace as a sequence diagram.

The output's kind follows its name: ``.html`` (a self-contained page: the drawing, tooltips and
every message in full), ``.svg`` (the drawing alone), or ``-`` / ``.txt`` (text, for a terminal).
Lines of the trace that cannot be read are reported on stderr with their numbers and skipped.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
from collections.abc import Iterable, Sequence

from minimcp.diagram.layout import Diagram, read_trace, render_text
from minimcp.diagram.svg import render_html, render_svg

__all__ = ["main", "write_diagram"]

_TERMINAL_FALLBACK = (120, 40)  # columns, lines when the terminal's size is unknown
_TEXT_FILE_WIDTH = 160  # columns of a text drawing written to a file
_EXIT_FAILURE = 2  # nothing could be read or written


def write_diagram(lines: Iterable[str], target: str, *, side: str | None = None, title: str | None = None) -> Diagram:
    """Draw the trace ``lines`` into ``target`` (a path, or ``-`` for text on stdout)."""
    diagram = read_trace(lines, side=side)
    suffix = pathlib.Path(target).suffix.lower()
    if target == "-" or suffix == ".txt":
        width = shutil.get_terminal_size(_TERMINAL_FALLBACK).columns if target == "-" else _TEXT_FILE_WIDTH
        text = render_text(diagram, width=width)
        if target == "-":
            sys.stdout.write(text)
        else:
            pathlib.Path(target).write_text(text, encoding="utf-8")
    elif suffix == ".svg":
        pathlib.Path(target).write_text(render_svg(diagram), encoding="utf-8")
    else:
        page = render_html(diagram, title=title or "MCP wire trace")
        pathlib.Path(target).write_text(page, encoding="utf-8")
    return diagram


def _say(text: str) -> None:
    """A line for the person at the terminal (the command's own output, on stderr)."""
    sys.stderr.write(f"minimcp diagram: {text}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``diagram`` command; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="minimcp diagram",
        description="Draw a wire trace (a WireTrace JSON-lines file, from either side) as a sequence diagram.",
        epilog="Make a trace with Server(trace=WireTrace('wire.jsonl')) or Client(trace=...); "
        "the tools, call and connect commands draw their own session with --diagram FILE.",
    )
    parser.add_argument("trace", help="the trace file (JSON lines), or - for standard input")
    parser.add_argument(
        "-o",
        "--output",
        default="-",
        help="FILE.html (default kind), FILE.svg, FILE.txt, or - for text on stdout (the default)",
    )
    parser.add_argument(
        "--side", choices=("server", "client"), help="whose trace it is (found from the trace when left out)"
    )
    parser.add_argument("--title", help="the page's title (HTML)")
    args = parser.parse_args(argv)
    try:
        if args.trace == "-":
            diagram = write_diagram(sys.stdin, args.output, side=args.side, title=args.title)
        else:
            with open(args.trace, encoding="utf-8", errors="replace") as lines:
                diagram = write_diagram(lines, args.output, side=args.side, title=args.title or args.trace)
    except OSError as exc:
        _say(f"{exc.strerror or exc}: {exc.filename or args.trace}")
        return _EXIT_FAILURE
    for problem in diagram.problems:
        _say(f"skipped {problem}")
    if args.output != "-":
        skipped = f", {len(diagram.problems)} lines skipped" if diagram.problems else ""
        sys.stderr.write(f"wrote {args.output}: {len(diagram.events)} messages{skipped}\n")
    return 0 if diagram.events or not diagram.problems else _EXIT_FAILURE
