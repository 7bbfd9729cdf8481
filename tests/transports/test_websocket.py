"""The WebSocket transport: MCP over real sockets on 127.0.0.1, both backends.

Peers used here:

* minimcp's own client (``connect_websocket`` / ``websocket_client``);
* ``RawWs``: a hand-driven client (the ``websockets`` sans-I/O core over an anyio
  stream) that can send what a well-behaved client never would -- binary
  frames, an oversized frame header, fragments -- and see the close code;
* the ``websockets`` library's own I/O layers (``websockets.asyncio`` on asyncio,
  ``websockets.trio`` on trio) as independent peers. The official MCP SDK is
  not used: 1.x had a WebSocket client, but 2.x (installed here) removed it.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import pathlib
import struct
import sys
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import pytest
from websockets.frames import Frame, Opcode
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    ConnectionClosed,
    Context,
    Declined,
    ElicitationRequest,
    Limits,
    Server,
    connect_websocket,
    serve_websocket,
)
from minimcp.transports.websocket import (
    WebSocketHandshakeError,
    WebSocketTransport,
    text_frame_head,
    websocket_client,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import booking  # noqa: E402
import hello_server  # noqa: E402

from tests.helpers.websocket import INIT, RawWs, only_connection, serving  # noqa: E402

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}




async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - polling state owned by other tasks
            await anyio.sleep(0.01)






# --- MCP over WebSocket ----------------------------------------------------------------------


async def test_hello_over_websocket(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url, connect_websocket(url) as client:
            assert client.server_info is not None and client.server_info.name == "hello"
            assert [t.name for t in await client.list_tools()] == ["greet", "add"]
            assert (await client.call_tool("greet", {"name": "ws"})).text == "Hello, ws!"
            bad = await client.call_tool("add", {"a": 1, "b": "x"})
            assert bad.is_error is True and "'b'" in bad.text
            await client.ping()
            # many calls in flight at once share the socket
            results: dict[int, str] = {}

            async def add(i: int) -> None:
                results[i] = (await client.call_tool("add", {"a": i, "b": 1})).text

            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(add, i)
            assert results == {i: f"{i + 1}" for i in range(200)}


async def test_large_messages_both_ways(anyio_backend: str) -> None:
    name = "é" * 1_500_000  # 3 MB of UTF-8 each way, under the default 4 MiB limit
    with anyio.fail_after(30):
        async with serving(hello_server.app) as url, connect_websocket(url) as client:
            results = []

            async def greet() -> None:
                results.append((await client.call_tool("greet", {"name": name})).text)

            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(greet)
                tg.start_soon(client.ping)
            assert results == [f"Hello, {name}!"] * 3


async def test_subprotocol_and_clean_close(anyio_backend: str) -> None:
    server = Server("s")
    with anyio.fail_after(20):
        async with serving(server) as url:
            async with websocket_client(url) as transport, Client(transport) as client:
                assert transport.subprotocol == "mcp"
                await client.ping()
                conn = only_connection(server)
            # the client's exit is a closing handshake with 1000 on both ends
            assert transport.close_code == 1000
            await wait_until(lambda: not server.connections)
            assert conn.session.transport.close_code == 1000  # type: ignore[attr-defined]


async def test_booking_elicitation_over_websocket(anyio_backend: str) -> None:
    answers: list[Accepted[dict[str, Any]] | Declined | Cancelled] = [
        Accepted({"accept_alternative": True}),
        Declined(),
    ]
    seen: list[ElicitationRequest] = []

    async def handler(question: ElicitationRequest) -> Accepted[dict[str, Any]] | Declined | Cancelled:
        seen.append(question)
        return answers.pop(0)

    with anyio.fail_after(20):
        async with (
            serving(booking.build_server()) as url,
            connect_websocket(url, elicitation_handler=handler) as client,
        ):
            booked = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert isinstance(booked.structured_content, dict)
            assert booked.structured_content == {
                "status": "booked",
                "date": "2025-12-26",
                "party_size": 2,
                "booking_id": booked.structured_content["booking_id"],  # unguessable, not B0001
            }
            assert "2025-12-25" in seen[0].message
            declined = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert declined.structured_content["status"] == "declined"  # type: ignore[index]
            assert len(seen) == 2


# --- disconnects -----------------------------------------------------------------------------


def booking_with_probe() -> tuple[Server, dict[str, int]]:
    """The booking server plus a tool that records how its question ended."""
    app = booking.build_server()
    counts = {"asked": 0, "ended": 0, "returned": 0}

    @app.tool()
    async def probe(ctx: Context) -> str:
        # A disconnect ends the question with ConnectionClosed or cancels the tool
        # outright (whichever reaches it first); either way it never returns.
        counts["asked"] += 1
        try:
            await ctx.elicit("still there?", booking.date_question_schema(datetime.date(2025, 12, 26)))
        finally:
            counts["ended"] += 1
        counts["returned"] += 1
        return "answered"

    return app, counts


@pytest.mark.parametrize("n", [2, 100])
async def test_client_leaving_mid_question_cancels_the_tools(anyio_backend: str, n: int) -> None:
    app, counts = booking_with_probe()
    asked = handlers_cancelled = 0
    errors: list[BaseException] = []

    async def handler(question: ElicitationRequest) -> Accepted[dict[str, Any]] | Declined | Cancelled:
        nonlocal asked, handlers_cancelled
        asked += 1
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handlers_cancelled += 1
            raise
        raise AssertionError  # pragma: no cover

    async def call(client: Client, name: str, args: dict[str, Any]) -> None:
        try:
            await client.call_tool(name, args)
        except ConnectionClosed as exc:
            errors.append(exc)

    with anyio.fail_after(30):
        async with serving(app) as url:
            async with (
                websocket_client(url) as transport,
                Client(transport, elicitation_handler=handler) as client,
            ):
                conn = only_connection(app)
                async with anyio.create_task_group() as tg:
                    for i in range(n):
                        if i % 2:
                            tg.start_soon(call, client, "probe", {})
                        else:
                            tg.start_soon(call, client, "book_table", {"date": "2025-12-25", "party_size": 2})
                    await wait_until(lambda: asked == n)
                    assert conn.session.pending_count == n  # n questions wait on the person
                    assert conn.session.inflight_count == n  # n tools wait on them
                    await transport.aclose()  # close the socket while every question is open
            await wait_until(lambda: not app.connections)
            assert conn.session.holds_nothing()
            assert conn.session.closed
            assert conn.session.closed
            assert counts == {"asked": n // 2, "ended": n // 2, "returned": 0}
            assert len(errors) == n  # every call of the client failed with ConnectionClosed
            assert handlers_cancelled == n  # and every question on the client side was dropped


async def test_dropped_tcp_connection_mid_question(anyio_backend: str) -> None:
    """No closing handshake at all: the TCP connection just goes away."""
    app, counts = booking_with_probe()
    n = 100
    with anyio.fail_after(30):
        async with serving(app) as url:
            async with RawWs.connect(url, subprotocols=["mcp"]) as raw:
                await raw.send(INIT)
                assert (await raw.recv())["id"] == "init"
                await raw.send(INITIALIZED)
                for i in range(n):
                    await raw.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "probe"}})
                questions = [await raw.recv() for _ in range(n)]
                assert {q["method"] for q in questions} == {"elicitation/create"}
                conn = only_connection(app)
                assert conn.session.pending_count == n
                # leaving the context closes the socket without a close frame
            await wait_until(lambda: not app.connections)
            assert conn.session.holds_nothing()
            assert counts == {"asked": n, "ended": n, "returned": 0}


async def test_server_stopping_closes_connections(anyio_backend: str) -> None:
    app, counts = booking_with_probe()
    failures: list[BaseException] = []

    async def handler(question: ElicitationRequest) -> Accepted[dict[str, Any]] | Declined | Cancelled:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def call(client: Client) -> None:
        try:
            await client.call_tool("probe")
        except ConnectionClosed as exc:
            failures.append(exc)

    server_scope = anyio.CancelScope()

    async def run_server(*, task_status: anyio.abc.TaskStatus[int]) -> None:
        with server_scope:
            await serve_websocket(app, task_status=task_status)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            port = await tg.start(run_server)
            async with (
                websocket_client(f"ws://127.0.0.1:{port}/mcp") as transport,
                Client(transport, elicitation_handler=handler) as client,
                anyio.create_task_group() as calls,
            ):
                calls.start_soon(call, client)
                await wait_until(lambda: counts["asked"] == 1)
                server_scope.cancel()  # stop serving: the server closes its connections
            assert transport.close_code == 1000
    assert len(failures) == 1
    assert counts == {"asked": 1, "ended": 1, "returned": 0}


# --- frames and limits ------------------------------------------------------------------------


async def test_oversized_frame_closes_with_1009_before_its_payload(anyio_backend: str) -> None:
    server = Server("s")
    with anyio.fail_after(20):
        async with serving(server, limits=Limits(max_message_bytes=1000)) as url:
            async with RawWs.connect(url, subprotocols=["mcp"]) as raw:
                await raw.send(INIT)
                assert (await raw.recv())["id"] == "init"
                # A text frame header announcing 1 GiB; only the header and mask are sent.
                header = struct.pack("!BBQ", 0x81, 0x80 | 127, 2**30) + os.urandom(4)
                await raw.stream.send(header)
                assert await raw.close_code() == 1009
                assert raw.protocol.close_rcvd is not None and "1000" in raw.protocol.close_rcvd.reason
            await wait_until(lambda: not server.connections)

            # a message at the limit is fine; fragments count together toward it
            async with RawWs.connect(url, subprotocols=["mcp"]) as raw:
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ""}}
                ping["params"]["pad"] = "x" * (1000 - len(msgspec.json.encode(ping)))  # type: ignore[index]
                assert len(msgspec.json.encode(ping)) == 1000
                await raw.send(ping)
                assert await raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
                raw.protocol.send_text(b"x" * 600, fin=False)
                raw.protocol.send_continuation(b"x" * 600, fin=True)
                await raw.flush()
                assert await raw.close_code() == 1009


async def test_fragmented_message_and_ping(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
            data = msgspec.json.encode(INIT)
            third = len(data) // 3
            raw.protocol.send_text(data[:third], fin=False)
            raw.protocol.send_continuation(data[third : 2 * third], fin=False)
            raw.protocol.send_ping(b"are you there")  # control frames may interleave
            raw.protocol.send_continuation(data[2 * third :], fin=True)
            await raw.flush()
            reply = await raw.recv()
            assert reply["result"]["serverInfo"]["name"] == "hello"
            assert any(f.opcode is Opcode.PONG and f.data == b"are you there" for f in raw.frames)
            # garbage text is a JSON-RPC parse error, not a closed connection
            raw.protocol.send_text(b"not json")
            await raw.flush()
            assert (await raw.recv())["error"]["code"] == -32700


async def test_binary_frame_closes_with_1003(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
            raw.protocol.send_binary(msgspec.json.encode(INIT))
            await raw.flush()
            assert await raw.close_code() == 1003


# --- framing and queueing --------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70_000])
def test_text_frame_head_by_hand_is_the_websockets_core_framing(size: int) -> None:
    # The server frames its text messages by hand (text_frame_head); the websockets core's
    # Frame.serialize is the other side: the same bytes, at each boundary of the length field.
    payload = bytes(range(256)) * (size // 256) + b"y" * (size % 256)
    assert text_frame_head(size) + payload == Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])


async def test_server_frames_by_hand_unless_the_core_logs_frames(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    # By hand on a plain server; with websockets' frame log at DEBUG the core frames (and logs) each one.
    # The peer reads the same answers either way.
    answers = []
    for debug in (False, True):
        caplog.clear()
        with anyio.fail_after(20), caplog.at_level(logging.DEBUG if debug else logging.INFO, "websockets.server"):
            async with serving(hello_server.app) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
                await raw.send(INIT)
                reply = await raw.recv()
                await raw.send(INITIALIZED)
                await raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "greet", "arguments": {"name": "é" * 100}}})
                answers.append((reply["result"]["serverInfo"], await raw.recv()))
                assert server_transport(hello_server.app)._frames_by_hand is not debug
        assert any(r.getMessage().startswith("> TEXT") for r in caplog.records) is debug
    assert answers[0] == answers[1]
    assert answers[0][1]["result"]["content"][0]["text"] == "Hello, " + "é" * 100 + "!"


async def test_send_nowait_queues_only_while_open_and_under_the_bound(anyio_backend: str) -> None:
    room = 1024
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url:
            async with websocket_client(url, limits=Limits(stream_buffer_bytes=room)) as transport:
                note = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"p": "x" * room}}
                message = msgspec.json.encode(note)
                assert transport.send_nowait(message) is True  # queued for the writer; nothing waited
                assert transport._unsent > room
                assert transport.send_nowait(message) is False  # over the bound: send() waits for room
                assert transport._unsent < 2 * room
                await transport.send(message)  # waits until the writer has made room, then queues
                assert transport.receive_nowait() is None  # nothing read yet
            assert transport.send_nowait(message) is False  # closed
            with pytest.raises(anyio.ClosedResourceError):
                await transport.send(message)


# --- liveness: keepalive, initialize and idle deadlines ---------------------------------------


def server_transport(server: Server) -> WebSocketTransport:
    transport = only_connection(server).session.transport
    assert isinstance(transport, WebSocketTransport)
    return transport


async def test_keepalive_drops_a_peer_that_never_answers_pings(anyio_backend: str) -> None:
    server = Server("s")
    limits = Limits(ping_interval=0.05, ping_timeout=0.3, idle_timeout=None)
    with anyio.fail_after(30):
        async with serving(server, limits=limits) as url, RawWs.connect(url, subprotocols=["mcp"]) as raw:
            await raw.send(INIT)
            assert (await raw.recv())["id"] == "init"
            await raw.send(INITIALIZED)
            conn = only_connection(server)
            # From here on the client reads nothing, so the server's pings go unanswered.
            await wait_until(lambda: not server.connections, 20)
            assert conn.session.closed
            assert conn.session.transport._pongs == 0  # type: ignore[attr-defined]
            # what the client finds when it reads again: pings, maybe the 1011 close frame, then the end
            assert await raw.close_code() in (1011, None)
            assert any(f.opcode is Opcode.PING for f in raw.frames)


async def test_healthy_idle_clients_that_answer_pings_stay(anyio_backend: str) -> None:
    """Our client and the websockets library's own client answer pings by themselves; nobody drops them."""
    server = Server("s")
    limits = Limits(ping_interval=0.02, ping_timeout=5, idle_timeout=None, initialize_timeout=2)
    with anyio.fail_after(60):
        async with serving(server, limits=limits) as url:
            async with connect_websocket(url) as client:
                transport = server_transport(server)
                await wait_until(lambda: transport._pongs >= 125, 30)  # > 2.5 s: past initialize_timeout
                assert server.connections
                await client.ping()
            await wait_until(lambda: not server.connections)

            if anyio_backend == "asyncio":
                from websockets.asyncio.client import connect
            else:
                from websockets.trio.client import connect  # type: ignore[assignment]
            async with connect(url, subprotocols=[Subprotocol("mcp")], ping_interval=None) as ws:
                await ws.send(msgspec.json.encode(INIT).decode())
                assert msgspec.json.decode(await ws.recv())["id"] == "init"
                transport = server_transport(server)
                await wait_until(lambda: transport._pongs >= 20, 30)
                await ws.send(msgspec.json.encode({"jsonrpc": "2.0", "id": 2, "method": "ping"}).decode())
                assert msgspec.json.decode(await ws.recv()) == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_idle_connection_is_closed_but_not_while_a_person_is_answering(anyio_backend: str) -> None:
    idle = 1.0
    limits = Limits(idle_timeout=idle, ping_interval=0.05, ping_timeout=5)

    async def slow_person(question: ElicitationRequest) -> Accepted[dict[str, Any]] | Declined | Cancelled:
        await anyio.sleep(idle * 3)  # thinking for much longer than the idle timeout
        return Accepted({"accept_alternative": True})

    app = booking.build_server()
    with anyio.fail_after(30):
        async with serving(app, limits=limits) as url:
            async with websocket_client(url) as transport, Client(transport, elicitation_handler=slow_person) as client:
                booked = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                assert booked.structured_content["status"] == "booked"  # type: ignore[index]
                assert server_transport(app)._pongs >= 5  # the connection was alive and idle meanwhile
                # Nothing pending any more and nothing sent: the server closes the connection.
                await wait_until(lambda: transport.close_code is not None, 20)
                assert (transport.close_code, transport.close_reason) == (1000, "idle timeout")
            await wait_until(lambda: not app.connections)


