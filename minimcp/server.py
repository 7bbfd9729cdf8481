"""The server role: a registry of tools, the handshake, and the tool context.

A :class:`Server` is a registry; it holds no per-connection state. Each
connection (:meth:`Server.serve`) gets a :class:`ServerConnection`, which is the
session's dispatcher: it answers ``initialize``, ``ping``, ``tools/list`` and
``tools/call``, and runs each tool with an explicit :class:`Context` -- the
handle through which a tool asks the person a question mid-call.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import re
import secrets
import typing
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar, overload

import anyio
import msgspec

from minimcp import errors, forms, jsonrpc
from minimcp.config import Limits
from minimcp.elicitation import (
    Accepted,
    Cancelled,
    Declined,
    ElicitationUnsupported,
    UrlElicitation,
    UrlElicitationRequired,
)
from minimcp.errors import McpError
from minimcp.jsonrpc import Notification, Request, RequestId
from minimcp.session import DEFAULT, Session
from minimcp.transports import Transport
from minimcp.types import (
    UNSET,
    AudioContent,
    CallToolResult,
    ClientCapabilities,
    ElicitationCompleteParams,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListToolsResult,
    PaginatedParams,
    ProgressParams,
    ResourceLink,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolAnnotations,
    UnsetType,
)
from minimcp.urls import InvalidElicitationUrl, check_elicitation_url
from minimcp.versions import Feature, negotiate, supports

__all__ = ["Context", "Server", "ServerConnection", "ToolError", "tool_result"]

logger = logging.getLogger("minimcp.server")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


class ToolError(Exception):
    """Raise from a tool to end the call with a tool error result (``isError: true``).

    The message is shown to the model, so make it say what to do differently.
    """


def tool_result(
    text: str, structured: Mapping[str, Any] | msgspec.Struct | None = None, *, is_error: bool = False
) -> CallToolResult:
    """A tool result with one text block and, optionally, structured content."""
    sc: dict[str, Any] | UnsetType = UNSET
    if structured is not None:
        sc = msgspec.to_builtins(structured)
    return CallToolResult(
        content=[TextContent(text=text)], structured_content=sc, is_error=True if is_error else UNSET
    )


class _CallToolWire(msgspec.Struct, rename="camel"):
    name: str
    arguments: msgspec.Raw = jsonrpc.NO_PARAMS
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


# --- tools -----------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _RegisteredTool:
    fn: Callable[..., Awaitable[Any]]
    definition: Tool
    args_type: type[msgspec.Struct] | None
    context_param: str | None
    param_names: tuple[str, ...]
    structured: bool


_MISSING_FIELD = re.compile(r"Object missing required field `([^`]+)`")
_UNKNOWN_FIELD = re.compile(r"Object contains unknown field `([^`]+)`")
_AT_PATH = re.compile(r"^(.*) - at `\$\.?([^`]*)`$")


def _argument_error(tool: str, exc: msgspec.ValidationError) -> str:
    """Turn msgspec's message into one that names the argument."""
    text = str(exc)
    m = _AT_PATH.match(text)
    where = ""
    if m:
        text, where = m.group(1), m.group(2)
    if mm := _MISSING_FIELD.search(text):
        name = f"{where}.{mm.group(1)}" if where else mm.group(1)
        return f"Invalid arguments for tool {tool!r}: missing required argument {name!r}"
    if mm := _UNKNOWN_FIELD.search(text):
        name = f"{where}.{mm.group(1)}" if where else mm.group(1)
        return f"Invalid arguments for tool {tool!r}: unknown argument {name!r}"
    if where:
        return f"Invalid arguments for tool {tool!r}: argument {where!r}: {text[:1].lower()}{text[1:]}"
    return f"Invalid arguments for tool {tool!r}: {text}"


