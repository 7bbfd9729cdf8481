"""The client role: connect, initialize, call tools, and answer the server's questions.

::

    async with minimcp.connect_stdio([sys.executable, "server.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

A client declares a capability only when it really has it: ``elicitation`` is
declared only when an elicitation handler is set. The handler runs in its own
task; while it runs (a person is reading the question), the clocks of our
pending requests are paused, so a ``tools/call`` does not time out because its
tool is waiting for the person -- up to ``limits.max_request_time``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio

from minimcp import errors, forms, jsonrpc
from minimcp.config import Limits
from minimcp.elicitation import Accepted, Cancelled, Declined, action_of
from minimcp.errors import McpError, UnsupportedVersion
from minimcp.jsonrpc import Notification, Request
from minimcp.session import DEFAULT, Session
from minimcp.transports import Transport
from minimcp.types import (
    UNSET,
    CallToolParams,
    CallToolResult,
    ClientCapabilities,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListToolsResult,
    PaginatedParams,
    ServerCapabilities,
    Tool,
    UnsetType,
)
from minimcp.versions import LATEST, SUPPORTED, is_supported

__all__ = ["Client", "ElicitationRequest", "ElicitationHandler", "connect_stdio"]

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


class Client:
    """An MCP client over one transport. Use as an async context manager.

    Args:
        transport: The connection to the server.
        name: ``clientInfo.name``.
        version: ``clientInfo.version``.
        elicitation_handler: Answers form questions; declaring it declares the
            ``elicitation`` capability.
        fill_defaults: Fill fields the handler left out from the schema's
            defaults before validating and sending.
        protocol_version: The revision to offer (default: the latest).
        limits: Bounds and timeouts.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str = "minimcp-client",
        version: str = "0.1.0",
        elicitation_handler: ElicitationHandler | None = None,
        fill_defaults: bool = True,
        protocol_version: str = LATEST,
        limits: Limits | None = None,
    ) -> None:
        self.info = Implementation(name=name, version=version)
        self.elicitation_handler = elicitation_handler
        self.fill_defaults = fill_defaults
        self.requested_version = protocol_version
        self.limits = limits or Limits()
        self.session = Session(transport, self, limits=self.limits, name=f"client {name}")
        self.server_info: Implementation | None = None
        self.server_capabilities = ServerCapabilities()
        self.instructions: str | None = None
        self.protocol_version: str | None = None
        self._stack: contextlib.AsyncExitStack | None = None

    def capabilities(self) -> ClientCapabilities:
        """What this client declares: only what it has a handler for."""
        return ClientCapabilities(elicitation={"form": {}} if self.elicitation_handler else UNSET)

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        stack = contextlib.AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        await tg.start(self.session.run)
        stack.callback(self.session.close)
        try:
            await self.initialize()
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

    async def initialize(self) -> InitializeResult:
        """The handshake (done by ``async with``)."""
        params = InitializeParams(
            protocol_version=self.requested_version,
            capabilities=self.capabilities(),
            client_info=self.info,
        )
        result = await self.session.request("initialize", params, result_type=InitializeResult)
        if not is_supported(result.protocol_version):
            self.session.close()
            raise UnsupportedVersion(result.protocol_version, SUPPORTED)
        self.protocol_version = result.protocol_version
        self.session.protocol_version = result.protocol_version
        self.server_info = result.server_info
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions if not isinstance(result.instructions, UnsetType) else None
        await self.session.notify("notifications/initialized")
        return result

    # --- calls -------------------------------------------------------------------------------

    async def ping(self, *, timeout: float | None = DEFAULT) -> None:
        """Round trip to the server."""
        await self.session.request("ping", timeout=timeout)

    async def list_tools(self, *, timeout: float | None = DEFAULT) -> list[Tool]:
        """All tools, following ``nextCursor`` pages."""
        tools: list[Tool] = []
        cursor: str | UnsetType = UNSET
        for _ in range(10_000):
            page = await self.session.request(
                "tools/list", PaginatedParams(cursor=cursor), result_type=ListToolsResult, timeout=timeout
            )
            tools.extend(page.tools)
            if isinstance(page.next_cursor, UnsetType) or not page.next_cursor:
                return tools
            cursor = page.next_cursor
        raise McpError(errors.INVALID_REQUEST, "server returned more than 10,000 pages of tools")

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT,
        meta: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool error comes back as a result with ``is_error``.

        Raises:
            McpError: a protocol error (unknown tool: ``-32602``).
            RequestTimeout: no answer in ``timeout`` seconds (the server was told to stop).
        """
        params = CallToolParams(
            name=name,
            arguments=arguments if arguments is not None else UNSET,
            meta=meta if meta is not None else UNSET,
        )
        return await self.session.request("tools/call", params, result_type=CallToolResult, timeout=timeout)

    # --- Dispatcher protocol -----------------------------------------------------------------

    async def handle_request(self, session: Session, request: Request) -> Any:
        if request.method == "ping":
            return {}
        if request.method == "elicitation/create":
            return await self._elicit(request)
        raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {request.method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        logger.debug("notification %s", notification.method)

    async def _elicit(self, request: Request) -> ElicitResult:
        handler = self.elicitation_handler
        if handler is None:
            raise McpError(errors.METHOD_NOT_FOUND, "this client does not support elicitation")
        params = jsonrpc.decode_params(request.params, ElicitRequestParams)
        if params.mode == "url":
            raise McpError(errors.INVALID_PARAMS, "this client did not declare URL-mode elicitation")
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
                raise McpError(errors.INTERNAL_ERROR, "the client's answer did not match the form") from None
            return ElicitResult(action="accept", content=content)
        return ElicitResult(action=action_of(answer))


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

    async with (
        stdio_client(command, env=env, cwd=cwd, limits=limits) as transport,
        Client(transport, limits=limits, **client_options) as client,
    ):
        yield client

