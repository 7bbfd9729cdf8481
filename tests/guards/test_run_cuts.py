"""The run side of the usual 2026-07-28 round made with less Python (issue 19): each shorter way held equal
to the way it replaces (the same token, the same result), and counted where it skips a call."""

from __future__ import annotations

import random
from typing import Any, cast

import anyio
import pytest

from minimcp import Accepted, Context, Limits, Server, ToolError
from minimcp.core._backend import one_shot
from minimcp.core.deadlines import Deadlines
from minimcp.server.mrtr.parking import Parking, Sweep
from minimcp.server.mrtr.run import Run
from minimcp.server.outcome import ToolRun
from minimcp.wire.types import CallToolResult, TextContent
from tests.helpers import raw_client
from tests.helpers.modern import Modern, accept, complete, input_required, only, text_of
from tests.helpers.modern_form_work import Pick, ask_rounds, pick_server
from tests.helpers.modern_round_work import counting

TIMEOUT = 30
ROUNDS = 5

def tools_server() -> Server:
    """:func:`pick_server`'s tools, one that fails after its answer and one that builds its own result."""
    server = pick_server()

    @server.tool()
    async def fails(ctx: Context, i: int) -> str:
        await ctx.elicit(f"q {i}", Pick)
        raise ToolError(f"no {i}")

    @server.tool()
    async def built(ctx: Context) -> CallToolResult:
        await ctx.elicit("q", Pick)
        return CallToolResult(content=[TextContent(text="as built")])

    return server


async def test_a_taken_over_call_maps_its_result_without_a_tool_run(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call taken over by the read loop maps its tool's return value as ``ToolRun.finish`` does, with no
    ``ToolRun`` made for it; a tool that raises still gets ToolRun's mapping of its error."""
    server = tools_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("ask", {"i": 0}))  # (locks the era: the usual way)
            await m.call("ask", {"i": 0}, responses={only(requests)[0]: accept(n=0)}, state=state)
            with counting(monkeypatch, ToolRun, "finish") as finishes:
                await ask_rounds(m, ROUNDS)
                assert finishes[0] == 0
                requests, state = input_required(await m.call("built"))
                msg = await m.call("built", responses={only(requests)[0]: accept(n=1)}, state=state)
                assert text_of(complete(msg)) == "as built"
                assert finishes[0] == 0
                requests, state = input_required(await m.call("fails", {"i": 3}))
                msg = await m.call("fails", {"i": 3}, responses={only(requests)[0]: accept(n=3)}, state=state)
                result = complete(msg)
                assert result["isError"] is True and text_of(result) == "no 3"
                assert finishes[0] == 1


class _Entry:
    __slots__ = ("deadline", "laned")

    def __init__(self) -> None:
        self.deadline = float("inf")
        self.laned = False


@pytest.mark.parametrize("seed", range(20))
def test_let_go_keeps_the_counts_of_lanes_answered_in_any_order(seed: int) -> None:
    """``Deadlines.let_go``'s short way (the answered entry at its lane's front) counts as the long way did:
    whatever the order of the answers, what falls due is exactly the live entries, and once every entry
    is let go nothing is held (no entry or stale count left behind). (Each entry is added once: an entry
    added again while a stale place of it waits in its lane is another matter: a run's later questions go
    to the sweep's heap, only its first takes a lane.)"""
    rng = random.Random(seed)
    deadlines: Deadlines[_Entry] = Deadlines()
    live: dict[_Entry, float] = {}
    now = 0.0
    for _ in range(600):
        now += rng.random()
        if live and rng.random() < 0.5:
            # mostly the oldest (the usual answer), sometimes any
            entry = next(iter(live)) if rng.random() < 0.7 else rng.choice(list(live))
            deadlines.let_go(entry, live.pop(entry))
        else:
            entry = _Entry()
            timeout = rng.choice((10.0, 10.0, 10.0, 25.0))
            deadlines.add(entry, now, timeout)
            live[entry] = timeout
        if rng.random() < 0.05:
            expected = {e for e in live if e.deadline <= now}
            due = deadlines.due(now)
            assert set(due) == expected and len(due) == len(expected)
            for e in expected:
                live.pop(e)
    for entry, timeout in list(live.items()):
        deadlines.let_go(entry, timeout)
    assert deadlines.earliest() == float("inf")
    assert len(deadlines) == 0 and deadlines._stale == 0


