"""Hostile and broken input: limits, garbage, stray answers, and what never reaches the wire.

Each test states one guarantee of ``docs/guarantees.md``. Sections:

1. limits -- oversized messages per transport with bounded memory, pending and in-flight bounds,
   nesting depth through a live session;
2. arbitrary input -- property tests over the framer + decoder pipeline, params decoding, the form
   schema parser and validator, and a live session fed garbage;
3. stray messages -- unknown, duplicate and late answers, cancellations and completion notices for
   unknown ids: harmless and counted;
4. no internal detail on the wire -- exception text, stack traces and file paths stay in the log;
5. regressions found by the fuzzer (``fuzz/fuzz_targets.py``);
6. WebSocket: unsent output under a ping flood, slots held by silent connections, text that is not UTF-8.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
import tracemalloc
from collections.abc import AsyncIterator, Iterator, MutableMapping
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    ConnectionClosed,
    Context,
    ElicitationRequest,
    Limits,
    McpError,
    Server,
    TooManyPending,
    forms,
    memory_pair,
)
from minimcp.core.session import Session
from minimcp.server.connection import ServerConnection
from minimcp.transports.memory import MemoryTransport
from minimcp.transports.stdio import StdioTransport
from minimcp.wire import jsonrpc
from minimcp.wire.framing import LineFramer, Oversized
from minimcp.wire.types import CallToolParams, CancelledParams, ElicitResult, InitializeParams, ProgressParams
from tests.helpers import RawPeer

MiB = 1024 * 1024
HANDSHAKE = {
    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}
}
ELICIT_CAPS: dict[str, Any] = {"elicitation": {}}
#: Things that must never appear in anything a server or client sends.
LEAKS = ("Traceback", 'File "', "/srv/secret", "/etc/shadow", "prod.pem", "RuntimeError", "OSError", "KeyError")


# --- helpers ---------------------------------------------------------------------------------------


class Tap:
    """Wraps a transport and keeps a copy of every message sent through it."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    async def send(self, message: bytes, *, related: Any = None) -> None:
        self.sent.append(message)
        await self.inner.send(message, related=related)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def assert_no_leaks(self) -> None:
        wire = b"\n".join(self.sent).decode()
        for needle in LEAKS:
            assert needle not in wire, f"{needle!r} went on the wire"


@contextlib.asynccontextmanager
async def serve_raw(
    server: Server, *, limits: Limits | None = None, buffer: int = 1024
) -> AsyncIterator[tuple[RawPeer, ServerConnection, Tap]]:
    """Serve ``server`` on a memory pair; yield the raw client end, the connection and a tap of the server's output."""
    a, b = memory_pair(limits=limits, buffer=buffer)
    tap = Tap(a)
    async with anyio.create_task_group() as tg:
        conn = await tg.start(server.serve, tap)
        try:
            yield RawPeer(b), conn, tap
        finally:
            tg.cancel_scope.cancel()


async def wait_until(predicate: Any, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - library counters have no event to wait on
            await anyio.sleep(0.002)


def call_msg(id_: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments or {}}}


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c.get("type") == "text")


async def recv_elicitation(peer: RawPeer) -> dict[str, Any]:
    msg = await peer.recv()
    assert msg.get("method") == "elicitation/create", msg
    return msg


class Seats(msgspec.Struct):
    count: int


@dataclasses.dataclass
class Seen:
    answers: list[Any] = dataclasses.field(default_factory=list)
    cancelled: int = 0
    parked: int = 0


def asking_server(seen: Seen, *, limits: Limits | None = None) -> Server:
    app = Server("hostile", limits=limits)

    @app.tool()
    async def ask(ctx: Context, timeout: float = 30.0) -> str:
        seen.parked += 1
        try:
            answer = await ctx.elicit("How many seats?", Seats, timeout=timeout)
        except anyio.get_cancelled_exc_class():
            seen.cancelled += 1
            raise
        finally:
            seen.parked -= 1
        seen.answers.append(answer)
        return repr(answer)

    @app.tool()
    async def echo(x: Any = None) -> str:
        return "ok"

    return app


# --- 1. limits ---------------------------------------------------------------------------------------


class _Source(anyio.abc.ByteReceiveStream):
    """A byte stream that plays ``parts`` (reusing the same chunk objects, so the attacker's bytes cost nothing)."""

    def __init__(self, parts: Iterator[bytes]) -> None:
        self.parts = parts

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        for part in self.parts:
            return part
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        pass


class _Sink(anyio.abc.ByteSendStream):
    def __init__(self) -> None:
        self.data = bytearray()

    async def send(self, item: bytes) -> None:
        self.data += item

    async def aclose(self) -> None:
        pass


INIT_LINE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


