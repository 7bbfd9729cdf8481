"""The pending table: every entry leaves once, by whichever path comes first, and the budget follows."""

from __future__ import annotations

import math

from minimcp.core.pending import PendingBudget, PendingTable, ProgressWatch
from minimcp.wire.jsonrpc import RequestId


class Entry:
    """A pending entry's fields (the session's cells carry the same)."""

    def __init__(self, id_: RequestId) -> None:
        self.id = id_
        self.progress: int | str | None = None
        self.deadline = math.inf
        self.laned = False
        self.timeout = 0.0
        self.started = 0.0


def table(limit: int = 10) -> PendingTable[Entry]:
    return PendingTable(PendingBudget(limit))


def test_open_then_resolve_takes_the_entry_out_and_frees_the_budget() -> None:
    t = table()
    e = Entry(1)
    assert t.open(e, 0.0, 5.0)  # the first deadline: wake the timer
    assert len(t) == 1 and t.budget.used == 1 and t.holds(e)
    assert t.resolve(1) is e
    assert t.resolve(1) is None  # a duplicate response finds nothing
    assert len(t) == 0 and t.budget.used == 0 and not t.holds(e)


def test_each_exit_path_takes_an_entry_out_only_once() -> None:
    t = table()
    entries = [Entry(i) for i in range(4)]
    for e in entries:
        t.open(e, 0.0, 1.0 if e.id == 2 else None)
    assert t.resolve(0) is entries[0]
    assert t.abandon(entries[0]) is False  # already resolved
    assert t.abandon(entries[1]) is True
    assert t.resolve(1) is None  # a late answer to an abandoned request
    assert t.expire(0.5, False, 60.0) == []
    assert t.expire(1.0, False, 60.0) == [entries[2]]
    assert t.abandon(entries[2]) is False  # already timed out
    assert t.close() == [entries[3]]
    assert t.close() == []
    assert t.budget.used == 0 and not t


def test_progress_routes_to_an_entry_only_while_it_is_pending() -> None:
    t = table()
    e = Entry(7)
    t.open(e, 0.0, None)
    watch = ProgressWatch("tok")
    t.watch(e, watch)
    assert t.progress["tok"] == (e, watch)
    t.resolve(7)
    assert "tok" not in t.progress


def test_the_budget_is_shared_between_tables() -> None:
    budget = PendingBudget(3)
    one, two = PendingTable[Entry](budget), PendingTable[Entry](budget)
    one.open(Entry(1), 0.0, None)
    two.open(Entry(1), 0.0, None)
    assert budget.used == 2
    two.close()
    assert budget.used == 1


def test_while_a_person_answers_deadlines_are_pushed_back_up_to_the_hard_limit() -> None:
    t = table()
    e = Entry(1)
    t.open(e, 0.0, 1.0)
    assert t.expire(1.0, True, 2.5) == []  # held: pushed back to 2.0
    assert t.expire(2.0, True, 2.5) == []  # held: pushed back to the hard limit, 2.5
    assert t.expire(2.5, True, 2.5) == [e]  # the hard limit holds even while a person answers


def test_progress_pushes_a_deadline_back_when_asked() -> None:
    t = table()
    e = Entry(1)
    t.open(e, 0.0, 1.0)
    t.watch(e, ProgressWatch("p", reset_timeout=True))
    watch, sooner = t.progressed("p", 0.8, 60.0)
    assert watch is not None and not sooner
    assert t.expire(1.0, False, 60.0) == []
    assert t.expire(1.8, False, 60.0) == [e]
    assert t.progressed("p", 2.0, 60.0) == (None, False)
