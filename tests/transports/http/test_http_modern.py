"""Streamable HTTP on revision 2026-07-28 (the "modern" leg), server and client, on real sockets.

``shared/reference/spec-2026-07-28.md`` §6 lists the testable checks; each test names the
ones it stands for (``#n``): era routing per POST (#4, #5), the envelope (#6-#8), the
metadata headers (#9, #10, #43), removed methods (#11), notifications and Origin (#15),
disconnect = cancel (#32, #46), the client's era probe over HTTP (#45). The official suite's
draft scenarios (#35, #47) run in ``conformance/run.sh``.

Also: the booking scenario over modern HTTP with our client (``era="modern"`` and ``"auto"``)
and with the official SDK client (``mode="auto"``); a tool parked across POSTs (and across
TCP connections); replay after an app restart; the legacy and modern legs side by side; the
sans-I/O header rules (:mod:`minimcp.transports.http._headers`).

Every async test runs on asyncio and on trio (see ``conftest.py``); servers bind 127.0.0.1.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import booking as booking_example
import msgspec
import pytest

import minimcp
from minimcp import Accepted, Context, Server, connect_http
from minimcp.transports.http import _headers as mcp_headers
from tests.helpers.http import SSE, accept_date, initialize_request, serving, serving_asgi
from tests.helpers.http_modern import (
    JSON_SSE,
    K_CAPS,
    K_VERSION,
    Modern,
    Recorder,
    V,
    accept,
    body,
    complete_text,
    error_of,
    httpx,
    input_required,
    meta,
    modern_headers,
    modern_http,
    recorded,
)
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture

TIMEOUT = 20
K_SERVER = "io.modelcontextprotocol/serverInfo"
KEY = b"k" * 32
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
VALUE_FORM = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
BOOK_ARGS = {"date": "2025-12-25", "party_size": 2}


# --- helpers -----------------------------------------------------------------------------------










async def raw_post(url: str, headers: list[tuple[str, bytes]], message: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One POST written by hand (httpx refuses header values with edge whitespace or non-ASCII bytes)."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    payload = json.dumps(message).encode()
    lines = [f"POST /mcp HTTP/1.1\r\nhost: {host_port}\r\ncontent-length: {len(payload)}\r\n".encode()]
    lines += [name.encode() + b": " + value + b"\r\n" for name, value in headers]
    lines.append(b"connection: close\r\n\r\n")
    stream = await anyio.connect_tcp(host, int(port))
    async with stream:
        await stream.send(b"".join(lines) + payload)
        data = b""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            while True:
                data += await stream.receive()
                head, sep, content = data.partition(b"\r\n\r\n")
                fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
                length = {k.strip().lower(): v.strip() for k, v in fields.items()}.get(b"content-length")
                if sep and length is not None and len(content) >= int(length):
                    break
    head, _, content = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(content)












async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - polling state owned by other tasks
            await anyio.sleep(0.01)


class Probe:
    """What the test tools did: how often code before a question ran, what was cleaned up."""

    def __init__(self) -> None:
        self.pre: Counter[str] = Counter()
        self.cleaned: Counter[str] = Counter()
        self.started = anyio.Event()


def make_server(probe: Probe, **options: Any) -> Server:
    app = Server("modern-http", "1.0.0", **options)

    @app.tool()
    async def ask_three(ctx: Context) -> str:
        probe.pre["ask_three"] += 1
        values = []
        for n in (1, 2, 3):
            answer = await ctx.elicit(f"Question {n}?", VALUE_FORM)
            assert isinstance(answer, Accepted)
            values.append(answer.value["value"])
        return ",".join(values)

    @app.tool()
    async def slow_after(ctx: Context) -> str:
        probe.pre["slow_after"] += 1
        answer = await ctx.elicit("Your name?", NAME_FORM)
        assert isinstance(answer, Accepted)
        if probe.cleaned["slow_after"] == 0:
            probe.started.set()
            try:
                await anyio.sleep(30)
            finally:
                probe.cleaned["slow_after"] += 1
        return f"hello {answer.value['name']}"

    @app.tool()
    async def slow(ctx: Context) -> str:
        probe.pre["slow"] += 1
        probe.started.set()
        try:
            await anyio.sleep(30)
        finally:
            probe.cleaned["slow"] += 1
        return "done"

    @app.tool()
    async def progressing(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half way")
        await anyio.sleep(0.06)
        await ctx.report_progress(2, 2, "done")
        return "progressed"

    @app.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "rested"

    @app.tool(name="café")
    async def cafe() -> str:
        return "crème"

    @app.tool(
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "query": {"type": "string"},
            },
            "required": ["region"],
        }
    )
    async def routed(region: str, priority: int | None = None, query: str = "") -> str:
        return f"{region}/{priority}/{query}"

    @app.resource("mem://greeting", mime_type="text/plain")
    async def greeting() -> str:
        return "hi"

    @app.prompt()
    async def topic(subject: str) -> str:
        return f"Tell me about {subject}"

    return app






def check_modern_posts(recorder: Recorder) -> None:
    """#43 / #5: every request was a POST with the metadata headers matching its body, never a session."""
    assert {r["method"] for r in recorder.requests} == {"POST"}, [r["method"] for r in recorder.requests]
    for headers, message in recorder.posts():
        assert "mcp-session-id" not in headers
        assert headers["mcp-method"] == message["method"]
        if "id" not in message:
            continue
        params = message["params"]
        assert headers["mcp-protocol-version"] == params["_meta"][K_VERSION] == V
        if message["method"] in ("tools/call", "prompts/get"):
            assert mcp_headers.decode_value(headers["mcp-name"]) == params["name"]
        if message["method"] == "resources/read":
            assert mcp_headers.decode_value(headers["mcp-name"]) == params["uri"]


