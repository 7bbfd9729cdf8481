"""minimcp's HTTP/1.1 server against raw sockets: ASGI semantics, its bounds and hostile input, on asyncio and trio."""

from __future__ import annotations

import contextlib
import gc
import socket
import sys
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import pytest

from minimcp import Limits
from minimcp.core._backend import backend_name
from minimcp.transports.asgi_server import bind
from minimcp.transports.h1_server import END_RECEIVE, PARK, RECEIVE_ENDED, SEND_NOW, H1Server
from minimcp.transports.http import _asgi
from tests.helpers.h1 import until_closed

h11 = pytest.importorskip("h11")

App = Callable[[Any, Any, Any], Awaitable[None]]


class Recorder:
    """An ASGI app that reads the whole body, records what it received, and answers ``200`` with the body."""

    def __init__(self) -> None:
        self.scopes: list[Any] = []
        self.messages: list[Any] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        body = b""
        while True:
            message = await receive()
            self.messages.append(message)
            if message["type"] == "http.disconnect":
                return
            body += message["body"]
            if not message["more_body"]:
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})
        self.messages.append(await receive())  # the end of the response: http.disconnect at once


@contextlib.asynccontextmanager
async def running(app: App, *, use_watch: bool = True, **limits: Any) -> AsyncIterator[tuple[int, H1Server]]:
    sock = bind("127.0.0.1", 0)
    server = H1Server(app, Limits(**limits), use_watch=use_watch)
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve, sock, stop, 1.0)
            yield int(sock.getsockname()[1]), server
            stop.set()
    finally:
        sock.close()


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data``, then read until the server closes."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        return await until_closed(stream)


async def drained(server: H1Server) -> None:
    """Wait until the server holds no connection (nothing left behind)."""
    with anyio.fail_after(5):
        while server.connections:  # noqa: ASYNC110 - the server drops them on its own
            await anyio.sleep(0.01)


GET = b"GET /p HTTP/1.1\r\nhost: x\r\n\r\n"

async def open_response(receive: Any, send: Any) -> None:
    """Read the (empty) body, start a response and send its first part (the response stays open)."""
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"a", "more_body": True})


async def stop_while_open(app: App, use_watch: bool, waiting: anyio.Event) -> H1Server:
    """Serve ``app`` (a graceful time of 0.2 s), send it a GET and stop the server once ``waiting`` is set; the client
    reads until the server closes. Returns the stopped server."""
    sock = bind("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    server = H1Server(app, Limits(), use_watch=use_watch)
    stop = anyio.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve, sock, stop, 0.2)
            async with await anyio.connect_tcp("127.0.0.1", port) as client:
                await client.send(GET)
                await waiting.wait()
                stop.set()
                await until_closed(client)
    sock.close()
    return server


#: a response's wait for its client to leave: the server's ReadinessWatch (trio on Linux), or the backend's own wait
#: (trio elsewhere, woken by notify_closing; asyncio always)
WAITS = pytest.mark.parametrize("use_watch", [True, False], ids=["watch", "own-wait"])


