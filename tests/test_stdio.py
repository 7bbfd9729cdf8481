"""The stdio transport: a real child process, framing limits, stdout hygiene, shutdown."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import anyio
import msgspec
import pytest

from minimcp import Limits, connect_stdio
from minimcp.transports.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parent.parent
HELLO = ROOT / "examples" / "hello_server.py"


def script(tmp_path: pathlib.Path, body: str) -> list[str]:
    path = tmp_path / "server.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def test_hello_server_over_stdio(anyio_backend: str) -> None:
    with anyio.fail_after(30):
        async with connect_stdio([sys.executable, str(HELLO)]) as client:
            assert client.server_info is not None and client.server_info.name == "hello"
            assert [t.name for t in await client.list_tools()] == ["greet", "add"]
            assert (await client.call_tool("greet", {"name": "stdio"})).text == "Hello, stdio!"
            bad = await client.call_tool("add", {"a": 1, "b": "x"})
            assert bad.is_error is True and "'b'" in bad.text
            await client.ping()


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_server_runs_on_either_backend(tmp_path: pathlib.Path, server_backend: str) -> None:
    cmd = script(
        tmp_path,
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from minimcp import Server
        app = Server("b")

        @app.tool()
        async def which() -> str:
            import asyncio
            try:
                asyncio.get_running_loop()
                return "asyncio"
            except RuntimeError:
                return "trio"

        app.run(backend={server_backend!r})
        """,
    )
    with anyio.fail_after(30):
        async with connect_stdio(cmd) as client:
            assert (await client.call_tool("which")).text == server_backend


async def test_print_in_a_tool_does_not_corrupt_stdout(tmp_path: pathlib.Path) -> None:
    cmd = script(
        tmp_path,
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from minimcp import Server
        app = Server("noisy")

        @app.tool()
        async def noisy() -> str:
            print("this must not reach stdout")
            return "ok"

        app.run()
        """,
    )
    err = tmp_path / "stderr.txt"
    with err.open("wb") as errf, anyio.fail_after(30):
        async with (
            stdio_client(cmd, stderr=errf.fileno()) as transport,
            connect_stdio_with(transport) as client,
        ):
            assert (await client.call_tool("noisy")).text == "ok"
            assert (await client.call_tool("noisy")).text == "ok"
    assert "this must not reach stdout" in err.read_text()


def connect_stdio_with(transport: object):  # type: ignore[no-untyped-def]
    from minimcp import Client

    return Client(transport)  # type: ignore[arg-type]


def run_raw(lines: list[bytes], max_bytes: int) -> list[dict[str, object]]:
    """Feed raw lines to a hello server with a small message limit; return its replies."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from minimcp import Limits, Server
        app = Server("raw", limits=Limits(max_message_bytes={max_bytes}))
        app.run()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=b"".join(lines), capture_output=True, timeout=30, check=False
    )
    return [msgspec.json.decode(line) for line in proc.stdout.splitlines() if line.strip()]


def test_oversized_line_gets_an_error_and_the_session_goes_on() -> None:
    init = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    huge = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + b"y" * 5000 + b'"}}\n'
    replies = run_raw([init, huge, b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n'], max_bytes=1000)
    by_id = {r.get("id"): r for r in replies}
    assert set(by_id) == {1, None, 3}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"  # type: ignore[index]
    assert by_id[None]["error"]["code"] == -32600  # type: ignore[index]
    assert "1000" in by_id[None]["error"]["message"]  # type: ignore[index]
    assert by_id[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_garbage_lines_get_parse_errors_and_nothing_else_reaches_stdout() -> None:
    replies = run_raw([b"not json\n", b"\n", b'{"jsonrpc":"2.0","id":"x","method":"ping"}\r\n'], max_bytes=10_000)
    assert replies == [
        {"jsonrpc": "2.0", "error": {"code": -32700, "message": replies[0]["error"]["message"]}},  # type: ignore[index]
        {"jsonrpc": "2.0", "id": "x", "result": {}},
    ]


async def test_client_shutdown_terminates_a_server_that_ignores_eof(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pid"
    cmd = script(
        tmp_path,
        f"""
        import os, sys, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        sys.stdout.write('{{"jsonrpc":"2.0","method":"notifications/hello"}}\\n'); sys.stdout.flush()
        while True:
            time.sleep(0.05)   # never reads stdin, never exits on its own
        """,
    )
    with anyio.fail_after(10):
        async with stdio_client(cmd, limits=Limits(shutdown_timeout=0.3)) as transport:
            assert b"notifications/hello" in await transport.receive()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_client_shutdown_kills_a_server_that_ignores_sigterm(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pid"
    cmd = script(
        tmp_path,
        f"""
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        sys.stdout.write('{{"jsonrpc":"2.0","method":"notifications/ready"}}\\n'); sys.stdout.flush()
        while True:
            time.sleep(0.05)
        """,
    )
    with anyio.fail_after(10):
        async with stdio_client(cmd, limits=Limits(shutdown_timeout=0.3)) as transport:
            await transport.receive()
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_server_exits_when_stdin_closes(tmp_path: pathlib.Path) -> None:
    with anyio.fail_after(30):
        process = await anyio.open_process(
            [sys.executable, str(HELLO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(10):
            code = await process.wait()
        assert code == 0
        await process.aclose()