# === the server: era routing, sessions, methods ================================================


async def test_initialize_without_version_header_is_legacy_with_a_session() -> None:
    """#4: initialize with no MCP-Protocol-Version -> the handshake leg, a session is minted;
    the same server answers modern POSTs without one."""
    server = make_server(Probe())
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), modern_http(url) as m:
            headers = {"accept": JSON_SSE, "content-type": "application/json"}
            r = await m.http.post(url, json=initialize_request("2025-11-25"), headers=headers)
            assert r.status_code == 200
            assert r.headers["mcp-session-id"]
            assert app.session_count == 1
            r = await m.request("tools/list")
            assert r.status_code == 200
            assert "mcp-session-id" not in r.headers
            assert [t["name"] for t in r.json()["result"]["tools"]][:2] == ["ask_three", "slow_after"]
            assert app.session_count == 1


async def test_modern_post_mints_no_session_and_ignores_one() -> None:
    """#5: no Mcp-Session-Id minted or required; one sent along (even an unknown one) is ignored."""
    server = make_server(Probe())
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app), modern_http(url) as m:
            for sid in (None, "no-such-session"):
                r = await m.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, mcp_session_id=sid)
                assert r.status_code == 200
                assert "mcp-session-id" not in r.headers
                assert complete_text(r.json()) == "5"
            assert app.session_count == 0
            assert not server.connections  # the modern leg registers no connection


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_with_a_modern_version_header_are_405(method: str) -> None:
    """#5: no GET stream and no DELETE on the modern leg."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), httpx.AsyncClient() as http:
            r = await http.request(method, url, headers={"accept": "text/event-stream", "mcp-protocol-version": V})
            assert r.status_code == 405
            assert r.headers["allow"] == "POST"
            # Without the header it is the handshake leg's GET / DELETE (which want a session).
            r = await http.request(method, url, headers={"accept": "text/event-stream"})
            assert r.status_code == 400


@pytest.mark.parametrize("missing", ["_meta", K_VERSION, K_CAPS])
async def test_missing_envelope_parts_are_32602_http_400_keeping_the_id(missing: str) -> None:
    """#6: missing _meta, protocolVersion or clientCapabilities -> -32602, HTTP 400, the request's id."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), modern_http(url) as m:
            params: dict[str, Any] = {} if missing == "_meta" else {"_meta": meta()}
            if missing != "_meta":
                del params["_meta"][missing]
            r = await m.post({"jsonrpc": "2.0", "id": "r-7", "method": "tools/list", "params": params})
            reply = error_of(r, 400, -32602)
            assert reply["id"] == "r-7"


async def test_client_info_is_optional() -> None:
    """#7: _meta without clientInfo is served."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), modern_http(url) as m:
            r = await m.post(body(1, "server/discover", {"_meta": meta(client=None)}))
            assert r.status_code == 200
            result = r.json()["result"]
            assert V in result["supportedVersions"]
            assert result["_meta"][K_SERVER]["name"] == "modern-http"


async def test_unsupported_version_is_32022_with_supported_and_requested() -> None:
    """#8: an unknown revision in header and body -> -32022 {supported, requested}, HTTP 400."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, app), modern_http(url) as m:
            r = await m.post(
                body(3, "server/discover", {"_meta": meta(version="1900-01-01")}),
                mcp_protocol_version="1900-01-01",
            )
            reply = error_of(r, 400, -32022)
            assert reply["id"] == 3
            assert reply["error"]["data"] == {"supported": [V], "requested": "1900-01-01"}
            assert app.session_count == 0


