"""The deadline lanes: one FIFO per timeout value, a heap for the rest, stale entries dropped lazily."""

from __future__ import annotations

import math

from minimcp.core.deadlines import SMALL_LANE, Deadlines


class Entry:
    def __init__(self, name: str) -> None:
        self.name = name
        self.deadline = math.inf
        self.laned = False

    def __repr__(self) -> str:
        return self.name


def test_entries_fall_due_in_deadline_order_across_lanes_and_the_heap() -> None:
    d: Deadlines[Entry] = Deadlines(max_lanes=2)
    a, b, c, e, f = (Entry(n) for n in "abcef")
    assert d.add(a, now=0, timeout=10)  # the first deadline: wake the timer
    assert d.earliest() == 10
    assert d.add(b, now=1, timeout=5)  # sooner than what the timer waits for
    assert not d.add(c, now=2, timeout=10)  # later: the timer need not wake
    assert d.add(e, now=3, timeout=1)  # a third timeout value: no lane of its own, the heap
    assert not d.add(f, now=4, timeout=5)
    assert len(d) == 5
    assert d.earliest() == 4
    assert d.due(5) == [e]
    assert d.due(9.5) == [b, f]
    assert d.due(12) == [a, c]
    assert d.earliest() == math.inf and len(d) == 0
    assert all(x.deadline == math.inf and not x.laned for x in (a, b, c, e, f))


def test_forgotten_entries_are_skipped_and_compacted() -> None:
    d: Deadlines[Entry] = Deadlines()
    entries = [Entry(str(i)) for i in range(3000)]
    for i, x in enumerate(entries):
        d.add(x, now=i, timeout=100)
    for x in entries[:2000]:  # answered: never searched for
        d.forget(x)
    assert len(d) <= 3000 - 1025  # compacted once stale ones outnumbered live ones
    assert d.earliest() == entries[2000].deadline
    d.forget(entries[2000])
    assert d.earliest() == entries[2001].deadline  # a stale head is dropped on the way
    assert d.due(2100 + 100) == entries[2001:2101]


def test_a_moved_entry_leaves_its_lane_and_keeps_only_its_new_deadline() -> None:
    d: Deadlines[Entry] = Deadlines()
    a, b = Entry("a"), Entry("b")
    d.add(a, now=0, timeout=10)
    d.add(b, now=1, timeout=10)
    assert d.earliest() == 10
    assert not d.move(a, 30)  # pushed back: nothing sooner for the timer
    assert d.earliest() == 11
    assert d.due(20) == [b]
    assert d.due(29) == []
    assert d.earliest() == 30  # what the timer waits for now
    assert d.move(a, 25)  # moved again, sooner than that
    assert d.due(30) == [a]  # once, at its newest deadline
    assert len(d) == 0


def test_a_lane_holding_only_stale_entries_still_wakes_the_timer_for_a_sooner_deadline() -> None:
    d: Deadlines[Entry] = Deadlines()
    short, long, late = Entry("short"), Entry("long"), Entry("late")
    d.add(short, now=0, timeout=5)
    d.add(long, now=0, timeout=300)
    d.forget(short)  # answered; its stale entry still sits in the 5-second lane
    assert d.earliest() == 300  # the timer now waits for 300
    assert d.add(late, now=10, timeout=5)  # 15 is sooner: wake it
    assert d.earliest() == 15


def test_clear_forgets_everything() -> None:
    d: Deadlines[Entry] = Deadlines()
    d.add(Entry("a"), now=0, timeout=1)
    d.clear()
    assert len(d) == 0 and d.earliest() == math.inf


def test_let_go_drops_the_stale_front_of_its_lane_only() -> None:
    """let_go (once per answered 2026-07-28 round): forget, then the stale head of the entry's own lane goes."""
    d: Deadlines[Entry] = Deadlines()
    a, b, c, x = (Entry(n) for n in "abcx")
    for i, e in enumerate((a, b, c)):
        d.add(e, now=i, timeout=10)
    d.add(x, now=0, timeout=20)
    d.let_go(b, 10)  # not at the front: stays, stale
    assert len(d) == 4 and not b.laned and b.deadline == math.inf
    d.let_go(a, 10)  # the front: a and b go at once, c stays
    assert len(d) == 2
    d.let_go(a, 10)  # twice: nothing
    assert len(d) == 2
    assert d.due(15) == [c] and d.due(25) == [x] and len(d) == 0


def test_a_lane_keeps_its_order_as_it_grows_past_a_short_list() -> None:
    """A lane starts as a short list and becomes a deque as it grows: entries fall due in order either way."""
    d: Deadlines[Entry] = Deadlines()
    entries = [Entry(str(i)) for i in range(SMALL_LANE * 3)]
    for i, entry in enumerate(entries):
        d.add(entry, now=i, timeout=10)
    d.let_go(entries[0], 10)  # answered at the front
    d.let_go(entries[5], 10)  # answered out of order: stale until it reaches the front
    assert len(d) == len(entries) - 1
    assert d.earliest() == 11
    assert d.due(10 + SMALL_LANE * 2) == [e for i, e in enumerate(entries[: SMALL_LANE * 2 + 1]) if i not in (0, 5)]
    assert d.due(math.inf) == entries[SMALL_LANE * 2 + 1 :]
    assert len(d) == 0 and d.earliest() == math.inf
