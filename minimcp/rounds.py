"""Revision 2026-07-28 on the server: a call that spans rounds (:class:`Run`), and serving one round.

On 2026-07-28 there is no handshake: every request carries its protocol
version, the client's capabilities and (usually) its identity in
``params._meta``, and a server may not send the client requests of its own.
A question to the person becomes an ``input_required`` result; the client
answers by calling again with ``inputResponses`` and the ``requestState`` we
gave it.

minimcp keeps the tool author's ``await ctx.elicit(...)`` unchanged, anywhere
in a tool body. The tool runs in a task of its own (a :class:`Run`); when it
asks, the request being served answers ``input_required`` and the run stays
suspended -- *parked* (:class:`~minimcp.modern.Parking`) under a handle sealed
into ``requestState``. The retry finds the handle and delivers the answer: the
same coroutine goes on, exactly as on the handshake era.

When the handle is not here (the process restarted, the retry reached another
worker, the park was dropped to make room), the tool is *replayed*: it runs
again from the top and each ``ctx.elicit`` returns the answer recorded in the
sealed state, in order, until the first unanswered question. So code that runs
before a question may run more than once; a tool that must not be replayed is
registered with ``replayable=False`` and its retries then fail cleanly.

What is recorded is only what the tool can use of each answer
(:func:`~minimcp.mrtr.clean_answer`), and when the open questions were asked: an
answer arriving after the question's timeout is no answer, and ``ctx.elicit``
gives ``Cancelled("timeout")`` as on the handshake era, parked or replayed. A
parked call is dropped when that timeout passes.

The pure half of this revision (envelope, meta keys, codes, result shape,
questions and answers) is :mod:`minimcp.mrtr`; :func:`serve` is the entry from
:class:`~minimcp.connection.ServerConnection`.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import anyio
import msgspec

from minimcp import errors, handlers, jsonrpc, mrtr
from minimcp._backend import (
    BareTaskCancelled,
    Cell,
    TrioCell,
    cell_settled,
    new_cell,
    running_loop,
    trio_deadline_in,
)
from minimcp.call import CALL_ID_BYTES
from minimcp.context import Context
from minimcp.dispatch import Deferred
from minimcp.elicitation import UrlElicitationRequired
from minimcp.errors import ConnectionClosed, McpError
from minimcp.jsonrpc import Request
from minimcp.mrtr import Envelope, Question, take_answer
from minimcp.outcome import ToolRun
from minimcp.state import StateTooLarge, digest
from minimcp.state import b64url as _b64
from minimcp.tools import argument_error, error_result
from minimcp.types import UNSET, GetPromptParams, ServerCapabilities, UnsetType
from minimcp.used_states import use_state
from minimcp.versions import MODERN, SUPPORTED

if TYPE_CHECKING:
    from minimcp.connection import ServerConnection

__all__ = ["Asking", "Outcome", "Raised", "Returned", "Run", "serve", "use_state"]

logger = logging.getLogger("minimcp.modern")
server_logger = logging.getLogger("minimcp.server")


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


class _Parking(Protocol):
    """Where a run is parked between rounds (:class:`~minimcp.modern.Parking`)."""

    def discard(self, run: Run) -> None: ...


# --- runs: a tool executing across rounds ----------------------------------------------------


class Run:
    """One tool execution that may span several requests (park) or be rebuilt (replay).

    ``recorded`` are ``[digest, answer]`` pairs from the sealed state (the list is taken, not
    copied: the run adds to it); they are handed back in order while the tool asks the same
    questions again. An answer of ``None`` stands for "came after the question's timeout".
    """

    # Slots, and no per-run Event: a parked run is held per waiting call (issue 19: bytes per parked call).
    __slots__ = (
        "_answer_cell", "_answers", "_asked", "_keys", "_outcome", "_outcome_cell", "_replay", "answers",
        "asked_at", "call_id", "context", "continued_elsewhere", "finished", "handle", "offered", "parking",
        "pending", "pending_keys", "pending_timeout", "scope", "tool",
    )

    def __init__(
        self,
        tool: str,
        recorded: list[list[Any]],
        call_id: str | None = None,
        offered: dict[str, Any] | None = None,
        *,
        parking: _Parking,
        asked: tuple[list[str], float] | None = None,
    ) -> None:
        self.tool = tool
        #: Where this run waits between rounds (it leaves on its own when its question times out).
        self.parking = parking
        #: Answers the client sent by key before being asked (a first call with inputResponses).
        self.offered: dict[str, Any] | None = dict(offered) if offered else None  # None: no dict per run
        #: Set on a parked run dropped because its retry continued the call on another worker.
        self.continued_elsewhere = False
        self._keys: set[str] | None = None  # made on the first question with a key
        # One read of the system's randomness for both names (a new call needs two).
        drawn = secrets.token_bytes(CALL_ID_BYTES if call_id else 2 * CALL_ID_BYTES)
        self.handle = _b64(drawn[:CALL_ID_BYTES])
        #: Stable across every round and replay of this one call (carried in the sealed state).
        self.call_id = call_id or _b64(drawn[CALL_ID_BYTES:])
        #: The tool's context, when it takes one (its envelope follows each round's request).
        self.context: Context | None = None
        self.answers: list[list[Any]] = recorded
        self._replay = 0
        #: The questions of the current round, and their ``inputRequests`` keys.
        self.pending: tuple[Question, ...] = ()
        self.pending_keys: tuple[str, ...] = ()
        #: When the current round's questions were first asked (wall clock; sealed), and their timeout.
        self.asked_at = 0.0
        self.pending_timeout: float | None = None
        # A replay asking the questions of the sealed round again keeps their first-asked time.
        self._asked = asked
        #: What stops the run's task (``.cancel()``): the task itself on asyncio, its trio cancel
        #: scope on trio; set when the task starts. Stop it with :meth:`stop`.
        self.scope: Any = _NOT_STARTED
        # One-shot cells (a future on asyncio), made only while someone waits: the request side
        # for the next outcome, the tool side for the retry's answers.
        self._outcome_cell: Cell | None = None
        self._outcome: Outcome | None = None
        self._answer_cell: Any = None  # an asyncio future, or a TrioCell
        self._answers: dict[str, Any] | None = None
        self.finished = False

    # tool side

    def stop(self) -> None:
        """Cancel the run's task (once: a second ``cancel()`` would cut its clean-up short on asyncio)."""
        scope, self.scope = self.scope, _NOT_STARTED
        scope.cancel()

    def ask(self, question: Question, ttl: float | None) -> Coroutine[Any, Any, dict[str, Any]]:
        """Called by ``ctx.elicit`` & co. inside the tool: a recorded answer, or wait for one.

        (The coroutine of :meth:`_round` itself: no frame of its own while the call is parked.)

        Raises:
            RequestTimeout: the answer came after ``ttl`` (as a timeout on the handshake era).
        """
        return self._round([question], ttl, True)

    def ask_many(
        self, questions: list[Question], ttl: float | None
    ) -> Coroutine[Any, Any, list[dict[str, Any] | None]]:
        """Several questions in one round (``ctx.gather``): recorded answers first, then wait for the rest.

        Returns each question's answer, or ``None`` where it came after ``ttl``.

        Raises:
            ValueError: the tool used the same ``key`` for two questions of one call.
        """
        return self._round(questions, ttl, False)

    async def _round(self, questions: list[Question], ttl: float | None, one: bool) -> Any:
        """:meth:`ask_many`; with ``one``, :meth:`ask` (the only answer, or ``RequestTimeout``).

        The steps before and after the wait are plain methods: this frame, held while the call
        is parked, keeps only what the wait needs.
        """
        results, need = self._recorded(questions)
        if need:
            loop = running_loop()
            cell: Any = loop.create_future() if loop is not None else new_cell(None)
            delay = self._open(questions, need, ttl, cell)
            if loop is not None:
                # asyncio: the cell is a plain future awaited as is (no coroutine around it), and
                # one timer handle settles it as timed out (no cancel scope per park).
                timer = None if delay is None else loop.call_later(delay, _time_out, cell)
                try:
                    answered = await cell is not _TIMED_OUT
                finally:
                    if timer is not None:
                        timer.cancel()
            elif isinstance(self.scope, _NotStarted):  # pragma: no cover - a stopped run is being cancelled
                with anyio.move_on_after(delay):
                    await cell.wait()
                answered = cell_settled(cell)
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
            self._take_answers(questions, need, results)
        if one:
            if results[0] is None:
                raise errors.RequestTimeout(questions[0].method, ttl if ttl is not None else 0.0)
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
        return results, tuple(need)  # (held while parked: a tuple is the smaller)

    def _open(self, questions: list[Question], need: tuple[int, ...], ttl: float | None, cell: Any) -> float | None:
        """Ask the open questions (the request side hears of them); how long to wait for their answers."""
        first = len(self.answers) + 1
        self.pending = pending = tuple(questions[i] for i in need)
        self.pending_keys = tuple(q.key or _key_name(first + n) for n, q in enumerate(pending))
        now = time.time()
        asked, self._asked = self._asked, None
        same = asked is not None and asked[0] == [q.digest for q in pending]
        self.asked_at = asked[1] if same and asked is not None else now
        self.pending_timeout = ttl
        self._answer_cell = cell
        self._emit(Asking(pending))
        return None if ttl is None else max(0.0, self.asked_at + ttl - now)

    def _take_answers(
        self, questions: list[Question], need: tuple[int, ...], results: list[dict[str, Any] | None]
    ) -> None:
        """The open questions' answers (or their timeout) into ``results`` and the record."""
        answers = self._answers
        for i, key in zip(need, self.pending_keys, strict=True):
            kept: dict[str, Any] | None = None  # None: the answer came after the timeout
            if answers is not None:
                results[i], kept = take_answer(questions[i], answers[key])
            self.answers.append([questions[i].digest, kept])
        self._answers = None
        self.pending, self.pending_keys = (), ()
        self._replay = len(self.answers)

    @staticmethod
    def question(method: str, params: Any, key: str | None = None) -> Question:
        """``method`` with ``params`` as a question of this run (the context asks through it)."""
        return Question.create(method, params, key)

    def replays(self, question_digest: str | None = None) -> bool:
        """Whether the tool's next question is answered from the sealed record (that question, if given).

        Such a question was asked in an earlier round, when the client could be asked; the
        capability checks before it hold as they did then, whatever this retry declares.
        """
        if self._replay >= len(self.answers):
            return False
        return question_digest is None or self.answers[self._replay][0] == question_digest

    def finish(self, outcome: Returned | Raised) -> None:
        """The tool's call ended (the last outcome the request side waits for)."""
        self.finished = True
        self._emit(outcome)

    def _emit(self, outcome: Outcome) -> None:
        self._outcome = outcome
        cell, self._outcome_cell = self._outcome_cell, None
        if cell is not None:
            cell.settle(_DONE, None)

    # request side

    def missing(self, responses: Mapping[str, Any]) -> bool:
        """Whether ``responses`` lack an answer to one of the pending questions."""
        return any(not isinstance(responses.get(key), dict) for key in self.pending_keys)

    def deliver(self, responses: Mapping[str, Any]) -> None:
        """The retry brought the answers to the pending questions (see :meth:`missing`)."""
        cell = self._answer_cell
        if cell is None or cell_settled(cell):  # pragma: no cover - a parked run always waits
            return
        self._answers = {key: responses[key] for key in self.pending_keys}
        _settle(cell, _DONE)

    def expire(self) -> None:
        """The retry came after the pending questions' timeout: they end as timed out."""
        cell = self._answer_cell
        if cell is None or cell_settled(cell):  # pragma: no cover - a parked run always waits
            return
        self._answers = None
        _settle(cell, _DONE)

    async def next_outcome(self) -> Outcome:
        """Wait until the tool asks its next question or ends."""
        if self._outcome is None:
            self._outcome_cell = cell = new_cell(running_loop())
            try:
                await cell.wait()
            finally:
                self._outcome_cell = None
        outcome, self._outcome = self._outcome, None
        assert outcome is not None
        return outcome


