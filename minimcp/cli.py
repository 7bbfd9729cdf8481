"""The command-line client: ``python -m minimcp`` (or the installed ``minimcp`` command).

::

    minimcp tools   TARGET                          list the server's tools
    minimcp call    TARGET TOOL [key=value ...]     call a tool, print its result
    minimcp connect TARGET                          an interactive session

``TARGET`` is a command that starts a server over stdio (one argument, split like a
shell would: ``"python examples/booking.py"``), an ``http(s)://`` URL (Streamable
HTTP) or a ``ws(s)://`` URL (WebSocket).

``key=value`` arguments are parsed as JSON when they are valid JSON (``2``, ``true``,
``{"a": 1}``), else taken as strings; when the tool's input schema says a parameter
is a string, the text is kept as typed (``name=42`` sends ``"42"``). ``--json
'{...}'`` gives the arguments as one JSON object (``key=value`` pairs override it).

When the server asks a question mid-call (elicitation), it is asked in the terminal;
without one (stdin is not a TTY) questions are declined with a note on stderr,
unless ``--answers '{"field": value}'`` or ``--accept-defaults`` answer them, and
URL requests are declined unless ``--accept-urls`` consents. Nothing waits for a
person who is not there.

Results go to stdout; logs, progress, notes and ``--trace`` to stderr.

Exit status: 0 success; 1 the tool returned an error result; 2 a usage, connection
or protocol error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shlex
import signal
import sys
import threading
import types
import typing
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal

import anyio

from minimcp import __version__
from minimcp.cli_args import build_parser
from minimcp.cli_render import (
    Console,
    LineReader,
    Progress,
    Questions,
    Scripted,
    describe_tool,
    format_log,
    format_result,
    format_trace,
    result_json,
    server_banner,
)
from minimcp.cli_stderr import StderrRelay, relaying
from minimcp.client import Client
from minimcp.config import Limits
from minimcp.elicitation import UrlElicitationRequired
from minimcp.errors import ConnectionClosed, McpError, MinimcpError, RequestTimeout, UnsupportedVersion
from minimcp.interrupt import EXIT_INTERRUPTED, is_interrupt
from minimcp.trace import WireTrace
from minimcp.transports import Transport
from minimcp.transports.trace import TracedTransport
from minimcp.types import CallToolResult, LoggingLevel, LoggingMessageParams, Tool, UnsetType

__all__ = ["CliError", "Target", "build_parser", "main", "parse_arguments", "parse_target"]

logger = logging.getLogger("minimcp.cli")

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2

URL_STEP_WAIT = 600  # seconds to wait for the server to report consented browser steps complete


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
    if args.command == "call":
        options.call_base = parse_json_object(args.json)
        options.call_pairs = parse_pairs(args.pairs)
    return options


# --- connecting ----------------------------------------------------------------------------------------------


def _transport_for(
    options: Options, limits: Limits, stderr: int | None = None
) -> contextlib.AbstractAsyncContextManager[Transport]:
    """The transport's context manager (imports the HTTP and WebSocket transports only when needed)."""
    target = options.target
    headers = options.headers or None
    if target.kind == "stdio":
        from minimcp.transports.stdio import stdio_client

        return stdio_client(target.command, limits=limits, stderr=stderr)
    if target.kind == "http":
        try:
            from minimcp.transports.http import http_client
        except ImportError as exc:
            raise CliError(f"http(s):// targets need the http extra (pip install 'minimcp[http]'): {exc}") from None
        return http_client(target.url, headers=headers, limits=limits)
    try:
        from minimcp.transports.websocket import websocket_client
    except ImportError as exc:
        raise CliError(f"ws(s):// targets need the ws extra (pip install 'minimcp[ws]'): {exc}") from None
    return websocket_client(target.url, limits=limits, headers=headers)


