"""Revision 2026-07-28 on the server: a tool call that spans rounds (:class:`Run`) and what a round learns of it.

A :class:`Run` is the tool's coroutine suspended between the requests of one call: it hands
back recorded answers on a replay, asks what is not on record (the request being served then
answers ``input_required``, see :mod:`minimcp.server.mrtr.rounds`), and waits for the retry's answers --
parked (:mod:`minimcp.server.mrtr.parking`) -- until they come, the questions' timeout passes, or it is
stopped. A run's handle and call id are unguessable names drawn in batches (:func:`more_names`).
"""

from __future__ import annotations

import binascii
import math
import os
import time
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import msgspec

from minimcp.core._backend import TrioCell, one_shot, trio_deadline_in
from minimcp.wire import errors
from minimcp.wire.errors import McpError
from minimcp.wire.input_required import Question, take_answer
from minimcp.wire.jsonrpc import CALL_ID_BYTES

if TYPE_CHECKING:
    from minimcp.server.context import Context
    from minimcp.server.mrtr.parking import Parking

__all__ = ["NAMES", "NAMES_PER_DRAW", "TIMED_OUT", "Asking", "Outcome", "Raised", "Returned", "Run", "more_names"]

# --- a run's outcome: what the request being served learns from the tool ------------------------


class Asking(NamedTuple):
    """The tool asked: these questions are open (the round answers ``input_required``)."""

    questions: Sequence[Question]


class Returned(NamedTuple):
    """The tool returned ``value`` (or, for a ``tools/call``, the result its outcome maps to)."""

    value: Any


class Raised(NamedTuple):
    """The tool's call ended with ``error`` (an :class:`McpError`, or a URL step to take)."""

    error: McpError


#: What :meth:`Run.next_outcome` gives.
Outcome = Asking | Returned | Raised

#: What a parked run's answer cell is settled with when its questions time out (:meth:`Run.out_of_time`).
TIMED_OUT = msgspec.Raw(b"null")


# --- names: unguessable handles and call ids, drawn from the system's randomness in batches -----
# A run takes each name with one ``NAMES.pop()`` (atomic: two threads never get the same one), and
# calls :func:`more_names` when the batch is used up: one read of the system's randomness and one
# base64 coding per :data:`NAMES_PER_DRAW` names, not per run.

#: Names drawn and not yet taken: CALL_ID_BYTES random bytes each, base64url, unpadded.
NAMES: list[str] = []
#: How many names one read of the system's randomness draws (what secrets.token_bytes reads).
NAMES_PER_DRAW = 64

_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
assert CALL_ID_BYTES % 3 == 0, "the names split the base64 text where their bytes split"
_CHARS = CALL_ID_BYTES * 4 // 3
#: Where each name of a draw's text sits.
_SLICES = [slice(i, i + _CHARS) for i in range(0, _CHARS * NAMES_PER_DRAW, _CHARS)]


def more_names() -> str:
    """Draw a batch of names into :data:`NAMES`; one of them."""
    text = binascii.b2a_base64(os.urandom(CALL_ID_BYTES * NAMES_PER_DRAW), newline=False).translate(_TO_URLSAFE)
    NAMES.extend(map(text.decode().__getitem__, _SLICES))  # (cut in C: no bytecode per name)
    return NAMES.pop()


if hasattr(os, "register_at_fork"):  # a forked worker draws its own names, never its parent's
    os.register_at_fork(after_in_child=NAMES.clear)

_next_name = NAMES.pop  # (one name: NAMES.pop, bound once)


# --- runs: a tool executing across rounds ----------------------------------------------------


