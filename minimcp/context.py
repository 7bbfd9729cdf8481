"""The tool context: who is calling, and a way to ask them things mid-call.

A :class:`Context` is what a tool (or a prompt) gets as its ``Context``-typed
parameter. It is era-neutral: ``ctx.elicit`` sends a nested ``elicitation/create``
on the handshake era, and becomes an ``input_required`` round on revision
2026-07-28 (see :mod:`minimcp.rounds`) -- the tool's code is the same.

A context reaches the connection serving its call only through
:class:`~minimcp.callhost.CallHost` (and the 2026-07-28 run it executes in through
:class:`~minimcp.callhost.RunHandle`), so this module imports neither
:mod:`minimcp.server` nor :mod:`minimcp.connection`.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import sys
import time
import typing
from collections.abc import Awaitable, Collection, Mapping
from typing import Any, TypeVar, overload

import anyio
import msgspec

from minimcp import capabilities, errors, form_cache, forms
from minimcp.callhost import CallHost, RunHandle
from minimcp.elicitation import (
    Accepted,
    Cancelled,
    Declined,
    ElicitationUnsupported,
    QuestionFailed,
    UrlElicitation,
)
from minimcp.errors import McpError
from minimcp.jsonrpc import RequestId
from minimcp.mrtr import Envelope, Question, required_capability
from minimcp.session import DEFAULT, Session, decode_result
from minimcp.types import (
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
from minimcp.urls import check_elicitation_url
from minimcp.versions import Feature, supports
from minimcp.waiting import Wait

__all__ = ["LOG_LEVELS", "Context", "Elicit", "ListRoots", "Sample"]

T = TypeVar("T")
logger = logging.getLogger("minimcp.context")
#: What a call waits for while its question is open, by method (a URL step by its mode); roots/list waits on no one.
_WAITING_FOR = {
    "elicitation/create": "the person to answer a question",
    "url": "the person to finish a step in their browser",
    "sampling/createMessage": "the client to answer a sampling request",
}
#: How much a keep-alive progress notification raises the call's progress value (relative, at least this).
_NUDGE = 2.0**-20
#: Random bytes in an id this module mints: a call's id (96 bits), a URL elicitation's id (144 bits).
CALL_ID_BYTES = 12
URL_ID_BYTES = 18
#: "Long ago" on the session clock: the first progress notification is never held back.
_NEVER = -1e9

#: The log levels, least severe first (the order of the spec's ``LoggingLevel``).
LOG_LEVELS: tuple[LoggingLevel, ...] = typing.get_args(LoggingLevel)
_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


@dataclasses.dataclass(frozen=True, slots=True)
class Elicit:
    """A form question for :meth:`Context.gather` (like ``ctx.elicit(message, form)``)."""

    message: str
    form: Any
    allow_sensitive: Collection[str] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    """A model completion for :meth:`Context.gather` (like ``ctx.sample(...)``)."""

    messages: list[SamplingMessage] | str
    max_tokens: int


@dataclasses.dataclass(frozen=True, slots=True)
class ListRoots:
    """The client's roots, for :meth:`Context.gather` (like ``ctx.list_roots()``)."""


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
    (progress reported after that is dropped).
    """

    __slots__ = (
        "_asked_at",
        "_call_id",
        "_last_progress",
        "_last_progress_at",
        "connection",
        "envelope",
        "finished",
        "meta",
        "request_id",
        "run",
        "tool",
    )

    def __init__(
        self,
        connection: CallHost,
        request_id: RequestId,
        meta: dict[str, Any] | UnsetType,
        envelope: Envelope | None = None,
        run: RunHandle | None = None,
        *,
        tool: str = "",
    ) -> None:
        #: The connection serving this call (through the narrow :class:`~minimcp.callhost.CallHost` interface).
        self.connection = connection
        #: The name of the tool being called.
        self.tool = tool
        self.request_id = request_id
        self.meta = meta
        #: The request's own envelope on the modern revision (``None`` on the handshake era).
        self.envelope = envelope
        #: The multi round-trip run this call executes in (modern revision only).
        self.run = run
        self.finished = False
        self._call_id: str | None = None
        self._asked_at = 0.0
        self._last_progress: float | None = None
        self._last_progress_at = _NEVER

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
            self._call_id = secrets.token_urlsafe(CALL_ID_BYTES)
        return self._call_id

    @property
    def continued_elsewhere(self) -> bool:
        """True once this copy of a 2026-07-28 call was dropped because its retry continued it on another
        worker (``Server(bus=...)``): the copy is cancelled as an abandoned one would be, but the call goes
        on there, so clean-up must not undo what it made. False on the handshake era."""
        return self.run is not None and self.run.continued_elsewhere

    @property
    def client_info(self) -> Implementation | None:
        if self.envelope is not None:
            return self.envelope.client_info
        return self.connection.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """The capabilities that apply to this call (this request's, on the modern revision)."""
        if self.envelope is not None:
            return self.envelope.capabilities
        return self.connection.client_capabilities

    @property
    def protocol_version(self) -> str:
        if self.envelope is not None:
            return self.envelope.version
        v = self.connection.protocol_version
        assert v is not None
        return v

    def can_elicit_form(self) -> bool:
        """Whether the person can be asked a form question on this call.

        On the modern revision, while a replay hands back recorded answers: yes (the question
        was asked in an earlier round, whatever this retry declares; as when the call is parked).
        """
        if self.envelope is None:
            return self.connection.can_elicit_form()
        return self._replaying() or capabilities.can_elicit_form(self.protocol_version, self.envelope.capabilities)

    def can_elicit_url(self) -> bool:
        """Whether the person can be sent to a URL (URL mode) on this call (replays: as :meth:`can_elicit_form`)."""
        return self._replaying() or capabilities.can_elicit_url(self.protocol_version, self.client_capabilities)

    def _replaying(self, method: str | None = None, params: Any = None) -> bool:
        """Whether the next question (this one, if given) is answered from the sealed record."""
        run = self.run
        if run is None:
            return False
        return run.replays(None if method is None else Question.create(method, params).digest)

    def _ask(self, method: str, params: Any, timeout: float | None, key: str | None = None) -> Awaitable[Any]:
        """Send one question to the client: a nested request, or an input request (modern).

        What it gives is the raw answer, for :meth:`_typed`: on the handshake era the pending
        request itself, awaited without a coroutine of its own while the person answers --
        unless the call asked for progress: then the wait for a person (a form, a URL step,
        sampling) is kept alive with progress (:mod:`minimcp.waiting`).
        """
        if self.run is None:
            pending = self.connection.ask(method, params, timeout, self.request_id)
            if self.meta is not UNSET and method in _WAITING_FOR:  # a person (or their model) answers
                url = getattr(params, "mode", None) == "url"
                wait = self._begin_wait(_WAITING_FOR["url" if url else method])
                if wait is not None:
                    return self._kept_alive(pending, wait)
            return pending
        return self._ask_modern(self.run, method, params, timeout, key)

    async def _kept_alive(self, pending: Awaitable[Any], wait: Wait) -> Any:
        try:
            return await pending
        finally:
            self.connection.end_wait(wait)

    async def _ask_modern(
        self, run: RunHandle, method: str, params: Any, timeout: float | None, key: str | None
    ) -> Any:
        if timeout is DEFAULT:
            timeout = self.connection.limits.elicitation_timeout  # how long the call stays parked
        return await run.ask(Question.create(method, params, key), timeout)

    async def _ask_typed(
        self, method: str, params: Any, result_type: type[T], timeout: float | None, key: str | None
    ) -> T:
        try:
            answer = await self._ask(method, params, timeout, key)
        except McpError:
            _raise_if_refused(method)
            raise
        return self._typed(method, answer, result_type)

    def _begin_wait(self, what: str) -> Wait | None:
        """Keep the call alive with progress while a person answers (handshake era: on 2026-07-28 no
        request stays open meanwhile), if the call carried a progress token."""
        if self.progress_token is None:
            return None
        return self.connection.begin_wait(self, what)

    async def _still_waiting(self, what: str, interval: float) -> None:
        """One keep-alive progress notification (see :mod:`minimcp.waiting`), unless one went out lately.

        Its ``progress`` is the call's last value nudged up by a hair (the spec wants each value
        higher than the last; nothing advances while the person thinks), so the tool's own later
        reports still count; its ``message`` says what the call waits for.
        """
        token = self.progress_token
        if token is None or self.finished:
            return
        now = self.session.now()
        if now - self._last_progress_at < interval / 2:
            return  # another question of this call (ctx.gather) just sent one
        last = self._last_progress if self._last_progress is not None else 0.0
        progress = last + max(abs(last), 1.0) * _NUDGE
        self._last_progress = progress
        self._last_progress_at = now
        await self.session.notify(
            "notifications/progress",
            ProgressParams(progress_token=token, progress=progress, message=f"waiting for {what}"),
            related=self.request_id,
        )

    @staticmethod
    def _typed(method: str, answer: Any, result_type: type[T]) -> T:
        """An answer from :meth:`_ask` as ``result_type`` (``-32602`` if it has the wrong shape)."""
        if isinstance(answer, msgspec.Raw):
            return decode_result(method, answer, result_type)
        try:
            return msgspec.convert(answer, result_type)
        except msgspec.ValidationError as exc:
            raise McpError(errors.INVALID_PARAMS, f"invalid input response for {method}: {exc}") from None

    def _unsupported(self, kind: str, what: str) -> ElicitationUnsupported:
        who = self.client_info.name if self.client_info else "the client"
        return ElicitationUnsupported(
            f"{who} cannot {what} on protocol {self.protocol_version}", required=required_capability(kind)
        )

    @property
    def progress_token(self) -> int | str | None:
        if isinstance(self.meta, dict):
            token = self.meta.get("progressToken")
            if type(token) in (int, str):
                return typing.cast("int | str", token)
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
        if self._last_progress is not None and progress <= self._last_progress:
            return False
        now = self.session.now()
        final = total is not None and progress >= total
        if not final and now - self._last_progress_at < self.connection.limits.progress_interval:
            return False
        self._last_progress = progress
        self._last_progress_at = now
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

    async def sample(
        self,
        messages: list[SamplingMessage] | str,
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        timeout: float | None = DEFAULT,
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

    async def list_roots(self, *, timeout: float | None = DEFAULT, key: str | None = None) -> list[Root]:
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
        timeout: float | None = DEFAULT,
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
        params, compiled = self._form_question(message, form, allow_sensitive)
        del message, form  # a waiting call keeps only what checks the answer (the question is sent)
        if timeout is DEFAULT:
            timeout = self.connection.limits.elicitation_timeout
        # The await is inline (not in a helper coroutine): one frame less for every
        # question that waits on a person.
        self._started()
        try:
            pending = self._ask("elicitation/create", params, timeout, key)
            del params
            answer = await pending
        except errors.RequestTimeout:
            self._outcome("timed_out")
            return Cancelled("timeout")
        except BaseException:
            self._outcome("failed")
            _raise_if_refused("elicitation/create")  # no local for the exception: frames stay as small
            raise
        try:
            result = self._typed("elicitation/create", answer, ElicitResult)
        except BaseException:
            self._outcome("failed")
            raise
        return self._form_answer(compiled, result)

    def _form_question(
        self, message: str, form: Any, allow_sensitive: Collection[str]
    ) -> tuple[ElicitRequestParams, forms.Form[Any]]:
        """The ``elicitation/create`` params of a form question (checks first, nothing sent)."""
        version = self.protocol_version
        compiled, given = form_cache.question_form(
            form, allow_sensitive, version, self.connection.limits.max_form_shapes
        )
        if self.envelope is None:
            allowed, mode = self.connection.form_questions()  # worked out once per connection
        else:
            allowed = capabilities.can_elicit_form(version, self.envelope.capabilities)
            mode = "form" if supports(version, Feature.ELICITATION_URL) else UNSET
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
            content = result.content if not isinstance(result.content, UnsetType) else {}
            try:
                value = compiled.build(content)
            except forms.FormValidationError:
                self._outcome("invalid_answer")
                raise
            self._outcome("accepted")
            return Accepted(value)
        self._outcome("declined" if result.action == "decline" else "cancelled")
        return Declined() if result.action == "decline" else Cancelled("user")

    async def gather(
        self, *, timeout: float | None = DEFAULT, **questions: Elicit | Sample | ListRoots
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
                params, compiled = self._form_question(spec.message, spec.form, spec.allow_sensitive)
                prepared.append((name, Question.create("elicitation/create", params, name), compiled))
            elif isinstance(spec, Sample):
                params_s = self._sample_params(spec.messages, spec.max_tokens, None, None)
                prepared.append((name, Question.create("sampling/createMessage", params_s, name), None))
            else:
                self._require_roots()
                prepared.append((name, Question.create("roots/list", msgspec.UNSET, name), None))
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
        this client only.
        """
        self._require_url_mode(message)
        check_elicitation_url(url)
        eid = elicitation_id or secrets.token_urlsafe(URL_ID_BYTES)
        if not self.modern:
            self.connection.register_url_elicitation(eid)
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
        timeout: float | None = DEFAULT,
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
        check_elicitation_url(url)
        eid = elicitation_id or secrets.token_urlsafe(URL_ID_BYTES)
        conn = self.connection
        if timeout is DEFAULT:
            timeout = conn.limits.elicitation_timeout
        if self.modern:
            # 2026-07-28: no elicitationId on the wire and no completion notice; the id
            # stays the application's own handle for the step.
            params = ElicitRequestParams(message=message, mode="url", url=url)
        else:
            conn.register_url_elicitation(eid)
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
