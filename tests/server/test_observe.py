"""Seeing what happens: elicitation metrics, the Prometheus text, the wire trace."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Cancelled, Client, Context, Declined, Limits, Server, memory_pair
from minimcp.core.trace import WireTrace
from minimcp.server.metrics import BUCKETS, ElicitationMetrics, MetricsRoute, prometheus_text
from tests.helpers import raw_client


class Pick(msgspec.Struct):
    n: int


def make_server(**kwargs: Any) -> Server:
    app = Server("observed", limits=Limits(elicitation_timeout=0.2), **kwargs)

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Pick a number", Pick)
        return type(answer).__name__

    @app.tool()
    async def other(ctx: Context) -> str:
        return type(await ctx.elicit("Again?", Pick)).__name__

    return app


def scripted(*answers: Any) -> Any:
    queue = list(answers)

    async def handler(question: Any) -> Any:
        answer = queue.pop(0)
        if answer == "wait":
            await anyio.sleep(1)
        return answer

    return handler


async def run_calls(app: Server, handler: Any, calls: list[str]) -> list[str]:
    a, b = memory_pair()
    out: list[str] = []
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, name="alice", elicitation_handler=handler) as client:
            for name in calls:
                out.append((await client.call_tool(name)).text)
        tg.cancel_scope.cancel()
    return out


async def test_every_outcome_is_counted_per_tool() -> None:
    app = make_server()
    handler = scripted(Accepted({"n": 1}), Declined(), Cancelled(), "wait", Accepted({"n": 2}))
    results = await run_calls(app, handler, ["ask", "ask", "ask", "ask", "other"])
    assert results == ["Accepted", "Declined", "Cancelled", "Cancelled", "Accepted"]
    ask = app.metrics.tools["ask"]
    assert (ask.started, ask.accepted, ask.declined, ask.cancelled, ask.timed_out, ask.invalid_answer) == (
        4, 1, 1, 1, 1, 0,
    )
    assert ask.pending == 0
    assert ask.wait_count == 4 and sum(ask.wait_buckets) == 4
    assert app.metrics.tools["other"].accepted == 1
    assert app.metrics.total.started == 5
    snap = app.metrics.snapshot()
    assert snap["tools"]["ask"]["timed_out"] == 1
    assert snap["clients"]["alice"]["answers"] == 4  # the timed-out one is not an answer


async def test_invalid_answers_are_counted() -> None:
    app = make_server()
    async with raw_client(app) as (peer, _):
        await peer.initialize(capabilities={"elicitation": {}})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
        question = await peer.recv()
        await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"n": "x"}}})
        reply = await peer.recv()
        assert reply["result"]["isError"] is True and "'n'" in reply["result"]["content"][0]["text"]
    assert app.metrics.tools["ask"].invalid_answer == 1


async def test_unsupported_clients_are_counted_as_fallbacks() -> None:
    app = make_server()
    async with raw_client(app) as (peer, _):
        await peer.initialize(capabilities={})
        reply = await peer.request(1, "tools/call", {"name": "ask"})
        assert reply["result"]["isError"] is True
    assert app.metrics.tools["ask"].unsupported_form == 1
    assert app.metrics.tools["ask"].started == 0


async def test_pending_gauge_while_a_question_waits() -> None:
    app = Server("gauge", limits=Limits(elicitation_timeout=30))
    release = anyio.Event()

    @app.tool()
    async def ask(ctx: Context) -> str:
        return type(await ctx.elicit("?", Pick)).__name__

    async def handler(question: Any) -> Any:
        await release.wait()
        return Declined()

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, elicitation_handler=handler) as client:
            tg.start_soon(client.call_tool, "ask")
            with anyio.fail_after(5):
                while app.metrics.total.pending < 1:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)
            assert app.metrics.tools["ask"].pending == 1
            release.set()
            with anyio.fail_after(5):
                while app.metrics.total.pending:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                    await anyio.sleep(0.01)
            assert app.metrics.tools["ask"].declined == 1
        tg.cancel_scope.cancel()


def test_fast_answer_clients_are_flagged() -> None:
    metrics = ElicitationMetrics(fast_answer_threshold=0.2)
    for _ in range(6):
        metrics.started("t")
        metrics.finished("t", "declined", 0.01, "robot")
        metrics.started("t")
        metrics.finished("t", "accepted", 12.0, "person")
    assert metrics.fast_answer_clients() == ["robot"]
    with pytest.raises(ValueError):
        metrics.finished("t", "nonsense", 1.0, None)


def test_prometheus_text_format() -> None:
    metrics = ElicitationMetrics()
    metrics.started('we"ird')
    metrics.finished('we"ird', "accepted", 3.0, "c")
    text = prometheus_text(metrics)
    assert '# TYPE minimcp_elicitations_accepted_total counter' in text
    assert 'minimcp_elicitations_accepted_total{tool="we\\"ird"} 1' in text
    # cumulative histogram buckets: 3 s falls in the 5 s bucket and every later one
    below = [b for b in BUCKETS if b < 3.0]
    assert f'minimcp_elicitation_wait_seconds_bucket{{tool="we\\"ird",le="{below[-1]}"}} 0' in text
    assert 'minimcp_elicitation_wait_seconds_bucket{tool="we\\"ird",le="+Inf"} 1' in text
    assert 'minimcp_elicitation_wait_seconds_count{tool="we\\"ird"} 1' in text
    assert text.endswith("\n")


async def test_metrics_route_serves_prometheus_and_passes_the_rest() -> None:
    app = make_server()
    app.metrics.started("ask")
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    route = MetricsRoute(inner, app)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(message)

    await route({"type": "http", "method": "GET", "path": "/metrics"}, receive, send)
    assert sent[0]["status"] == 200
    assert b"minimcp_elicitations_started_total" in sent[1]["body"]
    await route({"type": "http", "method": "POST", "path": "/mcp"}, receive, send)
    assert seen == ["/mcp"]


# --- wire trace ----------------------------------------------------------------------------------


async def test_wire_trace_records_both_directions_with_redaction() -> None:
    lines: list[str] = []

    def redact(direction: str, message: Any) -> Any:
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            return None  # skipped
        text = json.dumps(message)
        return json.loads(text.replace("secret-value", "***"))

    app = Server("traced", trace=WireTrace(lines.append, redact=redact))

    @app.tool()
    async def echo(word: str) -> str:
        return word

    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b) as client:
            assert (await client.call_tool("echo", {"word": "secret-value"})).text == "secret-value"
        tg.cancel_scope.cancel()
    records = [json.loads(line) for line in lines]
    directions = [(r["dir"], r["msg"].get("method") or "response") for r in records]
    assert directions == [
        ("receive", "initialize"),
        ("send", "response"),
        ("receive", "tools/call"),
        ("send", "response"),
    ]
    assert all(r["session"] == "server traced" and isinstance(r["t"], float) for r in records)
    assert "secret-value" not in "".join(lines) and "***" in "".join(lines)


async def test_wire_trace_to_a_file_and_off_by_default(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "wire.jsonl"
    trace = WireTrace(str(path))
    a, b = memory_pair()
    app = Server("quiet")
    async with anyio.create_task_group() as tg:
        conn = await tg.start(app.serve, a)
        assert conn.session.trace is None  # off unless asked for
        async with Client(b, trace=trace) as client:
            await client.ping()
        tg.cancel_scope.cancel()
    trace.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["msg"].get("method") for r in records if r["dir"] == "send"] == [
        "initialize", "notifications/initialized", "ping",
    ]
    assert all(r["session"] == "client minimcp-client" for r in records)


async def test_http_app_serves_metrics_when_asked() -> None:
    """``StreamableHTTPApp(metrics_path="/metrics")``: the Prometheus text on GET, with the host checks."""
    httpx = pytest.importorskip("httpx")
    from minimcp import serve_http
    from minimcp.transports.http import StreamableHTTPApp

    app = make_server()
    app.metrics.started("ask")
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_http, StreamableHTTPApp(app, metrics_path="/metrics"))
        async with httpx.AsyncClient() as http:
            ok = await http.get(f"http://127.0.0.1:{port}/metrics")
            assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/plain")
            assert 'minimcp_elicitations_started_total{tool="ask"} 1' in ok.text
            assert (await http.post(f"http://127.0.0.1:{port}/metrics")).status_code == 405
            foreign = await http.get(f"http://127.0.0.1:{port}/metrics", headers={"host": "evil.example"})
            assert foreign.status_code == 403
        tg.cancel_scope.cancel()
    plain = StreamableHTTPApp(app)
    assert plain.metrics_path is None