ADD = {"a": 1, "b": 1}
TOPIC = {"subject": "a"}
HEADER_CASES = [
    # (what, method, params, header changes)
    ("version header absent (the body routes it)", "tools/list", {}, {"mcp_protocol_version": None}),
    ("version header a handshake-era revision", "tools/list", {}, {"mcp_protocol_version": "2025-11-25"}),
    ("version header differs from the body", "tools/list", {"_meta": meta(version="1900-01-01")}, {}),
    ("Mcp-Method absent", "tools/list", {}, {"mcp_method": None}),
    ("Mcp-Method differs", "tools/list", {}, {"mcp_method": "prompts/list"}),
    ("Mcp-Method differs in case only", "tools/list", {}, {"mcp_method": "TOOLS/LIST"}),
    ("Mcp-Name absent on tools/call", "tools/call", {"name": "add", "arguments": ADD}, {"mcp_name": None}),
    ("Mcp-Name differs on tools/call", "tools/call", {"name": "add", "arguments": ADD}, {"mcp_name": "x"}),
    ("Mcp-Name absent on prompts/get", "prompts/get", {"name": "topic", "arguments": TOPIC}, {"mcp_name": None}),
    ("Mcp-Name differs on resources/read", "resources/read", {"uri": "mem://greeting"}, {"mcp_name": "mem://other"}),
    ("Mcp-Name with bad base64", "tools/call", {"name": "add", "arguments": ADD}, {"mcp_name": "=?base64?YW!k?="}),
    ("Mcp-Name with bad padding", "tools/call", {"name": "add", "arguments": ADD}, {"mcp_name": "=?base64?YWRk=?="}),
    (
        "Mcp-Param absent while the argument is set",
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu"}},
        {},
    ),
    (
        "Mcp-Param differs",
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu"}},
        {"mcp_param_region": "us"},
    ),
    (
        "Mcp-Param integer differs",
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu", "priority": 3}},
        {"mcp_param_region": "eu", "mcp_param_priority": "4"},
    ),
    (
        "Mcp-Param without its argument",
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu"}},
        {"mcp_param_region": "eu", "mcp_param_priority": "4"},
    ),
]


@pytest.mark.parametrize(("what", "method", "params", "changes"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
async def test_header_mismatch_is_32020_http_400(
    what: str, method: str, params: dict[str, Any], changes: dict[str, str | None]
) -> None:
    """#9, #10, #43: a missing, different or malformed metadata header -> -32020, HTTP 400, the id kept."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, app), modern_http(url) as m:
            r = await m.post(body(41, method, params), **changes)
            reply = error_of(r, 400, -32020)
            assert reply["id"] == 41
            assert reply["error"]["message"].startswith("Header mismatch")
            assert app.session_count == 0


async def test_headers_that_match_are_accepted() -> None:
    """#10, #43: case-insensitive names, edge whitespace, the base64 sentinel, Mcp-Param values."""
    cafe = "=?base64?" + base64.b64encode("café".encode()).decode() + "?="
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), modern_http(url) as m:
            r = await m.post(body(1, "tools/call", {"name": "café", "arguments": {}}), mcp_name=cafe)
            assert complete_text(r.json()) == "crème"
            # Edge whitespace around a value is not part of it (RFC 9110 field parsing).
            plain = [(k, v.encode()) for k, v in modern_headers("tools/call").items()]
            status, reply = await raw_post(
                url, [*plain, ("mcp-name", b" \t add \t ")], body(2, "tools/call", {"name": "add", "arguments": ADD})
            )
            assert status == 200 and complete_text(reply) == "2"
            # Raw UTF-8 in a header value is refused: such a name must travel as the base64 sentinel.
            status, reply = await raw_post(
                url, [*plain, ("mcp-name", "café".encode())], body(8, "tools/call", {"name": "café", "arguments": {}})
            )
            assert status == 400 and reply["error"]["code"] == -32020 and reply["id"] == 8
            headers = modern_headers("tools/list")
            headers["MCP-METHOD"] = headers.pop("mcp-method")  # header names are case-insensitive
            r = await m.http.post(url, content=json.dumps(body(3, "tools/list")).encode(), headers=headers)
            assert r.status_code == 200
            region = "=?base64?" + base64.b64encode(b"eu west").decode() + "?="
            r = await m.post(
                body(4, "tools/call", {"name": "routed", "arguments": {"region": "eu west", "priority": 7}}),
                mcp_param_region=region,
                mcp_param_priority="7",
            )
            assert complete_text(r.json()) == "eu west/7/"
            r = await m.post(
                body(5, "tools/call", {"name": "routed", "arguments": {"region": "eu", "priority": None}}),
                mcp_param_region="eu",
            )
            assert complete_text(r.json()) == "eu/None/"
            r = await m.post(body(6, "resources/read", {"uri": "mem://greeting"}))
            assert r.json()["result"]["contents"][0]["text"] == "hi"
            r = await m.post(body(7, "prompts/get", {"name": "topic", "arguments": {"subject": "tea"}}))
            assert r.json()["result"]["messages"][0]["content"]["text"] == "Tell me about tea"


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "no/such"]
)
async def test_removed_and_unknown_methods_are_404_32601(method: str) -> None:
    """#11: removed methods (sent with the envelope) and unknown ones -> HTTP 404 + -32601."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, app), modern_http(url) as m:
            r = await m.post(body(500, method, {"_meta": meta()}))
            reply = error_of(r, 404, -32601)
            assert reply["id"] == 500
            assert app.session_count == 0


async def test_notification_is_202_and_a_response_is_refused() -> None:
    """#15: a modern notification POST -> 202, empty; a POSTed response -> 400 (never a response on 2026)."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), modern_http(url) as m:
            note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            r = await m.http.post(url, json=note, headers=modern_headers("notifications/cancelled"))
            assert r.status_code == 202
            assert r.content == b""
            r = await m.http.post(url, json={"jsonrpc": "2.0", "id": 1, "result": {}}, headers=modern_headers("x"))
            error_of(r, 400, -32600)


