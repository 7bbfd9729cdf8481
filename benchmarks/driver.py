"""The raw driver: one JSON-RPC client that drives every benchmark server the same way.

It speaks the 2025-11-25 handshake, calls the ``ask`` tool, answers each
``elicitation/create`` (at once, or after parking all of them), and checks that
every result carries the answer given to its own question. Nothing of minimcp
is imported: the same bytes go to minimcp, the official SDK and the floor.

Wires: ``stdio`` (the server is a child process; newline-delimited JSON),
``ws`` (one message per text frame, subprotocol ``mcp``) and ``http``
(Streamable HTTP: one POST per message, SSE responses, via httpx).

    python benchmarks/driver.py pending   --server minimcp --backend asyncio -n 10000 --fills 3
    python benchmarks/driver.py roundtrip --server official --wire stdio -c 100 --seconds 3
    python benchmarks/driver.py sessions  --server minimcp --wire ws --sessions 1000 --per 10
    python benchmarks/driver.py idle      --server minimcp --wire http --sessions 1000
    python benchmarks/driver.py pending   --server minimcp --wire http --era modern -n 10000 --fills 3

``--era modern`` (http, minimcp): revision 2026-07-28, no handshake and no session; a call comes
back ``input_required`` (parked on the server) and its answer is the retry (``inputResponses``,
``requestState``), so ``pending`` counts parked calls and ``roundtrip`` two POSTs per round trip.

``--url`` aims the http wire at a server the driver did not start (a load balancer in front of
several workers: ``bench_scaleout.py``); ``--watch NAME=PID`` then reports those processes' CPU
shares (and the machine's) over the measured window, and their RSS.

Each command prints one JSON object (the figures) on stdout. The driver runs
on uvloop when it is installed (``--loop asyncio`` to use the stock loop), so
it is never the slowest side; its CPU use is reported next to the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import datetime
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
PROTOCOL = "2025-11-25"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# --- wire messages -----------------------------------------------------------------------------


class Incoming(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


class ElicitParams(msgspec.Struct):
    message: str


class TextBlock(msgspec.Struct):
    type: str
    text: str = ""


class ToolResult(msgspec.Struct, rename="camel"):
    content: list[TextBlock] = []
    is_error: bool = False


class InputRequest(msgspec.Struct):
    params: ElicitParams


class ModernResult(msgspec.Struct, rename="camel"):
    """A 2026-07-28 ``tools/call`` result: complete, or the questions to answer on the retry."""

    result_type: str = "complete"
    input_requests: dict[str, InputRequest] = {}
    request_state: str | None = None


encode = msgspec.json.Encoder().encode
decode_incoming = msgspec.json.Decoder(Incoming).decode
decode_elicit = msgspec.json.Decoder(ElicitParams).decode
decode_tool_result = msgspec.json.Decoder(ToolResult).decode
decode_modern_result = msgspec.json.Decoder(ModernResult).decode

MODERN = "2026-07-28"
#: The 2026-07-28 envelope every request carries in ``params._meta`` (no handshake on that revision).
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-driver", "version": "1.0.0"},
}

PREFIX = "Answer for call "

# The booking tool (``--server booking`` / ``floor-booking``): call i books the full date BASE + 2i
# (mod SPAN, see servers/floor_booking.py) for 2 people; its question starts with that date, and the
# answer picks BASE + 2i + 3, a free date that is not the question's default (BASE + 2i + 1).
TOOL = "ask"
BOOKING_BASE = datetime.date(2030, 1, 1)
BOOKING_SPAN = 100_000


def booking_date(i: int, offset: int = 0) -> str:
    return (BOOKING_BASE + datetime.timedelta(days=2 * (i % BOOKING_SPAN) + offset)).isoformat()


def server_command(server: str, wire: str, backend: str, trace: bool = False, asgi: str = "default") -> list[str]:
    """How to start one benchmark server (``asgi``: which ASGI server serves http; see servers/asgi_run.py)."""
    py = sys.executable
    if server == "floor-booking":
        if wire != "stdio" or backend not in ("asyncio", "uvloop"):
            raise SystemExit("the booking floor serves stdio on asyncio only")
        cmd = [py, str(SERVERS / "floor_booking.py")]
    elif server == "floor":
        if wire == "http":
            cmd = [py, str(SERVERS / "floor_http.py"), "--backend", backend,
                   "--asgi", "uvicorn-h11" if asgi == "default" else asgi]
        elif wire != "stdio":
            raise SystemExit("the floor serves stdio and http only")
        elif backend == "trio":
            cmd = [py, str(SERVERS / "floor_trio.py")]
        else:
            cmd = [py, str(SERVERS / "floor_asyncio.py")] + (["--uvloop"] if backend == "uvloop" else [])
    else:
        script = {"minimcp": "minimcp_server.py", "booking": "booking_server.py"}.get(server, "official_server.py")
        cmd = [py, str(SERVERS / script), "--transport", wire, "--backend", backend]
        if asgi != "default":
            if server != "minimcp" or wire != "http":
                raise SystemExit("--asgi: minimcp and the floor over http only")
            cmd += ["--asgi", asgi]
    prefix = os.environ.get("BENCH_SERVER_PREFIX", "").split()  # e.g. a profiler: "py-spy record -o f --"
    return prefix + cmd + (["--tracemalloc"] if trace else [])


def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_cpu_seconds() -> float:
    """CPU seconds every process of the machine has used (all cores: /proc/stat), idle and iowait excluded."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def proc_rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# --- one connection ----------------------------------------------------------------------------


