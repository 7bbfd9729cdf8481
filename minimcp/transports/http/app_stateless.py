"""The stateless 2026-07-28 leg of the HTTP app: header checks, then one request answered per POST."""

from __future__ import annotations

import contextvars
import functools
import itertools
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec

import minimcp.transports.http._headers as mcp_headers
from minimcp.core.dispatch import answer
from minimcp.transports._client_bounds import client_key
from minimcp.transports._ports import PARK_OWNER
from minimcp.transports.http._asgi import SSE_HEADERS, Receive, Scope, Send, read_body, respond
from minimcp.transports.http._sse import PING, encode_event
from minimcp.transports.http._wire import JSON
from minimcp.wire import errors, jsonrpc
from minimcp.wire.envelope import HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION
from minimcp.wire.jsonrpc import Notification, Request, RequestId
from minimcp.wire.versions import has_envelope, is_modern, is_supported

if TYPE_CHECKING:
    from minimcp.auth.config import Authorization
    from minimcp.auth.principal import Principal
    from minimcp.core.dispatch import Dispatcher
    from minimcp.core.session import Session
    from minimcp.core.transport import Transport
    from minimcp.transports._ports import Servable, StatelessConnection
    from minimcp.wire.types import Tool

__all__ = ["StatelessConnector", "StatelessLeg", "claims_modern", "dispatch", "wants_modern"]

#: Makes the connection that serves every 2026-07-28 POST of an app, over the transport given:
#: its dispatcher (locked to revision 2026-07-28) and its session, not yet running.
StatelessConnector = Callable[["Transport"], "tuple[StatelessConnection, Session]"]

logger = logging.getLogger("minimcp.http")

#: Messages a request may send (progress, logs) before its POST's reader takes them.
_NOTES_BUFFER = 16

#: Seconds between the sweeps that give a 2026-07-28 request still running its watcher (the
#: second sweep that finds it running starts one): a request answered sooner, the common case,
#: never has one. So a client's disconnect is noticed within about two sweeps. (At most a quarter
#: of ``keepalive_interval``, so that a watcher is there in time for the first keep-alive.)
_WATCH_SWEEP = 0.25

#: Error codes a modern POST answers with HTTP 400 (-32601 gets 404; others 200).
_MODERN_BAD_REQUEST = frozenset(
    {
        errors.PARSE_ERROR,
        errors.INVALID_REQUEST,
        errors.INVALID_PARAMS,
        HEADER_MISMATCH,
        MISSING_CAPABILITY,
        UNSUPPORTED_VERSION,
    }
)


def modern_status(code: int) -> int:
    """The HTTP status of a modern error response with JSON-RPC error ``code``."""
    if code in _MODERN_BAD_REQUEST:
        return 400
    return 404 if code == errors.METHOD_NOT_FOUND else 200


def wants_modern(headers: Mapping[str, str]) -> bool:
    """Whether the headers ask for the stateless (2026-07-28) leg.

    Yes for a modern ``MCP-Protocol-Version``; also for any other value that is
    not a handshake-era revision unless the request names a session (then the
    session answers it: ``400``, unsupported version).
    """
    version = headers.get("mcp-protocol-version")
    if version is None:
        return False
    version = version.strip(" \t")
    return is_modern(version) or (not is_supported(version) and "mcp-session-id" not in headers)


def claims_modern(message: jsonrpc.Message) -> bool:
    """A request or notification whose params carry the 2026-07-28 ``_meta`` envelope."""
    return (type(message) is Request or type(message) is Notification) and has_envelope(message.params)


async def _respond_modern_error(
    send: Send, id: RequestId | None, code: int, message: str, data: Any = msgspec.UNSET, *, status: int | None = None
) -> None:
    body = jsonrpc.encode_error(id, code, message, data)
    await respond(send, status if status is not None else modern_status(code), body, content_type=JSON)


async def dispatch(
    connection: Dispatcher, session: Session, request: Request, reply_id: RequestId
) -> tuple[int, bytes]:
    """Answer one 2026-07-28 request: its HTTP status and its reply, under the client's id ``reply_id``.

    The reply is :func:`minimcp.core.dispatch.answer`'s (the one McpError / Exception -> JSON-RPC
    mapping, shared with the session); this leg adds only the HTTP status of an error
    (:func:`modern_status`).
    """
    reply, code = await answer(
        functools.partial(connection.handle_request, session), request, reply_id=reply_id, log=logger
    )
    return (200 if code is None else modern_status(code)), reply


