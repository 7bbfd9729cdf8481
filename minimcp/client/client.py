"""The client role: ``Client`` -- connect, the handshake, and the calls (tools, resources, prompts, completion).

::

    async with minimcp.connect_stdio([sys.executable, "server.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

Three modules, one job each, make the client (each a base of the next):

* :mod:`minimcp.client.answers` -- what it declares and how it answers the server's
  questions (elicitation, sampling, roots) and notifications;
* :mod:`minimcp.client.rounds` -- revision 2026-07-28: the era choice (``server/discover``
  probe), the per-request envelope, ``input_required`` rounds;
* this module -- :class:`Client` itself: lifecycle, ``initialize``, the calls.

Beside them, :mod:`minimcp.client.headers` decides which tools a 2026-07-28 client may
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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal

import anyio

from minimcp.client.answers import (
    ElicitationHandler,
    SamplingHandler,
    UrlHandler,
)
from minimcp.client.headers import ToolHeaders, headered
from minimcp.client.rounds import Rounds
from minimcp.core._requests import DEFAULT, Timeout
from minimcp.core.config import Limits
from minimcp.core.pending import ProgressWatch
from minimcp.core.session import Session
from minimcp.core.trace import WireTrace
from minimcp.core.transport import Transport
from minimcp.wire import errors
from minimcp.wire.elicitation import Accepted, UrlElicitationRequired
from minimcp.wire.errors import McpError, UnsupportedVersion
from minimcp.wire.types import (
    UNSET,
    CallToolParams,
    CallToolResult,
    CompleteParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    GetPromptParams,
    GetPromptResult,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
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
from minimcp.wire.versions import LATEST, SUPPORTED, Era, is_supported

__all__ = ["Client", "connect_stdio"]


#: The values ``Client(era=...)`` accepts (an :class:`Era`, or ``"auto"`` to probe); the first is the default.
ERAS: tuple[str, ...] = (Era.LEGACY.value, Era.MODERN.value, "auto")


def _check_era(era: object) -> None:
    if era not in ERAS:
        choices = ", ".join(repr(e) for e in ERAS)
        raise ValueError(f"unknown era {era!r}: choose one of {choices} (default {ERAS[0]!r})")


class Client(Rounds):
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
