"""Streamable HTTP: our ASGI app and our httpx client, on real sockets (127.0.0.1, free ports).

- minimcp Client over ``http_client`` <-> ``StreamableHTTPApp`` served by ``serve_http``
  (uvicorn on asyncio, hypercorn on trio; hypercorn on asyncio too);
- raw HTTP checks of the server with httpx (status codes, headers, SSE details,
  sessions, resumption, disconnect != cancel);
- the client's own edge cases against small mock ASGI apps (JSON answers, a stream
  that closes before the response, HTTP errors, 404 for the session);
- the official SDK (``mcp`` 2.x) both ways: its client against our server, and our
  client against its server (a subprocess);
- the sans-I/O SSE decoder.

Every async test runs on asyncio and on trio (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import socket
import sys
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import anyio
import msgspec
import pytest

import minimcp
from minimcp import Limits, Server, connect_http, serve_http
from minimcp.transports.http import StreamableHTTPApp, http_client
from minimcp.transports.http._asgi import END_RECEIVE, PARK, SEND_NOW, end_receive_of, park_of, send_now_of
from minimcp.transports.http._sse import SSEDecoder, encode_event

pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "examples"))

from booking import build_server  # noqa: E402
from hello_server import app as hello_app  # noqa: E402

from tests.helpers.http import (  # noqa: E402
    BOOK_FULL_DAY,
    JSON_SSE,
    SSE,
    Raw,
    V,
    accept_date,
    dump,
    httpx,
    initialize_request,
    raw_session,
    req,
    serving,
    serving_asgi,
)
from tests.helpers.interop import serving_script  # noqa: E402

TIMEOUT = 20


# --- helpers -----------------------------------------------------------------------------------






















# --- minimcp client <-> minimcp server over HTTP -------------------------------------------------


@pytest.mark.parametrize("asgi_server", ["uvicorn-or-hypercorn", "hypercorn"])
async def test_booking_over_http(anyio_backend: str, asgi_server: str) -> None:
    # The default ASGI server per backend (uvicorn on asyncio, hypercorn on trio), then
    # hypercorn explicitly (on trio the two runs are the same set-up, which is harmless).
    asgi_server_arg = None if asgi_server == "uvicorn-or-hypercorn" else asgi_server
    server = build_server()
    handler = accept_date("2025-12-26")
    with anyio.fail_after(TIMEOUT):
        async with serving(server, asgi_server=asgi_server_arg) as (url, app):
            async with connect_http(url, elicitation_handler=handler) as client:
                assert client.protocol_version == V
                assert client.server_info is not None and client.server_info.name == "booking"
                assert app.session_count == 1
                names = [tool.name for tool in await client.list_tools()]
                assert names[0] == "book_table"

                # Full date: the question travels on the tools/call SSE stream, the answer as a POST.
                result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                assert not result.is_error, result.text
                assert result.structured_content is not None
                assert result.structured_content["status"] == "booked"
                assert result.structured_content["date"] == "2025-12-26"
                assert len(handler.questions) == 1
                assert "2025-12-25" in handler.questions[0].message

                # A tool error (a party of 9 needs a deposit this client cannot pay).
                failed = await client.call_tool("book_table", {"date": "2025-12-20", "party_size": 9})
                assert failed.is_error is True
                assert "deposit" in failed.text
                await client.ping()
            # Closing the client sent DELETE: the session is gone on the server.
            with anyio.fail_after(5):
                while server.connections:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)
            assert app.session_count == 0


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("asgi_server", ["minimcp", "hypercorn"])
async def test_on_trio_minimcps_own_server_writes_sse_events_without_a_task_each(asgi_server: str) -> None:
    # minimcp's server offers send_now: the responses write their events themselves (no hand-off task per
    # write, and a write deadline); hypercorn does not: each write is handed to a task of the app.
    server = build_server()
    handed: list[object] = []
    with anyio.fail_after(TIMEOUT):
        async with (
            serving(server, asgi_server=asgi_server) as (url, app),
            connect_http(url, elicitation_handler=accept_date("2025-12-26")) as client,
        ):
            (sess,) = app._sessions.values()
            hand_off = sess.transport.hand_off
            assert hand_off is not None  # trio

            def counted(flush: Any) -> object:
                handed.append(flush)
                return hand_off(flush)

            sess.transport.hand_off = counted
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert result.structured_content is not None
            assert result.structured_content["status"] == "booked"
            await client.ping()
    if asgi_server == "minimcp":
        assert handed == []
    else:
        assert handed  # (a write under way takes what is pushed meanwhile: one task may carry several events)


def test_send_now_is_used_only_with_the_servers_own_send() -> None:
    # A middleware that wraps send (compressing, say) and passes the scope on must not be written past.
    class Connection:
        async def send(self, message: Any) -> None: ...

        def send_now(self, message: Any) -> None: ...

    conn, other = Connection(), Connection()
    scope: dict[str, Any] = {"extensions": {SEND_NOW: conn.send_now}}
    assert send_now_of(scope, conn.send) == conn.send_now

    async def wrapped(message: Any) -> None:
        await conn.send(message)

    assert send_now_of(scope, wrapped) is None
    assert send_now_of(scope, other.send) is None
    assert send_now_of({}, conn.send) is None


def test_end_receive_is_used_only_with_the_servers_own_receive() -> None:
    # Ending the server's wait would not end the wait of a middleware that wraps receive.
    class Connection:
        async def receive(self) -> Any: ...

        def end_receive(self) -> None: ...

    conn, other = Connection(), Connection()
    scope: dict[str, Any] = {"extensions": {END_RECEIVE: conn.end_receive}}
    assert end_receive_of(scope, conn.receive) == conn.end_receive

    async def wrapped() -> Any:
        return await conn.receive()

    assert end_receive_of(scope, wrapped) is None
    assert end_receive_of(scope, other.receive) is None
    assert end_receive_of({}, conn.receive) is None


def test_park_is_used_only_with_the_servers_own_receive_and_send() -> None:
    # A parked response is written and ended past the app's call: a middleware wrapping either would be bypassed.
    class Connection:
        async def receive(self) -> Any: ...

        async def send(self, message: Any) -> None: ...

        def send_now(self, message: Any) -> None: ...

        def park(self, on_end: Any) -> bool:
            return True

    conn, other = Connection(), Connection()
    scope: dict[str, Any] = {"extensions": {SEND_NOW: conn.send_now, PARK: conn.park}}
    assert park_of(scope, conn.receive, conn.send) == conn.park

    async def wrapped_receive() -> Any:
        return await conn.receive()

    async def wrapped_send(message: Any) -> None:
        await conn.send(message)

    assert park_of(scope, wrapped_receive, conn.send) is None
    assert park_of(scope, conn.receive, wrapped_send) is None
    assert park_of(scope, other.receive, other.send) is None
    assert park_of({"extensions": {PARK: conn.park}}, conn.receive, conn.send) is None  # (no send_now: no park)


def accept_alternative(question: dict[str, Any]) -> dict[str, Any]:
    """The person's answer to the booking's question: the alternative date, accepted."""
    return {
        "jsonrpc": "2.0",
        "id": question["id"],
        "result": {"action": "accept", "content": {"accept_alternative": True, "date": "2025-12-26"}},
    }


async def test_booking_decline_over_http() -> None:
    server = build_server()

    async def decline(request: minimcp.ElicitationRequest) -> Any:
        return minimcp.Declined()

    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), connect_http(url, elicitation_handler=decline) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == "declined"


async def test_hello_server_over_http() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app) as (url, _), connect_http(url) as client:
            assert [tool.name for tool in await client.list_tools()] == ["greet", "add"]
            assert (await client.call_tool("greet", {"name": "http"})).text == "Hello, http!"
            bad = await client.call_tool("add", {"a": 1, "b": "x"})
            assert bad.is_error is True and "'b'" in bad.text
            with pytest.raises(minimcp.McpError) as info:
                await client.call_tool("nope", {})
            assert info.value.code == -32602


async def test_app_started_by_asgi_lifespan() -> None:
    # Mounted in an ASGI server directly (no serve_http): the lifespan protocol runs the sessions.
    app = StreamableHTTPApp(hello_app)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(app) as base, connect_http(base + "/mcp") as client:
            assert app.running
            assert (await client.call_tool("greet", {"name": "lifespan"})).text == "Hello, lifespan!"
            assert app.session_count == 1
        assert not app.running
        assert app.session_count == 0


async def test_server_shutdown_ends_a_pending_call() -> None:
    # The server goes away while a tool waits for the person: the call ends with an error, no hang.
    server = build_server()
    asked = anyio.Event()
    errors: list[minimcp.McpError] = []

    async def never_answers(request: minimcp.ElicitationRequest) -> Any:
        asked.set()
        await anyio.sleep_forever()

    app = StreamableHTTPApp(server, retry_interval=0.1)
    server_scope = anyio.CancelScope()

    async def run_server(*, task_status: Any) -> None:
        with server_scope:
            await serve_http(app, task_status=task_status)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            port = await tg.start(run_server)
            async with connect_http(f"http://127.0.0.1:{port}/mcp", elicitation_handler=never_answers) as client:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
                async with anyio.create_task_group() as calls:

                    async def call() -> None:
                        try:
                            await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                        except minimcp.McpError as exc:
                            errors.append(exc)

                    calls.start_soon(call)
                    await asked.wait()
                    server_scope.cancel()  # the whole HTTP server stops
    assert len(errors) == 1, errors
    assert errors[0].code == -32000  # connection closed
    assert "resume" in errors[0].message
    assert server.connections == set()


async def test_concurrent_calls_use_separate_streams() -> None:
    server = Server("slow")
    gate = anyio.Event()

    @server.tool()
    async def wait(n: int) -> str:
        await gate.wait()
        return str(n)

    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), connect_http(url) as client:
            results: dict[int, str] = {}

            async def call(n: int) -> None:
                results[n] = (await client.call_tool("wait", {"n": n})).text

            async with anyio.create_task_group() as tg:
                for n in range(5):
                    tg.start_soon(call, n)
                await anyio.sleep(0.2)
                gate.set()
    assert results == {n: str(n) for n in range(5)}


# --- raw HTTP: status codes and headers ----------------------------------------------------------


async def test_raw_http_rejections() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app, limits=Limits(max_message_bytes=2000)) as (url, _):  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with httpx.AsyncClient() as http:
                raw = Raw(http, url)
                init = dump(initialize_request())

                # Accept must list both media types.
                r = await raw.post(init, accept="application/json")
                assert r.status_code == 406
                r = await raw.post(init, **{"content-type": "text/plain"})
                assert r.status_code == 415

                # No session id on a non-initialize request.
                r = await raw.post(req(1, "tools/list"))
                assert r.status_code == 400
                assert "MCP-Session-Id" in r.json()["error"]["message"]

                # A session id nobody issued.
                r = await raw.post(req(1, "tools/list"), **{"mcp-session-id": "no-such-session"})
                assert r.status_code == 404

                # Other paths and methods.
                r = await http.post(url.replace("/mcp", "/other"), content=init, headers=raw.headers())
                assert r.status_code == 404
                r = await http.put(url, content=init, headers=raw.headers())
                assert r.status_code == 405
                assert "POST" in r.headers["allow"]

                # DNS rebinding protection: a foreign Origin or Host is refused.
                r = await raw.post(init, origin="http://evil.example")
                assert r.status_code == 403
                r = await raw.post(init, host="evil.example:80")
                assert r.status_code == 403
                r = await raw.post(init, origin="null")
                assert r.status_code == 403
                assert len(hello_app.connections) == 0

                # Loopback names and origins are fine.
                async with raw.stream(initialize_request(), origin="http://localhost:5173", host="localhost") as ok:
                    assert ok.status_code == 200
                    raw.session_id = ok.headers["mcp-session-id"]
                    await ok.aread()
                raw.version = V

                # Invalid JSON, a batch, an envelope that is not JSON-RPC.
                r = await raw.post(b"{not json")
                assert r.status_code == 400
                assert r.json()["error"]["code"] == -32700
                r = await raw.post(dump([req(1, "ping"), req(2, "ping")]))  # type: ignore[arg-type]
                assert r.status_code == 400
                assert r.json()["error"]["code"] == -32600
                assert r.json()["jsonrpc"] == "2.0"
                r = await raw.post({"jsonrpc": "1.0", "id": 1, "method": "ping"})
                assert r.status_code == 400
                assert r.json()["error"]["code"] == -32600

                # Too large: refused without reading it all.
                r = await raw.post(dump(req(5, "ping", {"pad": "x" * 5000})))
                assert r.status_code == 413

                # Unsupported protocol version header.
                r = await raw.post(req(6, "ping"), **{"mcp-protocol-version": "1999-01-01"})
                assert r.status_code == 400
                assert "1999-01-01" in r.json()["error"]["message"]

                # Notifications and responses: 202, empty body.
                r = await raw.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
                assert r.status_code == 202
                assert r.content == b""
                r = await raw.post({"jsonrpc": "2.0", "id": 99, "result": {}})
                assert r.status_code == 202

                # GET needs text/event-stream in Accept.
                r = await http.get(url, headers={"accept": "application/json", "mcp-session-id": raw.session_id})
                assert r.status_code == 406

                # A request still works after all that.
                assert (await raw.call(req(7, "ping"))) == {"jsonrpc": "2.0", "id": 7, "result": {}}


async def test_app_called_directly_mounted_under_a_prefix() -> None:
    # No ASGI server: the app honours root_path, and refuses to start sessions when not running.
    app = StreamableHTTPApp(hello_app)
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": dump(initialize_request()), "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [(b"host", b"localhost"), (b"accept", JSON_SSE.encode()), (b"content-type", b"application/json")]
    scope = {"type": "http", "method": "POST", "path": "/api/mcp", "root_path": "/api", "headers": headers}
    await app(scope, receive, send)
    assert sent[0]["status"] == 503
    assert b"not running" in sent[1]["body"]
    sent.clear()
    await app({**scope, "path": "/api/other"}, receive, send)
    assert sent[0]["status"] == 404


async def test_priming_event_and_event_ids() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app, retry_interval=0.25) as (url, _), raw_session(url) as raw:
            async with raw.stream(req(1, "tools/call", {"name": "greet", "arguments": {"name": "x"}})) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                sse = SSE(response)
                priming = await sse.block()
                assert priming is not None
                assert priming["id"]
                assert priming.get("data", "") == ""
                assert priming["retry"] == "250"
                item = await sse.message()
                assert item is not None
                event_id, message = item
                assert message["id"] == 1 and "result" in message
                assert event_id and event_id != priming["id"]
                assert await sse.block() is None  # the response ends the stream
            async with raw.stream(req(2, "ping")) as response:
                sse = SSE(response)
                second = await sse.block()
                assert second is not None
                assert second["id"] != priming["id"]  # ids are unique across the session's streams


async def test_no_priming_event_for_older_clients() -> None:
    # Older clients (python-sdk 1.x for one) choke on an event without data: only 2025-11-25+ gets one.
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app) as (url, _), raw_session(url, version="2025-06-18") as raw:
            assert raw.version == "2025-06-18"
            async with raw.stream(req(1, "ping")) as response:
                first = await SSE(response).block()
                assert first is not None
                assert json.loads(first["data"]) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_keepalive_comments_while_a_question_waits() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server, keepalive_interval=0.1) as (url, _), raw_session(url) as raw:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None and item[1]["method"] == "elicitation/create"
                pings = 0
                while pings < 3:
                    block = await sse.block()
                    assert block is not None and "data" not in block
                    pings += block.get("comment") == "ping"


async def test_nested_elicitation_travels_on_the_post_stream() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), raw_session(url) as raw:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with raw.stream(req("call-1", "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None
                question = item[1]
                assert question["method"] == "elicitation/create"
                assert question["params"]["mode"] == "form"
                answer = accept_alternative(question)
                r = await raw.post(answer)
                assert r.status_code == 202
                item = await sse.message()
                assert item is not None
                result = item[1]
                assert result["id"] == "call-1"
                assert result["result"]["structuredContent"]["status"] == "booked"
                assert await sse.block() is None


# --- sessions ------------------------------------------------------------------------------------


async def test_delete_mid_question_ends_the_session_and_its_work() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None and item[1]["method"] == "elicitation/create"
                assert conn.session.pending_count == 1
                assert conn.session.inflight_count == 1

                r = await raw.http.delete(url, headers=raw.headers())
                assert r.status_code == 204

                # Nothing is left: no pending question, no running tool, no connection.
                assert conn.session.pending_count == 0
                assert conn.session.holds_nothing()
                assert server.connections == set()
                assert app.session_count == 0
                # The call's stream ends without a response.
                assert await sse.message() is None
            # The session is gone for good.
            r = await raw.post(req(2, "ping"))
            assert r.status_code == 404
            r = await raw.http.delete(url, headers=raw.headers())
            assert r.status_code == 404


async def test_client_cancel_ends_the_call_stream() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None and item[1]["method"] == "elicitation/create"
                r = await raw.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
                assert r.status_code == 202
                # No response for a cancelled request (spec): the stream just ends.
                while (item := await sse.message()) is not None:
                    assert "method" in item[1], item
            with anyio.fail_after(5):
                while conn.session.pending_count or conn.session.inflight_count:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)
            # The session goes on.
            assert (await raw.call(req(2, "ping")))["result"] == {}


async def test_duplicate_inflight_request_id_is_refused() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), raw_session(url) as raw:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None
                r = await raw.post(req(1, "ping"))
                assert r.status_code == 409
                assert r.json()["id"] == 1


async def test_idle_sessions_expire() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server, session_idle_timeout=0.3) as (url, app), raw_session(url) as raw:
            assert app.session_count == 1
            # Wait for the expiry sweep and the end of its connection (bounded by TIMEOUT above),
            # however busy the machine.
            while app.session_count or server.connections:  # noqa: ASYNC110 - no event to wait on
                await anyio.sleep(0.05)
            r = await raw.post(req(1, "ping"))
            assert r.status_code == 404


async def test_open_stream_keeps_a_session_alive() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server, session_idle_timeout=0.3) as (url, app), raw_session(url) as raw:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                # Keep the reader referenced: a collected line iterator closes the response.
                sse = SSE(response)
                item = await sse.message()
                assert item is not None
                await anyio.sleep(1.0)
                assert app.session_count == 1  # a person is still reading the question


async def test_session_limit() -> None:
    # At the cap, a new session ends the least recently used one without pending work; when every
    # session has work pending (here: a question waiting for its person), the new one gets 503.
    with anyio.fail_after(TIMEOUT):
        async with serving(build_server(), max_sessions=1) as (url, _), raw_session(url) as raw:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)  # kept referenced: a collected line iterator closes the response
                assert await sse.message() is not None
                async with httpx.AsyncClient() as http:
                    r = await http.post(
                        url,
                        content=dump(initialize_request()),
                        headers={"accept": JSON_SSE, "content-type": "application/json"},
                    )
                    assert r.status_code == 503
                    assert r.json()["error"]["code"] == -32003
                    assert "all with work pending" in r.json()["error"]["message"]


async def test_an_expired_session_is_freed_at_once() -> None:
    """Issue 15 item 8: the expiry loop kept the last session it saw (with its connection, streams
    and buffered events) alive until a later tick; now nothing refers to it once it has ended."""
    import gc
    import weakref

    with anyio.fail_after(TIMEOUT):
        async with serving(build_server(), session_idle_timeout=0.2) as (url, app):
            async with raw_session(url) as raw:
                assert raw.session_id is not None
                conn = app.connection(raw.session_id)
                assert conn is not None
                gone = weakref.ref(conn)
                del conn
            while app.session_count:  # noqa: ASYNC110 - the app's expiry task owns the table
                await anyio.sleep(0.05)
            for _ in range(20):  # the session's own tasks finish after it is taken out of the table
                gc.collect()
                if gone() is None:
                    break
                await anyio.sleep(0.05)
            assert gone() is None, gc.get_referrers(gone())


def test_client_key_counts_ipv6_per_64() -> None:
    from minimcp.transports._client_bounds import client_key

    assert client_key({"client": ("192.0.2.7", 5000)}) == "192.0.2.7"
    assert client_key({"client": ("2001:db8:1:2:aaaa::1", 5000)}) == client_key({"client": ("2001:db8:1:2::9", 1)})
    assert client_key({"client": ("2001:db8:1:3::1", 5000)}) != client_key({"client": ("2001:db8:1:2::1", 1)})
    assert client_key({}) == client_key({"client": None}) == ""


# --- streams: standalone GET, resumption, disconnect != cancel -----------------------------------


async def test_unrelated_messages_wait_for_the_get_stream() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            # No GET stream yet: the server's unrelated message waits in the buffer.
            await conn.session.notify("notifications/tools/list_changed")
            async with raw.get() as response:
                assert response.status_code == 200
                sse = SSE(response)
                item = await sse.message()
                assert item is not None
                assert item[1]["method"] == "notifications/tools/list_changed"
                # And later ones arrive live.
                await conn.session.notify("notifications/message", {"level": "info", "data": "hi"})
                item = await sse.message()
                assert item is not None and item[1]["method"] == "notifications/message"
                # Responses never travel on the GET stream.
                assert (await raw.call(req(1, "ping")))["id"] == 1
                with anyio.move_on_after(0.3):
                    extra = await sse.message()
                    raise AssertionError(f"unexpected message on the GET stream: {extra}")


async def test_client_reads_the_standalone_stream() -> None:
    # Server messages related to no request travel on the client's GET stream, both ways.
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app) as (url, app), http_client(url) as transport:  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with minimcp.Client(transport) as client:
                seen: list[str] = []
                arrived = anyio.Event()

                def on_notification(session: Any, notification: Any) -> None:
                    seen.append(notification.method)
                    arrived.set()

                client.handle_notification = on_notification  # type: ignore[method-assign]
                assert transport.session_id is not None
                conn = app.connection(transport.session_id)
                assert conn is not None
                await conn.session.notify("notifications/tools/list_changed")
                await arrived.wait()
                assert seen == ["notifications/tools/list_changed"]
                # A server-initiated request, answered by the client with a POST.
                assert msgspec.json.decode(await conn.session.request("ping", timeout=5)) == {}


async def test_a_dropped_stream_does_not_keep_the_session_alive() -> None:
    # The server notices the client went away (so idle expiry still works for abandoned sessions).
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server, session_idle_timeout=0.5) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                item = await sse.message()
                assert item is not None
            # The session ends at once; its connection a little later, in its own task (a busy
            # machine shows the gap): wait for both, bounded by TIMEOUT above.
            while app.session_count or server.connections:  # noqa: ASYNC110 - no event to wait on
                await anyio.sleep(0.05)
            assert conn.session.holds_nothing()


async def test_dropped_stream_is_not_a_cancel_and_resumes() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                priming = await sse.block()
                assert priming is not None and priming["id"]
                item = await sse.message()
                assert item is not None
                question_event_id, question = item
                assert question["method"] == "elicitation/create"
            # The connection is gone (the response body was not read to the end).
            await anyio.sleep(0.2)
            assert conn.session.pending_count == 1  # still waiting for the person
            assert conn.session.inflight_count == 1  # the tool is still running

            # The question is still answerable...
            answer = accept_alternative(question)
            assert (await raw.post(answer)).status_code == 202
            with anyio.fail_after(5):
                while conn.session.inflight_count:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)

            # ...and the result is fetched by resuming the stream after the question.
            async with raw.get(**{"last-event-id": question_event_id}) as resumed:
                assert resumed.status_code == 200
                sse = SSE(resumed)
                item = await sse.message()
                assert item is not None
                result = item[1]
                assert result["id"] == 1
                assert result["result"]["structuredContent"]["status"] == "booked"
                assert await sse.message() is None  # only that stream's events, then the end


async def test_a_resumption_ends_the_response_still_reading_the_stream_and_carries_the_rest() -> None:
    # The first response stays open (on trio minimcp's server holds it parked, with no task): a GET resuming
    # the same stream takes it over; the first ends cleanly, the second gets the result.
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), raw_session(url) as raw:
            assert raw.session_id is not None
            conn = app.connection(raw.session_id)
            assert conn is not None
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                first = SSE(response)
                assert await first.block() is not None  # priming
                item = await first.message()
                assert item is not None
                question_event_id, question = item
                async with raw.get(**{"last-event-id": question_event_id}) as resumed:
                    assert resumed.status_code == 200
                    assert await first.message() is None  # the first response ended (its end, not a reset)
                    answer = accept_alternative(question)
                    assert (await raw.post(answer)).status_code == 202
                    sse = SSE(resumed)
                    got = await sse.message()
                    assert got is not None and got[1]["id"] == 1
                    assert got[1]["result"]["structuredContent"]["status"] == "booked"
                    assert await sse.message() is None
            while conn.session.inflight_count:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)
            assert conn.session.pending_count == 0  # the question was answered: nothing waits


async def test_resume_from_the_priming_event_replays_the_stream() -> None:
    server = build_server()
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), raw_session(url) as raw:
            async with raw.stream(req(1, "tools/call", BOOK_FULL_DAY)) as response:
                sse = SSE(response)
                priming = await sse.block()
                assert priming is not None
                item = await sse.message()
                assert item is not None
            async with raw.get(**{"last-event-id": priming["id"]}) as resumed:
                sse = SSE(resumed)
                again = await sse.message()
                assert again is not None
                assert again == item  # the same event, with the same id
            r = await raw.http.get(
                url,
                headers={"accept": "text/event-stream", "mcp-session-id": raw.session_id, "last-event-id": "99-1"},
            )
            assert r.status_code == 400


# --- our client's edge cases ------------------------------------------------------------------


async def test_client_gets_a_clear_error_when_the_session_ends() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app) as (url, app):  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with http_client(url) as transport, minimcp.Client(transport) as client:
                assert transport.session_id is not None
                assert app.end_session(transport.session_id)
                with pytest.raises(minimcp.ConnectionClosed) as info:
                    await client.call_tool("greet", {"name": "x"})
                assert "404" in info.value.message
                assert "new session" in info.value.message


async def test_client_turns_http_errors_into_errors_for_the_call() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(hello_app, limits=Limits(max_message_bytes=1000)) as (url, _):  # noqa: SIM117 - one scope a line: the server, then what the test opens in it
            async with connect_http(url) as client:
                with pytest.raises(minimcp.McpError) as info:
                    await client.call_tool("greet", {"name": "x" * 5000})
                assert "413" in info.value.message
                # The session goes on.
                assert (await client.call_tool("greet", {"name": "y"})).text == "Hello, y!"


async def test_client_fails_clearly_when_nothing_listens() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with anyio.fail_after(TIMEOUT):
        with pytest.raises(minimcp.McpError) as info:
            async with connect_http(f"http://127.0.0.1:{port}/mcp"):
                pass
    assert info.value.code == -32000
    assert "failed" in info.value.message


class FlakyServer:
    """A mock MCP server (raw ASGI) that answers initialize with plain JSON and drops the
    tools/call stream after a priming event; the result comes on the resumed GET stream."""

    def __init__(self, retry_ms: int = 300) -> None:
        self.retry_ms = retry_ms
        self.dropped_at = 0.0
        self.resumed_at = 0.0
        self.last_event_id: str | None = None
        self.headers_seen: list[dict[str, str]] = []
        self.call_id: Any = None
        self.deleted = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.headers_seen.append(headers)
        method = scope["method"]
        if method == "DELETE":
            self.deleted = True
            await self.reply(send, 204)
            return
        if method == "GET":
            if "last-event-id" not in headers:
                await self.reply(send, 405)
                return
            self.resumed_at = anyio.current_time()
            self.last_event_id = headers["last-event-id"]
            result = {"jsonrpc": "2.0", "id": self.call_id, "result": {"content": [{"type": "text", "text": "ok"}]}}
            await self.reply(send, 200, encode_event(dump(result), id="e-2"), "text/event-stream")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        if request.get("method") == "initialize":
            result = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {
                    "protocolVersion": V,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "flaky", "version": "1"},
                },
            }
            await self.reply(send, 200, dump(result), "application/json", [(b"mcp-session-id", b"flaky-1")])
        elif request.get("method") == "tools/call":
            self.call_id = request["id"]
            priming = encode_event(None, id="e-1", retry=self.retry_ms)
            await self.reply(send, 200, priming, "text/event-stream")
            self.dropped_at = anyio.current_time()
        else:
            await self.reply(send, 202)

    @staticmethod
    async def reply(send: Any, status: int, body: bytes = b"", media: str | None = None, extra: Any = ()) -> None:
        headers = [(b"content-type", media.encode())] if media else []
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
        await send({"type": "http.response.body", "body": body})


async def test_client_resumes_a_stream_that_ends_before_the_response() -> None:
    mock = FlakyServer(retry_ms=300)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(mock) as base, connect_http(base + "/mcp") as client:
            assert client.server_info is not None and client.server_info.name == "flaky"
            result = await client.call_tool("anything", {})
            assert result.text == "ok"
    assert mock.last_event_id == "e-1"
    assert mock.resumed_at - mock.dropped_at >= 0.25  # the retry delay was honoured
    call_headers = next(h for h in mock.headers_seen if h.get("last-event-id"))
    assert call_headers["mcp-session-id"] == "flaky-1"
    assert call_headers["mcp-protocol-version"] == V
    assert mock.deleted


# --- the official SDK both ways -------------------------------------------------------------------


mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")


async def test_official_client_elicitation_against_our_http_server() -> None:
    # The official client runs in this process (it is built on anyio: asyncio and trio).
    server = build_server()
    questions: list[Any] = []

    async def callback(context: Any, params: Any) -> Any:
        questions.append(params)
        return mcp_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-26"})

    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app):
            async with mcp.Client(url, mode="legacy", elicitation_callback=callback) as client:
                assert client.protocol_version == V
                result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
                assert app.session_count == 1
            with anyio.fail_after(5):
                while server.connections:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)
    assert len(questions) == 1
    assert "2025-12-25" in questions[0].message
    assert not result.is_error
    assert result.structured_content["status"] == "booked"
    assert result.structured_content["date"] == "2025-12-26"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def official_http_server() -> AsyncIterator[str]:
    port = _free_port()
    async with serving_script(REPO / "tests" / "peers" / "official_server.py", "http", str(port), port=port):
        yield f"http://127.0.0.1:{port}/mcp"


async def test_our_client_elicitation_against_official_http_server() -> None:
    questions: list[minimcp.ElicitationRequest] = []

    async def handler(request: minimcp.ElicitationRequest) -> Any:
        questions.append(request)
        return minimcp.Accepted({"name": "Ada"})

    with anyio.fail_after(30):
        async with official_http_server() as url, connect_http(url, elicitation_handler=handler) as client:
            assert client.protocol_version == V
            assert {tool.name for tool in await client.list_tools()} == {"add", "ask_name"}
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            result = await client.call_tool("ask_name", {})
    assert len(questions) == 1
    assert questions[0].message == "What is your name?"
    assert result.text == "hello Ada"


# --- the SSE decoder (sans-I/O) -------------------------------------------------------------------


def decode_all(chunks: list[bytes], limit: int = 1000) -> tuple[list[Any], SSEDecoder]:
    decoder = SSEDecoder(limit)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events, decoder


def test_sse_decoder_basics() -> None:
    wire = b': ping\n\nid: 1-0\nretry: 500\ndata: \n\nid: 1-1\ndata: {"a":1}\n\nevent: other\ndata: x\ndata: y\n\n'
    events, decoder = decode_all([wire])
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message", b"", "1-0"),
        ("message", b'{"a":1}', "1-1"),
        ("other", b"x\ny", "1-1"),
    ]
    assert decoder.retry == 500
    # A priming event (empty data) is dispatched with empty data; its id counts.
    events, decoder = decode_all([b"id: 7-0\nretry: 10\ndata:\n\n"])
    assert [(e.data, e.id) for e in events] == [(b"", "7-0")]
    assert decoder.last_event_id == "7-0" and decoder.retry == 10
    # A block without any data line is not dispatched, but its id still counts.
    events, decoder = decode_all([b"id: 8\n\n"])
    assert events == [] and decoder.last_event_id == "8"


def test_sse_decoder_ignores_a_retry_with_thousands_of_digits() -> None:
    # int() raises past 4,300 digits: such a retry is ignored like any other invalid one.
    events, decoder = decode_all([b"retry: 10\n\nretry: " + b"9" * 5000 + b"\ndata: x\n\n"], limit=100_000)
    assert decoder.retry == 10
    assert len(events) == 1


@pytest.mark.parametrize("split", range(1, 30))
def test_sse_decoder_any_chunking_and_line_ending(split: int) -> None:
    for newline in (b"\n", b"\r\n", b"\r"):
        wire = b"\xef\xbb\xbfid: a\r\ndata: one".replace(b"\r\n", newline) + newline * 2
        wire += b"data: two" + newline + newline
        chunks = [wire[i : i + split] for i in range(0, len(wire), split)]
        events, decoder = decode_all(chunks)
        assert [e.data for e in events] == [b"one", b"two"], (newline, split)
        assert decoder.last_event_id == "a"


def test_sse_decoder_bounds_an_oversized_event() -> None:
    events, _ = decode_all([b"data: " + b"x" * 5000 + b"\n\ndata: ok\n\n"], limit=100)
    assert [(e.oversized, e.data) for e in events] == [(True, b""), (False, b"ok")]
    # Many data lines adding up, and a line that never ends in one chunk.
    events, _ = decode_all([b"data: 0123456789\n" * 20 + b"\n", b"data: fine\n\n"], limit=100)
    assert [(e.oversized, e.data) for e in events] == [(True, b""), (False, b"fine")]
    chunks = [b"data: "] + [b"y" * 64] * 10 + [b"\n\ndata: after\n\n"]
    events, decoder = decode_all(chunks, limit=100)
    assert [(e.oversized, e.data) for e in events] == [(True, b""), (False, b"after")]
    assert len(decoder._buffer) == 0


def test_sse_encoder() -> None:
    assert encode_event(b'{"a":1}', id="3-4") == b'id: 3-4\ndata: {"a":1}\n\n'
    assert encode_event(None, id="3-0", retry=1000) == b"id: 3-0\nretry: 1000\ndata: \n\n"
    assert encode_event(b"a\nb") == b"data: a\ndata: b\n\n"
    with pytest.raises(ValueError):
        encode_event(b"x", id="bad\nid")