class _Post:
    """One 2026-07-28 POST while its request runs: its cancel scope, the notes waiting to be written.

    The request's own task runs the handler. A request still running at a second sweep (see
    ``_WATCH_SWEEP``), or sending a note, gets one watcher task (:meth:`StatelessLeg._watch`):
    it waits for the client's ``http.disconnect`` (which cancels the request) and writes the
    notes (switching the reply to SSE) and keep-alives. A request answered before that, the
    common case, is a single JSON body: no task, no stream, no buffer.
    """

    __slots__ = ("done", "notes", "receive", "room", "scope", "seen", "send", "streaming", "wake", "watched")

    def __init__(self, receive: Receive, send: Send) -> None:
        self.receive = receive
        self.send = send
        self.scope = anyio.CancelScope()  # the request's, cancelled when its client goes away
        self.notes: deque[bytes] = deque()
        #: The watcher's wait for ``http.disconnect``, while it waits (cancelled: there is work).
        self.wake: anyio.CancelScope | None = None
        #: Set (lazily) when a full buffer gets room.
        self.room: anyio.Event | None = None
        #: When a sweep first found the request running (``None``: not yet).
        self.seen: float | None = None
        #: Set when the watcher has ended (``None``: the request has no watcher).
        self.watched: anyio.Event | None = None
        self.streaming = False  # the SSE response has started
        self.done = False  # the handler has answered: the watcher writes what is queued and ends

    def poke(self) -> None:
        """Wake the watcher (it has notes to write, or the request is done)."""
        if self.wake is not None:
            self.wake.cancel()