class _NotStarted:
    """The :attr:`Run.scope` of a run whose task has not started (or was stopped): cancels nothing."""

    __slots__ = ()

    def cancel(self) -> None:
        return None


_NOT_STARTED = _NotStarted()
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"
_DONE = msgspec.Raw(b"null")
_TIMED_OUT = msgspec.Raw(b"null")
#: The usual ``inputRequests`` keys, made once (not one string per parked call).
_KEY_NAMES = tuple(f"q{n}" for n in range(1, 33))


def _key_name(n: int) -> str:
    return _KEY_NAMES[n - 1] if n <= len(_KEY_NAMES) else f"q{n}"


def _settle(cell: Any, value: msgspec.Raw) -> None:
    """Wake the tool waiting on ``cell`` (an asyncio future, or a :class:`TrioCell`) with ``value``, once."""
    if isinstance(cell, TrioCell):
        cell.settle(value, None)
    elif not cell.done():
        cell.set_result(value)


def _time_out(cell: Any) -> None:
    """asyncio timer: the open questions' timeout passed."""
    _settle(cell, _TIMED_OUT)


# --- serving one round ---------------------------------------------------------------------

async def serve(conn: ServerConnection, request: Request) -> Any:
    """Answer one request of a connection locked to 2026-07-28 (every result in the revision's shape)."""
    method = request.method
    if method == "initialize" and not mrtr.has_envelope(request.params):
        raise McpError(
            mrtr.UNSUPPORTED_VERSION,
            "this connection speaks protocol 2026-07-28 (no initialize); open a new connection to use "
            "the handshake",
            {"supported": list(MODERN), "requested": _requested_version(request.params)},
        )
    envelope = mrtr.read_envelope(request.params)
    server, registry = conn.server, conn.registry
    info = server.info
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": [*MODERN, *reversed(SUPPORTED)],
            "capabilities": msgspec.to_builtins(_modern_capabilities(server.capabilities())),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return mrtr.complete(result, info, cacheable=True)
    if method == "tools/call":
        return await _call_tool(conn, request, envelope)
    lister = handlers.LISTS.get(method)
    if lister is not None:
        return mrtr.complete(await lister(registry, conn.limits.page_size, request), info, cacheable=True)
    if method == "resources/read":
        try:
            value = await handlers.read_resource(registry, request)
        except McpError as exc:
            if exc.code == handlers.RESOURCE_NOT_FOUND:  # resource-not-found is -32602 from 2026-07-28 on
                raise McpError(errors.INVALID_PARAMS, exc.message, exc.data) from None
            raise
        return mrtr.complete(value, info, cacheable=True)
    if method == "prompts/get":
        return await _get_prompt(conn, request, envelope)
    if method == "completion/complete":
        return mrtr.complete(await handlers.complete(registry, request), info)
    raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")


