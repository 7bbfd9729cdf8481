"""The tool context: the one object a tool gets to learn who is calling and to ask them things mid-call.

Part of the first reading (``ctx.elicit`` is how a tool asks): this module; ``ports`` names what the
context needs of the server, and ``keepalive`` may be skipped.

A :class:`Context` is what a tool (or a prompt) gets as its ``Context``-typed
parameter; a resource reader or the completion handler gets an :class:`AnswerContext`, which
asks nothing. It is era-neutral: ``ctx.elicit`` sends a nested ``elicitation/create``
on the handshake era, and becomes an ``input_required`` round on revision
2026-07-28 (see :mod:`minimcp.server.mrtr.rounds`) -- the tool's code is the same.

It is one class, read in two parts: first the call's identity, what the client
declared, and what it tells the client unasked -- progress, log messages, and
keep-alive progress while a person answers (:meth:`Context.keep_alive`, see
:mod:`minimcp.server.context.keepalive`); then asking -- form and URL elicitation,
sampling, roots, and several questions at once (:meth:`Context.gather` with
:class:`Elicit`, :class:`Sample`, :class:`ListRoots`). On the handshake era a question
is a nested request through the connection; on revision 2026-07-28 it is a question
of the call's run, answered in a later round.

A context reaches the connection serving its call only through
:class:`~minimcp.server.context.ports.CallHost` (and the 2026-07-28 run it executes in through
:class:`~minimcp.server.context.ports.RunHandle`), so this package imports neither
:mod:`minimcp.server.server` nor :mod:`minimcp.server.connection`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Awaitable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, cast, overload

import anyio
import msgspec

from minimcp.core._requests import DEFAULT, Timeout, decode_result
from minimcp.core.session import Session
from minimcp.wire import capabilities, errors
from minimcp.wire.elicitation import (
    Accepted,
    Cancelled,
    Declined,
    ElicitationUnsupported,
    QuestionFailed,
    UrlElicitation,
)
from minimcp.wire.errors import FormValidationError, McpError
from minimcp.wire.jsonrpc import CALL_ID_BYTES, RequestId
from minimcp.wire.types import (
    LOG_LEVELS,
    UNSET,
    ClientCapabilities,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageParams,
    ProgressParams,
    Root,
    SamplingMessage,
    TextContent,
    UnsetType,
)

if TYPE_CHECKING:  # interfaces for the type checker only: nothing of them runs
    from minimcp import forms
    from minimcp.auth.principal import Principal
    from minimcp.server.context.keepalive import Wait
    from minimcp.server.context.ports import CallHost, RunHandle
    from minimcp.wire.envelope import Envelope
    from minimcp.wire.input_required import Question

__all__ = ["URL_ID_BYTES", "AnswerContext", "Context", "Elicit", "ListRoots", "Sample"]

#: How much a keep-alive progress notification raises the call's progress value (relative, at least this).
_NUDGE = 2.0**-20
#: "Long ago" on the session clock: the first progress notification is never held back.
_NEVER = -1e9
#: No progress sent yet (and never held back): a call's progress record until its first report.
_NO_PROGRESS: tuple[float | None, float] = (None, _NEVER)

_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}

T = TypeVar("T")
logger = logging.getLogger("minimcp.context")
#: What a call waits for while its question is open, by method (a URL step by its mode); roots/list waits on no one.
_WAITING_FOR = {
    "elicitation/create": "the person to answer a question",
    "url": "the person to finish a step in their browser",
    "sampling/createMessage": "the client to answer a sampling request",
}
#: Random bytes in a URL elicitation's id (144 bits).
URL_ID_BYTES = 18

# The three question specs are frozen msgspec Structs, not dataclasses: the same constructor, equality and
# repr, for about 1/50 of a dataclass's class-creation cost at import (0.7 ms each here).


class Elicit(msgspec.Struct, frozen=True):
    """A form question for :meth:`Context.gather` (like ``ctx.elicit(message, form)``)."""

    message: str
    form: Any
    allow_sensitive: Collection[str] = ()


class Sample(msgspec.Struct, frozen=True):
    """A model completion for :meth:`Context.gather` (like ``ctx.sample(...)``)."""

    messages: list[SamplingMessage] | str
    max_tokens: int


class ListRoots(msgspec.Struct, frozen=True):
    """The client's roots, for :meth:`Context.gather` (like ``ctx.list_roots()``)."""


