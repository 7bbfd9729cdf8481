"""The client's answers to the server's questions: elicitation (form and URL), sampling, roots.

:class:`Answers` is a base of :class:`minimcp.Client`: what the client declares
(:meth:`Answers.capabilities`), the Dispatcher side of its session (the server's
requests and notifications, handshake era), and the answers themselves, which
revision 2026-07-28's ``input_required`` rounds reuse (:mod:`minimcp.client.rounds`).
While a handler runs (a person is reading the question) the clocks of our pending
requests are paused, up to ``limits.max_request_time``.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from minimcp import forms
from minimcp.core.config import Limits
from minimcp.core.session import Session
from minimcp.wire import errors, jsonrpc
from minimcp.wire.elicitation import Accepted, Cancelled, Declined, action_of
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import Notification, Request
from minimcp.wire.types import (
    UNSET,
    ClientCapabilities,
    CreateMessageParams,
    CreateMessageResult,
    ElicitationCompleteParams,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    ListRootsResult,
    LoggingMessageParams,
    Root,
    UnsetType,
)
from minimcp.wire.urls import UrlInfo, inspect_url
from minimcp.wire.versions import LATEST, Era, Feature, supports

__all__ = [
    "Answers",
    "ElicitationHandler",
    "ElicitationRequest",
    "SamplingHandler",
    "UrlElicitationRequest",
    "UrlHandler",
    "open_in_browser",
]

logger = logging.getLogger("minimcp.client")


@dataclasses.dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A question from the server, as the elicitation handler sees it.

    Attributes:
        message: The question text.
        form: The requested schema, parsed (form mode).
        server_name: Who is asking (show it to the person).
        protocol_version: The negotiated revision.
    """

    message: str
    form: forms.Form[dict[str, Any]]
    server_name: str
    protocol_version: str


ElicitationHandler = Callable[[ElicitationRequest], Awaitable["Accepted[dict[str, Any]] | Declined | Cancelled"]]
SamplingHandler = Callable[[CreateMessageParams], Awaitable[CreateMessageResult]]


@dataclasses.dataclass(frozen=True, slots=True)
class UrlElicitationRequest:
    """A request to open a URL (URL mode), as the URL handler sees it.

    Show the person :attr:`message`, the full :attr:`url`, and the host apart
    from it (:attr:`info`), warn when ``info.warning`` is set, and open the page
    only with their consent (:func:`open_in_browser`). Nothing is fetched by
    the library.

    Attributes:
        message: Why the server wants the page opened.
        url: The full URL, exactly as sent.
        info: Host (IDNA-decoded), punycode / mixed-script flags, scheme.
        elicitation_id: The server's id for this step.
        server_name: Who is asking.
    """

    message: str
    url: str
    info: UrlInfo
    elicitation_id: str
    server_name: str


UrlHandler = Callable[[UrlElicitationRequest], Awaitable["Accepted[Any] | Declined | Cancelled"]]


async def open_in_browser(url: str) -> bool:
    """Open ``url`` in the system browser (only call this after the person consented)."""
    import webbrowser

    return await anyio.to_thread.run_sync(webbrowser.open, url)