async def _call_tool(conn: ServerConnection, request: Request, envelope: Envelope) -> dict[str, Any]:
    params = jsonrpc.decode_params(request.params, handlers.CallToolWire)
    tool = conn.registry.tools.get(params.name)
    if tool is None:
        raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
    try:
        kwargs = tool.arguments(params.arguments)
    except msgspec.DecodeError as exc:
        return mrtr.complete(error_result(argument_error(params.name, exc)), conn.server.info)
    arguments: Any = msgspec.json.decode(params.arguments or b"{}") if tool.args_type is not None else {}
    name, context_param = params.name, tool.context_param

    def body(ctx: Context | None) -> Awaitable[Any]:
        call = dict(kwargs)
        if context_param is not None:
            call[context_param] = ctx
        return ToolRun(conn, tool, name, tool.fn(**call), ctx, True)

    wants_context = context_param is not None
    return await _rounds(conn, request, envelope, "tools/call", name, arguments, params, wants_context, body)


async def _get_prompt(conn: ServerConnection, request: Request, envelope: Envelope) -> dict[str, Any]:
    params = jsonrpc.decode_params(request.params, GetPromptParams)
    prompt, arguments = handlers.prompt_and_arguments(conn.registry, params)
    return await _rounds(
        conn,
        request,
        envelope,
        "prompts/get",
        params.name,
        arguments,
        params,
        prompt.context_param is not None,
        lambda ctx: handlers.prompt_result(prompt, arguments, ctx),
    )


