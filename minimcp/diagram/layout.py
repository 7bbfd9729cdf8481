"""Sequence diagrams of wire traces: read a trace, work out who called whom, lay it out.

A :class:`~minimcp.core.trace.WireTrace` file records every message of a session as a JSON line.
:func:`read_trace` turns those lines into a :class:`Diagram`: lifelines (the server and one
client per connection), one :class:`Event` per message in time order, and one :class:`Call`
per request, with what the drawing needs to show the shape of the exchange:

- a server->client request (``elicitation/create``, ``sampling/createMessage``, ``roots/list``)
  sits inside the client's call that asked it (``Call.parent``, ``Event.depth``), known from
  the record's ``rel`` field when the trace has it, else the newest open call (marked guessed);
- a response points at its request by id (an id nobody asked is flagged, not dropped);
- ``notifications/cancelled`` and ``notifications/progress`` land inside the call they speak of;
- on revision 2026-07-28 an ``input_required`` result and the retry that carries its
  ``requestState`` are rounds of one call (``Call.chain``, ``Call.round``).

Bad or truncated lines are reported (``Diagram.problems``, with line numbers) and skipped.
:func:`render_text` draws the diagram for a terminal; :mod:`minimcp.diagram.svg` draws SVG and
HTML. Pure: no I/O beyond the strings it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "Diagram", "Event", "read_trace", "render_text", "shorten", "summary"]

#: Methods only a client sends, and methods only a server sends: they tell which side wrote a
#: trace whose session name does not say it.
_CLIENT_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "notifications/roots/list_changed",
        "subscriptions/listen",
    }
)
_SERVER_METHODS = frozenset(
    {
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
        "notifications/message",
        "notifications/elicitation/complete",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)


@dataclass(eq=False)
class Call:
    """One request and, when it came, its response."""

    lifeline: int  #: the client lifeline (connection) it travels on
    from_client: bool  #: client->server (a call) or server->client (a question)
    id: Any
    method: str
    start: int  #: index of the request's event
    end: int | None = None  #: index of the response's event (``None``: never answered)
    outcome: str | None = None  #: "result", "error", "input_required"
    parent: Call | None = None  #: the call a server->client request was asked inside
    guessed: bool = False  #: ``parent`` was inferred (the trace had no ``rel``)
    depth: int = 0
    lane: int = 0  #: which of the receiver's activation bars (concurrent calls side by side)
    chain: int = 0  #: calls that are rounds of one 2026-07-28 call share a chain number
    round: int = 1
    children: list[Call] = field(default_factory=list)
    progress_token: Any = None

    @property
    def name(self) -> str:
        return f"{self.method} #{_id_text(self.id)}"


@dataclass(eq=False)
class Event:
    """One message: an arrow in the drawing."""

    index: int
    line: int  #: line number in the trace
    t: float  #: seconds since the diagram's first message
    lifeline: int
    from_client: bool
    kind: str  #: "request", "notification", "result", "error", "other"
    label: str  #: what the arrow says (short)
    detail: str  #: the whole message, as indented JSON
    message: Any
    call: Call | None = None  #: the request it opens or answers, or the call it speaks of
    depth: int = 0
    note: str = ""  #: a remark: "inside tools/call #2", "round 2", "unknown id", ...


@dataclass
class Diagram:
    lifelines: list[str]  #: client lifeline names, one per connection
    server: str  #: the server lifeline's name
    side: str  #: whose trace this is: "server", "client" or "mixed"
    events: list[Event]
    calls: list[Call]
    problems: list[str]  #: "line 7: ..." for each line that was skipped
    chains: int = 0

    def lanes(self, *, client_side: bool) -> int:
        """How many activation bars stand side by side at most on one lifeline."""
        lanes = [c.lane for c in self.calls if c.from_client is not client_side]
        return max(lanes, default=-1) + 1


def _id_text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _compact(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=False)
    except (TypeError, ValueError):
        text = str(value)
    return shorten(text, limit)


def _text_of(result: Any) -> str:
    """The first text block of a result, if it has one."""
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
    return ""


def summary(message: Any) -> tuple[str, str]:
    """``(kind, label)`` of one JSON-RPC message: what its arrow says."""
    if not isinstance(message, dict):
        return "other", shorten(str(message), 60)
    method, mid = message.get("method"), message.get("id")
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    if isinstance(method, str):
        detail = _request_detail(method, params)
        if "id" in message:
            return "request", f"{method} #{_id_text(mid)}" + (f"  {detail}" if detail else "")
        return "notification", method + (f"  {detail}" if detail else "")
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        return "error", f"#{_id_text(mid)} error {error.get('code', '?')}: {error.get('message', '')}"
    if "result" in message:
        return "result", f"#{_id_text(mid)} " + _result_detail(message["result"])
    return "other", _compact(message)


def _request_detail(method: str, params: dict[str, Any]) -> str:
    if method == "tools/call":
        rounds = " (retry with answers)" if "inputResponses" in params else ""
        return f"{params.get('name', '?')} {_compact(params.get('arguments', {}), 50)}{rounds}"
    if method == "elicitation/create":
        if params.get("mode") == "url":
            return f"url: {params.get('url', '')}"
        return f"form: {params.get('message', '')}"
    if method in ("prompts/get", "resources/read", "resources/subscribe"):
        return str(params.get("name") or params.get("uri") or "")
    if method == "initialize":
        return f"protocol {params.get('protocolVersion', '?')}"
    if method == "notifications/cancelled":
        return f"request #{_id_text(params.get('requestId'))}" + (
            f" ({params['reason']})" if isinstance(params.get("reason"), str) else ""
        )
    if method == "notifications/progress":
        message = f" {params['message']}" if isinstance(params.get("message"), str) else ""
        return f"{params.get('progress', '?')}{message}"
    if method == "notifications/elicitation/complete":
        return f"step {params.get('elicitationId', '?')}"
    if method == "notifications/message":
        return f"{params.get('level', '')}: {_compact(params.get('data'), 40)}"
    return ""


def _result_detail(result: Any) -> str:
    if not isinstance(result, dict):
        return "result"
    if result.get("resultType") == "input_required":  # 2026-07-28: the questions ride on the result
        asked = result.get("inputRequests")
        items = list(asked.values()) if isinstance(asked, dict) else asked if isinstance(asked, list) else []
        first = items[0] if items and isinstance(items[0], dict) else {}
        method = str(first.get("method", "?"))
        asked_params = first.get("params")
        params = asked_params if isinstance(asked_params, dict) else {}
        more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
        return f"input_required: {method} {_request_detail(method, params)}{more}"
    if "action" in result:  # an answer to elicitation/create
        content = result.get("content")
        return f"{result['action']}" + (f" {_compact(content, 40)}" if content else "")
    if "serverInfo" in result:
        info = result["serverInfo"] if isinstance(result["serverInfo"], dict) else {}
        version = result.get("protocolVersion", "")
        return f"result: {info.get('name', '?')} {info.get('version', '')}, protocol {version}".rstrip(", ")
    if "tools" in result and isinstance(result["tools"], list):
        return f"result: {len(result['tools'])} tools"
    flag = "tool error: " if result.get("isError") is True else "result: "
    text = _text_of(result)
    return flag + (text if text else _compact(result, 50))


@dataclass
class _Record:
    line: int
    t: float
    session: str
    conn: Any
    direction: str
    related: Any
    message: Any


def _records(lines: Iterable[str], problems: list[str]) -> list[_Record]:
    records: list[_Record] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not a JSON line ({exc.msg}; truncated?)")
            continue
        if not isinstance(record, dict) or "msg" not in record or record.get("dir") not in ("send", "receive"):
            problems.append(f'line {number}: not a trace record (needs "dir": send|receive and "msg")')
            continue
        t = record.get("t")
        if not isinstance(t, int | float) or isinstance(t, bool):
            problems.append(f'line {number}: no time ("t")')
            continue
        items = record["msg"] if isinstance(record["msg"], list) and record["msg"] else [record["msg"]]
        for item in items:  # a batch is several arrows at one time
            records.append(
                _Record(
                    number,
                    float(t),
                    str(record.get("session", "")),
                    record.get("conn"),
                    record["dir"],
                    record.get("rel"),
                    item,
                )
            )
    return records


def _side_of(records: list[_Record]) -> str:
    """ "server" if the records were written by the server, "client" if by the client."""
    names = {r.session.split(" ", 1)[0] for r in records}
    if names == {"server"} or names == {"client"}:
        return names.pop()
    votes = 0
    for r in records:
        method = r.message.get("method") if isinstance(r.message, dict) else None
        if method in _CLIENT_METHODS:
            votes += 1 if r.direction == "send" else -1
        elif method in _SERVER_METHODS or (
            isinstance(r.message, dict)
            and isinstance(r.message.get("result"), dict)
            and "serverInfo" in r.message["result"]
        ):  # a server's message: a server-only method, or the answer to initialize
            votes += -1 if r.direction == "send" else 1
    return "client" if votes > 0 else "server"


class _Builder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.calls: list[Call] = []
        self.open: dict[tuple[int, bool, str], Call] = {}  # (lifeline, from_client, id) -> call
        self.busy: dict[tuple[int, bool], set[int]] = {}  # lanes in use per (lifeline, from_client)
        self.by_state: dict[str, Call] = {}
        self.by_token: dict[tuple[int, str], Call] = {}
        self.seen: dict[tuple[int, bool, str], Call] = {}  # the latest request with a key, answered or not
        self.firsts: dict[int, Call] = {}  # chain -> its first round
        self.steps: dict[str, tuple[Call, str]] = {}  # URL elicitation id -> the call that sent it, and how
        self.refused: dict[tuple[int, str], Call] = {}  # (lifeline, tools/call name+arguments) answered -32042

    def lane(self, call: Call) -> int:
        used = self.busy.setdefault((call.lifeline, call.from_client), set())
        lane = 0
        while lane in used:
            lane += 1
        used.add(lane)
        return lane

    def request(self, event: Event, message: dict[str, Any], related: Any) -> None:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        call = Call(event.lifeline, event.from_client, message.get("id"), str(message.get("method")), event.index)
        call.lane = self.lane(call)
        if not event.from_client:  # a question: inside which call?
            if related is not None:
                call.parent = self.open.get((event.lifeline, True, json.dumps(related)))
            if call.parent is None:
                candidates = [c for c in self.open.values() if c.lifeline == event.lifeline and c.from_client]
                if candidates:  # a guess only when several were open: the oldest not already asking
                    idle = [c for c in candidates if not any(k.end is None for k in c.children)]
                    call.parent, call.guessed = (idle or candidates)[0], len(candidates) > 1
        if call.parent is not None:
            call.depth = call.parent.depth + 1
            call.parent.children.append(call)
            event.note = f"inside {call.parent.name}" + (" (guessed)" if call.guessed else "")
        state = params.get("requestState")
        earlier = self.by_state.get(state) if isinstance(state, str) else None
        if earlier is not None:
            call.chain, call.round = earlier.chain, earlier.round + 1
            event.note = f"round {call.round} of {self.firsts[call.chain].name}"
        else:
            call.chain = len(self.firsts) + 1
            self.firsts[call.chain] = call
            if isinstance(state, str):
                event.note = "retry with a state this trace never saw"
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            call.progress_token = meta["progressToken"]
            self.by_token[(event.lifeline, json.dumps(meta["progressToken"]))] = call
        if isinstance(params.get("elicitationId"), str):
            self.steps[params["elicitationId"]] = (call, "URL step")
        if call.method == "tools/call":
            what = (event.lifeline, json.dumps([params.get("name"), params.get("arguments")], sort_keys=True))
            refused = self.refused.pop(what, None)
            if refused is not None and not event.note:
                event.note = f"retry of {refused.name} after -32042"
        key = (event.lifeline, event.from_client, json.dumps(call.id))
        self.open[key] = self.seen[key] = call
        self.calls.append(call)
        event.call, event.depth = call, call.depth

    def response(self, event: Event, message: dict[str, Any]) -> None:
        key = (event.lifeline, not event.from_client, json.dumps(message.get("id")))
        call = self.open.pop(key, None)
        if call is None:
            event.note = "unknown id: no open request has it"
            return
        call.end = event.index
        self.busy[(call.lifeline, call.from_client)].discard(call.lane)
        result = message.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            call.outcome = "input_required"
            state = result.get("requestState")
            if isinstance(state, str):
                self.by_state[state] = call
        else:
            call.outcome = "error" if "error" in message else "result"
            error = message.get("error")
            data = error.get("data") if isinstance(error, dict) else None
            steps = data.get("elicitations") if isinstance(data, dict) else None
            if isinstance(steps, list) and call.method == "tools/call":  # -32042: steps, then a retry
                for step in steps:
                    if isinstance(step, dict) and isinstance(step.get("elicitationId"), str):
                        self.steps[step["elicitationId"]] = (call, "-32042 step")
                request = self.events[call.start].message.get("params") or {}
                what = json.dumps([request.get("name"), request.get("arguments")], sort_keys=True)
                self.refused[(call.lifeline, what)] = call
        event.call, event.depth = call, call.depth

    def notification(self, event: Event, message: dict[str, Any]) -> None:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        target: Call | None = None
        if message.get("method") == "notifications/cancelled":  # the sender cancels a request it sent
            target = self.seen.get((event.lifeline, event.from_client, json.dumps(params.get("requestId"))))
        elif message.get("method") == "notifications/progress":
            target = self.by_token.get((event.lifeline, json.dumps(params.get("progressToken"))))
        elif message.get("method") == "notifications/elicitation/complete":
            step = self.steps.get(params.get("elicitationId"))  # type: ignore[arg-type]
            if step is not None:
                event.note = f"completes the {step[1]} of {step[0].name}"
        if target is not None:
            event.call = target
            event.depth = target.depth + (1 if target.end is None else 0)
            if not event.note:
                event.note = f"about {target.name}"


def read_trace(lines: Iterable[str], *, side: str | None = None) -> Diagram:
    """Build the diagram of a trace's lines. ``side`` ("server"/"client") overrides detection."""
    problems: list[str] = []
    records = _records(lines, problems)
    records.sort(key=lambda r: (r.t, r.line))  # several writers may interleave lines a little
    side = side or _side_of(records)
    conns: dict[tuple[str, Any], int] = {}
    server_name = ""
    for r in records:
        key = (r.session, r.conn)
        if key not in conns:
            conns[key] = len(conns)
        if side == "server" and not server_name and r.session.startswith("server "):
            server_name = r.session[len("server ") :].split(" (", 1)[0]
    builder = _Builder()
    start = records[0].t if records else 0.0
    for r in records:
        from_client = (r.direction == "send") == (side == "client")
        kind, label = summary(r.message)
        detail = json.dumps(r.message, indent=2, ensure_ascii=False)
        event = Event(
            len(builder.events),
            r.line,
            r.t - start,
            conns[(r.session, r.conn)],
            from_client,
            kind,
            label,
            detail,
            r.message,
        )
        builder.events.append(event)
        if not isinstance(r.message, dict):
            continue
        if kind == "request":
            builder.request(event, r.message, r.related)
        elif kind in ("result", "error"):
            builder.response(event, r.message)
            result = r.message.get("result")
            if not server_name and isinstance(result, dict) and isinstance(result.get("serverInfo"), dict):
                server_name = str(result["serverInfo"].get("name", ""))
        elif kind == "notification":
            builder.notification(event, r.message)
    lifelines = ["client"] if len(conns) == 1 else [f"client {i + 1}" for i in range(len(conns))]
    return Diagram(
        lifelines, f"server {server_name}".strip(), side, builder.events, builder.calls, problems, len(builder.firsts)
    )


def render_text(diagram: Diagram, *, width: int = 100) -> str:
    """The diagram as lines for a terminal: time, direction, nesting bars and the arrow's label."""
    names = diagram.lifelines
    pad = max(len(n) for n in names) if names else 6
    out = [
        f"{len(diagram.events)} messages between {', '.join(names) or 'nobody'} and {diagram.server} "
        f"({diagram.side}-side trace)"
    ]
    for e in diagram.events:
        who = names[e.lifeline].rjust(pad)
        arrow = f"{who} ──► {diagram.server}" if e.from_client else f"{who} ◄── {diagram.server}"
        style = {"request": "", "notification": "· ", "result": "↩ ", "error": "✗ ", "other": "? "}[e.kind]
        head = f"{'+' + format(e.t, '.3f'):>9}s  {arrow}  {'│ ' * e.depth}{style}"
        note = f"   ({e.note})" if e.note else ""
        out.append(head + shorten(e.label, max(width - len(head) - len(note), 40)) + note)
    out.extend(f"skipped {p}" for p in diagram.problems)
    return "\n".join(out) + "\n"