def _inline_schema(tp: Any) -> dict[str, Any]:
    """JSON schema of ``tp`` with the top level inlined (MCP wants ``type: object`` at the root)."""
    (root,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    ref = root.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        root = dict(components.pop(name))
    root.pop("title", None)
    if components:
        root["$defs"] = components
    return root


def _is_structured_type(tp: Any) -> bool:
    if tp is None or tp is inspect.Signature.empty:
        return False
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _is_structured_type(typing.get_args(tp)[0])
    if isinstance(tp, type):
        if issubclass(tp, (CallToolResult, *_CONTENT_TYPES)):
            return False
        return (
            issubclass(tp, msgspec.Struct)
            or dataclasses.is_dataclass(tp)
            or typing.is_typeddict(tp)
        )
    return False


def _build_tool(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: ToolAnnotations | None,
    input_schema: dict[str, Any] | None,
    output_schema: dict[str, Any] | None,
    structured: bool | None,
) -> _RegisteredTool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__name__!r} must be an async function")
    tool_name = name or fn.__name__
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    context_param: str | None = None
    fields: list[tuple[str, Any, Any]] = []
    for pname, param in sig.parameters.items():
        ann = hints.get(pname, Any)
        if ann is Context or (isinstance(ann, type) and issubclass(ann, Context)):
            context_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args / **kwargs parameters are not supported")
        if param.default is inspect.Parameter.empty:
            fields.append((pname, ann, msgspec.NODEFAULT))
        else:
            fields.append((pname, ann, param.default))
    args_type: type[msgspec.Struct] | None = None
    if fields:
        args_type = msgspec.defstruct(
            f"{tool_name}_arguments", fields, kw_only=True, forbid_unknown_fields=True
        )
    if input_schema is None:
        if args_type is not None:
            input_schema = _inline_schema(args_type)
        else:
            input_schema = {"type": "object", "additionalProperties": False}
    ret = hints.get("return", inspect.Signature.empty)
    is_structured = _is_structured_type(ret) if structured is None else structured
    if output_schema is None and is_structured and _is_structured_type(ret):
        output_schema = _inline_schema(ret)
    doc = description if description is not None else inspect.getdoc(fn)
    definition = Tool(
        name=tool_name,
        input_schema=input_schema,
        title=title if title is not None else UNSET,
        description=doc if doc else UNSET,
        output_schema=output_schema if output_schema is not None else UNSET,
        annotations=annotations if annotations is not None else UNSET,
    )
    return _RegisteredTool(
        fn, definition, args_type, context_param, tuple(f[0] for f in fields), is_structured
    )


def _to_result(tool: _RegisteredTool, value: Any) -> CallToolResult:
    if isinstance(value, CallToolResult):
        return value
    if value is None:
        return CallToolResult(content=[])
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, _CONTENT_TYPES):
        return CallToolResult(content=[value])
    if isinstance(value, list) and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return CallToolResult(content=list(value))
    data = msgspec.to_builtins(value)
    text = msgspec.json.encode(data).decode()
    if isinstance(data, dict) and tool.structured:
        return CallToolResult(content=[TextContent(text=text)], structured_content=data)
    return CallToolResult(content=[TextContent(text=text)])


# --- the server ------------------------------------------------------------------------------