class Conn:
    """One MCP session, whatever the wire. Subclasses provide ``_write`` (and start/close)."""

    def __init__(self) -> None:
        self.next_id = itertools.count(1)
        #: our request id -> callback(result_raw, error_raw)
        self.waiting: dict[int, Callable[[Any, Any], None]] = {}
        #: what to do with a question: park it or answer it now
        self.on_question: Callable[[Conn, Any, int], None] = answer_now
        self.closed = asyncio.Event()

    # outbound
    def _write(self, messages: list[bytes], *, request: bool) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Wires that batch writes send what is buffered."""

    def request(self, method: str, params: Any, callback: Callable[[Any, Any], None]) -> int:
        id_ = next(self.next_id)
        self.waiting[id_] = callback
        self._write([encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})], request=True)
        return id_

    def notify(self, method: str) -> None:
        self._write([encode({"jsonrpc": "2.0", "method": method})], request=False)

    def respond(self, id_: Any, result: Any) -> None:
        self._write([encode({"jsonrpc": "2.0", "id": id_, "result": result})], request=False)

    async def call(self, method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(result: Any, error: Any) -> None:
            if not fut.done():
                if error is not None:
                    fut.set_exception(RuntimeError(f"{method}: {bytes(error).decode()}"))
                else:
                    fut.set_result(result)

        self.request(method, params, done)
        self.flush()
        return await fut

    async def handshake(self) -> None:
        await self.call("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "bench-driver", "version": "1.0.0"},
        })
        self.notify("notifications/initialized")
        self.flush()

    async def stats(self, collect: bool = True, snapshot: str = "") -> dict[str, Any]:
        arguments = {"collect": collect, "snapshot": snapshot}
        raw = await self.call("tools/call", {"name": "stats", "arguments": arguments})
        return json.loads(decode_tool_result(raw).content[0].text)  # type: ignore[no-any-return]

    def fail_all(self) -> None:
        waiting, self.waiting = self.waiting, {}
        for cb in waiting.values():
            cb(None, b'"the server went away"')

    # inbound
    def on_message(self, data: bytes) -> None:
        m = decode_incoming(data)
        if m.method is None:
            cb = self.waiting.pop(m.id, None)  # type: ignore[arg-type]
            if cb is not None:
                cb(m.result if m.result else None, m.error if m.error else None)
        elif m.id is None:
            return  # notifications are not part of the exchange
        elif m.method == "elicitation/create":
            self.on_question(self, m.id, call_of(decode_elicit(m.params).message))  # type: ignore[arg-type]
        elif m.method == "ping":
            self.respond(m.id, {})
        else:
            self._write([encode({"jsonrpc": "2.0", "id": m.id, "error": {"code": -32601, "message": "no"}})],
                        request=False)


def call_of(message: str) -> int:
    """The number of the call that asks ``message``."""
    if TOOL == "booking":
        return (datetime.date.fromisoformat(message[:10]) - BOOKING_BASE).days // 2
    return int(message[len(PREFIX):])


def token(i: int) -> str:
    """The answer given to the question of call ``i`` (only the driver knows the mapping)."""
    return f"a{(i * 2654435761) & 0xFFFFFFFF:08x}-{i}"


def accept(i: int) -> dict[str, Any]:
    if TOOL == "booking":
        return {"action": "accept", "content": {"accept_alternative": True, "date": booking_date(i, 3)}}
    return {"action": "accept", "content": {"answer": token(i)}}


def answer_now(conn: Conn, eid: Any, i: int) -> None:
    conn.respond(eid, accept(i))


class StdioConn(Conn):
    """The server is our child; newline-delimited JSON on its stdin/stdout."""

    def __init__(self, command: list[str]) -> None:
        super().__init__()
        self.command = command
        self.buf = b""
        self.out: list[bytes] = []
        self.flush_scheduled = False
        self.pid = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        conn = self

        class Proto(asyncio.SubprocessProtocol):
            def pipe_data_received(self, fd: int, data: bytes) -> None:
                if fd == 1:
                    conn.data(data)

            def process_exited(self) -> None:
                conn.closed.set()
                conn.fail_all()

        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (read on failure, closed with the process)
        self.transport, _ = await loop.subprocess_exec(
            Proto, *self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr
        )
        self.pid = self.transport.get_pid()
        self.stdin = self.transport.get_pipe_transport(0)
        self.stdin.set_write_buffer_limits(high=1 << 30)

    def data(self, data: bytes) -> None:
        lines = (self.buf + data).split(b"\n") if self.buf else data.split(b"\n")
        self.buf = lines.pop()
        for line in lines:
            if line:
                self.on_message(line)
        self.flush()

    def _write(self, messages: list[bytes], *, request: bool) -> None:
        self.out.extend(messages)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        if self.out:
            self.out.append(b"")
            self.stdin.write(b"\n".join(self.out))
            self.out = []

    def error_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-3000:].decode(errors="replace")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stdin.close()
        try:
            await asyncio.wait_for(self.closed.wait(), 5)
        except TimeoutError:
            self.transport.kill()
            await self.closed.wait()
        self.transport.close()


class WsConn(Conn):
    """One WebSocket connection (text frames, subprotocol ``mcp``)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.out: list[bytes] = []
        self.flush_scheduled = False

    async def start(self) -> None:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.url, subprotocols=["mcp"], max_size=None, compression=None,  # type: ignore[list-item]
                                ping_interval=None, open_timeout=60)
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(Exception):
            async for message in self.ws:
                self.on_message(message if isinstance(message, bytes) else message.encode())
                self.flush()
        self.closed.set()

    def _write(self, messages: list[bytes], *, request: bool) -> None:
        self.out.extend(messages)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        if self.out:
            out, self.out = self.out, []
            asyncio.get_running_loop().create_task(self._send(out))

    async def _send(self, out: list[bytes]) -> None:
        with contextlib.suppress(Exception):
            for m in out:
                await self.ws.send(m.decode())

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        self.reader.cancel()