class Run:
    """One tool execution that may span several requests (park) or be rebuilt (replay).

    ``recorded`` are ``[digest, answer]`` pairs from the sealed state (the list is taken, not
    copied: the run adds to it); they are handed back in order while the tool asks the same
    questions again. An answer of ``None`` stands for "came after the question's timeout".
    """

    # Slots, and no per-run Event: a parked run is held per waiting call (issue 19: bytes per parked call).
    __slots__ = (
        "_answer_cell", "_answers", "_asked", "_keys", "_outcome", "_replay", "answers", "arguments",
        "asked_at", "binding", "call_id", "conn", "context", "continued_elsewhere", "deadline", "finished",
        "handle", "laned", "offered", "parking", "pending", "pending_keys", "pending_timeout", "scope",
        "serving", "tool", "user",
    )

    # Set by the run's first question (:meth:`ask`), not here: each is read only once the run has asked
    # (to park it, seal its round or resume it), so a new call does not store a default before them.
    #: The questions of the current round, and their ``inputRequests`` keys (``()`` between rounds).
    pending: tuple[Question, ...]
    pending_keys: tuple[str, ...]
    #: When the current round's questions were first asked (wall clock; sealed), and their timeout.
    asked_at: float
    pending_timeout: float | None
    _answer_cell: Any  # (an asyncio future, or a TrioCell; None once the wait is over)

    def __init__(  # (positional or keyword: a class called with keywords costs about 500 instructions more each)
        self,
        tool: str,
        recorded: list[list[Any]],
        call_id: str | None,
        offered: dict[str, Any] | None,
        parking: Parking,
        asked: tuple[list[str], float] | None = None,
        conn: Any = None,
        serving: Any = None,
        binding: dict[str, Any] | None = None,
        arguments: bytes | None = None,
        user: str | None = None,
    ) -> None:
        self.tool = tool
        #: Where this run waits between rounds (it leaves on its own when its question times out).
        self.parking = parking
        #: Answers the client sent by key before being asked (a first call with inputResponses).
        self.offered: dict[str, Any] | None = dict(offered) if offered else None  # None: no dict per run
        #: Set on a parked run dropped because its retry continued the call on another worker.
        self.continued_elsewhere = False
        self._keys: set[str] | None = None  # made on the first question with a key
        # Unguessable names from a batch drawn at once (:func:`more_names`): no read of the system's
        # randomness and no base64 coding per run (a new call needs two names).
        try:
            self.handle = _next_name()
        except IndexError:
            self.handle = more_names()
        if not call_id:
            try:
                call_id = _next_name()
            except IndexError:
                call_id = more_names()
        #: Stable across every round and replay of this one call (carried in the sealed state).
        self.call_id = call_id
        #: The tool's context, when it takes one (its envelope follows each round's request).
        self.context: Context | None = None
        self.answers: list[list[Any]] = recorded
        self._replay = 0
        # (pending, pending_keys, asked_at and pending_timeout are set by the first question: see the class)
        # A replay asking the questions of the sealed round again keeps their first-asked time.
        self._asked = asked
        #: What stops the run's task (``.cancel()``): the task itself on asyncio, its trio cancel
        #: scope on trio; set when the task starts. Stop it with :meth:`stop`.
        self.scope: Any = _NOT_STARTED
        # One-shot cells (a plain future on asyncio, a TrioCell on trio), made only while someone
        # waits: the request side for the next outcome, the tool side for the retry's answers (in
        # _answer_cell, set by the first question, see the class). One slot holds what the request side
        # learns next: nothing (None), an outcome not taken yet, or the cell it waits on meanwhile.
        self._outcome: Any = None
        self._answers: Mapping[str, Any] | None = None  # the retry's answers, by key (until the tool takes them)
        self.finished = False
        #: The id of the request this run answers itself while it runs (``None``: none, or the request
        #: side waits in :meth:`next_outcome`), what that request's state is bound to, and its
        #: connection (set by :mod:`minimcp.server.mrtr.rounds` for a run answering its rounds, see
        #: :meth:`answer_asking`).
        # (given to the constructor when known: one store each per call, not a default and then the value)
        self.serving: Any = serving
        self.binding: dict[str, Any] | None = binding
        self.conn: Any = conn
        #: The call's arguments as its first request sent them (JSON bytes), for a run answering its
        #: rounds (:mod:`minimcp.server.mrtr.rounds`): a retry repeating them has the digest its state is bound to.
        self.arguments: bytes | None = arguments
        #: The person of the call's first request (:func:`minimcp.server.mrtr.retry.user_of`; ``None`` without
        #: authorization): a retry of another person's never reaches this run.
        self.user = user
        #: When the open questions time out, on the loop's clock, while they wait (asyncio: see
        #: :class:`~minimcp.server.mrtr.parking.Sweep`; infinity: not timed), and whether that deadline sits in a
        #: FIFO lane.
        self.deadline = _INF
        self.laned = False

    # tool side

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (or the task never started)."""
        return self.scope is _NOT_STARTED

    def answer_asking(self) -> Awaitable[None] | None:
        """Answer the request being served (:attr:`serving`) with the open questions (``input_required``):
        ``None`` when the answer went at once, else what to await to send it (a plain method, not a coroutine:
        no coroutine per round when the transport takes the answer at once).

        Only for runs that answer their rounds themselves (:class:`minimcp.server.mrtr.rounds.ServingRun`).
        """
        raise NotImplementedError

    def stop(self) -> None:
        """Cancel the run's task (once: a second ``cancel()`` would cut its clean-up short on asyncio)."""
        scope, self.scope = self.scope, _NOT_STARTED
        scope.cancel()

    def ask_many(
        self, questions: list[Question], ttl: float | None
    ) -> Coroutine[Any, Any, list[dict[str, Any] | None]]:
        """Several questions in one round (``ctx.gather``): recorded answers first, then wait for the rest.

        Returns each question's answer, or ``None`` where it came after ``ttl``.

        Raises:
            ValueError: the tool used the same ``key`` for two questions of one call.
        """
        return self.ask(questions, ttl, False)

    async def ask(self, question: Any, ttl: float | None, one: bool = True) -> Any:
        """Called by ``ctx.elicit`` & co. inside the tool: a recorded answer, or wait for one (with ``one``
        false, :meth:`ask_many`: ``question`` is the list of questions).

        The steps before and after the wait are plain methods: this frame, held while the call
        is parked, keeps only what the wait needs.

        Raises:
            RequestTimeout: the answer came after ``ttl`` (as a timeout on the handshake era).
        """
        if (
            one and question.key is None and _ONE_KEYS > self._replay >= len(self.answers)
            and not self.offered and self._asked is None
        ):  # (``_replay`` is never past the record's end: at it, it is the number of questions asked)
            # The usual round (one numbered question, nothing on record, offered or asked before for
            # it): as _recorded and _open would do, written out (no loops, no calls of ours), with
            # _take_answers' loop below: folded back, a round trip took 1.2-1.9 % more instructions
            # (benchmarks/tools/instr_modern.py). Held equal by tests/guards/test_run_cuts.py
            # (test_run_ask_written_out_usual_round_equals_recorded_open_and_take_answers).
            results: list[Any] = [None]
            need: tuple[int, ...] = _FIRST_ONLY
            self.pending = (question,)
            self.pending_keys = _ONE_KEY[self._replay]  # (a shared tuple)
            self.pending_timeout = delay = ttl  # (asked now: the whole timeout, which puts it in a lane)
            self.asked_at = time.time()
            self._answer_cell = cell = one_shot()
            if self.serving is None:
                self._emit(Asking(self.pending))
        else:
            questions: list[Question] = [question] if one else question
            results, need = self._recorded(questions)
            if need:
                question = questions[0]  # (the one question of a round of one, as above)
                cell = one_shot()
                delay = self._open(questions, need, ttl, cell)
        if need:
            if self.serving is not None:
                sending = self.answer_asking()  # this task answers its request itself: no hand-over
                if sending is not None:  # (the transport had no room: wait for it)
                    await sending
            if type(cell) is not TrioCell:
                # asyncio: the cell is a plain future awaited as is (no coroutine around it), and
                # the parking's one sweep settles it as timed out (no timer or cancel scope per park).
                if delay is None:
                    sweep = None
                else:
                    # (a lane only for a run's first question: a later one may still have a stale place
                    # in it, which would look live again and hold up the deadlines behind it)
                    sweep = self.parking.time_out(self, cell, delay, delay == ttl and not self.answers)
                try:
                    answered = await cell is not TIMED_OUT
                finally:
                    if sweep is not None:
                        sweep.let_go(self, self.pending_timeout)  # (answered or ended: not timed any more)
            elif isinstance(self.scope, _NotStarted):  # pragma: no cover - a stopped run is being cancelled
                with anyio.move_on_after(delay):
                    await cell.wait()
                answered = bool(cell.done)
            else:
                # trio: the run's own cancel scope times the wait out (no cancel scope per park):
                # when the questions' timeout passes the run is cancelled, as below on asyncio.
                scope = self.scope
                trio_deadline_in(scope, delay)
                try:
                    await cell.wait()
                finally:
                    scope.deadline = math.inf
                answered = True
            self._answer_cell = None
            if not answered:
                # Nobody came back in time: the call is dropped, and a late retry finds it cancelled.
                self.parking.discard(self)
                self.stop()
                await anyio.lowlevel.checkpoint()
            if need is _FIRST_ONLY:  # one question (_take_answers' loop, written out)
                answers = self._answers
                kept: dict[str, Any] | None = None  # None: the answer came after the timeout
                if answers is not None:
                    results[0], kept = take_answer(question, answers[self.pending_keys[0]])
                self.answers.append([question.digest, kept])
                self._answers = None
                self.pending, self.pending_keys = (), ()
                self._replay = len(self.answers)
            else:
                self._take_answers(questions, need, results)
        if one:
            if results[0] is None:
                raise errors.RequestTimeout(question.method, ttl if ttl is not None else 0.0)
            return results[0]
        return results

    def _recorded(self, questions: list[Question]) -> tuple[list[dict[str, Any] | None], tuple[int, ...]]:
        """The answers known already (recorded or offered), and the positions of the questions still open."""
        for question in questions:
            if question.key is not None:
                if self._keys is None:
                    self._keys = set()
                if question.key in self._keys:
                    raise ValueError(f"the key {question.key!r} names two questions of one call")
                self._keys.add(question.key)
        results: list[dict[str, Any] | None] = [None] * len(questions)
        need: list[int] = []
        for i, question in enumerate(questions):
            if not need and self._replay < len(self.answers):
                recorded_digest, answer = self.answers[self._replay]
                if recorded_digest == question.digest:
                    if answer is not None:
                        answer, self.answers[self._replay][1] = take_answer(question, answer)
                    self._replay += 1
                    results[i] = answer
                    continue
                # The tool asked something else this time: later answers no longer apply.
                del self.answers[self._replay :]
            offered = (
                self.offered.pop(question.key, None) if question.key is not None and self.offered else None
            )
            if isinstance(offered, dict) and not need:
                # The client answered this key before it was asked (first call with inputResponses).
                results[i], first_kept = take_answer(question, offered)
                self.answers.append([question.digest, first_kept])
                self._replay = len(self.answers)
                continue
            need.append(i)
        # Held while parked: a tuple, and for the usual one question a shared one.
        return results, _FIRST_ONLY if need == [0] else tuple(need)

    def _open(self, questions: list[Question], need: tuple[int, ...], ttl: float | None, cell: Any) -> float | None:
        """Ask the open questions (the request side hears of them); how long to wait for their answers."""
        first = len(self.answers) + 1
        pending: tuple[Question, ...]
        if need is _FIRST_ONLY and questions[0].key is None and first <= _ONE_KEYS:
            self.pending = pending = (questions[0],)
            self.pending_keys = _ONE_KEY[first - 1]  # one numbered question: a shared tuple
        else:
            self.pending = pending = (questions[0],) if need is _FIRST_ONLY else tuple(questions[i] for i in need)
            self.pending_keys = tuple(q.key or _key_name(first + n) for n, q in enumerate(pending))
        now = time.time()
        asked, self._asked = self._asked, None
        same = asked is not None and asked[0] == [q.digest for q in pending]
        self.pending_timeout = ttl
        self._answer_cell = cell
        if same and asked is not None:
            self.asked_at = asked[1]
            delay = None if ttl is None else max(0.0, self.asked_at + ttl - now)
        else:
            self.asked_at = now
            delay = ttl  # (asked now: the whole timeout, exactly, which puts it in a lane of the sweep)
        if self.serving is None:
            self._emit(Asking(pending))
        return delay

    def _take_answers(
        self, questions: list[Question], need: tuple[int, ...], results: list[dict[str, Any] | None]
    ) -> None:
        """The open questions' answers (or their timeout) into ``results`` and the record (several: one is
        taken in :meth:`ask`)."""
        answers = self._answers
        for i, key in zip(need, self.pending_keys, strict=True):
            kept = None  # None: the answer came after the timeout
            if answers is not None:
                results[i], kept = take_answer(questions[i], answers[key])
            self.answers.append([questions[i].digest, kept])
        self._answers = None
        self.pending, self.pending_keys = (), ()
        self._replay = len(self.answers)

    #: ``question(method, params, key=None)``: ``method`` with ``params`` as a question of this run (the
    #: context asks through it); :meth:`Question.create` itself, no call of this module's around it.
    question = staticmethod(Question.create)

    def replays(self, question_digest: str | None = None) -> bool:
        """Whether the tool's next question is answered from the sealed record (that question, if given).

        Such a question was asked in an earlier round, when the client could be asked; the
        capability checks before it hold as they did then, whatever this retry declares.
        """
        if self._replay >= len(self.answers):
            return False
        return question_digest is None or self.answers[self._replay][0] == question_digest

    def finish(self, outcome: Returned | Raised) -> None:
        """The tool's call ended (the last outcome the request side waits for); it leaves its parking."""
        self.parking.discard(self)
        self.finished = True
        self._emit(outcome)

    def _emit(self, outcome: Outcome) -> None:
        waiter, self._outcome = self._outcome, outcome
        if waiter is not None and not isinstance(waiter, tuple):  # (a cell, not an outcome: someone waits)
            _settle(waiter, _DONE)  # (it reads the latest outcome when it wakes)

    # request side

    def missing(self, responses: Mapping[str, Any]) -> bool:
        """Whether ``responses`` lack an answer to one of the pending questions (a retry is resumed by
        :func:`minimcp.server.mrtr.retry.resume`)."""
        for key in self.pending_keys:  # (a loop, not any() over a generator: once per retry)
            value = responses.get(key)
            if type(value) is not dict and not isinstance(value, dict):
                return True
        return False

    def deliver(self, responses: Mapping[str, Any]) -> None:
        """The retry brought the answers to the pending questions (see :meth:`missing`)."""
        cell = self._answer_cell
        if type(cell) is TrioCell:
            if not cell.done:  # (else: as below)
                self._answers = responses
                cell.settle(_DONE, None)
            return
        if cell is None or cell.done():  # pragma: no cover - a parked run always waits
            return
        self._answers = responses  # (held until the tool wakes and takes its keys: no dict of them per retry)
        cell.set_result(_DONE)  # (as _settle, written out: once per retry)

    def expire(self) -> None:
        """The retry came after the pending questions' timeout: they end as timed out."""
        cell = self._answer_cell
        if cell is None or _done(cell):  # pragma: no cover - a parked run always waits
            return
        self._answers = None
        _settle(cell, _DONE)

    def out_of_time(self) -> None:
        """asyncio: the open questions' timeout passed while the run waits (its parking's sweep tells it):
        the tool wakes to :data:`TIMED_OUT`, and the call is dropped."""
        cell = self._answer_cell
        if cell is not None and not cell.done():  # (an asyncio future: the sweep is asyncio's)
            cell.set_result(TIMED_OUT)

    async def next_outcome(self) -> Outcome:
        """Wait until the tool asks its next question or ends."""
        if self._outcome is None:
            self._outcome = cell = one_shot()
            try:
                if type(cell) is TrioCell:
                    await cell.wait()
                else:
                    await cell  # (a plain future, awaited as is: no coroutine of the backend's around it)
            finally:
                if self._outcome is cell:  # (no outcome came: given up on)
                    self._outcome = None
        outcome: Outcome = self._outcome  # (an Outcome: _emit put it there)
        self._outcome = None
        return outcome