async def test_stdio_50_mib_line_gets_an_error_with_bounded_memory_and_the_session_goes_on() -> None:
    chunk = b"y" * 65536
    total = 50 * MiB

    def attack() -> Iterator[bytes]:
        yield INIT_LINE
        yield b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"'
        for _ in range(total // len(chunk)):
            yield chunk
        yield b'"}}\n{"jsonrpc":"2.0","id":3,"method":"ping"}\n'

    sink = _Sink()
    limits = Limits(max_message_bytes=MiB)
    transport = StdioTransport(_Source(attack()), sink, limits)
    app = Server("stdio-limit", limits=limits)
    gc.collect()
    tracemalloc.start()
    try:
        with anyio.fail_after(60):
            await app.serve(transport)  # ends at EOF
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    replies = [msgspec.json.decode(line) for line in bytes(sink.data).splitlines()]
    assert [r.get("id") for r in replies] == [1, None, 3]
    assert replies[1]["error"]["code"] == -32600 and str(MiB) in replies[1]["error"]["message"]
    assert replies[2] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    # 50 MiB went through; what was held is the 1 MiB line limit plus small change.
    assert peak < 3 * MiB, f"peak {peak} bytes while a 50 MiB line went by"


async def test_http_50_mib_body_gets_413_with_bounded_memory() -> None:
    from minimcp.transports.http import StreamableHTTPApp

    app = StreamableHTTPApp(Server("http-limit"), limits=Limits(max_message_bytes=MiB))
    chunk = b"y" * 65536
    sent = 0
    started: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        await anyio.lowlevel.checkpoint()
        sent += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": sent < 50 * MiB}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message)

    headers = [
        (b"host", b"localhost"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
    ]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
    gc.collect()
    tracemalloc.start()
    try:
        with anyio.fail_after(30):
            await app(scope, receive, send)  # chunked: no Content-Length to refuse up front
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert started[0]["status"] == 413
    assert sent <= MiB + 2 * len(chunk), "the body was read past the limit"
    assert peak < 4 * MiB

    # With a Content-Length over the limit, not one body byte is read.
    sent = 0
    started.clear()
    declared = [*headers, (b"content-length", str(50 * MiB).encode())]
    with anyio.fail_after(30):
        await app({**scope, "headers": declared}, receive, send)
    assert started[0]["status"] == 413 and sent == 0


# --- Streamable HTTP: sessions, slow clients and odd numbers (issue 15, items 6, 7, 10) ------------


def _http_helpers() -> Any:
    pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    pytest.importorskip("hypercorn")
    from tests.helpers import http as http_helpers

    return http_helpers


async def _initialize_only(http: Any, url: str) -> str:
    """POST initialize and nothing after it (no notifications/initialized): the new session's id."""
    h = _http_helpers()
    headers = {"accept": h.JSON_SSE, "content-type": "application/json"}
    async with http.stream("POST", url, content=h.dump(h.initialize_request()), headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        await response.aread()
        return str(response.headers["mcp-session-id"])


async def _ping(raw: Any) -> int:
    return int((await raw.post(_http_helpers().req(7, "ping"))).status_code)


async def test_http_a_session_that_never_went_past_initialize_expires_quickly() -> None:
    h = _http_helpers()
    limits = Limits(initialize_timeout=0.3)
    with anyio.fail_after(30):
        async with h.serving(Server("fresh", limits=limits)) as (url, app), h.raw_session(url) as raw:
            async with h.httpx.AsyncClient(timeout=10) as http:
                abandoned = await _initialize_only(http, url)
            assert app.session_count == 2
            while app.session_count > 1:  # noqa: ASYNC110 - the app's expiry task owns the table
                await anyio.sleep(0.05)
            assert app.session_ids() == [raw.session_id] and abandoned != raw.session_id
            assert await _ping(raw) == 200  # the session that went on lives on (idle timeout: 30 min)


async def test_http_sessions_per_client_address_are_bounded_and_its_lru_idle_one_makes_room() -> None:
    h = _http_helpers()
    limits = Limits(max_sessions_per_client=2)
    with anyio.fail_after(30):
        async with (
            h.serving(Server("per-client", limits=limits)) as (url, app),
            h.raw_session(url) as one,
            h.raw_session(url) as two,
        ):
            assert await _ping(one) == 200  # now `two` is the least recently used
            async with h.raw_session(url) as three:
                assert app.session_count == 2
                assert await _ping(two) == 404  # ended to make room
                assert await _ping(one) == 200 and await _ping(three) == 200
                # Another address has its own bound.
                other = h.httpx.AsyncHTTPTransport(local_address="127.0.0.2")
                async with h.httpx.AsyncClient(transport=other, timeout=10) as http:
                    await _initialize_only(http, url)
                assert app.session_count == 3


async def test_http_one_client_filling_the_session_cap_does_not_lock_others_out() -> None:
    h = _http_helpers()
    with anyio.fail_after(30):
        async with h.serving(Server("cap"), max_sessions=3) as (url, app):
            attacker = h.httpx.AsyncHTTPTransport(local_address="127.0.0.2")
            async with h.httpx.AsyncClient(transport=attacker, timeout=10) as http:
                spam = [await _initialize_only(http, url) for _ in range(5)]
            assert app.session_count == 3 and set(app.session_ids()) == set(spam[2:])
            async with h.raw_session(url) as victim:  # the oldest idle session made room
                assert await _ping(victim) == 200
                assert app.session_count == 3 and spam[2] not in app.session_ids()


@pytest.mark.parametrize("asgi_server", ["uvicorn-h11", "uvicorn-httptools", "hypercorn"])
async def test_http_connections_trickling_their_headers_are_closed(asgi_server: str) -> None:
    """Issue 15 item 7: 20 connections each sending a header line every 0.2 s are all closed once
    ``http_header_timeout`` passes (uvicorn had no such timeout); the server goes on serving.
    (On trio, uvicorn serves from an asyncio loop in a thread: ``test_asgi_guard.serving``.)"""
    h = _http_helpers()
    from tests.helpers.asgi_guard import serving
    limits = Limits(http_header_timeout=0.5)
    closed: list[int] = []

    async def trickle(port: int, n: int) -> None:
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            while True:
                with anyio.move_on_after(0.2):
                    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        await stream.receive()
                    closed.append(n)  # an answer (no server sends one here) or the end
                    return
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await stream.send(b"x-slow: 1\r\n")

    with anyio.fail_after(30):
        async with serving(Server("slow", limits=limits), asgi_server) as (url, _):
            port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(trickle, port, n)
            assert sorted(closed) == list(range(20))
            async with h.raw_session(url) as raw:
                assert await _ping(raw) == 200


@pytest.mark.parametrize("asgi_server", ["uvicorn-h11", "uvicorn-httptools", "hypercorn"])
async def test_http_requests_beyond_max_http_connections_are_refused(asgi_server: str) -> None:
    """Three questions wait on open streams with ``max_http_connections=3``: a fourth request is
    refused (uvicorn closes its connection, hypercorn answers 503); once a stream ends it works."""
    h = _http_helpers()
    from booking import build_server

    from tests.helpers.asgi_guard import serving

    server = build_server()
    limits = server.limits.replace(max_http_connections=3)
    with anyio.fail_after(30):
        async with serving(server, asgi_server, limits=limits) as (url, _), h.raw_session(url) as raw:
            readers = []  # kept referenced: a collected line iterator closes its response
            async with contextlib.AsyncExitStack() as streams:
                for n in range(3):
                    call = raw.stream(h.req(n + 1, "tools/call", h.BOOK_FULL_DAY))
                    response = await streams.enter_async_context(call)
                    assert response.status_code == 200
                    readers.append(h.SSE(response))
                    assert await readers[-1].message() is not None  # its question: the request is being served
                async with h.httpx.AsyncClient(timeout=10) as fresh:
                    try:
                        status = (await fresh.post(url, content=b"{}", headers=raw.headers())).status_code
                    except h.httpx.TransportError:
                        status = 0
                assert status in (0, 503)
            while True:  # the streams ended; the server notices their connections went away
                async with h.httpx.AsyncClient(timeout=10) as fresh:
                    with contextlib.suppress(h.httpx.TransportError):
                        r = await fresh.post(url, content=h.dump(h.req(9, "ping")), headers=raw.headers())
                        if r.status_code == 200:
                            break
                await anyio.sleep(0.05)


async def test_http_huge_numbers_in_headers_are_bad_requests_not_crashes() -> None:
    """Issue 15 item 10: ``Last-Event-ID`` and ``Content-Length`` with 5,000 digits (past Python's
    int-string limit) are refused like any other bad value (400 / read as a normal body), never 500."""
    h = _http_helpers()
    digits = "9" * 5000
    with anyio.fail_after(30):
        async with h.serving(Server("digits")) as (url, _), h.raw_session(url) as raw:
            async with raw.get(**{"last-event-id": f"{digits}-1"}) as response:
                assert response.status_code == 400
            async with raw.get(**{"last-event-id": f"1-{digits}"}) as response:
                assert response.status_code == 400
            assert await _ping(raw) == 200
    # Content-Length goes through the ASGI server's own parser first: call the app directly.
    from minimcp.transports.http import StreamableHTTPApp

    app = StreamableHTTPApp(Server("digits"))
    started: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message)

    headers = [
        (b"host", b"localhost"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", digits.encode()),
    ]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
    with anyio.fail_after(30):
        await app(scope, receive, send)
    assert started[0]["status"] == 400  # {} is not a JSON-RPC message; the length did not crash anything


async def test_a_cursor_with_thousands_of_digits_is_invalid_params() -> None:
    async with serve_raw(Server("cursor")) as (peer, _, _):
        await peer.initialize()
        reply = await peer.request(2, "tools/list", {"cursor": "9" * 5000})
        assert reply["error"]["code"] == -32602, reply
        assert (await peer.request(3, "ping"))["result"] == {}


async def test_memory_transport_oversized_message_is_refused_and_counted() -> None:
    limits = Limits(max_message_bytes=2000)
    async with serve_raw(Server("mem-limit", limits=limits), limits=limits) as (peer, conn, _):
        await peer.initialize()
        await peer.send(call_msg(2, "x", {"pad": "y" * 5000}))
        err = await peer.recv()
        assert "id" not in err and err["error"]["code"] == -32600
        assert conn.session.stats.invalid_messages == 1
        assert (await peer.request(3, "ping"))["result"] == {}


async def test_too_many_pending_elicitations_is_a_tool_error_and_the_session_goes_on() -> None:
    seen = Seen()
    async with serve_raw(asking_server(seen, limits=Limits(max_pending_outbound=3))) as (peer, conn, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        for i in range(3):
            await peer.send(call_msg(i, "ask"))
        questions = [await recv_elicitation(peer) for _ in range(3)]
        assert conn.session.pending_count == 3
        # The fourth question is refused before anything is sent: the call ends with a tool error.
        reply = await peer.request(3, "tools/call", {"name": "ask", "arguments": {}})
        assert reply["result"]["isError"] is True
        assert "too many pending requests (limit 3)" in text_of(reply["result"])
        for q in questions:
            await peer.send({"jsonrpc": "2.0", "id": q["id"], "result": {"action": "decline"}})
        results = [await peer.recv() for _ in range(3)]
        assert sorted(r["id"] for r in results) == [0, 1, 2]
        assert conn.session.pending_count == 0
        # The bound is per moment, not per lifetime: a new question goes out.
        await peer.send(call_msg(4, "ask"))
        q = await recv_elicitation(peer)
        await peer.send({"jsonrpc": "2.0", "id": q["id"], "result": {"action": "cancel"}})
        assert text_of((await peer.recv())["result"]) == "Cancelled(reason='user')"


async def test_client_pending_bound_raises_too_many_pending_before_sending() -> None:
    gate = anyio.Event()
    app = Server("slow")
    calls = 0

    @app.tool()
    async def wait() -> str:
        nonlocal calls
        calls += 1
        await gate.wait()
        return "done"

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        conn = await tg.start(app.serve, a)
        async with Client(b, limits=Limits(max_pending_outbound=2)) as client:
            results: list[str] = []

            async def call() -> None:
                results.append((await client.call_tool("wait")).text)

            async with anyio.create_task_group() as calls_tg:
                calls_tg.start_soon(call)
                calls_tg.start_soon(call)
                await wait_until(lambda: calls == 2)
                with pytest.raises(TooManyPending):
                    await client.call_tool("wait")
                assert conn.session.stats.requests_received == 3  # initialize + the two calls
                gate.set()
            assert results == ["done", "done"]
            assert client.session.pending_count == 0
        tg.cancel_scope.cancel()


async def test_too_many_inflight_calls_get_minus_32003_and_later_calls_work() -> None:
    seen = Seen()
    # initialize ran as a handler too, so the bound counts it while it runs: 2 parked calls fill it.
    async with serve_raw(asking_server(seen, limits=Limits(max_inflight_inbound=2))) as (peer, conn, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        await peer.send(call_msg(2, "ask"))
        q1, q2 = await recv_elicitation(peer), await recv_elicitation(peer)
        busy = await peer.request(3, "tools/call", {"name": "echo", "arguments": {}})
        assert busy["id"] == 3 and busy["error"]["code"] == -32003
        assert "retry later" in busy["error"]["message"]
        assert conn.session.stats.rejected_busy == 1
        assert (await peer.request(4, "ping"))["result"] == {}  # ping is answered by the read loop
        await peer.send({"jsonrpc": "2.0", "id": q1["id"], "result": {"action": "decline"}})
        assert (await peer.recv())["id"] == 1
        assert (await peer.request(5, "tools/call", {"name": "echo", "arguments": {}}))["result"]["content"]
        await peer.send({"jsonrpc": "2.0", "id": q2["id"], "result": {"action": "decline"}})
        assert (await peer.recv())["id"] == 2
        assert conn.session.inflight_count == 0


async def test_busy_client_answer_reaches_the_tool_call_as_minus_32003() -> None:
    seen = Seen()
    app = asking_server(seen)
    gate = anyio.Event()

    async def handler(q: ElicitationRequest) -> Any:
        await gate.wait()
        return Accepted({"count": 2})

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, elicitation_handler=handler, limits=Limits(max_inflight_inbound=1)) as client:
            outcomes: list[Any] = []

            async def call() -> None:
                try:
                    outcomes.append((await client.call_tool("ask")).text)
                except McpError as exc:
                    outcomes.append(exc.code)

            async with anyio.create_task_group() as calls:
                calls.start_soon(call)
                await wait_until(lambda: client.session.inflight_count == 1)
                calls.start_soon(call)
                # The busy client answered the question with -32003: the call ends with a tool error saying so.
                await wait_until(lambda: len(outcomes) == 1)
                gate.set()
            assert outcomes[1:] == ["Accepted(value=Seats(count=2))"]
            busy = outcomes[0]
            assert isinstance(busy, str) and "could not answer the question (error -32003: too many" in busy
            assert client.session.stats.rejected_busy == 1
        tg.cancel_scope.cancel()


DEEP = 100_000


async def test_deeply_nested_messages_get_minus_32600_and_the_session_survives() -> None:
    seen = Seen()
    arrays = b"[" * DEEP + b"]" * DEEP
    objects = b'{"a":' * DEEP + b"1" + b"}" * DEEP
    async with serve_raw(asking_server(seen)) as (peer, conn, tap):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask", {"timeout": 0.3}))
        question = await recv_elicitation(peer)
        attacks = [
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":'
            + arrays
            + b"}}}",
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":' + objects + b"}",
            # a deep answer to the pending question: unreadable, so the question stays open until its timeout
            b'{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":' % question["id"] + objects + b"}}",
            b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m","data":' + arrays + b"}}",
            objects,
        ]
        for attack in attacks:
            await peer.send(attack)
            err = await peer.recv()
            assert err["error"] == {"code": -32600, "message": "message is nested too deeply"}, err
        # the question times out: the client is told, and the call still ends exactly once
        note, result = await peer.recv(), await peer.recv()
        assert note["method"] == "notifications/cancelled" and note["params"]["requestId"] == question["id"]
        assert result["id"] == 1 and text_of(result["result"]) == "Cancelled(reason='timeout')"
        assert conn.session.stats.invalid_messages == len(attacks)
        assert (await peer.request(4, "ping"))["result"] == {}
        assert conn.session.pending_count == 0 and seen.answers == [Cancelled("timeout")]
        tap.assert_no_leaks()


async def test_deep_batch_on_2025_03_26_is_minus_32600() -> None:
    async with serve_raw(Server("batch")) as (peer, _, _tap):
        await peer.initialize("2025-03-26")
        await peer.send(b'[{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * DEEP + b"]" * DEEP + b"}]")
        err = await peer.recv()
        assert err["error"]["code"] == -32600
        assert (await peer.request(2, "ping"))["result"] == {}


def _call_nested(id_: int, depth: int) -> bytes:
    nested = b"[" * depth + b"]" * depth
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"x":%s}}}' % (
        id_,
        nested,
    )