class _Stale(Exception):
    """A reused connection closed before any of the response arrived."""


class RawHttp:
    """A minimal HTTP/1.1 client (keep-alive pool, chunked and SSE bodies) so the driver is never the bottleneck.

    httpx costs about 1.5 ms of CPU per request here, which capped every server at
    about 250 round trips/s; this costs a few tens of microseconds.
    """

    def __init__(self, host: str, port: int, *, more_ports: tuple[int, ...] = (), max_sockets: int = 15_000) -> None:
        self.host, self.port = host, port
        # new connections go round robin over ``port`` and ``more_ports`` (one service on several ports: one
        # client address reaches one host:port through at most ~28,000 ephemeral ports)
        self.ports = itertools.cycle((port, *more_ports))
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.max_sockets = max_sockets  # sockets open at once (the driver raises its fd limit)
        self.open = 0
        # requests waiting for a socket: handed an idle connection, or None (a slot freed: open one)
        self.waiters: collections.deque[asyncio.Future[Any]] = collections.deque()
        # connects in flight: a burst of thousands overflows a small listen backlog (SYN retries: 1 s, 3 s, ...)
        self.connecting = asyncio.Semaphore(100)
        self.stale_retries = 0  # requests sent again: their kept-alive connection had been closed by the server
        self.connects = 0  # connections opened

    async def request(self, method: str, path: str, body: bytes, headers: dict[str, str],
                      on_message: Callable[[bytes], None],
                      on_headers: Callable[[int, dict[str, str]], None] | None = None) -> tuple[int, dict[str, str]]:
        while True:
            reused = bool(self.idle)
            reader, writer = await self._connection()
            try:
                return await self._exchange(reader, writer, method, path, body, headers, on_message, on_headers)
            except _Stale:
                # A kept-alive connection the server closed while it sat idle (uvicorn: after 5 s): nothing
                # of a response arrived, so the server did not take the request; send it again on another
                # connection, as HTTP clients do.
                writer.close()
                self._slot_freed()
                if not reused:
                    raise ConnectionError("the server closed a new connection before answering") from None
                self.stale_retries += 1
            except BaseException:
                writer.close()
                self._slot_freed()
                raise

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """An idle connection, else a new one; at ``max_sockets`` open, the first to be idle or a freed slot."""
        if self.idle:
            return self.idle.pop()
        if self.open >= self.max_sockets:
            waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            try:
                handed = await waiter
            except asyncio.CancelledError:  # cancelled after being handed something: pass it on
                if waiter.done() and not waiter.cancelled():
                    self._slot_freed() if waiter.result() is None else self._idle(waiter.result())
                raise
            if handed is not None:
                return handed  # type: ignore[no-any-return]
        else:  # (a freed slot is handed over with the count unchanged)
            self.open += 1
        try:
            async with self.connecting:
                reader, writer = await asyncio.open_connection(self.host, next(self.ports), limit=1 << 24)
            self.connects += 1
        except BaseException:
            self._slot_freed()
            raise
        sock = writer.get_extra_info("socket")
        if sock is not None:
            import socket

            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    def _idle(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self.idle.append(conn)

    def _slot_freed(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.open -= 1

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str, path: str,
                        body: bytes, headers: dict[str, str], on_message: Callable[[bytes], None],
                        on_headers: Callable[[int, dict[str, str]], None] | None) -> tuple[int, dict[str, str]]:
        head = [f"{method} {path} HTTP/1.1", f"host: {self.host}:{self.port}", f"content-length: {len(body)}"]
        head.extend(f"{k}: {v}" for k, v in headers.items())
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        try:
            response_head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if isinstance(exc, asyncio.IncompleteReadError) and exc.partial:
                raise
            raise _Stale from exc
        status_line, *lines = response_head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        rh = {}
        for line in lines:
            if line:
                k, _, v = line.partition(":")
                rh[k.strip().lower()] = v.strip()
        if on_headers is not None:
            on_headers(status, rh)
        sse = rh.get("content-type", "").startswith("text/event-stream")
        buf = b""
        if rh.get("transfer-encoding") == "chunked":
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                chunk = (await reader.readexactly(size + 2))[:-2] if size else b""
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                if sse:
                    buf = self._events(buf + chunk, on_message)
                else:
                    buf += chunk
        else:
            length = int(rh.get("content-length", "0"))
            data = await reader.readexactly(length) if length else b""
            buf = self._events(data + b"\n\n", on_message) if sse else data
        if not sse and buf and status < 300 and rh.get("content-type", "").startswith("application/json"):
            on_message(buf)
        if status >= 400:
            who = f" (session {headers.get('mcp-session-id', '-')}, answered by {rh['x-mcp-worker']})" \
                if "x-mcp-worker" in rh else ""  # behind deploy/haproxy.cfg: which worker answered
            print(f"driver: {method} -> HTTP {status}{who}: {buf[:300]!r}", file=sys.stderr)
        if rh.get("connection", "").lower() == "close":
            writer.close()
            self._slot_freed()
        else:
            self._idle((reader, writer))
        return status, rh

    @staticmethod
    def _events(buf: bytes, on_message: Callable[[bytes], None]) -> bytes:
        buf = buf.replace(b"\r\n", b"\n")
        *events, rest = buf.split(b"\n\n")
        for event in events:
            data = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            payload = b"\n".join(data)
            if payload.strip():
                on_message(payload)
        return rest

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


class HttpConn(Conn):
    """One Streamable HTTP session: a POST per message; requests answered on their own SSE stream."""

    def __init__(self, url: str, client: RawHttp) -> None:
        super().__init__()
        self.url = url
        self.path = "/" + url.split("://", 1)[-1].partition("/")[2]
        self.client = client
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        pass

    def _write(self, messages: list[bytes], *, request: bool) -> None:
        for m in messages:
            self._start_post(m, self.headers)

    def _start_post(self, body: bytes, headers: dict[str, str]) -> None:
        task = asyncio.get_running_loop().create_task(self._post(body, headers))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _post(self, body: bytes, headers: dict[str, str]) -> None:
        # A call ends when its response stream ends (as for an SDK client); questions on the
        # stream are answered as they come.
        responses: list[bytes] = []

        def on_message(data: bytes) -> None:
            if b'"method"' in data:
                self.on_message(data)
            else:
                responses.append(data)

        try:
            status, _rh = await self.client.request("POST", self.path, body, headers, on_message,
                                                   self._on_headers)
            for data in responses:
                self.on_message(data)
            if status >= 400:
                raise RuntimeError(f"HTTP {status}")
        except Exception as exc:  # a failed POST ends the benchmark loudly
            print(f"driver: POST failed: {exc!r}", file=sys.stderr)
            self.closed.set()
            self.fail_all()

    def _on_headers(self, status: int, rh: dict[str, str]) -> None:
        sid = rh.get("mcp-session-id")
        if sid and "mcp-session-id" not in self.headers:
            self.headers["mcp-session-id"] = sid
            self.headers["mcp-protocol-version"] = PROTOCOL

    async def close(self) -> None:
        for t in list(self.tasks):
            t.cancel()
        if "mcp-session-id" in self.headers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.request("DELETE", self.path, b"", self.headers, lambda m: None), 5)


