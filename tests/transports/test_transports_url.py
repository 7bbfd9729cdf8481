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
from tests.helpers import connected
from tests.helpers.url_mode import asgi_call

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import booking as booking_example  # noqa: E402

pytest.importorskip("httpx")
pytest.importorskip("websockets")


@contextlib.asynccontextmanager
async def over(kind: str, app: Any, **client_options: Any) -> AsyncIterator[Client]:
    """A minimcp client connected to ``app.server`` over ``kind`` (http or ws) on 127.0.0.1."""
    async with anyio.create_task_group() as tg:
        if kind == "http":
            from minimcp import connect_http, serve_http

            port = await tg.start(serve_http, app.server)
            connect = connect_http(f"http://127.0.0.1:{port}/mcp", **client_options)
        else:
            from minimcp import connect_websocket, serve_websocket

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


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_calendar_authorization_is_one_per_session_and_ends_with_it_over(kind: str) -> None:
    """Many unauthorized add_to_calendar calls leave one pending authorization; none once the session ends."""
    from minimcp import Declined, UrlElicitationRequired

    app = booking_example.build()
    app.pages_url = "http://127.0.0.1:9"

    async def refuse(request: UrlElicitationRequest) -> Any:
        return Declined()

    with anyio.fail_after(60):
        async with over(kind, app, url_handler=refuse) as client:
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert made.structured_content is not None
            eids: set[str] = set()
            for _ in range(100):
                with pytest.raises(UrlElicitationRequired) as info:
                    await client.call_tool("add_to_calendar", {"booking_id": made.structured_content["booking_id"]})
                eids.update(step.elicitation_id for step in info.value.elicitations)
            assert len(eids) == 1 and set(app.authorizations) == eids
        # The client has gone (HTTP: DELETE; WebSocket: closed): its session ends, and its entry with it.
        while app.authorizations:  # noqa: ASYNC110 - the server ends the session in its own time
            await anyio.sleep(0.01)
        assert app._pending_authorization == {}
        status, _ = await asgi_call(app.pages, "POST", f"http://127.0.0.1:9/authorize/{eids.pop()}")
        assert status == 404


async def test_pages_served_on_a_socket_refuse_foreign_host_and_cross_site_post() -> None:
    """The example's own page server (stdio mode), real HTTP requests as a rebinding page or another site sends."""
    import httpx

    from minimcp.transports.asgi_server import serve_asgi

    app = booking_example.build()
    seen: list[UrlElicitationRequest] = []

    async def consent(request: UrlElicitationRequest) -> Any:
        seen.append(request)
        return Accepted(None)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_asgi, app.pages, "127.0.0.1", 0)
            app.pages_url = origin = f"http://127.0.0.1:{port}"
            async with connected(app.server, url_handler=consent) as (client, _), httpx.AsyncClient() as http:
                result = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
                assert result.structured_content is not None
                booking_id = result.structured_content["booking_id"]
                [request] = seen
                form = {"content-type": "application/x-www-form-urlencoded"}
                for headers in ({"host": "evil.example"}, {"origin": "https://evil.example"}, {"origin": "null"}):
                    refused = await http.post(request.url, content=b"", headers={**form, **headers})
                    assert refused.status_code == 403, headers
                    assert (await http.get(request.url, headers=headers)).status_code == 403
                assert app.bookings[booking_id].status == "deposit_pending"  # nothing changed
                paid = await http.post(request.url, content=b"", headers={**form, "origin": origin})
                assert paid.status_code == 200 and "paid" in paid.text
                assert app.bookings[booking_id].status == "booked"
                assert await client.wait_elicitation_complete(request.elicitation_id, timeout=10)
            tg.cancel_scope.cancel()
