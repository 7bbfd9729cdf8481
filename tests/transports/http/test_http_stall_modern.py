"""On revision 2026-07-28 too, a client that keeps its POST open but never reads must not hang the handler.

A 2026-07-28 request's notes (progress, logs) go from its handler to its POST through a small
buffer; the POST's coroutine writes them to the ASGI ``send``. When the client stops reading,
that ``send`` waits for the socket to drain, the buffer fills, and the handler's next note
would wait for it for ever. ``Limits.stream_write_timeout`` bounds that wait (as it bounds a
write on the handshake era, ``tests/transports/http/test_http_stall.py``): past it the client is treated as
gone, its later notes are dropped, and the handler runs to its end. Real servers (uvicorn on
asyncio, minimcp's server on trio; and hypercorn on both), a raw socket client.
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

V = "2026-07-28"
#: Far more than the socket buffers of both ends hold (the client's receive buffer is made small too).
BIG = 8 * 1024 * 1024
#: Notes after the big one: more than the POST's note buffer holds.
NOTES = 40


def chatty_server(ended: anyio.Event) -> Server:
    server = Server("stall-modern", "1.0.0", limits=Limits(stream_write_timeout=1.0, progress_interval=0))

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """A note far larger than the socket buffers, then many small ones, then a result."""
        await ctx.report_progress(0, NOTES, "y" * BIG)
        for k in range(1, NOTES + 1):
            await ctx.report_progress(k, NOTES, "step")
        ended.set()
        return "done"

    return server


def modern_request(
    id: int, method: str, params: dict[str, Any], name: str | None = None
) -> tuple[dict[str, str], bytes]:
    """The headers and body of a 2026-07-28 request (the envelope added to ``params``' ``_meta``)."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    params = {**params, "_meta": {**envelope, **params.get("_meta", {})}}
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Protocol-Version": V,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers, body


def raw_post(port: int, headers: dict[str, str], body: bytes) -> bytes:
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize("asgi_server", [None, "hypercorn"])
async def test_stalled_reader_does_not_hang_a_modern_handler(
    anyio_backend: str, asgi_server: AsgiServer | None
) -> None:
    ended = anyio.Event()
    async with serving(chatty_server(ended), asgi_server) as (port, _app):
        # A raw client: it sends the call, then never reads (its receive buffer kept small).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            sock.connect(("127.0.0.1", port))  # loopback: accepted by the listen backlog at once
            call = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": 1}}
            sock.sendall(raw_post(port, *modern_request(1, "tools/call", call, "chatty")))
            # The handler must reach its end although its notes cannot be written.
            with anyio.fail_after(30):
                await ended.wait()

            # The app keeps serving 2026-07-28 requests.
            headers, content = modern_request(2, "tools/list", {})
            async with httpx.AsyncClient(timeout=30) as http:
                r = await http.post(f"http://127.0.0.1:{port}/mcp", content=content, headers=headers)
            assert r.status_code == 200, r.text
            assert r.json()["id"] == 2 and r.json()["result"]["tools"][0]["name"] == "chatty"
        finally:
            sock.close()