class ModernHttpConn(HttpConn):
    """Streamable HTTP on revision 2026-07-28: no handshake and no session; a POST per request.

    A call whose tool asks comes back ``input_required`` (the tool parked on the server): its
    question goes to :attr:`on_question` like a nested ``elicitation/create``, and answering it
    (:meth:`respond`) calls the tool again with ``inputResponses`` and the ``requestState``; the
    call's callback gets the result of the last round.
    """

    async def handshake(self) -> None:
        pass  # nothing to set up on 2026-07-28

    def _on_headers(self, status: int, rh: dict[str, str]) -> None:
        pass  # no session

    def request(self, method: str, params: Any, callback: Callable[[Any, Any], None]) -> int:
        id_ = next(self.next_id)
        params = {**params, "_meta": ENVELOPE}

        def reply(result: Any, error: Any) -> None:
            if error is None and result is not None:
                r = decode_modern_result(result)
                if r.result_type == "input_required":
                    ((key, question),) = r.input_requests.items()
                    self.on_question(self, (params, key, r.request_state, callback), call_of(question.params.message))
                    return
            callback(result, error)

        self.waiting[id_] = reply
        headers = {**self.headers, "mcp-protocol-version": MODERN, "mcp-method": method}
        if method == "tools/call":
            headers["mcp-name"] = params["name"]
        self._start_post(encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}), headers)
        return id_

    def notify(self, method: str) -> None:
        pass  # this revision defines no client notifications over HTTP

    def respond(self, id_: Any, result: Any) -> None:
        params, key, state, callback = id_  # the answer to an input_required: the retry
        retry = {**params, "inputResponses": {key: result}}
        if state is not None:
            retry["requestState"] = state
        del retry["_meta"]
        self.request("tools/call", retry, callback)

    async def close(self) -> None:
        for t in list(self.tasks):
            t.cancel()


# --- servers over the network --------------------------------------------------------------------


class NetServer:
    """A ws/http benchmark server as our child; it prints ``PORT n`` when it listens."""

    def __init__(self, command: list[str]) -> None:
        self.command = command

    async def start(self) -> int:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (read on failure, closed with the process)
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr
        )
        self.pid = self.proc.pid
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        while line.startswith(b"py-spy>") or line == b"\n":  # a profiler (BENCH_SERVER_PREFIX) speaks first
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not line.startswith(b"PORT "):
            self.stderr.seek(0)
            raise RuntimeError(f"server did not start: {line!r} {self.stderr.read()[-2000:]!r}")
        return int(line.split()[1])

    def error_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-3000:].decode(errors="replace")

    async def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            if os.environ.get("BENCH_SERVER_PREFIX"):  # a profiler writes its output on SIGINT
                import signal

                self.proc.send_signal(signal.SIGINT)
            else:
                self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