@pytest.mark.parametrize("leg", ["legacy", "modern"])
async def test_foreign_origin_is_403_on_both_legs(leg: str) -> None:
    """#15: a present, invalid Origin -> 403 before anything else, on both legs."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, app), modern_http(url) as m:
            if leg == "modern":
                r = await m.request("tools/list", origin="http://evil.example")
            else:
                r = await m.http.post(
                    url,
                    json=initialize_request("2025-11-25"),
                    headers={"accept": JSON_SSE, "content-type": "application/json", "origin": "http://evil.example"},
                )
            assert r.status_code == 403
            assert app.session_count == 0
            r = await m.request("tools/list", origin="http://localhost:5173")
            assert r.status_code == 200


async def test_answer_is_json_or_sse_when_notifications_come_first() -> None:
    """A plain answer is JSON; a request that sends progress first is answered with SSE, no event ids."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe())) as (url, _), modern_http(url) as m:
            params = {"name": "progressing", "arguments": {}, "_meta": {**meta(), "progressToken": "p1"}}
            message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
            headers = modern_headers("tools/call", "progressing")
            async with m.http.stream("POST", url, content=json.dumps(message).encode(), headers=headers) as r:
                assert r.status_code == 200
                assert r.headers["content-type"].startswith("text/event-stream")
                assert r.headers["x-accel-buffering"] == "no"
                assert "mcp-session-id" not in r.headers
                sse = SSE(r)
                events = []
                while (item := await sse.message()) is not None:
                    events.append(item)
            assert [event_id for event_id, _ in events] == ["", "", ""]  # no ids: streams are not resumable
            assert [e["params"]["progress"] for _, e in events[:2]] == [1, 2]
            assert events[2][1]["id"] == 9
            assert complete_text(events[2][1]) == "progressed"


async def test_a_silent_request_switches_to_sse_with_keepalives() -> None:
    """A request that sends nothing for keepalive_interval is answered with SSE, so keep-alive
    comments hold the connection open until the answer."""
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(Probe()), keepalive_interval=0.1) as (url, _), modern_http(url) as m:
            message = body(5, "tools/call", {"name": "nap", "arguments": {"seconds": 0.35}})
            headers = modern_headers("tools/call", "nap")
            async with m.http.stream("POST", url, content=json.dumps(message).encode(), headers=headers) as r:
                assert r.headers["content-type"].startswith("text/event-stream")
                sse = SSE(r)
                blocks = []
                while (block := await sse.block()) is not None:
                    blocks.append(block)
            comments = [b for b in blocks if "comment" in b and "data" not in b]
            assert len(comments) >= 2
            assert complete_text(json.loads(blocks[-1]["data"])) == "rested"
            r = await m.request("tools/call", {"name": "nap", "arguments": {"seconds": 0}})
            assert r.headers["content-type"].startswith("application/json")  # a quick answer stays JSON


# === the server: multi round-trip requests across POSTs ========================================


async def test_a_parked_call_outlives_its_post_and_resumes_on_another_connection() -> None:
    """Park: each round is a POST on a fresh TCP connection; the tool's code before the first
    question runs once, and nothing stays parked at the end."""
    probe = Probe()
    server = make_server(probe)
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, app):
            async with modern_http(url) as m:
                key, entry, state = input_required(await m.call("ask_three"))
            assert len(server.parking) == 1  # the POST (and its connection) ended; the call did not
            for n, value in enumerate(["a", "b"], start=1):
                assert entry["params"]["message"] == f"Question {n}?"
                async with modern_http(url) as m:
                    key, entry, state = input_required(
                        await m.call("ask_three", responses={key: accept(value=value)}, state=state)
                    )
            async with modern_http(url) as m:
                reply = await m.call("ask_three", responses={key: accept(value="c")}, state=state)
            assert complete_text(reply) == "a,b,c"
            assert probe.pre["ask_three"] == 1
            assert len(server.parking) == 0
            assert app.session_count == 0