async def test_a_form_answer_kept_as_converted_is_not_typed_again(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 2026-07-28 ``ctx.elicit`` takes the answer as the ``ElicitResult`` it was converted to when kept (no
    ``_typed`` call), its start and outcome still counted in the metrics."""
    server = tools_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            typed = [0]
            original = Context._typed

            def counted(method: str, answer: Any, result_type: Any) -> Any:
                typed[0] += 1
                return original(method, answer, result_type)

            monkeypatch.setattr(Context, "_typed", staticmethod(counted))
            await ask_rounds(m, ROUNDS)
            assert typed[0] == 0
    ask = server.metrics.snapshot()["tools"]["ask"]
    assert (ask["started"], ask["accepted"], ask["pending"]) == (ROUNDS, ROUNDS, 0), ask


async def test_the_usual_round_opens_and_takes_its_question_in_the_run_itself(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usual round (one numbered question, nothing on record) is opened and answered in ``Run.ask``
    itself (no ``_open`` or ``_take_answers`` call); a round of two questions still goes through them."""
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            with counting(monkeypatch, Run, "_open") as opens, counting(monkeypatch, Run, "_take_answers") as takes:
                for n in range(ROUNDS):
                    requests, state = input_required(await m.call("ask", {"i": n}))
                    assert only(requests)[0] == "q1"
                    msg = await m.call("ask", {"i": n}, responses={"q1": accept(n=n)}, state=state)
                    assert text_of(complete(msg)) == str(n)
                assert (opens[0], takes[0]) == (0, 0)
                requests, state = input_required(await m.call("both", {"i": 7}))
                msg = await m.call("both", {"i": 7}, responses={"first": accept(n=0), "second": accept(n=1)},
                                   state=state)
                assert text_of(complete(msg)) == "0 1"
                assert (opens[0], takes[0]) == (1, 1)


class _Cell:
    def __init__(self) -> None:
        self.result: Any = None

    def done(self) -> bool:
        return self.result is not None

    def set_result(self, value: Any) -> None:
        self.result = value


class _Timer:
    def cancel(self) -> None:
        pass


class _Loop:
    """What a Sweep uses of its event loop, with a clock moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Any) -> _Timer:
        return _Timer()


class _ParkedRun:
    __slots__ = ("_answer_cell", "deadline", "laned", "pending_timeout")

    def __init__(self) -> None:
        self.deadline, self.laned, self.pending_timeout = float("inf"), False, 10.0
        self._answer_cell = _Cell()

    out_of_time = Run.out_of_time  # (what the sweep calls when a run's time is up)


def test_a_run_asking_again_does_not_hold_up_the_runs_asked_after_its_first_question() -> None:
    """A run answered away from the front of its lane leaves a stale place there; its next question is
    timed in the heap (as ``Run.ask`` adds it: not laned), so that place stays stale and the runs asked
    after its first question still fall due at their own deadlines."""
    loop = _Loop()
    sweep = Sweep(loop)
    first, second, third = (cast(Run, _ParkedRun()) for _ in range(3))  # (what a Sweep uses of a Run)
    sweep.add(first, 10.0, True)  # due at 10
    loop.now = 1.0
    sweep.add(second, 10.0, True)  # due at 11
    loop.now = 2.0
    sweep.let_go(second, 10.0)  # answered, behind ``first``: its place stays
    loop.now = 3.0
    sweep.add(third, 10.0, True)  # due at 13
    loop.now = 4.0
    sweep.add(second, 10.0, False)  # its next question (due at 14), as Run.ask adds it
    loop.now = 5.0
    sweep.let_go(first, 10.0)
    loop.now = 13.5
    sweep._due()
    assert third._answer_cell.done() and not second._answer_cell.done()
    loop.now = 14.5
    sweep._due()
    assert second._answer_cell.done()


async def test_only_a_runs_first_question_is_timed_in_a_lane(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Run.ask`` puts a run's first question in a lane of the sweep and its later ones in the heap (see
    above); trio times a parked run with its own cancel scope (no sweep)."""
    server = Server("cuts", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def twice(ctx: Context) -> str:
        first = await ctx.elicit("First?", Pick)
        second = await ctx.elicit("Second?", Pick)
        return f"{first.value.n} {second.value.n}" if isinstance(first, Accepted) and isinstance(
            second, Accepted) else "?"

    added: list[bool] = []
    original = Sweep.add

    def recorded(self: Sweep, run: Any, delay: float, laned: bool) -> None:
        added.append(laned)
        original(self, run, delay, laned)

    monkeypatch.setattr(Sweep, "add", recorded)
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            for n in range(2):
                requests, state = input_required(await m.call("twice"))
                requests, state = input_required(
                    await m.call("twice", responses={only(requests)[0]: accept(n=n)}, state=state))
                msg = await m.call("twice", responses={only(requests)[0]: accept(n=n + 1)}, state=state)
                assert text_of(complete(msg)) == f"{n} {n + 1}"
    assert added == ([True, False, True, False] if anyio_backend == "asyncio" else [])


def _round_state(run: Run) -> tuple[Any, ...]:
    return (run.pending, run.pending_keys, run.pending_timeout, round(run.asked_at), list(run.answers), run._replay)


async def test_run_ask_written_out_usual_round_equals_recorded_open_and_take_answers(anyio_backend: str) -> None:
    """``Run.ask`` writes out its usual round (one numbered question, nothing on record, offered or asked
    before): ``Run._recorded`` + ``Run._open`` before the wait, ``Run._take_answers`` after it. Folded back,
    a 2026-07-28 round trip took 1.2-1.9 % more instructions (``benchmarks/tools/instr_modern.py``), so the copy
    stays; here both ways take the same rounds and leave the run the same."""
    ttl = 600.0
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    questions = [Run.question("elicitation/create", {"message": f"Q{n}?", "requestedSchema": schema}) for n in range(3)]
    answers = [{"action": "accept", "content": {"n": n}} for n in range(3)]

    written = Run("t", [], None, None, Parking(10))
    got: list[Any] = []
    seen_written = []

    async def tool() -> None:
        for question in questions:
            got.append(await written.ask(question, ttl))

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tool)
            for answer in answers:
                outcome = await written.next_outcome()
                seen_written.append((outcome, *_round_state(written)))
                written.deliver({written.pending_keys[0]: answer})

    general = Run("t", [], None, None, Parking(10))
    took: list[Any] = []
    seen_general = []
    for question, answer in zip(questions, answers, strict=True):
        results, need = general._recorded([question])
        delay = general._open([question], need, ttl, one_shot())
        assert (results, need, delay) == ([None], (0,), ttl)
        outcome = await general.next_outcome()
        seen_general.append((outcome, *_round_state(general)))
        general.deliver({general.pending_keys[0]: answer})
        general._answer_cell = None
        general._take_answers([question], need, results)
        took.append(results[0])

    assert seen_written == seen_general
    assert [s[2] for s in seen_written] == [("q1",), ("q2",), ("q3",)]
    assert got == took and [g.content for g in got] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert _round_state(written) == _round_state(general)
    assert (written.pending, written._answers, written._replay) == ((), None, 3)