@contextlib.asynccontextmanager
async def open_transport(options: Options, limits: Limits, stderr: int | None = None) -> AsyncIterator[Transport]:
    """Open the transport to the target; failures to start or reach it become :class:`CliError`."""
    target = options.target
    async with contextlib.AsyncExitStack() as stack:
        try:
            transport = await stack.enter_async_context(_transport_for(options, limits, stderr))
        except (FileNotFoundError, PermissionError) as exc:
            if target.kind != "stdio":
                raise
            raise CliError(f"cannot start the server command {target.command[0]!r}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise CliError(f"invalid URL {target.url!r}: {exc}") from None
        yield transport


@contextlib.asynccontextmanager
async def connect(options: Options, console: Console, questions: Questions) -> AsyncIterator[Client]:
    limits = Limits(request_timeout=options.timeout)
    err_style = console.err_style

    def trace(direction: str, data: bytes) -> None:
        console.note(format_trace(direction, data, err_style, pretty=options.trace == "pretty"))

    def log(params: LoggingMessageParams) -> None:
        console.note(format_log(params, err_style))

    def notified(method: str, params: Any) -> None:
        if (options.command == "connect" or options.verbose) and method.endswith("/list_changed"):
            what = method.removeprefix("notifications/").removesuffix("/list_changed")
            console.note(err_style.dim(f"(the server's {what} list changed)"))

    def completed(elicitation_id: str) -> None:
        short = elicitation_id if len(elicitation_id) <= 12 else elicitation_id[:12] + "..."
        console.note(err_style.green(f"{err_style.glyph('✓', 'ok')} the server reports browser step {short} complete"))

    # A spawned server's stderr comes through a pipe, so its shutdown cannot flood the terminal.
    relay = None
    if options.target.kind == "stdio" and os.name == "posix":
        relay = StderrRelay(console, verbose=options.verbose)
    async with relaying(relay, limits.shutdown_timeout), open_transport(
        options, limits, None if relay is None else relay.write_fd
    ) as raw:
        if relay is not None:
            relay.child_started()
        transport: Transport = raw if options.trace == "off" else TracedTransport(raw, trace)
        try:
            async with Client(
                transport,
                name="minimcp-cli",
                version=__version__,
                elicitation_handler=questions.elicit,
                url_handler=questions.consent,
                on_elicitation_complete=completed,
                logging_handler=log,
                on_notification=notified,
                limits=limits,
                trace=None if options.diagram is None else WireTrace(options.wire.append),
            ) as client:
                options.connected = True
                if options.log_level is not None:
                    if isinstance(client.server_capabilities.logging, UnsetType):
                        console.note(err_style.dim("(the server does not offer logging; --log-level ignored)"))
                    else:
                        await client.set_logging_level(typing.cast("LoggingLevel", options.log_level))
                try:
                    yield client
                finally:
                    if relay is not None:
                        relay.end()
        finally:
            if options.diagram is not None:
                _draw(options, console)


def _draw(options: Options, console: Console) -> None:
    """Write the ``--diagram`` of the session (even one that failed: that is when it helps most)."""
    from minimcp.diagram_cmd import write_diagram

    assert options.diagram is not None
    if options.diagram == "-":
        from minimcp.diagram import read_trace, render_text

        console.note(render_text(read_trace(options.wire)).rstrip("\n"))
        return
    try:
        drawn = write_diagram(options.wire, options.diagram, title=f"minimcp {options.command}")
    except OSError as exc:
        console.note(console.err_style.red(f"could not write the diagram to {options.diagram}: {exc.strerror or exc}"))
    else:
        console.note(f"the diagram of this session ({len(drawn.events)} messages) is in {options.diagram}")


# --- commands ------------------------------------------------------------------------------------------------


async def _tool_named(client: Client, name: str) -> tuple[Tool | None, list[Tool]]:
    try:
        tools = await client.list_tools()
    except McpError as exc:
        if isinstance(exc, ConnectionClosed):
            raise
        return None, []
    return next((t for t in tools if t.name == name), None), tools


async def call_tool(
    client: Client, questions: Questions, console: Console, name: str, arguments: dict[str, Any]
) -> CallToolResult:
    """Call with a progress display; on -32042, take the browser steps (with consent) and call again."""
    progress = Progress(console)
    try:
        try:
            result = await client.call_tool(
                name, arguments, on_progress=progress.update, reset_timeout_on_progress=True
            )
            await questions.settled()
            return result
        except UrlElicitationRequired as required:
            if not (questions.interactive or questions.scripted.accept_urls):
                raise _url_steps_error(required, "stdin is not a terminal; consent with --accept-urls") from None
            console.note(console.err_style.dim(
                "(the server needs steps in your browser first: asking, then waiting up to "
                f"{URL_STEP_WAIT // 60} minutes for the server to report them done)"
            ))  # fmt: skip
            try:
                result = await client.call_tool_with_consent(name, arguments, completion_timeout=URL_STEP_WAIT)
                await questions.settled()
                return result
            except UrlElicitationRequired as again:
                raise _url_steps_error(again, "not all steps were agreed to or completed") from None
    finally:
        progress.finish()


def _url_steps_error(required: UrlElicitationRequired, why: str) -> CliError:
    steps = "; ".join(f"{e.message} <{e.url}>" for e in required.elicitations) or required.message
    return CliError(f"the server needs steps in a browser first ({why}): {steps}")


def print_result(console: Console, result: CallToolResult, output: str) -> int:
    if output == "json":
        console.result(result_json(result))
    else:
        text = format_result(result)
        if text:
            console.result(text)
    if result.is_error is True:
        console.note(console.err_style.red("minimcp: the tool returned an error result"))
        return EXIT_TOOL_ERROR
    return EXIT_OK


async def cmd_tools(client: Client, options: Options, console: Console) -> int:
    tools = await client.list_tools()
    if not tools:
        console.result("(the server has no tools)")
    for tool in tools:
        console.result("\n".join(describe_tool(tool, full=options.args.schema)))
    return EXIT_OK


async def cmd_call(client: Client, options: Options, console: Console, questions: Questions) -> int:
    name = options.args.tool
    tool, tools = await _tool_named(client, name)
    arguments = parse_arguments(options.call_pairs, options.call_base, tool)
    try:
        result = await call_tool(client, questions, console, name, arguments)
    except McpError as exc:
        if tools and tool is None and not isinstance(exc, ConnectionClosed):
            known = ", ".join(t.name for t in tools)
            raise CliError(f"the server refused the call ({exc.code}): {exc.message}; its tools: {known}") from None
        raise
    status = print_result(console, result, options.args.output)
    if questions.failures:  # the result shows what the server made of the cancel; the run still failed
        count = len(questions.failures)
        raise CliError(f"the flags could not answer {count} question{'s' if count != 1 else ''} (see above): cancelled")
    return status


CONNECT_HELP = """\
Commands:
  call TOOL key=value ...   call a tool (values are JSON when valid JSON, else text;
                            a {...} argument is a JSON object of arguments)
  TOOL key=value ...        the same, when TOOL is one of the server's tools
  tools [-v]                list the tools (-v: with input schemas)
  ping                      check the connection
  help                      this help
  quit                      leave (also: exit, ctrl-D)"""


async def cmd_connect(client: Client, options: Options, console: Console, questions: Questions) -> int:
    info = client.server_info
    transport = {"stdio": "stdio", "http": "Streamable HTTP", "ws": "WebSocket"}[options.target.kind]
    if info is not None:
        title = None if isinstance(info.title, UnsetType) else info.title
        console.result(server_banner(info.name, info.version, title, transport, client.protocol_version))
    if client.instructions:
        console.result("Instructions: " + client.instructions)
    tools = await client.list_tools()
    console.result(f"Tools ({len(tools)}):")
    for tool in tools:
        console.result("  " + "\n  ".join(describe_tool(tool)))
    console.result("Type 'help' for commands.")
    reader = questions.reader or LineReader(console.err, use_input=False, console=console)
    prompt = "minimcp> " if questions.interactive else ""
    status = EXIT_OK
    closed = False

    async def loop(scope: anyio.CancelScope) -> None:
        nonlocal tools, status
        while True:
            line = await reader.read(prompt, history=True)
            if line is None:
                break
            try:
                words = shlex.split(line)
            except ValueError as exc:
                console.note(f"cannot split that line: {exc}")
                continue
            if not words:
                continue
            command, rest = words[0], words[1:]
            if command in ("quit", "exit", "q"):
                break
            if command in ("help", "?"):
                console.result(CONNECT_HELP)
                continue
            try:
                if command == "tools":
                    tools = await client.list_tools()
                    for tool in tools:
                        console.result("\n".join(describe_tool(tool, full="-v" in rest)))
                elif command == "ping":
                    await client.ping()
                    console.result("pong")
                elif command == "call" or command in {t.name for t in tools}:
                    if command == "call":
                        if not rest:
                            console.note("usage: call TOOL key=value ...")
                            continue
                        command, rest = rest[0], rest[1:]
                    objects = [w for w in rest if w.startswith("{")]
                    base: dict[str, Any] = {}
                    for text in objects:
                        base.update(parse_json_object(text))
                    pairs = parse_pairs([w for w in rest if not w.startswith("{")])
                    arguments = parse_arguments(pairs, base, next((t for t in tools if t.name == command), None))
                    result = await call_tool(client, questions, console, command, arguments)
                    print_result(console, result, "text")
                else:
                    console.note(f"unknown command {command!r}; type 'help'")
            except CliError as exc:
                console.note(console.err_style.red(f"error: {exc}"))
            except ConnectionClosed:
                raise
            except McpError as exc:
                console.note(console.err_style.red(f"error {exc.code}: {exc.message}"))
        scope.cancel()

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal closed, status
        await client.session.wait_closed()
        closed = True
        status = EXIT_FAILURE
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(loop, tg.cancel_scope)
        tg.start_soon(watch, tg.cancel_scope)
    if closed:
        raise CliError("the server closed the connection")
    return status


# --- running -------------------------------------------------------------------------------------------------


def _leaf(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException, options: Options) -> str | None:
    """A one-line message for an error that ends the run with status 2 (``None``: not ours to explain)."""
    where = options.target.describe()
    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, UnsupportedVersion):
        return f"{where}: {exc.message}"
    if isinstance(exc, ConnectionClosed):
        return f"{where}: the connection closed ({exc.message}); is it an MCP server?"
    if isinstance(exc, RequestTimeout):
        return f"{where}: {exc.message} (raise --timeout to wait longer)"
    if isinstance(exc, McpError) and not options.connected:
        return f"cannot connect to {where}: {exc.message}"
    if isinstance(exc, McpError):
        return f"{where}: the server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, OSError):
        return f"cannot connect to {where}: {exc.strerror or exc}"
    name = type(exc).__name__
    if name == "WebSocketHandshakeError" or type(exc).__module__.startswith(("httpx", "httpcore")):
        return f"cannot connect to {where}: {exc or name}"
    return None