def external_client(args: argparse.Namespace) -> tuple[str, RawHttp]:
    """``--url``: the MCP URL and an HTTP client for a server we did not start (e.g. a load balancer)."""
    from urllib.parse import urlsplit

    urls = [urlsplit(u) for u in args.url.split(",")]
    if any(u.scheme != "http" or u.hostname is None or u.port is None for u in urls) or \
            len({(u.hostname, u.path) for u in urls}) != 1:
        raise SystemExit("--url: http://HOST:PORT/PATH, several only as one host and path on other ports")
    first = urls[0]
    client = RawHttp(first.hostname, first.port, more_ports=tuple(u.port for u in urls[1:]),  # type: ignore[arg-type]
                     max_sockets=args.max_sockets or 15_000)
    return f"http://{first.hostname}:{first.port}{first.path}", client


@contextlib.asynccontextmanager
async def open_sessions(args: argparse.Namespace, count: int = 1) -> Any:
    """Start the server and ``count`` initialized sessions to it; yields (pid, conns).

    With ``--url`` no server is started (pid 0): the sessions go to that address.
    """
    if args.url:
        url, client = external_client(args)
        conns: list[Conn] = [HttpConn(url, client) for _ in range(count)]
        try:
            await _start_all(conns)
            yield 0, conns
        finally:
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
            client.close()
        return
    command = server_command(args.server, args.wire, args.backend, args.tracemalloc, args.asgi)
    if args.wire == "stdio":
        assert count == 1
        conn = StdioConn(command)
        await conn.start()
        try:
            await asyncio.wait_for(conn.handshake(), 120)
            yield conn.pid, [conn]
        except BaseException:
            print(conn.error_tail(), file=sys.stderr)
            raise
        finally:
            await conn.close()
        return
    server = NetServer(command)
    port = await server.start()
    client = None
    conns: list[Conn] = []
    try:
        if args.wire == "ws":
            for _ in range(count):
                conns.append(WsConn(f"ws://127.0.0.1:{port}/mcp"))
        else:
            # 2026-07-28: no call holds its connection while it waits, so a pool of 100 sockets carries them all
            # (and the server's idle connections do not count as parked calls' bytes)
            sockets = args.max_sockets or (100 if args.era == "modern" else 15_000)
            client = RawHttp("127.0.0.1", port, max_sockets=sockets)
            kind = ModernHttpConn if args.era == "modern" else HttpConn
            for _ in range(count):
                conns.append(kind(f"http://127.0.0.1:{port}/mcp", client))
        await _start_all(conns)
        yield server.pid, conns
    except BaseException:
        print(server.error_tail(), file=sys.stderr)
        raise
    finally:
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
        if client is not None:
            client.close()
        await server.close()


async def _start_all(conns: list[Conn]) -> None:
    """Start and initialize every session, 50 at a time."""
    sem = asyncio.Semaphore(50)

    async def up(c: Conn) -> None:
        async with sem:
            await c.start()
            await asyncio.wait_for(c.handshake(), 120)

    await asyncio.gather(*(up(c) for c in conns))


class Watch:
    """Processes named on the command line (``--watch NAME=PID``): CPU time and RSS read from /proc."""

    def __init__(self, specs: list[str]) -> None:
        self.pids: dict[str, int] = {}
        for spec in specs:
            name, _, pid = spec.partition("=")
            if not name or not pid.isdigit():
                raise SystemExit(f"--watch {spec!r}: NAME=PID")
            self.pids[name] = int(pid)

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each watched process, and of the whole machine (``machine``: every process)."""
        return {**{name: proc_cpu_seconds(pid) for name, pid in self.pids.items()}, "machine": machine_cpu_seconds()}

    def shares(self, before: dict[str, float], elapsed: float) -> dict[str, float]:
        """CPU seconds per wall second since ``before`` (1.0 = one core busy), by name."""
        now = self.cpu()
        return {name: round((now[name] - before[name]) / elapsed, 3) for name in now} if self.pids else {}

    def rss(self) -> dict[str, int]:
        return {name: proc_rss(pid) for name, pid in self.pids.items()}


async def barrier(args: argparse.Namespace, word: str, info: dict[str, Any]) -> None:
    """``--barrier``: say ``word`` (and ``info``) on stdout and wait for a line on stdin before going on.

    Several drivers on one server (each process holds at most RLIMIT_NOFILE sockets) start their
    fill together and answer only once every driver's questions are pending.
    """
    if not args.barrier:
        return
    print(word, json.dumps(info), flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if not line:
        raise SystemExit(f"--barrier: stdin closed while waiting after {word}")


def sessions_by_worker(conns: list[Conn]) -> dict[str, int]:
    """How many sessions each worker holds, read off the session ids' prefixes (``w1.<random>``)."""
    out: dict[str, int] = {}
    for c in conns:
        sid = getattr(c, "headers", {}).get("mcp-session-id", "")
        worker = sid.partition(".")[0] if "." in sid else "-"
        out[worker] = out.get(worker, 0) + 1
    return dict(sorted(out.items()))


# --- scenarios -----------------------------------------------------------------------------------


