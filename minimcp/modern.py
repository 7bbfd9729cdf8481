"""Revision 2026-07-28 on the server: runs that span rounds, and their parking (one ``ctx.elicit`` for both eras).

On the modern revision there is no handshake: every request carries its
protocol version, the client's capabilities and (usually) its identity in
``params._meta``, and a server may not send the client requests of its own.
A question to the person becomes an ``input_required`` result; the client
answers by calling again with ``inputResponses`` and the ``requestState`` we
gave it.

minimcp keeps the tool author's ``await ctx.elicit(...)`` unchanged, anywhere
in a tool body. The tool runs in a task of its own (a :class:`Run`); when it
asks, the request being served answers ``input_required`` and the run stays
suspended -- *parked* under a handle sealed into ``requestState``. The retry
finds the handle and delivers the answer: the same coroutine goes on, exactly
as on the handshake era.

When the handle is not here (the process restarted, the retry reached another
worker, the park was dropped to make room), the tool is *replayed*: it runs
again from the top and each ``ctx.elicit`` returns the answer recorded in the
sealed state, in order, until the first unanswered question. So code that runs
before a question may run more than once; a tool that must not be replayed is
registered with ``replayable=False`` and its retries then fail cleanly.

What is recorded is only what the tool can use of each answer (:func:`clean_answer`),
and when the open questions were asked: an answer arriving after the question's
timeout is no answer, and ``ctx.elicit`` gives ``Cancelled("timeout")`` as on the
handshake era, parked or replayed. A parked call is dropped when that timeout passes.

The pure half of this revision (envelope, meta keys, codes, result shape, questions
and answers) is :mod:`minimcp.mrtr`; this module holds what needs anyio.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import anyio

from minimcp import errors
from minimcp.errors import McpError

# The pure half (the wire of this revision) lives in mrtr.py; re-exported here so every
# ``modern.X`` keeps working.
from minimcp.mrtr import HEADER_MISMATCH as HEADER_MISMATCH
from minimcp.mrtr import META_CAPABILITIES as META_CAPABILITIES
from minimcp.mrtr import META_CLIENT_INFO as META_CLIENT_INFO
from minimcp.mrtr import META_LOG_LEVEL as META_LOG_LEVEL
from minimcp.mrtr import META_SERVER_INFO as META_SERVER_INFO
from minimcp.mrtr import META_VERSION as META_VERSION
from minimcp.mrtr import MISSING_CAPABILITY as MISSING_CAPABILITY
from minimcp.mrtr import UNSUPPORTED_VERSION as UNSUPPORTED_VERSION
from minimcp.mrtr import Envelope as Envelope
from minimcp.mrtr import Question as Question
from minimcp.mrtr import asked as asked
from minimcp.mrtr import clean_answer as clean_answer
from minimcp.mrtr import complete as complete
from minimcp.mrtr import has_envelope as has_envelope
from minimcp.mrtr import meta_dict as meta_dict
from minimcp.mrtr import read_envelope as read_envelope
from minimcp.mrtr import required_capability as required_capability
from minimcp.mrtr import take_answer
from minimcp.state import InvalidState, StateSealer
from minimcp.used_states import StoreUnavailable, UsedStates

__all__ = [
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "META_VERSION",
    "PARK_OWNER",
    "Envelope",
    "Parking",
    "Question",
    "Run",
    "complete",
    "has_envelope",
    "read_envelope",
]

logger = logging.getLogger("minimcp.modern")


# --- runs: a tool executing across rounds ----------------------------------------------------


class Run:
    """One tool execution that may span several requests (park) or be rebuilt (replay).

    ``recorded`` are ``[digest, answer]`` pairs from the sealed state; they are
    handed back in order while the tool asks the same questions again. An answer
    of ``None`` stands for "came after the question's timeout".
    """

    #: Set on a parked run dropped because its retry continued the call on another worker.
    continued_elsewhere = False

    def __init__(
        self,
        tool: str,
        recorded: list[list[Any]],
        call_id: str | None = None,
        offered: dict[str, Any] | None = None,
        *,
        asked: tuple[list[str], float] | None = None,
    ) -> None:
        self.tool = tool
        #: Answers the client sent by key before being asked (a first call with inputResponses).
        self.offered = dict(offered) if offered else {}
        self._keys: set[str] = set()
        self.handle = secrets.token_urlsafe(12)
        #: Stable across every round and replay of this one call (carried in the sealed state).
        self.call_id = call_id or secrets.token_urlsafe(12)
        #: The tool's context, when it takes one (its envelope follows each round's request).
        self.context: Any = None
        self.answers: list[list[Any]] = [list(pair) for pair in recorded]
        self._replay = 0
        #: The questions of the current round, and their ``inputRequests`` keys.
        self.pending: list[Question] = []
        self.pending_keys: list[str] = []
        #: When the current round's questions were first asked (wall clock; sealed), and their timeout.
        self.asked_at = 0.0
        self.pending_timeout: float | None = None
        # A replay asking the questions of the sealed round again keeps their first-asked time.
        self._asked = asked
        self.scope = anyio.CancelScope()
        self._event = anyio.Event()
        self._outcome: tuple[str, Any] | None = None
        self._answer_event: anyio.Event | None = None
        self._answers: dict[str, Any] | None = None
        self.finished = False

    # tool side

    async def ask(self, question: Question, ttl: float | None, parking: Parking) -> dict[str, Any]:
        """Called by ``ctx.elicit`` & co. inside the tool: a recorded answer, or wait for one.

        Raises:
            RequestTimeout: the answer came after ``ttl`` (as a timeout on the handshake era).
        """
        answer = (await self.ask_many([question], ttl, parking))[0]
        if answer is None:
            raise errors.RequestTimeout(question.method, ttl if ttl is not None else 0.0)
        return answer

    async def ask_many(
        self, questions: list[Question], ttl: float | None, parking: Parking
    ) -> list[dict[str, Any] | None]:
        """Several questions in one round (``ctx.gather``): recorded answers first, then wait for the rest.

        Returns each question's answer, or ``None`` where it came after ``ttl``.

        Raises:
            ValueError: the tool used the same ``key`` for two questions of one call.
        """
        for question in questions:
            if question.key is not None:
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
            offered = self.offered.pop(question.key, None) if question.key is not None else None
            if isinstance(offered, dict) and not need:
                # The client answered this key before it was asked (first call with inputResponses).
                results[i], first_kept = take_answer(question, offered)
                self.answers.append([question.digest, first_kept])
                self._replay = len(self.answers)
                continue
            need.append(i)
        if need:
            first = len(self.answers) + 1
            self.pending = [questions[i] for i in need]
            self.pending_keys = [q.key or f"q{first + n}" for n, q in enumerate(self.pending)]
            now = time.time()
            asked, self._asked = self._asked, None
            same = asked is not None and asked[0] == [q.digest for q in self.pending]
            self.asked_at = asked[1] if same and asked is not None else now
            self.pending_timeout = ttl
            self._answer_event = event = anyio.Event()
            self._emit(("question", self.pending))
            with anyio.move_on_after(None if ttl is None else max(0.0, self.asked_at + ttl - now)):
                await event.wait()
            if not event.is_set():
                # Nobody came back in time: the call is dropped, and a late retry finds it cancelled.
                parking.discard(self)
                self.scope.cancel()
                await anyio.lowlevel.checkpoint()
            answers = self._answers
            for i, key in zip(need, self.pending_keys, strict=True):
                kept: dict[str, Any] | None = None  # None: the answer came after the timeout
                if answers is not None:
                    results[i], kept = take_answer(questions[i], answers[key])
                self.answers.append([questions[i].digest, kept])
            self._answers = None
            self.pending, self.pending_keys = [], []
            self._replay = len(self.answers)
        return results

    def replays(self, question_digest: str | None = None) -> bool:
        """Whether the tool's next question is answered from the sealed record (that question, if given).

        Such a question was asked in an earlier round, when the client could be asked; the
        capability checks before it hold as they did then, whatever this retry declares.
        """
        if self._replay >= len(self.answers):
            return False
        return question_digest is None or self.answers[self._replay][0] == question_digest

    def finish(self, kind: str, value: Any) -> None:
        self.finished = True
        self._emit((kind, value))

    def _emit(self, outcome: tuple[str, Any]) -> None:
        self._outcome = outcome
        self._event.set()

    # request side

    def missing(self, responses: Mapping[str, Any]) -> bool:
        """Whether ``responses`` lack an answer to one of the pending questions."""
        return any(not isinstance(responses.get(key), dict) for key in self.pending_keys)

    def deliver(self, responses: Mapping[str, Any]) -> None:
        """The retry brought the answers to the pending questions (see :meth:`missing`)."""
        event = self._answer_event
        if event is None or event.is_set():  # pragma: no cover - a parked run always waits
            return
        self._answers = {key: responses[key] for key in self.pending_keys}
        event.set()

    def expire(self) -> None:
        """The retry came after the pending questions' timeout: they end as timed out."""
        event = self._answer_event
        if event is None or event.is_set():  # pragma: no cover - a parked run always waits
            return
        self._answers = None
        event.set()

    async def next_outcome(self) -> tuple[str, Any]:
        """Wait until the tool asks its next question or ends."""
        await self._event.wait()
        outcome = self._outcome
        assert outcome is not None
        self._event = anyio.Event()
        return outcome


