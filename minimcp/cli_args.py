"""The command line's options and help (argparse): the shared options and text are shown once, on the top level.

Examples name the running interpreter when a bare ``python`` would be another one.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from typing import Any

from minimcp import __version__

__all__ = ["LOG_LEVELS", "build_parser", "epilog", "program_name", "python_name"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _add_common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Options accepted before and after the command (after it, they only apply when given).

    Their help is shown once, by ``minimcp --help``; a command's help points there.
    """

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    def helps(text: str) -> str:
        return text if top else argparse.SUPPRESS

    group = parser.add_argument_group("common options (also accepted after the command)") if top else parser
    group.add_argument("--trace", action="store_true", default=default(False),
                       help=helps("print every wire message to stderr (-> sent, <- received), compact JSON"))
    group.add_argument("--trace-pretty", action="store_true", default=default(False),
                       help=helps("like --trace, with indented JSON and a one-line summary"))
    group.add_argument("--diagram", metavar="FILE", default=default(None),
                       help=helps("when the session ends, draw it as a sequence diagram: FILE.html (a page), "
                                  "FILE.svg, or - (text on stderr)"))
    group.add_argument("--answers", metavar="JSON", default=default(None),
                       help=helps("answer the server's questions without asking, from this JSON object of "
                                  "field values (fields not given take their defaults; a key that is not a "
                                  "field is an error), or a JSON list of such objects, one per question"))
    group.add_argument("--accept-defaults", action="store_true", default=default(False),
                       help=helps("answer the server's questions without asking, with their defaults"))
    group.add_argument("--accept-urls", action="store_true", default=default(False),
                       help=helps("consent to URL requests without asking (the URL is printed; no browser is "
                                  "opened)"))
    group.add_argument("--timeout", type=float, metavar="SECONDS", default=default(60.0),
                       help=helps("seconds to wait for each response (paused while you answer); 0: no limit"))
    group.add_argument("--log-level", choices=LOG_LEVELS, default=default(None),
                       help=helps("ask the server to send log messages from this level up (shown on stderr)"))
    group.add_argument("-H", "--header", action="append", metavar="'NAME: VALUE'", default=default([]),
                       help=helps("an extra HTTP header for http(s):// and ws(s):// targets (repeatable)"))
    group.add_argument("--backend", choices=("asyncio", "trio"), default=default("asyncio"),
                       help=helps("the event loop to run on"))
    group.add_argument("--no-color", action="store_true", default=default(False), help=helps("no ANSI colours"))
    group.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help=helps("debug logging of minimcp itself, and tracebacks on errors"))  # fmt: skip


def python_name() -> str:
    """This interpreter as examples should name it: ``python`` when the shell finds this one by that name.

    Otherwise (a virtual environment that is not active) its path: a bare ``python`` would be
    another interpreter, likely one without minimcp.
    """
    exe = sys.executable or "python"
    found = shutil.which("python")
    if found and os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(exe)):
        return "python"
    try:
        relative = os.path.relpath(exe)
    except ValueError:  # another drive (Windows)
        relative = exe
    return shlex.quote(exe if relative.startswith("..") else relative)


def program_name() -> str:
    """How this run was started: ``PYTHON -m minimcp``, or the installed ``minimcp`` command."""
    started = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return f"{python_name()} -m minimcp" if started == "__main__.py" else "minimcp"


def epilog(prog: str, python: str) -> str:
    """The shared text of ``--help`` (shown once, on the top level)."""
    server = f'"{python} examples/booking.py"'
    which = ""
    if python != "python":
        which = (
            f"\n(the examples name this interpreter, {python}:\n"
            " a bare 'python' here is another one, or none, and may lack minimcp)\n"
        )
    return f"""\
examples:
  {prog} tools {server}
  {prog} call {server} book_table date=2025-12-25 party_size=2
  {prog} call http://127.0.0.1:8000/mcp add --json '{{"a": 1, "b": 2}}'
  {prog} connect ws://127.0.0.1:8000/mcp
{which}
questions from the server (elicitation), in a terminal:
  enter or a answers the form, d declines, c cancels; then at each field
  enter keeps the default (shown, or prefilled for editing), !d declines,
  !c cancels, ctrl-D cancels that question. A bad value is explained and
  asked again. Requests to open a URL show the full URL, the host apart
  (decoded from punycode, with a warning for look-alike hosts); y opens
  the browser, n declines, c cancels. ctrl-C ends the run.

without a terminal (stdin is not a TTY) nothing waits for a person:
  questions are declined with a note on stderr, unless --answers and/or
  --accept-defaults answer them (a key that is not a field, or a value the
  form refuses, cancels the question and fails the run); URL requests are
  declined unless --accept-urls consents.

results go to stdout; logs, progress, notes and --trace to stderr.
exit status: 0 success, 1 the tool returned an error result,
  2 usage, connection or protocol error, 130 interrupted (ctrl-C).
"""


def build_parser() -> argparse.ArgumentParser:
    prog, python = program_name(), python_name()
    target_help = (
        f"the server: a command to spawn over stdio, as one argument (\"{python} examples/booking.py\"), "
        "an http(s):// URL (Streamable HTTP) or a ws(s):// URL (WebSocket)"
    )
    parser = argparse.ArgumentParser(
        prog=prog,
        description="A command-line MCP client: list tools, call them, answer the server's questions.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog(prog, python),
    )
    parser.add_argument("--version", action="version", version=f"minimcp {__version__}")
    _add_common(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    pointer = (
        "common options (--trace, --answers, --accept-defaults, --accept-urls, --timeout,\n"
        "--log-level, -H, --backend, --no-color, -v) go before or after the command;\n"
        f"they, examples and how questions are answered: {prog} --help"
    )

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=description, epilog=pointer,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        sub.add_argument("target", metavar="TARGET", help=target_help)
        _add_common(sub, top=False)
        return sub

    tools = command("tools", "list the server's tools", "List the server's tools.")
    tools.add_argument("--schema", action="store_true", help="also print each tool's full input schema")

    call = command(
        "call",
        "call a tool and print its result",
        "Call a tool and print its result.\n\nkey=value is parsed as JSON when it is valid JSON, else "
        "taken as a string\n(kept as typed when the tool's schema says the parameter is a string).",
    )
    call.add_argument("tool", metavar="TOOL", help="the tool's name")
    call.add_argument("pairs", metavar="key=value", nargs="*", help="the tool's arguments")
    call.add_argument("--json", metavar="OBJECT", help="the arguments as one JSON object (key=value pairs override)")
    call.add_argument("-o", "--output", choices=("text", "json"), default="text",
                      help="text: the result's content (default); json: the whole result as JSON")  # fmt: skip

    command(
        "connect",
        "an interactive session: list tools, call them",
        "An interactive session. Commands: call TOOL key=value ..., tools, help, quit.",
    )
    drawing = commands.add_parser(
        "diagram", help="draw a wire trace as a sequence diagram (see: diagram --help)", add_help=False
    )
    drawing.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser
