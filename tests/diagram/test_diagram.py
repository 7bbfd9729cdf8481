"""Sequence diagrams of wire traces (minimcp/diagram/layout.py, diagram_svg.py, cli/diagram.py).

The layout is checked on small hand-written traces (nesting, interleaved calls, notifications
with and without a request, errors, unknown ids, both eras, bad lines, both sides); the
drawings are parsed as XML and checked for what they must show; a real session's trace shows
that the records carry what the layout needs (``conn`` and ``rel``); the command is run as a
person would run it.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import anyio

from minimcp import Accepted, Context, ElicitationRequest, Server
from minimcp.core.trace import WireTrace
from minimcp.diagram.layout import Diagram, read_trace, render_text, summary
from minimcp.diagram.svg import render_html, render_svg
from tests.helpers import connected
from tests.helpers.diagram import ASK, err, nested_trace, note, rec, req, res

REPO = pathlib.Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
















def test_a_question_is_drawn_inside_the_call_that_asked_it() -> None:
    d = read_trace(nested_trace())
    assert d.side == "server" and d.server == "server demo" and d.lifelines == ["client"]
    assert [(e.from_client, e.kind) for e in d.events] == [
        (True, "request"),
        (False, "request"),
        (True, "result"),
        (False, "result"),
    ]
    call, question = d.calls
    assert (call.method, call.id, call.start, call.end, call.outcome) == ("tools/call", 1, 0, 3, "result")
    assert question.parent is call and not question.guessed and question.depth == 1
    assert call.children == [question] and (question.start, question.end) == (1, 2)
    # The same id on each side is two requests: the answer #1 closes the question, the result #1 the call.
    assert d.events[2].call is question and d.events[3].call is call
    assert [e.depth for e in d.events] == [0, 1, 1, 0]
    assert [round(e.t, 3) for e in d.events] == [0.0, 0.1, 2.5, 2.6]
    assert d.events[1].note == "inside tools/call #1"
    assert "book_table" in d.events[0].label and "booked 2025-12-26" in d.events[3].label


def test_interleaved_calls_each_get_their_own_question() -> None:
    lines = [
        rec(1.0, "receive", req(1, "tools/call", name="a")),
        rec(1.1, "receive", req(2, "tools/call", name="b")),
        rec(1.2, "send", req(1, "elicitation/create", **ASK), rel=2),  # asked by the second call
        rec(1.3, "send", req(2, "elicitation/create", **ASK), rel=1),
        rec(1.4, "receive", res(2, action="decline")),
        rec(1.5, "send", res(1, content=[])),
        rec(1.6, "receive", res(1, action="accept", content={})),
        rec(1.7, "send", res(2, content=[])),
    ]
    d = read_trace(lines)
    first, second, q1, q2 = d.calls
    assert q1.parent is second and q2.parent is first
    assert not q1.guessed and not q2.guessed
    assert (first.lane, second.lane) == (0, 1)  # concurrent calls stand side by side
    assert (first.end, second.end) == (5, 7)
    assert d.lanes(client_side=False) == 2


def test_without_rel_the_parent_is_guessed_and_said_so() -> None:
    lines = [
        rec(1.0, "send", req(1, "tools/call", name="a"), session="client c"),
        rec(1.1, "send", req(2, "tools/call", name="b"), session="client c"),
        rec(1.2, "receive", req(1, "elicitation/create", **ASK), session="client c"),
        rec(1.3, "receive", req(2, "elicitation/create", **ASK), session="client c"),
    ]
    d = read_trace(lines)
    assert d.side == "client"
    _, _, q1, q2 = d.calls
    assert q1.guessed and q2.guessed and q1.parent is d.calls[0] and q2.parent is d.calls[1]
    assert "(guessed)" in d.events[2].note
    # With one call open, there is nothing to guess.
    d = read_trace(lines[:1] + lines[2:3])
    assert not d.calls[1].guessed and d.calls[1].parent is d.calls[0]


def test_notifications_with_and_without_a_request() -> None:
    lines = [
        rec(1.0, "receive", req(7, "tools/call", name="slow", _meta={"progressToken": "p"})),
        rec(1.1, "send", note("notifications/progress", progressToken="p", progress=1, message="waiting")),
        rec(1.2, "send", note("notifications/message", level="info", data="hello")),
        rec(1.3, "receive", note("notifications/cancelled", requestId=7, reason="user")),
        rec(1.4, "send", note("notifications/tools/list_changed")),
    ]
    d = read_trace(lines)
    progress, log, cancel, changed = d.events[1:]
    assert progress.kind == "notification" and progress.call is d.calls[0] and progress.depth == 1
    assert log.call is None and log.depth == 0 and log.note == ""
    assert cancel.call is d.calls[0] and "tools/call #7" in cancel.note
    assert changed.call is None and changed.label == "notifications/tools/list_changed"
    assert d.calls[0].end is None  # never answered: the bar stays open to the end


def test_an_error_response_and_an_unknown_id() -> None:
    lines = [
        rec(1.0, "receive", req("a", "tools/call", name="add_to_calendar")),
        rec(1.1, "send", err("a", -32042, "URL elicitation required")),
        rec(1.2, "send", res(99)),  # nobody asked 99
        rec(1.3, "receive", res("a")),  # "a" was answered already
    ]
    d = read_trace(lines)
    assert d.calls[0].outcome == "error" and d.events[1].kind == "error"
    assert d.events[1].label == '#"a" error -32042: URL elicitation required'
    assert d.events[2].note.startswith("unknown id") and d.events[2].call is None
    assert d.events[3].note.startswith("unknown id")
    svg = ET.fromstring(render_svg(d))
    classes = [g.get("class") for g in svg.iter(f"{SVG}g") if "msg" in (g.get("class") or "")]
    assert classes == ["msg request", "msg error", "msg result flagged", "msg result flagged"]


def test_rounds_of_one_modern_call() -> None:
    state = "sealed-state-1"
    asked = {"q": {"method": "elicitation/create", "params": ASK}}
    lines = [
        rec(1.0, "receive", req(1, "tools/call", name="book_table", arguments={})),
        rec(1.1, "send", res(1, resultType="input_required", inputRequests=asked, requestState=state)),
        rec(
            5.0,
            "receive",
            req(
                2,
                "tools/call",
                name="book_table",
                arguments={},
                requestState=state,
                inputResponses={"q": {"action": "accept", "content": {}}},
            ),
        ),
        rec(5.1, "send", res(2, resultType="complete", content=[{"type": "text", "text": "booked"}])),
        rec(6.0, "receive", req(3, "tools/call", name="book_table", requestState="from-elsewhere")),
    ]
    d = read_trace(lines)
    first, retry, stranger = d.calls
    assert first.outcome == "input_required" and retry.outcome == "result"
    assert (first.chain, first.round) == (retry.chain, 1) and retry.round == 2
    assert d.events[2].note == "round 2 of tools/call #1"
    assert "input_required" in d.events[1].label and "elicitation/create" in d.events[1].label
    assert stranger.chain != first.chain and "never saw" in d.events[4].note
    frames = [t.text for t in ET.fromstring(render_svg(d)).iter(f"{SVG}text") if t.get("class") == "frame-label"]
    assert frames == ["tools/call #1 · 2 rounds"]


def test_a_handshake_and_a_batch() -> None:
    lines = [
        rec(1.0, "receive", req(1, "initialize", protocolVersion="2025-03-26")),
        rec(
            1.1,
            "send",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"serverInfo": {"name": "s", "version": "1"}, "protocolVersion": "2025-03-26"},
            },
        ),
        json.dumps({"t": 1.2, "session": "server s", "dir": "receive", "msg": [req(2, "ping"), req(3, "tools/list")]}),
    ]
    d = read_trace(lines)
    assert [e.label for e in d.events] == [
        "initialize #1  protocol 2025-03-26",
        "#1 result: s 1, protocol 2025-03-26",
        "ping #2",
        "tools/list #3",
    ]
    assert [e.line for e in d.events] == [1, 2, 3, 3]


def test_bad_lines_are_reported_with_their_numbers_and_skipped() -> None:
    lines = [
        "",
        rec(1.0, "receive", req(1, "ping")),
        '{"t": 1.1, "session": "server s", "dir": "se',  # cut off mid-line
        "[1, 2]",
        json.dumps({"t": 1.2, "dir": "sideways", "msg": {}}),
        json.dumps({"dir": "send", "msg": res(1)}),
        rec(1.3, "send", res(1)),
    ]
    d = read_trace(lines)
    assert [e.line for e in d.events] == [2, 7]
    assert [p.split(":")[0] for p in d.problems] == ["line 3", "line 4", "line 5", "line 6"]
    assert "truncated?" in d.problems[0] and "no time" in d.problems[3]
    assert "skipped line 3" in render_text(d)


def test_client_side_trace_and_several_connections() -> None:
    lines = [
        rec(1.0, "send", req(1, "tools/list"), session="client a", conn=1),
        rec(1.1, "send", req(1, "tools/list"), session="client a", conn=2),
        rec(1.2, "receive", res(1, tools=[]), session="client a", conn=2),
        rec(1.3, "receive", res(1, tools=[]), session="client a", conn=1),
    ]
    d = read_trace(lines)
    assert d.side == "client" and d.lifelines == ["client 1", "client 2"]
    assert [c.end for c in d.calls] == [3, 2]  # each answer closes the request of its own connection
    assert [e.from_client for e in d.events] == [True, True, False, False]
    # A trace without session names: the methods tell the side.
    bare = [json.dumps({"t": 1, "dir": "send", "msg": req(1, "initialize")})]
    assert read_trace(bare).side == "client"
    assert read_trace(bare, side="server").events[0].from_client is False


def test_summary_shortens_long_payloads_but_keeps_them_whole_in_the_detail() -> None:
    long = "x" * 5000
    lines = [rec(1.0, "receive", req(1, "tools/call", name="echo", arguments={"text": long}))]
    d = read_trace(lines)
    assert len(d.events[0].label) < 120 and d.events[0].label.endswith("…")
    assert long in d.events[0].detail
    page = render_html(d)
    assert page.count(long) == 1  # whole once, in the message list; the tooltip is cut
    assert summary("not json") == ("other", "not json")


def _check_drawing(d: Diagram, svg_text: str) -> ET.Element:
    svg = ET.fromstring(svg_text)
    lifelines = [line for line in svg.iter(f"{SVG}line") if line.get("class") == "lifeline"]
    assert len(lifelines) == len(d.lifelines) + 1
    arrows = [g for g in svg.iter(f"{SVG}g") if (g.get("class") or "").startswith("msg ")]
    assert len(arrows) == len(d.events)
    for g, event in zip(arrows, d.events, strict=True):
        title = g.find(f"{SVG}title")
        assert title is not None and title.text is not None and f"#{event.index + 1}" in title.text
        line = g.find(f"{SVG}line")
        assert line is not None
        assert float(line.get("y1", 0)) == float(line.get("y2", 1))  # arrows are horizontal
        assert abs(float(line.get("x2", 0)) - float(line.get("x1", 0))) > 100
    ys = [float(g.find(f"{SVG}line").get("y1", 0)) for g in arrows]  # type: ignore[union-attr]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)  # one row each, in time order
    return svg


def test_svg_and_html_show_lifelines_arrows_and_nothing_from_the_network() -> None:
    d = read_trace(nested_trace())
    svg = _check_drawing(d, render_svg(d))
    bars = [r for r in svg.iter(f"{SVG}rect") if (r.get("class") or "").startswith("bar")]
    assert len(bars) == 2  # the call's on the server, the question's on the client
    frames = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "frame"]
    assert len(frames) == 1  # the call that asked is framed
    page = render_html(d)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    for attribute in ("src=", "@import", "url(http", "<link"):
        assert attribute not in page
    hrefs = [part.split('"', 1)[0] for part in page.split('href="')[1:]]
    assert hrefs and all(h.startswith("#m") for h in hrefs)
    for event in d.events:
        assert f'id="m{event.index + 1}"' in page


def asking_server(lines: list[str]) -> Server:
    """A traced server with one tool that asks one question (see :func:`person`)."""
    app = Server("traced", trace=WireTrace(lines.append))

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return type(answer).__name__

    return app


async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
    return Accepted({"ok": True})


async def test_a_real_session_records_conn_and_rel() -> None:
    lines: list[str] = []
    app = asking_server(lines)
    with anyio.fail_after(30):
        for _ in range(2):  # two connections, one trace
            async with connected(app, elicitation_handler=person) as (client, _conn):
                assert (await client.call_tool("ask", {})).text == "Accepted"
    records = [json.loads(line) for line in lines]
    assert {r["conn"] for r in records} == {1, 2}
    asked = [r for r in records if r["msg"].get("method") == "elicitation/create"]
    calls = {r["conn"]: r["msg"]["id"] for r in records if r["msg"].get("method") == "tools/call"}
    assert len(asked) == 2 and all(r["rel"] == calls[r["conn"]] for r in asked)
    # Besides the questions, only responses carry "rel": the request they answer.
    others = [r for r in records if "rel" in r and r["msg"].get("method") != "elicitation/create"]
    assert others and all("method" not in r["msg"] and r["rel"] == r["msg"]["id"] for r in others)
    d = read_trace(lines)
    assert d.lifelines == ["client 1", "client 2"] and d.server == "server traced"
    questions = [c for c in d.calls if c.method == "elicitation/create"]
    assert all(q.parent is not None and q.parent.method == "tools/call" and not q.guessed for q in questions)
    _check_drawing(d, render_svg(d))


def test_the_command(tmp_path: pathlib.Path) -> None:
    trace = tmp_path / "wire.jsonl"
    trace.write_text("\n".join([*nested_trace(), '{"t": 13, "dir": "sen']) + "\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "minimcp", "diagram", *args], capture_output=True, text=True, cwd=REPO, timeout=120
        )

    html = run(str(trace), "-o", str(tmp_path / "wire.html"))
    assert html.returncode == 0, html.stderr
    assert "skipped line 5: not a JSON line" in html.stderr and "wrote" in html.stderr
    assert (tmp_path / "wire.html").read_text().startswith("<!DOCTYPE html>")
    svg = run(str(trace), "-o", str(tmp_path / "wire.svg"))
    assert svg.returncode == 0 and ET.parse(tmp_path / "wire.svg").getroot().tag == f"{SVG}svg"
    text = run(str(trace), "-o", "-")
    assert text.returncode == 0 and "elicitation/create #1" in text.stdout and "│" in text.stdout
    missing = run(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr


def test_url_steps_and_a_retry_after_minus_32042() -> None:
    step = {"mode": "url", "elicitationId": "e1", "url": "https://pay.example/e1", "message": "Pay"}
    lines = [
        rec(1.0, "receive", req(1, "tools/call", name="book_table", arguments={"party_size": 9})),
        rec(1.1, "send", req(1, "elicitation/create", **step), rel=1),
        rec(1.2, "receive", res(1, action="accept")),
        rec(1.3, "send", res(1, content=[])),
        rec(2.0, "send", note("notifications/elicitation/complete", elicitationId="e1")),
        rec(3.0, "receive", req(2, "tools/call", name="add_to_calendar", arguments={"booking_id": "x"})),
        rec(
            3.1,
            "send",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "error": {
                    "code": -32042,
                    "message": "authorize first",
                    "data": {"elicitations": [{**step, "elicitationId": "e2"}]},
                },
            },
        ),
        rec(4.0, "send", note("notifications/elicitation/complete", elicitationId="e2")),
        rec(4.1, "receive", req(3, "tools/call", name="add_to_calendar", arguments={"booking_id": "x"})),
        rec(4.2, "send", note("notifications/elicitation/complete", elicitationId="nobody-asked")),
    ]
    d = read_trace(lines)
    assert "url: https://pay.example/e1" in d.events[1].label
    assert d.events[4].note == "completes the URL step of elicitation/create #1"
    assert d.events[7].note == "completes the -32042 step of tools/call #2"
    assert d.events[8].note == "retry of tools/call #2 after -32042"
    assert d.events[9].note == ""


async def test_traces_over_streamable_http_both_eras_both_sides() -> None:
    from minimcp import connect_http, serve_http

    server_lines: list[str] = []
    app = asking_server(server_lines)
    client_lines: dict[str, list[str]] = {"legacy": [], "modern": []}
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_http, app)
            for era, lines in client_lines.items():
                async with connect_http(
                    f"http://127.0.0.1:{port}/mcp", elicitation_handler=person, era=era, trace=WireTrace(lines.append)
                ) as client:
                    assert (await client.call_tool("ask", {})).text == "Accepted"
            tg.cancel_scope.cancel()

    legacy = read_trace(client_lines["legacy"])
    assert legacy.side == "client"
    question = next(c for c in legacy.calls if c.method == "elicitation/create")
    assert question.parent is not None and question.parent.method == "tools/call" and question.depth == 1
    modern = read_trace(client_lines["modern"])
    rounds = [c for c in modern.calls if c.method == "tools/call"]
    assert [(c.round, c.outcome) for c in rounds] == [(1, "input_required"), (2, "result")]
    assert rounds[0].chain == rounds[1].chain
    served = read_trace(server_lines)
    assert served.side == "server" and len(served.lifelines) == 2  # one per era's connection
    asked = [c for c in served.calls if c.method == "elicitation/create"]
    assert len(asked) == 1 and asked[0].parent is not None and not asked[0].guessed
    modern_rounds = [c for c in served.calls if c.method == "tools/call" and c.round == 2]
    assert len(modern_rounds) == 1, "the server traces its 2026-07-28 rounds too"
    for d in (legacy, modern, served):
        _check_drawing(d, render_svg(d))