#: Whom the request being served comes from, and how many calls that client may have parked
#: (set by the HTTP app around each request; ``None``: not counted per client).
PARK_OWNER: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("PARK_OWNER", default=None)


class Parking:
    """Suspended runs by handle, bounded: the oldest are dropped (their retries replay).

    Runs parked under a :data:`PARK_OWNER` also count against that owner's own
    bound: one more is refused with ``-32003`` (and its run cancelled).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._owner_of: dict[str, str] = {}  # handle -> owner, for runs parked under an owner
        self._owned: dict[str, set[str]] = {}  # owner -> handles

    def __len__(self) -> int:
        return len(self._runs)

    def park(self, run: Run) -> None:
        """Keep ``run`` until its retry takes it.

        Raises:
            McpError: ``-32003``: the client of the request being served has its bound of parked calls.
        """
        owner = PARK_OWNER.get()
        if owner is not None:
            key, bound = owner
            mine = self._owned.get(key, set())
            if len(mine) >= bound:
                run.scope.cancel()
                raise McpError(
                    errors.SERVER_BUSY,
                    f"too many calls waiting for answers from this client (limit {bound}); "
                    "answer or abandon one first",
                )
            mine.add(run.handle)
            self._owned[key] = mine
            self._owner_of[run.handle] = key
        self._runs[run.handle] = run
        while len(self._runs) > self.limit:
            handle, oldest = self._runs.popitem(last=False)
            self._disown(handle)
            logger.info("dropping the oldest parked call (limit %d); its retry will replay", self.limit)
            oldest.scope.cancel()

    def take(self, handle: str) -> Run | None:
        run = self._runs.pop(handle, None)
        if run is not None:
            self._disown(handle)
        return run

    def discard(self, run: Run) -> None:
        if self._runs.get(run.handle) is run:
            del self._runs[run.handle]
            self._disown(run.handle)

    def _disown(self, handle: str) -> None:
        key = self._owner_of.pop(handle, None)
        if key is not None:
            mine = self._owned[key]
            mine.discard(handle)
            if not mine:
                del self._owned[key]


async def use_state(
    sealer: StateSealer, used: UsedStates, token: str, *, now: float, binding: dict[str, Any]
) -> dict[str, Any]:
    """Open a retry's ``requestState`` and record it as used: its payload, good for this retry only.

    Raises:
        McpError: ``-32602``, frozen "Invalid or expired requestState" for a state that
            does not verify (the reason goes to the log), or saying it was already used;
            ``-32603`` when the store of used states cannot tell (the state stays unused).
    """
    try:
        state = sealer.open(token, now=now, binding=binding)
    except InvalidState as exc:
        logger.info("refused requestState for %r: %s", binding.get("t"), exc.reason)
        raise McpError(
            errors.INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"}
        ) from None
    try:
        fresh = await used.consume(sealer.state_id(token), float(state["exp"]))
    except StoreUnavailable as exc:  # fail closed: refused, and the state stays unused
        logger.warning("refused a requestState for %r: %s", binding.get("t"), exc)
        raise McpError(
            errors.INTERNAL_ERROR,
            "cannot accept this requestState now: the store of used states is unavailable; retry later",
            {"reason": "state_store_unavailable"},
        ) from None
    if not fresh:
        logger.info("refused a used requestState for %r", binding.get("t"))
        raise McpError(
            errors.INVALID_PARAMS,
            "requestState already used: each one is good for one retry (call again without it to start over)",
            {"reason": "request_state_used"},
        )
    return state