class Calls:
    """Issues ``ask`` calls and checks every result against its own answer."""

    #: the first call number (--call-offset: several drivers on one server number their calls apart)
    first = 0

    def __init__(self) -> None:
        self.i = itertools.count(Calls.first)
        self.done = 0
        self.wrong = 0
        self.errors = 0
        self.latencies: list[float] | None = None
        self.on_done: Callable[[Conn], None] | None = None
        self.target = 0
        self.reached: asyncio.Event = asyncio.Event()

    def start(self, conn: Conn) -> None:
        i = next(self.i)
        t0 = time.perf_counter()

        def done(result: Any, error: Any) -> None:
            if error is not None or result is None:
                self.errors += 1
            else:
                r = decode_tool_result(result)
                if r.is_error or not r.content or not self.right(i, r.content[0].text):
                    self.wrong += 1
            self.done += 1
            if self.latencies is not None:
                self.latencies.append(time.perf_counter() - t0)
            if self.on_done is not None:
                self.on_done(conn)
            if self.done >= self.target:
                self.reached.set()

        if TOOL == "booking":
            call = {"name": "book_table", "arguments": {"date": booking_date(i), "party_size": 2}}
        else:
            call = {"name": "ask", "arguments": {"i": i}}
        conn.request("tools/call", call, done)

    @staticmethod
    def right(i: int, text: str) -> bool:
        """The result of call ``i`` carries the answer given to its own question."""
        if TOOL == "booking":
            return text.startswith(f"Booked a table for 2 on {booking_date(i % BOOKING_SPAN, 3)} (booking ")
        return text == token(i)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def scenario_pending(args: argparse.Namespace) -> dict[str, Any]:
    """N calls parked on one (or spread over many) sessions, filled and drained ``fills`` times."""
    n_sessions = args.sessions
    per = args.n // n_sessions if n_sessions > 1 else args.n
    total = per * n_sessions
    out: dict[str, Any] = {"scenario": "pending" if n_sessions == 1 else "sessions", "n": total,
                           "sessions": n_sessions, "fills": []}
    watch = Watch(args.watch)
    async with open_sessions(args, n_sessions) as (pid, conns):
        first = conns[0]
        # warm-up: a few answered calls, so lazily built state exists before the baseline
        # (--url: a few on every session, so every worker behind the address is warmed up)
        calls = Calls()
        warm = conns if args.url else conns[:1]
        calls.target = 50 * len(conns[:1]) + (2 * len(warm) if args.url else 0)
        for k in range(calls.target):
            calls.start(warm[k % len(warm)])
        for c in warm:
            c.flush()
        await asyncio.wait_for(calls.reached.wait(), 120)
        if args.url:  # the server's stats tool would speak for one worker only: /proc of the watched ones instead
            out["sessions_by_worker"] = sessions_by_worker(conns)
            out["idle_rss_watched"] = watch.rss()
            await barrier(args, "READY", {})
        else:
            out["idle"] = base = await first.stats(True, "base" if args.tracemalloc else "")
            out["idle_rss_external"] = proc_rss(pid)
        for _fill in range(args.fills):
            parked: list[tuple[Conn, Any, int]] = []
            all_parked = asyncio.Event()

            def park(conn: Conn, eid: Any, i: int, parked: list[Any] = parked,
                     all_parked: asyncio.Event = all_parked) -> None:
                parked.append((conn, eid, i))
                if len(parked) == total:
                    all_parked.set()

            for c in conns:
                c.on_question = park
            calls = Calls()
            calls.target = total
            client = getattr(first, "client", None)
            connects_fill0 = client.connects if client is not None else 0
            cpu0 = proc_cpu_seconds(pid) if pid else 0.0
            watched0 = watch.cpu()
            my0 = time.process_time()
            t0 = time.perf_counter()  # (CLOCK_MONOTONIC on Linux: comparable across processes)
            for c in conns:
                for _ in range(per):
                    calls.start(c)
                c.flush()
            try:
                await asyncio.wait_for(all_parked.wait(), args.fill_timeout)
            except TimeoutError:
                raise SystemExit(f"only {len(parked)} of {total} questions arrived within {args.fill_timeout} s "
                                 f"({calls.errors} calls failed)") from None
            t_pending = time.perf_counter() - t0
            cpu_fill = proc_cpu_seconds(pid) - cpu0 if pid else 0.0
            fill_shares = watch.shares(watched0, t_pending)
            my_fill = time.process_time() - my0
            if args.url:
                rss_full_watched = watch.rss()
                await barrier(args, "PARKED", {"t0": t0, "parked": t0 + t_pending, "cpu": my_fill})
            else:
                full = await first.stats(True, "diff" if args.tracemalloc and not out["fills"] else "")
                rss_full_external = proc_rss(pid)
            random.shuffle(parked)
            for c in conns:
                c.on_question = answer_now
            connects0 = client.connects if client is not None else 0
            cpu1 = proc_cpu_seconds(pid) if pid else 0.0
            my1 = time.process_time()
            t1 = time.perf_counter()
            for conn, eid, i in parked:
                conn.respond(eid, accept(i))
            for c in conns:
                c.flush()
            parked.clear()
            try:
                await asyncio.wait_for(calls.reached.wait(), args.fill_timeout)
            except TimeoutError:
                raise SystemExit(f"only {calls.done} of {total} calls ended within {args.fill_timeout} s") from None
            t_drain = time.perf_counter() - t1
            my_drain = time.process_time() - my1
            cpu_drain = proc_cpu_seconds(pid) - cpu1 if pid else 0.0
            last = _fill == args.fills - 1
            if args.url:
                out["fills"].append({
                    "seconds_to_all_pending": round(t_pending, 4), "seconds_to_drain": round(t_drain, 4),
                    "answering": t1, "drained": t1 + t_drain, "driver_cpu_seconds_fill": round(my_fill, 3),
                    "cpu_share_fill": {**fill_shares, "driver": round(my_fill / t_pending, 3)},
                    "rss_full_watched": rss_full_watched, "rss_after_drain_watched": watch.rss(),
                    "wrong_answers": calls.wrong, "errors": calls.errors, "checked": calls.done,
                })
                if calls.wrong or calls.errors:
                    raise SystemExit(f"{calls.wrong} results carried another call's answer, {calls.errors} errors")
                continue
            after = await first.stats(True, "diff" if args.tracemalloc and last else "")
            fill: dict[str, Any] = {
                "seconds_to_all_pending": round(t_pending, 4),
                "seconds_to_drain": round(t_drain, 4),
                "server_cpu_seconds_fill": round(cpu_fill, 3),
                "server_cpu_seconds_drain": round(cpu_drain, 3),
                "driver_cpu_seconds_fill": round(my_fill, 3), "driver_cpu_seconds_drain": round(my_drain, 3),
                "rss_before": base["rss"], "rss_full": full["rss"], "rss_after_drain": after["rss"],
                "rss_full_external": rss_full_external,
                "bytes_per_pending_rss": round((full["rss"] - base["rss"]) / total),
                "gc_objects_per_pending": round((full["gc_objects"] - base["gc_objects"]) / total, 2),
                "wrong_answers": calls.wrong, "errors": calls.errors, "checked": calls.done,
            }
            if client is not None:  # http: connections the driver opened during the fill and the drain
                fill["connects_fill"] = connects0 - connects_fill0
                fill["connects_drain"] = client.connects - connects0
            if full.get("traced") is not None:
                fill["bytes_per_pending_traced"] = round((full["traced"] - base["traced"]) / total)
                fill["traced_after_drain_delta"] = after["traced"] - base["traced"]
                for key in ("top_lineno", "top_filename", "gc_types"):
                    if key in full:
                        fill[key] = full[key]
                    if key in after and last:  # what is still held after the drain
                        fill["after_drain_" + key] = after[key]
            out["fills"].append(fill)
            if calls.wrong or calls.errors:
                raise SystemExit(f"{calls.wrong} results carried another call's answer, {calls.errors} errors")
    return out


