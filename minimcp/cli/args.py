"""The command line's arguments: argparse options and help, targets, ``key=value`` tool arguments, checked Options.

The shared options and text are shown once, on the top level. Examples name the
running interpreter when a bare ``python`` would be another one. Everything is
checked here, before connecting: a bad flag or argument is a :class:`CliError`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import sys
import urllib.parse
from collections.abc import Sequence
from typing import Any, Literal

from minimcp import __version__
from minimcp.cli.questions import Scripted
from minimcp.wire.errors import MinimcpError
from minimcp.wire.types import LOG_LEVELS, Tool

__all__ = [
    "CLIENT_SECRET_VARIABLE",
    "DEFAULT_TIMEOUT",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "SIGN_IN_WAIT",
    "Argument",
    "CliError",
    "Options",
    "Target",
    "build_parser",
    "epilog",
    "options_from",
    "parse_arguments",
    "parse_json_object",
    "parse_pairs",
    "parse_target",
    "parse_value",
    "program_name",
    "python_name",
]

#: The MCP log levels, least severe first (``--log-level``): the protocol's own list, not a copy.
#: Seconds ``--timeout`` waits for each response unless told otherwise.
DEFAULT_TIMEOUT = 60.0
#: Seconds the terminal waits for the browser to come back from the authorization server when signing in.
SIGN_IN_WAIT = 300.0
#: The environment variable that gives ``--client-id``'s secret when ``--client-secret`` is not given
#: (a command line is visible to every user of the machine in ``ps``; a process's environment is not).
CLIENT_SECRET_VARIABLE = "MINIMCP_CLIENT_SECRET"


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
    group.add_argument("--timeout", type=float, metavar="SECONDS", default=default(DEFAULT_TIMEOUT),
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
    signing = parser.add_argument_group("signing in (http(s):// targets whose server asks for it)") if top else parser
    signing.add_argument("--scope", action="append", metavar="SCOPES", default=default([]),
                         help=helps("the scopes to ask for at the first sign-in (repeatable, or several in one "
                                    "argument; default: those the server names)"))
    signing.add_argument("--client-id", metavar="ID", default=default(None),
                         help=helps("a client registered at the authorization server beforehand (else the "
                                    "terminal registers itself there)"))
    signing.add_argument("--client-secret", metavar="SECRET", default=default(None),
                         help=helps("that client's secret (a confidential client; never written to disk); "
                                    "else $MINIMCP_CLIENT_SECRET, which other users cannot read in ps"))
    signing.add_argument("--client-metadata-url", metavar="URL", default=default(None),
                         help=helps("the https URL of this client's Client ID Metadata Document, used when "
                                    "the authorization server supports them"))
    signing.add_argument("--no-store", action="store_true", default=default(False),
                         help=helps("keep tokens for this run only (not in the configuration directory)"))  # fmt: skip


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

signing in (a server that answers 401): the terminal says which authorization
  server it signs in at and for which resource, opens your browser (BROWSER
  picks it; the URL is printed when none can be opened) and waits up to
  {SIGN_IN_WAIT / 60:g} minutes for it to come back to 127.0.0.1. Tokens are kept in a file per
  authorization server and resource, mode 0600, under
  $XDG_CONFIG_HOME/minimcp/tokens (else ~/.config/minimcp/tokens);
  {prog} logout URL forgets them.
  {prog} call --scope bookings:read http://127.0.0.1:8000/mcp booking_status booking_id=b1

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
        "--log-level, -H, --backend, --no-color, -v, and the sign-in options --scope,\n"
        "--client-id, --client-secret, --client-metadata-url, --no-store) go before or\n"
        "after the command;\n"
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
    out = commands.add_parser(
        "logout", help="forget the kept tokens of a server", description="Forget every kept token of a server "
        "(at any authorization server): the next run signs in again.",
    )
    out.add_argument("url", metavar="URL", help="the server's http(s):// URL")
    drawing = commands.add_parser(
        "diagram", help="draw a wire trace as a sequence diagram (see: diagram --help)", add_help=False
    )
    drawing.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


#: Exit statuses (see the epilog); 130, interrupted, is :data:`minimcp.hosting.run.EXIT_INTERRUPTED`.
EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2


class CliError(MinimcpError):
    """A problem to report in one line, with exit status 2."""


# --- targets and arguments -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """Where the server is: a command to spawn (stdio), or a URL."""

    kind: Literal["stdio", "http", "ws"]
    command: tuple[str, ...] = ()
    url: str = ""

    def describe(self) -> str:
        return shlex.join(self.command) if self.kind == "stdio" else self.url


def parse_target(text: str) -> Target:
    """``http(s)://`` -> Streamable HTTP, ``ws(s)://`` -> WebSocket, else a command split with shlex."""
    stripped = text.strip()
    lower = stripped.lower()
    if lower.startswith(("http://", "https://")):
        return Target("http", url=stripped)
    if lower.startswith(("ws://", "wss://")):
        return Target("ws", url=stripped)
    try:
        command = shlex.split(stripped)
    except ValueError as exc:
        raise CliError(f"cannot split the server command {text!r}: {exc}") from None
    if not command:
        raise CliError("the target is empty: give a server command, an http(s):// URL or a ws(s):// URL")
    return Target("stdio", command=tuple(command))


@dataclasses.dataclass(frozen=True, slots=True)
class Argument:
    """One ``key=value`` argument: the text as typed and its JSON reading."""

    key: str
    text: str
    value: Any


