"""Fault-injection soak, short version: every pending request ends exactly once, on both backends.

The engine lives in ``benchmarks/soak.py`` (its docstring lists the plan kinds and the injected
faults); ``python benchmarks/soak.py --elicitations 100000`` is the long version. Here: 20
connections x 150 concurrent elicitating tool calls per round, a seeded mix of accept / decline /
cancel / invalid answers (refused by the server, and refused by the client itself) / timeouts /
the caller cancelling its call, a fifth of the connections cut at a random moment from either end,
and stray messages injected next to the client's answers (duplicates, unknown ids, cancellations
for unknown ids, garbage).

Each round checks, per call number: one outcome on the client, at most one tool run ending
exactly once with the expected outcome, at most one question handler ending exactly once; no
answer reaching another call; exact counters on every connection that stayed up; every table
empty; every session holding nothing after close; the server without connections.
"""

from __future__ import annotations

import collections
import gc
import importlib.util
import logging
import pathlib
import sys
import tracemalloc
from types import ModuleType
from typing import Any

import anyio
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load_soak() -> ModuleType:
    name = "minimcp_benchmark_soak"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


soak = _load_soak()

#: Bytes a second identical round may leave behind beyond the first (tracemalloc, after gc, blocks
#: under 16 KB: a leak is many small objects, while a hash table that grew to a new capacity is one
#: big block that says nothing about leaks). A leaked pending cell, event or cancel scope per call
#: would be several hundred KB over the 3,000 calls of a round. trio drops stale entries of its own
#: deadline heap lazily (up to 1,000 beyond twice the live ones, each holding a cancel scope), which
#: moves the figure by up to about 170 KB either way between two rounds; asyncio stays within ~2 KB.
GROWTH_BOUND = {"asyncio": 64 * 1024, "trio": 256 * 1024}


@pytest.fixture
def quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    # Every bad_answer call makes the client log an error; captured records would count as growth.
    caplog.set_level(logging.CRITICAL, logger="minimcp")


def _assert_clean(report: object) -> None:
    problems = report.problems  # type: ignore[attr-defined]
    assert not problems, f"{len(problems)} problems, first ones: {problems[:10]}"


def _rounds_bound(cfg: Any, rounds: int) -> float:
    # A hang detector, not a timing: each round reports its own hang after cfg.round_deadline (a
    # busy 2-core machine with tracemalloc on runs a round 5-10 times slower than an idle one).
    return float(rounds * cfg.round_deadline + 60)


def _traced() -> int:
    gc.collect()
    return sum(trace.size for trace in tracemalloc.take_snapshot().traces if trace.size < 16 * 1024)


async def test_soak_every_call_ends_exactly_once_and_memory_returns(quiet_logs: None, anyio_backend: str) -> None:
    cfg = soak.SoakConfig(connections=20, calls=150, seed=20260728)
    with anyio.fail_after(_rounds_bound(cfg, 3)):
        # round 0 warms caches (compiled forms, interned strings, the backend's own pools)
        _assert_clean(await soak.run_round(cfg))
        tracemalloc.start()
        try:
            base = _traced()
            first = await soak.run_round(cfg)
            after_first = _traced()
            second = await soak.run_round(cfg)
            after_second = _traced()
        finally:
            tracemalloc.stop()
    for report in (first, second):
        _assert_clean(report)
        assert report.calls == 3000
        # the seeded mix really exercised every path
        assert set(report.plans) == set(soak.KINDS)
        assert report.cut_connections >= 2
        every = {"accept", "decline", "cancel", "tool_error", "timeout", "cancelled", "closed"}
        assert every <= set(report.client_outcomes)
        assert sum(report.client_outcomes.values()) == report.calls
        assert set(report.injected) == {"duplicate", "unknown_id", "error_unknown", "cancel_unknown", "garbage"}
        assert report.server_stats["timeouts"] > 0 and report.client_stats["cancelled_by_peer"] > 0
    assert first.plans == second.plans  # identical rounds
    growth = after_second - after_first
    assert growth < GROWTH_BOUND[anyio_backend], (
        f"round 2 left {growth} bytes more than round 1 (round 1 left {after_first - base} bytes over the start)"
    )


async def test_soak_every_connection_cut_mid_flight(quiet_logs: None) -> None:
    # Every connection is cut at a random moment, from either end: nothing may hang or leak.
    cfg = soak.SoakConfig(connections=12, calls=100, seed=7, cut_share=1.0, fault_rate=0.1)
    with anyio.fail_after(_rounds_bound(cfg, 1)):
        report = await soak.run_round(cfg)
    _assert_clean(report)
    assert report.cut_connections == 12
    outcomes = collections.Counter(report.client_outcomes)
    assert outcomes["closed"] > 0 and sum(outcomes.values()) == 1200


async def test_soak_no_cuts_exact_counters(quiet_logs: None) -> None:
    # With no connection cut, every outcome is the planned one and every counter exact.
    cfg = soak.SoakConfig(connections=8, calls=150, seed=3, cut_share=0.0, fault_rate=0.2)
    with anyio.fail_after(_rounds_bound(cfg, 1)):
        report = await soak.run_round(cfg)
    _assert_clean(report)
    expected = collections.Counter(soak.EXPECT_CLIENT[k] for k in report.plans.elements())
    assert report.client_outcomes == expected
    inj = report.injected
    assert report.server_stats["unknown_responses"] == inj["duplicate"] + inj["unknown_id"] + inj["error_unknown"]
    assert report.server_stats["invalid_messages"] == inj["garbage"]
    assert report.server_stats["timeouts"] == report.plans["timeout"]
    assert report.server_stats["cancelled_by_peer"] == report.plans["parent"]
    assert report.client_stats["cancelled_by_peer"] == report.plans["timeout"] + report.plans["parent"]
