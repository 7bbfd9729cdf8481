"""Outgoing descriptions: the session tells a transport that asks what each message is.

- :func:`minimcp.core.transport.describe` reads a description back from bytes (the fallback);
- a transport declaring ``wants_outgoing`` gets a description of every message a session
  sends (requests, notifications, results, errors, pongs, cancellation notices), equal to
  what reading the bytes would give, and only through ``send``;
- a transport that takes only ``send(message, *, related=None)`` keeps working, bare or
  wrapped in a :class:`~minimcp.transports.trace.TracedTransport`;
- the Streamable HTTP client transport, driven by a session, never decodes an outgoing
  message (both eras, real sockets), and still works when ``send`` is called with bytes alone.

Every async test runs on asyncio and on trio (see ``conftest.py``).
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import msgspec
import pytest

import minimcp
from minimcp import Accepted, Context, Limits, McpError, RequestTimeout, Server
from minimcp.core.session import Session
from minimcp.core.transport import DescribedTransport, MessageKind, Outgoing, describe
from minimcp.transports.memory import MemoryTransport, memory_pair
from minimcp.transports.trace import TracedTransport
from minimcp.wire import jsonrpc
from minimcp.wire.jsonrpc import Notification, Request, RequestId
from tests.helpers import RawPeer

TIMEOUT = 30
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


# --- reading a description back from bytes ----------------------------------------------------


def test_describe_reads_every_kind_back_from_bytes() -> None:
    assert describe(jsonrpc.encode_request(7, "tools/list")) == Outgoing(MessageKind.REQUEST, 7, "tools/list")
    assert describe(jsonrpc.encode_request("a", "initialize", {"x": 1})) == Outgoing(
        MessageKind.REQUEST, "a", "initialize"
    )
    assert describe(jsonrpc.encode_notification("notifications/initialized")) == Outgoing(
        MessageKind.NOTIFICATION, None, "notifications/initialized"
    )
    cancel = jsonrpc.encode_notification("notifications/cancelled", {"requestId": 3, "reason": "x"})
    assert describe(cancel) == Outgoing(MessageKind.NOTIFICATION, None, "notifications/cancelled", 3)
    assert describe(jsonrpc.encode_result(4, {})) == Outgoing(MessageKind.RESPONSE, 4)
    assert describe(jsonrpc.encode_error(None, -32700, "bad")) == Outgoing(MessageKind.RESPONSE, None)
    assert describe(jsonrpc.encode_error("q", -32601, "no")) == Outgoing(MessageKind.RESPONSE, "q")


def test_describe_of_what_is_not_json_rpc_or_a_malformed_cancellation() -> None:
    assert describe(b"not json") is None
    assert describe(b'{"jsonrpc": "2.0"}') is None
    for params in ({"requestId": True}, {"requestId": [1]}, {}, {"reason": "no id"}):
        bad = jsonrpc.encode_notification("notifications/cancelled", params)
        assert describe(bad) == Outgoing(MessageKind.NOTIFICATION, None, "notifications/cancelled", None)


# --- a session and a transport that asks --------------------------------------------------------


class Handlers:
    """Answers ``echo``, refuses anything else, and blocks on ``block``."""

    def handle_request(self, session: Session, request: Request) -> Any:
        return self._handle(request)

    async def _handle(self, request: Request) -> Any:
        if request.method == "echo":
            return msgspec.json.decode(request.params or b"{}")
        raise McpError(-32601, f"Method not found: {request.method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        pass


class Describing:
    """A memory transport that asks for descriptions and records each message with its own."""

    wants_outgoing = True

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.sent: list[tuple[bytes, Outgoing | None]] = []

    async def send(self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None) -> None:
        self.sent.append((message, outgoing))
        await self.inner.send(message, related=related)

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        raise AssertionError("a described transport is sent to through send() only")

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


class Plain:
    """A transport as users write it: ``send(message, *, related=None)``, nothing more."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        self.sent.append(message)
        await self.inner.send(message, related=related)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def exercise(session: Session, peer: RawPeer) -> None:
    """Make the session send one message of every kind, each way it can send one."""
    # A request and its response.
    async with anyio.create_task_group() as tg:
        result: list[Any] = []

        async def ask() -> None:
            result.append(await session.request("echo", {"n": 1}, result_type=dict))

        tg.start_soon(ask)
        request = await peer.recv()
        assert request["method"] == "echo"
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"n": 1}})
    assert result == [{"n": 1}]
    # A notification.
    await session.notify("notifications/message", {"level": "info", "data": "hi"})
    assert (await peer.recv())["method"] == "notifications/message"
    # Answers: a pong, a result, an error, an error without an id.
    assert (await peer.request(1, "ping"))["result"] == {}
    assert (await peer.request(2, "echo", {"a": 1}))["result"] == {"a": 1}
    assert (await peer.request(3, "nope"))["error"]["code"] == -32601
    await peer.send(b"{not json")
    assert (await peer.recv())["error"]["code"] == -32700
    # A request that times out: the peer is told.
    with pytest.raises(RequestTimeout):
        await session.request("slow", timeout=0.05)
    assert (await peer.recv())["method"] == "slow"
    notice = await peer.recv()
    assert notice["method"] == "notifications/cancelled"
    # A request its caller gives up on: the peer is told.
    with anyio.move_on_after(0.05):
        await session.request("slower")
    assert (await peer.recv())["method"] == "slower"
    notice = await peer.recv()
    assert notice["method"] == "notifications/cancelled"