def _depth_limit() -> int:
    """The deepest nesting the decoder takes, found by bisection (msgspec's own limit, about 1,000)."""
    lo, hi = 1, 100_000
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            jsonrpc.decode(_call_nested(1, mid))
            lo = mid
        except jsonrpc.InvalidMessage:
            hi = mid - 1
    return lo


async def test_nesting_just_under_and_over_the_limit_gives_only_documented_outcomes() -> None:
    # Around the decoder's depth limit every message gets a result or -32600, never a crash or -32603.
    seen = Seen()
    limit = _depth_limit()
    async with serve_raw(asking_server(seen)) as (peer, conn, _):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        kinds: set[str] = set()
        for depth in range(limit - 40, limit + 40, 2):
            await peer.send(_call_nested(depth, depth))
            reply = await peer.recv()
            if "result" in reply:
                assert reply["id"] == depth and text_of(reply["result"]) == "ok"
                kinds.add("result")
            else:
                assert reply["error"] == {"code": -32600, "message": "message is nested too deeply"}
                kinds.add("too deep")
        assert kinds == {"result", "too deep"}  # the sweep crossed the limit
        # an answer to a question, nested right around the limit, either counts or is refused
        for depth in range(limit - 40, limit + 40, 10):
            await peer.send(call_msg(f"q{depth}", "ask", {"timeout": 0.05}))
            q = await recv_elicitation(peer)
            nested = b"[" * depth + b"]" * depth
            await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":{"count":%s}}}'
                            % (q["id"], nested))
            got = [await peer.recv()]
            if "error" in got[0]:  # refused as too deep: the question then times out
                assert got[0]["error"]["code"] == -32600
                got += [await peer.recv(), await peer.recv()]
            results = [m for m in got if m.get("id") == f"q{depth}"]
            assert len(results) == 1
            assert "count" in text_of(results[0]["result"]) or "timeout" in text_of(results[0]["result"])
        assert conn.session.pending_count == 0
        assert (await peer.request("end", "ping"))["result"] == {}