def parse_value(text: str) -> Any:
    """JSON when ``text`` is valid JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: Sequence[str]) -> list[Argument]:
    out: list[Argument] = []
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise CliError(f"argument {pair!r} is not key=value (use --json for a JSON object)")
        out.append(Argument(key, text, parse_value(text)))
    return out


def parse_json_object(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"--json is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError("--json must be a JSON object, like '{\"a\": 1}'")
    return value


_JSON_KINDS: dict[type, tuple[str, ...]] = {
    bool: ("boolean",),
    int: ("integer", "number"),
    float: ("number",),
    str: ("string",),
    type(None): ("null",),
    list: ("array",),
    dict: ("object",),
}


def _allowed_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kinds: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
    elif isinstance(kind, list):
        kinds.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                kinds |= _allowed_types(sub)
    return kinds


def parse_arguments(pairs: Sequence[Argument], base: dict[str, Any], tool: Tool | None = None) -> dict[str, Any]:
    """The call's arguments: ``base`` (from ``--json``), then each pair.

    A pair's JSON reading is used unless the tool's schema says the parameter takes a
    string and not the JSON value's type; then the text is kept as typed.
    """
    props: dict[str, Any] = {}
    if tool is not None and isinstance(tool.input_schema.get("properties"), dict):
        props = tool.input_schema["properties"]
    arguments = dict(base)
    for arg in pairs:
        value = arg.value
        allowed = _allowed_types(props.get(arg.key))
        if not isinstance(value, str) and "string" in allowed and not set(_JSON_KINDS.get(type(value), ())) & allowed:
            value = arg.text
        arguments[arg.key] = value
    return arguments


# --- the command line ----------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Options:
    """Everything a run needs, checked before connecting."""

    command: str
    target: Target
    trace: Literal["off", "compact", "pretty"]
    diagram: str | None
    scripted: Scripted
    timeout: float | None
    log_level: str | None
    headers: dict[str, str]
    backend: str
    color: bool | None
    verbose: bool
    args: argparse.Namespace
    call_pairs: list[Argument] = dataclasses.field(default_factory=list)
    call_base: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The handshake completed (errors after it are the server's answers, not connection failures).
    connected: bool = False
    #: What the run is doing (named if ctrl-C interrupts it), and what it was doing when ctrl-C came.
    doing: str = "starting"
    interrupted_while: str | None = None
    #: The session's wire trace, kept for ``--diagram``.
    wire: list[str] = dataclasses.field(default_factory=list)
    #: Signing in (http(s) targets): the scopes asked for first (``None``: the server's), a client
    #: registered beforehand, a Client ID Metadata Document's URL, and whether tokens stay in memory.
    scopes: list[str] | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    no_store: bool = False


def _headers(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise CliError(f"header {item!r} is not 'Name: value'")
        out[name.strip()] = value.strip()
    return out


def options_from(args: argparse.Namespace) -> Options:
    answers: dict[str, Any] | list[dict[str, Any]] | None = None
    if args.answers is not None:
        try:
            answers = json.loads(args.answers)
        except ValueError as exc:
            raise CliError(f"--answers is not valid JSON: {exc}") from None
        one_per_question = isinstance(answers, list) and all(isinstance(item, dict) for item in answers)
        if not isinstance(answers, dict) and not one_per_question:
            raise CliError(
                "--answers must be a JSON object of field values, like '{\"date\": \"2025-12-26\"}', "
                "or a list of them, one per question"
            )
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    options = Options(
        command=args.command,
        target=parse_target(args.target),
        trace="pretty" if args.trace_pretty else "compact" if args.trace else "off",
        diagram=args.diagram,
        scripted=Scripted(answers=answers, accept_defaults=args.accept_defaults, accept_urls=args.accept_urls),
        timeout=timeout,
        log_level=args.log_level,
        headers=_headers(args.header),
        backend=args.backend,
        color=False if args.no_color else None,
        verbose=args.verbose,
        args=args,
    )
    _signing_in(options, args)
    if args.command == "call":
        options.call_base = parse_json_object(args.json)
        options.call_pairs = parse_pairs(args.pairs)
    return options


def _signing_in(options: Options, args: argparse.Namespace) -> None:
    """The sign-in flags, checked: they apply to http(s):// targets only."""
    scopes = [scope for text in args.scope for scope in text.split()]
    given = [flag for flag, value in (("--scope", scopes), ("--client-id", args.client_id),
             ("--client-secret", args.client_secret), ("--client-metadata-url", args.client_metadata_url),
             ("--no-store", args.no_store)) if value]  # fmt: skip
    if given and options.target.kind != "http":
        raise CliError(f"{given[0]} is for http(s):// targets (the terminal signs in over Streamable HTTP only)")
    if args.client_secret is not None and args.client_id is None:
        raise CliError("--client-secret needs --client-id")
    secret = args.client_secret
    if secret is None and args.client_id is not None:
        secret = os.environ.get(CLIENT_SECRET_VARIABLE) or None  # (only for a client named by --client-id)
    if args.client_metadata_url is not None:
        parts = urllib.parse.urlsplit(args.client_metadata_url)
        if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
            raise CliError("--client-metadata-url must be an https:// URL with a path (the metadata document's)")
    options.scopes = scopes or None
    options.client_id = args.client_id
    options.client_secret = secret
    options.client_metadata_url = args.client_metadata_url
    options.no_store = args.no_store
