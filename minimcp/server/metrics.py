"""Elicitation metrics: sans-I/O counters that show whether the questions to people work.

Per server and per tool: elicitations started, accepted, declined, cancelled,
timed out, answers that failed validation, and fallbacks because the client
lacked the capability (form and URL apart); a gauge of pending questions; a
histogram of how long each one waited for the person. Clients that answer in
implausibly short time -- typically an automatic decline that never showed the
question to anyone -- are counted per client name.

Recording costs a few integer increments per elicitation. Read it with
:meth:`ElicitationMetrics.snapshot` (plain dicts) or
:func:`prometheus_text` (the Prometheus text exposition format), or serve it
with :class:`MetricsRoute` in front of an ASGI app.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = [
    "BUCKETS",
    "CONTENT_TYPE",
    "ElicitationMetrics",
    "MetricsRoute",
    "ToolMetrics",
    "prometheus_text",
    "server_metrics_text",
]

#: Upper bounds (seconds) of the wait-time histogram buckets; the last bucket is +Inf.
BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

_OUTCOMES = frozenset({"accepted", "declined", "cancelled", "timed_out", "invalid_answer", "failed"})
_bucket_of = bisect.bisect_left
# Outcomes where the client answered (and so may have answered implausibly fast).
_ANSWERED = _OUTCOMES - {"timed_out", "failed"}


@dataclasses.dataclass(slots=True)
class ToolMetrics:
    """Counters of one tool (or of the whole server)."""

    started: int = 0
    accepted: int = 0
    declined: int = 0
    cancelled: int = 0
    timed_out: int = 0
    invalid_answer: int = 0
    failed: int = 0
    unsupported_form: int = 0
    unsupported_url: int = 0
    wait_buckets: list[int] = dataclasses.field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    wait_sum: float = 0.0

    # ``pending`` and ``wait_count`` are read from the counters, not kept beside them (two increments
    # fewer per question): every question started is pending until it ends with one outcome, and
    # every question that ended waited once, in one bucket.

    @property
    def pending(self) -> int:
        """Questions started and not ended yet (a gauge)."""
        return (
            self.started - self.accepted - self.declined - self.cancelled - self.timed_out
            - self.invalid_answer - self.failed
        )

    @property
    def wait_count(self) -> int:
        """Questions that ended (each waited once: the histogram's count)."""
        return sum(self.wait_buckets)

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["pending"], data["wait_count"] = self.pending, self.wait_count
        data["wait_buckets"] = dict(zip([*map(str, BUCKETS), "+Inf"], self.wait_buckets, strict=True))
        return data


#: The counters of :class:`ToolMetrics` summed as they are (the histogram's buckets are summed one by one).
_SUMMED = tuple(f.name for f in dataclasses.fields(ToolMetrics) if f.name != "wait_buckets")


class ElicitationMetrics:
    """All elicitation counters of one server.

    Args:
        fast_answer_threshold: An answer (any action) arriving sooner than this
            many seconds after the question was sent is counted as implausibly
            fast for that client name.
    """

    def __init__(self, fast_answer_threshold: float = 0.2) -> None:
        self.fast_answer_threshold = fast_answer_threshold
        self.tools: dict[str, ToolMetrics] = {}
        #: client name -> [answers, implausibly fast answers]
        self.clients: dict[str, list[int]] = {}

    @property
    def total(self) -> ToolMetrics:
        """The whole server's counters: the sum of every tool's, made when read (a copy: it does not
        change as the counters do). Only the tool's counters are written per question."""
        total = ToolMetrics()
        for per in self.tools.values():
            for name in _SUMMED:
                setattr(total, name, getattr(total, name) + getattr(per, name))
            total.wait_buckets = [a + b for a, b in zip(total.wait_buckets, per.wait_buckets, strict=True)]
        return total

    def _tool(self, tool: str) -> ToolMetrics:
        per = self.tools.get(tool)
        if per is None:
            per = self.tools[tool] = ToolMetrics()
        return per

    def started(self, tool: str) -> None:
        per = self.tools.get(tool)  # (as _tool: one call less per question)
        if per is None:
            per = self.tools[tool] = ToolMetrics()
        per.started += 1  # (and so one more pending: ToolMetrics.pending)

    def unsupported(self, tool: str, mode: str) -> None:
        """The client could not be asked (``mode`` ``"form"`` or ``"url"``): a fallback."""
        m = self._tool(tool)
        if mode == "url":
            m.unsupported_url += 1
        else:
            m.unsupported_form += 1

    def finished(self, tool: str, outcome: str, waited: float, client: str | None) -> None:
        """One question ended: ``outcome`` is one of accepted, declined, cancelled, timed_out,
        invalid_answer, failed (connection lost, parent cancelled)."""
        per = self.tools.get(tool)
        if per is None:
            per = self.tools[tool] = ToolMetrics()
        if outcome == "accepted":  # the usual outcome, counted without getattr/setattr
            per.accepted += 1
            answerer = client  # (as below: "accepted" is an answer)
        elif outcome in _OUTCOMES:
            setattr(per, outcome, getattr(per, outcome) + 1)
            answerer = client if outcome in _ANSWERED else None  # (None: not counted per client)
        else:
            raise ValueError(f"unknown outcome {outcome!r}")
        per.wait_buckets[_bucket_of(BUCKETS, waited)] += 1  # (one pending less, one wait counted)
        per.wait_sum += waited
        if answerer is not None:
            counts = self.clients.get(answerer)
            if counts is None:
                counts = self.clients[answerer] = [0, 0]
            counts[0] += 1
            if waited < self.fast_answer_threshold:
                counts[1] += 1

    def fast_answer_clients(self, min_answers: int = 5, share: float = 0.8) -> list[str]:
        """Client names whose answers are mostly implausibly fast (likely never shown to a person)."""
        return sorted(
            name for name, (answers, fast) in self.clients.items() if answers >= min_answers and fast / answers >= share
        )

    def snapshot(self) -> dict[str, Any]:
        """Everything as plain data (cheap: copies a few integers per tool)."""
        return {
            "total": self.total.as_dict(),
            "tools": {name: m.as_dict() for name, m in self.tools.items()},
            "clients": {name: {"answers": a, "fast_answers": f} for name, (a, f) in self.clients.items()},
            "fast_answer_clients": self.fast_answer_clients(),
        }


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def prometheus_text(metrics: ElicitationMetrics, sessions: Iterable[Any] = ()) -> str:
    """The Prometheus text exposition format of ``metrics`` (and of the given sessions' counters)."""
    out: list[str] = []
    counters = [
        ("started", "Elicitations started"),
        ("accepted", "Elicitations accepted"),
        ("declined", "Elicitations declined"),
        ("cancelled", "Elicitations cancelled by the person"),
        ("timed_out", "Elicitations that timed out"),
        ("invalid_answer", "Accepted answers that failed validation"),
        ("failed", "Elicitations ended by a lost connection or a cancelled call"),
        ("unsupported_form", "Form questions not asked: client lacks form elicitation"),
        ("unsupported_url", "URL questions not asked: client lacks URL elicitation"),
    ]
    for field, help_text in counters:
        name = f"minimcp_elicitations_{field}_total"
        out.append(f"# HELP {name} {help_text}.")
        out.append(f"# TYPE {name} counter")
        for tool, m in sorted(metrics.tools.items()):
            out.append(f'{name}{{tool="{_label(tool)}"}} {getattr(m, field)}')
    out.append("# HELP minimcp_elicitations_pending Questions waiting for a person now.")
    out.append("# TYPE minimcp_elicitations_pending gauge")
    for tool, m in sorted(metrics.tools.items()):
        out.append(f'minimcp_elicitations_pending{{tool="{_label(tool)}"}} {m.pending}')
    out.append("# HELP minimcp_elicitation_wait_seconds How long each question waited for the person.")
    out.append("# TYPE minimcp_elicitation_wait_seconds histogram")
    for tool, m in sorted(metrics.tools.items()):
        label = _label(tool)
        running = 0
        for bound, count in zip([*map(str, BUCKETS), "+Inf"], m.wait_buckets, strict=True):
            running += count
            out.append(f'minimcp_elicitation_wait_seconds_bucket{{tool="{label}",le="{bound}"}} {running}')
        out.append(f'minimcp_elicitation_wait_seconds_sum{{tool="{label}"}} {m.wait_sum}')
        out.append(f'minimcp_elicitation_wait_seconds_count{{tool="{label}"}} {m.wait_count}')
    out.append("# HELP minimcp_client_fast_answers_total Answers sooner than the plausibility threshold.")
    out.append("# TYPE minimcp_client_fast_answers_total counter")
    for client, (_, fast) in sorted(metrics.clients.items()):
        out.append(f'minimcp_client_fast_answers_total{{client="{_label(client)}"}} {fast}')
    stats = [s.stats for s in sessions]
    for field, help_text in (
        ("unknown_responses", "Responses with unknown, late or duplicate ids (dropped)"),
        ("timeouts", "Requests that timed out"),
        ("cancelled_by_peer", "Inbound requests cancelled by the peer"),
        ("invalid_messages", "Messages refused as invalid"),
    ):
        name = f"minimcp_session_{field}_total"
        out.append(f"# HELP {name} {help_text}, over live sessions.")
        out.append(f"# TYPE {name} counter")
        out.append(f"{name} {sum(getattr(s, field) for s in stats)}")
    return "\n".join(out) + "\n"


#: The content type of :func:`prometheus_text`.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def server_metrics_text(server: Any) -> bytes:
    """The Prometheus text of a :class:`~minimcp.server.server.Server`: its metrics and its live sessions' counters."""
    return prometheus_text(server.metrics, [conn.session for conn in server.connections]).encode()


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class MetricsRoute:
    """ASGI middleware: ``GET <path>`` answers the Prometheus text; everything else goes to ``app``.

    Args:
        app: The ASGI app to wrap (a Streamable HTTP app, say).
        server: The :class:`~minimcp.server.server.Server` whose metrics to expose.
        path: Where to serve them.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], server: Any, path: str = "/metrics"):
        self.app = app
        self.server = server
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and scope.get("path") == self.path and scope.get("method") == "GET":
            body = server_metrics_text(self.server)
            headers = [(b"content-type", CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