async def test_parked_calls_are_bounded_per_client_address() -> None:
    """Issue 15 item 6: one client address may park at most ``max_parked_per_client`` calls; a call
    that would park one more is refused with -32003 (its run ends), the parked ones still resume,
    and another address is not affected."""
    probe = Probe()
    server = make_server(probe, limits=minimcp.Limits(max_parked_per_client=2))
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), modern_http(url) as m:
            first = input_required(await m.call("ask_three"))
            second = input_required(await m.call("ask_three"))
            assert len(server.parking) == 2
            reply = await m.call("ask_three")
            assert reply["error"]["code"] == -32003, reply
            assert "limit 2" in reply["error"]["message"]
            await wait_until(lambda: len(server.parking) == 2)  # the refused run did not stay parked
            # Another address parks fine.
            other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
            async with httpx.AsyncClient(transport=other, timeout=httpx.Timeout(10, read=None)) as http:
                input_required(await Modern(http, url).call("ask_three"))
            assert len(server.parking) == 3
            # A resumed call parks again in its own place; a finished one frees its place.
            key, _, state = second
            input_required(await m.call("ask_three", responses={key: accept(value="x")}, state=state))
            assert (await m.call("ask_three"))["error"]["code"] == -32003
            key, _, state = first
            for value in ("a", "b"):
                key, _, state = input_required(
                    await m.call("ask_three", responses={key: accept(value=value)}, state=state)
                )
            reply = await m.call("ask_three", responses={key: accept(value="c")}, state=state)
            assert complete_text(reply) == "a,b,c"
            input_required(await m.call("ask_three"))
            assert len(server.parking) == 3


async def test_after_an_app_restart_the_retry_replays() -> None:
    """#34: a new app (new Server, same state_key) cannot find the parked call: it replays the tool
    with the recorded answers and finishes it; the old app's parked run was ended with its app."""
    probe = Probe()
    first = make_server(probe, state_key=KEY)
    with anyio.fail_after(TIMEOUT):
        async with serving(first) as (url, _), modern_http(url) as m:
            key, _, state = input_required(await m.call("ask_three"))
            key, _, state = input_required(await m.call("ask_three", responses={key: accept(value="a")}, state=state))
            assert len(first.parking) == 1
        await wait_until(lambda: len(first.parking) == 0)
        second = make_server(probe, state_key=KEY)
        async with serving(second) as (url, _), modern_http(url) as m:
            key, entry, state = input_required(
                await m.call("ask_three", responses={key: accept(value="b")}, state=state)
            )
            assert entry["params"]["message"] == "Question 3?"
            reply = await m.call("ask_three", responses={key: accept(value="c")}, state=state)
            assert complete_text(reply) == "a,b,c"
    assert probe.pre["ask_three"] == 2  # replayed from the top once, on the new app


async def test_a_state_from_another_key_is_refused() -> None:
    """#34: state sealed by a server with another key -> the frozen -32602 (HTTP 400), not a hang."""
    probe = Probe()
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(probe)) as (url, _), modern_http(url) as m:
            key, _, state = input_required(await m.call("ask_three"))
        async with serving(make_server(probe, state_key=KEY)) as (url, _), modern_http(url) as m:
            answer = {key: accept(value="a")}
            r = await m.request(
                "tools/call", {"name": "ask_three", "arguments": {}, "inputResponses": answer, "requestState": state}
            )
            reply = error_of(r, 400, -32602)
            assert reply["error"]["message"] == "Invalid or expired requestState"


async def test_closing_the_post_mid_round_cancels_the_tool_and_uses_up_the_state() -> None:
    """#32: the client drops the POST of a round while the resumed tool runs: the tool is cancelled
    (its cleanup runs) and nothing is parked; the same state, sent again, is refused as used (the
    call may have acted after its question; the client starts a new call)."""
    probe = Probe()
    server = make_server(probe)
    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _), modern_http(url) as m:
            key, _, state = input_required(await m.call("slow_after"))
            with anyio.move_on_after(10) as scope:
                async with anyio.create_task_group() as tg:

                    async def retry() -> None:
                        await m.call("slow_after", responses={key: accept(name="Ada")}, state=state)

                    tg.start_soon(retry)
                    await probe.started.wait()  # the resumed tool now sleeps after its question
                    tg.cancel_scope.cancel()  # the client gives up: its POST connection closes
            assert not scope.cancelled_caught
            await wait_until(lambda: probe.cleaned["slow_after"] == 1)
            assert len(server.parking) == 0
            r = await m.request(
                "tools/call",
                {"name": "slow_after", "arguments": {}, "inputResponses": {key: accept(name="Ada")},
                 "requestState": state},
            )
            assert error_of(r, 400, -32602)["error"]["data"] == {"reason": "request_state_used"}
            assert probe.pre["slow_after"] == 1