# --- 2. arbitrary input --------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
ids = st.integers(-5, 5) | st.sampled_from(["a", "1", "init", ""]) | st.none() | st.booleans() | st.floats(0, 2)
methods = st.sampled_from([
    "ping", "tools/list", "tools/call", "initialize", "resources/list", "prompts/get", "completion/complete",
    "logging/setLevel", "elicitation/create", "notifications/cancelled", "notifications/progress",
    "notifications/initialized", "notifications/elicitation/complete", "nope", "",
]) | st.text(max_size=12)
tool_params = st.fixed_dictionaries(
    {"name": st.sampled_from(["echo", "ask", "nope", ""])},
    optional={"arguments": json_values, "_meta": json_values},
)
cancel_params = st.fixed_dictionaries({}, optional={"requestId": ids, "reason": json_values})
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | json_values,
        "id": ids,
        "method": methods | json_values,
        "params": tool_params | cancel_params | json_values,
        "result": json_values,
        "error": st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=8)}) | json_values,
    },
)


def _mutate(data: bytes, cuts: list[int]) -> bytes:
    out = bytearray(data)
    for c in cuts:
        if out:
            del out[c % len(out)]
    return bytes(out)


valid_messages = st.sampled_from([
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"t"}}',
    b'{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"count":1}}}',
    b'{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"x"}}',
])
hostile_messages = (
    st.binary(max_size=48)
    | json_values.map(msgspec.json.encode)
    | envelopes.map(msgspec.json.encode)
    | st.tuples(valid_messages, st.lists(st.integers(0, 200), max_size=4)).map(lambda t: _mutate(*t))
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(
    stream=st.lists(hostile_messages | st.sampled_from([b"\r", b" ", b"\n"]), max_size=8).map(b"\n".join),
    max_line=st.integers(1, 200),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_framer_and_decoder_on_arbitrary_bytes_give_only_documented_outcomes(
    stream: bytes, max_line: int, cuts: list[int]
) -> None:
    def run(pieces: list[bytes]) -> list[Any]:
        framer = LineFramer(max_line)
        out: list[Any] = []
        for piece in pieces:
            out += framer.feed(piece)
            assert framer.buffered <= max_line
        tail = framer.end()
        if tail is not None:
            out.append(tail)
        return out

    whole = run([stream])
    assert run(_chunks(stream, cuts)) == whole
    assert run([stream[i : i + 1] for i in range(len(stream))]) == whole  # byte by byte
    for line in whole:
        if isinstance(line, Oversized):
            continue
        assert b"\n" not in line and 0 < len(line) <= max_line and line.strip()
        try:
            message = jsonrpc.decode(line)
        except jsonrpc.InvalidMessage as exc:
            assert exc.code in (-32700, -32600)
            assert exc.id is None or type(exc.id) in (int, str)
        else:
            assert type(message) in (jsonrpc.Request, jsonrpc.Notification, jsonrpc.Response, jsonrpc.ErrorResponse)


@settings(max_examples=300, deadline=None)
@given(hostile_messages | st.lists(envelopes, max_size=4).map(msgspec.json.encode))
def test_decode_batch_on_arbitrary_bytes_gives_only_documented_outcomes(data: bytes) -> None:
    try:
        parts = jsonrpc.decode_batch(data)
    except jsonrpc.InvalidMessage as exc:
        assert exc.code in (-32700, -32600)
        return
    assert parts
    for part in parts:
        if isinstance(part, jsonrpc.InvalidMessage):
            assert part.code == -32600
        else:
            assert type(part) in (jsonrpc.Request, jsonrpc.Notification, jsonrpc.Response, jsonrpc.ErrorResponse)


@settings(max_examples=300, deadline=None)
@given(raw=(json_values | envelopes | tool_params).map(msgspec.json.encode))
def test_decode_params_raise_only_invalid_params(raw: bytes) -> None:
    for params_type in (InitializeParams, CallToolParams, CancelledParams, ProgressParams, ElicitResult):
        try:
            jsonrpc.decode_params(msgspec.Raw(raw), params_type)
        except McpError as exc:
            assert exc.code == -32602


# the restricted schema, and things near it
_prop = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "number", "integer", "boolean", "array", "object", "null"]) | json_values},
    optional={
        "title": st.text(max_size=6) | json_values,
        "description": st.text(max_size=6),
        "default": json_values,
        "enum": st.lists(st.text(max_size=3), max_size=4) | json_values,
        "enumNames": st.lists(st.text(max_size=3), max_size=4),
        "oneOf": st.lists(st.fixed_dictionaries({"const": st.text(max_size=3), "title": st.text(max_size=3)}),
                          max_size=3) | json_values,
        "items": st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(st.text(max_size=3), max_size=4)})
        | st.fixed_dictionaries({"anyOf": st.lists(st.fixed_dictionaries({"const": st.text(max_size=3)}), max_size=3)})
        | json_values,
        "format": st.sampled_from(["email", "uri", "date", "date-time", "ipv4"]) | json_values,
        "minLength": st.integers(-2, 5) | json_values,
        "maxLength": st.integers(-2, 5),
        "minimum": st.integers(-5, 5) | st.floats(allow_nan=False) | json_values,
        "maximum": st.integers(-5, 5) | st.floats(allow_nan=False),
        "minItems": st.integers(-1, 4),
        "maxItems": st.integers(-1, 4) | json_values,
        "$ref": st.text(max_size=4),
        "properties": json_values,
    },
)
schemas = st.fixed_dictionaries(
    {"type": st.just("object") | json_values, "properties": st.dictionaries(st.text(max_size=6), _prop, max_size=4)},
    optional={"required": st.lists(st.text(max_size=6), max_size=3) | json_values, "$defs": json_values},
) | json_values


