"""StreamableHTTPApp: the ASGI app of one MCP endpoint, its sessions and lifespan, and handshake-era POST/GET/DELETE."""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections.abc import Awaitable, Collection, Mapping
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import msgspec

import minimcp.transports.http._headers as mcp_headers
from minimcp.core._backend import backend_name
from minimcp.core.config import Limits, check_worker_id
from minimcp.transports._client_bounds import SessionTable, TableFull, client_key
from minimcp.transports._ports import Connection, Servable
from minimcp.transports.http._asgi import (
    ASSUMED_VERSION,
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_ALLOWED_ORIGINS,
    SSE_HEADERS,
    Receive,
    Scope,
    Send,
    accepts,
    end_receive_of,
    park_of,
    read_body,
    respond,
    respond_error,
    scope_headers,
    send_now_of,
)
from minimcp.transports.http._pacing import Pacer
from minimcp.transports.http._response import Reader
from minimcp.transports.http._session_table import HTTPSession, SessionTasks
from minimcp.transports.http._sse import encode_event
from minimcp.transports.http._streams import SessionTransport, Stream
from minimcp.transports.http._wire import JSON, SSE, initialize_version, media_type
from minimcp.transports.http.app_stateless import StatelessLeg, claims_modern, wants_modern
from minimcp.wire import errors, jsonrpc
from minimcp.wire.jsonrpc import Notification, Request
from minimcp.wire.types import CancelledParams
from minimcp.wire.versions import Feature, is_supported, negotiate, supports

if TYPE_CHECKING:
    from minimcp.auth.config import Authorization
    from minimcp.auth.principal import Principal
    from minimcp.transports.http._auth import Gate

__all__ = ["StreamableHTTPApp"]

logger = logging.getLogger("minimcp.http")

#: What a request without a session gets (and an initialize that never came).
_NO_SESSION = "missing MCP-Session-Id header (send initialize first)"
#: What a request for a session that does not exist gets (and one that belongs to another person).
_UNKNOWN_SESSION = "session not found (it ended or expired)"
#: What a request for a session that ended between its lookup and its delivery gets.
_SESSION_ENDED = "session not found (it ended)"
#: Seconds a DELETE waits for its session's work to wind down before answering 204.
_DELETE_WAIT = 5.0
#: Bounds of the idle sweep's period: a quarter of the shortest timeout, within these.
_SWEEP_MIN, _SWEEP_MAX = 0.05, 30.0
#: Random bytes of a session id (its text is about 4/3 as long).
_SESSION_ID_BYTES = 24
#: (Host, Origin) pairs whose check is remembered (the memo is emptied when full).
_CHECKED_MAX = 256
_UNCHECKED = "?"