async def _rounds(
    conn: ServerConnection,
    request: Request,
    envelope: Envelope,
    method: str,
    name: str,
    arguments: Any,
    params: Any,
    wants_context: bool,
    body: Callable[[Context | None], Awaitable[Any]],
) -> dict[str, Any]:
    """Serve one round of a multi round-trip request (tools/call, prompts/get).

    A new call starts ``body`` in a :class:`Run`; a retry resumes the parked run
    named in its ``requestState``, or replays ``body`` with the recorded answers.
    """
    server = conn.server
    binding = {
        "m": method,
        "t": name,
        "a": digest(arguments),
        "p": envelope.client_info.name if envelope.client_info else None,
    }
    responses = params.input_responses
    if responses is None or (not isinstance(responses, UnsetType) and not all(
        isinstance(v, dict) for v in responses.values()
    )):
        raise McpError(errors.INVALID_PARAMS, "inputResponses must be an object of objects")
    inputs: dict[str, Any] = responses if isinstance(responses, dict) else {}
    if isinstance(params.request_state, str):
        now = time.time()
        state = await use_state(server.sealer, server.used_states, params.request_state, now=now, binding=binding)
        keys = [str(k) for k in state.get("ks", [])]
        digests, asked_at, timeout = mrtr.asked(state)
        # An answer after the question's timeout is no answer: the call goes on as timed out.
        late = asked_at is not None and timeout is not None and now > asked_at + timeout
        run = server.parking.take(str(state.get("h")))
        if run is not None:
            if run.context is not None:
                # Capabilities, identity and log level come from this request only.
                run.context.envelope = envelope
                run.context.request_id = request.id
            if late:
                run.expire()
            elif run.missing(inputs):
                # A needed answer is missing: ask the same questions again, still parked.
                return _input_required(conn, run, binding)
            else:
                run.deliver(inputs)
        else:
            if method == "tools/call" and name in conn.registry.not_replayable:
                raise McpError(
                    errors.INVALID_PARAMS,
                    f"this call of {name!r} cannot be resumed here (its state is gone and the tool is "
                    "not replayable); call the tool again",
                )
            server.workers.continued_here(state)  # parked on another worker: it drops its copy
            recorded = [list(p) for p in state.get("ans", []) if isinstance(p, list) and len(p) == 2]
            if late:
                recorded.extend([d, None] for d in digests)
            elif keys and all(isinstance(inputs.get(k), dict) for k in keys):
                recorded.extend([d, inputs[k]] for k, d in zip(keys, digests, strict=False))
            call_id = state.get("c")
            run = _start_run(
                conn, name, envelope, request, params.meta, wants_context, body, recorded,
                call_id if isinstance(call_id, str) else None,
                asked=(digests, asked_at) if asked_at is not None else None,
            )
    else:
        # A first call may carry answers to questions asked by name (key=...).
        run = _start_run(conn, name, envelope, request, params.meta, wants_context, body, [], offered=inputs)
    try:
        outcome = await run.next_outcome()
    except BaseException:
        run.stop()  # the client gave up on this round: stop the call
        raise
    if isinstance(outcome, Asking):
        return _input_required(conn, run, binding)
    if isinstance(outcome, Raised):
        if isinstance(outcome.error, UrlElicitationRequired):
            return _url_steps_required(conn, outcome.error, binding)
        raise outcome.error
    return mrtr.complete(outcome.value, server.info)


