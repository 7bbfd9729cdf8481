"""The server API's edges: how it is run, what it says at registration, and how a client's refusal ends a call."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import re
import signal
import subprocess
import sys
import warnings
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import (
    Accepted,
    Context,
    Elicit,
    ElicitationRequest,
    FormDefinitionError,
    McpError,
    Server,
    connect_http,
    connect_websocket,
)
from minimcp.forms import SensitiveFieldError
from tests.helpers import connected, raw_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import booking  # noqa: E402

HANDSHAKE_FORM_ERAS = ["2025-06-18", "2025-11-25"]  # the handshake revisions that have form elicitation


# --- a client that answers a question with a JSON-RPC error (booking contract) -------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_FORM_ERAS)
async def test_client_error_answer_is_a_tool_error_saying_the_client_could_not_answer(version: str) -> None:
    """Like FastMCP, which checks the form itself and answers -32603: the call ends with a tool error."""
    app = booking.build()
    long_reason = "the form was refused by the client's own check:\n" + "field 'date' is not valid " * 40

    async def refuse(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        raise McpError(-32603, long_reason)

    with anyio.fail_after(30):
        async with connected(app.server, elicitation_handler=refuse, protocol_version=version) as (client, _):
            assert client.protocol_version == version
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4})
            assert result.is_error is True
            assert "could not answer the question" in result.text
            assert "-32603" in result.text
            assert "the form was refused by the client's own check: field 'date'" in result.text  # one line
            assert len(result.text) < 400 and long_reason not in result.text  # shortened
            assert app.bookings == {}  # nothing is booked
            # the session goes on
            free = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert free.is_error is not True


@pytest.mark.parametrize("version", HANDSHAKE_FORM_ERAS)
async def test_raw_error_response_to_the_question_is_not_passed_on_as_the_call_error(version: str) -> None:
    app = booking.build()
    async with raw_client(app.server) as (peer, _):
        await peer.initialize(version, {"elicitation": {}})
        await peer.send(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 4}}}
        )
        question = await peer.recv()
        assert question["method"] == "elicitation/create"
        refusal = {"code": -32603, "message": "Internal error"}
        await peer.send({"jsonrpc": "2.0", "id": question["id"], "error": refusal})
        reply = await peer.recv()
        assert reply["id"] == 1
        assert "error" not in reply, reply
        assert reply["result"]["isError"] is True
        text = reply["result"]["content"][0]["text"]
        assert "could not answer the question" in text and "Internal error" in text
        assert "structuredContent" not in reply["result"]
        assert app.bookings == {}


async def test_a_tool_may_catch_the_clients_refusal() -> None:
    """What the tool sees: QuestionFailed, an McpError keeping the client's code and message."""

    app = Server("t")
    seen: list[BaseException] = []


    @app.tool()
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        except McpError as exc:
            seen.append(exc)
            return "handled"
        return "answered"

    async def refuse(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        raise McpError(-32000, "user closed the dialog")

    async with connected(app, elicitation_handler=refuse) as (client, _):
        result = await client.call_tool("ask", {})
        assert result.text == "handled"
    from minimcp.wire.elicitation import QuestionFailed

    (exc,) = seen
    assert isinstance(exc, QuestionFailed)
    assert (exc.code, exc.message, exc.method) == (-32000, "user closed the dialog", "elicitation/create")


# --- forms a tool names are checked at registration; a broken one is logged when it is asked ------------------


class Nested(msgspec.Struct):
    where: dict[str, str]


class Login(msgspec.Struct):
    user: str
    password: str


class Fine(msgspec.Struct):
    ok: bool


def test_a_form_named_at_registration_that_cannot_be_sent_fails_registration_naming_the_field() -> None:
    app = Server("t")
    with pytest.raises(FormDefinitionError, match=r"tool 'nested', form Nested: .*'where'") as info:

        @app.tool(forms=[Fine, Nested])
        async def nested(ctx: Context) -> str:
            return "x"

    assert info.value.field == "where"
    with pytest.raises(SensitiveFieldError, match=r"tool 'login', form Login: .*'password'"):

        @app.tool(forms=[Login])
        async def login(ctx: Context) -> str:
            return "x"

    assert app.tools == []  # nothing was registered

    # an opt-out given the way ctx.elicit gets it passes; so do good forms and raw schemas
    @app.tool(forms=[Fine, Elicit("", Login, allow_sensitive={"password"}), {"type": "object",
                     "properties": {"n": {"type": "integer"}}}])
    async def fine(ctx: Context) -> str:
        return "x"

    assert [t.name for t in app.tools] == ["fine"]


async def test_a_form_that_cannot_be_sent_is_logged_on_the_server_and_the_user_gets_a_tool_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = Server("t")

    @app.tool()
    async def ask(ctx: Context) -> str:
        await ctx.elicit("where?", Nested)  # not named at registration: found when asked
        return "x"

    async def never(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        raise AssertionError("nothing must be sent")

    with caplog.at_level(logging.WARNING, logger="minimcp"):
        async with connected(app, elicitation_handler=never) as (client, _):
            result = await client.call_tool("ask", {})
            assert result.is_error is True and "'where'" in result.text
    logged = [r for r in caplog.records if r.name == "minimcp.server" and r.levelno >= logging.ERROR]
    assert len(logged) == 1 and "'ask'" in logged[0].getMessage() and "'where'" in logged[0].getMessage()


# --- un-annotated parameters ----------------------------------------------------------------------------------


def test_an_unannotated_parameter_draws_a_warning_naming_the_tool_and_the_parameter() -> None:
    app = Server("t")
    with pytest.warns(UserWarning, match=r"tool 'greet': parameter 'name' has no type annotation") as caught:

        @app.tool()
        async def greet(ctx: Context, name, times: int = 2) -> str:  # type: ignore[no-untyped-def]
            return str(name * times)

    (warning,) = [w for w in caught if "greet" in str(w.message)]
    assert warning.filename == __file__  # it points at the tool's own definition
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @app.tool()
        async def typed(name: str, anything: Any = None) -> str:  # annotated (Any on purpose): no warning
            return name


async def test_an_unannotated_argument_of_the_wrong_type_gives_a_clear_tool_error() -> None:
    app = Server("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @app.tool()
        async def greet(name, times: int = 2) -> str:  # type: ignore[no-untyped-def]
            return str(name * times + "!")

    async with connected(app) as (client, _):
        ok = await client.call_tool("greet", {"name": "ab"})
        assert ok.text == "abab!"
        bad = await client.call_tool("greet", {"name": {"a": 1}})
        assert bad.is_error is True
        assert "internal error" not in bad.text
        assert "'name'" in bad.text and "not type-checked" in bad.text
        assert "TypeError" not in bad.text  # still no exception text or type on the wire


# --- Server.run over HTTP and WebSocket -----------------------------------------------------------------------

RUN_SERVER = """
import sys
from minimcp import Context, Server
app = Server("runner")

@app.tool()
async def hello(name: str) -> str:
    return f"hello {name}"

@app.tool()
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer}"

app.run(sys.argv[1], port=0, backend=sys.argv[2])
"""


def _start(transport: str, backend: str) -> subprocess.Popen[str]:
    # SIGINT as a terminal delivers it (a background job may inherit it ignored).
    return subprocess.Popen(
        [sys.executable, "-c", RUN_SERVER, transport, backend],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _start_stdio(backend: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RUN_SERVER.replace("port=0, ", ""), "stdio", backend],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
    )


async def _endpoint(proc: subprocess.Popen[str], transport: str) -> str:
    """The URL ``Server.run`` logs (past the random-key warning HTTP logs first)."""
    assert proc.stderr is not None
    with anyio.fail_after(60):
        line = await anyio.to_thread.run_sync(proc.stderr.readline, abandon_on_cancel=True)
        if "MINIMCP_STATE_KEYS" in line:  # HTTP with a key random to the process warns first (see test_state_keys)
            line = await anyio.to_thread.run_sync(proc.stderr.readline, abandon_on_cancel=True)
    name = "Streamable HTTP" if transport == "http" else "WebSocket"
    match = re.fullmatch(rf"serving MCP over {name} at ((?:http|ws)://127\.0\.0\.1:\d+/mcp)\n", line)
    assert match, line
    return match.group(1)


async def _ended(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit status and the rest of stderr of a server told to stop."""
    assert proc.stderr is not None
    with anyio.fail_after(60):
        rest = await anyio.to_thread.run_sync(proc.stderr.read, abandon_on_cancel=True)
        code = await anyio.to_thread.run_sync(proc.wait, abandon_on_cancel=True)
    return code, rest


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_server_run_serves_http_and_ws_and_logs_the_endpoint_url(anyio_backend: str, transport: str) -> None:
    proc = _start(transport, anyio_backend)
    try:
        url = await _endpoint(proc, transport)
        connect = connect_http if transport == "http" else connect_websocket
        with anyio.fail_after(30):
            async with connect(url) as client:
                assert (await client.call_tool("hello", {"name": "you"})).text == "hello you"
        # Ctrl-C: one line, exit status 130, no traceback
        proc.send_signal(signal.SIGINT)
        code, rest = await _ended(proc)
        assert code == 130, rest
        assert rest.strip() == "interrupted: the MCP server stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_cancels_the_server_at_its_next_checkpoint_never_inside_its_code(
    backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Ctrl-C is received as SIGTERM is: the code running when it comes finishes its step, then the server is
    cancelled. (Before, on trio, ``KeyboardInterrupt`` was raised in whatever code was running: inside hypercorn
    between two steps of writing a response head it broke the connection's state, and the process ended with
    a traceback and exit status 1 instead of one line and 130.)"""
    from minimcp.hosting.run import run_until_stopped

    steps: list[str] = []

    async def serve() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # its Python handler has run when this returns
        steps.append("went on")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            steps.append("cancelled")
            raise

    log = logging.getLogger("tests.server.run")
    # Ctrl-C as a terminal delivers it: a background job (CI runs the suite as one) inherits SIGINT ignored,
    # and the server rightly leaves an ignored SIGINT ignored -- this process would then never stop.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with caplog.at_level(logging.WARNING, log.name), pytest.raises(SystemExit) as ended:
            run_until_stopped(serve, backend=backend, what="the test server", logger=log)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ended.value.code == 130
    assert steps == ["went on", "cancelled"]
    assert caplog.messages == ["interrupted (ctrl-C): the test server stopped"]


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_sigterm_stops_a_network_server_cleanly_with_a_question_open(anyio_backend: str, transport: str) -> None:
    """SIGTERM (a service manager's stop): the server stops as a cancellation stops it, the client's call that
    waits on a person ends with an error instead of hanging, one line, exit status 0."""
    proc = _start(transport, anyio_backend)
    try:
        url = await _endpoint(proc, transport)
        asked = anyio.Event()

        async def never_answers(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
            asked.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        connect = connect_http if transport == "http" else connect_websocket
        ended_with: list[BaseException] = []
        with anyio.fail_after(60):
            async with connect(url, elicitation_handler=never_answers) as client:

                async def call() -> None:
                    try:
                        await client.call_tool("ask", {})
                    except Exception as exc:  # what a stopped server leaves the caller: an error, not a hang
                        ended_with.append(exc)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await asked.wait()
                    proc.send_signal(signal.SIGTERM)
        assert ended_with, "the open call ended without an error"
        code, rest = await _ended(proc)
        assert code == 0, rest
        assert rest.strip() == "terminated (SIGTERM): the MCP server stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_sigterm_stops_a_stdio_server_cleanly_with_a_question_open(anyio_backend: str) -> None:
    """The spec's stdio shutdown sends SIGTERM when closing stdin was not enough: the server stops at once,
    closing its stdout, with one line on stderr and exit status 0 (not killed by the signal)."""
    proc = _start_stdio(anyio_backend)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "c", "version": "1"},
        }

        async def send(*messages: dict[str, Any]) -> str:
            """Write ``messages``, then read the next line the server writes."""
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("".join(msgspec.json.encode(m).decode() + "\n" for m in messages))
            proc.stdin.flush()
            with anyio.fail_after(60):
                return await anyio.to_thread.run_sync(proc.stdout.readline, abandon_on_cancel=True)

        assert '"serverInfo"' in await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        line = await send(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {}}},
        )
        assert msgspec.json.decode(line).get("method") == "elicitation/create", line
        proc.send_signal(signal.SIGTERM)  # stdin stays open: only the signal stops it
        with anyio.fail_after(60):
            tail = await anyio.to_thread.run_sync(proc.stdout.read, abandon_on_cancel=True)
        code, rest = await _ended(proc)
        assert code == 0, rest
        assert rest.strip() == "terminated (SIGTERM): server runner stopped"
        assert "result" not in tail  # the question was never answered: no result made up
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("transport", "module", "extra"), [
    ("http", "uvicorn", "http"), ("ws", "websockets", "ws"),
])
def test_server_run_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, transport: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError, match=re.escape(f"pip install 'minimcp[{extra}]'")):
        Server("t").run(transport, port=0)  # type: ignore[arg-type]


def test_server_run_refuses_unknown_transports_and_stray_options() -> None:
    with pytest.raises(ValueError, match="'stdio', 'http', 'ws'"):
        Server("t").run("sse", port=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="allowed_hosts"):
        Server("t").run("stdio", allowed_hosts=["x"])


async def test_websocket_wrong_path_404_names_the_endpoint(anyio_backend: str) -> None:
    from minimcp import serve_websocket

    app = Server("t")
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_websocket, app)
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(
                    b"GET /wrong HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                )
                reply = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while b"\r\n\r\n" not in reply or not reply.endswith(b"\n"):
                        reply += await stream.receive()
            tg.cancel_scope.cancel()
    assert reply.startswith(b"HTTP/1.1 404"), reply
    assert b"the MCP endpoint is /mcp" in reply
