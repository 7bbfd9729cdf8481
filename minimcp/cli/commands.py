"""The command-line client's commands (tools, call, connect) and one run of a command, with its errors in one line."""

from __future__ import annotations

import logging
import shlex
import sys
from typing import Any

import anyio

from minimcp.cli.args import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    CliError,
    Options,
    parse_arguments,
    parse_json_object,
    parse_pairs,
)
from minimcp.cli.connecting import connect
from minimcp.cli.questions import Questions
from minimcp.cli.render import Progress, describe_tool, format_result, result_json, server_banner
from minimcp.cli.terminal import Console, LineReader, note_interrupts
from minimcp.client.client import Client
from minimcp.wire.elicitation import UrlElicitationRequired
from minimcp.wire.errors import ConnectionClosed, McpError, RequestTimeout, UnsupportedVersion
from minimcp.wire.types import CallToolResult, Tool, UnsetType

__all__ = ["CONNECT_HELP", "call_tool", "cmd_call", "cmd_connect", "cmd_tools", "describe_error", "print_result", "run"]

logger = logging.getLogger("minimcp.cli")

#: Seconds to wait for the server to report consented browser steps complete.
URL_STEP_WAIT = 600


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


async def run(options: Options) -> int:
    console = Console(color=options.color)
    interactive = sys.stdin.isatty()
    reader = LineReader(console.ui, console=console) if interactive else None
    questions = Questions(console, reader, options.scripted)

    def noted() -> None:
        asking = questions.asking
        options.interrupted_while = options.doing + (f", with {asking}'s question open" if asking else "")

    undo = note_interrupts(console, noted)
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
