"""Shared by several test files: what tests/transports/http/test_http.py sets up and others reuse."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

import minimcp
from minimcp import Server, serve_http
from minimcp.core._backend import backend_name
from minimcp.transports import asgi_server
from minimcp.transports.http import StreamableHTTPApp

pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")
mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")


httpx = pytest.importorskip("httpx")


V = "2025-11-25"


JSON_SSE = "application/json, text/event-stream"


@contextlib.asynccontextmanager
async def serving(
    server: Server, *, asgi_server: str | None = None, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPApp]]:
    """``server`` on 127.0.0.1 at a free port; yields the endpoint URL and the app."""
    app = StreamableHTTPApp(server, **options)
    async with anyio.create_task_group() as tg:
        port = await tg.start(functools.partial(serve_http, app, asgi_server=asgi_server))  # type: ignore[arg-type]
        try:
            yield f"http://127.0.0.1:{port}/mcp", app
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def serving_asgi(app: Any) -> AsyncIterator[str]:
    """Any ASGI app (a mock) on hypercorn at a free port; yields its base URL."""
    backend = backend_name()
    sock = asgi_server.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(asgi_server.run_hypercorn, app, sock, stop, 1.0, backend)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            stop.set()


def dump(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def req(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_request(version: str = V, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return req(
        0,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {"elicitation": {}} if capabilities is None else capabilities,
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )


class SSE:
    """An independent, minimal SSE reader for checking what is on the wire."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.lines = response.aiter_lines()

    async def block(self, timeout: float = 10) -> dict[str, Any] | None:
        """The next block (an event or a comment), as ``{field: value}``; None at the end."""
        block: dict[str, Any] = {}
        with anyio.fail_after(timeout):
            async for line in self.lines:
                if line == "":
                    if block:
                        return block
                    continue
                if line.startswith(":"):
                    block.setdefault("comment", line[1:].strip())
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                block[name] = block[name] + "\n" + value if name == "data" and name in block else value
        return block or None

    async def message(self, timeout: float = 10) -> tuple[str, dict[str, Any]] | None:
        """The next event with data: (its id, the decoded JSON-RPC message); None at the end."""
        while True:
            block = await self.block(timeout)
            if block is None:
                return None
            if block.get("data"):
                return block.get("id", ""), json.loads(block["data"])


class Raw:
    """A hand-driven HTTP client session."""

    def __init__(self, http: Any, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.version: str | None = None

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"accept": JSON_SSE, "content-type": "application/json"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.version:
            headers["mcp-protocol-version"] = self.version
        headers.update(extra)
        return headers

    async def post(self, message: Any, **extra: str) -> Any:
        body = message if isinstance(message, bytes) else dump(message)
        return await self.http.post(self.url, content=body, headers=self.headers(**extra))

    def stream(self, message: dict[str, Any], **extra: str) -> Any:
        return self.http.stream("POST", self.url, content=dump(message), headers=self.headers(**extra))

    def get(self, **extra: str) -> Any:
        headers = self.headers(accept="text/event-stream", **extra)
        headers.pop("content-type")
        return self.http.stream("GET", self.url, headers=headers)

    async def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """POST a request and read its SSE answer up to the response."""
        async with self.stream(message) as response:
            assert response.status_code == 200, await response.aread()
            sse = SSE(response)
            while (item := await sse.message()) is not None:
                if item[1].get("id") == message["id"] and "method" not in item[1]:
                    return item[1]
        raise AssertionError("stream ended without the response")

    async def initialize(self, version: str = V, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        async with self.stream(initialize_request(version, capabilities)) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            self.session_id = response.headers["mcp-session-id"]
            item = await SSE(response).message()
            assert item is not None
            result = item[1]
        self.version = result["result"]["protocolVersion"]
        answer = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert answer.status_code == 202
        return result


@contextlib.asynccontextmanager
async def raw_session(url: str, **init: Any) -> AsyncIterator[Raw]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None)) as http:
        raw = Raw(http, url)
        await raw.initialize(**init)
        yield raw


def accept_date(date: str) -> Any:
    async def handler(request: minimcp.ElicitationRequest) -> Any:
        handler.questions.append(request)  # type: ignore[attr-defined]
        return minimcp.Accepted({"accept_alternative": True, "date": date})

    handler.questions = []  # type: ignore[attr-defined]
    return handler

BOOK_FULL_DAY = {"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 2}}
