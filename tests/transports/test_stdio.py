"""The stdio transport: a real child process, framing limits, stdout hygiene, shutdown."""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest

from minimcp import Limits, connect_stdio
from minimcp.transports.stdio import stdio_client
from tests.helpers.stdio import GatedSink, Silent

ROOT = pathlib.Path(__file__).resolve().parents[2]
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


# --- the server side's own stdin/stdout: bounds both ways, whole messages, clean endings ------------

INIT_LINE = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def stdio_script(tmp_path: pathlib.Path, backend: str, limits: str = "", after: str = "") -> list[str]:
    return script(
        tmp_path,
        f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from minimcp import Limits, Server
        app = Server("s", limits=Limits({limits}))

        @app.tool()
        async def big(i: int, size: int) -> str:
            return str(i % 10) * size

        app.run(backend={backend!r})
        {after}
        """,
    )


@contextlib.contextmanager
def initialized_server(cmd: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """A raw server process past its handshake; killed and its pipes closed afterwards."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(INIT_LINE)
        proc.stdin.flush()
        assert b'"id":"init"' in proc.stdout.readline()
        yield proc
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(BrokenPipeError):
                stream.close()


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_a_client_that_stops_reading_stops_the_server_reading_and_nothing_is_lost(
    tmp_path: pathlib.Path, server_backend: str
) -> None:
    """Pings pour in while nobody reads the answers: the server must stop taking input after a
    bounded amount (its output and read-ahead are bounded), then answer every one, in order."""
    cmd = stdio_script(tmp_path, server_backend, "stream_buffer_bytes=65536")
    with initialized_server(cmd) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        total = 200_000
        data = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(total))
        offered = len(data)
        view, accepted, stalled = memoryview(data), 0, 0.0
        while accepted < offered and stalled < 1.0:
            try:
                accepted += os.write(fd, view[accepted:])
                stalled = 0.0
            except BlockingIOError:
                stalled += 0.05
                time.sleep(0.05)
        # About 9 MB offered; the server held back after well under 2 MB (two pipe buffers, the
        # read-ahead bound, and the answers that fit in its output bound).
        assert accepted < 2_000_000, accepted
        # Now read: everything it took is answered, in order, and the rest flows too.
        answers: list[bytes] = []

        def drain() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                answers.append(line)
                if len(answers) == total:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        os.set_blocking(fd, True)
        proc.stdin.write(data[accepted:])
        proc.stdin.flush()
        reader.join(60)
        assert len(answers) == total
        assert answers[0] == b'{"jsonrpc":"2.0","id":0,"result":{}}\n'
        assert [msgspec.json.decode(a)["id"] for a in answers] == list(range(total))
        proc.stdin.close()
        assert proc.wait(30) == 0


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_concurrent_large_results_arrive_whole(tmp_path: pathlib.Path, server_backend: str) -> None:
    """Many handlers write large results at once, past the output bound: no two interleave."""
    cmd = stdio_script(tmp_path, server_backend, "stream_buffer_bytes=65536")
    results: dict[int, str] = {}
    with anyio.fail_after(60):
        async with connect_stdio(cmd) as client:

            async def one(i: int) -> None:
                results[i] = (await client.call_tool("big", {"i": i, "size": 50_000 + i * 997})).text

            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(one, i)
    assert sorted(results) == list(range(40))
    for i, text in results.items():
        assert text == str(i % 10) * (50_000 + i * 997)


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_stdio_leaves_the_descriptors_as_it_found_them(tmp_path: pathlib.Path, server_backend: str) -> None:
    """stdin and stdout share their open files with the parent: they stay blocking after serving,
    and fd 1 is stdout again."""
    after = 'os.write(1, b"after %r %r" % (os.get_blocking(0), os.get_blocking(1)))'
    cmd = stdio_script(tmp_path, server_backend, after=after)
    proc = subprocess.run(
        cmd, input=INIT_LINE + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n', capture_output=True, timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert b'{"jsonrpc":"2.0","id":2,"result":{}}' in lines[:2]  # a ping may overtake initialize
    assert lines[-1] == b"after True True"


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_a_client_that_goes_away_mid_stream_ends_the_server_quietly(
    tmp_path: pathlib.Path, server_backend: str
) -> None:
    cmd = stdio_script(tmp_path, server_backend)
    with initialized_server(cmd) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # gone: every answer from now on hits a broken pipe
        calls = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"i":%d,"size":100000}}}\n'
            % (i, i)
            for i in range(200)
        )
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(calls)
            proc.stdin.flush()
        assert proc.wait(30) == 0
        err = proc.stderr.read().decode()
        assert "Traceback" not in err, err