async def test_a_described_transport_is_told_what_every_message_is() -> None:
    a, b = memory_pair()
    transport = Describing(a)
    session = Session(transport, Handlers(), limits=Limits(notice_timeout=5))
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            await exercise(session, RawPeer(b))
            session.close()
    kinds = set()
    for message, outgoing in transport.sent:
        assert outgoing is not None, message
        assert outgoing == describe(message), message
        kinds.add((outgoing.kind, outgoing.method))
    assert kinds == {
        (MessageKind.REQUEST, "echo"),
        (MessageKind.REQUEST, "slow"),
        (MessageKind.REQUEST, "slower"),
        (MessageKind.NOTIFICATION, "notifications/message"),
        (MessageKind.NOTIFICATION, "notifications/cancelled"),
        (MessageKind.RESPONSE, ""),
    }
    cancelled = [o.cancelled for _, o in transport.sent if o is not None and o.method == "notifications/cancelled"]
    requested = {o.method: o.id for _, o in transport.sent if o is not None and o.kind is MessageKind.REQUEST}
    assert cancelled == [requested["slow"], requested["slower"]]


@pytest.mark.parametrize("traced", [False, True])
async def test_a_transport_without_the_keyword_keeps_working(traced: bool) -> None:
    a, b = memory_pair()
    plain = Plain(a)
    seen: list[bytes] = []
    transport: Any = TracedTransport(plain, lambda direction, data: seen.append(data)) if traced else plain
    session = Session(transport, Handlers(), limits=Limits(notice_timeout=5))
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            await exercise(session, RawPeer(b))
            session.close()
    assert len(plain.sent) == 10
    if traced:
        assert [data for data in seen if data in plain.sent] == plain.sent


def test_a_traced_transport_asks_only_when_the_one_it_wraps_does() -> None:
    a, _ = memory_pair()
    described: DescribedTransport = Describing(a)  # both are DescribedTransports to mypy
    traced: DescribedTransport = TracedTransport(described, lambda *_: None)
    assert traced.wants_outgoing is True
    assert TracedTransport(Describing(a), lambda *_: None).wants_outgoing is True
    assert TracedTransport(Plain(a), lambda *_: None).wants_outgoing is False
    assert TracedTransport(a, lambda *_: None).wants_outgoing is False


# --- the Streamable HTTP client transport --------------------------------------------------------

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")

from minimcp.transports.http import http_client  # noqa: E402
from minimcp.transports.http.client import StreamableHTTPClientTransport  # noqa: E402
from tests.helpers.http import serving  # noqa: E402

#: The client's side of HTTP: where reading an outgoing message back would happen.
CLIENT_FILES = tuple(
    str(pathlib.Path(minimcp.__file__).parent / name)
    for name in ("core/transport.py", "transports/http/client.py", "transports/http/client_stateless.py")
)