class StreamableHTTPApp:
    """An MCP server as an ASGI 3 application (Streamable HTTP, one endpoint).

    This class imports no role: it serves any :class:`~minimcp.transports._ports.Servable`
    (a :class:`minimcp.Server` is one; it also makes the connection that serves revision 2026-07-28).

    Args:
        server: The :class:`~minimcp.Server` (tools and handshake). Each HTTP
            session gets its own connection to it.
        path: The MCP endpoint; other paths get ``404``.
        allowed_hosts: ``Host`` header values accepted (``name`` exactly,
            ``name:*`` for any port, ``"*"`` for any host). Default:
            :data:`DEFAULT_ALLOWED_HOSTS` (loopback only).
        allowed_origins: ``Origin`` values accepted when the header is present
            (``scheme://host`` exactly, ``scheme://host:*`` for any port,
            ``"*"`` for any). Default: :data:`DEFAULT_ALLOWED_ORIGINS`.
        session_idle_timeout: Seconds a session without open streams or
            requests lives on; ``None`` never expires sessions.
        max_sessions: Live sessions at most; one more ends the least recently
            used session without pending work (``503`` when all have some).
        keepalive_interval: Seconds between keep-alive comments on an idle stream.
        retry_interval: Seconds a client should wait before reconnecting a
            dropped stream (the SSE ``retry`` field).
        replay_buffer: Events each stream keeps for resumption (and messages the
            standalone stream holds while no GET is open).
        retained_streams: Finished streams per session kept for a client that
            has not read them to the end (oldest dropped first).
        limits: ``max_message_bytes`` bounds a POST body; default: the server's limits.
        metrics_path: Serve the server's elicitation metrics (Prometheus text) on
            ``GET`` at this path (e.g. ``"/metrics"``); ``None``: no such route. The
            ``Host`` / ``Origin`` checks apply to it as to the MCP endpoint.
        session_id_prefix: Name this worker in every session id it issues
            (``w1`` -> ``w1.<random>``), so a load balancer can route a session to its
            worker by the id's prefix. 1 to 32 ASCII letters, digits, ``_`` or ``-``
            (``ValueError`` otherwise). It also names the worker on the server's bus
            unless ``Server(worker_id=...)`` does.
        auth: Turn authorization on (:class:`~minimcp.auth.config.Authorization`): every request to
            the endpoint needs a bearer token for this resource in its ``Authorization`` header
            (``401`` with a ``WWW-Authenticate`` challenge otherwise; ``503`` when the authorization
            server cannot be asked; ``400`` for a token in the query string), the protected resource
            metadata (RFC 9728) is served at its well-known paths, an operation whose ``scopes=``
            the token lacks is refused with ``403 insufficient_scope`` before it runs, a session
            belongs to the person who opened it (another person gets ``404``), and refusals are
            counted on the ``metrics_path`` page. ``None`` (the default): nothing is checked.
    """

    def __init__(
        self,
        server: Servable,
        *,
        path: str = "/mcp",
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        session_idle_timeout: float | None = 1800.0,
        max_sessions: int = 10_000,
        keepalive_interval: float = 15.0,
        retry_interval: float = 1.0,
        replay_buffer: int = 256,
        retained_streams: int = 16,
        limits: Limits | None = None,
        metrics_path: str | None = None,
        session_id_prefix: str | None = None,
        auth: Authorization | None = None,
    ) -> None:
        self.server = server
        self.auth = auth
        self._gate: Gate | None = None
        self._metadata_paths: frozenset[str] = frozenset()
        if auth is not None:
            from minimcp.transports.http._auth import Gate  # an app without authorization never loads it

            self._gate = Gate(auth)
            self._metadata_paths = self._gate.paths
        self._sid_prefix = ""
        if session_id_prefix is not None:
            self._sid_prefix = check_worker_id(session_id_prefix, "session_id_prefix") + "."
            server.workers.adopt_id(session_id_prefix)
        self.path = path.rstrip("/") or "/"
        self.metrics_path = (metrics_path.rstrip("/") or "/") if metrics_path else None
        self.allowed_hosts = tuple(
            h.lower() for h in (DEFAULT_ALLOWED_HOSTS if allowed_hosts is None else allowed_hosts)
        )
        self.allowed_origins = tuple(
            o.lower() for o in (DEFAULT_ALLOWED_ORIGINS if allowed_origins is None else allowed_origins)
        )
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.limits = limits or server.limits
        self.keepalive_interval = keepalive_interval
        self.retry_ms = max(0, round(retry_interval * 1000))
        self.replay_buffer = max(1, replay_buffer)
        self.retained_streams = max(0, retained_streams)
        self._sessions: SessionTable[HTTPSession] = SessionTable(max_sessions, self.limits.max_sessions_per_client)
        self._tg: anyio.abc.TaskGroup | None = None
        self._session_tasks: SessionTasks | None = None  # while running: each session's task
        # (Host, Origin) -> why refused (None: allowed); the same few pairs come again and again
        self._checked: dict[tuple[str | None, str | None], str | None] = {}
        self._pacer = Pacer(keepalive_interval)  # priming events held a moment, keep-alives
        self._ended = self._reader_ended  # one bound method for every response (not one each)
        limits = self.limits
        self._stateless = StatelessLeg(
            server, server.stateless_connection, max_message_bytes=limits.max_message_bytes,
            max_parked_per_client=limits.max_parked_per_client, keepalive_interval=keepalive_interval,
            stream_write_timeout=limits.stream_write_timeout, auth=auth,
        )

    # --- running -------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._tg is not None

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    def session_ids(self) -> list[str]:
        """Ids of the live sessions."""
        return list(self._sessions)

    def connection(self, session_id: str) -> Connection | None:
        """The server connection of a live session (for inspection and tests)."""
        sess = self._sessions.get(session_id)
        return sess.connection if sess is not None else None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the sessions' task group until cancelled (ASGI lifespan calls this for you).

        When it ends, every session ends.
        """
        if self._tg is not None:
            raise RuntimeError("this StreamableHTTPApp is already running")
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self.server.warn_if_state_key_random()  # several workers need one key (issue 18)
                await tg.start(self.server.run_background)  # e.g. the client of a shared used-state store
                await self._stateless.start(tg)
                tg.start_soon(self._expire_idle)
                await self._pacer.run(tg, lambda: [sess.transport for sess in self._sessions.values()])
                async with SessionTasks() as self._session_tasks:
                    task_status.started()
                    await anyio.sleep_forever()
        finally:
            self._tg = self._session_tasks = None
            self.close()
            self._stateless.stopped()

    def close(self) -> None:
        """End every session now (their open streams finish; their work is cancelled).

        Tool calls of revision 2026-07-28 parked between rounds end too (their
        retries replay, see :mod:`minimcp.server.mrtr.run`).
        """
        for sess in self._sessions.values():
            self._end(sess)
        self._stateless.close()

    def end_session(self, session_id: str) -> bool:
        """End one session, as a DELETE would. False when there is no such session."""
        sess = self._sessions.get(session_id)
        if sess is None:
            return False
        self._end(sess)
        return True

    def _end(self, sess: HTTPSession) -> None:
        self._sessions.remove(sess)
        sess.transport.close()
        if sess.connection is not None:
            sess.connection.session.close()

    async def _expire_idle(self) -> None:
        idle = self.session_idle_timeout
        fresh = math.inf if self.limits.initialize_timeout is None else self.limits.initialize_timeout
        shortest = fresh if idle is None else min(idle, fresh)
        interval = min(max(shortest / 4, _SWEEP_MIN), _SWEEP_MAX)
        while True:
            await anyio.sleep(interval)
            self._expire(idle, fresh)

    def _expire(self, idle: float | None, fresh: float) -> None:
        # A method of its own, so that no loop variable keeps the last session (and all it holds)
        # alive while the loop above sleeps.
        for sess in self._sessions.expired(anyio.current_time(), idle, fresh):
            self._end(sess)

    async def _run_session(
        self, sess: HTTPSession, *, task_status: anyio.abc.TaskStatus[Connection] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self.server.serve(sess.transport, task_status=task_status)
        except Exception:
            logger.exception("MCP session %s failed", sess.id[:8])
        finally:
            self._sessions.remove(sess)
            await sess.transport.aclose()
            sess.finish()

    async def _new_session(self, client: str, principal: Principal | None) -> HTTPSession | str:
        tg, tasks = self._tg, self._session_tasks
        if tg is None or tasks is None:
            return "the MCP server is not running (serve the app with ASGI lifespan, or run StreamableHTTPApp.run)"
        sessions = self._sessions
        person = principal.key if principal is not None else None
        try:
            if person is not None:  # authorization on: a person is bounded as an address is
                self._evict(sessions.make_room_for_person(person))
            self._evict(sessions.make_room(client))
        except TableFull as exc:
            return f"{exc}; try again later"
        sid = self._sid_prefix + secrets.token_urlsafe(_SESSION_ID_BYTES)  # visible ASCII, as the spec asks
        transport = SessionTransport(
            max_events=self.replay_buffer,
            max_retained=self.retained_streams,
            hand_off=tg.start_soon if backend_name() == "trio" else None,  # see its docs
            max_inbox=self.limits.max_http_inbox,
        )
        sess = HTTPSession(sid, transport, client)
        sessions.add(sess)
        if person is not None:  # the session is this person's (and only theirs), counted against them
            sess.owner = person
            sessions.claim(sess, person)
        try:
            sess.connection = conn = await tasks.start(self._run_session, sess)
        except Exception:
            logger.exception("could not start an MCP session")
            self._sessions.remove(sess)
            return "could not start the session"
        if principal is not None:
            conn.principal = principal
            conn.hide_unpermitted = self.auth is not None and self.auth.hide_unpermitted
        return sess

    def _evict(self, victim: HTTPSession | None) -> None:
        """End ``victim`` (named by the table) to make room for a new session."""
        if victim is not None:
            logger.info("MCP session %s ended to make room for a new one (least recently used)", victim.id[:8])
            self._end(victim)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":  # pragma: no cover - ASGI servers always start with it
            return
        if self._tg is not None:
            # Someone else runs the app (serve_http, or an explicit run()).
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        async with anyio.create_task_group() as tg:
            await tg.start(self.run)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            self.close()
            tg.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})

    # --- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            if kind == "websocket":
                await receive()
                await send({"type": "websocket.close", "code": 1008})
            return
        path = str(scope.get("path", ""))
        root = str(scope.get("root_path", ""))
        if root and path.startswith(root):  # mounted under a prefix by another ASGI app
            path = path[len(root) :]
        path = path.rstrip("/") or "/"
        metrics = path == self.metrics_path
        if path != self.path and not metrics and path not in self._metadata_paths:
            await respond_error(send, 404, f"not found; the MCP endpoint is {self.path}")
            return
        headers = scope_headers(scope)
        checked = (headers.get("host"), headers.get("origin"))
        refused = self._checked.get(checked, _UNCHECKED)
        if refused is _UNCHECKED:
            refused = mcp_headers.host_origin_problem(headers, self.allowed_hosts, self.allowed_origins)
            if len(self._checked) >= _CHECKED_MAX:
                self._checked.clear()
            self._checked[checked] = refused
        if refused is not None:
            logger.warning("refused a request: %s (see allowed_hosts / allowed_origins)", refused)
            await respond_error(send, 403, refused)
            return
        method = scope.get("method", "GET")
        if path != self.path:
            await self._side_route(metrics, method, send)
            return
        gate = self._gate
        principal = None
        if gate is not None:  # authorization on: the token is checked before anything of MCP runs
            principal = await gate.admit(headers, scope, send)
            if principal is None:
                return
            self._as_owner(headers, principal)
        if method in ("GET", "DELETE") and wants_modern(headers):
            await respond_error(
                send,
                405,
                f"method {method} not allowed on protocol 2026-07-28 (no sessions, no GET stream); use POST",
                headers=[(b"allow", b"POST")],
            )
            return
        if method == "POST":
            handling = self._post(headers, receive, send, scope, principal)
        elif method == "GET":
            handling = self._get(headers, receive, send, scope)
        elif method == "DELETE":
            handling = self._delete(headers, send)
        else:
            handling = respond_error(
                send,
                405,
                f"method {method} not allowed; use POST, GET or DELETE",
                headers=[(b"allow", b"GET, POST, DELETE")],
            )
        del headers, checked  # not held here while a response stream stays open (bytes per waiting call)
        reading = await handling
        if reading is not None:
            del handling  # a finished coroutine still holds about 400 bytes
            await reading  # the response (Reader.respond), once the frame that opened it is gone

    async def _side_route(self, metrics: bool, method: str, send: Send) -> None:
        """A request to the metrics route or to the protected resource metadata (Host / Origin checked)."""
        if not metrics:
            assert self._gate is not None  # (only its paths lead here)
            await self._gate.serve_metadata(method, send)
            return
        if method != "GET":
            await respond_error(send, 405, "the metrics route answers GET only")
            return
        content_type, body = self.server.metrics_page()
        if self._gate is not None:
            body += self._gate.metrics.prometheus_text().encode()
        await respond(send, 200, body, content_type=content_type)

    def _as_owner(self, headers: dict[str, str], principal: Principal) -> None:
        """With authorization on: a request naming a session of another person is served as if that session did
        not exist (its id is replaced by one no session has: every answer is an unknown session's, ``404``, and
        another person learns nothing of it). A request of the session's owner is served as them: their current
        token (a refreshed one may grant other scopes) is what ``ctx.auth`` returns."""
        sid = headers.get("mcp-session-id")
        if sid is None:
            return
        sess = self._sessions.get(sid)
        if sess is None:
            return
        if sess.owner != principal.key:
            headers["mcp-session-id"] = ""  # (session ids are never empty)
        elif sess.connection is not None:
            sess.connection.principal = principal

    async def _session_of(self, headers: Mapping[str, str], send: Send) -> HTTPSession | None:
        """The session a request names; answers the request itself (400/404) when there is none."""
        sid = headers.get("mcp-session-id")
        version = headers.get("mcp-protocol-version")
        if sid is None:
            await respond_error(send, 400, _NO_SESSION, version=version)
            return None
        sess = self._sessions.get(sid)
        if sess is None:
            await respond_error(send, 404, _UNKNOWN_SESSION, version=version)
            return None
        if version is not None and not is_supported(version):
            await respond_error(send, 400, f"unsupported MCP-Protocol-Version {version!r}", version=sess.version)
            return None
        return sess

    async def _post(
        self, headers: Mapping[str, str], receive: Receive, send: Send, scope: Scope, principal: Principal | None
    ) -> Awaitable[None] | None:
        version = headers.get("mcp-protocol-version")
        accept = headers.get("accept", "")
        if not (accepts(accept, JSON) and accepts(accept, SSE)):
            await respond_error(send, 406, f"Accept must list {JSON} and {SSE}", version=version)
            return None
        if media_type(headers.get("content-type", "")) != JSON:
            await respond_error(send, 415, f"Content-Type must be {JSON}", version=version)
            return None
        if wants_modern(headers):
            await self._stateless.post(headers, receive, send, scope, principal=principal)
            return None
        sid = headers.get("mcp-session-id")
        sess = None if sid is None else self._sessions.get(sid)
        if sid is not None:  # found and usable here without a coroutine; the refusals are _session_of's
            if sess is None or (version is not None and not is_supported(version)):
                await self._session_of(headers, send)
                return None
            version = sess.version
        body = await read_body(headers, receive, send, self.limits.max_message_bytes, version)
        if body is None:
            return None
        try:
            message = jsonrpc.decode(body)
        except jsonrpc.InvalidMessage as exc:
            await respond_error(send, 400, exc.message, code=exc.code, id=exc.id, version=version)
            return None
        new = False
        if sess is None and claims_modern(message):
            await self._stateless.message(headers, message, receive, send, scope, principal=principal)
            return None
        if principal is not None and type(message) is Request:
            assert self._gate is not None  # (a principal comes from it)
            needed = self._gate.lacks(principal, self.server.scopes_needed(message.method, message.params))
            if needed is not None:  # refused before the session sees anything: nothing runs
                await self._gate.refuse_scopes(send, needed, message.id, version)
                return None
        if sess is None:
            if not (type(message) is Request and message.method == "initialize"):
                await respond_error(send, 400, _NO_SESSION, version=version)
                return None
            created = await self._new_session(client_key(scope), principal)
            if isinstance(created, str):
                await respond_error(send, 503, created, code=errors.SERVER_BUSY, version=version)
                return None
            sess, new = created, True
        else:
            sess.initialized = True
        sess.touch(self._sessions)
        transport = sess.transport
        if type(message) is Request:
            stream = transport.open_request_stream(message.id)
            if stream is None:
                await respond_error(
                    send,
                    409,
                    f"request id {message.id!r} is already in use in this session",
                    id=message.id,
                    version=version,
                )
                return None
            if not (transport.deliver_nowait(body) or await transport.deliver(body)):
                transport.drop(stream)
                await respond_error(send, 404, _SESSION_ENDED, version=version)
                return None
            if message.method == "initialize":
                requested = initialize_version(message.params)
                stream_version = negotiate(requested) if requested else ASSUMED_VERSION
            else:
                stream_version = sess.version
            extra = ((b"mcp-session-id", sess.id.encode()),) if new else ()
            reading = self._read(sess, stream, 0, stream_version, receive, send, extra, scope)
            return reading  # awaited by __call__
        if not (transport.deliver_nowait(body) or await transport.deliver(body)):
            await respond_error(send, 404, _SESSION_ENDED, version=version)
            return None
        if type(message) is Notification and message.method == "notifications/cancelled":
            with contextlib.suppress(errors.McpError):
                cancelled = jsonrpc.decode_params(message.params, CancelledParams).request_id
                if not isinstance(cancelled, msgspec.UnsetType):
                    transport.end_request_stream(cancelled)
        await respond(send, 202)
        return None

    async def _get(
        self, headers: Mapping[str, str], receive: Receive, send: Send, scope: Scope
    ) -> Awaitable[None] | None:
        if not accepts(headers.get("accept", ""), SSE):
            await respond_error(
                send,
                406,
                f"Accept must list {SSE}",
                version=headers.get("mcp-protocol-version"),
            )
            return None
        sess = await self._session_of(headers, send)
        if sess is None:
            return None
        sess.initialized = True
        sess.touch(self._sessions)
        last = headers.get("last-event-id")
        if last:
            found = sess.transport.find(last)
            if found is None:
                await respond_error(
                    send,
                    400,
                    f"Last-Event-ID {last!r} names no stream of this session that can be resumed",
                    version=sess.version,
                )
                return None
            stream, cursor = found
            if stream is not sess.transport.standalone:
                return self._read(sess, stream, cursor, sess.version, receive, send, (), scope)
        else:
            stream = sess.transport.standalone
            cursor = stream.delivered
        await self._stream(sess, stream, cursor, sess.version, receive, send, ())
        return None

    async def _delete(self, headers: Mapping[str, str], send: Send) -> None:
        sess = await self._session_of(headers, send)
        if sess is None:
            return
        self._end(sess)
        with anyio.move_on_after(_DELETE_WAIT):
            await sess.wait_finished()
        await respond(send, 204)

    # --- SSE -----------------------------------------------------------------------------------

    def _read(
        self,
        sess: HTTPSession,
        stream: Stream,
        cursor: int,
        version: str,
        receive: Receive,
        send: Send,
        extra_headers: tuple[tuple[bytes, bytes], ...],
        scope: Scope,
    ) -> Awaitable[None]:
        """Answer with a request's ``stream`` as SSE from after ``cursor``: returns the response to await
        (:meth:`Reader.respond`: the stream's pushers write to it; it waits for the end, no task or timer)."""
        head = self._priming(stream, cursor, version)
        # With a hand-off (trio) no deadline can cut a write short (see SessionTransport.hand_off): none is set;
        # minimcp's own server offers send_now (its writes can be cut short): then no hand-off, and a deadline.
        # (asyncio, no hand-off: flush_nowait drives send itself, and the wait in receive() is relayed)
        # It also lets the response be parked (no wait in receive(), the request's task ends: trio on Linux).
        if sess.transport.hand_off is None:
            send_now = end_receive = park = None
            timeout = self.limits.stream_write_timeout
        else:
            send_now, end_receive = send_now_of(scope, send), end_receive_of(scope, receive)
            park = park_of(scope, receive, send)
            timeout = self.limits.stream_write_timeout if send_now else math.inf
        reader = Reader(stream, send, cursor, head, timeout, sess.transport.clock, send_now, end_receive, park)
        previous = stream.owner
        stream.owner = reader
        if type(previous) is Reader:
            previous.end()  # the connection reading it so far ends
        sess.live += 1  # (_reader_ended counts it down: the response is awaited at once)
        start = {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra_headers]}
        hold = self._pacer.hold_priming if head and not stream.done and stream.next_seq - 1 <= cursor else None
        return reader.respond(receive, start, hold, self._ended, sess)

    def _reader_ended(self, reader: Reader, sess: HTTPSession) -> None:
        """A request stream's response is over (see :meth:`_read`)."""
        sess.live -= 1
        sess.touch(self._sessions)
        sess.transport.let_go(reader.stream, reader)

    async def _stream(
        self,
        sess: HTTPSession,
        stream: Stream,
        cursor: int,
        version: str,
        receive: Receive,
        send: Send,
        extra_headers: tuple[tuple[bytes, bytes], ...],
    ) -> None:
        """Answer with the standalone ``stream`` as SSE from after ``cursor`` until the session ends or the
        client leaves (messages pushed here only wake this task: a pusher never waits for this client)."""
        token = object()
        if stream.owner is not None:
            stream.wake()  # the connection reading it so far ends
        stream.owner = token
        sess.live += 1
        disconnected = False
        try:
            headers = [*SSE_HEADERS, *extra_headers]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            head = self._priming(stream, cursor, version)

            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal disconnected
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    disconnected = True
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                await sess.transport.pump(stream, token, cursor, head, send, self.keepalive_interval)
                tg.cancel_scope.cancel()
            if not disconnected:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the ASGI server could not write: the client is gone
            logger.debug("SSE stream %d: client went away", stream.key)
        finally:
            sess.live -= 1
            sess.touch(self._sessions)
            sess.transport.let_go(stream, token)

    def _priming(self, stream: Stream, cursor: int, version: str) -> bytes:
        """The event a stream starts with (an id to resume after ``cursor``, and ``retry``); none before 2025-11-25."""
        if not supports(version, Feature.SSE_PRIMING):
            return b""
        return encode_event(None, id=stream.event_id(cursor), retry=self.retry_ms)