# --- the gathered writer of StdioTransport (trio's stdio, and every stdio client) --------------------






async def test_messages_queued_while_one_is_written_leave_together_whole_and_in_order() -> None:
    from minimcp.transports.stdio import StdioTransport

    sink = GatedSink()
    transport = StdioTransport(Silent(), sink, Limits(stream_buffer_bytes=1 << 20))
    with anyio.fail_after(10):
        await transport.send(b"first")  # returns once queued; the writer task takes it
        await sink.entered.wait()  # ...and is now stuck in the pipe
        for i in range(50):
            await transport.send(b"queued %d" % i)  # returns at once: queued behind the writer
        sink.gate.set()
        await transport.aclose()  # lets the writer finish
    assert bytes(sink.data).splitlines() == [b"first"] + [b"queued %d" % i for i in range(50)]
    assert sink.writes == 2  # the fifty queued ones went out in one write


async def test_senders_wait_for_room_and_a_cancelled_one_leaves_nothing_behind() -> None:
    from minimcp.transports.stdio import StdioTransport

    sink = GatedSink()
    transport = StdioTransport(Silent(), sink, Limits(stream_buffer_bytes=1000))
    returned: list[int] = []

    async def send(i: int) -> None:
        await transport.send(b"%d" % i * 300)
        returned.append(i)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await transport.send(b"A" * 5000)  # over the bound, but nothing is queued: in it goes
            await sink.entered.wait()  # the writer took it and is stuck in the pipe
            for i in range(1, 6):
                tg.start_soon(send, i)
            await anyio.sleep(0.05)
            try:
                # Four fit (903 bytes queued, then 1,204); the fifth waits for the writer
                # (which one: the order the backend starts tasks in).
                assert len(returned) == 4
                assert transport._queued == 1204
                with anyio.move_on_after(0.05) as waiting:
                    await transport.send(b"cancelled while waiting for room")
                assert waiting.cancelled_caught
            finally:
                sink.gate.set()
        await transport.aclose()
    assert sorted(returned) == [1, 2, 3, 4, 5]
    lines = bytes(sink.data).splitlines()
    assert lines[0] == b"A" * 5000
    assert sorted(lines[1:]) == [b"%d" % i * 300 for i in range(1, 6)]  # whole; the cancelled one never went


async def test_the_fast_paths_take_only_what_needs_no_waiting() -> None:
    from minimcp.transports.stdio import StdioTransport

    sink = GatedSink()
    source = anyio.create_memory_object_stream[bytes](10)
    chunks = _ChunkStream(source[1])
    transport = StdioTransport(chunks, sink, Limits(stream_buffer_bytes=1000))
    with anyio.fail_after(10):
        assert transport.receive_nowait() is None  # nothing read yet
        await source[0].send(b'{"a":1}\n{"b":2}\n{"c"')
        assert await transport.receive() == b'{"a":1}'  # reads the chunk...
        assert transport.receive_nowait() == b'{"b":2}'  # ...whose other whole line is already here
        assert transport.receive_nowait() is None  # the unfinished line is not
        assert transport.send_nowait(b"x" * 1200)  # nothing queued: in it goes
        await sink.entered.wait()
        assert transport.send_nowait(b"y" * 900)  # queued behind the writer (901 bytes)
        assert transport.send_nowait(b"z" * 150)  # 1,052 bytes queued now: over the bound
        assert not transport.send_nowait(b"no room")  # over the bound: the caller must wait in send
        sink.gate.set()
        await transport.aclose()
        assert not transport.send_nowait(b"closed")
    assert bytes(sink.data).splitlines() == [b"x" * 1200, b"y" * 900, b"z" * 150]


