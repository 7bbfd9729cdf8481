"""Shared by several test files: what tests/transports/http/test_http_modern_leg.py sets up and others reuse."""

from __future__ import annotations

import json
from typing import Any

V = "2026-07-28"


def call_scope(tool: str) -> tuple[dict[str, Any], bytes]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    params = {"name": tool, "arguments": {}, "_meta": meta}
    content = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()
    headers = {
        "host": "127.0.0.1:8000",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "content-length": str(len(content)),
        "mcp-protocol-version": V,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    return scope, content