async def scenario_roundtrip(args: argparse.Namespace) -> dict[str, Any]:
    """C callers, each with one call in flight; every question answered at once."""
    c = args.c
    watch = Watch(args.watch)
    async with open_sessions(args, args.sessions) as (pid, conns):
        calls = Calls()
        running = True

        def again(cn: Conn) -> None:
            if running:
                calls.start(cn)

        calls.on_done = again
        # warm-up: the first wave (every caller's first call), at least 0.5 s, capped
        calls.target = max(c, 200)
        t_start = time.perf_counter()
        for k in range(c):  # the callers spread over the sessions (--sessions; one by default)
            calls.start(conns[k % len(conns)])
        for conn in conns:
            conn.flush()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(calls.reached.wait(), args.max_seconds)
        await asyncio.sleep(max(0.0, 0.5 - (time.perf_counter() - t_start)))
        # measurement window: at least --seconds and at least C completions (one full wave), capped
        calls.latencies = []
        done0, wrong0 = calls.done, calls.wrong
        cpu0 = proc_cpu_seconds(pid) if pid else 0.0
        watched0 = watch.cpu()
        my0 = time.process_time()
        t0 = time.perf_counter()
        calls.reached = asyncio.Event()
        calls.target = done0 + c
        deadline = t0 + args.max_seconds
        await asyncio.sleep(args.seconds)
        if calls.done < calls.target:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(calls.reached.wait(), max(0.01, deadline - time.perf_counter()))
        elapsed = time.perf_counter() - t0
        completed = calls.done - done0
        lat = calls.latencies
        calls.latencies = None
        cpu = proc_cpu_seconds(pid) - cpu0 if pid else 0.0
        shares = watch.shares(watched0, elapsed)
        my = time.process_time() - my0
        running = False
        # let the calls in flight finish (their answers are checked too)
        calls.reached = asyncio.Event()
        calls.target = next(calls.i)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(calls.reached.wait(), args.max_seconds)
        if calls.wrong or calls.errors:
            raise SystemExit(f"{calls.wrong} results carried another call's answer, {calls.errors} errors")
        by_worker = sessions_by_worker(conns) if args.url else None
    row = {
        "scenario": "roundtrip", "c": c, "calls": completed, "seconds": round(elapsed, 3),
        "round_trips_per_second": round(completed / elapsed, 1),
        "p50_ms": round(pct(lat, 0.50) * 1e3, 3), "p99_ms": round(pct(lat, 0.99) * 1e3, 3),
        "server_cpu_share": round(cpu / elapsed, 3), "driver_cpu_share": round(my / elapsed, 3),
        "wrong_answers": calls.wrong - wrong0, "checked": calls.done,
        "stale_retries": getattr(getattr(conn, "client", None), "stale_retries", None),
    }
    if args.url:  # the server is not ours: the watched processes' shares instead
        del row["server_cpu_share"]
        row.update(sessions=args.sessions, sessions_by_worker=by_worker, cpu_share=shares)
    elif args.watch:
        row["cpu_share"] = shares
    return row


