"""A raw in-process ASGI client for ``bench_modern.py --http``: revision 2026-07-28 POSTs, no socket.

It calls the Streamable HTTP app as an ASGI server would (one ``app(scope, receive, send)``
per POST), so that what the *app* holds per parked call can be measured apart from any
ASGI server, HTTP parser or driver: ``bench_modern.py`` leaves out every allocation made
on a line of this file. What a real ASGI server adds per request is not in the figure.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from minimcp.transports.http._headers import request_headers

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
_encode = msgspec.json.Encoder().encode


class RawHttpClient:
    """POSTs ``tools/call`` of the benchmark tool ``ask`` to ``app``; ``call`` answers its one question."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ids = 0
        #: (i, question message, requestState) of calls left parked by :meth:`fill`.
        self.held: list[tuple[int, str, str]] = []

    async def post(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        body = _encode({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        params_raw = _encode(params)
        headers = [
            (b"host", b"localhost"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
            *((k.encode(), v.encode()) for k, v in request_headers(method, params_raw).items()),
        ]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
                 "client": ("127.0.0.1", 5000), "http_version": "1.1", "scheme": "http",
                 "query_string": b"", "root_path": ""}  # fmt: skip
        sent: list[bytes] = []
        got = False
        done = anyio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal got
            if not got:
                got = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # the client stays until its response is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                sent.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        await self.app(scope, receive, send)
        data = b"".join(sent)
        if not data.lstrip().startswith(b"{"):  # an SSE stream: its last data line is the response
            data = [line[6:] for line in data.split(b"\n") if line.startswith(b"data: ")][-1]
        message = msgspec.json.decode(data)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"]

    async def first(self, i: int) -> tuple[str, str]:
        result = await self.post("tools/call", {"name": "ask", "arguments": {"i": i}, "_meta": ENVELOPE})
        assert result["resultType"] == "input_required", result
        return result["inputRequests"]["q1"]["params"]["message"], result["requestState"]

    async def retry(self, i: int, message: str, state: str) -> str:
        result = await self.post("tools/call", {
            "name": "ask", "arguments": {"i": i}, "_meta": ENVELOPE,
            "inputResponses": {"q1": {"action": "accept", "content": {"n": int(message.split()[1])}}},
            "requestState": state,
        })  # fmt: skip
        return str(result["content"][0]["text"])

    async def call(self, i: int) -> str:
        message, state = await self.first(i)
        return await self.retry(i, message, state)

    async def fill(self, n: int) -> None:
        """Leave ``n`` calls parked (one after another: each POST returns at its question)."""
        for i in range(n):
            message, state = await self.first(i)
            self.held.append((i, message, state))

    async def drain(self) -> None:
        held, self.held = self.held, []
        for i, message, state in held:
            assert await self.retry(i, message, state) == str(i)