def _start_run(
    conn: ServerConnection,
    name: str,
    envelope: Envelope,
    request: Request,
    meta: dict[str, Any] | UnsetType,
    wants_context: bool,
    body: Callable[[Context | None], Awaitable[Any]],
    recorded: list[list[Any]],
    call_id: str | None = None,
    *,
    offered: dict[str, Any] | None = None,
    asked: tuple[list[str], float] | None = None,
) -> Run:
    run = Run(name, recorded, call_id, offered, parking=conn.server.parking, asked=asked)
    ctx: Context | None = None
    if wants_context:
        if isinstance(meta, dict):
            # The envelope's keys live on in ``envelope`` (renewed each round); the context keeps the
            # rest (a progress token): a parked call need not hold a second copy of the envelope.
            meta = {k: v for k, v in meta.items() if not k.startswith(_ENVELOPE_PREFIX)} or UNSET
        ctx = run.context = Context(conn, request.id, meta, envelope, run, tool=name)
    # The body is made here (a coroutine, not run yet): the parked task keeps only it, not the
    # closure that makes it.
    awaitable = body(ctx)
    try:
        run.scope = conn.session.start_detached(_drive(run, awaitable, ctx))
    except ConnectionClosed:
        inner = awaitable.awaitable if isinstance(awaitable, Deferred) else awaitable
        if isinstance(inner, Coroutine):
            inner.close()  # never to run: no "never awaited" warning
        raise
    return run


