"""Shared by several test files: what tests/transports/test_asgi_guard.py sets up and others reuse."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import pytest

from minimcp import Server, serve_http
from minimcp.core._backend import backend_name
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers import http as http_helpers

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")
pytest.importorskip("httptools")


UVICORN = ["uvicorn-h11", "uvicorn-httptools"]


@contextlib.asynccontextmanager
async def serving(
    server: Server, asgi_server: str | None = None, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPApp]]:
    """``http_helpers.serving`` on any server and backend: uvicorn under a trio test runs in a thread."""
    if asgi_server in (None, "hypercorn", "minimcp") or backend_name() == "asyncio":
        async with http_helpers.serving(server, asgi_server=asgi_server, **options) as got:
            yield got
        return
    app = StreamableHTTPApp(server, **options)
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            box["port"] = await tg.start(functools.partial(serve_http, app, asgi_server=asgi_server))  # type: ignore[arg-type]
            box["stop"] = functools.partial(asyncio.get_running_loop().call_soon_threadsafe, tg.cancel_scope.cancel)
            ready.set()

    def run() -> None:
        try:
            anyio.run(main, backend="asyncio")
        except BaseException as exc:  # handed to the test below
            box["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=run, name=f"{asgi_server} server", daemon=True)
    thread.start()
    try:
        assert await anyio.to_thread.run_sync(ready.wait, 30)
        if "error" in box:
            raise box["error"]
        yield f"http://127.0.0.1:{box['port']}/mcp", app
    finally:
        if "stop" in box:
            with contextlib.suppress(RuntimeError):  # its loop already ended: its own error is raised below
                box["stop"]()
        await anyio.to_thread.run_sync(thread.join, 30)
        if "error" in box:  # also when the test failed: the server's loop dying is then why (a client hangs)
            raise box["error"]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])