def _checked_url_step(url: str, elicitation_id: str | None) -> str:
    """Check a URL step's ``url`` and give its elicitation id (``elicitation_id``, or a new unguessable one).

    The URL rules and the random ids load on the first URL step (a server that asks none never loads them).
    """
    import secrets

    from minimcp.wire.urls import check_elicitation_url

    check_elicitation_url(url)
    return elicitation_id or secrets.token_urlsafe(URL_ID_BYTES)


def _raise_if_refused(method: str) -> None:
    """In an ``except`` block: when the client answered our question with an error response (a plain
    :class:`McpError`; ours are subclasses), raise :class:`QuestionFailed` instead (it reaches the tool)."""
    error = sys.exc_info()[1]
    if type(error) is McpError:
        logger.info("the client answered %s with error %d: %s", method, error.code, error.message)
        raise QuestionFailed(method, error) from None


class Context:
    """What a running tool gets: who is calling, and a way to ask them things.

    One context exists per tool call; do not keep it after the call returns
    (progress reported after that is dropped). Its members, in this order: the call's
    identity and what the client declared; progress, log messages and keep-alive
    progress (what the call tells the client unasked); then the questions --
    elicitation (forms, URL steps), sampling, roots, several at once. The metrics
    clock of the call's questions (:meth:`_started`, :meth:`_outcome`) is its own state.
    """

    __slots__ = (
        "_asked_at",
        "_call_id",
        "_progress",
        "client_info",
        "connection",
        "envelope",
        "finished",
        "meta",
        "principal",
        "protocol_version",
        "request_id",
        "run",
        "tool",
    )

    # What the caller declared, read once in __init__ (plain attributes: asked for on every question):
    # the request's own envelope on the modern revision, the handshake's otherwise.
    protocol_version: str
    client_info: Implementation | None

    # -- the call: who is calling, under which rules, and what it tells the client unasked

    def __init__(
        self,
        connection: CallHost,
        request_id: RequestId,
        meta: dict[str, Any] | UnsetType,
        envelope: Envelope | None = None,
        run: RunHandle | None = None,
        tool: str = "",
        principal: Principal | None = None,
    ) -> None:
        # (all positional or keyword: a class called with a keyword costs about 1,200 instructions more)
        #: The connection serving this call (through the narrow :class:`~minimcp.server.context.ports.CallHost`
        #: interface).
        self.connection = connection
        #: The name of the tool (or prompt, or resource) being called; ``""`` for a completion.
        self.tool = tool
        self.request_id = request_id
        self.meta = meta
        #: The request's own envelope on the modern revision (``None`` on the handshake era).
        self.envelope = envelope
        #: The multi round-trip run this call executes in (modern revision only).
        self.run = run
        #: Who sent this request, when its transport tells per request (revision 2026-07-28 over HTTP: no
        #: session to hold the person; renewed with each round's request, like :attr:`envelope`); ``None``:
        #: the connection's (:attr:`auth`).
        self.principal = principal
        if envelope is not None:
            self.protocol_version = envelope.version
            self.client_info = envelope.client_info
        else:
            version = connection.protocol_version
            assert version is not None, "a handshake-era call comes after initialize"
            self.protocol_version = version
            self.client_info = connection.client_info
        self.finished = False
        self._call_id: str | None = None
        # The last progress value sent (None: none yet) and when, on the session clock: one shared
        # tuple until the first report (one slot and one store per call, not two).
        self._progress: tuple[float | None, float] = _NO_PROGRESS

    @property
    def session(self) -> Session:
        return self.connection.session

    @property
    def modern(self) -> bool:
        """Whether this call is served by the modern (2026-07-28) rules."""
        return self.envelope is not None

    @property
    def call_id(self) -> str:
        """An unguessable id of this tool call, the same in every round and replay of it.

        Derive ids of things the call creates from it (a payment page, say), so
        that a replayed call finds them again instead of making new ones.
        """
        if self.run is not None:
            return self.run.call_id
        if self._call_id is None:
            import secrets  # only for a call that asks for its id (a stdio server need not load it)

            self._call_id = secrets.token_urlsafe(CALL_ID_BYTES)
        return self._call_id

    def url_step_id(self, name: str = "") -> str:
        """An id for a page this call sends the person to (``call_id-name``), bound to the caller.

        The same in every round and replay of the call, so a page keyed by it is found again. With
        authorization on, it ends in a tag binding it to :attr:`auth` (``~…``): the page asks
        :meth:`Server.url_step_is_for` whether the person signed in there is that one (on any worker
        sharing the state keys) and completes with ``Server.complete_url_elicitation(id, person=...)``.
        Without authorization it is just ``call_id-name``. Use it as ``elicitation_id=`` on the
        handshake era too, and as the page's own id on revision 2026-07-28 (whose URL entries carry no
        elicitation id).
        """
        base = f"{self.call_id}-{name}" if name else self.call_id
        return self.connection.bind_url_step(base, self.auth)

    @property
    def continued_elsewhere(self) -> bool:
        """True once this copy of a 2026-07-28 call was dropped because its retry continued it on another
        worker (``Server(bus=...)``): the copy is cancelled as an abandoned one would be, but the call goes
        on there, so clean-up must not undo what it made. False on the handshake era."""
        return self.run is not None and self.run.continued_elsewhere

    @property
    def auth(self) -> Principal | None:
        """Who is calling, as their verified bearer token says (issuer, subject, client id, scopes, expiry,
        claims); ``None`` when the server does not check tokens (:class:`minimcp.auth.config.Authorization`).

        On revision 2026-07-28 over HTTP, the current request's: a call resumed by a retry sees the retry's
        token (the same person, its scopes and expiry as refreshed since)."""
        principal = self.principal
        return principal if principal is not None else self.connection.principal

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """The capabilities that apply to this call (this request's, on the modern revision)."""
        if self.envelope is not None:
            return self.envelope.capabilities
        return self.connection.client_capabilities

    @property
    def progress_token(self) -> int | str | None:
        if isinstance(self.meta, dict):
            token = self.meta.get("progressToken")
            if type(token) in (int, str):
                return cast("int | str", token)
        return None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send ``notifications/progress`` if the caller asked for it; returns whether it was sent.

        Dropped (not an error): when the caller sent no progress token, when
        ``progress`` does not increase (the spec wants strictly increasing
        values), after the call finished, and when it comes sooner than
        ``limits.progress_interval`` after the previous one -- unless it is the
        final one (``progress == total``).
        """
        token = self.progress_token
        if token is None or self.finished:
            return False
        last, last_at = self._progress
        if last is not None and progress <= last:
            return False
        now = self.session.now()
        final = total is not None and progress >= total
        if not final and now - last_at < self.connection.limits.progress_interval:
            return False
        self._progress = (progress, now)
        await self.session.notify(
            "notifications/progress",
            ProgressParams(
                progress_token=token,
                progress=progress,
                total=total if total is not None else UNSET,
                message=message if message is not None else UNSET,
            ),
            related=self.request_id,
        )
        return True

    async def log(self, level: LoggingLevel, data: Any, *, logger: str | None = None) -> bool:
        """Send ``notifications/message`` to the client if ``level`` passes its ``logging/setLevel``.

        Returns whether it was sent.
        """
        wanted = self.envelope.log_level if self.envelope is not None else self.connection.log_level
        if wanted is None or _LEVEL_RANK[level] < _LEVEL_RANK[wanted]:
            return False  # on the modern revision, no log level in the request means no logs
        await self.session.notify(
            "notifications/message",
            LoggingMessageParams(level=level, data=data, logger=logger if logger is not None else UNSET),
            related=self.request_id,
        )
        return True

    async def keep_alive(self, what: str, interval: float) -> None:
        """One keep-alive progress notification, unless one went out lately: the connection's timer
        (:mod:`minimcp.server.context.keepalive`) calls it every ``interval`` seconds while a person answers.

        Its ``progress`` is the call's last value nudged up by a hair (the spec wants each value
        higher than the last; nothing advances while the person thinks), so the tool's own later
        reports still count; its ``message`` says what the call waits for.
        """
        token = self.progress_token
        if token is None or self.finished:
            return
        now = self.session.now()
        last, last_at = self._progress
        if now - last_at < interval / 2:
            return  # another question of this call (ctx.gather) just sent one
        if last is None:
            last = 0.0
        progress = last + max(abs(last), 1.0) * _NUDGE
        self._progress = (progress, now)
        await self.session.notify(
            "notifications/progress",
            ProgressParams(progress_token=token, progress=progress, message=f"waiting for {what}"),
            related=self.request_id,
        )

    # -- the questions: what the client can be asked, and asking it

    def can_elicit_form(self) -> bool:
        """Whether the person can be asked a form question on this call.

        On the modern revision, while a replay hands back recorded answers: yes (the question
        was asked in an earlier round, whatever this retry declares; as when the call is parked).
        """
        if self.envelope is None:
            return self.connection.form_allowed  # worked out once per connection, by its handshake
        return self.envelope.form_allowed or self._replaying()  # (worked out once per envelope)

    def can_elicit_url(self) -> bool:
        """Whether the person can be sent to a URL (URL mode) on this call (replays: as :meth:`can_elicit_form`)."""
        return self._replaying() or capabilities.can_elicit_url(self.protocol_version, self.client_capabilities)

    def _replaying(self, method: str | None = None, params: Any = None) -> bool:
        """Whether the next question (this one, if given) is answered from the sealed record."""
        run = self.run
        if run is None:
            return False
        return run.replays(None if method is None else run.question(method, params).digest)

    def _ask(self, method: str, params: Any, timeout: Timeout, key: str | None = None) -> Awaitable[Any]:
        """Send one question to the client: a nested request, or an input request (modern).

        What it gives is the raw answer, for :meth:`_typed`: on the handshake era the pending
        request itself (from :meth:`Session.start_request <minimcp.core.session.Session.start_request>`),
        awaited without a coroutine of its own while the person answers --
        unless the call asked for progress: then the wait for a person (a form, a URL step,
        sampling) is kept alive with progress (:mod:`minimcp.server.context.keepalive`).
        """
        if self.run is None:
            # A request nested in this call, straight to the session (as the call's notifications go).
            pending = self.connection.session.start_request(method, params, timeout=timeout, related=self.request_id)
            if self.meta is not UNSET and method in _WAITING_FOR and self.progress_token is not None:
                # A person (or their model) answers, and the call asked for progress: keep it alive
                # meanwhile (on 2026-07-28 no request stays open while the person answers).
                url = getattr(params, "mode", None) == "url"
                wait = self.connection.begin_wait(self, _WAITING_FOR["url" if url else method])
                if wait is not None:
                    return self._kept_alive(pending, wait)
            return pending
        return self._ask_modern(self.run, method, params, timeout, key)

    async def _kept_alive(self, pending: Awaitable[Any], wait: Wait) -> Any:
        try:
            return await pending
        finally:
            self.connection.end_wait(wait)

    def _ask_modern(
        self, run: RunHandle, method: str, params: Any, timeout: Timeout, key: str | None
    ) -> Awaitable[Any]:
        if timeout is DEFAULT:
            timeout = self.connection.limits.elicitation_timeout  # how long the call stays parked
        return run.ask(run.question(method, params, key), timeout)  # its coroutine: no frame here

    async def _ask_typed(
        self, method: str, params: Any, result_type: type[T], timeout: Timeout, key: str | None
    ) -> T:
        try:
            answer = await self._ask(method, params, timeout, key)
        except McpError:
            _raise_if_refused(method)
            raise
        return self._typed(method, answer, result_type)

    @staticmethod
    def _typed(method: str, answer: Any, result_type: type[T]) -> T:
        """An answer from :meth:`_ask` as ``result_type`` (``-32602`` if it has the wrong shape)."""
        if isinstance(answer, msgspec.Raw):
            return decode_result(method, answer, result_type)
        if type(answer) is result_type:  # (2026-07-28: a form answer converted as it was kept)
            return answer
        try:
            return msgspec.convert(answer, result_type)
        except msgspec.ValidationError as exc:
            raise McpError(errors.INVALID_PARAMS, f"invalid input response for {method}: {exc}") from None

    def _unsupported(self, kind: str, what: str) -> ElicitationUnsupported:
        from minimcp.wire.envelope import required_capability  # an error path: the 2026-07-28 wire module on demand

        who = self.client_info.name if self.client_info else "the client"
        return ElicitationUnsupported(
            f"{who} cannot {what} on protocol {self.protocol_version}", required=required_capability(kind)
        )

    async def sample(
        self,
        messages: list[SamplingMessage] | str,
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        timeout: Timeout = DEFAULT,
        key: str | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``).

        Raises:
            ElicitationUnsupported: the client did not declare ``sampling`` (before sending).
            McpError: the client refused or failed.
        """
        params = self._sample_params(messages, max_tokens, system_prompt, temperature)
        return await self._ask_typed("sampling/createMessage", params, CreateMessageResult, timeout, key)

    def _sample_params(
        self,
        messages: list[SamplingMessage] | str,
        max_tokens: int,
        system_prompt: str | None,
        temperature: float | None,
    ) -> CreateMessageParams:
        if not capabilities.can_sample(self.client_capabilities):
            raise self._unsupported("sampling", "be asked for a model completion (it did not declare sampling)")
        if isinstance(messages, str):
            messages = [SamplingMessage(role="user", content=TextContent(text=messages))]
        return CreateMessageParams(
            messages=messages,
            max_tokens=max_tokens,
            system_prompt=system_prompt if system_prompt is not None else UNSET,
            temperature=temperature if temperature is not None else UNSET,
        )

    def _require_roots(self) -> None:
        if not capabilities.can_list_roots(self.client_capabilities):
            raise self._unsupported("roots", "list its roots (it did not declare roots)")

    async def list_roots(self, *, timeout: Timeout = DEFAULT, key: str | None = None) -> list[Root]:
        """The client's roots (``roots/list``).

        Raises:
            ElicitationUnsupported: the client did not declare ``roots`` (before sending).
        """
        self._require_roots()
        result = await self._ask_typed("roots/list", msgspec.UNSET, ListRootsResult, timeout, key)
        return result.roots

    @overload
    async def elicit(
        self,
        message: str,
        form: type[T],
        *,
        timeout: float | None = ...,
        allow_sensitive: Collection[str] = ...,
        key: str | None = ...,
    ) -> Accepted[T] | Declined | Cancelled: ...

    @overload
    async def elicit(
        self,
        message: str,
        form: Mapping[str, Any],
        *,
        timeout: float | None = ...,
        allow_sensitive: Collection[str] = ...,
        key: str | None = ...,
    ) -> Accepted[dict[str, Any]] | Declined | Cancelled: ...

    async def elicit(
        self,
        message: str,
        form: Any,
        *,
        timeout: Timeout = DEFAULT,
        allow_sensitive: Collection[str] = (),
        key: str | None = None,
    ) -> Accepted[Any] | Declined | Cancelled:
        """Ask the person a question through the client (form mode) and wait for the answer.

        Args:
            message: The question, shown to the person.
            form: A msgspec Struct, dataclass or TypedDict of flat primitive
                fields, or a raw restricted JSON schema dict.
            timeout: Seconds to wait (default ``limits.elicitation_timeout``).
                On timeout the client is sent ``notifications/cancelled`` and
                the answer is ``Cancelled("timeout")``.
            allow_sensitive: Field names exempt from the secret-name guard.
            key: On revision 2026-07-28, the ``inputRequests`` key of this question
                (default ``q1``, ``q2``, ...); unique within one call. A client may
                then answer it by that key even in its first request.

        Returns:
            ``Accepted(value)`` with the validated, typed value; ``Declined()``;
            or ``Cancelled(reason)``.

        Raises:
            forms.FormDefinitionError: the form cannot be expressed (before sending).
            ElicitationUnsupported: the client did not declare form elicitation
                (before sending).
            forms.FormValidationError: the client's answer breaks the schema.
        """
        run = self.run
        asked: Any  # the question's params (handshake era), or the question of the run
        if run is None:
            asked, compiled = self._form_question(message, form, allow_sensitive)
        else:
            asked, compiled = self._form_asked(run, message, form, allow_sensitive, key)
        del message, form  # a waiting call keeps only what checks the answer (the question is sent)
        if timeout is DEFAULT:
            timeout = self.connection.limits.elicitation_timeout
        # The await is inline (not in a helper coroutine): one frame less for every
        # question that waits on a person.
        self._started()
        try:
            pending = self._ask("elicitation/create", asked, timeout, key) if run is None else run.ask(asked, timeout)
            del asked, run
            answer = await pending
        except errors.RequestTimeout:
            self._outcome("timed_out")
            return Cancelled("timeout")
        except BaseException:
            self._outcome("failed")
            _raise_if_refused("elicitation/create")  # no local for the exception: frames stay as small
            raise
        try:  # (on 2026-07-28 the answer is the ElicitResult it was converted to when kept: as _typed gives it)
            result = answer if type(answer) is ElicitResult else self._typed("elicitation/create", answer, ElicitResult)
        except BaseException:
            self._outcome("failed")
            raise
        return self._form_answer(compiled, result)

    def _form_asked(
        self, run: RunHandle, message: str, form: Any, allow_sensitive: Collection[str], key: str | None
    ) -> tuple[Question, forms.Form[Any]]:
        """A form question of ``run`` (2026-07-28) and its compiled form: made from the form's prepared bytes
        where the schema is its own rendering (:func:`minimcp.wire.input_required.form_question`: the same wire and
        digest),
        else as any question."""
        envelope = self.envelope
        cache = self.connection.form_cache
        plain_type = isinstance(form, type) and not allow_sensitive
        if plain_type and envelope is not None and envelope.form_allowed:
            ready = cache.ready_question(form, envelope.version, message, key)
            if ready is not None:  # a form type asked before on this revision: what the way below gives it
                return ready
        params, compiled = self._form_question(message, form, allow_sensitive)
        version = self.protocol_version
        encoded = compiled.encoded_schema(version, params.requested_schema)
        if encoded is None:
            return run.question("elicitation/create", params, key), compiled
        return cache.form_question(form if plain_type else None, version, params, compiled, encoded, key), compiled

    def _form_question(
        self, message: str, form: Any, allow_sensitive: Collection[str]
    ) -> tuple[ElicitRequestParams, forms.Form[Any]]:
        """The ``elicitation/create`` params of a form question (checks first, nothing sent)."""
        version = self.protocol_version
        conn = self.connection
        mode: Literal["form"] | UnsetType
        # What the handshake allows, worked out once per connection; on 2026-07-28, once per envelope.
        allows = conn if self.envelope is None else self.envelope
        allowed, mode, as_written = allows.form_allowed, allows.form_mode, allows.raw_forms_as_written
        # (the server's form cache: made with its first form question, which loads the forms machinery)
        compiled, given = conn.form_cache.question_form(
            form, allow_sensitive, version, conn.limits.max_form_shapes, as_written=as_written
        )
        if not allowed and not (self.run is not None and self._replaying("elicitation/create", ElicitRequestParams(
            message=message, mode=mode, requested_schema=compiled.schema_for(version) if given is None else given
        ))):
            self.connection.metrics.unsupported(self.tool, "form")
            raise self._unsupported(
                "form", f"answer questions (it did not declare form elicitation); cannot ask: {message}"
            )
        schema = compiled.schema_for(version) if given is None else given
        params = ElicitRequestParams(message=message, mode=mode, requested_schema=schema)
        return params, compiled

    def _form_answer(self, compiled: forms.Form[Any], result: ElicitResult) -> Accepted[Any] | Declined | Cancelled:
        """The answer to a form question, validated (and counted)."""
        if result.action == "accept":
            content = result.content
            if content is UNSET:
                content = {}
            try:  # the answer checked (forms.check), then made typed
                value = compiled.build(content)
            except FormValidationError:
                self._outcome("invalid_answer")
                raise
            self._outcome("accepted")
            return Accepted(value)
        self._outcome("declined" if result.action == "decline" else "cancelled")
        return Declined() if result.action == "decline" else Cancelled("user")

    async def gather(
        self, *, timeout: Timeout = DEFAULT, **questions: Elicit | Sample | ListRoots
    ) -> dict[str, Any]:
        """Ask several things at once: ``await ctx.gather(name=Elicit(...), greeting=Sample(...))``.

        On revision 2026-07-28 they travel in ONE ``input_required`` round (the
        keyword names are the ``inputRequests`` keys); on the handshake era they
        are nested requests sent concurrently. Returns the answers by name: an
        :class:`Elicit` gives ``Accepted`` / ``Declined`` / ``Cancelled``, a
        :class:`Sample` a ``CreateMessageResult``, :class:`ListRoots` a list of roots.
        """
        if timeout is DEFAULT:
            timeout = self.connection.limits.elicitation_timeout
        answers: dict[str, Any] = {}
        run = self.run
        if run is None:

            async def one(name: str, spec: Elicit | Sample | ListRoots) -> None:
                if isinstance(spec, Elicit):
                    answers[name] = await self.elicit(
                        spec.message, spec.form, timeout=timeout, allow_sensitive=spec.allow_sensitive
                    )
                elif isinstance(spec, Sample):
                    answers[name] = await self.sample(spec.messages, max_tokens=spec.max_tokens, timeout=timeout)
                else:
                    answers[name] = await self.list_roots(timeout=timeout)

            async with anyio.create_task_group() as tg:
                for name, spec in questions.items():
                    tg.start_soon(one, name, spec)
            return {name: answers[name] for name in questions}
        prepared: list[tuple[str, Question, Any]] = []
        for name, spec in questions.items():
            if isinstance(spec, Elicit):
                question, compiled = self._form_asked(run, spec.message, spec.form, spec.allow_sensitive, name)
                prepared.append((name, question, compiled))
            elif isinstance(spec, Sample):
                params_s = self._sample_params(spec.messages, spec.max_tokens, None, None)
                prepared.append((name, run.question("sampling/createMessage", params_s, name), None))
            else:
                self._require_roots()
                prepared.append((name, run.question("roots/list", msgspec.UNSET, name), None))
        self._started()
        raw = await run.ask_many([q for _, q, _ in prepared], timeout)
        try:
            for (name, question, compiled), answer in zip(prepared, raw, strict=True):
                if answer is None:  # it came after the timeout: as a timeout on the handshake era
                    if question.method != "elicitation/create":
                        raise errors.RequestTimeout(question.method, timeout if timeout is not None else 0.0)
                    self._outcome("timed_out")
                    answers[name] = Cancelled("timeout")
                elif question.method == "elicitation/create":
                    answers[name] = self._form_answer(compiled, msgspec.convert(answer, ElicitResult))
                elif question.method == "sampling/createMessage":
                    answers[name] = msgspec.convert(answer, CreateMessageResult)
                else:
                    answers[name] = msgspec.convert(answer, ListRootsResult).roots
        except msgspec.ValidationError as exc:
            raise McpError(errors.INVALID_PARAMS, f"invalid input response: {exc}") from None
        return answers

    def _started(self) -> None:
        self.connection.metrics.started(self.tool)
        self._asked_at = time.monotonic()

    def _outcome(self, outcome: str) -> None:
        info = self.client_info
        self.connection.metrics.finished(
            self.tool, outcome, time.monotonic() - self._asked_at, info.name if info else None
        )

    def url_elicitation(self, message: str, url: str, *, elicitation_id: str | None = None) -> UrlElicitation:
        """Prepare a URL step for ``raise UrlElicitationRequired([...])`` (the ``-32042`` path).

        Checks the URL, mints an unguessable id (unless given) and binds it to
        this session, so a later :meth:`Server.complete_url_elicitation` reaches
        this client only. The id is bound to the caller (:attr:`auth`; a minted id carries the binding,
        see :meth:`url_step_id`): a completion with ``person=`` someone else is refused.
        """
        self._require_url_mode(message)
        eid = _checked_url_step(url, elicitation_id)
        auth = self.auth
        if auth is not None and elicitation_id is None:
            eid = self.connection.bind_url_step(eid, auth)
        if not self.modern:
            self.connection.register_url_elicitation(eid, auth)
        return UrlElicitation(message, url, eid)

    def _require_url_mode(self, message: str, url: str | None = None) -> None:
        if not capabilities.can_elicit_url(self.protocol_version, self.client_capabilities) and not (
            url is not None and self._replaying("elicitation/create", ElicitRequestParams(message=message, mode="url",
                                                                                          url=url))
        ):
            self.connection.metrics.unsupported(self.tool, "url")
            raise self._unsupported(
                "url", f"open links (it did not declare URL-mode elicitation); cannot ask: {message}"
            )

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        timeout: Timeout = DEFAULT,
        key: str | None = None,
    ) -> Accepted[str] | Declined | Cancelled:
        """Ask the person to open ``url`` in their browser (URL mode) -- for anything sensitive.

        Payments, third-party sign-in and secrets happen on that page; nothing of
        it crosses MCP. ``Accepted(elicitation_id)`` means only that the person
        agreed to open the page, not that they finished there: learn that from
        your own page or provider, then call :meth:`Server.complete_url_elicitation`.

        Raises:
            ElicitationUnsupported: the client did not declare URL mode (before sending).
            InvalidElicitationUrl: not absolute http(s), has user info, or plain http
                to a non-loopback host (before sending).
        """
        self._require_url_mode(message, url if self.modern else None)
        eid = _checked_url_step(url, elicitation_id)
        conn = self.connection
        auth = self.auth
        if auth is not None and elicitation_id is None:
            eid = conn.bind_url_step(eid, auth)
        if timeout is DEFAULT:
            timeout = conn.limits.elicitation_timeout
        if self.modern:
            # 2026-07-28: no elicitationId on the wire and no completion notice; the id
            # stays the application's own handle for the step.
            params = ElicitRequestParams(message=message, mode="url", url=url)
        else:
            conn.register_url_elicitation(eid, auth)
            params = ElicitRequestParams(message=message, mode="url", elicitation_id=eid, url=url)
        self._started()
        try:
            result = await self._ask_typed("elicitation/create", params, ElicitResult, timeout, key)
        except errors.RequestTimeout:
            conn.forget_url_elicitation(eid)
            self._outcome("timed_out")
            return Cancelled("timeout")
        except BaseException:
            conn.forget_url_elicitation(eid)
            self._outcome("failed")
            raise
        if result.action == "accept":
            self._outcome("accepted")
            return Accepted(eid)
        conn.forget_url_elicitation(eid)
        self._outcome("declined" if result.action == "decline" else "cancelled")
        return Declined() if result.action == "decline" else Cancelled("user")


class AnswerContext(Context):
    """The context of a resource read or a completion: who is calling (:attr:`auth`), what they declared,
    progress and log messages -- but no questions. A read or a completion is answered at once (and on revision
    2026-07-28 it has no rounds), so nothing in it waits for a person: each way of asking raises
    ``RuntimeError`` saying so, before anything is sent (the client gets ``-32603``; the server logs why)."""

    __slots__ = ()

    def can_elicit_form(self) -> bool:
        return False

    def can_elicit_url(self) -> bool:
        return False

    def _refuse(self, what: str) -> NoReturn:
        raise RuntimeError(
            f"ctx.{what}(): a resource reader or a completion handler cannot ask the person or the client "
            "(only a tool or a prompt can); ask from a tool"
        )

    async def elicit(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("elicit")

    async def elicit_url(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("elicit_url")

    def url_elicitation(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("url_elicitation")

    async def sample(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("sample")

    async def list_roots(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("list_roots")

    async def gather(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("gather")