class Server:
    """An MCP server: register tools, then serve connections.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional display name.
        instructions: Hint text for the client's model.
        limits: Bounds and timeouts for every connection.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.info = Implementation(name=name, version=version, title=title if title else UNSET)
        self.instructions = instructions
        self.limits = limits or Limits()
        self._tools: dict[str, _RegisteredTool] = {}
        self._tool_list: list[Tool] = []
        #: Live connections (added at connect, removed when they end).
        self.connections: set[ServerConnection] = set()
        # URL elicitation id -> the connection that received it (completion goes there only).
        self._url_owners: dict[str, ServerConnection] = {}

    @property
    def name(self) -> str:
        return self.info.name

    # registration

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured: bool | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Awaitable[Any]] | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured: bool | None = None,
    ) -> Any:
        """Register an async function as a tool.

        The input schema comes from the parameters' type hints (``Annotated``
        constraints and defaults included) unless ``input_schema`` is given. A
        parameter annotated :class:`Context` receives the call's context.
        A return annotation that is a Struct, dataclass or TypedDict makes the
        tool structured: ``outputSchema`` is declared and results carry
        ``structuredContent`` plus a JSON text copy.
        """

        def register(f: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            t = _build_tool(
                f,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                input_schema=input_schema,
                output_schema=output_schema,
                structured=structured,
            )
            if t.definition.name in self._tools:
                raise ValueError(f"a tool named {t.definition.name!r} is already registered")
            self._tools[t.definition.name] = t
            self._tool_list.append(t.definition)
            return f

        return register(fn) if fn is not None else register

    @property
    def tools(self) -> list[Tool]:
        """The registered tool definitions, in registration order."""
        return list(self._tool_list)

    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(tools={"listChanged": False} if self._tools else UNSET)

    # URL-mode completion

    async def complete_url_elicitation(self, elicitation_id: str) -> bool:
        """Signal that URL elicitation ``elicitation_id`` finished (call from anywhere in the server).

        Sends ``notifications/elicitation/complete`` to the one connection that
        received that elicitation, and to no other. Returns whether a notice was
        sent: repeating it, an unknown id, or a connection that is gone send
        nothing.
        """
        conn = self._url_owners.pop(elicitation_id, None)
        if conn is None:
            return False
        return await conn._send_complete(elicitation_id)

    # serving

    async def serve(
        self,
        transport: Transport,
        *,
        task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one connection until it ends.

        With ``await task_group.start(server.serve, transport)`` the caller gets
        the :class:`ServerConnection` once the session is running.
        """
        conn = ServerConnection(self)
        session = Session(transport, conn, limits=self.limits, name=f"server {self.name}")
        conn.session = session
        self.connections.add(conn)
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(session.run)
                task_status.started(conn)
        finally:
            self.connections.discard(conn)
            for eid in conn.url_elicitations:
                self._url_owners.pop(eid, None)
            conn.url_elicitations.clear()

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout (logs belong on stderr)."""
        from minimcp.transports.stdio import stdio_server

        async with stdio_server(limits=self.limits) as transport:
            await self.serve(transport)

    def run(self, *, backend: str = "asyncio") -> None:
        """Serve stdio in a new event loop (``backend``: ``"asyncio"`` or ``"trio"``)."""
        anyio.run(self.serve_stdio, backend=backend)


class ServerConnection:
    """Server-side state of one connection: handshake results and dispatch."""

    session: Session

    def __init__(self, server: Server) -> None:
        self.server = server
        self.client_info: Implementation | None = None
        self.client_capabilities = ClientCapabilities()
        self.protocol_version: str | None = None
        self.initialized = False
        #: URL elicitation ids sent to this connection and not yet completed.
        self.url_elicitations: set[str] = set()

    # Dispatcher protocol

    async def handle_request(self, session: Session, request: Request) -> Any:
        method = request.method
        if method == "ping":
            return _EMPTY
        if method == "initialize":
            return self._initialize(request)
        if self.protocol_version is None:
            raise McpError(
                errors.INVALID_REQUEST, f"received {method!r} before initialize; send initialize first"
            )
        if method == "tools/call":
            return await self._call_tool(request)
        if method == "tools/list":
            return self._list_tools(request)
        raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        if notification.method == "notifications/initialized":
            self.initialized = True

    # handlers

    def _initialize(self, request: Request) -> InitializeResult:
        if self.protocol_version is not None:
            raise McpError(errors.INVALID_REQUEST, "initialize was already received on this connection")
        params = jsonrpc.decode_params(request.params, InitializeParams)
        version = negotiate(params.protocol_version)
        self.protocol_version = version
        self.session.protocol_version = version
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        server = self.server
        return InitializeResult(
            protocol_version=version,
            capabilities=server.capabilities(),
            server_info=server.info,
            instructions=server.instructions if server.instructions else UNSET,
        )

    def _list_tools(self, request: Request) -> ListToolsResult:
        params = jsonrpc.decode_params(request.params, PaginatedParams)
        tools = self.server._tool_list
        start = 0
        if not isinstance(params.cursor, UnsetType):
            try:
                start = int(params.cursor)
            except ValueError:
                start = -1
            if not 0 <= start <= len(tools):
                raise McpError(errors.INVALID_PARAMS, f"invalid cursor {params.cursor!r}")
        end = start + self.server.limits.page_size
        return ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else UNSET
        )

    async def _call_tool(self, request: Request) -> CallToolResult:
        params = jsonrpc.decode_params(request.params, _CallToolWire)
        tool = self.server._tools.get(params.name)
        if tool is None:
            raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
        kwargs: dict[str, Any] = {}
        if tool.args_type is not None:
            try:
                args = msgspec.json.decode(params.arguments or b"{}", type=tool.args_type)
            except msgspec.ValidationError as exc:
                return _error_result(_argument_error(params.name, exc))
            for pname in tool.param_names:
                kwargs[pname] = getattr(args, pname)
        if tool.context_param is not None:
            kwargs[tool.context_param] = Context(self, request.id, params.meta)
        try:
            value = await tool.fn(**kwargs)
        except ToolError as exc:
            return _error_result(str(exc) or f"tool {params.name!r} failed")
        except (
            forms.FormValidationError, forms.FormDefinitionError, ElicitationUnsupported, InvalidElicitationUrl
        ) as exc:
            return _error_result(str(exc))
        except UrlElicitationRequired as exc:
            if not self.can_elicit_url():
                for item in exc.elicitations:
                    self._forget_url(item.elicitation_id)
                return _error_result(
                    f"tool {params.name!r} needs the person to complete a step in their browser, and this client "
                    "cannot open links (it did not declare URL-mode elicitation)"
                )
            raise
        except (errors.RequestTimeout, errors.TooManyPending, errors.RequestCancelled) as exc:
            return _error_result(f"tool {params.name!r} could not finish: {exc.message}")
        except McpError:
            raise
        except Exception:
            logger.exception("tool %r raised", params.name)
            return _error_result(f"tool {params.name!r} failed with an internal error")
        return _to_result(tool, value)

    # elicitation support used by Context

    def can_elicit_form(self) -> bool:
        version = self.protocol_version
        caps = self.client_capabilities.elicitation
        if version is None or not supports(version, Feature.ELICITATION) or isinstance(caps, UnsetType):
            return False
        # `elicitation: {}` (and every 2025-06-18 client) means form only.
        return not caps or "form" in caps or not supports(version, Feature.ELICITATION_URL)

    def register_url_elicitation(self, elicitation_id: str) -> None:
        """Bind a URL elicitation id to this connection (completion is sent here only)."""
        owner = self.server._url_owners.get(elicitation_id)
        if owner is not None and owner is not self:
            raise ValueError(f"elicitation id {elicitation_id!r} belongs to another session")
        if owner is None and len(self.url_elicitations) >= self.server.limits.max_pending_outbound:
            raise errors.TooManyPending(self.server.limits.max_pending_outbound)
        self.url_elicitations.add(elicitation_id)
        self.server._url_owners[elicitation_id] = self

    def _forget_url(self, elicitation_id: str) -> None:
        self.url_elicitations.discard(elicitation_id)
        if self.server._url_owners.get(elicitation_id) is self:
            del self.server._url_owners[elicitation_id]

    async def complete_url_elicitation(self, elicitation_id: str) -> bool:
        """Like :meth:`Server.complete_url_elicitation`, but only for this connection's own ids.

        Raises:
            ValueError: the id belongs to another session.
        """
        owner = self.server._url_owners.get(elicitation_id)
        if owner is None:
            return False
        if owner is not self:
            raise ValueError(f"elicitation id {elicitation_id!r} belongs to another session")
        return await self.server.complete_url_elicitation(elicitation_id)

    async def _send_complete(self, elicitation_id: str) -> bool:
        self.url_elicitations.discard(elicitation_id)
        if self.session.closed:
            return False
        try:
            await self.session.notify(
                "notifications/elicitation/complete", ElicitationCompleteParams(elicitation_id=elicitation_id)
            )
        except errors.ConnectionClosed:
            return False
        return True

    def can_elicit_url(self) -> bool:
        """Whether the client declared URL-mode elicitation (2025-11-25 and later)."""
        version = self.protocol_version
        caps = self.client_capabilities.elicitation
        if version is None or not supports(version, Feature.ELICITATION_URL) or isinstance(caps, UnsetType):
            return False
        return "url" in caps


_EMPTY: dict[str, Any] = {}


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


class Context:
    """What a running tool gets: who is calling, and a way to ask them things.

    One context exists per tool call; do not keep it after the call returns.
    """

    __slots__ = ("connection", "meta", "request_id")

    def __init__(
        self, connection: ServerConnection, request_id: RequestId, meta: dict[str, Any] | UnsetType
    ) -> None:
        self.connection = connection
        self.request_id = request_id
        self.meta = meta

    @property
    def session(self) -> Session:
        return self.connection.session

    @property
    def client_info(self) -> Implementation | None:
        return self.connection.client_info

    @property
    def protocol_version(self) -> str:
        v = self.connection.protocol_version
        assert v is not None
        return v

    @property
    def progress_token(self) -> int | str | None:
        if isinstance(self.meta, dict):
            token = self.meta.get("progressToken")
            if type(token) in (int, str):
                return typing.cast("int | str", token)
        return None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the caller asked for progress (else nothing)."""
        token = self.progress_token
        if token is None:
            return
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

    @overload
    async def elicit(
        self,
        message: str,
        form: type[T],
        *,
        timeout: float | None = ...,
        allow_sensitive: Collection[str] = ...,
    ) -> Accepted[T] | Declined | Cancelled: ...

    @overload
    async def elicit(
        self,
        message: str,
        form: Mapping[str, Any],
        *,
        timeout: float | None = ...,
        allow_sensitive: Collection[str] = ...,
    ) -> Accepted[dict[str, Any]] | Declined | Cancelled: ...

    async def elicit(
        self,
        message: str,
        form: Any,
        *,
        timeout: float | None = DEFAULT,
        allow_sensitive: Collection[str] = (),
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

        Returns:
            ``Accepted(value)`` with the validated, typed value; ``Declined()``;
            or ``Cancelled(reason)``.

        Raises:
            forms.FormDefinitionError: the form cannot be expressed (before sending).
            ElicitationUnsupported: the client did not declare form elicitation
                (before sending).
            forms.FormValidationError: the client's answer breaks the schema.
        """
        compiled = forms.compile_form(form, allow_sensitive=allow_sensitive)
        conn = self.connection
        if not conn.can_elicit_form():
            who = conn.client_info.name if conn.client_info else "the client"
            raise ElicitationUnsupported(
                f"{who} cannot answer questions (it did not declare form elicitation"
                f" on protocol {conn.protocol_version}); cannot ask: {message}"
            )
        version = self.protocol_version
        schema = compiled.schema_for(version)
        params = ElicitRequestParams(
            message=message,
            mode="form" if supports(version, Feature.ELICITATION_URL) else UNSET,
            requested_schema=schema,
        )
        if timeout is DEFAULT:
            timeout = conn.server.limits.elicitation_timeout
        try:
            result = await self.session.request(
                "elicitation/create", params, result_type=ElicitResult, timeout=timeout, related=self.request_id
            )
        except errors.RequestTimeout:
            return Cancelled("timeout")
        if result.action == "accept":
            content = result.content if not isinstance(result.content, UnsetType) else {}
            return Accepted(compiled.build(content))
        if result.action == "decline":
            return Declined()
        return Cancelled("user")

    def url_elicitation(self, message: str, url: str, *, elicitation_id: str | None = None) -> UrlElicitation:
        """Prepare a URL step for ``raise UrlElicitationRequired([...])`` (the ``-32042`` path).

        Checks the URL, mints an unguessable id (unless given) and binds it to
        this session, so a later :meth:`Server.complete_url_elicitation` reaches
        this client only.
        """
        self._require_url_mode(message)
        check_elicitation_url(url)
        eid = elicitation_id or secrets.token_urlsafe(18)
        self.connection.register_url_elicitation(eid)
        return UrlElicitation(message, url, eid)

    def _require_url_mode(self, message: str) -> None:
        conn = self.connection
        if not conn.can_elicit_url():
            who = conn.client_info.name if conn.client_info else "the client"
            raise ElicitationUnsupported(
                f"{who} cannot open links (it did not declare URL-mode elicitation"
                f" on protocol {conn.protocol_version}); cannot ask: {message}"
            )

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        timeout: float | None = DEFAULT,
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
        self._require_url_mode(message)
        check_elicitation_url(url)
        eid = elicitation_id or secrets.token_urlsafe(18)
        conn = self.connection
        conn.register_url_elicitation(eid)
        params = ElicitRequestParams(message=message, mode="url", elicitation_id=eid, url=url)
        if timeout is DEFAULT:
            timeout = conn.server.limits.elicitation_timeout
        try:
            result = await self.session.request(
                "elicitation/create", params, result_type=ElicitResult, timeout=timeout, related=self.request_id
            )
        except errors.RequestTimeout:
            conn._forget_url(eid)
            return Cancelled("timeout")
        except BaseException:
            conn._forget_url(eid)
            raise
        if result.action == "accept":
            return Accepted(eid)
        conn._forget_url(eid)
        return Declined() if result.action == "decline" else Cancelled("user")