class Answers:
    """What the client declares and how it answers the server (a base of :class:`minimcp.Client`,
    whose ``__init__`` sets these attributes)."""

    elicitation_handler: ElicitationHandler | None
    url_handler: UrlHandler | None
    on_elicitation_complete: Callable[[str], None] | None
    sampling_handler: SamplingHandler | None
    roots: list[Root] | None
    logging_handler: Callable[[LoggingMessageParams], None] | None
    on_notification: Callable[[str, Any], None] | None
    fill_defaults: bool
    requested_version: str
    protocol_version: str | None
    era: Era | None
    limits: Limits
    session: Session
    server_info: Implementation | None
    # URL elicitation ids we agreed to open and await completion of (bounded, oldest dropped).
    _url_waits: collections.OrderedDict[str, anyio.Event]

    def capabilities(self, version: str | None = None) -> ClientCapabilities:
        """What this client declares on ``version`` (default: the negotiated revision, else the
        one it offers): only what it has a handler for and that revision has."""
        version = version or self.protocol_version or self.requested_version
        modes: dict[str, Any] = {}
        if supports(version, Feature.ELICITATION):
            if self.elicitation_handler is not None:
                modes["form"] = {}
            if self.url_handler is not None and supports(version, Feature.ELICITATION_URL):
                modes["url"] = {}
        return ClientCapabilities(
            elicitation=modes if modes else UNSET,
            sampling={} if self.sampling_handler is not None else UNSET,
            roots={"listChanged": True} if self.roots is not None else UNSET,
        )

    async def wait_elicitation_complete(self, elicitation_id: str, *, timeout: float | None = None) -> bool:
        """Wait until the server reports URL elicitation ``elicitation_id`` complete.

        Returns ``False`` on timeout (the server may never send the notice: the
        spec makes it optional), ``True`` once it arrived.
        """
        event = self._url_waits.get(elicitation_id)
        if event is None:
            event = self._track_url(elicitation_id)
        if event.is_set():
            return True
        with anyio.move_on_after(timeout):
            await event.wait()
        return event.is_set()

    def _track_url(self, elicitation_id: str) -> anyio.Event:
        event = self._url_waits.get(elicitation_id)
        if event is None:
            event = self._url_waits[elicitation_id] = anyio.Event()
            while len(self._url_waits) > self.limits.max_pending_outbound:
                self._url_waits.popitem(last=False)
        return event

    # --- Dispatcher protocol -----------------------------------------------------------------

    async def handle_request(
        self, session: Session, request: Request
    ) -> ElicitResult | CreateMessageResult | ListRootsResult | dict[str, object]:
        method = request.method
        if method == "ping":  # a ping with params (the session answers bare ones itself)
            return {}
        if method == "elicitation/create":
            return await self._elicit(request)
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            params = jsonrpc.decode_params(request.params, CreateMessageParams)
            return await self.sampling_handler(params)
        if method == "roots/list" and self.roots is not None:
            return ListRootsResult(roots=list(self.roots))
        raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        method = notification.method
        if method == "notifications/elicitation/complete":
            self._on_complete(notification)
            return
        if method == "notifications/message" and self.logging_handler is not None:
            try:
                message = jsonrpc.decode_params(notification.params, LoggingMessageParams)
            except McpError:
                return
            try:
                self.logging_handler(message)
            except Exception:
                logger.exception("logging handler failed")
            return
        if self.on_notification is not None:
            params = msgspec.json.decode(notification.params) if notification.params else {}
            try:
                self.on_notification(method, params)
            except Exception:
                logger.exception("notification callback failed")

    def _on_complete(self, notification: Notification) -> None:
        try:
            params = jsonrpc.decode_params(notification.params, ElicitationCompleteParams)
        except McpError:
            return
        event = self._url_waits.get(params.elicitation_id)
        if event is None or event.is_set():
            logger.debug("completion for unknown or finished elicitation %r ignored", params.elicitation_id)
            return  # unknown or repeated ids are ignored (spec)
        event.set()
        if self.on_elicitation_complete is not None:
            try:
                self.on_elicitation_complete(params.elicitation_id)
            except Exception:
                logger.exception("on_elicitation_complete callback failed")

    async def _ask_url(
        self, message: str, url: str, elicitation_id: str, *, track: bool = True
    ) -> Accepted[Any] | Declined | Cancelled:
        assert self.url_handler is not None
        request = UrlElicitationRequest(
            message=message,
            url=url,
            info=inspect_url(url),
            elicitation_id=elicitation_id,
            server_name=self.server_info.name if self.server_info else "server",
        )
        # Track the id before asking: the page may be completed (and the server
        # say so) before the person's consent reaches the server.
        if track:
            self._track_url(elicitation_id)
        answer: Accepted[Any] | Declined | Cancelled | None = None
        self.session.begin_human_wait()
        try:
            answer = await self.url_handler(request)
        finally:
            self.session.end_human_wait()
            if not isinstance(answer, Accepted):
                self._url_waits.pop(elicitation_id, None)
        return answer

    async def _elicit_url(self, params: ElicitRequestParams) -> ElicitResult:
        if self.url_handler is None:
            raise McpError(errors.INVALID_PARAMS, "this client did not declare URL-mode elicitation")
        if isinstance(params.url, UnsetType):
            raise McpError(errors.INVALID_PARAMS, "URL-mode elicitation needs a url")
        if isinstance(params.elicitation_id, UnsetType):
            if self.era != Era.MODERN:
                raise McpError(errors.INVALID_PARAMS, "URL-mode elicitation needs an elicitationId")
            # 2026-07-28 has no elicitationId (and no completion notice): a local one for the handler.
            answer = await self._ask_url(params.message, params.url, f"local-{secrets.token_urlsafe(9)}", track=False)
            return ElicitResult(action=action_of(answer))
        answer = await self._ask_url(params.message, params.url, params.elicitation_id)
        return ElicitResult(action=action_of(answer))

    async def _elicit(self, request: Request) -> ElicitResult:
        if self.elicitation_handler is None and self.url_handler is None:
            raise McpError(errors.METHOD_NOT_FOUND, "this client does not support elicitation")
        version = self.protocol_version or self.requested_version
        if not supports(version, Feature.ELICITATION):
            raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: revision {version} has no elicitation/create")
        return await self._answer_elicitation(jsonrpc.decode_params(request.params, ElicitRequestParams))

    async def _answer_elicitation(self, params: ElicitRequestParams) -> ElicitResult:
        handler = self.elicitation_handler
        if params.mode == "url":
            version = self.protocol_version or self.requested_version
            if not supports(version, Feature.ELICITATION_URL):
                raise McpError(errors.INVALID_PARAMS, f"revision {version} has no URL-mode elicitation")
            return await self._elicit_url(params)
        if handler is None:
            raise McpError(errors.INVALID_PARAMS, "this client did not declare form-mode elicitation")
        if isinstance(params.requested_schema, UnsetType):
            raise McpError(errors.INVALID_PARAMS, "form elicitation without requestedSchema")
        try:
            form = forms.parse_schema(params.requested_schema)
        except forms.FormDefinitionError as exc:
            raise McpError(errors.INVALID_PARAMS, f"unsupported requestedSchema: {exc}") from None
        version = self.protocol_version or LATEST
        question = ElicitationRequest(
            message=params.message,
            form=form,
            server_name=self.server_info.name if self.server_info else "server",
            protocol_version=version,
        )
        self.session.begin_human_wait()
        try:
            answer = await handler(question)
        finally:
            self.session.end_human_wait()
        if isinstance(answer, Accepted):
            content = dict(answer.value) if answer.value is not None else {}
            if self.fill_defaults:
                content = form.fill_defaults(content)
            try:
                content = form.validate(content)
            except forms.FormValidationError as exc:
                logger.error("elicitation handler answered with invalid content: %s", exc)
                raise McpError(
                    errors.INTERNAL_ERROR,
                    f"the client's answer did not match the form: {exc}",
                    {"field": exc.field, "constraint": exc.constraint},
                ) from None
            return ElicitResult(action="accept", content=content)
        return ElicitResult(action=action_of(answer))
