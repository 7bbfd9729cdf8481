"""The booking URL-mode flows (deposit page, calendar -32042) over Streamable HTTP and WebSocket."""

from __future__ import annotations

import contextlib
import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Client, UrlElicitationRequest
from tests.test_url_mode import asgi_call

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import booking as booking_example  # noqa: E402

pytest.importorskip("httpx")
pytest.importorskip("websockets")


@contextlib.asynccontextmanager
async def over(kind: str, app: Any, **client_options: Any) -> AsyncIterator[Client]:
    """A minimcp client connected to ``app.server`` over ``kind`` (http or ws) on 127.0.0.1."""
    async with anyio.create_task_group() as tg:
        if kind == "http":
            from minimcp.transports.http import connect_http, serve_http

            port = await tg.start(serve_http, app.server)
            connect = connect_http(f"http://127.0.0.1:{port}/mcp", **client_options)
        else:
            from minimcp.transports.websocket import connect_websocket, serve_websocket

            port = await tg.start(serve_websocket, app.server)
            connect = connect_websocket(f"ws://127.0.0.1:{port}/mcp", **client_options)
        async with connect as client:
            yield client
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_deposit_paid_in_the_browser_over(kind: str) -> None:
    app = booking_example.build()
    app.pages_url = "http://127.0.0.1:9"  # the pages are driven in process (asgi_call)
    seen: list[UrlElicitationRequest] = []
    completed: list[str] = []

    async def consent(request: UrlElicitationRequest) -> Any:
        seen.append(request)
        return Accepted(None)

    with anyio.fail_after(30):
        async with over(kind, app, url_handler=consent, on_elicitation_complete=completed.append) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
            structured = result.structured_content
            assert structured is not None and structured["status"] == "deposit_pending"
            [request] = seen
            assert request.elicitation_id == structured["elicitation_id"]
            assert request.info.host == "127.0.0.1" and "/deposit/" in request.url
            status, page = await asgi_call(app.pages, "POST", request.url)  # the person pays
            assert status == 200 and "paid" in page
            assert await client.wait_elicitation_complete(request.elicitation_id, timeout=10)
            assert completed == [request.elicitation_id]
            now = await client.call_tool("booking_status", {"booking_id": structured["booking_id"]})
            assert now.structured_content is not None and now.structured_content["status"] == "booked"


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_calendar_minus_32042_then_retry_over(kind: str) -> None:
    app = booking_example.build()
    app.pages_url = "http://127.0.0.1:9"

    async def authorize(request: UrlElicitationRequest) -> Any:
        status, _ = await asgi_call(app.pages, "POST", request.url)  # consent, then the page
        assert status == 200
        return Accepted(None)

    with anyio.fail_after(30):
        async with over(kind, app, url_handler=authorize) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert made.structured_content is not None
            added = await client.call_tool_with_consent(
                "add_to_calendar", {"booking_id": made.structured_content["booking_id"]}, completion_timeout=10
            )
            assert added.structured_content is not None and added.structured_content["status"] == "added"