@settings(max_examples=500, deadline=None)
@given(schema=schemas, content=json_values | st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_form_schemas_and_answers_raise_only_documented_errors(schema: Any, content: Any) -> None:
    try:
        form = forms.parse_schema(schema)
    except forms.FormDefinitionError:
        return
    # every field's default is a valid answer: filling defaults never creates an invalid value
    try:
        form.validate(form.fill_defaults({}))
    except forms.FormValidationError as exc:
        assert exc.constraint == "required", exc
    for version in ("2025-06-18", "2025-11-25", "2024-11-05"):
        with contextlib.suppress(forms.FormDefinitionError):
            form.schema_for(version)
    try:
        out = form.validate(content)
    except forms.FormValidationError as exc:
        assert exc.field is None or exc.field in {f.name for f in form.fields}
    else:
        assert set(out) <= {f.name for f in form.fields}
        form.build(content)
    if isinstance(content, dict):
        form.fill_defaults(content)  # never raises on a dict


@settings(max_examples=200, deadline=None)
@given(schema=schemas)
def test_compile_form_of_arbitrary_dicts_raises_only_form_definition_error(schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    try:
        form = forms.compile_form(schema)
    except forms.FormDefinitionError:
        return
    assert form.fields


@pytest.mark.anyio
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.lists(hostile_messages, min_size=1, max_size=25))
async def test_live_session_fed_garbage_keeps_answering_and_its_counters_add_up(
    anyio_backend: str, garbage: list[bytes]
) -> None:
    seen = Seen()
    with anyio.fail_after(20):
        async with serve_raw(asking_server(seen)) as (peer, conn, tap):
            await peer.initialize("2025-11-25")
            for data in garbage:
                await peer.send(data)
            await peer.send({"jsonrpc": "2.0", "id": "final-ping", "method": "ping"})
            stats = conn.session.stats
            replies: list[dict[str, Any]] = []

            def settled() -> bool:
                # every invalid message and every request (but those the garbage cancelled) is answered once
                expected = stats.invalid_messages + stats.requests_received - 1 - stats.cancelled_by_peer
                return any(r.get("id") == "final-ping" for r in replies) and len(replies) == expected

            while not settled():
                with anyio.move_on_after(0.01):
                    replies.append(await peer.recv())
            assert await peer.nothing_for(0.02)
            assert [r for r in replies if r.get("id") == "final-ping"] == [
                {"jsonrpc": "2.0", "id": "final-ping", "result": {}}
            ]
            # each message counted exactly once, in exactly one counter
            counted = stats.invalid_messages + stats.requests_received + stats.notifications_received
            counted += stats.responses_received
            assert counted == len(garbage) + 3  # initialize, initialized, final ping
            assert stats.unknown_responses == stats.responses_received  # we never asked anything
            for reply in replies:
                assert set(reply) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}, {"jsonrpc", "error"})
                if "error" in reply:
                    assert type(reply["error"]["code"]) is int and type(reply["error"]["message"]) is str
            assert conn.session.pending_count == 0
            await wait_until(lambda: conn.session.inflight_count == 0)
            tap.assert_no_leaks()


def test_decode_str_with_lone_surrogates_is_a_documented_error() -> None:
    # A str can hold what UTF-8 cannot encode. decode() accepts str, and documents InvalidMessage
    # as its only error.
    for text in ['{"jsonrpc":"2.0","id":1,"method":"\ud800"}', "\udfff"]:
        try:
            jsonrpc.decode(text)
        except jsonrpc.InvalidMessage as exc:
            assert exc.code in (-32700, -32600)


# --- 3. stray messages: harmless and counted ----------------------------------------------------------