class _NotStarted:
    """The :attr:`Run.scope` of a run whose task has not started (or was stopped): cancels nothing."""

    __slots__ = ()

    def cancel(self) -> None:
        return None


_NOT_STARTED = _NotStarted()
_INF = math.inf
#: The :attr:`Run.scope` of a run that does not run: ``run.scope is NOT_STARTED`` is :attr:`Run.stopped`.
NOT_STARTED = _NOT_STARTED
_DONE = msgspec.Raw(b"null")
#: The usual ``inputRequests`` keys, made once (not one string per parked call).
_KEY_NAMES = tuple(f"q{n}" for n in range(1, 33))
#: The keys of a round of one numbered question, and its position among the round's questions.
_ONE_KEY = tuple((name,) for name in _KEY_NAMES)
_ONE_KEYS = len(_ONE_KEY)
_FIRST_ONLY = (0,)


def _key_name(n: int) -> str:
    return _KEY_NAMES[n - 1] if n <= len(_KEY_NAMES) else f"q{n}"


def _done(cell: Any) -> bool:
    """Whether ``cell`` (an asyncio future, or a :class:`TrioCell`) was settled (or cancelled)."""
    return bool(cell.done) if isinstance(cell, TrioCell) else bool(cell.done())


def _settle(cell: Any, value: msgspec.Raw) -> None:
    """Wake the tool waiting on ``cell`` (an asyncio future, or a :class:`TrioCell`) with ``value``, once."""
    if isinstance(cell, TrioCell):
        cell.settle(value, None)
    elif not cell.done():
        cell.set_result(value)
