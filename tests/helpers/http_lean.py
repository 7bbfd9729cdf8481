"""Shared by several test files: what tests/guards/test_http_lean.py sets up and others reuse."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Context, Server
from minimcp.transports.http import StreamableHTTPApp

V = "2025-11-25"


class Answer(msgspec.Struct):
    answer: str


def ask_server() -> Server:
    server = Server("lean", "1.0.0")

    @server.tool()
    async def ask(ctx: Context, i: int) -> str:
        """Ask one question and return the answer."""
        reply = await ctx.elicit(f"question {i}", Answer)
        return reply.value.answer if isinstance(reply, Accepted) else "no answer"

    return server


class Exchange:
    """One request driven into the app: its body comes in, then ``receive()`` waits until :attr:`gone` is set
    (a server that never says ``http.disconnect`` after the response, unless the client leaves)."""

    def __init__(self, body: dict[str, Any], session_id: str | None) -> None:
        self.body = json.dumps(body).encode()
        self.sent: list[MutableMapping[str, Any]] = []
        self.gone = anyio.Event()
        self.got_body = False
        self.changed = anyio.Event()
        headers = [
            (b"host", b"localhost"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]
        if session_id is not None:
            headers += [(b"mcp-session-id", session_id.encode()), (b"mcp-protocol-version", V.encode())]
        self.scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
        }

    async def receive(self) -> dict[str, Any]:
        if not self.got_body:
            self.got_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    async def run(self, app: StreamableHTTPApp) -> None:
        await app(self.scope, self.receive, self.send)

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages sent so far (SSE data lines)."""
        out = []
        for m in self.sent:
            for line in m.get("body", b"").split(b"\n"):
                if line.startswith(b"data: ") and len(line) > 6:
                    out.append(json.loads(line[6:]))
        return out

    async def wait_for(self, method_or_result: str) -> dict[str, Any]:
        while True:
            for m in self.messages():
                if m.get("method") == method_or_result or (method_or_result == "result" and "result" in m):
                    return m
            await self.changed.wait()


def ask_call(sid: str, i: int = 1) -> Exchange:
    """A ``tools/call`` of the ``ask`` tool (request id ``i``), on session ``sid``."""
    return Exchange(
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "ask", "arguments": {"i": i}}}, sid
    )


def accept(question: dict[str, Any], sid: str, answer: str) -> Exchange:
    """The client's answer to ``question`` (an ``elicitation/create``): accepted with ``answer``."""
    return Exchange(
        {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"answer": answer}}}, sid
    )


async def initialize(app: StreamableHTTPApp) -> tuple[str, Exchange]:
    init = Exchange(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": V,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        None,
    )
    await init.run(app)
    sid = dict(init.sent[0]["headers"])[b"mcp-session-id"].decode()
    done = Exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    await done.run(app)
    assert done.sent[0]["status"] == 202
    return sid, init