async def test_scope_body_keep_alive_pipelining_and_disconnect_after_the_response() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app) as (port, server):
            request = b"POST /a%20b/c?x=1&y=%20 HTTP/1.1\r\nHost: x\r\nX-Thing: V\r\ncontent-length: 5\r\n\r\nhello"
            answer = await exchange(port, request + GET + b"GET /last HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3, answer
            assert b"content-length: 5\r\n\r\nhello" in answer
            first = app.scopes[0]
            assert first["type"] == "http"
            assert first["asgi"] == {"version": "3.0", "spec_version": "2.3"}
            assert (first["http_version"], first["method"], first["scheme"]) == ("1.1", "POST", "http")
            assert (first["path"], first["raw_path"], first["query_string"]) == ("/a b/c", b"/a%20b/c", b"x=1&y=%20")
            assert first["root_path"] == ""
            assert (b"x-thing", b"V") in first["headers"] and (b"host", b"x") in first["headers"]
            assert first["client"][0] == "127.0.0.1" and first["server"] == ("127.0.0.1", port)
            assert [s["path"] for s in app.scopes] == ["/a b/c", "/p", "/last"]
            # each request: its body, then http.disconnect once its response is complete
            kinds = [m["type"] for m in app.messages]
            assert kinds == ["http.request", "http.disconnect"] * 3
            await drained(server)


async def test_a_chunked_streaming_response_goes_out_unbuffered() -> None:
    go_on = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await go_on.wait()
        await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": False})

    with anyio.fail_after(10):
        async with running(app) as (port, _), await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(GET)
            got = b""
            while b"data: 1\n\n" not in got:
                got += await stream.receive()
            assert b"transfer-encoding: chunked" in got.lower() and b"data: 2" not in got
            go_on.set()
            while not got.endswith(b"0\r\n\r\n"):
                got += await stream.receive()


async def test_trickled_headers_are_closed_at_the_header_timeout_and_not_extended() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app, http_header_timeout=0.5) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                began = anyio.current_time()
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await stream.send(b"GET / HTTP/1.1\r\n")
                    for _ in range(40):  # one header line every 0.1 s: never complete within 4 s
                        await anyio.sleep(0.1)
                        await stream.send(b"x-a: b\r\n")
                        if not server.connections:
                            break
                assert await until_closed(stream) == b""
                assert anyio.current_time() - began < 2.5
            assert app.scopes == []
            # an idle keep-alive connection is closed by the same deadline after its response
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                answer = await until_closed(stream)
                assert answer.startswith(b"HTTP/1.1 200 ")
            await drained(server)


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 9000 + b"\r\n\r\n", b"431", id="whole-oversized"),
        pytest.param(b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 9000, b"431", id="incomplete-oversized"),
        pytest.param(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n"
            b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n", b"400", id="cl-and-te"),
        pytest.param(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\ncontent-length: 5\r\n\r\nhello", b"400",
            id="two-content-lengths"),
        pytest.param(b"GET / HTTP/1.1\r\nhost: x\r\nx-bad\x01: v\r\n\r\n", b"400", id="invalid-header-name"),
        pytest.param(b"GET / HTTP/1.1\r\nhost: x\r\nx-bad: v\x00w\r\n\r\n", b"400", id="invalid-header-value"),
        pytest.param(b"GET / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\n", b"501", id="unknown-coding"),
        pytest.param(b"NOT HTTP AT ALL\r\n\r\n", b"400", id="garbage"),
    ],
)
async def test_a_bad_head_is_refused_and_the_connection_closed(request_bytes: bytes, status: bytes) -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app, max_http_head_bytes=4096) as (port, server):
            answer = await exchange(port, request_bytes)
            assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:80]
            assert b"connection: close" in answer.lower()
            assert app.scopes == []  # the app never saw it (no smuggled request either)
            await drained(server)


async def test_a_bad_chunk_size_mid_body_is_refused_and_the_app_sees_a_disconnect() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app) as (port, server):
            answer = await exchange(
                port, b"POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\nxx\r\n"
            )
            assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
            assert [m["type"] for m in app.messages] == ["http.request", "http.disconnect"]
            assert app.messages[0]["body"] == b"abc"
            await drained(server)