async def scenario_idle(args: argparse.Namespace) -> dict[str, Any]:
    """Server memory of idle, initialized sessions (ws/http)."""
    command = server_command(args.server, args.wire, args.backend, args.tracemalloc)
    async with open_sessions(args, 1) as (_pid, conns):
        first = conns[0]
        base = await first.stats(True)
        extra: list[Conn] = []
        try:
            url = first.url  # type: ignore[attr-defined]
            for _ in range(args.sessions):
                extra.append(WsConn(url) if args.wire == "ws" else HttpConn(url, first.client))  # type: ignore[attr-defined]
            sem = asyncio.Semaphore(50)

            async def up(c: Conn) -> None:
                async with sem:
                    await c.start()
                    await c.handshake()

            t0 = time.perf_counter()
            await asyncio.gather(*(up(c) for c in extra))
            t_open = time.perf_counter() - t0
            await asyncio.sleep(0.2)
            full = await first.stats(True)
        finally:
            await asyncio.gather(*(c.close() for c in extra), return_exceptions=True)
    del command
    out = {"scenario": "idle", "sessions": args.sessions, "idle_server_rss": base["rss"],
           "seconds_to_open": round(t_open, 3),
           "bytes_per_idle_session_rss": round((full["rss"] - base["rss"]) / args.sessions)}
    if full.get("traced") is not None:
        out["bytes_per_idle_session_traced"] = round((full["traced"] - base["traced"]) / args.sessions)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["pending", "roundtrip", "sessions", "idle"])
    parser.add_argument("--server", choices=["minimcp", "official", "floor", "booking", "floor-booking"],
                        default="minimcp", help="booking: examples/booking.py's book_table; floor-booking: its floor")
    parser.add_argument("--wire", choices=["stdio", "ws", "http"], default="stdio")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true", help="trace the server's allocations (slow)")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--fills", type=int, default=1)
    parser.add_argument("-c", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--sessions", type=int, default=1, help="sessions (roundtrip: the callers spread over them)")
    parser.add_argument("--per", type=int, default=10)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    parser.add_argument("--asgi", default="default", help="http: the ASGI server (default: minimcp's serve_http; "
                        "the floor: uvicorn-h11), or uvicorn-h11, uvicorn-httptools, hypercorn, granian")
    parser.add_argument("--url", help="http: drive a server we did not start (e.g. a load balancer) at "
                        "http://HOST:PORT/PATH; several URLs (comma-separated, other ports) share the connections")
    parser.add_argument("--watch", action="append", default=[], metavar="NAME=PID",
                        help="report this process's CPU share (and RSS, pending) over the measured window")
    parser.add_argument("--max-sockets", type=int, default=0, help="http: the driver's sockets open at once "
                        "(default: 15,000; --era modern: 100)")
    parser.add_argument("--barrier", action="store_true", help="--url pending: print READY / PARKED and wait "
                        "for a line on stdin at each (several drivers in step: benchmarks/bench_scaleout.py)")
    parser.add_argument("--call-offset", type=int, default=0, help="number the calls from here (several drivers)")
    parser.add_argument("--era", choices=["handshake", "modern"], default="handshake",
                        help="http: the 2025-11-25 handshake (an elicitation/create on the call's stream) or "
                        "revision 2026-07-28 (no session; the call comes back input_required, parked, and is retried)")
    parser.add_argument("--fill-timeout", type=float, default=None,
                        help="pending: fail when the fill (or the drain) takes longer than this, in seconds")
    args = parser.parse_args()
    global TOOL
    TOOL = "booking" if args.server in ("booking", "floor-booking") else "ask"
    Calls.first = args.call_offset
    if args.era == "modern" and (args.wire != "http" or args.url or args.server != "minimcp"):
        raise SystemExit("--era modern: minimcp over http only (a server the driver starts)")
    if args.url and args.wire != "http":
        raise SystemExit("--url needs --wire http")
    if args.sessions > 1 and args.wire == "stdio":
        raise SystemExit("--sessions: one stdio session per server process")
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # many sessions: many sockets (servers inherit it)
    try:  # root may raise the hard limit too
        resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 18, max(hard, 1 << 18)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.scenario == "sessions":
        args.n = args.sessions * args.per
        fn = scenario_pending
    else:
        fn = {"pending": scenario_pending, "roundtrip": scenario_roundtrip, "idle": scenario_idle}[args.scenario]
        if args.scenario == "pending":
            args.sessions = 1
    runner: Any = asyncio.run
    if args.loop == "uvloop":
        try:
            import uvloop

            runner = uvloop.run
        except ImportError:
            pass
    row = runner(fn(args))
    row.update(server=args.server, wire=args.wire, backend=args.backend)
    if args.era != "handshake":
        row["era"] = args.era
    if args.url:
        row["url"] = args.url
    if args.wire == "http":
        row["asgi"] = args.asgi if args.asgi != "default" or args.server != "floor" else "uvicorn-h11"
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