async def test_closing_an_sse_answer_cancels_the_tool() -> None:
    """#32: a client that closes the response stream of a running request cancels its handler."""
    probe = Probe()
    with anyio.fail_after(TIMEOUT):
        async with serving(make_server(probe)) as (url, _), modern_http(url) as m:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(m.request, "tools/call", {"name": "slow", "arguments": {}})
                    await probe.started.wait()
                    scope.cancel()
            await wait_until(lambda: probe.cleaned["slow"] == 1)


# === our client on the modern leg ===============================================================


@pytest.mark.usefixtures("booking_retries")
@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_booking_over_modern_http_with_our_client(era: str) -> None:
    """The booking flow (full date -> the person picks another) over 2026-07-28 HTTP; every POST
    carries the metadata headers (#43), there is no session, GET or DELETE (#5)."""
    app_ = booking_example.build()
    handler = accept_date("2025-12-26")
    with anyio.fail_after(TIMEOUT):
        async with recorded(app_.server) as (url, app, recorder):
            async with connect_http(url, era=era, elicitation_handler=handler) as client:
                assert client.era == "modern"
                assert client.protocol_version == V
                tools = [tool.name for tool in await client.list_tools()]
                assert tools[0] == "book_table"
                result = await client.call_tool("book_table", BOOK_ARGS)
                assert not result.is_error, result.text
                assert isinstance(result.structured_content, dict)
                assert result.structured_content["status"] == "booked"
                assert result.structured_content["date"] == "2025-12-26"
                failed = await client.call_tool("book_table", {"date": "2025-12-20", "party_size": 9})
                assert failed.is_error is True and "deposit" in failed.text
            assert app.session_count == 0
    assert len(handler.questions) == 1
    assert "2025-12-25" in handler.questions[0].message
    check_modern_posts(recorder)
    methods = [message["method"] for _, message in recorder.posts()]
    assert "initialize" not in methods
    assert methods.count("tools/call") == 3  # the question round, its retry, and the deposit call
    if era == "auto":
        assert methods[0] == "server/discover"


async def test_legacy_and_modern_clients_side_by_side() -> None:
    """One app, both legs at once: a handshake-era session and a stateless modern client."""
    server = make_server(Probe())
    with anyio.fail_after(TIMEOUT):
        async with (
            serving(server) as (url, app),
            connect_http(url) as legacy,
            connect_http(url, era="modern") as modern_client,
        ):
            assert legacy.protocol_version == "2025-11-25" and legacy.era == "legacy"
            assert modern_client.era == "modern"
            assert app.session_count == 1
            assert (await legacy.call_tool("add", {"a": 1, "b": 2})).text == "3"
            assert (await modern_client.call_tool("add", {"a": 3, "b": 4})).text == "7"
            assert (await modern_client.call_tool("café", {})).text == "crème"  # Mcp-Name as base64


async def test_client_mirrors_x_mcp_header_arguments() -> None:
    """#43: after tools/list the client sends Mcp-Param-* for annotated arguments (sentinel when
    needed), omits them for null/absent ones; the server accepts."""
    with anyio.fail_after(TIMEOUT):
        async with recorded(make_server(Probe())) as (url, _, recorder), connect_http(url, era="modern") as client:
            await client.list_tools()
            assert (await client.call_tool("routed", {"region": "Zürich", "priority": 2})).text == "Zürich/2/"
            assert (await client.call_tool("routed", {"region": "eu", "priority": None})).text == "eu/None/"
    calls = [(h, m) for h, m in recorder.posts() if m["method"] == "tools/call"]
    first, second = calls[0][0], calls[1][0]
    assert first["mcp-param-region"] == "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    assert first["mcp-param-priority"] == "2"
    assert second["mcp-param-region"] == "eu"
    assert "mcp-param-priority" not in second
    assert all("mcp-param-query" not in h for h, _ in calls)