class _ChunkStream(anyio.abc.ByteReceiveStream):
    def __init__(self, chunks: Any) -> None:
        self.chunks = chunks

    async def receive(self, max_bytes: int = 65536) -> bytes:
        chunk: bytes = await self.chunks.receive()
        return chunk

    async def aclose(self) -> None:
        pass


async def test_a_broken_pipe_fails_the_senders_and_ends_the_reading() -> None:
    from minimcp.transports.stdio import StdioTransport

    sink = GatedSink()
    transport = StdioTransport(Silent(), sink, Limits())
    outcome: list[str] = []

    async def read() -> None:
        try:
            await transport.receive()
        except anyio.EndOfStream:
            outcome.append("end of stream")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.sleep(0.01)
            sink.broken = True
            sink.gate.set()
            await transport.send(b"nobody hears this")  # queued; the writer finds the pipe broken
            while not outcome:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
            with pytest.raises(anyio.BrokenResourceError):
                await transport.send(b"nor this")
    assert outcome == ["end of stream"]


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_a_server_whose_output_nobody_reads_still_exits_when_stdin_closes(
    tmp_path: pathlib.Path, server_backend: str
) -> None:
    cmd = stdio_script(tmp_path, server_backend, "shutdown_timeout=0.5")
    with initialized_server(cmd) as proc:
        assert proc.stdin is not None
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"i":1,"size":2000000}}}\n'
        )
        proc.stdin.flush()
        time.sleep(0.5)  # the 2 MB answer fills the pipe; we hold stdout and never read it
        proc.stdin.close()
        assert proc.wait(20) == 0  # the last output is given up after shutdown_timeout


@pytest.mark.parametrize("layout", ["one socket", "two sockets", "two sockets, stdout half-closed"])
@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_stdin_and_stdout_may_be_sockets(tmp_path: pathlib.Path, server_backend: str, layout: str) -> None:
    """Node (Claude Code, VS Code) and uvloop give a child socket pairs for its stdio; inetd, socat
    and systemd socket activation give it one socket as both."""
    import socket

    ours_in, theirs_in = socket.socketpair()
    if layout == "one socket":
        ours_out, theirs_out = ours_in, theirs_in
    else:
        ours_out, theirs_out = socket.socketpair()
    cmd = stdio_script(tmp_path, server_backend)
    proc = subprocess.Popen(cmd, stdin=theirs_in.fileno(), stdout=theirs_out.fileno())
    theirs_in.close()
    theirs_out.close()
    if layout.endswith("half-closed"):
        ours_out.shutdown(socket.SHUT_WR)  # we never send on the server's stdout
    try:
        with ours_in.makefile("wb") as w, ours_out.makefile("rb") as r:
            w.write(INIT_LINE + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
            w.flush()
            assert {msgspec.json.decode(r.readline())["id"] for _ in range(2)} == {"init", 2}
            w.write(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
            w.flush()
            assert msgspec.json.decode(r.readline()) == {"jsonrpc": "2.0", "id": 3, "result": {}}
            ours_in.shutdown(socket.SHUT_WR)
            assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait()
        ours_in.close()
        ours_out.close()


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
def test_replies_waiting_for_room_are_still_in_flight_and_can_be_cancelled(
    tmp_path: pathlib.Path, server_backend: str
) -> None:
    """A client that does not read, then cancels: the replies still waiting for room in the
    server's output are never sent (they count as in flight until handed over)."""
    cmd = stdio_script(tmp_path, server_backend, "stream_buffer_bytes=65536")
    with initialized_server(cmd) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        calls = 20
        proc.stdin.write(b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"i":%d,"size":200000}}}\n'
            % (i, i)
            for i in range(calls)
        ))
        proc.stdin.flush()
        time.sleep(1.0)  # every handler has finished and is waiting to hand over its 200 kB reply
        proc.stdin.write(b"".join(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}\n' % i
            for i in range(calls)
        ))
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"end","method":"ping"}\n')
        proc.stdin.flush()
        delivered = []
        while True:
            reply = msgspec.json.decode(proc.stdout.readline())
            if reply["id"] == "end":
                break
            delivered.append(reply["id"])
        # What had already left (the pipe and the bounded output) arrives; the rest never does.
        assert len(delivered) <= 4, delivered
        proc.stdin.close()
        assert proc.wait(20) == 0