async def test_connections_beyond_the_cap_get_503_and_close() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app, max_http_connections=3, http_header_timeout=30.0) as (port, server):
            idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(3)]
            try:
                while len(server.connections) < 3:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                for _ in range(20):  # a flood: each answered 503 and closed, the open ones untouched
                    answer = await exchange(port, GET)
                    assert answer == b"" or answer.startswith(b"HTTP/1.1 503 "), answer[:80]
                assert len(server.connections) == 3 and app.scopes == []
                await idle.pop().aclose()
                await drained_to(server, 2)
                assert (await exchange(port, GET.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n"))).startswith(
                    b"HTTP/1.1 200 "
                )
            finally:
                for stream in idle:
                    await stream.aclose()
            await drained(server)


async def drained_to(server: H1Server, count: int) -> None:
    with anyio.fail_after(5):
        while len(server.connections) > count:  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def test_a_client_that_never_reads_a_stream_stalls_the_write_which_is_cancelled_and_closes() -> None:
    outcome: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        chunk = b"data: " + b"x" * 65536 + b"\n\n"
        while True:
            with anyio.move_on_after(0.3) as timeout:  # the app's stream_write_timeout
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if timeout.cancelled_caught:
                outcome.append("stalled")
                break
        try:
            await send({"type": "http.response.body", "body": b"more", "more_body": True})
        except OSError:
            outcome.append("closed")

    with anyio.fail_after(20):
        async with running(app) as (port, server), await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(GET)
            await drained(server)  # it never reads: the server gives up on it and closes
            assert outcome == ["stalled", "closed"]


async def test_a_client_vanishing_mid_body_is_a_disconnect_and_leaves_nothing() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n0123456789")
                while not app.messages:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            await drained(server)
            assert [m["type"] for m in app.messages] == ["http.request", "http.disconnect"]
            assert app.messages[0] == {"type": "http.request", "body": b"0123456789", "more_body": True}


@WAITS
async def test_a_client_vanishing_mid_response_is_a_disconnect_and_leaves_nothing(use_watch: bool) -> None:
    seen: list[Any] = []
    started = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(await receive())  # the (empty) body
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        started.set()
        seen.append(await receive())  # waits: the client leaves
        try:  # and send_now after the client left raises too
            scope["extensions"][SEND_NOW]({"type": "http.response.body", "body": b"more", "more_body": True})
        except OSError:
            seen.append({"type": "send_now raised"})

    with anyio.fail_after(10):
        async with running(app, use_watch=use_watch) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                await started.wait()
            await drained(server)
            assert [m["type"] for m in seen] == ["http.request", "http.disconnect", "send_now raised"]


@WAITS
async def test_a_waiting_receive_ends_when_another_task_ends_the_response_and_keeps_a_pipelined_request(
    use_watch: bool,
) -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        if scope["path"] == "/last":
            await send({"type": "http.response.body", "body": b""})
            return

        async def finish() -> None:  # the response ends in another task while receive() waits
            await anyio.sleep(0.2)
            await send({"type": "http.response.body", "body": b"b"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(finish)
            seen.append(await receive())

    with anyio.fail_after(10):
        async with running(app, use_watch=use_watch) as (port, server):
            pipelined = GET + b"GET /last HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
            answer = await exchange(port, pipelined)
            assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2 and b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n" in answer, answer
            assert [m["type"] for m in seen] == ["http.request", "http.disconnect", "http.request"]
            await drained(server)


async def test_a_burst_of_connects_is_accepted_in_one_turn() -> None:
    app = Recorder()
    with anyio.fail_after(10):
        async with running(app, http_header_timeout=30.0) as (port, server):
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]  # all in the backlog
            try:
                for _ in range(10):  # a few turns of the loop, not one per connection
                    await anyio.lowlevel.checkpoint()
                assert len(server.connections) == 50
            finally:
                for client in clients:
                    client.close()
            await drained(server)


async def test_a_body_is_read_only_as_the_app_asks_one_read_at_a_time() -> None:
    proceed = anyio.Event()
    pieces: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await proceed.wait()
        while True:
            message = await receive()
            pieces.append(len(message["body"]))
            if not message["more_body"]:
                break
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    size = 8 * 1024 * 1024
    with anyio.fail_after(20):
        async with running(app) as (port, _), await anyio.connect_tcp("127.0.0.1", port) as stream:
            head = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % size
            sent = 0
            with anyio.move_on_after(1):  # the app reads nothing yet: the client's sends soon block
                await stream.send(head)
                while sent < size:
                    await stream.send(b"x" * 65536)
                    sent += 65536
            assert sent < size  # backpressure reached the client
            proceed.set()
            while sent < size:
                await stream.send(b"x" * 65536)
                sent += 65536
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive()
            assert answer.startswith(b"HTTP/1.1 204 ")
            assert sum(pieces) == size and max(pieces) <= 65536


async def test_stop_closes_idle_connections_and_lets_a_response_under_way_end() -> None:
    finish = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        await finish.wait()
        await send({"type": "http.response.body", "body": b"b"})

    sock = bind("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    server = H1Server(app, Limits())
    stop = anyio.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve, sock, stop, 5.0)
            idle = await anyio.connect_tcp("127.0.0.1", port)
            busy = await anyio.connect_tcp("127.0.0.1", port)
            await busy.send(GET)
            got = b""
            while not got.endswith(b"1\r\na\r\n"):
                got += await busy.receive()
            stop.set()
            assert await until_closed(idle) == b""  # closed at once
            finish.set()
            rest = await until_closed(busy)
            assert rest.endswith(b"1\r\nb\r\n0\r\n\r\n"), rest
            await idle.aclose()
            await busy.aclose()
    sock.close()
    assert not server.connections


@WAITS
async def test_stop_cancels_a_response_still_waiting_for_its_client_after_the_graceful_time(
    use_watch: bool, caplog: pytest.LogCaptureFixture
) -> None:
    waiting = anyio.Event()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        waiting.set()
        try:
            await receive()  # the client stays, the response never ends: the stop cancels this
        except BaseException:
            seen.append("cancelled")
            raise

    server = await stop_while_open(app, use_watch, waiting)
    assert seen == ["cancelled"] and not server.connections
    assert not [r for r in caplog.records if r.levelno >= 40], caplog.text  # no error: a cancellation, not a failure


@WAITS
async def test_a_receive_of_another_task_still_waiting_when_the_connection_closes_gets_a_disconnect(
    use_watch: bool,
) -> None:
    # The app returns with its response unended while a task of its own still waits in receive(): the
    # connection closes, and that receive() returns http.disconnect (nothing left waiting on a closed socket).
    seen: list[str] = []
    box: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)

        async def stray() -> None:
            seen.append((await receive())["type"])

        box["tg"].start_soon(stray)
        conn = receive.__self__
        while conn.waiter is None:
            await anyio.lowlevel.checkpoint()
        # returns without ending the response: the server closes the connection

    sock = bind("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    server = H1Server(app, Limits(), use_watch=use_watch)
    stop = anyio.Event()
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                box["tg"] = tg
                await tg.start(server.serve, sock, stop, 1.0)
                async with await anyio.connect_tcp("127.0.0.1", port) as client:
                    await client.send(GET)
                    await until_closed(client)
                while not seen:  # noqa: ASYNC110 - the stray task records it
                    await anyio.sleep(0.01)
                stop.set()
    finally:
        sock.close()
    assert seen == ["http.disconnect"]


@WAITS
async def test_a_receive_shielded_from_the_stop_still_ends_when_its_client_leaves(use_watch: bool) -> None:
    waiting = anyio.Event()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        waiting.set()
        with anyio.CancelScope(shield=True), anyio.fail_after(10):  # (its own bound: the stop cannot end it)
            seen.append((await receive())["type"])

    sock = bind("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    server = H1Server(app, Limits(), use_watch=use_watch)
    stop = anyio.Event()
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                await tg.start(server.serve, sock, stop, 0.1)
                client = await anyio.connect_tcp("127.0.0.1", port)
                await client.send(GET)
                await waiting.wait()
                stop.set()
                while server.watch is not None and not server.watch._epoll.closed:  # noqa: ASYNC110 - run has ended
                    await anyio.sleep(0.01)
                await client.aclose()  # the client leaves: the shielded receive() hears of it
    finally:
        sock.close()
    assert seen == ["http.disconnect"]


# -- send_now (the scope's minimcp.send_now extension) -------------------------------------------------------

BIG = 1024 * 1024  # a chunk; a few of them pass what loopback's socket buffers take at once


def body_of(answer: bytes) -> list[bytes]:
    """The bodies of the responses in ``answer`` (h11 undoes the framing)."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(answer)
    bodies: list[bytes] = []
    data = b""
    while True:
        event = conn.next_event()
        if type(event) is h11.Data:
            data += event.data
        elif type(event) is h11.EndOfMessage:
            bodies.append(data)
            data = b""
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                break
            conn.start_next_cycle()
            conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
            conn.send(h11.EndOfMessage())
        elif event is h11.NEED_DATA or type(event) is h11.ConnectionClosed or event is h11.PAUSED:
            break
    return bodies


async def queue_unread(scope: Any, receive: Any, send: Any) -> Any:
    """Start a response and hand send_now more than loopback takes at once (24 MiB); returns send_now."""
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    send_now = scope["extensions"][SEND_NOW]
    for _ in range(24):
        send_now({"type": "http.response.body", "body": b"x" * BIG, "more_body": True})
    return send_now


def connection_of(server: H1Server) -> Any:
    (conn,) = server.connections
    return conn


def test_the_extensions_have_the_names_the_app_looks_for() -> None:
    assert SEND_NOW == _asgi.SEND_NOW
    assert END_RECEIVE == _asgi.END_RECEIVE
    assert PARK == _asgi.PARK


@WAITS
async def test_end_receive_ends_a_waiting_receive_and_a_write_waiting_for_room_goes_on(use_watch: bool) -> None:
    # The app stops reading a response (another reader took its stream, say) while a write of it waits for a
    # client that reads later: receive() returns, the write is not disturbed (on trio both waits are woken).
    seen: list[Any] = []
    ended = anyio.Event()
    box: dict[str, H1Server] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        end_receive = scope["extensions"][END_RECEIVE]
        end_receive()  # no receive() waits: nothing happens
        await send({"type": "http.response.start", "status": 200, "headers": []})

        async def write_big() -> None:
            await send({"type": "http.response.body", "body": b"x" * (24 * BIG), "more_body": True})
            seen.append("written")

        async def end_both_waits() -> None:
            conn = connection_of(box["server"])
            while not (conn.waiting_write and conn.waiter is not None):  # noqa: ASYNC110 - the server's state
                await anyio.sleep(0.01)
            end_receive()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_big)
            tg.start_soon(end_both_waits)
            seen.append((await receive())["type"])
            ended.set()
        await send({"type": "http.response.body", "body": b"end"})
        seen.append((await receive())["type"])

    with anyio.fail_after(20):
        async with running(app, use_watch=use_watch) as (port, server):
            box["server"] = server
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b"GET /p HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                await ended.wait()  # nothing read so far: the write still waits for room
                answer = await until_closed(stream)
            assert body_of(answer) == [b"x" * (24 * BIG) + b"end"]
            assert seen == [RECEIVE_ENDED, "written", "http.disconnect"]
            await drained(server)


async def test_send_now_keeps_what_the_kernel_does_not_take_and_writes_it_in_order_before_the_next_request() -> None:
    queued = anyio.Event()
    backlogs: list[int] = []
    box: dict[str, H1Server] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["path"] == "/last":
            await send({"type": "http.response.body", "body": b"last"})
            return
        send_now = scope["extensions"][SEND_NOW]
        for i in range(12):
            send_now({"type": "http.response.body", "body": bytes([65 + i]) * BIG, "more_body": True})
        backlogs.append(len(connection_of(box["server"]).backlog))
        queued.set()
        await send({"type": "http.response.body", "body": b"async", "more_body": True})  # behind the backlog
        send_now({"type": "http.response.body", "body": b"end", "more_body": False})
        assert (await receive())["type"] == "http.disconnect"

    with anyio.fail_after(20):
        async with running(app, stream_buffer_bytes=64 * BIG) as (port, server):
            box["server"] = server
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET + b"GET /last HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                await queued.wait()  # nothing read so far: the kernel could not take it all
                answer = await until_closed(stream)
            assert backlogs[0] > 0
            expected = b"".join(bytes([65 + i]) * BIG for i in range(12)) + b"asyncend"
            assert body_of(answer) == [expected, b"last"]
            await drained(server)


async def test_send_now_to_a_client_that_does_not_read_closes_it_at_the_bound() -> None:
    outcome: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        send_now = scope["extensions"][SEND_NOW]
        sent = 0
        try:
            while sent < 64 * BIG:
                send_now({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})
                sent += 65536
        except OSError:
            outcome.append("closed")
        outcome.append((await receive())["type"])
        with pytest.raises(OSError):
            send_now({"type": "http.response.body", "body": b"more", "more_body": True})

    with anyio.fail_after(20):
        async with running(app, stream_buffer_bytes=256 * 1024) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                await drained(server)  # it never reads: closed once the backlog would pass the bound
            assert outcome == ["closed", "http.disconnect"]


async def test_send_now_to_a_client_that_does_not_read_closes_it_at_the_write_timeout() -> None:
    outcome: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await queue_unread(scope, receive, send)
        began = anyio.current_time()
        try:
            await send({"type": "http.response.body", "body": b"end", "more_body": False})  # waits for the backlog
        except OSError:
            outcome.append("closed")
        outcome.append(anyio.current_time() - began >= 0.25)
        outcome.append((await receive())["type"])

    with anyio.fail_after(20):
        async with running(app, stream_buffer_bytes=64 * BIG, stream_write_timeout=0.3) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                await drained(server)  # it never reads: closed once nothing was taken for 0.3 s
            assert outcome == ["closed", True, "http.disconnect"]


async def test_a_response_ended_by_send_now_with_a_backlog_closes_at_the_timeout_and_leaves_nothing() -> None:
    ended: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        send_now = await queue_unread(scope, receive, send)
        send_now({"type": "http.response.body", "body": b"", "more_body": False})
        ended.append((await receive())["type"])  # the response is complete (framed): at once

    with anyio.fail_after(20):
        async with running(app, stream_buffer_bytes=64 * BIG, stream_write_timeout=0.3) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                await drained(server)
            assert ended == ["http.disconnect"]


async def test_stop_ends_a_backlog_that_is_not_read() -> None:
    queued = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        send_now = await queue_unread(scope, receive, send)
        send_now({"type": "http.response.body", "body": b"", "more_body": False})
        queued.set()
        await receive()

    sock = bind("127.0.0.1", 0)
    server = H1Server(app, Limits(stream_buffer_bytes=64 * BIG))  # the write timeout (30 s) is not reached
    stop = anyio.Event()
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                await tg.start(server.serve, sock, stop, 0.2)
                async with await anyio.connect_tcp("127.0.0.1", int(sock.getsockname()[1])) as stream:
                    await stream.send(GET)
                    await queued.wait()
                    stop.set()  # graceful_timeout 0.2 s, then what is under way is cancelled
            assert not server.connections
    finally:
        sock.close()


async def test_send_now_refuses_to_write_while_a_send_waits_for_the_socket() -> None:
    outcome: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})

        async def fill() -> None:
            with anyio.move_on_after(0.5):  # the client never reads: this send waits
                await send({"type": "http.response.body", "body": b"x" * (24 * BIG), "more_body": True})
            outcome.append("stalled")

        async with anyio.create_task_group() as tg:
            tg.start_soon(fill)
            await anyio.sleep(0.1)
            try:
                scope["extensions"][SEND_NOW]({"type": "http.response.body", "body": b"y", "more_body": True})
            except RuntimeError:
                outcome.append("refused")

    with anyio.fail_after(10):
        async with running(app) as (port, server), await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(GET)
            await drained(server)  # the cancelled send closed it
            assert outcome == ["refused", "stalled"]


# --- a parked response (minimcp.park: trio on Linux, with the watch) -------------------------------------


def parks(use_watch: bool) -> bool:
    """Whether the server offers ``minimcp.park`` here: only where its ReadinessWatch runs."""
    return use_watch and backend_name() == "trio" and sys.platform.startswith("linux")


async def park_or_wait(scope: Any, receive: Any, log: list[Any], use_watch: bool) -> None:
    """Hand the open response to the server where it offers that (the app's call returns at once), else wait in
    ``receive()`` for its end: what the app then records is the same either way (``("end", disconnected)``)."""
    park = scope["extensions"].get(PARK)
    assert (park is not None) is parks(use_watch)
    if park is not None:
        assert park(lambda disconnected: log.append(("end", disconnected)))
        log.append("returned")  # (before the end: the connection's task ends with this call)
        return
    message = await receive()
    log.append(("end", message["type"] == "http.disconnect" and not scope["ended"]))


async def opened_unless_last(scope: Any, receive: Any, send: Any, log: list[Any]) -> bool:
    """:func:`open_response`; then, for ``/last``, the response's end and ``"last"`` logged (True: the app is done)."""
    await open_response(receive, send)
    if scope["path"] != "/last":
        return False
    await send({"type": "http.response.body", "body": b""})
    log.append("last")
    return True


@WAITS
async def test_a_parked_response_ends_by_another_task_s_send_now_and_the_pipelined_request_follows(
    use_watch: bool,
) -> None:
    log: list[Any] = []
    finish = anyio.Event()
    box: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if await opened_unless_last(scope, receive, send, log):
            return
        box["send_now"] = scope["extensions"][SEND_NOW]
        scope["ended"] = False
        box["scope"] = scope
        finish.set()
        await park_or_wait(scope, receive, log, use_watch)

    with anyio.fail_after(10):
        async with running(app, use_watch=use_watch) as (port, server), anyio.create_task_group() as tg:

            async def end_it() -> None:  # another task ends the open response (a handler, in minimcp)
                await finish.wait()
                if parks(use_watch):
                    while "returned" not in log:  # noqa: ASYNC110 - the app's state
                        await anyio.sleep(0.01)
                    assert not [c for c in server.connections if c.waiter is not None]  # nothing waits in receive
                box["scope"]["ended"] = True
                box["send_now"]({"type": "http.response.body", "body": b"b"})

            tg.start_soon(end_it)
            pipelined = GET + b"GET /last HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
            answer = await exchange(port, pipelined)
            assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2 and b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n" in answer, answer
            expected = ["returned", ("end", False), "last"] if parks(use_watch) else [("end", False), "last"]
            assert log == expected
            await drained(server)


@WAITS
async def test_a_client_leaving_a_parked_response_ends_it_once_and_leaves_nothing(use_watch: bool) -> None:
    log: list[Any] = []
    started = anyio.Event()
    box: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        box["send_now"] = scope["extensions"][SEND_NOW]
        scope["ended"] = False
        started.set()
        await park_or_wait(scope, receive, log, use_watch)

    with anyio.fail_after(10):
        async with running(app, use_watch=use_watch) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                await started.wait()
            await drained(server)
            assert log[-1] == ("end", True) and log.count(("end", True)) == 1, log
            with pytest.raises(OSError):  # the response is over: a write after it raises
                box["send_now"]({"type": "http.response.body", "body": b"more", "more_body": True})


@WAITS
async def test_stop_ends_a_parked_response_after_the_graceful_time(
    use_watch: bool, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[Any] = []
    waiting = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        scope["ended"] = False
        waiting.set()
        try:
            await park_or_wait(scope, receive, log, use_watch)
        except BaseException:
            log.append("cancelled")  # (not parked: the stop cancels the wait)
            raise

    server = await stop_while_open(app, use_watch, waiting)
    assert log == (["returned", ("end", True)] if parks(use_watch) else ["cancelled"]) and not server.connections
    assert not [r for r in caplog.records if r.levelno >= 40], caplog.text


async def test_park_is_refused_while_a_body_is_unread_or_the_response_is_over() -> None:
    answers: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        park = scope["extensions"].get(PARK)
        if park is None:  # asyncio (or trio off Linux): not offered at all
            answers.append("not offered")
        else:
            answers.append(park(answers.append))  # the POST's body is unread: refused
        body = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body["body"]})
        if park is not None:
            answers.append(park(answers.append))  # the response is over: refused

    with anyio.fail_after(10):
        async with running(app) as (port, server):
            post = b"POST /p HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi"
            answer = await exchange(port, post)
            assert answer.endswith(b"\r\n\r\nhi"), answer
            assert answers == ([False, False] if parks(True) else ["not offered"])
            await drained(server)


async def test_park_is_refused_once_the_server_stops() -> None:
    # The stop ends the responses parked before it; one parked during the graceful time would be missed.
    answers: list[Any] = []
    opened, stopping = anyio.Event(), anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        opened.set()
        await stopping.wait()
        park = scope["extensions"].get(PARK)
        answers.append("not offered" if park is None else park(answers.append))
        await send({"type": "http.response.body", "body": b""})  # the response ends in this call

    sock = bind("127.0.0.1", 0)
    server = H1Server(app, Limits())
    stop = anyio.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve, sock, stop, 5.0)
            async with await anyio.connect_tcp("127.0.0.1", int(sock.getsockname()[1])) as client:
                await client.send(GET)
                await opened.wait()
                stop.set()
                while not server.stopping:  # noqa: ASYNC110 - the server's own state
                    await anyio.sleep(0.01)
                stopping.set()
                assert (await until_closed(client)).endswith(b"1\r\na\r\n0\r\n\r\n")
    sock.close()
    assert answers == ([False] if parks(True) else ["not offered"]) and not server.connections


async def test_a_parked_response_that_ends_before_the_app_returns_is_served_on_by_one_task_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The response ends (here by the app itself; a middleware awaiting after the app, another task meanwhile)
    # before the call that parked it has returned: the connection goes on once, in one task, and stays open.
    log: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if await opened_unless_last(scope, receive, send, log):
            return
        park = scope["extensions"].get(PARK)
        if park is not None:
            assert park(lambda disconnected: log.append(("end", disconnected)))
        scope["extensions"][SEND_NOW]({"type": "http.response.body", "body": b"b"})
        await anyio.lowlevel.checkpoint()  # (a middleware's await after the app, say)
        log.append("returned")

    with anyio.fail_after(10):
        async with running(app) as (port, server):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(GET)
                first = b""
                while not first.endswith(b"0\r\n\r\n"):
                    first += await stream.receive()
                while "returned" not in log:  # noqa: ASYNC110 - the app's state
                    await anyio.sleep(0.01)
                await stream.send(b"GET /last HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                second = await until_closed(stream)
            assert b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n" in first, first
            assert second.startswith(b"HTTP/1.1 200 OK\r\n"), second
            await drained(server)
    assert log.count("last") == 1 and log.count(("end", False)) == (1 if parks(True) else 0), log
    assert not [r for r in caplog.records if r.levelno >= 30], caplog.text


async def test_what_a_parked_response_held_is_let_go_once_it_ends_while_its_connection_stays_open() -> None:
    class OnEnd:
        """The app's ``on_end`` (in minimcp a Reader's: its stream, its buffered events)."""

        def __init__(self) -> None:
            self.called: list[bool] = []

        def __call__(self, disconnected: bool) -> None:
            self.called.append(disconnected)

    refs: list[weakref.ref[OnEnd]] = []
    calls: list[list[bool]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await open_response(receive, send)
        park = scope["extensions"].get(PARK)
        if park is not None:
            on_end = OnEnd()
            refs.append(weakref.ref(on_end))
            calls.append(on_end.called)
            assert park(on_end)
            del on_end
        scope["extensions"][SEND_NOW]({"type": "http.response.body", "body": b"b"})

    with anyio.fail_after(10):
        async with running(app) as (port, server), await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(GET)
            answer = b""
            while not answer.endswith(b"0\r\n\r\n"):
                answer += await stream.receive()
            conn = connection_of(server)
            while conn.deadline is None:  # noqa: ASYNC110 - the connection waits for the next request (kept open)
                await anyio.sleep(0.01)
            gc.collect()
            if parks(True):
                assert calls == [[False]]
                assert refs[0]() is None, gc.get_referrers(refs[0]())
            assert server.connections == {conn}