async def test_client_cancel_closes_the_post_and_sends_no_cancel_notification() -> None:
    """#46, #32: a call that times out on the client closes its POST (the server cancels the tool);
    no notifications/cancelled is sent on modern HTTP."""
    probe = Probe()
    with anyio.fail_after(TIMEOUT):
        async with recorded(make_server(probe)) as (url, _, recorder), connect_http(url, era="modern") as client:
            with pytest.raises(minimcp.RequestTimeout):
                await client.call_tool("slow", {}, timeout=0.5)
            await wait_until(lambda: probe.cleaned["slow"] == 1)
            assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
    methods = [m["method"] for _, m in recorder.posts()]
    assert "notifications/cancelled" not in methods
    check_modern_posts(recorder)


async def test_client_drops_tools_with_invalid_x_mcp_header() -> None:
    """#43: a tool whose x-mcp-header annotation breaks the rules is left out of tools/list."""
    server = Server("annotated")

    @server.tool(input_schema={"type": "object", "properties": {"x": {"type": "object", "x-mcp-header": "X"}}})
    async def bad_kind(x: dict[str, Any] | None = None) -> str:
        return "never listed"

    @server.tool(input_schema={"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}})
    async def good(r: str = "") -> str:
        return "ok"

    with anyio.fail_after(TIMEOUT):
        async with serving(server) as (url, _):
            async with connect_http(url, era="modern") as client:
                assert [tool.name for tool in await client.list_tools()] == ["good"]
            async with connect_http(url) as legacy:  # the handshake era has no x-mcp-header rules
                assert [tool.name for tool in await legacy.list_tools()] == ["bad_kind", "good"]


# --- the era probe over HTTP (#45), against small mock servers ----------------------------------


class MockServer:
    """A raw ASGI MCP server: answers POSTs through ``respond`` and records what it got."""

    def __init__(self, respond: Callable[[dict[str, str], dict[str, Any]], Awaitable[tuple[int, bytes]]]) -> None:
        self.respond = respond
        self.seen: list[tuple[str, dict[str, str], dict[str, Any] | None]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        data = b""
        while True:
            message = await receive()
            data += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(data) if data else None
        self.seen.append((scope["method"], headers, request))
        if scope["method"] != "POST" or request is None:
            status, payload = 405, b""
        else:
            status, payload = await self.respond(headers, request)
        media = [(b"content-type", b"application/json" if payload.startswith(b"{") else b"text/event-stream")]
        if not payload:
            media = []
        await send({"type": "http.response.start", "status": status, "headers": media})
        await send({"type": "http.response.body", "body": payload})

    def methods(self) -> list[str | None]:
        return [request.get("method") if request else None for _, _, request in self.seen]


def legacy_server(probe_status: int, probe_body: bytes) -> MockServer:
    """A handshake-era server that answers anything before initialize with ``probe_status``."""

    async def respond(headers: dict[str, str], request: dict[str, Any]) -> tuple[int, bytes]:
        method = request.get("method")
        if method == "initialize":
            info = {"name": "old", "version": "1"}
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": info}
            return 200, json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        if method == "notifications/initialized":
            return 202, b""
        if method == "tools/list":
            return 200, json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}).encode()
        return probe_status, probe_body

    return MockServer(respond)


LEGACY_REFUSALS = [
    (400, b""),
    (400, b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID"}}'),
    (400, b'{"jsonrpc": "2.0", "id": 0, "error": {"code": -32600, "message": "not initialized"}}'),
    (404, b"Not Found"),
    (405, b""),
]


@pytest.mark.parametrize(
    ("status", "payload"), LEGACY_REFUSALS, ids=["400-empty", "400-32000", "400-32600", "404", "405"]
)
async def test_auto_falls_back_to_initialize_on_a_legacy_http_server(status: int, payload: bytes) -> None:
    """#45: 400/404/405 without a modern error body -> initialize, then the handshake era."""
    mock = legacy_server(status, payload)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(mock) as base, connect_http(base + "/mcp", era="auto") as client:
            assert client.era == "legacy"
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None and client.server_info.name == "old"
            await client.list_tools()
    assert mock.methods()[:2] == ["server/discover", "initialize"]
    probe_headers = mock.seen[0][1]
    assert probe_headers["mcp-protocol-version"] == V and probe_headers["mcp-method"] == "server/discover"
    init_headers = mock.seen[1][1]
    assert "mcp-method" not in init_headers and "mcp-protocol-version" not in init_headers


@pytest.mark.parametrize("status", [401, 403, 500, 503])
async def test_auth_and_server_errors_on_the_probe_are_not_era_evidence(status: int) -> None:
    """#45: 401/403/5xx on the probe -> an error for the caller; no fallback to initialize."""
    mock = legacy_server(status, b"")
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(mock) as base:
            with pytest.raises(minimcp.ConnectionClosed):
                async with connect_http(base + "/mcp", era="auto"):
                    pass  # pragma: no cover
    # The transport ends the connection on such a probe answer, so the fallback initialize is
    # never sent (Client._connect still tries it, and gets ConnectionClosed).
    assert mock.methods() == ["server/discover"]


async def test_network_errors_on_the_probe_are_not_era_evidence() -> None:
    """#45: nothing listening -> an error, not a handshake-era conclusion."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with anyio.fail_after(TIMEOUT):
        with pytest.raises(minimcp.McpError) as caught:
            async with connect_http(f"http://127.0.0.1:{port}/mcp", era="auto"):
                pass  # pragma: no cover
    assert caught.value.code == -32000


async def test_a_modern_error_keeps_its_code_and_data() -> None:
    """#45: a 400 with a modern error body reaches the caller whole (code, message, data)."""

    async def respond(headers: dict[str, str], request: dict[str, Any]) -> tuple[int, bytes]:
        error = {"code": -32021, "message": "needs sampling", "data": {"requiredCapabilities": {"sampling": {}}}}
        return 400, json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()

    mock = MockServer(respond)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(mock) as base, connect_http(base + "/mcp", era="modern") as client:
            with pytest.raises(minimcp.McpError) as caught:
                await client.call_tool("think", {})
    assert caught.value.code == -32021
    assert caught.value.message == "needs sampling"
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_a_stream_that_ends_early_is_not_resumed() -> None:
    """2026-07-28 streams are not resumable: a stream that ends before the answer fails the call
    at once (no GET with Last-Event-ID)."""

    async def respond(headers: dict[str, str], request: dict[str, Any]) -> tuple[int, bytes]:
        return 200, b"id: e-1\nretry: 10\ndata: \n\n"

    mock = MockServer(respond)
    with anyio.fail_after(TIMEOUT):
        async with serving_asgi(mock) as base, connect_http(base + "/mcp", era="modern") as client:
            with pytest.raises(minimcp.McpError) as caught:
                await client.call_tool("anything", {})
    assert caught.value.code == -32000
    assert "closed the stream before answering" in caught.value.message
    assert {method for method, _, _ in mock.seen} == {"POST"}


# === the official SDK client (mcp 2.x) on our modern leg ========================================


mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")


@pytest.mark.usefixtures("booking_retries")
async def test_official_client_books_over_modern_http() -> None:
    """The official client, mode="auto": server/discover over HTTP finds 2026-07-28, then the
    booking question comes as input_required and the retry books."""
    app_ = booking_example.build()
    questions: list[Any] = []

    async def callback(context: Any, params: Any) -> Any:
        questions.append(params)
        return mcp_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-26"})

    with anyio.fail_after(30):
        async with recorded(app_.server) as (url, app, recorder):
            async with mcp.Client(url, mode="auto", elicitation_callback=callback) as client:
                assert client.protocol_version == V
                result = await client.call_tool("book_table", BOOK_ARGS)
            assert app.session_count == 0
    assert len(questions) == 1
    assert "2025-12-25" in questions[0].message
    assert not result.is_error
    assert result.structured_content["status"] == "booked"
    assert result.structured_content["date"] == "2025-12-26"
    check_modern_posts(recorder)


# === the header rules, sans-I/O =================================================================


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("\tindented", "=?base64?CWluZGVudGVk?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_header_values_encode_and_decode(value: str, encoded: str) -> None:
    assert mcp_headers.encode_value(value) == encoded
    assert mcp_headers.decode_value(encoded) == value


@pytest.mark.parametrize("raw", ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?=", "caf\u00e9"])
def test_malformed_header_values_are_refused(raw: str) -> None:
    assert mcp_headers.decode_value(raw) is None


def test_x_mcp_header_annotations() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"level": {"type": "integer", "x-mcp-header": "Level"}}},
            "plain": {"type": "string", "default": {"x-mcp-header": "data, not schema"}},
        },
    }
    found = mcp_headers.param_headers(schema)
    assert [(p.path, p.name, p.header) for p in found] == [
        (("region",), "Region", "mcp-param-region"),
        (("opts", "level"), "Level", "mcp-param-level"),
    ]
    headers = mcp_headers.request_headers(
        "tools/call",
        msgspec.json.encode(
            {"name": "t", "arguments": {"region": "eu", "opts": {"level": 3}}, "_meta": {K_VERSION: V}}
        ),
        {"t": found},
    )
    assert headers == {
        "mcp-method": "tools/call",
        "mcp-protocol-version": V,
        "mcp-name": "t",
        "mcp-param-region": "eu",
        "mcp-param-level": "3",
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Has Space"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Colon:"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Zürich"}}},
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "array", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}},
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
        {"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}},
        {"$defs": {"d": {"type": "string", "x-mcp-header": "D"}}},
        {"type": "string", "x-mcp-header": "Root"},
    ],
)
def test_invalid_x_mcp_header_annotations_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        mcp_headers.param_headers(schema)

