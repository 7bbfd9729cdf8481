"""minimcp.server.metrics: elicitation counters per tool, the wait histogram, and their Prometheus text."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from minimcp import Server
from minimcp.server.metrics import (
    BUCKETS,
    CONTENT_TYPE,
    ElicitationMetrics,
    MetricsRoute,
    ToolMetrics,
    prometheus_text,
    server_metrics_text,
)


def test_a_question_counts_as_pending_until_it_ends() -> None:
    m = ElicitationMetrics()
    m.started("book")
    m.started("book")
    m.started("pay")
    assert (m.total.started, m.total.pending) == (3, 3)
    assert (m.tools["book"].started, m.tools["book"].pending) == (2, 2)
    m.finished("book", "accepted", 1.0, "cli")
    assert (m.total.pending, m.tools["book"].pending, m.tools["book"].accepted) == (2, 1, 1)
    assert m.total.accepted == 1 and m.tools["pay"].accepted == 0


@pytest.mark.parametrize("outcome", ["accepted", "declined", "cancelled", "timed_out", "invalid_answer", "failed"])
def test_each_outcome_has_its_counter(outcome: str) -> None:
    m = ElicitationMetrics()
    m.started("t")
    m.finished("t", outcome, 0.5, None)
    assert getattr(m.tools["t"], outcome) == 1 == getattr(m.total, outcome)
    others = {"accepted", "declined", "cancelled", "timed_out", "invalid_answer", "failed"} - {outcome}
    assert all(getattr(m.total, o) == 0 for o in others)


def test_an_unknown_outcome_is_refused() -> None:
    m = ElicitationMetrics()
    m.started("t")
    with pytest.raises(ValueError, match="'answered'"):
        m.finished("t", "answered", 0.1, None)
    assert m.total.pending == 1


def test_waits_land_in_the_histogram_bucket_of_their_upper_bound() -> None:
    m = ElicitationMetrics()
    for waited in (0.05, 0.1, 0.2, 4000.0):
        m.started("t")
        m.finished("t", "declined", waited, None)
    buckets = m.tools["t"].wait_buckets
    assert len(buckets) == len(BUCKETS) + 1
    assert buckets[0] == 2  # 0.05 and 0.1 (the bound is inclusive)
    assert buckets[1] == 1  # 0.2 <= 0.25
    assert buckets[-1] == 1  # beyond the last bound: +Inf
    assert m.tools["t"].wait_count == 4 and m.tools["t"].wait_sum == pytest.approx(4000.35)


def test_unsupported_questions_are_counted_by_mode() -> None:
    m = ElicitationMetrics()
    m.unsupported("t", "url")
    m.unsupported("t", "form")
    m.unsupported("t", "form")
    assert (m.tools["t"].unsupported_url, m.tools["t"].unsupported_form) == (1, 2)
    assert m.total.unsupported_form == 2


def test_clients_answering_implausibly_fast_are_named() -> None:
    m = ElicitationMetrics(fast_answer_threshold=0.2)
    for _ in range(5):
        m.started("t")
        m.finished("t", "accepted", 0.01, "bot")
        m.started("t")
        m.finished("t", "accepted", 3.0, "person")
    for _ in range(4):
        m.started("t")
        m.finished("t", "declined", 0.01, "new")  # too few answers to judge
    m.started("t")
    m.finished("t", "timed_out", 0.01, "slow")  # no answer: not counted for the client
    assert m.fast_answer_clients() == ["bot"]
    assert m.clients["person"] == [5, 0] and "slow" not in m.clients
    assert m.snapshot()["clients"]["bot"] == {"answers": 5, "fast_answers": 5}


def test_snapshot_is_plain_data() -> None:
    m = ElicitationMetrics()
    m.started("t")
    snap = m.snapshot()
    assert snap["total"]["started"] == 1 and snap["tools"]["t"]["pending"] == 1
    assert list(snap["total"]["wait_buckets"]) == [*map(str, BUCKETS), "+Inf"]
    assert snap["fast_answer_clients"] == []
    assert ToolMetrics().as_dict()["wait_buckets"]["+Inf"] == 0


def test_prometheus_text() -> None:
    m = ElicitationMetrics()
    m.started('say "hi"\n')
    m.finished('say "hi"\n', "accepted", 0.3, "c")
    text = prometheus_text(m)
    lines = text.splitlines()
    assert text.endswith("\n")
    label = 'tool="say \\"hi\\"\\n"'
    assert f"minimcp_elicitations_accepted_total{{{label}}} 1" in lines
    assert f"minimcp_elicitations_pending{{{label}}} 0" in lines
    # cumulative buckets: 0 up to 0.25, 1 from 0.5 on
    assert f'minimcp_elicitation_wait_seconds_bucket{{{label},le="0.25"}} 0' in lines
    assert f'minimcp_elicitation_wait_seconds_bucket{{{label},le="0.5"}} 1' in lines
    assert f'minimcp_elicitation_wait_seconds_bucket{{{label},le="+Inf"}} 1' in lines
    assert f"minimcp_elicitation_wait_seconds_count{{{label}}} 1" in lines
    assert "# TYPE minimcp_elicitations_pending gauge" in lines
    assert "minimcp_session_timeouts_total 0" in lines


def test_server_metrics_text_of_a_server_without_sessions() -> None:
    text = server_metrics_text(Server("s")).decode()
    assert "# TYPE minimcp_elicitations_started_total counter" in text
    assert "minimcp_session_invalid_messages_total 0" in text.splitlines()


async def test_metrics_route_answers_get_and_passes_the_rest_on() -> None:
    passed: list[str] = []

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        passed.append(f"{scope['method']} {scope['path']}")

    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    route = MetricsRoute(app, Server("s"), path="/m")
    await route({"type": "http", "method": "GET", "path": "/m"}, receive, send)
    assert passed == []
    assert sent[0]["status"] == 200
    assert (b"content-type", CONTENT_TYPE.encode()) in sent[0]["headers"]
    assert b"minimcp_elicitations_started_total" in sent[1]["body"]
    await route({"type": "http", "method": "POST", "path": "/m"}, receive, send)
    await route({"type": "http", "method": "GET", "path": "/mcp"}, receive, send)
    assert passed == ["POST /m", "GET /mcp"] and len(sent) == 2