class _ModernTransport:
    """The inert transport under an app's modern connection.

    Nothing arrives on it (each POST hands its request to the connection
    directly); what the connection sends for a request (progress, log
    messages) goes to that request's POST, found by the request's internal id,
    and is dropped when that POST has ended.

    A POST whose client stops reading stops taking messages; once its buffer
    (``_NOTES_BUFFER``) is full, the sender waits at most ``write_timeout`` for
    room (the bound of a write to a response stream,
    ``Limits.stream_write_timeout``), then that client is treated as gone: its
    later messages are dropped and the handler goes on.
    """

    def __init__(self, write_timeout: float) -> None:
        self.routes: dict[RequestId, _Post] = {}
        self.write_timeout = write_timeout
        #: Gives a POST its watcher (set by the leg when it starts).
        self.watch: Callable[[_Post], None] = lambda post: None
        self._closed = anyio.Event()

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Queue ``message`` for its POST if there is room (dropped, and ``True``, when it has none)."""
        post = self.routes.get(related) if related is not None else None
        if post is None:
            return True  # nothing travels on modern HTTP outside a request's own response
        if len(post.notes) >= _NOTES_BUFFER:
            return False
        post.notes.append(message)
        if post.watched is None:
            self.watch(post)
        else:
            post.poke()
        return True

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        if related is None or self.send_nowait(message, related=related):
            return
        post = self.routes[related]  # (send_nowait found it, its buffer full)
        with anyio.move_on_after(self.write_timeout) as waited:
            while len(post.notes) >= _NOTES_BUFFER and self.routes.get(related) is post:
                if post.room is None:
                    post.room = anyio.Event()
                await post.room.wait()
        if waited.cancelled_caught:
            logger.info(
                "modern request %r: the client read nothing for %g s; treated as gone (later messages dropped)",
                related,
                self.write_timeout,
            )
            if self.routes.get(related) is post:
                del self.routes[related]
            return
        if self.routes.get(related) is post:
            post.notes.append(message)
            post.poke()

    async def receive(self) -> bytes:
        await self._closed.wait()
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        self._closed.set()


class _ModernHost:
    """The one connection serving every 2026-07-28 POST of an app (made by the app's first 2026-07-28 request)."""

    __slots__ = ("connection", "ids", "session", "transport")

    def __init__(self, connection: Dispatcher, session: Session, transport: _ModernTransport) -> None:
        self.connection = connection
        self.session = session
        self.transport = transport
        self.ids = itertools.count(1)


class StatelessLeg:
    """The app's 2026-07-28 POSTs: no sessions; every request is answered on its own POST.

    Every request is handled by one long-lived connection, whose task group (the
    app's, given to :meth:`start`) hosts the tool runs, so that a tool parked
    between rounds outlives the POST that started it. The connection is made by
    the first 2026-07-28 request, so an app that serves only the handshake era
    never loads this revision's run machinery.

    With authorization (``auth``), the app has verified each POST's bearer token and gives its
    principal to :meth:`post` / :meth:`message`: a request whose operation needs scopes the token
    lacks is answered ``403`` before anything runs, and the others reach the server with their
    person (there is no session to hold it; see :class:`~minimcp.auth.request.AuthenticatedRequest`).
    """

    def __init__(
        self,
        server: Servable,
        connect: StatelessConnector,
        *,
        max_message_bytes: int,
        max_parked_per_client: int,
        keepalive_interval: float,
        stream_write_timeout: float | None = None,
        auth: Authorization | None = None,
    ) -> None:
        self.server = server
        #: The app's authorization (``None``: off; then no request carries a principal).
        self.auth = auth
        self._connect = connect
        self.max_message_bytes = max_message_bytes
        self.max_parked_per_client = max_parked_per_client
        self.keepalive_interval = keepalive_interval
        # (None: the server's Limits.stream_write_timeout)
        self.stream_write_timeout = (
            server.limits.stream_write_timeout if stream_write_timeout is None else stream_write_timeout
        )
        self._host: _ModernHost | None = None
        self._tg: anyio.abc.TaskGroup | None = None  # the app's, while it runs: hosts the connection when made
        self._opening: anyio.Lock | None = None  # one first request makes the connection, the others wait for it
        self._unserved = False  # the app is bound to no role: the handshake era only (503 here)
        self._context = contextvars.Context()
        self._sweeper: anyio.Event | None = None  # set to wake the sweeps when a first POST comes
        # tool name -> (its definition, its x-mcp-header annotations), recomputed when the definition changes
        self._annotations: dict[str, tuple[Tool, tuple[mcp_headers.ParamHeader, ...]]] = {}

    @property
    def connection(self) -> Dispatcher | None:
        return self._host.connection if self._host is not None else None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Take the app's task group: the first 2026-07-28 request starts its connection there (and its parked
        tool calls run there)."""
        self._tg, self._opening = tg, anyio.Lock()
        # What the app's tasks start from: the connection is made in a request's task, but must not take that
        # request's context along (its runs, parked, would hold it; they start from the session's context).
        self._context = contextvars.copy_context()

    async def _opened(self) -> _ModernHost | None:
        """The connection serving every 2026-07-28 POST, made by the first (``None``: the app is not running)."""
        tg, opening = self._tg, self._opening
        if tg is None or opening is None or self._unserved:
            return None
        async with opening:
            if self._host is not None or self._unserved:
                return self._host
            transport = _ModernTransport(self.stream_write_timeout)
            try:
                conn, session = self._connect(transport)
            except NotImplementedError:  # an app bound to no role: the handshake era only (503 here)
                self._unserved = True
                return None
            if self.auth is not None:  # each request's own principal decides what its lists show
                conn.hide_unpermitted = self.auth.hide_unpermitted
            started = anyio.Event()

            async def run_in_the_apps_context() -> None:
                try:
                    await tg.start(session.run)
                    transport.watch = functools.partial(self._start_watch, tg)
                    tg.start_soon(self._sweep, tg, transport.routes)
                    self._host = _ModernHost(conn, session, transport)
                finally:
                    started.set()

            self._context.run(tg.start_soon, run_in_the_apps_context)
            await started.wait()
            return self._host

    def close(self) -> None:
        """End the connection: parked tool calls end (their retries replay, see :mod:`minimcp.server.mrtr.run`)."""
        if self._host is not None:
            self._host.session.close()

    def stopped(self) -> None:
        self._host = self._tg = self._opening = None
        self._sweeper = None

    async def post(
        self,
        headers: Mapping[str, str],
        receive: Receive,
        send: Send,
        scope: Scope,
        *,
        principal: Principal | None = None,
    ) -> None:
        """A POST with a 2026-07-28 ``MCP-Protocol-Version``: any session id is ignored. ``principal``: whom
        its bearer token names (authorization on; the app verified it)."""
        body = await read_body(headers, receive, send, self.max_message_bytes, headers.get("mcp-protocol-version"))
        if body is None:
            return
        if self._host is None:
            await self._opened()  # (before the trace: the first request is recorded on the connection too)
        self._trace("receive", body)
        try:
            message = jsonrpc.decode(body)
        except jsonrpc.InvalidMessage as exc:
            await _respond_modern_error(send, exc.id, exc.code, exc.message)
            return
        await self.message(headers, message, receive, send, scope, principal=principal)

    def _trace(self, direction: str, data: bytes, related: RequestId | None = None) -> None:
        """Record a 2026-07-28 POST's request or final reply (its notifications go through the session)."""
        host, trace = self._host, self.server.trace
        if trace is not None and host is not None:
            trace.record(host.session.name, direction, data, related=related, origin=host.session)

    async def message(
        self,
        headers: Mapping[str, str],
        message: jsonrpc.Message,
        receive: Receive,
        send: Send,
        scope: Scope,
        *,
        principal: Principal | None = None,
    ) -> None:
        """Answer one decoded 2026-07-28 message (its headers checked against its body first, then, with
        authorization, the scopes its operation needs against ``principal``'s)."""
        if self._host is None:
            await self._opened()
        if type(message) is not Request and type(message) is not Notification:
            await _respond_modern_error(
                send,
                None,
                errors.INVALID_REQUEST,
                "a POST carries one request or notification on protocol 2026-07-28, never a response",
            )
            return
        problem = mcp_headers.header_problem(headers, message.method, message.params, self._tool_annotations)
        if problem is not None:
            request_id = message.id if type(message) is Request else None
            await _respond_modern_error(send, request_id, HEADER_MISMATCH, f"Header mismatch: {problem}")
            return
        if type(message) is Request:
            if self.auth is not None and await self._refused_scopes(message, principal, send):
                return
            await self._request(message, receive, send, scope, principal)
        else:  # This revision defines no client notifications on HTTP (cancelling is closing the stream).
            await respond(send, 202)

    async def _refused_scopes(self, message: Request, principal: Principal | None, send: Send) -> bool:
        """Whether ``message`` was answered ``403 insufficient_scope``: its operation (the tool, prompt or
        resource it names) needs scopes ``principal``'s token does not grant. Nothing of it has run; the
        challenge names every scope the operation needs, so a client asks for them all at once."""
        auth = self.auth
        assert auth is not None
        needed = self.server.scopes_needed(message.method, message.params)
        if not needed:
            return False
        granted = principal.scopes if principal is not None else frozenset()
        if needed <= granted:
            return False
        from minimcp.auth.resource import challenge

        wanted = needed | auth.required_scopes
        auth.metrics.insufficient_scope += 1
        logger.info("modern request %r: %s needs scopes the token lacks (403)", message.id, message.method)
        body = jsonrpc.encode_error(
            message.id,
            errors.INVALID_REQUEST,
            "insufficient scope: this operation needs " + " ".join(sorted(wanted)),
            {"reason": "insufficient_scope", "scopes": sorted(wanted)},
        )
        await respond(
            send,
            403,
            body,
            content_type=JSON,
            headers=[(b"www-authenticate", challenge(auth, scopes=wanted).encode())],
        )
        return True

    def _tool_annotations(self, name: str) -> tuple[mcp_headers.ParamHeader, ...]:
        """The ``x-mcp-header`` annotations of tool ``name`` (none for an unknown tool)."""
        definition = self.server.tool_definition(name)
        if definition is None:
            return ()
        cached = self._annotations.get(name)
        if cached is not None and cached[0] is definition:
            return cached[1]
        try:
            found = mcp_headers.param_headers(definition.input_schema)
        except ValueError as exc:
            logger.warning("tool %r: ignoring its x-mcp-header annotations: %s", name, exc)
            found = ()
        self._annotations[name] = (definition, found)
        return found

    async def _request(
        self, message: Request, receive: Receive, send: Send, scope: Scope, principal: Principal | None = None
    ) -> None:
        """Serve one 2026-07-28 request on its own POST: JSON, or SSE once a notification comes first.

        The handler runs in this task; a request that runs on, or sends a note, gets a watcher
        task (:meth:`_watch`) that turns a client disconnect into its cancellation and writes
        its notes and keep-alives.
        """
        host = self._host
        if host is None:
            await _respond_modern_error(
                send,
                message.id,
                errors.SERVER_BUSY,
                "the MCP server is not running (serve the app with ASGI lifespan, or run StreamableHTTPApp.run)",
                status=503,
            )
            return
        # An app-unique id: clients of a stateless server all number their requests from 1.
        internal = next(host.ids)
        post = _Post(receive, send)
        routes = host.transport.routes
        if not routes and self._sweeper is not None:
            self._sweeper.set()
            self._sweeper = None
        routes[internal] = post
        final: tuple[int, bytes] | None = None
        try:
            # Parked calls count against the client: set in this task's context while the request is
            # served, reset before the reply is written (what the ASGI server schedules while it
            # writes, a keep-alive timer, copies this context; a run parked by the request starts
            # from its session's context, see _backend.Handlers.start_detached).
            # (With authorization on, the person's parked calls are bounded as the address's are.)
            person = principal.key if principal is not None else None
            token = PARK_OWNER.set((client_key(scope), self.max_parked_per_client, person))
            try:
                with post.scope:
                    if principal is None:
                        request = Request(id=internal, method=message.method, params=message.params)
                    else:  # the person travels with the request: the connection serves everyone
                        from minimcp.auth.request import AuthenticatedRequest  # (authorization on: loaded)

                        request = AuthenticatedRequest(
                            id=internal, method=message.method, params=message.params, principal=principal
                        )
                    final = await dispatch(host.connection, host.session, request, message.id)
            finally:
                PARK_OWNER.reset(token)
                # Nothing more reaches this POST.
                if routes.get(internal) is post:
                    del routes[internal]
                post.done = True
                if post.room is not None:
                    post.room.set()
            watched = post.watched
            if final is None:  # the client went away: its watcher cancelled the request
                if watched is not None:
                    await watched.wait()
                return
            self._trace("send", final[1], message.id)
            if watched is None or not (post.streaming or post.notes):
                # The common case: one JSON body. A watcher, if any, then ends on the http.disconnect
                # that follows a sent response (ASGI), at the latest when its keep-alive wait runs out.
                await respond(send, final[0], final[1], content_type=JSON)
                if watched is not None:
                    await watched.wait()
                return
            post.poke()  # the watcher writes what is queued, then ends; the reply goes last
            await watched.wait()
            await send({"type": "http.response.body", "body": encode_event(final[1]), "more_body": False})
        except OSError:  # the ASGI server could not write: the client is gone
            logger.debug("modern request %r: client went away", message.id)
        finally:
            if routes.get(internal) is post:
                del routes[internal]

    def _start_watch(self, tg: anyio.abc.TaskGroup, post: _Post) -> None:
        """Give a running request its watcher (in the app's task group ``tg``)."""
        if post.watched is None and not post.done:
            post.watched = anyio.Event()
            tg.start_soon(self._watch, post)

    async def _sweep(self, tg: anyio.abc.TaskGroup, routes: dict[RequestId, _Post]) -> None:
        """Every ``_WATCH_SWEEP``: a watcher for each request found running by the previous sweep too."""
        pause = min(_WATCH_SWEEP, self.keepalive_interval / 4)
        while True:
            if not routes:
                self._sweeper = idle = anyio.Event()
                await idle.wait()
            await anyio.sleep(pause)
            now = anyio.current_time()
            for post in routes.values():
                if post.watched is None:
                    if post.seen is None:
                        post.seen = now
                    else:
                        self._start_watch(tg, post)

    async def _watch(self, post: _Post) -> None:
        """Beside a request's handler: its notes and keep-alives written as SSE, a disconnect cancels it.

        The client closing the response stream IS the cancellation (2026-07-28). Ends once the
        handler is done and every queued note is written, or once the client has gone.
        """
        receive, send = post.receive, post.send
        since = post.seen  # the first keep-alive is due keepalive_interval after the request was seen
        try:
            while True:
                if post.notes:
                    chunk = encode_event(post.notes.popleft())
                    if post.room is not None:
                        post.room.set()
                        post.room = None
                elif post.done:
                    return
                else:
                    deadline = (anyio.current_time() if since is None else since) + self.keepalive_interval
                    since = None
                    with anyio.CancelScope(deadline=deadline) as post.wake:
                        while (await receive())["type"] != "http.disconnect":
                            pass
                        if not post.done:  # (done: the reply is sent, this is the end of the exchange)
                            post.scope.cancel()
                        return
                    post.wake = None
                    if post.notes or post.done:
                        continue
                    chunk = PING  # silent for keepalive_interval: hold the connection open
                if not post.streaming:
                    post.streaming = True
                    await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except OSError:  # the ASGI server could not write: the client is gone
            post.scope.cancel()
        finally:
            post.wake = None
            if post.watched is not None:
                post.watched.set()
