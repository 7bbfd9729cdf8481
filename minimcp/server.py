"""The server role: a registry of tools, the handshake, and the tool context.

A :class:`Server` is a registry; it holds no per-connection state. Each
connection (:meth:`Server.serve`) gets a :class:`ServerConnection`, which is the
session's dispatcher: it answers ``initialize``, ``ping``, ``tools/list`` and
``tools/call``, and runs each tool with an explicit :class:`Context` -- the
handle through which a tool asks the person a question mid-call.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar, overload

import anyio
import msgspec

from minimcp import capabilities, errors, forms, jsonrpc, modern
from minimcp.bus import Bus
from minimcp.config import Limits
from minimcp.context import Context
from minimcp.elicitation import (
    ElicitationUnsupported,
    QuestionFailed,
    UrlElicitationRequired,
)
from minimcp.errors import McpError
from minimcp.interrupt import run_until_interrupted
from minimcp.jsonrpc import Notification, Request
from minimcp.metrics import ElicitationMetrics
from minimcp.modern import Envelope, Parking, Run
from minimcp.prompts import RegisteredPrompt, build_prompt, to_prompt_result
from minimcp.resources import RegisteredResource, RegisteredTemplate, to_contents
from minimcp.session import Deferred, PendingBudget, Session
from minimcp.state import (
    RANDOM_KEY_WARNING,
    StateKey,
    StateSealer,
    StateTooLarge,
    digest,
    parse_state_keys,
    state_keys_from_env,
)
from minimcp.tools import (
    RegisteredTool,
    ToolError,
    argument_error,
    build_tool,
    check_tool_forms,
    error_result,
    to_result,
    tool_result,
    unchecked_failure,
)
from minimcp.trace import WireTrace
from minimcp.transports import Transport
from minimcp.types import (
    UNSET,
    CallToolResult,
    ClientCapabilities,
    CompleteParams,
    CompleteResult,
    Completion,
    ElicitationCompleteParams,
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
    PaginatedParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceParams,
    ResourceTemplate,
    ResourceUpdatedParams,
    ServerCapabilities,
    SetLevelParams,
    Tool,
    ToolAnnotations,
    UnsetType,
)
from minimcp.urls import InvalidElicitationUrl
from minimcp.used_states import MemoryUsedStates, UsedStates
from minimcp.versions import LATEST_MODERN, MODERN, SUPPORTED, Feature, negotiate, supports
from minimcp.waiting import Waits
from minimcp.workers import Workers

__all__ = ["Context", "Server", "ServerConnection", "ToolError", "tool_result"]

logger = logging.getLogger("minimcp.server")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

#: ``completion/complete`` handler: (ref, argument name, typed value, other arguments) -> suggestions.
CompletionHandler = Callable[[dict[str, Any], str, str, dict[str, str]], Awaitable[list[str]]]


def _described(
    fn: Callable[..., Any], name: str | None, title: str | None, description: str | None, mime_type: str | None
) -> dict[str, Any]:
    """The descriptive fields of a resource or template (the docstring is the default description)."""
    doc = description if description is not None else inspect.getdoc(fn)
    return {
        "name": name or fn.__name__,
        "title": title if title is not None else UNSET,
        "description": doc if doc else UNSET,
        "mime_type": mime_type if mime_type is not None else UNSET,
    }


def _page(items: list[T], cursor: str | UnsetType, size: int) -> tuple[list[T], str | UnsetType]:
    """One page of ``items`` after an opaque cursor (our cursors are offsets as text)."""
    start = 0
    if not isinstance(cursor, UnsetType):
        # At most 18 digits: int() raises past Python's digit limit (4,300), which would be a -32603.
        start = int(cursor) if len(cursor) <= 18 and cursor.isascii() and cursor.isdigit() else -1
        if not 0 <= start <= len(items):
            raise McpError(errors.INVALID_PARAMS, f"invalid cursor {cursor!r}")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else UNSET)


class _CallToolWire(msgspec.Struct, rename="camel"):
    name: str
    arguments: msgspec.Raw = jsonrpc.NO_PARAMS
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")
    # 2026-07-28 multi round-trip requests
    input_responses: dict[str, Any] | UnsetType | None = UNSET
    request_state: str | UnsetType = UNSET



# --- the server ------------------------------------------------------------------------------


class Server:
    """An MCP server: register tools, then serve connections.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional display name.
        instructions: Hint text for the client's model.
        limits: Bounds and timeouts for every connection.
        state_key: Key sealing ``requestState`` on the modern revision: bytes (32 or
            more) or hex text, or a sequence of them (the first seals, all open: put a new
            key first to rotate). When omitted: the keys in ``MINIMCP_STATE_KEYS`` (comma-
            separated hex) if that is set, else a key random to this process (then a retry
            that reaches another worker is refused; the HTTP app warns at start).
        state_ttl: Seconds a ``requestState`` stays valid.
        used_states: Where used ``requestState`` tokens are recorded (each is good for
            one retry); in memory by default (``limits.max_used_states``). Workers that
            share a ``state_key`` share this store too:
            :class:`~minimcp.used_states.RedisUsedStates` (started by
            :meth:`run_background`).
        trace: Record every message of every connection (see :mod:`minimcp.trace`).
        replay_every_retry: A test mode for the modern revision: never park a call. When a
            tool asks, the ``input_required`` answer goes out and the call is dropped at
            once (as when the park table is full), so every retry replays it from the
            sealed state, in this one process -- as if it had reached another worker.
            Tools that are not safe to replay (work before a question done twice, clean-up
            on cancellation that undoes what the retry needs) fail in ordinary tests;
            ``replayable=False`` tools are refused on every retry.
        bus: The bus between the workers of one service (:mod:`minimcp.bus`:
            :class:`~minimcp.bus.InMemoryBus`, :class:`~minimcp.bus.RedisBus`), listened to
            by :meth:`run_background`. URL completions reach the worker holding the
            client's session, list and resource notices reach every worker's sessions, and
            a parked 2026-07-28 call whose retry replays on another worker is dropped here
            at once (see :mod:`minimcp.workers`). ``None``: this process alone.
        worker_id: Names this worker on the bus and in the states it seals (1 to 32 ASCII
            letters, digits, ``_`` or ``-``). Default: the HTTP app's ``session_id_prefix``
            when one is given, else random.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        limits: Limits | None = None,
        state_key: StateKey | Sequence[StateKey] | None = None,
        state_ttl: float = 600.0,
        used_states: UsedStates | None = None,
        trace: WireTrace | None = None,
        replay_every_retry: bool = False,
        bus: Bus | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.info = Implementation(name=name, version=version, title=title or None)
        self.instructions = instructions
        self.limits = limits or Limits()
        self.trace = trace
        #: Pending requests to clients, across all connections (``limits.max_pending_total``).
        self.budget = PendingBudget(self.limits.max_pending_total)
        #: Seals ``requestState`` on the modern revision. Give every worker behind a load
        #: balancer the same ``state_key`` so a retry can replay anywhere.
        keys = parse_state_keys(state_key) if state_key is not None else state_keys_from_env()
        self.sealer = StateSealer(keys[0], old_keys=keys[1:]) if keys else StateSealer()
        #: Where the sealing keys came from: ``"argument"``, ``"environment"``, or ``"random"``
        #: (to this process: other workers cannot open its states).
        self.state_key_source = "argument" if state_key is not None else "environment" if keys else "random"
        self._warned_random_key = False
        self.state_ttl = state_ttl
        self.used_states: UsedStates = used_states or MemoryUsedStates(self.limits.max_used_states)
        #: Tool calls suspended between rounds of the modern revision.
        self.parking = Parking(self.limits.max_pending_outbound)
        #: Never park: every modern retry replays (a test mode, see the class docs).
        self.replay_every_retry = replay_every_retry
        #: Elicitation counters per tool (see :mod:`minimcp.metrics`).
        self.metrics = ElicitationMetrics()
        self._not_replayable: set[str] = set()
        self._tools: dict[str, RegisteredTool] = {}
        self._tool_list: list[Tool] = []
        self._resources: dict[str, RegisteredResource] = {}
        self._templates: list[RegisteredTemplate] = []
        self._prompts: dict[str, RegisteredPrompt] = {}
        self._completion: CompletionHandler | None = None
        #: Called with the connection whenever a client reports its roots changed.
        self.on_roots_changed: Callable[[ServerConnection], None] | None = None
        #: Called with the connection when it has ended (drop what the application keeps for it).
        self.on_connection_closed: Callable[[ServerConnection], None] | None = None
        #: Live connections (added at connect, removed when they end).
        self.connections: set[ServerConnection] = set()
        # URL elicitation id -> the connection that received it (completion goes there only).
        self._url_owners: dict[str, ServerConnection] = {}
        #: This worker on the bus between workers (``workers.worker_id`` names it).
        self.workers = Workers(self, bus, worker_id)

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
        replayable: bool = True,
        forms: Iterable[Any] = (),
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
        replayable: bool = True,
        forms: Iterable[Any] = (),
    ) -> Any:
        """Register an async function as a tool.

        The input schema comes from the parameters' type hints (``Annotated``
        constraints and defaults included) unless ``input_schema`` is given. A
        parameter annotated :class:`Context` receives the call's context.
        A return annotation that is a Struct, dataclass or TypedDict makes the
        tool structured: ``outputSchema`` is declared and results carry
        ``structuredContent`` plus a JSON text copy.

        ``replayable=False``: on the modern revision, never run this tool again
        from the top to rebuild a call whose suspended state is gone (a
        restart, another worker); such a retry fails cleanly instead.

        ``forms``: the forms the tool asks with ``ctx.elicit`` (Struct, dataclass or
        TypedDict types, raw schema dicts, or :class:`~minimcp.context.Elicit` items
        when ``allow_sensitive`` applies), checked here: one that cannot be sent raises
        :class:`~minimcp.forms.FormDefinitionError` naming the tool and the field. A form
        not named here is compiled when the tool asks; if it cannot be sent, the call
        ends with a tool error and the server logs the reason. Parameters without a type
        annotation accept any JSON value and draw a warning here.
        """

        def register(f: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            t = build_tool(
                f,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                input_schema=input_schema,
                output_schema=output_schema,
                structured=structured,
                context_type=Context,
            )
            if t.definition.name in self._tools:
                raise ValueError(f"a tool named {t.definition.name!r} is already registered")
            check_tool_forms(t.definition.name, forms)
            self._tools[t.definition.name] = t
            self._tool_list.append(t.definition)
            if not replayable:
                self._not_replayable.add(t.definition.name)
            return f

        return register(fn) if fn is not None else register

    @property
    def tools(self) -> list[Tool]:
        """The registered tool definitions, in registration order."""
        return list(self._tool_list)

    def tool_definition(self, name: str) -> Tool | None:
        """The definition of tool ``name``, or ``None``."""
        registered = self._tools.get(name)
        return registered.definition if registered is not None else None

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (then call :meth:`notify_list_changed` with ``"tools"``)."""
        tool = self._tools.pop(name)
        self._tool_list.remove(tool.definition)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Register an async reader for a fixed resource URI (returns str, bytes or contents)."""

        def register(fn: F) -> F:
            if uri in self._resources:
                raise ValueError(f"a resource {uri!r} is already registered")
            definition = Resource(uri=uri, **_described(fn, name, title, description, mime_type))
            self._resources[uri] = RegisteredResource(definition, fn)
            return fn

        return register

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Register a reader for a URI template; its variables are passed as keyword arguments."""

        def register(fn: F) -> F:
            definition = ResourceTemplate(
                uri_template=uri_template, **_described(fn, name, title, description, mime_type)
            )
            self._templates.append(RegisteredTemplate.create(definition, fn))
            return fn

        return register

    def prompt(
        self, *, name: str | None = None, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Register an async prompt; its ``str`` parameters are the prompt's arguments."""

        def register(fn: F) -> F:
            p = build_prompt(fn, name=name, title=title, description=description, context_type=Context)
            if p.definition.name in self._prompts:
                raise ValueError(f"a prompt named {p.definition.name!r} is already registered")
            self._prompts[p.definition.name] = p
            return fn

        return register

    def completion(self, fn: CompletionHandler) -> CompletionHandler:
        """Register the ``completion/complete`` handler (prompt arguments and template variables)."""
        self._completion = fn
        return fn

    def capabilities(self) -> ServerCapabilities:
        has_resources = bool(self._resources or self._templates)
        return ServerCapabilities(
            tools={"listChanged": True} if self._tools else UNSET,
            resources={"subscribe": True, "listChanged": True} if has_resources else UNSET,
            prompts={"listChanged": True} if self._prompts else UNSET,
            logging={},
            completions={} if self._completion is not None else UNSET,
        )

    # notifications to every client

    async def notify_list_changed(self, kind: str) -> None:
        """Tell every initialized client that the ``kind`` list changed (tools, resources, prompts)."""
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"unknown list kind {kind!r}")
        self.workers.publish("list_changed", kind)  # with a bus: every other worker's clients too
        await self._list_changed_here(kind)

    async def _list_changed_here(self, kind: str) -> None:
        for conn in list(self.connections):
            if conn.initialized and not conn.session.closed:
                with contextlib.suppress(errors.ConnectionClosed):
                    await conn.session.notify(f"notifications/{kind}/list_changed")

    async def notify_resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to the clients subscribed to ``uri``; returns how many.

        With a bus, the other workers send it to their subscribed clients too (not counted here).
        """
        self.workers.publish("resource_updated", uri)
        return await self._resource_updated_here(uri)

    async def _resource_updated_here(self, uri: str) -> int:
        sent = 0
        for conn in list(self.connections):
            if uri in conn.subscriptions and not conn.session.closed:
                with contextlib.suppress(errors.ConnectionClosed):
                    await conn.session.notify("notifications/resources/updated", ResourceUpdatedParams(uri=uri))
                    sent += 1
        return sent

    # URL-mode completion

    async def complete_url_elicitation(self, elicitation_id: str) -> bool:
        """Signal that URL elicitation ``elicitation_id`` finished (call from anywhere in the server).

        Sends ``notifications/elicitation/complete`` to the one connection that
        received that elicitation, and to no other. Returns whether a notice was
        sent from this worker: repeating it, an unknown id, or a connection that is
        gone send nothing.

        With a ``bus``, an id that no session of this worker holds is published for
        the other workers, and returns False (it was not sent *here*): the worker
        whose session holds it sends the notice, once; if none does, nothing is sent.
        """
        conn = self._url_owners.pop(elicitation_id, None)
        if conn is None:
            self.workers.publish("url_complete", elicitation_id)
            return False
        return await conn._send_complete(elicitation_id)

    def warn_if_state_key_random(self) -> None:
        """Log once per server, when its sealing key is random to this process, what that breaks.

        Hosts that may run as one of several workers (the Streamable HTTP app) call it at start.
        """
        if self.state_key_source != "random" or self._warned_random_key:
            return
        self._warned_random_key = True
        logger.warning(RANDOM_KEY_WARNING, self.name)

    @property
    def worker_id(self) -> str:
        """Names this worker on the bus (``Server(worker_id=...)``, the HTTP app's session id prefix, or random)."""
        return self.workers.worker_id

    async def run_background(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run what the server keeps beside its connections until cancelled: the client of a shared
        ``used_states`` store (one with a ``run`` method, as :class:`~minimcp.used_states.RedisUsedStates`),
        and the listener on the ``bus``.

        The Streamable HTTP app, :meth:`serve_stdio` and the WebSocket server start it; when you
        call :meth:`serve` yourself, start it beside (running it twice at once is harmless).
        """
        run = getattr(self.used_states, "run", None)
        async with anyio.create_task_group() as tg:
            if run is not None:
                await tg.start(run)
            if self.workers.bus is not None:
                await tg.start(self.workers.run)
            task_status.started()
            await anyio.sleep_forever()

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
        session = Session(transport, conn, limits=self.limits, name=f"server {self.name}", budget=self.budget)
        session.trace = self.trace
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
            if self.on_connection_closed is not None:
                try:
                    self.on_connection_closed(conn)
                except Exception:
                    logger.exception("on_connection_closed failed")

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout (logs belong on stderr)."""
        from minimcp.transports.stdio import stdio_server

        async with stdio_server(limits=self.limits) as transport, anyio.create_task_group() as tg:
            if self.workers.bus is not None or hasattr(self.used_states, "run"):  # else nothing to run
                await tg.start(self.run_background)
            await self.serve(transport)
            tg.cancel_scope.cancel()

    def run(
        self,
        transport: Literal["stdio", "http", "ws"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        backend: str = "asyncio",
        **options: Any,
    ) -> None:
        """Serve in a new event loop (``backend``: ``"asyncio"`` or ``"trio"``) until stopped.

        ``transport``: ``"stdio"`` (one client on stdin/stdout), ``"http"`` (Streamable
        HTTP at ``http://HOST:PORT/mcp``; the ``http`` extra) or ``"ws"`` (WebSocket at
        ``ws://HOST:PORT/mcp``; the ``ws`` extra). A network transport logs its endpoint
        URL on stderr at start; ``options`` go to :func:`~minimcp.transports.http.serve_http`
        or :func:`~minimcp.transports.websocket.serve_websocket` (``path``, ``allowed_hosts``, ...).

        Ctrl-C stops it quietly: one line on stderr, then ``SystemExit(130)``.

        Raises:
            ImportError: the transport's extra is not installed (the message names it).
        """
        if transport != "stdio":
            from minimcp.serve import run_network

            run_network(self, transport, host=host, port=port, backend=backend, **options)
            return
        if options:
            raise TypeError(f"options {sorted(options)} apply to the http and ws transports only")
        run_until_interrupted(self.serve_stdio, backend=backend, what=f"server {self.name}", logger=logger)


class ServerConnection:
    """Server-side state of one connection: handshake results and dispatch."""

    session: Session

    def __init__(self, server: Server) -> None:
        self.server = server
        self.client_info: Implementation | None = None
        self.client_capabilities = ClientCapabilities()
        self._form_memo: tuple[str | None, ClientCapabilities, tuple[bool, Literal["form"] | UnsetType]] | None = None
        self.protocol_version: str | None = None
        self.initialized = False
        #: URL elicitation ids sent to this connection and not yet completed.
        self.url_elicitations: set[str] = set()
        #: Resource URIs this client subscribed to.
        self.subscriptions: set[str] = set()
        #: The least severe level this client wants log messages for (``logging/setLevel``).
        self.log_level: LoggingLevel = "debug"
        #: ``"legacy"`` (began with initialize), ``"modern"`` (2026-07-28 envelopes), or ``None`` yet.
        self.era: str | None = None
        #: Questions a person is answering for calls that asked for progress (made on first need).
        self.waits: Waits | None = None

    # Dispatcher protocol

    def handle_request(self, session: Session, request: Request) -> Awaitable[Any] | Deferred:
        # A plain function returning the handler's coroutine: one frame less per
        # in-flight request (it is alive for as long as a tool waits on a person).
        method = request.method
        era = self.era
        if era is None and method != "initialize" and modern.has_envelope(request.params):
            era = self.lock_era("modern")
        if era == "modern":
            return self._modern(request)
        if era == "legacy" and modern.has_envelope(request.params):
            raise McpError(
                errors.INVALID_REQUEST,
                "this connection began with initialize (handshake era); open a new connection for "
                "requests of protocol 2026-07-28",
            )
        if method == "ping":
            return _ready(_EMPTY)
        if method == "initialize":
            self.lock_era("legacy")
            return _ready(self._initialize(request))
        if self.protocol_version is None:
            raise McpError(
                errors.INVALID_REQUEST, f"received {method!r} before initialize; send initialize first"
            )
        if method == "tools/call":
            return self._call_tool(request)
        handler = _HANDLERS.get(method)
        if handler is None:
            raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler(self, request)

    def handle_notification(self, session: Session, notification: Notification) -> None:
        if notification.method == "notifications/initialized":
            self.initialized = True
        elif notification.method == "notifications/roots/list_changed":
            callback = self.server.on_roots_changed
            if callback is not None:
                callback(self)

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
            instructions=server.instructions or None,
        )

    async def _list_tools(self, request: Request) -> ListToolsResult:
        params = jsonrpc.decode_params(request.params, PaginatedParams)
        tools, cursor = _page(self.server._tool_list, params.cursor, self.server.limits.page_size)
        return ListToolsResult(tools=tools, next_cursor=cursor)

    async def _list_resources(self, request: Request) -> ListResourcesResult:
        params = jsonrpc.decode_params(request.params, PaginatedParams)
        items = [r.definition for r in self.server._resources.values()]
        page, cursor = _page(items, params.cursor, self.server.limits.page_size)
        return ListResourcesResult(resources=page, next_cursor=cursor)

    async def _list_templates(self, request: Request) -> ListResourceTemplatesResult:
        params = jsonrpc.decode_params(request.params, PaginatedParams)
        items = [t.definition for t in self.server._templates]
        page, cursor = _page(items, params.cursor, self.server.limits.page_size)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def _read_resource(self, request: Request) -> ReadResourceResult:
        uri = jsonrpc.decode_params(request.params, ResourceParams).uri
        fixed = self.server._resources.get(uri)
        if fixed is not None:
            value = await fixed.fn()
            mime = fixed.definition.mime_type
        else:
            for template in self.server._templates:
                variables = template.template.match(uri)
                if variables is not None:
                    value = await template.fn(**variables)
                    mime = template.definition.mime_type
                    break
            else:
                # -32002 is "resource not found" in the handshake-era revisions.
                raise McpError(-32002, f"Resource not found: {uri}", {"uri": uri})
        return ReadResourceResult(contents=to_contents(uri, mime if isinstance(mime, str) else None, value))

    async def _subscribe(self, request: Request) -> dict[str, Any]:
        uri = jsonrpc.decode_params(request.params, ResourceParams).uri
        if len(self.subscriptions) >= self.server.limits.max_subscriptions and uri not in self.subscriptions:
            raise McpError(errors.SERVER_BUSY, "too many resource subscriptions on this session")
        self.subscriptions.add(uri)
        return _EMPTY

    async def _unsubscribe(self, request: Request) -> dict[str, Any]:
        self.subscriptions.discard(jsonrpc.decode_params(request.params, ResourceParams).uri)
        return _EMPTY

    async def _list_prompts(self, request: Request) -> ListPromptsResult:
        params = jsonrpc.decode_params(request.params, PaginatedParams)
        items: list[Prompt] = [p.definition for p in self.server._prompts.values()]
        page, cursor = _page(items, params.cursor, self.server.limits.page_size)
        return ListPromptsResult(prompts=page, next_cursor=cursor)

    def _prompt_and_arguments(self, params: GetPromptParams) -> tuple[RegisteredPrompt, dict[str, str]]:
        prompt = self.server._prompts.get(params.name)
        if prompt is None:
            raise McpError(errors.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = params.arguments if not isinstance(params.arguments, UnsetType) else {}
        missing = sorted(prompt.required - arguments.keys())
        if missing:
            raise McpError(errors.INVALID_PARAMS, f"prompt {params.name!r} needs argument(s): {', '.join(missing)}")
        unknown = sorted(arguments.keys() - prompt.names)
        if unknown:
            raise McpError(errors.INVALID_PARAMS, f"prompt {params.name!r} has no argument(s): {', '.join(unknown)}")
        return prompt, arguments

    async def _get_prompt(self, request: Request) -> GetPromptResult:
        params = jsonrpc.decode_params(request.params, GetPromptParams)
        prompt, arguments = self._prompt_and_arguments(params)
        ctx = Context(self, request.id, params.meta, tool=params.name) if prompt.context_param else None
        return await self._prompt_result(prompt, arguments, ctx)

    async def _prompt_result(
        self, prompt: RegisteredPrompt, arguments: dict[str, str], ctx: Context | None
    ) -> GetPromptResult:
        kwargs: dict[str, Any] = dict(arguments)
        if prompt.context_param is not None:
            kwargs[prompt.context_param] = ctx
        try:
            value = await prompt.fn(**kwargs)
        except ElicitationUnsupported as exc:
            if ctx is not None and ctx.modern and exc.required is not None:
                raise McpError(modern.MISSING_CAPABILITY, str(exc), {"requiredCapabilities": exc.required}) from None
            raise McpError(errors.INVALID_PARAMS, str(exc)) from None
        finally:
            if ctx is not None:
                ctx.finished = True
        description = prompt.definition.description
        return to_prompt_result(value, description if isinstance(description, str) else None)

    async def _complete(self, request: Request) -> CompleteResult:
        params = jsonrpc.decode_params(request.params, CompleteParams)
        handler = self.server._completion
        values: list[str] = []
        if handler is not None:
            context = params.context.get("arguments", {}) if isinstance(params.context, dict) else {}
            values = list(await handler(params.ref, params.argument.name, params.argument.value, dict(context)))
        # The spec caps a completion at 100 values.
        return CompleteResult(
            completion=Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    async def _set_level(self, request: Request) -> dict[str, Any]:
        self.log_level = jsonrpc.decode_params(request.params, SetLevelParams).level
        return _EMPTY

    def _call_tool(self, request: Request) -> Awaitable[CallToolResult] | Deferred:
        params = jsonrpc.decode_params(request.params, _CallToolWire)
        tool = self.server._tools.get(params.name)
        if tool is None:
            raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            kwargs = tool.arguments(params.arguments)
        except msgspec.DecodeError as exc:  # a validation error, or bytes that are not valid UTF-8
            return _ready(error_result(argument_error(params.name, exc)))
        ctx: Context | None = None
        if tool.context_param is not None:
            ctx = kwargs[tool.context_param] = Context(self, request.id, params.meta, tool=params.name)
        # The tool's coroutine is made here, so the arguments dict is not kept alive beside it.
        return _ToolRun(self, tool, params.name, tool.fn(**kwargs), ctx, False)

    # the modern revision (2026-07-28)

    def lock_era(self, era: str) -> str:
        """Serve this connection by the rules of ``era`` (``"legacy"`` or ``"modern"``) from now on."""
        self.era = era
        if era == "modern":
            self.session.protocol_version = LATEST_MODERN
            self.session.answer_ping = False  # ping does not exist on the modern revision
        return era

    async def _modern(self, request: Request) -> Any:
        method = request.method
        if method == "initialize" and not modern.has_envelope(request.params):
            raise McpError(
                modern.UNSUPPORTED_VERSION,
                "this connection speaks protocol 2026-07-28 (no initialize); open a new connection to use "
                "the handshake",
                {"supported": list(MODERN), "requested": _requested_version(request.params)},
            )
        envelope = modern.read_envelope(request.params)
        info = self.server.info
        if method == "server/discover":
            server = self.server
            result: dict[str, Any] = {
                "supportedVersions": [*MODERN, *reversed(SUPPORTED)],
                "capabilities": msgspec.to_builtins(_modern_capabilities(server.capabilities())),
            }
            if server.instructions:
                result["instructions"] = server.instructions
            return modern.complete(result, info, cacheable=True)
        if method == "tools/call":
            return await self._call_tool_modern(request, envelope)
        if method in _MODERN_CACHEABLE:
            return modern.complete(await _HANDLERS[method](self, request), info, cacheable=True)
        if method == "resources/read":
            try:
                value = await self._read_resource(request)
            except McpError as exc:
                if exc.code == -32002:  # resource-not-found is -32602 from 2026-07-28 on
                    raise McpError(errors.INVALID_PARAMS, exc.message, exc.data) from None
                raise
            return modern.complete(value, info, cacheable=True)
        if method == "prompts/get":
            return await self._get_prompt_modern(request, envelope)
        if method == "completion/complete":
            return modern.complete(await _HANDLERS[method](self, request), info)
        raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _call_tool_modern(self, request: Request, envelope: Envelope) -> dict[str, Any]:
        server = self.server
        params = jsonrpc.decode_params(request.params, _CallToolWire)
        tool = server._tools.get(params.name)
        if tool is None:
            raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            kwargs = tool.arguments(params.arguments)
        except msgspec.DecodeError as exc:
            return modern.complete(error_result(argument_error(params.name, exc)), server.info)
        arguments: Any = msgspec.json.decode(params.arguments or b"{}") if tool.args_type is not None else {}
        name, context_param = params.name, tool.context_param

        def body(ctx: Context | None) -> Awaitable[Any]:
            call = dict(kwargs)
            if context_param is not None:
                call[context_param] = ctx
            return _ToolRun(self, tool, name, tool.fn(**call), ctx, True)

        return await self._rounds(
            request, envelope, "tools/call", name, arguments, params, context_param is not None, body
        )

    async def _get_prompt_modern(self, request: Request, envelope: Envelope) -> dict[str, Any]:
        params = jsonrpc.decode_params(request.params, GetPromptParams)
        prompt, arguments = self._prompt_and_arguments(params)
        return await self._rounds(
            request,
            envelope,
            "prompts/get",
            params.name,
            arguments,
            params,
            prompt.context_param is not None,
            lambda ctx: self._prompt_result(prompt, arguments, ctx),
        )

    async def _rounds(
        self,
        request: Request,
        envelope: Envelope,
        method: str,
        name: str,
        arguments: Any,
        params: Any,
        wants_context: bool,
        body: Callable[[Context | None], Awaitable[Any]],
    ) -> dict[str, Any]:
        """Serve one round of a multi round-trip request (tools/call, prompts/get) on 2026-07-28.

        A new call starts ``body`` in a :class:`Run`; a retry resumes the parked run
        named in its ``requestState``, or replays ``body`` with the recorded answers.
        """
        server = self.server
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
            state = await modern.use_state(
                server.sealer, server.used_states, params.request_state, now=now, binding=binding
            )
            keys = [str(k) for k in state.get("ks", [])]
            digests, asked_at, timeout = modern.asked(state)
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
                    return self._input_required(run, binding)
                else:
                    run.deliver(inputs)
            else:
                if method == "tools/call" and name in server._not_replayable:
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
                run = self._start_run(
                    name, envelope, request, params.meta, wants_context, body, recorded,
                    call_id if isinstance(call_id, str) else None,
                    asked=(digests, asked_at) if asked_at is not None else None,
                )
        else:
            # A first call may carry answers to questions asked by name (key=...).
            run = self._start_run(name, envelope, request, params.meta, wants_context, body, [], offered=inputs)
        try:
            kind, value = await run.next_outcome()
        except BaseException:
            run.scope.cancel()  # the client gave up on this round: stop the call
            raise
        if kind == "question":
            return self._input_required(run, binding)
        if kind == "error":
            if isinstance(value, UrlElicitationRequired):
                return self._url_steps_required(value, binding)
            raise value
        return modern.complete(value, server.info)

    def _start_run(
        self,
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
        run = Run(name, recorded, call_id, offered, asked=asked)
        ctx: Context | None = None
        if wants_context:
            ctx = run.context = Context(self, request.id, meta, envelope, run, tool=name)
        self.session.spawn(self._drive, run, name, body, ctx)
        return run

    async def _drive(
        self, run: Run, name: str, body: Callable[[Context | None], Awaitable[Any]], ctx: Context | None
    ) -> None:
        try:
            with run.scope:
                try:
                    result = await body(ctx)
                except McpError as exc:
                    run.finish("error", exc)
                else:
                    run.finish("done", result)
        finally:
            if ctx is not None:
                ctx.finished = True
            self.server.parking.discard(run)
            if not run.finished:
                run.finish("error", McpError(errors.INTERNAL_ERROR, f"the call of {name!r} was abandoned"))

    def _input_required(self, run: Run, binding: dict[str, Any]) -> dict[str, Any]:
        """Park ``run`` and answer ``input_required`` with its open questions (and a fresh state)."""
        server = self.server
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
            run.scope.cancel()
            text = (
                f"the call of {run.tool!r} cannot go on: the answers it carries to its next question "
                f"are too large ({exc.size} bytes sealed, limit {exc.limit})"
            )
            logger.warning("%s", text)
            if binding["m"] != "tools/call":
                raise McpError(errors.INTERNAL_ERROR, text) from None
            return modern.complete(error_result(text), server.info)
        if server.replay_every_retry:
            run.scope.cancel()  # dropped at once, as on a full park table: the retry replays
        else:
            server.parking.park(run)
        requests = {key: q.to_wire() for key, q in zip(keys, questions, strict=True)}
        result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
        return modern.complete(result, self.server.info)

    def _url_steps_required(self, exc: UrlElicitationRequired, binding: dict[str, Any]) -> dict[str, Any]:
        # -32042 does not exist on 2026-07-28: the steps become URL input requests, and the
        # retry simply runs the tool again (it checks for itself whether the steps are done).
        requests = {
            f"url{i + 1}": {"method": "elicitation/create",
                            "params": {"mode": "url", "message": item.message, "url": item.url}}
            for i, item in enumerate(exc.elicitations)
        }
        state = self.server.sealer.seal({**binding, "h": None, "ks": [], "ans": []}, now=time.time(),
                                        ttl=self.server.state_ttl)
        result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
        return modern.complete(result, self.server.info)

    # elicitation support used by Context

    def can_elicit_form(self) -> bool:
        """Whether this (handshake-era) client declared form elicitation."""
        return self.form_questions()[0]

    def form_questions(self) -> tuple[bool, Literal["form"] | UnsetType]:
        """For form questions to this (handshake-era) client: whether they may be asked, and the
        ``mode`` they carry (``"form"`` from 2025-11-25 on). Worked out once per handshake."""
        version, caps = self.protocol_version, self.client_capabilities
        memo = self._form_memo
        if memo is None or memo[0] is not version or memo[1] is not caps:
            allowed = capabilities.can_elicit_form(version, caps)
            url_era = version is not None and supports(version, Feature.ELICITATION_URL)
            mode: Literal["form"] | UnsetType = "form" if url_era else UNSET
            memo = self._form_memo = (version, caps, (allowed, mode))
        return memo[2]

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
        """Whether this (handshake-era) client declared URL-mode elicitation."""
        return capabilities.can_elicit_url(self.protocol_version, self.client_capabilities)


_EMPTY: dict[str, Any] = {}


class _ToolRun(Deferred):
    """One ``tools/call``: the tool's coroutine, and how its outcome becomes the call's result."""

    __slots__ = ("connection", "ctx", "modern_call", "name", "tool")

    def __init__(
        self,
        connection: ServerConnection,
        tool: RegisteredTool,
        name: str,
        call: Awaitable[Any],
        ctx: Context | None,
        modern_call: bool,
    ) -> None:
        self.awaitable = call
        self.connection = connection
        self.tool = tool
        self.name = name
        self.ctx = ctx
        self.modern_call = modern_call

    def finish(self, value: Any, error: BaseException | None) -> CallToolResult:
        if self.ctx is not None:
            self.ctx.finished = True  # no progress after the call ends
        if error is None:
            return to_result(self.tool, value)
        name, connection = self.name, self.connection
        try:
            raise error
        except ToolError as exc:
            return error_result(str(exc) or f"tool {name!r} failed")
        except ElicitationUnsupported as exc:
            if self.modern_call and exc.required is not None:
                raise McpError(modern.MISSING_CAPABILITY, str(exc), {"requiredCapabilities": exc.required}) from None
            return error_result(str(exc))
        except forms.FormDefinitionError as exc:
            # The tool's own form is broken: the person cannot be asked; its author must hear of it.
            logger.error("tool %r asked a question with a form that cannot be sent: %s", name, exc)
            return error_result(str(exc))
        except (forms.FormValidationError, InvalidElicitationUrl) as exc:
            return error_result(str(exc))
        except QuestionFailed as exc:
            return error_result(f"tool {name!r} could not finish: {exc.describe()}")
        except UrlElicitationRequired as exc:
            if not self.modern_call and not connection.can_elicit_url():
                for item in exc.elicitations:
                    connection._forget_url(item.elicitation_id)
                return error_result(
                    f"tool {name!r} needs the person to complete a step in their browser, and this client "
                    "cannot open links (it did not declare URL-mode elicitation)"
                )
            raise
        except (errors.RequestTimeout, errors.TooManyPending, errors.RequestCancelled) as exc:
            return error_result(f"tool {name!r} could not finish: {exc.message}")
        except McpError:
            raise
        except Exception:
            logger.exception("tool %r raised", name)
            if self.tool.unchecked:
                return error_result(unchecked_failure(self.tool, name))
            return error_result(f"tool {name!r} failed with an internal error")


async def _ready(value: T) -> T:
    """An awaitable of a value that is already known."""
    return value


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


_MODERN_CACHEABLE = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})

_HANDLERS: dict[str, Callable[[ServerConnection, Request], Awaitable[Any]]] = {
    "tools/list": ServerConnection._list_tools,
    "resources/list": ServerConnection._list_resources,
    "resources/templates/list": ServerConnection._list_templates,
    "resources/read": ServerConnection._read_resource,
    "resources/subscribe": ServerConnection._subscribe,
    "resources/unsubscribe": ServerConnection._unsubscribe,
    "prompts/list": ServerConnection._list_prompts,
    "prompts/get": ServerConnection._get_prompt,
    "completion/complete": ServerConnection._complete,
    "logging/setLevel": ServerConnection._set_level,
}