async def test_senders_wait_for_room_so_unsent_output_stays_bounded(anyio_backend: str) -> None:
    room = 64 * 1024
    big = 200_000
    app = Server("s")

    @app.tool()
    async def blob(size: int) -> str:
        return "x" * size

    with anyio.fail_after(60):
        async with (
            serving(app, limits=Limits(stream_buffer_bytes=room, ping_interval=None)) as url,
            RawWs.connect(url, subprotocols=["mcp"]) as raw,
        ):
            await raw.send(INIT)
            assert (await raw.recv())["id"] == "init"
            await raw.send(INITIALIZED)
            transport = server_transport(app)
            # 60 small requests in one go ask for 12 MB of results; the client then reads nothing.
            n = 60
            for i in range(n):
                call = {"name": "blob", "arguments": {"size": big}}
                raw.protocol.send_text(
                    msgspec.json.encode({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})
                )
            await raw.flush()
            await wait_until(lambda: transport._unsent > room, 20)  # the writer has stalled
            peak = 0
            for _ in range(50):
                peak = max(peak, transport._unsent)
                await anyio.sleep(0.01)
            assert peak <= room + big + 1024  # the rest of the results wait in their handlers
            # Reading again, every result arrives whole.
            replies = [await raw.recv(timeout=20) for _ in range(n)]
            assert sorted(r["id"] for r in replies) == list(range(n))
            assert all(len(r["result"]["content"][0]["text"]) == big for r in replies)