async def _drive(run: Run, awaitable: Awaitable[Any] | Deferred, ctx: Context | None) -> None:
    """The run's own task: the tool's body, its outcome told to the request side, whatever ends it.

    A bare task owned by the session (:meth:`_backend.Handlers.start_detached`); what it awaits
    is the tool's own coroutine (a :class:`Deferred` is finished here, as the session's handler
    tasks do: no wrapping coroutine frame while the call is parked).
    """
    try:
        try:
            if isinstance(awaitable, Deferred):
                try:
                    value = await awaitable.awaitable
                except BaseException as exc:
                    result = awaitable.finish(None, exc)  # a cancellation is raised again
                else:
                    result = awaitable.finish(value, None)
            else:
                result = await awaitable
        except McpError as exc:
            run.finish(Raised(exc))
        else:
            run.finish(Returned(result))
    except BareTaskCancelled:
        pass  # asyncio: the call was stopped (dropped, timed out, given up on, or the session ended)
    finally:
        if ctx is not None:
            ctx.finished = True
        run.parking.discard(run)
        if not run.finished:
            run.finish(Raised(McpError(errors.INTERNAL_ERROR, f"the call of {run.tool!r} was abandoned")))


def _input_required(conn: ServerConnection, run: Run, binding: dict[str, Any]) -> dict[str, Any]:
    """Park ``run`` and answer ``input_required`` with its open questions (and a fresh state)."""
    server = conn.server
    keys, questions = run.pending_keys, run.pending
    try:
        state = server.sealer.seal(
            {
                **binding,
                "h": run.handle,
                "ks": keys,
                "qs": [q.digest for q in questions],
                "at": run.asked_at,
                "to": run.pending_timeout,
                "ans": run.answers,
                "c": run.call_id,
                **server.workers.sealed,
            },
            now=time.time(),
            ttl=server.state_ttl,
        )
    except StateTooLarge as exc:
        run.stop()
        text = (
            f"the call of {run.tool!r} cannot go on: the answers it carries to its next question "
            f"are too large ({exc.size} bytes sealed, limit {exc.limit})"
        )
        server_logger.warning("%s", text)
        if binding["m"] != "tools/call":
            raise McpError(errors.INTERNAL_ERROR, text) from None
        return mrtr.complete(error_result(text), server.info)
    if server.replay_every_retry:
        run.stop()  # dropped at once, as on a full park table: the retry replays
    else:
        server.parking.park(run)
    requests = {key: q.to_raw_wire() for key, q in zip(keys, questions, strict=True)}
    return mrtr.input_required(requests, state, server.info)


def _url_steps_required(conn: ServerConnection, exc: UrlElicitationRequired, binding: dict[str, Any]) -> dict[str, Any]:
    # -32042 does not exist on 2026-07-28: the steps become URL input requests, and the
    # retry simply runs the tool again (it checks for itself whether the steps are done).
    server = conn.server
    requests = {
        f"url{i + 1}": {"method": "elicitation/create",
                        "params": {"mode": "url", "message": item.message, "url": item.url}}
        for i, item in enumerate(exc.elicitations)
    }
    state = server.sealer.seal({**binding, "h": None, "ks": [], "ans": []}, now=time.time(), ttl=server.state_ttl)
    result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
    return mrtr.complete(result, server.info)


def _requested_version(params: msgspec.Raw) -> Any:
    try:
        return msgspec.json.decode(params or b"{}").get("protocolVersion")
    except (msgspec.DecodeError, AttributeError):
        return None


def _modern_capabilities(caps: ServerCapabilities) -> ServerCapabilities:
    # 2026-07-28 removed logging/setLevel and resources/subscribe, and list changes travel only
    # through subscriptions/listen, which we do not offer: so no subscribe / listChanged either.
    def plain(value: dict[str, Any] | UnsetType) -> dict[str, Any] | UnsetType:
        return {} if isinstance(value, dict) else value

    return msgspec.structs.replace(
        caps, logging=UNSET, resources=plain(caps.resources), prompts=plain(caps.prompts), tools=plain(caps.tools)
    )
