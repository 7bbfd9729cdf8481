"""A client that keeps its connection open but never reads must not hang the handler writing to it.

The task that pushes an SSE event (the tool call's own handler, for its result) writes it
straight to the ASGI ``send``; when the client stops reading, that ``send`` waits for the
socket to drain. ``Limits.stream_write_timeout`` bounds that wait: past it the client is
treated as gone (its events stay in the replay buffer) and the handler ends normally.
Real servers (serve_http's own choice on each backend: uvicorn on asyncio, minimcp's server on trio;
and hypercorn, whose writes cannot be cut short, on both), a raw socket client.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import pytest

from minimcp import Context, Limits, Server
from minimcp.transports.asgi_server import AsgiServer
from tests.helpers.http_stall import serving

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")

V = "2025-11-25"
#: Far more than the socket buffers of both ends hold (the client's receive buffer is made small too).
BIG = 8 * 1024 * 1024


def big_server() -> Server:
    limits = Limits(stream_write_timeout=5.0)  # not too short: the resumption writes 16 MB at once
    server = Server("stall", "1.0.0", limits=limits)

    @server.tool()
    async def big(ctx: Context) -> str:
        """A progress note, then a result, each far larger than the socket buffers (two writes)."""
        await anyio.sleep(0.2)  # the response's head is out: this handler writes what it sends itself
        await ctx.report_progress(1, 2, "y" * BIG)
        return "x" * BIG

    return server




def post_bytes(port: int, session_id: str, message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Mcp-Session-Id: {session_id}\r\nMcp-Protocol-Version: {V}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@pytest.mark.parametrize("asgi_server", [None, "hypercorn"])
async def test_stalled_reader_does_not_hang_the_handler(anyio_backend: str, asgi_server: AsgiServer | None) -> None:
    async with serving(big_server(), asgi_server) as (port, app):
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None)) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            }
            r = await http.post(url, json=init, headers=headers)
            assert r.status_code == 200
            session_id = r.headers["mcp-session-id"]
            headers |= {"mcp-session-id": session_id, "mcp-protocol-version": V}
            r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            assert r.status_code == 202
            connection = app.connection(session_id)
            assert connection is not None
            session = connection.session

            # A raw client: it sends the call, then never reads (its receive buffer kept small).
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                sock.connect(("127.0.0.1", port))  # loopback: accepted by the listen backlog at once
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "big", "arguments": {}, "_meta": {"progressToken": 1}},
                }
                sock.sendall(post_bytes(port, session_id, call))
                # The handler starts, then must end although its result cannot be written.
                with anyio.fail_after(30):
                    while session.stats.requests_received < 2:  # noqa: ASYNC110 - initialize, then the call
                        await anyio.sleep(0.01)
                with anyio.fail_after(30):
                    while session.inflight_count:  # noqa: ASYNC110 - nothing to wait on: the condition is the test
                        await anyio.sleep(0.02)

                # The session keeps working, and the result waits in the replay buffer for a resumption.
                r = await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=headers)
                assert r.status_code == 200
                async with http.stream(
                    "GET", url, headers={**headers, "accept": "text/event-stream", "last-event-id": "2-0"}
                ) as response:
                    assert response.status_code == 200
                    data = b""
                    with anyio.fail_after(30):
                        async for chunk in response.aiter_bytes():
                            data += chunk
                    assert b'"id":1,"result"' in data
                    assert data.count(b"y") >= BIG and data.count(b"x") >= BIG
            finally:
                sock.close()
