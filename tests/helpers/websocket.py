"""Shared by several test files: what tests/transports/test_websocket.py sets up and others reuse."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import msgspec
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import CLOSED
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from minimcp import Server, serve_websocket
from minimcp.server.connection import ServerConnection

INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@contextlib.asynccontextmanager
async def serving(server: Server, **options: Any) -> AsyncIterator[str]:
    """Run ``serve_websocket`` on an ephemeral port; yield the URL."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(lambda task_status: serve_websocket(server, task_status=task_status, **options))
        yield f"ws://127.0.0.1:{port}/mcp"
        tg.cancel_scope.cancel()


def only_connection(server: Server) -> ServerConnection:
    assert len(server.connections) == 1
    return next(iter(server.connections))


class RawWs:
    """A WebSocket client driven by hand: the library's protocol core over an anyio stream."""

    def __init__(self, stream: anyio.abc.SocketStream, protocol: ClientProtocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self.response: Response | None = None
        self.frames: list[Frame] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls,
        url: str,
        *,
        subprotocols: list[str] | None = None,
        origin: str | None = None,
        headers: Mapping[str, str] | None = None,
        local_host: str | None = None,
    ) -> AsyncIterator[RawWs]:
        """Upgrade (from ``local_host``, e.g. another loopback address) and yield once the response is in."""
        uri = parse_uri(url)
        stream = await anyio.connect_tcp(uri.host, uri.port, local_host=local_host)
        async with stream:
            protocol = ClientProtocol(
                uri,
                subprotocols=[Subprotocol(s) for s in subprotocols] if subprotocols is not None else None,
                max_size=None,
            )
            request = protocol.connect()
            if origin is not None:
                request.headers["Origin"] = origin
            for name, value in (headers or {}).items():
                request.headers[name] = value
            protocol.send_request(request)
            raw = cls(stream, protocol)
            await raw.flush()
            with anyio.fail_after(5):
                while raw.response is None:
                    await raw.read()
            yield raw

    async def flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                await self.stream.send(data)

    async def read(self) -> None:
        try:
            chunk = await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            self.protocol.receive_eof()
        else:
            self.protocol.receive_data(chunk)
        for event in self.protocol.events_received():
            if isinstance(event, Response):
                self.response = event
            else:
                assert isinstance(event, Frame)
                self.frames.append(event)
        await self.flush()

    async def send(self, message: dict[str, Any]) -> None:
        self.protocol.send_text(msgspec.json.encode(message))
        await self.flush()

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while True:
                for i, frame in enumerate(self.frames):
                    if frame.opcode is Opcode.TEXT:
                        del self.frames[i]
                        result: dict[str, Any] = msgspec.json.decode(frame.data)
                        return result
                assert self.protocol.state is not CLOSED, "connection closed"
                await self.read()

    async def close_code(self, timeout: float = 5.0) -> int | None:
        """Read until the server closes; the code of its close frame."""
        with anyio.fail_after(timeout):
            while self.protocol.state is not CLOSED:
                await self.read()
        return self.protocol.close_rcvd.code if self.protocol.close_rcvd else None


async def http_get(host: str, port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET (no upgrade): status, headers (lower-case names) and body, read to EOF."""
    async with await anyio.connect_tcp(host, port) as stream:
        await stream.send(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        data = b""
        with anyio.fail_after(5):
            while True:
                try:
                    data += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body