# --- the handshake ---------------------------------------------------------------------------


async def test_handshake_negotiates_mcp(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url:
            async with RawWs.connect(url, subprotocols=["other", "mcp"]) as raw:
                assert raw.response is not None and raw.response.status_code == 101
                assert raw.response.headers["Sec-WebSocket-Protocol"] == "mcp"
            # lenient: no subprotocol offered at all is accepted, without the header
            async with RawWs.connect(url) as raw:
                assert raw.response is not None and raw.response.status_code == 101
                assert "Sec-WebSocket-Protocol" not in raw.response.headers
                await raw.send(INIT)
                assert (await raw.recv())["id"] == "init"
            # only other subprotocols: refused
            async with RawWs.connect(url, subprotocols=["graphql-ws"]) as raw:
                assert raw.response is not None and raw.response.status_code == 400
            # another path: 404
            async with RawWs.connect(url.replace("/mcp", "/other")) as raw:
                assert raw.response is not None and raw.response.status_code == 404


async def test_origin_allow_list(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url:
            async with RawWs.connect(url, subprotocols=["mcp"], origin="https://evil.example") as raw:
                assert raw.response is not None and raw.response.status_code == 403
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(url, headers={"Origin": "http://attacker.test"}):
                    pass  # pragma: no cover
            assert info.value.status == 403
            for ok in ("http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443"):
                async with connect_websocket(url, headers={"Origin": ok}) as client:
                    await client.ping()
        async with serving(hello_server.app, allowed_origins=["https://app.example"]) as url:
            async with connect_websocket(url, headers={"Origin": "https://app.example"}) as client:
                await client.ping()
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(url, headers={"Origin": "http://localhost:5173"}):
                    pass  # pragma: no cover
            assert info.value.status == 403


async def test_client_handshake_errors(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app) as url:
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(url.replace("/mcp", "/nope")):
                    pass  # pragma: no cover
            assert info.value.status == 404
        with pytest.raises(ValueError):
            async with websocket_client("http://127.0.0.1:1/mcp"):
                pass  # pragma: no cover
        with pytest.raises(OSError):  # nothing listens on port 1
            async with websocket_client("ws://127.0.0.1:1/mcp"):
                pass  # pragma: no cover
        # a TCP server that answers with garbage
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")

        async def garbage(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                await stream.receive()
                await stream.send(b"SSH-2.0-OpenSSH\r\n\r\n")

        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, garbage)
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            with pytest.raises(WebSocketHandshakeError) as info:
                async with websocket_client(f"ws://127.0.0.1:{port}/mcp"):
                    pass  # pragma: no cover
            assert info.value.status is None
            tg.cancel_scope.cancel()


async def test_slow_handshake_is_dropped(anyio_backend: str) -> None:
    with anyio.fail_after(20):
        async with serving(hello_server.app, handshake_timeout=0.2) as url:
            uri = parse_uri(url)
            async with await anyio.connect_tcp(uri.host, uri.port) as stream:
                await stream.send(b"GET /mcp HTTP/1.1\r\n")  # and never the rest
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await stream.receive()


# --- independent peers: the websockets library's own I/O layers ------------------------------


async def _library_client_session(url: str, backend: str) -> None:
    """Initialize, call a tool and answer a question with websockets' own client."""
    if backend == "asyncio":
        from websockets.asyncio.client import connect
    else:
        pytest.importorskip("websockets.trio")  # websockets >= 16
        from websockets.trio.client import connect  # type: ignore[assignment]

    async with connect(url, subprotocols=[Subprotocol("mcp")]) as ws:
        assert ws.subprotocol == "mcp"
        await ws.send(msgspec.json.encode(INIT).decode())
        init = msgspec.json.decode(await ws.recv())
        assert init["result"]["serverInfo"]["name"] == "booking"
        await ws.send(msgspec.json.encode(INITIALIZED).decode())
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 3}},
        }
        await ws.send(msgspec.json.encode(call).decode())
        question = msgspec.json.decode(await ws.recv())
        assert question["method"] == "elicitation/create"
        answer = {
            "jsonrpc": "2.0",
            "id": question["id"],
            "result": {"action": "accept", "content": {"accept_alternative": True, "date": "2025-12-28"}},
        }
        await ws.send(msgspec.json.encode(answer).decode())
        result = msgspec.json.decode(await ws.recv())
        assert result["id"] == 7
        assert result["result"]["structuredContent"]["status"] == "booked"
        assert result["result"]["structuredContent"]["date"] == "2025-12-28"
        await ws.ping()  # the library waits for our pong


