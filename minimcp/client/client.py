"""The client role: ``Client`` -- connect, the handshake, and the calls (tools, resources, prompts, completion).

::

    async with minimcp.connect_stdio([sys.executable, "server.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

:class:`Client` is one class, in three parts: its lifecycle, ``initialize`` and the calls; what it
declares and how it answers the server's questions (elicitation, sampling, roots) and notifications,
through the handlers of :mod:`minimcp.client.answers`; and revision 2026-07-28 -- the era choice
(``server/discover`` probe), the per-request envelope, ``input_required`` rounds -- which a first
reading may skip.

Beside it, :mod:`minimcp.client.headers` decides which tools a 2026-07-28 client may
call over HTTP and which ``Mcp-Param-*`` headers each request carries (the HTTP
transport asks it per request).

A client declares a capability only when it really has it: ``elicitation`` is
declared only when an elicitation handler is set and the revision offered has
elicitation (``elicitation/create`` is answered only where the negotiated revision
has it). The handler runs in its own task; while it runs (a person is reading the
question), the clocks of our pending requests are paused, so a ``tools/call`` does
not time out because its tool is waiting for the person -- up to
``limits.max_request_time``.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio
import msgspec

from minimcp import forms
from minimcp.client.answers import (
    ElicitationHandler,
    ElicitationRequest,
    SamplingHandler,
    UrlElicitationRequest,
    UrlHandler,
)
from minimcp.client.headers import ToolHeaders, headered
from minimcp.core._requests import DEFAULT, Timeout, decode_result
from minimcp.core.config import Limits
from minimcp.core.pending import ProgressWatch
from minimcp.core.session import Session
from minimcp.core.trace import WireTrace
from minimcp.core.transport import Transport
from minimcp.wire import errors, jsonrpc
from minimcp.wire.elicitation import Accepted, Cancelled, Declined, UrlElicitationRequired, action_of
from minimcp.wire.envelope import (
    HEADER_MISMATCH,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
)
from minimcp.wire.errors import ConnectionClosed, McpError, UnsupportedVersion
from minimcp.wire.jsonrpc import Notification, Request
from minimcp.wire.types import (
    UNSET,
    CallToolParams,
    CallToolResult,
    ClientCapabilities,
    CompleteParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CreateMessageParams,
    CreateMessageResult,
    ElicitationCompleteParams,
    ElicitRequestParams,
    ElicitResult,
    GetPromptParams,
    GetPromptResult,
    Implementation,
    InitializeParams,
    InitializeResult,
    JSONObject,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    LoggingLevel,
    LoggingMessageParams,
    PaginatedParams,
    ProgressParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceParams,
    ResourceTemplate,
    Root,
    ServerCapabilities,
    SetLevelParams,
    Tool,
    UnsetType,
)
from minimcp.wire.urls import inspect_url
from minimcp.wire.versions import (
    LATEST,
    LATEST_MODERN,
    META_VERSION,
    SUPPORTED,
    Era,
    Feature,
    is_modern,
    is_supported,
    supports,
)

__all__ = ["Client", "connect_stdio"]


logger = logging.getLogger("minimcp.client")
T = TypeVar("T")

#: The values ``Client(era=...)`` accepts (an :class:`Era`, or ``"auto"`` to probe); the first is the default.
ERAS: tuple[str, ...] = (Era.LEGACY.value, Era.MODERN.value, "auto")


def _check_era(era: object) -> None:
    if era not in ERAS:
        choices = ", ".join(repr(e) for e in ERAS)
        raise ValueError(f"unknown era {era!r}: choose one of {choices} (default {ERAS[0]!r})")



class _InputRequest(msgspec.Struct):
    method: str
    params: dict[str, Any] = {}


class _ResultKind(msgspec.Struct, rename="camel"):
    """What a 2026-07-28 result is (``complete`` or ``input_required``), with its questions and state."""

    result_type: str = "complete"  # absent means complete (older servers)
    input_requests: dict[str, _InputRequest] | None = None
    request_state: str | UnsetType = UNSET


def _supported(exc: McpError) -> list[str]:
    """``data.supported`` of a -32022 error (the revisions the server speaks)."""
    offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
    return [v for v in offered if isinstance(v, str)] if isinstance(offered, list) else []


class Client:
    """An MCP client over one transport. Use as an async context manager.

    Args:
        transport: The connection to the server.
        name: ``clientInfo.name``.
        version: ``clientInfo.version``.
        elicitation_handler: Answers form questions; declaring it declares the
            ``elicitation.form`` capability.
        url_handler: Asks the person's consent to open a URL; declaring it
            declares ``elicitation.url``.
        on_elicitation_complete: Called with the id of each URL elicitation the
            server reports complete.
        sampling_handler: Answers ``sampling/createMessage``; declares ``sampling``.
        roots: The roots to offer (``roots/list``); declares ``roots``. Change
            them with :meth:`set_roots`.
        logging_handler: Receives ``notifications/message`` from the server.
        on_notification: Receives every other server notification as
            ``(method, params)`` (list changes, resource updates, ...).
        fill_defaults: Fill fields the handler left out from the schema's
            defaults before validating and sending.
        protocol_version: The handshake revision to offer (default: the latest).
        era: ``Era.LEGACY`` / ``"legacy"`` (the default): the ``initialize`` handshake (every deployed
            server speaks it); ``Era.MODERN`` / ``"modern"``: revision 2026-07-28, no handshake, questions
            come back as ``input_required`` results answered by the same handlers;
            ``"auto"``: probe with ``server/discover`` and fall back to the handshake.
            Anything else raises :class:`ValueError`.
        probe_timeout: Seconds the ``auto`` probe waits for an answer.
        max_rounds: Most ``input_required`` rounds one call may take (modern).
        limits: Bounds and timeouts.
        trace: Record every message (see :mod:`minimcp.core.trace`).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str = "minimcp-client",
        version: str = "0.1.0",
        elicitation_handler: ElicitationHandler | None = None,
        url_handler: UrlHandler | None = None,
        on_elicitation_complete: Callable[[str], None] | None = None,
        sampling_handler: SamplingHandler | None = None,
        roots: list[Root] | None = None,
        logging_handler: Callable[[LoggingMessageParams], None] | None = None,
        on_notification: Callable[[str, Any], None] | None = None,
        fill_defaults: bool = True,
        protocol_version: str = LATEST,
        era: Era | Literal["legacy", "modern", "auto"] = Era.LEGACY,
        probe_timeout: float = 5.0,
        max_rounds: int = 10,
        limits: Limits | None = None,
        trace: WireTrace | None = None,
    ) -> None:
        _check_era(era)
        self.info = Implementation(name=name, version=version)
        self.elicitation_handler = elicitation_handler
        self.url_handler = url_handler
        self.on_elicitation_complete = on_elicitation_complete
        self.sampling_handler = sampling_handler
        self.roots = roots
        self.logging_handler = logging_handler
        self.on_notification = on_notification
        self._progress_tokens = itertools.count(1)
        # URL elicitation ids we agreed to open and await completion of (bounded, oldest dropped).
        self._url_waits: collections.OrderedDict[str, anyio.Event] = collections.OrderedDict()
        self.fill_defaults = fill_defaults
        self.requested_version = protocol_version
        #: The era asked for: an :class:`Era`, or ``"auto"`` (probe).
        self.requested_era: Era | Literal["auto"] = "auto" if era == "auto" else Era(era)
        #: The era in use once connected.
        self.era: Era | None = None
        self.probe_timeout = probe_timeout
        self.max_rounds = max_rounds
        self._log_level: LoggingLevel | None = None
        self.limits = limits or Limits()
        self.session = Session(transport, self, limits=self.limits, name=f"client {name}")
        self.session.trace = trace
        # Over a transport that mirrors requests into HTTP headers, which tools may be called and
        # which Mcp-Param-* headers their calls carry are decided here (2026-07-28; minimcp.client.headers).
        self._tool_headers: ToolHeaders | None = None
        mirroring = headered(transport)
        if mirroring is not None:
            self._tool_headers = ToolHeaders()
            mirroring.request_headers = self._tool_headers.request_headers
        self.server_info: Implementation | None = None
        self.server_capabilities = ServerCapabilities()
        self.instructions: str | None = None
        self.protocol_version: str | None = None
        self._stack: contextlib.AsyncExitStack | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        stack = contextlib.AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        await tg.start(self.session.run)
        stack.callback(self.session.close)
        try:
            await self._connect()
        except BaseException:
            # Leave the task group cleanly, then raise the handshake error itself
            # (not wrapped in an exception group).
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection; pending calls fail with ConnectionClosed."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _connect(self) -> None:
        if await self._choose_era():
            await self.initialize()

    async def initialize(self) -> InitializeResult:
        """The handshake (done by ``async with``)."""
        params = InitializeParams(
            protocol_version=self.requested_version,
            capabilities=self.capabilities(self.requested_version),
            client_info=self.info,
        )
        result = await self.session.request("initialize", params, result_type=InitializeResult)
        if not is_supported(result.protocol_version):
            self.session.close()
            raise UnsupportedVersion(result.protocol_version, SUPPORTED)
        self.era = Era.LEGACY
        self.protocol_version = result.protocol_version
        self.session.protocol_version = result.protocol_version
        self.server_info = result.server_info
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions
        await self.session.notify("notifications/initialized")
        return result

    # --- calls -------------------------------------------------------------------------------

    async def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Round trip to the server (handshake era; revision 2026-07-28 has no ping)."""
        await self.session.request("ping", timeout=timeout)

    async def list_tools(self, *, timeout: Timeout = DEFAULT) -> list[Tool]:
        """All tools, following ``nextCursor`` pages.

        On revision 2026-07-28 over HTTP, a tool whose ``x-mcp-header`` declarations break
        the rules is left out (it could not be called with the right headers), and the
        others' declarations decide the ``Mcp-Param-*`` headers of their calls
        (:mod:`minimcp.client.headers`).
        """
        tools: list[Tool] = await self._all_pages("tools/list", "tools", ListToolsResult, timeout)
        if self.era == Era.MODERN and self._tool_headers is not None:
            return self._tool_headers.usable(tools)
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        meta: dict[str, Any] | None = None,
        on_progress: Callable[[ProgressParams], None] | None = None,
        reset_timeout_on_progress: bool = False,
    ) -> CallToolResult:
        """Call a tool. A tool error comes back as a result with ``is_error``.

        With ``on_progress`` the call asks for progress notifications and hands
        each to the callback; with ``reset_timeout_on_progress`` each one also
        restarts the timeout (never beyond ``limits.max_request_time``).

        Raises:
            McpError: a protocol error (unknown tool: ``-32602``).
            RequestTimeout: no answer in ``timeout`` seconds (the server was told to stop).
        """
        watch: ProgressWatch | None = None
        if on_progress is not None or reset_timeout_on_progress:
            watch = ProgressWatch(f"p{next(self._progress_tokens)}", on_progress, reset_timeout_on_progress)
            meta = {**(meta or {}), "progressToken": watch.token}
        params = CallToolParams(
            name=name,
            arguments=arguments if arguments is not None else UNSET,
            meta=meta if meta is not None else UNSET,
        )
        try:
            return await self._rounds("tools/call", params, CallToolResult, timeout, watch)
        except McpError as exc:
            if exc.code == errors.URL_ELICITATION_REQUIRED and not isinstance(exc, UrlElicitationRequired):
                raise UrlElicitationRequired.from_error(exc) from None
            raise

    async def call_tool_with_consent(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        completion_timeout: float | None = 600.0,
        max_rounds: int = 3,
    ) -> CallToolResult:
        """Call a tool; on ``-32042``, run the URL steps through the URL handler, then retry.

        For each listed step the URL handler asks the person's consent (and may
        open the page); the call is retried once every accepted step is reported
        complete by the server, or -- when a server never reports completion --
        after ``completion_timeout``.

        Raises:
            UrlElicitationRequired: the person declined or cancelled a step, or
                the steps were still required after ``max_rounds`` attempts.
        """
        for _ in range(max_rounds):
            try:
                return await self.call_tool(name, arguments, timeout=timeout)
            except UrlElicitationRequired as required:
                if self.url_handler is None:
                    raise
                for item in required.elicitations:
                    answer = await self._ask_url(item.message, item.url, item.elicitation_id)
                    if not isinstance(answer, Accepted):
                        raise
                for item in required.elicitations:
                    await self.wait_elicitation_complete(item.elicitation_id, timeout=completion_timeout)
        return await self.call_tool(name, arguments, timeout=timeout)

    async def _all_pages(self, method: str, key: str, result_type: Any, timeout: Timeout) -> list[Any]:
        items: list[Any] = []
        cursor: str | UnsetType = UNSET
        for _ in range(10_000):
            page = await self._request(method, PaginatedParams(cursor=cursor), result_type, timeout)
            items.extend(getattr(page, key))
            if isinstance(page.next_cursor, UnsetType) or not page.next_cursor:
                return items
            cursor = page.next_cursor
        raise McpError(errors.INVALID_REQUEST, f"server returned more than 10,000 pages for {method}")

    async def list_resources(self, *, timeout: Timeout = DEFAULT) -> list[Resource]:
        """All resources, following cursors."""
        return await self._all_pages("resources/list", "resources", ListResourcesResult, timeout)

    async def list_resource_templates(self, *, timeout: Timeout = DEFAULT) -> list[ResourceTemplate]:
        """All resource templates, following cursors."""
        return await self._all_pages(
            "resources/templates/list", "resource_templates", ListResourceTemplatesResult, timeout
        )

    async def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> list[ResourceContents]:
        """The contents of a resource (text in ``.text``, binary base64 in ``.blob``)."""
        result = await self._rounds("resources/read", ResourceParams(uri=uri), ReadResourceResult, timeout, None)
        return result.contents

    async def subscribe(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_notification``)."""
        await self.session.request("resources/subscribe", ResourceParams(uri=uri), timeout=timeout)

    async def unsubscribe(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        await self.session.request("resources/unsubscribe", ResourceParams(uri=uri), timeout=timeout)

    async def list_prompts(self, *, timeout: Timeout = DEFAULT) -> list[Prompt]:
        """All prompts, following cursors."""
        return await self._all_pages("prompts/list", "prompts", ListPromptsResult, timeout)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: Timeout = DEFAULT
    ) -> GetPromptResult:
        """A prompt filled in with ``arguments``."""
        params = GetPromptParams(name=name, arguments=arguments if arguments is not None else UNSET)
        return await self._rounds("prompts/get", params, GetPromptResult, timeout, None)

    async def complete(
        self,
        ref: Mapping[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
        timeout: Timeout = DEFAULT,
    ) -> Completion:
        """Suggestions for an argument (``ref``: ``{"type": "ref/prompt", "name": ...}`` or a resource ref)."""
        params = CompleteParams(
            ref=dict(ref),
            argument=CompletionArgument(name=argument, value=value),
            context={"arguments": context} if context else UNSET,
        )
        result = await self._request("completion/complete", params, CompleteResult, timeout)
        return result.completion

    async def set_logging_level(self, level: LoggingLevel, *, timeout: Timeout = DEFAULT) -> None:
        """Ask the server to send log messages of ``level`` and above.

        On revision 2026-07-28 the level travels in each request's ``_meta`` instead.
        """
        if self.era == Era.MODERN:
            self._log_level = level
            return
        await self.session.request("logging/setLevel", SetLevelParams(level=level), timeout=timeout)

    async def set_roots(self, roots: list[Root]) -> None:
        """Change the roots offered and tell the server (``notifications/roots/list_changed``)."""
        self.roots = list(roots)
        await self.session.notify("notifications/roots/list_changed")

    # --- what the client declares, and how it answers the server (its session's Dispatcher) ---------

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


    # --- revision 2026-07-28: the era, the per-request envelope, input_required rounds -------------

    async def _choose_era(self) -> bool:
        """Settle the era asked for; ``True`` when it is the handshake's (``initialize`` is still to send)."""
        era = self.requested_era
        if era == Era.LEGACY:
            return True
        if era == Era.MODERN:
            self._use_modern(LATEST_MODERN)
            return False
        # auto: probe; a discover result naming a modern revision means modern, anything else
        # (an error, silence) means the handshake -- never keyed on one error code.
        self._use_modern(LATEST_MODERN)
        for attempt in range(2):
            try:
                with anyio.fail_after(self.probe_timeout):
                    found = await self.discover(timeout=None)
            except ConnectionClosed:
                raise  # the transport is gone (an HTTP 401/403/5xx, say): not evidence of an era
            except (McpError, TimeoutError) as exc:
                if isinstance(exc, McpError):
                    if exc.code in (HEADER_MISMATCH, MISSING_CAPABILITY):
                        return False  # errors only a modern server gives: it is one
                    if exc.code == UNSUPPORTED_VERSION:
                        offered = _supported(exc)
                        mutual = [v for v in offered if is_modern(v)]
                        if mutual and attempt == 0:
                            self._use_modern(mutual[-1])  # re-probe once with a revision we share
                            continue
                        if offered and not any(v in SUPPORTED for v in offered):
                            raise  # a modern-only server speaking none of our revisions: no handshake
                logger.debug("server/discover probe failed (%s): using the handshake", exc)
                found = None
            versions = found.get("supportedVersions") if found is not None else None
            if isinstance(versions, list) and any(is_modern(v) for v in versions if isinstance(v, str)):
                return False
            break
        self.era = None
        self.protocol_version = None
        self.session.protocol_version = None
        return True

    def _use_modern(self, version: str) -> None:
        self.era = Era.MODERN
        self.protocol_version = version
        self.session.protocol_version = version
        self.session.answer_ping = False

    def _envelope(self, extra: dict[str, Any] | UnsetType | None = None) -> dict[str, Any] | UnsetType:
        """``params._meta`` for a request: the modern envelope plus ``extra``."""
        if self.era != Era.MODERN:
            return extra if extra else UNSET
        meta: dict[str, Any] = {
            META_VERSION: self.protocol_version,
            META_CAPABILITIES: msgspec.to_builtins(self.capabilities()),
            META_CLIENT_INFO: msgspec.to_builtins(self.info),
        }
        if self._log_level is not None:
            meta[META_LOG_LEVEL] = self._log_level
        if isinstance(extra, dict):
            meta.update(extra)
        return meta

    async def discover(self, *, timeout: Timeout = DEFAULT) -> JSONObject:
        """``server/discover`` (revision 2026-07-28): supported versions, capabilities, server info."""
        raw = await self.session.request("server/discover", {"_meta": self._envelope()}, timeout=timeout)
        found: JSONObject = msgspec.json.decode(raw)
        meta = found.get("_meta")
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        if isinstance(info, dict):
            self.server_info = msgspec.convert(info, Implementation)
        caps = found.get("capabilities")
        if isinstance(caps, dict):
            self.server_capabilities = msgspec.convert(caps, ServerCapabilities)
        instructions = found.get("instructions")
        if isinstance(instructions, str):
            self.instructions = instructions
        return found

    async def _request(self, method: str, params: Any, result_type: type[T], timeout: Timeout) -> T:
        """One request with the envelope applied (modern) and the result checked."""
        if self.era == Era.MODERN:
            raw = await self._modern_request(method, params, timeout, None)
            kind = decode_result(method, raw, _ResultKind).result_type
            if kind != "complete":
                raise McpError(errors.INVALID_REQUEST, f"{method} answered with resultType {kind!r}")
            return decode_result(method, raw, result_type)
        return await self.session.request(method, params, result_type=result_type, timeout=timeout)

    async def _rounds(
        self, method: str, params: Any, result_type: type[T], timeout: Timeout, progress: ProgressWatch | None
    ) -> T:
        """A request that may answer ``input_required``: answer the questions and retry (2026-07-28).

        Each retry is a new request (new id) with the same params, ``inputResponses``
        keyed exactly as asked, and ``requestState`` echoed byte for byte.
        """
        if self.era != Era.MODERN:
            return await self.session.request(
                method, params, result_type=result_type, timeout=timeout, progress=progress
            )
        current = params
        pause = 0.05
        for round_ in range(1, self.max_rounds + 1):
            raw = await self._modern_request(method, current, timeout, progress)
            head = decode_result(method, raw, _ResultKind)
            if head.result_type == "complete":
                return decode_result(method, raw, result_type)
            if head.result_type != "input_required":
                raise McpError(
                    errors.INVALID_REQUEST, f"{method} answered with unknown resultType {head.result_type!r}"
                )
            if round_ == self.max_rounds:
                break  # do not ask the person questions whose answers would never be sent
            if not head.input_requests and isinstance(head.request_state, UnsetType):
                raise McpError(errors.INVALID_REQUEST, f"{method} answered input_required with nothing to answer")
            responses: dict[str, Any] | UnsetType = UNSET
            if head.input_requests:
                responses = {}
                for key, item in head.input_requests.items():
                    responses[key] = msgspec.to_builtins(await self._answer_input(item))
            else:
                await anyio.sleep(pause)  # state only: the server asks us to come back
                pause = min(pause * 2, 0.25)
            current = msgspec.structs.replace(params, input_responses=responses, request_state=head.request_state)
        raise McpError(errors.INTERNAL_ERROR, f"{method} still needed input after {self.max_rounds} rounds; giving up")

    async def _modern_request(
        self, method: str, params: Any, timeout: Timeout, progress: ProgressWatch | None
    ) -> msgspec.Raw:
        """One modern request (envelope applied); on -32022 naming a revision we share, once more with it."""
        for attempt in range(2):
            enveloped = msgspec.structs.replace(params, meta=self._envelope(params.meta))
            try:
                return await self.session.request(method, enveloped, timeout=timeout, progress=progress)
            except McpError as exc:
                mutual = [v for v in _supported(exc) if is_modern(v)] if exc.code == UNSUPPORTED_VERSION else []
                if attempt or not mutual:
                    raise
                self._use_modern(mutual[-1])
        raise AssertionError("unreachable")  # pragma: no cover

    async def _answer_input(self, item: _InputRequest) -> Any:
        if item.method == "elicitation/create":
            params = msgspec.convert(item.params, ElicitRequestParams)
            return await self._answer_elicitation(params)
        if item.method == "sampling/createMessage" and self.sampling_handler is not None:
            return await self.sampling_handler(msgspec.convert(item.params, CreateMessageParams))
        if item.method == "roots/list" and self.roots is not None:
            return ListRootsResult(roots=list(self.roots))
        raise McpError(
            errors.INVALID_PARAMS, f"the server asked for {item.method!r}, which this client did not declare"
        )



@contextlib.asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    limits: Limits | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Spawn ``command`` as a stdio MCP server, connect and initialize.

    On exit the server is shut down: stdin closed, then terminate, then kill.
    Extra keyword arguments go to :class:`Client`.
    """
    from minimcp.transports.stdio import stdio_client

    _check_era(client_options.get("era", ERAS[0]))  # before anything is spawned
    async with (
        stdio_client(command, env=env, cwd=cwd, limits=limits) as transport,
        Client(transport, limits=limits, **client_options) as client,
    ):
        yield client
