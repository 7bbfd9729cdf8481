"""Shared by several test files: what tests/transports/http/test_http_modern.py sets up and others reuse."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minimcp import Server
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.http import serving_asgi
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture

httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")


V = "2026-07-28"


K_VERSION = "io.modelcontextprotocol/protocolVersion"


K_CAPS = "io.modelcontextprotocol/clientCapabilities"


K_INFO = "io.modelcontextprotocol/clientInfo"


FORM: dict[str, Any] = {"elicitation": {"form": {}}}


JSON_SSE = "application/json, text/event-stream"


def meta(caps: dict[str, Any] | None = None, *, version: Any = V, client: str | None = "raw") -> dict[str, Any]:
    m: dict[str, Any] = {K_VERSION: version, K_CAPS: FORM if caps is None else caps}
    if client is not None:
        m[K_INFO] = {"name": client, "version": "0"}
    return m


def modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"accept": JSON_SSE, "content-type": "application/json", "mcp-protocol-version": V, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    headers.update(extra)
    return headers


def body(id: Any, method: str, params: dict[str, Any] | None = None, *, envelope: bool = True) -> dict[str, Any]:
    p = dict(params or {})
    if envelope:
        p.setdefault("_meta", meta())
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": p}


class Modern:
    """A hand-driven 2026-07-28 HTTP client: one POST per request, the headers set from the body."""

    def __init__(self, http: Any, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = 0

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    async def post(self, message: dict[str, Any], **header_changes: str | None) -> Any:
        params = message.get("params") or {}
        name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
        headers = modern_headers(message["method"], name if isinstance(name, str) else None)
        for key, value in header_changes.items():
            key = key.replace("_", "-")
            if value is None:
                headers.pop(key, None)
            else:
                headers[key] = value
        return await self.http.post(self.url, content=json.dumps(message).encode(), headers=headers)

    async def request(self, method: str, params: dict[str, Any] | None = None, **header_changes: str | None) -> Any:
        return await self.post(body(self.next_id(), method, params), **header_changes)

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, responses: Any = None, state: Any = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        r = await self.request("tools/call", params)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/json")
        reply: dict[str, Any] = r.json()
        return reply


def input_required(reply: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    ((key, entry),) = result["inputRequests"].items()
    return key, entry, result["requestState"]


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


class Recorder:
    """An ASGI wrapper that records every HTTP request (method, headers, body) an app receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {
            "method": scope["method"],
            "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            "body": bytearray(),
        }
        self.requests.append(entry)

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                entry["body"] += message.get("body", b"")
            return message

        await self.app(scope, recording_receive, send)

    def posts(self) -> list[tuple[dict[str, str], dict[str, Any]]]:
        return [(r["headers"], json.loads(bytes(r["body"]))) for r in self.requests if r["method"] == "POST"]


@contextlib.asynccontextmanager
async def recorded(server: Server, **options: Any) -> AsyncIterator[tuple[str, StreamableHTTPApp, Recorder]]:
    """``server``'s app behind a :class:`Recorder`, on hypercorn (the app started by ASGI lifespan)."""
    app = StreamableHTTPApp(server, **options)
    recorder = Recorder(app)
    async with serving_asgi(recorder) as base:
        yield base + "/mcp", app, recorder



@contextlib.asynccontextmanager
async def modern_http(url: str) -> AsyncIterator[Modern]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None)) as http:
        yield Modern(http, url)


def error_of(r: Any, status: int, code: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    reply = r.json()
    assert reply["error"]["code"] == code, reply
    assert "mcp-session-id" not in r.headers
    return dict(reply)


def complete_text(reply: dict[str, Any]) -> str:
    result = reply["result"]
    assert result["resultType"] == "complete", result
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