async def test_websockets_library_client_as_peer(anyio_backend: str) -> None:
    # websockets.asyncio only runs on asyncio, websockets.trio only on trio: each
    # backend is checked against the library's layer for it.
    app = booking.build_server()
    with anyio.fail_after(20):
        async with serving(app) as url:
            await _library_client_session(url, anyio_backend)
            await wait_until(lambda: not app.connections)


async def test_minimcp_client_against_websockets_library_server(anyio_backend: str) -> None:
    """Our client against a server built on websockets' own I/O layer, bridged to a minimcp Server."""
    from minimcp.transports.memory import memory_pair

    app = booking.build_server()
    accepted: list[str | None] = []

    async def bridge(ws: Any) -> None:
        accepted.append(ws.subprotocol)
        a, b = memory_pair()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(app.serve, a)

                async def outbound() -> None:
                    while True:
                        await ws.send((await b.receive()).decode())

                tg.start_soon(outbound)
                with contextlib.suppress(Exception):
                    async for message in ws:
                        await b.send(message.encode() if isinstance(message, str) else message)
                tg.cancel_scope.cancel()
        finally:
            await a.aclose()
            await b.aclose()

    async def handler(question: ElicitationRequest) -> Accepted[dict[str, Any]] | Declined | Cancelled:
        return Accepted({"accept_alternative": True})

    async with contextlib.AsyncExitStack() as stack:
        if anyio_backend == "asyncio":
            from websockets.asyncio.server import serve

            ws_server = await stack.enter_async_context(
                serve(bridge, "127.0.0.1", 0, subprotocols=[Subprotocol("mcp")])
            )
            port = next(iter(ws_server.sockets)).getsockname()[1]
        else:
            pytest.importorskip("websockets.trio")  # websockets >= 16
            from websockets.trio.server import serve as trio_serve

            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            ws_server = await tg.start(
                lambda task_status: trio_serve(
                    bridge, 0, host="127.0.0.1", subprotocols=[Subprotocol("mcp")], task_status=task_status
                )
            )
            port = ws_server.listeners[0].socket.getsockname()[1]
        with anyio.fail_after(20):
            async with connect_websocket(f"ws://127.0.0.1:{port}/", elicitation_handler=handler) as client:
                assert client.server_info is not None and client.server_info.name == "booking"
                result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                assert result.structured_content["date"] == "2025-12-26"  # type: ignore[index]
    assert accepted == ["mcp"]