async def test_stray_answers_and_notices_to_a_server_are_harmless_and_counted() -> None:
    seen = Seen()
    app = asking_server(seen)
    async with serve_raw(app) as (peer, conn, tap):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        stats = conn.session.stats

        # an answered question, then the same answer again, and near-misses of its id
        await peer.send(call_msg(1, "ask"))
        q1 = await recv_elicitation(peer)
        await peer.send({"jsonrpc": "2.0", "id": q1["id"], "result": {"action": "accept", "content": {"count": 1}}})
        assert text_of((await peer.recv())["result"]) == "Accepted(value=Seats(count=1))"
        await peer.send({"jsonrpc": "2.0", "id": q1["id"], "result": {"action": "accept", "content": {"count": 9}}})
        await peer.send({"jsonrpc": "2.0", "id": str(q1["id"]), "result": {"action": "decline"}})
        await peer.send({"jsonrpc": "2.0", "id": 10_000, "result": {"action": "decline"}})
        await peer.send({"jsonrpc": "2.0", "id": 10_001, "error": {"code": -1, "message": "stray"}})
        await peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "null id"}})
        await peer.send({"jsonrpc": "2.0", "error": {"code": -1, "message": "no id"}})

        # an answer to a question that timed out
        await peer.send(call_msg(2, "ask", {"timeout": 0.05}))
        q2 = await recv_elicitation(peer)
        got = [await peer.recv(), await peer.recv()]
        assert {m.get("id", m.get("method")) for m in got} == {2, "notifications/cancelled"}
        await peer.send({"jsonrpc": "2.0", "id": q2["id"], "result": {"action": "accept", "content": {"count": 2}}})

        # an answer to a question whose tool call the client cancelled
        await peer.send(call_msg(3, "ask"))
        q3 = await recv_elicitation(peer)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        note = await peer.recv()
        assert note["method"] == "notifications/cancelled" and note["params"]["requestId"] == q3["id"]
        await wait_until(lambda: seen.cancelled == 1)
        await peer.send({"jsonrpc": "2.0", "id": q3["id"], "result": {"action": "accept", "content": {"count": 3}}})

        # cancellations that name nothing running, completion notices and progress for nothing
        for request_id in (999, "3", 1, q1["id"], "init"):
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
            )
        for params in ({}, {"requestId": [1]}, {"requestId": None}, [1, 2], "x"):
            await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                         "params": {"elicitationId": "never-minted"}})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": "nobody", "progress": 1}})
        assert await app.complete_url_elicitation("never-minted") is False

        assert (await peer.request(4, "ping"))["result"] == {}
        assert await peer.nothing_for(0.1)  # none of the strays got an answer
        assert stats.responses_received == 9
        assert stats.unknown_responses == 8
        assert stats.timeouts == 1
        assert stats.cancelled_by_peer == 1
        assert stats.cancelled_by_us == 1  # the cancelled call's question
        assert stats.invalid_messages == 0
        assert stats.notifications_received == 1 + 1 + 5 + 5 + 2  # initialized, cancel of 3, strays
        assert seen.answers == [Accepted(Seats(count=1)), Cancelled("timeout")]
        assert conn.session.pending_count == 0 and conn.session.inflight_count == 0
        tap.assert_no_leaks()


async def test_stray_messages_to_a_client_are_harmless_and_counted() -> None:
    a, b = memory_pair()
    server = RawPeer(b)
    completed: list[str] = []

    async def fake_server() -> None:
        init = await server.recv()
        await server.send({"jsonrpc": "2.0", "id": init["id"], "result": HANDSHAKE})
        await server.recv()  # initialized
        call = await server.recv()
        for stray in (
            {"jsonrpc": "2.0", "id": 4242, "result": {}},
            {"jsonrpc": "2.0", "id": str(call["id"]), "result": {"content": []}},
            {"jsonrpc": "2.0", "id": 4243, "error": {"code": -1, "message": "stray"}},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "null id"}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call["id"]}},
            {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "nope"}},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p9", "progress": 1}},
        ):
            await server.send(stray)
        answer = {"jsonrpc": "2.0", "id": call["id"], "result": {"content": [{"type": "text", "text": "real"}]}}
        await server.send(answer)
        await server.send(answer)  # a duplicate response
        ping = await server.recv()
        await server.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        with anyio.fail_after(10):
            async with Client(a, on_elicitation_complete=completed.append) as client:
                assert (await client.call_tool("x")).text == "real"
                await client.ping()
                stats = client.session.stats
                assert stats.unknown_responses == 5  # 4242, "<id>", 4243, null id, the duplicate
                assert stats.cancelled_by_peer == 0
                assert stats.invalid_messages == 0
                assert completed == []
                assert client.session.pending_count == 0 and client.session.inflight_count == 0


async def test_url_completion_for_unknown_repeated_or_gone_ids_sends_nothing() -> None:
    app = Server("url")
    minted: list[str] = []

    @app.tool()
    async def link(ctx: Context) -> str:
        minted.append(ctx.url_elicitation("Pay", "https://pay.example/x").elicitation_id)
        return "minted"

    caps: dict[str, Any] = {"elicitation": {"url": {}}}
    async with serve_raw(app) as (peer, conn, _):
        await peer.initialize("2025-11-25", caps)
        assert text_of((await peer.request(1, "tools/call", {"name": "link", "arguments": {}}))["result"]) == "minted"
        assert await app.complete_url_elicitation("not-a-real-id") is False
        assert await app.complete_url_elicitation(minted[0]) is True
        note = await peer.recv()
        assert note["params"] == {"elicitationId": minted[0]}
        assert await app.complete_url_elicitation(minted[0]) is False  # repeated
        assert (await peer.request(2, "tools/call", {"name": "link", "arguments": {}}))["result"]
        await peer.transport.aclose()
        await wait_until(lambda: conn not in app.connections)
    assert await app.complete_url_elicitation(minted[1]) is False  # the connection is gone
    assert app._url_owners == {}


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        ({"action": "maybe"}, -32602),
        ({"action": "accept", "content": {"count": "many"}}, "tool error"),
        ({"action": "accept", "content": [1]}, -32602),
        ({"action": "accept"}, "tool error"),  # an empty answer to a form with a required field
        ({}, -32602),
        (5, -32602),
        ([], -32602),
    ],
)
async def test_malformed_answers_end_the_call_once_with_a_clear_error(result: Any, outcome: Any) -> None:
    seen = Seen()
    async with serve_raw(asking_server(seen)) as (peer, conn, tap):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        q = await recv_elicitation(peer)
        await peer.send({"jsonrpc": "2.0", "id": q["id"], "result": result})
        reply = await peer.recv()
        assert reply["id"] == 1
        if outcome == "tool error":
            assert reply["result"]["isError"] is True and "count" in text_of(reply["result"])
        else:
            assert reply["error"]["code"] == outcome
        assert seen.answers == [] and conn.session.pending_count == 0
        assert (await peer.request(2, "ping"))["result"] == {}
        tap.assert_no_leaks()


class _Quiet:
    """A dispatcher that answers every request with ``{}`` and ignores notifications."""

    async def handle_request(self, session: Session, request: jsonrpc.Request) -> Any:
        return {}

    def handle_notification(self, session: Session, notification: jsonrpc.Notification) -> None:
        pass




@contextlib.asynccontextmanager
async def _bare_session() -> AsyncIterator[tuple[Session, RawPeer, Any]]:
    """A session on a memory pair whose far end can be fed synchronously (``send_nowait``)."""
    to_us, from_peer = anyio.create_memory_object_stream[bytes](100)
    to_peer, from_us = anyio.create_memory_object_stream[bytes](100)
    session = Session(MemoryTransport(to_peer, from_peer, MiB), _Quiet())
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        try:
            yield session, RawPeer(MemoryTransport(to_us, from_us, MiB)), to_us
        finally:
            tg.cancel_scope.cancel()


async def _cancelled_waiter(session: Session, tg: anyio.abc.TaskGroup, outcome: list[str]) -> anyio.CancelScope:
    scope = anyio.CancelScope()

    async def waiter() -> None:
        with scope:
            try:
                await session.request("m", timeout=None)
                outcome.append("answered")
            except ConnectionClosed:
                outcome.append("closed")
        if scope.cancelled_caught:
            outcome.append("cancelled")

    tg.start_soon(waiter)
    return scope