class Watch:
    """What the HTTP client transport was asked to send, and which of it the client side decoded."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.described: list[Outgoing | None] = []
        self.decoded: list[bytes] = []

    def read_back(self) -> list[bytes]:
        return [data for data in self.decoded if data in self.sent]


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Watch]:
    found = Watch()
    real_decode = jsonrpc.decode
    real_send = StreamableHTTPClientTransport.send

    def decode(data: Any) -> jsonrpc.Message:
        if sys._getframe(1).f_code.co_filename in CLIENT_FILES:
            found.decoded.append(bytes(data))
        return real_decode(data)

    async def send(self: StreamableHTTPClientTransport, message: bytes, **options: Any) -> None:
        found.sent.append(message)
        found.described.append(options.get("outgoing"))
        await real_send(self, message, **options)

    monkeypatch.setattr(jsonrpc, "decode", decode)
    monkeypatch.setattr(StreamableHTTPClientTransport, "send", send)
    yield found


def make_server(cleaned: anyio.Event) -> Server:
    server = Server("outgoing", "1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)
        assert isinstance(answer, Accepted)
        return f"hello {answer.value['name']}"

    @server.tool()
    async def slow() -> str:
        try:
            await anyio.sleep(60)
        finally:
            cleaned.set()
        return "done"

    return server


async def answer_name(request: minimcp.ElicitationRequest) -> Any:
    return Accepted({"name": "Ada"})


@pytest.mark.parametrize("traced", [False, True])
async def test_the_http_client_transport_reads_no_outgoing_message(watch: Watch, traced: bool) -> None:
    """Handshake era: requests, the initialized notification, an answer to the server's question,
    a cancellation (the server's handler is cancelled): routed by the session's descriptions."""
    cleaned = anyio.Event()
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(cleaned)) as (url, _), http_client(url) as http:
            transport: Any = TracedTransport(http, lambda *_: None) if traced else http
            async with minimcp.Client(transport, elicitation_handler=answer_name) as client:
                assert http.session_id is not None
                assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
                assert (await client.call_tool("ask_name", {})).text == "hello Ada"
                with pytest.raises(RequestTimeout):
                    await client.call_tool("slow", {}, timeout=0.5)
                await cleaned.wait()  # the server heard of the cancellation
                await client.ping()
    kinds = {(o.kind, o.method) for o in watch.described if o is not None}
    assert {
        (MessageKind.REQUEST, "initialize"),
        (MessageKind.NOTIFICATION, "notifications/initialized"),
        (MessageKind.RESPONSE, ""),
        (MessageKind.NOTIFICATION, "notifications/cancelled"),
    } <= kinds
    assert None not in watch.described
    assert watch.read_back() == []


async def test_the_http_client_transport_reads_no_outgoing_message_on_2026_07_28(watch: Watch) -> None:
    cleaned = anyio.Event()
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(cleaned)) as (url, _), http_client(url) as http:
            async with minimcp.Client(http, era="modern", elicitation_handler=answer_name) as client:
                assert (await client.call_tool("add", {"a": 3, "b": 4})).text == "7"
                assert (await client.call_tool("ask_name", {})).text == "hello Ada"
                with pytest.raises(RequestTimeout):
                    await client.call_tool("slow", {}, timeout=0.5)
                await cleaned.wait()  # closing the POST cancelled the tool
            assert http.era is not None and http.era.value == "modern"
    assert any(o is not None and o.method == "notifications/cancelled" for o in watch.described)
    assert None not in watch.described
    assert watch.read_back() == []


async def test_the_http_client_transport_works_when_sent_bytes_alone(watch: Watch) -> None:
    """Called directly, without a description, the transport reads each message to route it."""
    cleaned = anyio.Event()
    initialize = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(cleaned)) as (url, _), http_client(url) as http:
            await http.send(jsonrpc.encode_request(1, "initialize", initialize))
            reply = msgspec.json.decode(await http.receive())
            assert reply["id"] == 1 and reply["result"]["protocolVersion"] == "2025-11-25"
            assert http.session_id is not None and http.protocol_version == "2025-11-25"
            await http.send(jsonrpc.encode_notification("notifications/initialized"))
            await http.send(jsonrpc.encode_request(2, "tools/call", {"name": "slow", "arguments": {}}))
            await http.send(jsonrpc.encode_request(3, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}))
            reply = msgspec.json.decode(await http.receive())
            assert reply["id"] == 3 and reply["result"]["content"][0]["text"] == "4"
            await http.send(jsonrpc.encode_notification("notifications/cancelled", {"requestId": 2}))
            await cleaned.wait()  # the cancellation reached the server: it was read as one
    assert None in watch.described
    assert len(watch.read_back()) == len(watch.sent) == 5
