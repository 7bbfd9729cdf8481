"""What a new 2026-07-28 call builds per round trip (issue 19): its run, context and metrics, counted, never timed.

A call taken over by the read loop hands its result to its reply as is (no ``Returned`` tuple per
call); a new run stores no defaults for its round's fields (set by its first question) and keeps
one slot for what the request side learns next; a context keeps one progress record; the metrics
read ``pending`` and ``wait_count`` from their counters instead of keeping them beside them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

from minimcp.server.context import Context
from minimcp.server.metrics import ElicitationMetrics, ToolMetrics
from minimcp.server.mrtr import rounds
from minimcp.server.mrtr.parking import Parking
from minimcp.server.mrtr.run import Returned, Run
from tests.helpers import raw_client
from tests.helpers.modern import Modern
from tests.helpers.modern_form_work import ask_rounds, pick_server

TIMEOUT = 30
ROUNDS = 5


async def test_a_taken_call_makes_no_outcome_tuple(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    made = [0]

    class Counted(Returned):
        __slots__ = ()

        def __new__(cls, value: Any) -> Counted:
            made[0] += 1
            return super().__new__(cls, value)

    monkeypatch.setattr(rounds, "Returned", Counted)
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await ask_rounds(m, ROUNDS)
            assert len(server.parking) == 0  # (each call ended out of its parking)
    assert made[0] == 0


def test_a_new_run_stores_no_round_defaults() -> None:
    run = Run("t", [], None, None, Parking(1))
    # set by the run's first question, read only once it asked
    for name in ("pending", "pending_keys", "asked_at", "pending_timeout", "_answer_cell"):
        assert not hasattr(run, name), name
    assert "_outcome_cell" not in Run.__slots__  # (one slot: the outcome, or the cell waiting for it)
    assert [s for s in Context.__slots__ if "progress" in s] == ["_progress"]


def test_metrics_read_pending_and_wait_count_from_their_counters() -> None:
    assert {f.name for f in dataclasses.fields(ToolMetrics)}.isdisjoint({"pending", "wait_count"})
    m = ElicitationMetrics()
    for _ in range(4):
        m.started("t")
    m.finished("t", "accepted", 0.05, "c")
    m.finished("t", "timed_out", 1.0, "c")
    m.finished("t", "declined", 3.0, None)
    per = m.tools["t"]
    assert (per.pending, per.wait_count, per.accepted, per.timed_out, per.declined) == (1, 3, 1, 1, 1)
    assert m.clients == {"c": [1, 1]}  # a timeout is no answer; the accepted one came implausibly fast
    snap = m.snapshot()
    assert (snap["total"]["pending"], snap["tools"]["t"]["wait_count"]) == (1, 3)
    with pytest.raises(ValueError, match="unknown outcome"):
        m.finished("t", "lost", 0.0, None)
    assert m.total.pending == 1