async def test_large_uploads_and_downloads_at_once_do_not_deadlock(anyio_backend: str) -> None:
    """Both sides over their output bound at once: the client keeps reading, so the server's output drains."""
    room = 64 * 1024
    size = 1_000_000
    app = Server("s", limits=Limits(stream_buffer_bytes=room))

    @app.tool()
    async def echo(text: str) -> str:
        return text

    limits = Limits(stream_buffer_bytes=room)
    with anyio.fail_after(60):
        async with serving(app, limits=limits) as url, connect_websocket(url, limits=limits) as client:
            results: list[int] = []

            async def call(i: int) -> None:
                results.append(len((await client.call_tool("echo", {"text": str(i % 10) * size})).text))

            async with anyio.create_task_group() as tg:
                for i in range(30):  # 30 MB each way
                    tg.start_soon(call, i)
            assert results == [size] * 30


async def test_client_fails_a_server_that_floods_pings_and_never_reads(anyio_backend: str) -> None:
    """A client never stops reading (see above), so it bounds the pongs a hostile server makes it owe."""
    from websockets.server import ServerProtocol

    room = 64 * 1024
    flooding = anyio.Event()

    async def hostile(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            protocol = ServerProtocol(subprotocols=[Subprotocol("mcp")])
            while not (events := protocol.events_received()):
                protocol.receive_data(await stream.receive())
            protocol.send_response(protocol.accept(events[0]))  # type: ignore[arg-type]
            await stream.send(b"".join(protocol.data_to_send()))
            for _ in range(500):
                protocol.send_ping(b"p" * 125)
            blob = b"".join(protocol.data_to_send())
            flooding.set()
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                for _ in range(64 * 1024 * 1024 // len(blob)):  # 64 MiB at most; never reads
                    await stream.send(blob)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    limits = Limits(stream_buffer_bytes=room, ping_interval=None)
    with anyio.fail_after(60):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, hostile)
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            async with websocket_client(f"ws://127.0.0.1:{port}/mcp", limits=limits) as transport:
                await flooding.wait()
                peak = 0

                async def watch() -> None:
                    nonlocal peak
                    while True:
                        peak = max(peak, transport._unsent)
                        await anyio.sleep(0.005)

                tg.start_soon(watch)
                with pytest.raises((anyio.EndOfStream, anyio.ClosedResourceError)):
                    await transport.receive()  # reads (and answers pings) until the client gives up
                peak = max(peak, transport._unsent)
                # Owed answers stay under ``room`` and the backlog under ``room`` more until one read's answers
                # push it over: a read of 64 KiB holds up to 517 pings of 127 bytes, each answered by a masked
                # pong of 131 (a client's frames carry a 4-byte mask), so one read can add 67.7 KB, not 64 KiB.
                one_read = -(-65536 // (125 + 2)) * (125 + 6)
                assert peak <= 2 * room + one_read + 1024
                assert transport._protocol.close_sent is not None
                assert transport._protocol.close_sent.code == 1008  # "peer does not read"
            tg.cancel_scope.cancel()