async def test_close_in_the_same_tick_as_a_cancelled_waiter_ends_it_once() -> None:
    # Found by the soak (asyncio): waking a waiter whose future its cancellation had already cancelled
    # raised InvalidStateError and ended the connection (fixed in 6013911).
    outcome: list[str] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg, _bare_session() as (session, peer, _):
            scope = await _cancelled_waiter(session, tg, outcome)
            await peer.recv()
            scope.cancel()
            session.close()  # before the cancelled waiter has run again
            await session.wait_closed()
            await wait_until(lambda: bool(outcome))
    assert outcome == ["cancelled"]
    assert session.holds_nothing()


async def test_answer_in_the_same_tick_as_the_callers_cancel_is_harmless() -> None:
    # Found by the soak (asyncio): waking a waiter whose future its cancellation had already cancelled
    # raised InvalidStateError and ended the connection (fixed in 6013911).
    outcome: list[str] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg, _bare_session() as (session, peer, feed):
            scope = await _cancelled_waiter(session, tg, outcome)
            req = await peer.recv()
            feed.send_nowait(msgspec.json.encode({"jsonrpc": "2.0", "id": req["id"], "result": {}}))
            scope.cancel()  # the caller gives up just as its answer is being read
            await wait_until(lambda: bool(outcome))
            assert outcome == ["cancelled"]
            # the connection survives; the peer may have been told of the cancel (if the waiter ran first)
            await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            while (msg := await peer.recv()).get("id") != "p":
                assert msg["method"] == "notifications/cancelled" and msg["params"]["requestId"] == req["id"]
            assert msg["result"] == {}
            assert session.pending_count == 0 and not session.closed
            stats = session.stats
            assert stats.cancelled_by_us + stats.responses_received - stats.unknown_responses == 1


# --- 4. no internal detail on the wire ---------------------------------------------------------------

SECRET_PATH = "/srv/secret/keys/prod.pem"


def crashing_server() -> Server:
    app = Server("crashy")

    @app.tool()
    async def read_key() -> str:
        raise RuntimeError(f"cannot open {SECRET_PATH}: permission denied")

    @app.tool()
    async def os_error() -> str:
        raise OSError(2, "No such file or directory", "/etc/shadow")

    @app.tool()
    async def key_error() -> str:
        return {"a": 1}["prod.pem"]  # type: ignore[return-value]

    @app.tool()
    async def unencodable() -> Any:
        return {"x": object()}

    @app.resource("file:///config")
    async def config() -> str:
        raise RuntimeError(f"cannot read {SECRET_PATH}")

    @app.prompt()
    async def greet(name: str) -> str:
        raise KeyError(SECRET_PATH)

    @app.completion
    async def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, str]) -> list[str]:
        raise OSError(f"{SECRET_PATH} vanished")

    def roots_changed(conn: ServerConnection) -> None:
        raise RuntimeError(SECRET_PATH)

    app.on_roots_changed = roots_changed
    return app


async def test_tool_exceptions_become_generic_tool_errors_without_internal_text() -> None:
    async with serve_raw(crashing_server()) as (peer, _, tap):
        await peer.initialize()
        for i, name in enumerate(["read_key", "os_error", "key_error"]):
            reply = await peer.request(i, "tools/call", {"name": name, "arguments": {}})
            assert reply["result"]["isError"] is True
            assert text_of(reply["result"]) == f"tool {name!r} failed with an internal error"
        tap.assert_no_leaks()


async def test_handler_crashes_are_internal_error_without_detail() -> None:
    internal = {"code": -32603, "message": "internal error"}
    async with serve_raw(crashing_server()) as (peer, _, tap):
        await peer.initialize()
        assert (await peer.request(1, "tools/call", {"name": "unencodable", "arguments": {}}))["error"] == internal
        assert (await peer.request(2, "resources/read", {"uri": "file:///config"}))["error"] == internal
        reply = await peer.request(3, "prompts/get", {"name": "greet", "arguments": {"name": "x"}})
        assert reply["error"] == internal
        reply = await peer.request(4, "completion/complete", {
            "ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "x"}})
        assert reply["error"] == internal
        # a crashing notification callback is logged, and nothing is sent
        await peer.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        assert (await peer.request(5, "ping"))["result"] == {}
        assert await peer.nothing_for(0.05)
        tap.assert_no_leaks()


async def test_client_handler_crash_reaches_the_server_as_internal_error_only() -> None:
    seen = Seen()

    async def handler(q: ElicitationRequest) -> Any:
        raise RuntimeError(f"could not render the form from {SECRET_PATH}")

    async def sampler(params: Any) -> Any:
        raise OSError(SECRET_PATH)

    app = asking_server(seen)

    @app.tool()
    async def sample(ctx: Context) -> str:
        try:
            await ctx.sample("hi", max_tokens=5)
        except McpError as exc:
            return f"{exc.code}: {exc.message}"
        return "no error"  # pragma: no cover

    a, b = memory_pair()
    client_tap = Tap(b)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(client_tap, elicitation_handler=handler, sampling_handler=sampler) as client:
            # The client's error answer ends the call with a tool error; only its generic text travels.
            asked = await client.call_tool("ask")
            assert asked.is_error is True
            assert "could not answer the question (error -32603: internal error)" in asked.text
            assert (await client.call_tool("sample")).text == "-32603: internal error"
        tg.cancel_scope.cancel()
    client_tap.assert_no_leaks()


def test_guards_against_secrets_in_forms_and_unsafe_urls_exist() -> None:
    # Pointers for docs/guarantees.md; the behaviour is tested in test_forms.py, test_elicitation.py
    # and test_url_mode.py. Here: the guards are on by default.
    class Login(msgspec.Struct):
        user: str
        password: str

    with pytest.raises(forms.SensitiveFieldError):
        forms.compile_form(Login)
    from minimcp.wire.urls import InvalidElicitationUrl, check_elicitation_url

    for url in ("javascript:alert(1)", "http://evil.example/", "https://user:pw@bank.example/", "file:///etc/passwd"):
        with pytest.raises(InvalidElicitationUrl):
            check_elicitation_url(url)


# --- 5. regressions found by the fuzzer -----------------------------------------------------------------



async def test_fuzz_non_utf8_result_to_a_client_call_is_an_mcp_error() -> None:
    # found by fuzz target "jsonrpc" (crash jsonrpc-1506129e7762deb6: a response whose result has b"\x8b")
    a, b = memory_pair()
    server = RawPeer(b)

    async def fake_server() -> None:
        init = await server.recv()
        await server.send({"jsonrpc": "2.0", "id": init["id"], "result": HANDSHAKE})
        await server.recv()
        call = await server.recv()
        bad = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\xff"}]}}'
        await server.send(bad % call["id"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        with anyio.fail_after(10):
            async with Client(a) as client:
                with pytest.raises(McpError) as info:
                    await client.call_tool("x")
                assert info.value.code == -32602


async def test_fuzz_non_utf8_answer_to_a_question_ends_the_call_like_other_malformed_answers() -> None:
    seen = Seen()
    async with serve_raw(asking_server(seen)) as (peer, _, tap):
        await peer.initialize("2025-11-25", ELICIT_CAPS)
        await peer.send(call_msg(1, "ask"))
        q = await recv_elicitation(peer)
        await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":{"count":1,"x":"\xff"}}}'
                        % q["id"])
        reply = await peer.recv()
        assert reply["id"] == 1 and reply["error"]["code"] == -32602  # as for {"action": "maybe"}
        tap.assert_no_leaks()


async def test_fuzz_non_utf8_tool_arguments_are_not_an_internal_error() -> None:
    async with serve_raw(asking_server(Seen())) as (peer, _, _tap):
        await peer.initialize("2025-11-25")
        await peer.send(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"\xff"}}}'
        )
        reply = await peer.recv()
        # bad arguments are the caller's mistake: a tool error naming it, or -32602; never -32603
        assert reply.get("result", {}).get("isError") is True or reply["error"]["code"] == -32602, reply