def _note_interrupts(options: Options, console: Console, questions: Questions) -> Callable[[], None]:
    """Record what ctrl-C interrupts before the event loop's own SIGINT handler acts; returns the undo."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return lambda: None

    def on_sigint(signum: int, frame: types.FrameType | None) -> Any:
        if not console.interrupted:
            console.interrupted = True  # from now on nothing else is shown: one line says what stopped
            asking = questions.asking
            options.interrupted_while = options.doing + (f", with {asking}'s question open" if asking else "")
        return previous(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)

    def undo() -> None:
        if signal.getsignal(signal.SIGINT) is on_sigint:
            signal.signal(signal.SIGINT, previous)

    return undo


async def run(options: Options) -> int:
    console = Console(color=options.color)
    interactive = sys.stdin.isatty()
    reader = LineReader(console.ui, console=console) if interactive else None
    questions = Questions(console, reader, options.scripted)
    undo = _note_interrupts(options, console, questions)
    options.doing = f"connecting to {options.target.describe()}"
    try:
        async with connect(options, console, questions) as client:
            server = client.server_info.name if client.server_info is not None else options.target.describe()
            if options.command == "tools":
                options.doing = f"listing the tools of {server}"
                return await cmd_tools(client, options, console)
            if options.command == "call":
                options.doing = f"calling {options.args.tool} on {server}"
                return await cmd_call(client, options, console, questions)
            options.doing = f"in the connect session with {server}"
            return await cmd_connect(client, options, console, questions)
    except Exception as exc:
        leaf = _leaf(exc)
        message = describe_error(leaf, options)
        if message is None or options.verbose:
            logger.error("failed", exc_info=leaf)
        console.note(console.err_style.red(f"minimcp: error: {message or f'{type(leaf).__name__}: {leaf}'}"))
        return EXIT_FAILURE
    finally:
        undo()


def _restore_terminal() -> Callable[[], None]:
    """Save the terminal's settings; the returned function puts them back (a read may be cut short)."""
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except Exception:
        return lambda: None

    def restore() -> None:
        with contextlib.suppress(Exception):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    return restore


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_FAILURE
    if args.command == "diagram":  # (``python -m minimcp diagram`` goes there directly)
        from minimcp.diagram_cmd import main as diagram_main

        return diagram_main(args.rest)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="minimcp: %(name)s: %(message)s",
    )
    try:
        options = options_from(args)
    except CliError as exc:
        parser.exit(EXIT_FAILURE, f"minimcp: error: {exc}\n")
    restore = _restore_terminal() if sys.stdin.isatty() else (lambda: None)
    try:
        status = anyio.run(run, options, backend=options.backend)
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
        status = EXIT_INTERRUPTED
    finally:
        restore()
    if status == EXIT_INTERRUPTED or options.interrupted_while is not None:
        # One line: the event loop's, the server's and the question's own words are not shown.
        sys.stderr.write(f"\nminimcp: interrupted while {options.interrupted_while or options.doing}\n")
        return EXIT_INTERRUPTED
    return status
