"""Shared by several test files: what tests/transports/http/test_http_stall.py sets up and others reuse."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator

import anyio
import pytest

from minimcp import Server, serve_http
from minimcp.transports.asgi_server import AsgiServer
from minimcp.transports.http import StreamableHTTPApp

pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")
httpx = pytest.importorskip("httpx")


@contextlib.asynccontextmanager
async def serving(
    server: Server, asgi_server: AsgiServer | None = None
) -> AsyncIterator[tuple[int, StreamableHTTPApp]]:
    """``server`` over Streamable HTTP on ``asgi_server`` (default: ``serve_http``'s choice for the backend)."""
    app = StreamableHTTPApp(server)
    async with anyio.create_task_group() as tg:
        port = await tg.start(functools.partial(serve_http, app, asgi_server=asgi_server))
        try:
            yield port, app
        finally:
            tg.cancel_scope.cancel()