def test_fuzz_batch_element_with_non_utf8_string_is_reported_per_element() -> None:
    # found by fuzz target "jsonrpc" (jsonrpc-7298abd27345da98): documented, not a bug -- the array is
    # skimmed raw, so an element whose strings are not UTF-8 is reported as that element's -32700.
    parts = jsonrpc.decode_batch(b'[{"jsonrpc":"2.0","id":1,"method":"\xca"},{"jsonrpc":"2.0","method":"n"}]')
    assert isinstance(parts[0], jsonrpc.InvalidMessage) and parts[0].code == -32700
    assert parts[1] == jsonrpc.Notification("n")


def test_fuzz_oracles_hold_on_seed_inputs() -> None:
    """The fuzz harness's targets accept their own seed corpus (keeps fuzz/fuzz_targets.py honest)."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_targets.py"
    spec = importlib.util.spec_from_file_location("minimcp_fuzz_targets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    for target, seeds in module.SEEDS.items():
        for seed in seeds:
            module.TARGETS[target](seed)



# --- 6. WebSocket: output, slots and text that follow the attacker -----------------------------------


async def test_websocket_ping_flood_without_reading_stops_the_server_reading_and_nothing_is_lost() -> None:
    """Issue 15 (4): pings sent by a client that never reads used to queue a pong each without bound."""
    from websockets.frames import Frame, Opcode

    from minimcp.transports.websocket import WebSocketTransport
    from tests.helpers.websocket import INIT, RawWs, only_connection, serving

    room = 64 * 1024
    # one chunk read past the bound can add at most its own size in pongs (a pong is smaller than its ping)
    bound = room + 65536 + 1024
    limits = Limits(stream_buffer_bytes=room, ping_interval=None, initialize_timeout=None, idle_timeout=None)
    server = Server("flood", limits=limits)
    with anyio.fail_after(120):
        async with serving(server) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
            await raw.send(INIT)
            assert (await raw.recv())["id"] == "init"
            transport = only_connection(server).session.transport
            assert isinstance(transport, WebSocketTransport)
            per_blob = 500
            for _ in range(per_blob):
                raw.protocol.send_ping(b"p" * 125)  # 131 bytes on the wire, a 127-byte pong back
            blob = b"".join(raw.protocol.data_to_send())
            offered_cap = 64 * MiB
            sent = peak = 0
            stop = False
            flood_done = anyio.Event()

            async def flood() -> None:
                nonlocal sent
                while not stop and len(blob) * sent // per_blob < offered_cap:
                    await raw.stream.send(blob)  # never cancelled: frames stay whole
                    sent += per_blob
                flood_done.set()

            pongs = 0
            reply: dict[str, Any] | None = None

            async def drain() -> None:
                nonlocal pongs, reply
                while reply is None:
                    raw.protocol.receive_data(await raw.stream.receive())
                    for event in raw.protocol.events_received():
                        assert isinstance(event, Frame)  # (the handshake is over)
                        if event.opcode is Opcode.PONG:
                            pongs += 1
                        elif event.opcode is Opcode.TEXT:
                            reply = msgspec.json.decode(event.data)

            async with anyio.create_task_group() as tg:
                tg.start_soon(flood)
                # Until the client is stuck because the server stopped reading (its unsent output is
                # over the bound), or it has offered 64 MiB.
                last, still = -1, 0
                while not (still >= 100 and transport._unsent > room) and not flood_done.is_set():
                    await anyio.sleep(0.01)
                    peak = max(peak, transport._unsent)
                    still = still + 1 if sent == last else 0
                    last = sent
                assert not flood_done.is_set(), "the server kept reading pings it could not answer"
                assert peak <= bound, f"{peak} bytes of unsent output (bound {bound})"
                # The client reads again: every ping is answered and the session goes on.
                stop = True
                tg.start_soon(drain)
                await flood_done.wait()
                raw.protocol.send_text(msgspec.json.encode({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
                await raw.flush()
            assert reply == {"jsonrpc": "2.0", "id": 99, "result": {}}
            assert pongs == sent  # the reply comes after every pong: nothing was dropped
            assert peak <= bound


@pytest.mark.parametrize("fragmented", [False, True])
async def test_websocket_text_that_is_not_utf8_closes_with_1007(fragmented: bool) -> None:
    """Issue 15 (11): RFC 6455 8.1 -- invalid UTF-8 in a text message fails the connection (not -32700)."""
    from tests.helpers.websocket import RawWs, serving

    server = Server("text")
    bad = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}'
    with anyio.fail_after(20):
        async with serving(server) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
            # valid UTF-8 that is not JSON is still a JSON-RPC parse error; the connection stays
            raw.protocol.send_text("é, not json".encode())
            await raw.flush()
            assert (await raw.recv())["error"]["code"] == -32700
            if fragmented:  # the bad byte sequence is split over two frames
                cut = bad.index(b"\xff") + 1
                raw.protocol.send_text(bad[:cut], fin=False)
                raw.protocol.send_continuation(bad[cut:], fin=True)
            else:
                raw.protocol.send_text(bad)
            await raw.flush()
            assert await raw.close_code() == 1007
            assert not any(f.opcode.name == "TEXT" for f in raw.frames)  # no -32700 answer for it
        await wait_until(lambda: not server.connections, 10)


async def test_websocket_silent_connection_is_closed_and_frees_its_slot() -> None:
    """Issue 15 (5): a connection that never sends a request no longer holds a max_connections slot."""
    from minimcp.transports.websocket import websocket_client
    from tests.helpers.websocket import RawWs, serving

    server = Server("slots", limits=Limits(initialize_timeout=2))
    with anyio.fail_after(30):
        async with (
            serving(server, max_connections=1, close_timeout=1) as url,
            RawWs.connect(url, subprotocols=["mcp"]) as silent,
            # The only slot is taken: a real client waits in the listen backlog meanwhile.
            websocket_client(url, open_timeout=25) as transport,
            Client(transport) as client,
        ):
            await client.ping()  # the silent connection's slot went to the waiting client
            assert await silent.close_code() == 1008  # it was closed ("no request in time")
