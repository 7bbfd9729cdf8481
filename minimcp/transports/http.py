"""Streamable HTTP (revisions 2025-11-25 and 2026-07-28): a bare ASGI 3 server app, and an httpx client transport.

Needs the ``http`` extra (``pip install minimcp[http]``): httpx for the client,
uvicorn or hypercorn to serve the app. They are imported only when used.

Server: :class:`StreamableHTTPApp`
----------------------------------
One endpoint (default ``/mcp``) takes POST, GET and DELETE.

* **POST** carries exactly one JSON-RPC message. A notification or a response
  is answered ``202 Accepted`` with an empty body. A request is answered with
  ``text/event-stream``: every message the session sends *for that request*
  (nested ``elicitation/create``, progress, logs) goes on that stream, then the
  response, which ends it. The client answers a nested question with a new
  POST of the response (``202``); the tool's result then arrives on the
  original stream.
* **Sessions.** ``initialize`` creates one (``MCP-Session-Id``, random from
  :mod:`secrets`, after ``<session_id_prefix>.`` when one is given); every later request must carry it (``400`` without,
  ``404`` when unknown or ended). Each session is one
  :meth:`minimcp.Server.serve` running in the app's task group (started by
  ASGI lifespan, by :meth:`StreamableHTTPApp.run`, or by :func:`serve_http`).
  DELETE ends a session: its pending questions end and running tools are
  cancelled. A session with no open stream and no request for
  ``session_idle_timeout`` seconds is ended the same way, one that never went
  past ``initialize`` after ``limits.initialize_timeout``. At most
  ``max_sessions`` live at once, ``limits.max_sessions_per_client`` per client
  address: one more ends the least recently used one without pending work
  (``503`` when all have work; see :mod:`minimcp.transports._session_table`).
* **Streams.** Every SSE stream of a session has its own number; event ids are
  ``<stream>-<seq>``, unique in the session. On clients of 2025-11-25 and later
  a stream starts with a *priming* event (an id, empty data, and ``retry``).
  Keep-alive comments go out every ``keepalive_interval`` seconds, so a person
  may take minutes to answer. Each stream keeps a bounded replay buffer; GET
  with ``Last-Event-ID`` resumes *that* stream after that event (replaying
  only its own events). Messages related to no open request (for example
  ``notifications/elicitation/complete``, server-initiated requests) go to
  the standalone GET stream when one is open, else wait in its bounded buffer
  until one opens. Responses never go to the standalone stream.
* **A dropped connection is not a cancel** (spec 2025-11-25, "SHOULD NOT").
  When the client's SSE connection for a request drops, the request keeps
  running; its pending elicitation stays answerable by POST; its later
  messages and its response are kept in the stream's replay buffer and are
  delivered when the client resumes with GET + ``Last-Event-ID``. To stop a
  request the client sends ``notifications/cancelled``. Requests whose client
  never comes back end with the session (DELETE or idle expiry).
* **Security.** ``Host`` and ``Origin`` are checked against allow-lists
  (``403`` otherwise) to stop DNS rebinding. The default allows only
  ``localhost``, ``127.0.0.1`` and ``[::1]`` on any port, which is right for a
  server bound to loopback; a server reachable under other names must list
  them. ``MCP-Protocol-Version`` must be a supported revision (``400``);
  absent means ``2025-03-26``. Bodies over ``limits.max_message_bytes`` are
  refused with ``413`` without being buffered. There is no authentication
  here: put one in front, or keep the server on loopback.

The modern leg (revision 2026-07-28)
------------------------------------
The same endpoint serves revision 2026-07-28 beside the handshake era,
chosen per POST: a POST whose ``MCP-Protocol-Version`` header is not a
handshake-era revision, or whose body carries the per-request ``_meta``
envelope, is served *statelessly*.

* **No sessions.** Nothing is minted, an ``Mcp-Session-Id`` sent along is
  ignored, GET and DELETE with a modern version header get ``405``.
* **One exchange per POST.** The request is answered on that POST's response:
  plain JSON, or SSE (``X-Accel-Buffering: no``) when the request sends
  progress or log notifications before its answer. A notification is
  answered ``202`` and dropped (the revision defines none on HTTP).
* **Headers mirror the body** (:mod:`minimcp.transports._headers`):
  ``MCP-Protocol-Version`` = the body's ``_meta`` version, ``Mcp-Method`` =
  ``method``, ``Mcp-Name`` = ``params.name`` / ``params.uri`` on
  ``tools/call`` / ``prompts/get`` / ``resources/read``, and ``Mcp-Param-*``
  for ``x-mcp-header`` tool arguments; missing or different -> ``400`` with
  ``-32020``. Errors map to statuses: ``-32700`` ``-32600`` ``-32602``
  ``-32020`` ``-32021`` ``-32022`` -> 400, ``-32601`` -> 404, others 200.
* **A disconnect is a cancel** (the 2026-07-28 rule): closing the response
  stream cancels the request's handler, and so the tool round it drives.
* **Parked calls outlive their POST.** Every modern request is handled by
  one long-lived connection of the app (a :class:`~minimcp.server.ServerConnection`
  over an inert transport, started with the app), whose task group hosts the
  tool runs: a tool waiting for ``inputResponses`` stays parked between
  POSTs, and the retry -- on any connection -- resumes it (one client address
  parks at most ``limits.max_parked_per_client``; ``-32003`` beyond). Requests
  get app-unique internal ids, so clients reusing ids never collide.

Client: :func:`http_client`
---------------------------
A :class:`~minimcp.transports.Transport` for :class:`minimcp.Client`. Each
message is one POST. A request's answer is read in a task of its own (JSON or
SSE), feeding every message into :meth:`~StreamableHTTPClientTransport.receive`;
a stream that ends before the response is resumed with GET +
``Last-Event-ID`` after the server's ``retry`` delay. An HTTP error for a
request becomes a JSON-RPC error response for that id, so the pending call
fails with a clear :class:`~minimcp.McpError` instead of hanging. ``404`` for
the session ends the connection with :class:`~minimcp.ConnectionClosed`
(starting a new session is the caller's job). DELETE is sent on close.

The era follows the messages: a request whose ``params._meta`` carries the
modern envelope (what :class:`minimcp.Client` sends with ``era="modern"``, and
its ``"auto"`` probe) goes out the 2026-07-28 way -- ``MCP-Protocol-Version``
from the body, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers, no
session id, no GET stream, no DELETE, no resumption -- and cancelling it
closes its POST instead of sending ``notifications/cancelled``. ``tools/list``
results are read for ``x-mcp-header`` annotations (a tool whose annotations
break the rules is dropped from the list, as the revision requires of HTTP
clients). For the era probe (a first ``server/discover``), ``401`` / ``403`` /
``5xx`` are not evidence of a handshake-era server: they end the connection
instead of failing the probe.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import math
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import msgspec

from minimcp import errors, jsonrpc, modern
from minimcp.config import Limits
from minimcp.errors import ConnectionClosed, McpError
from minimcp.jsonrpc import ErrorResponse, Notification, Request, RequestId, Response
from minimcp.transports import MessageTooLarge
from minimcp.transports import _headers as mcp_headers
from minimcp.transports._session_table import ASSUMED_VERSION, HTTPSession, SessionTable, TableFull, client_key
from minimcp.transports._sse import PING, SSEDecoder, encode_event
from minimcp.transports.asgi_server import bind, run_asgi
from minimcp.types import CancelledParams
from minimcp.versions import LATEST_MODERN, Feature, is_modern, is_supported, negotiate, supports
from minimcp.workers import check_worker_id

if TYPE_CHECKING:
    import httpx

    from minimcp.client import Client
    from minimcp.server import Server, ServerConnection
    from minimcp.session import Session
    from minimcp.types import Tool

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "StreamableHTTPApp",
    "StreamableHTTPClientTransport",
    "connect_http",
    "http_client",
    "serve_http",
]

logger = logging.getLogger("minimcp.http")

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Host names a server bound to loopback answers to (any port).
DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("localhost:*", "127.0.0.1:*", "[::1]:*")
#: Browser origins allowed by default: pages served from loopback (any port).
DEFAULT_ALLOWED_ORIGINS: tuple[str, ...] = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in DEFAULT_ALLOWED_HOSTS
)

_JSON = "application/json"
_SSE = "text/event-stream"


class _Kind(msgspec.Struct):
    method: Any = msgspec.UNSET


class _InitializeVersion(msgspec.Struct, rename="camel"):
    protocol_version: Any = None


_kind_decoder = msgspec.json.Decoder(_Kind)


def _is_response(message: bytes) -> bool:
    try:
        return _kind_decoder.decode(message).method is msgspec.UNSET
    except msgspec.DecodeError:  # pragma: no cover - the session only sends what it encoded
        return False


def _is_uint(text: str) -> bool:
    """At most 18 ASCII digits (``str.isdigit`` also accepts ``"²"``, which ``int`` rejects).

    The bound keeps ``int()`` far from Python's digit limit (4,300), past which it raises.
    """
    return len(text) <= 18 and text.isascii() and text.isdigit()


def _same_id(a: RequestId | None, b: RequestId | None) -> bool:
    return a == b and type(a) is type(b)


def _initialize_version(params: msgspec.Raw) -> str | None:
    try:
        value = msgspec.json.decode(params or b"{}", type=_InitializeVersion).protocol_version
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


def _wants_modern(headers: Mapping[str, str]) -> bool:
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


def _claims_modern(message: jsonrpc.Message) -> bool:
    """A request or notification whose params carry the 2026-07-28 ``_meta`` envelope."""
    return (type(message) is Request or type(message) is Notification) and modern.has_envelope(message.params)


#: Error codes a modern POST answers with HTTP 400 (-32601 gets 404; others 200).
_MODERN_BAD_REQUEST = frozenset(
    {
        errors.PARSE_ERROR,
        errors.INVALID_REQUEST,
        errors.INVALID_PARAMS,
        mcp_headers.HEADER_MISMATCH,
        modern.MISSING_CAPABILITY,
        modern.UNSUPPORTED_VERSION,
    }
)


def _modern_status(code: int) -> int:
    """The HTTP status of a modern error response with JSON-RPC error ``code``."""
    if code in _MODERN_BAD_REQUEST:
        return 400
    return 404 if code == errors.METHOD_NOT_FOUND else 200


#: Error codes that only a 2026-07-28 server sends: on an era probe they mean "modern".
_MODERN_ONLY_CODES = frozenset({mcp_headers.HEADER_MISMATCH, modern.MISSING_CAPABILITY, modern.UNSUPPORTED_VERSION})


# --- server: streams ---------------------------------------------------------------------------


class _Stream:
    """One SSE stream of a session: its events, a bounded replay buffer, and who is reading it.

    Events are numbered from 1; event ``n`` has id ``"<key>-<n>"``. The id
    ``"<key>-0"`` (sent by a priming event) means "before the first event".
    """

    __slots__ = (
        "changed",
        "delivered",
        "done",
        "events",
        "first_seq",
        "key",
        "max_events",
        "next_seq",
        "owner",
        "request_id",
    )

    def __init__(self, key: int, request_id: RequestId | None, max_events: int) -> None:
        self.key = key
        self.request_id = request_id
        self.max_events = max_events
        self.events: collections.deque[bytes] = collections.deque()
        self.first_seq = 1  # seq of events[0]
        self.next_seq = 1
        self.delivered = 0  # highest seq written to a live connection
        self.done = False  # the last event (the response) is in the buffer
        self.owner: object | None = None  # the live connection reading it, if any
        self.changed = anyio.Event()

    def event_id(self, seq: int) -> str:
        return f"{self.key}-{seq}"

    def push(self, message: bytes, *, last: bool = False) -> None:
        seq = self.next_seq
        self.next_seq = seq + 1
        self.events.append(encode_event(message, id=self.event_id(seq)))
        if len(self.events) > self.max_events:
            self.events.popleft()
            if self.first_seq > self.delivered:
                # Expected on the standalone stream while no GET is open; a problem on a request's.
                logger.log(
                    logging.WARNING if self.request_id is not None else logging.DEBUG,
                    "SSE stream %d: replay buffer full (%d events); dropped event %d before it was delivered",
                    self.key,
                    self.max_events,
                    self.first_seq,
                )
            self.first_seq += 1
        if last:
            self.done = True
        self.wake()

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def since(self, cursor: int) -> tuple[list[bytes], int]:
        """The buffered events after seq ``cursor``, and the seq of the last one."""
        start = max(cursor + 1, self.first_seq)
        if start >= self.next_seq:
            return [], cursor
        if start > cursor + 1:
            logger.warning("SSE stream %d: events %d..%d were evicted before delivery", self.key, cursor + 1, start - 1)
        return list(itertools.islice(self.events, start - self.first_seq, None)), self.next_seq - 1

    @property
    def fully_delivered(self) -> bool:
        return self.delivered >= self.next_seq - 1


class _SessionTransport:
    """The server-side transport of one HTTP session: POST bodies in, SSE streams out."""

    def __init__(self, *, max_events: int, max_retained: int) -> None:
        self._in_send, self._in_recv = anyio.create_memory_object_stream[bytes](64)
        self.max_events = max_events
        self.max_retained = max_retained
        self.standalone = _Stream(0, None, max_events)
        self.streams: dict[int, _Stream] = {0: self.standalone}
        self.by_request: dict[RequestId, _Stream] = {}
        self._retained: collections.deque[int] = collections.deque()
        self._keys = itertools.count(1)
        self.closed = False

    # Transport protocol (the session's side)

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if related is not None:
            stream = self.by_request.get(related)
            if stream is not None and _same_id(stream.request_id, related):
                last = _is_response(message)
                stream.push(message, last=last)
                if last:
                    del self.by_request[related]
                    if stream.owner is None:
                        self.retain(stream)
                return
            if _is_response(message):
                # Its request's stream is gone (the client cancelled it): a response never
                # goes on the standalone stream.
                logger.debug("dropped a response for request %r: its stream has ended", related)
                return
        self.standalone.push(message)

    async def receive(self) -> bytes:
        return await self._in_recv.receive()

    async def aclose(self) -> None:
        self.close()
        self._in_recv.close()

    # the app's side

    def close(self) -> None:
        """No more input (the session's receive ends); open streams finish."""
        if self.closed:
            return
        self.closed = True
        self._in_send.close()
        for stream in self.streams.values():
            stream.wake()

    async def deliver(self, body: bytes) -> bool:
        """Hand one inbound message to the session; False when the session has ended."""
        try:
            await self._in_send.send(body)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def open_request_stream(self, request_id: RequestId) -> _Stream | None:
        """A new stream for a POSTed request; None when that id is still open."""
        if request_id in self.by_request:
            return None
        stream = _Stream(next(self._keys), request_id, self.max_events)
        self.streams[stream.key] = stream
        self.by_request[request_id] = stream
        return stream

    def end_request_stream(self, request_id: RequestId) -> None:
        """The client cancelled the request: no response will come; end its stream."""
        stream = self.by_request.get(request_id)
        if stream is None or not _same_id(stream.request_id, request_id):
            return
        del self.by_request[request_id]
        stream.done = True
        stream.wake()
        if stream.owner is None:
            self.retain(stream)

    def retain(self, stream: _Stream) -> None:
        """Keep a finished stream that its client has not read to the end (bounded)."""
        if stream.key in self._retained:
            return
        self._retained.append(stream.key)
        while len(self._retained) > self.max_retained:
            self.streams.pop(self._retained.popleft(), None)

    def drop(self, stream: _Stream) -> None:
        self.streams.pop(stream.key, None)
        with contextlib.suppress(ValueError):
            self._retained.remove(stream.key)

    def find(self, event_id: str) -> tuple[_Stream, int] | None:
        """The stream an event id belongs to and the seq to resume after."""
        key, sep, seq = event_id.strip().partition("-")
        if not sep or not _is_uint(key) or not _is_uint(seq):
            return None
        stream = self.streams.get(int(key))
        if stream is None:
            return None
        return stream, int(seq)


class _ModernTransport:
    """The inert transport under an app's modern connection.

    Nothing arrives on it (each POST hands its request to the connection
    directly); what the connection sends for a request (progress, log
    messages) goes to that request's POST, found by the request's internal id,
    and is dropped when that POST has ended.
    """

    def __init__(self) -> None:
        self.routes: dict[RequestId, anyio.abc.ObjectSendStream[bytes]] = {}
        self._closed = anyio.Event()

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        out = self.routes.get(related) if related is not None else None
        if out is None:
            return  # nothing travels on modern HTTP outside a request's own response
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await out.send(message)

    async def receive(self) -> bytes:
        await self._closed.wait()
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        self._closed.set()


class _ModernHost:
    """The one connection serving every 2026-07-28 POST of an app (started with the app)."""

    __slots__ = ("connection", "ids", "session", "transport")

    def __init__(self, connection: ServerConnection, session: Session, transport: _ModernTransport) -> None:
        self.connection = connection
        self.session = session
        self.transport = transport
        self.ids = itertools.count(1)


# --- server: small HTTP helpers ----------------------------------------------------------------


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = bytes(raw_name).decode("latin-1").lower()
        value = bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _accepts(accept: str, media: str) -> bool:
    """Whether an ``Accept`` header lists ``media`` (wildcards count)."""
    family = media.split("/", 1)[0] + "/*"
    for part in accept.split(","):
        media_range, *params = (p.strip().lower() for p in part.split(";"))
        if media_range in (media, family, "*/*") and "q=0" not in params:
            return True
    return False


def _error_body(code: int, message: str, *, id: RequestId | None = None, version: str | None = None) -> bytes:
    null_id = not supports(version or ASSUMED_VERSION, Feature.ERROR_WITHOUT_ID)
    return jsonrpc.encode_error(id, code, message, null_id=null_id)


async def _respond(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: str | None = None,
    headers: Collection[tuple[bytes, bytes]] = (),
) -> None:
    out = list(headers)
    if content_type is not None:
        out.append((b"content-type", content_type.encode()))
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _respond_error(
    send: Send,
    status: int,
    code: int,
    message: str,
    *,
    id: RequestId | None = None,
    version: str | None = None,
    headers: Collection[tuple[bytes, bytes]] = (),
) -> None:
    body = _error_body(code, message, id=id, version=version)
    await _respond(send, status, body, content_type=_JSON, headers=headers)


async def _respond_modern_error(
    send: Send, id: RequestId | None, code: int, message: str, data: Any = msgspec.UNSET, *, status: int | None = None
) -> None:
    body = jsonrpc.encode_error(id, code, message, data)
    await _respond(send, status if status is not None else _modern_status(code), body, content_type=_JSON)


# --- server: the app ---------------------------------------------------------------------------


class StreamableHTTPApp:
    """An MCP server as an ASGI 3 application (Streamable HTTP, one endpoint).

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
    """

    def __init__(
        self,
        server: Server,
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
    ) -> None:
        self.server = server
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
        self._modern: _ModernHost | None = None
        # tool name -> (its definition, its x-mcp-header annotations), recomputed when the definition changes
        self._annotations: dict[str, tuple[Tool, tuple[mcp_headers.ParamHeader, ...]]] = {}

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

    def connection(self, session_id: str) -> ServerConnection | None:
        """The server connection of a live session (for inspection and tests)."""
        sess = self._sessions.get(session_id)
        return sess.connection if sess is not None else None

    @property
    def modern_connection(self) -> ServerConnection | None:
        """The connection serving revision 2026-07-28 requests while the app runs (for inspection and tests)."""
        return self._modern.connection if self._modern is not None else None

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
                self._modern = await self._start_modern(tg)
                tg.start_soon(self._expire_idle)
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            self.close()
            self._modern = None

    async def _start_modern(self, tg: anyio.abc.TaskGroup) -> _ModernHost:
        """The connection that serves every 2026-07-28 POST; its task group hosts parked tool calls."""
        from minimcp.server import ServerConnection
        from minimcp.session import Session

        transport = _ModernTransport()
        conn = ServerConnection(self.server)
        name = f"server {self.server.name} (HTTP 2026-07-28)"
        session = Session(transport, conn, limits=self.server.limits, name=name)
        session.trace = self.server.trace
        conn.session = session
        # Locked to the modern revision from the start (what a first enveloped request would do), so
        # that an enveloped initialize is -32601 and a request without the envelope -32602.
        conn.lock_era("modern")
        await tg.start(session.run)
        return _ModernHost(conn, session, transport)

    def close(self) -> None:
        """End every session now (their open streams finish; their work is cancelled).

        Tool calls of revision 2026-07-28 parked between rounds end too (their
        retries replay, see :mod:`minimcp.modern`).
        """
        for sess in self._sessions.values():
            self._end(sess)
        if self._modern is not None:
            self._modern.session.close()

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
        interval = min(max(shortest / 4, 0.05), 30.0)
        while True:
            await anyio.sleep(interval)
            self._expire(idle, fresh)

    def _expire(self, idle: float | None, fresh: float) -> None:
        # A method of its own, so that no loop variable keeps the last session (and all it holds)
        # alive while the loop above sleeps.
        for sess in self._sessions.expired(anyio.current_time(), idle, fresh):
            self._end(sess)

    async def _run_session(
        self, sess: HTTPSession, *, task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self.server.serve(sess.transport, task_status=task_status)
        except Exception:
            logger.exception("MCP session %s failed", sess.id[:8])
        finally:
            self._sessions.remove(sess)
            await sess.transport.aclose()
            sess.finished.set()

    async def _new_session(self, client: str) -> HTTPSession | str:
        tg = self._tg
        if tg is None:
            return "the MCP server is not running (serve the app with ASGI lifespan, or run StreamableHTTPApp.run)"
        try:
            victim = self._sessions.make_room(client)
        except TableFull as exc:
            return f"{exc}; try again later"
        if victim is not None:
            logger.info("MCP session %s ended to make room for a new one (least recently used)", victim.id[:8])
            self._end(victim)
        sid = self._sid_prefix + secrets.token_urlsafe(24)  # visible ASCII, as the spec asks
        transport = _SessionTransport(max_events=self.replay_buffer, max_retained=self.retained_streams)
        sess = HTTPSession(sid, transport, client)
        self._sessions.add(sess)
        try:
            sess.connection = await tg.start(self._run_session, sess)
        except Exception:
            logger.exception("could not start an MCP session")
            self._sessions.remove(sess)
            return "could not start the session"
        return sess

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
        if path != self.path and not metrics:
            await _respond_error(send, 404, errors.INVALID_REQUEST, f"not found; the MCP endpoint is {self.path}")
            return
        headers = _headers(scope)
        refused = mcp_headers.host_origin_problem(headers, self.allowed_hosts, self.allowed_origins)
        if refused is not None:
            logger.warning("refused a request: %s (see allowed_hosts / allowed_origins)", refused)
            await _respond_error(send, 403, errors.INVALID_REQUEST, refused)
            return
        method = scope.get("method", "GET")
        if metrics:
            if method != "GET":
                await _respond_error(send, 405, errors.INVALID_REQUEST, "the metrics route answers GET only")
                return
            from minimcp.metrics import CONTENT_TYPE, server_metrics_text

            await _respond(send, 200, server_metrics_text(self.server), content_type=CONTENT_TYPE)
            return
        if method in ("GET", "DELETE") and _wants_modern(headers):
            await _respond_error(
                send,
                405,
                errors.INVALID_REQUEST,
                f"method {method} not allowed on protocol 2026-07-28 (no sessions, no GET stream); use POST",
                headers=[(b"allow", b"POST")],
            )
            return
        if method == "POST":
            await self._post(headers, receive, send, scope)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            await _respond_error(
                send,
                405,
                errors.INVALID_REQUEST,
                f"method {method} not allowed; use POST, GET or DELETE",
                headers=[(b"allow", b"GET, POST, DELETE")],
            )

    async def _session_of(self, headers: Mapping[str, str], send: Send) -> HTTPSession | None:
        """The session a request names; answers the request itself (400/404) when there is none."""
        sid = headers.get("mcp-session-id")
        version = headers.get("mcp-protocol-version")
        if sid is None:
            await _respond_error(
                send,
                400,
                errors.INVALID_REQUEST,
                "missing MCP-Session-Id header (send initialize first)",
                version=version,
            )
            return None
        sess = self._sessions.get(sid)
        if sess is None:
            await _respond_error(
                send, 404, errors.INVALID_REQUEST, "session not found (it ended or expired)", version=version
            )
            return None
        if version is not None and not is_supported(version):
            await _respond_error(
                send, 400, errors.INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version!r}", version=sess.version
            )
            return None
        return sess

    async def _read_body(self, headers: Mapping[str, str], receive: Receive, send: Send) -> bytes | None:
        limit = self.limits.max_message_bytes
        version = headers.get("mcp-protocol-version")
        too_large = f"message body exceeds the {limit}-byte limit"
        length = headers.get("content-length", "")
        if _is_uint(length) and int(length) > limit:
            await _respond_error(send, 413, errors.INVALID_REQUEST, too_large, version=version)
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > limit:
                await _respond_error(send, 413, errors.INVALID_REQUEST, too_large, version=version)
                return None
            if not message.get("more_body", False):
                return bytes(body)

    async def _post(self, headers: Mapping[str, str], receive: Receive, send: Send, scope: Scope) -> None:
        version = headers.get("mcp-protocol-version")
        accept = headers.get("accept", "")
        if not (_accepts(accept, _JSON) and _accepts(accept, _SSE)):
            await _respond_error(
                send, 406, errors.INVALID_REQUEST, f"Accept must list {_JSON} and {_SSE}", version=version
            )
            return
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != _JSON:
            await _respond_error(send, 415, errors.INVALID_REQUEST, f"Content-Type must be {_JSON}", version=version)
            return
        if _wants_modern(headers):
            await self._post_modern(headers, receive, send, scope)
            return
        sess: HTTPSession | None = None
        if "mcp-session-id" in headers:
            sess = await self._session_of(headers, send)
            if sess is None:
                return
            version = sess.version
        body = await self._read_body(headers, receive, send)
        if body is None:
            return
        try:
            message = jsonrpc.decode(body)
        except jsonrpc.InvalidMessage as exc:
            await _respond_error(send, 400, exc.code, exc.message, id=exc.id, version=version)
            return
        new = False
        if sess is None and _claims_modern(message):
            await self._modern_message(headers, message, receive, send, scope)
            return
        if sess is None:
            if not (type(message) is Request and message.method == "initialize"):
                await _respond_error(
                    send,
                    400,
                    errors.INVALID_REQUEST,
                    "missing MCP-Session-Id header (send initialize first)",
                    version=version,
                )
                return
            created = await self._new_session(client_key(scope))
            if isinstance(created, str):
                await _respond_error(send, 503, errors.SERVER_BUSY, created, version=version)
                return
            sess, new = created, True
        else:
            sess.initialized = True
        sess.touch(self._sessions)
        transport = sess.transport
        if type(message) is Request:
            stream = transport.open_request_stream(message.id)
            if stream is None:
                await _respond_error(
                    send,
                    409,
                    errors.INVALID_REQUEST,
                    f"request id {message.id!r} is already in use in this session",
                    id=message.id,
                    version=version,
                )
                return
            if not await transport.deliver(body):
                transport.drop(stream)
                await _respond_error(send, 404, errors.INVALID_REQUEST, "session not found (it ended)", version=version)
                return
            if message.method == "initialize":
                requested = _initialize_version(message.params)
                stream_version = negotiate(requested) if requested else ASSUMED_VERSION
            else:
                stream_version = sess.version
            extra = [(b"mcp-session-id", sess.id.encode())] if new else []
            await self._stream(sess, stream, 0, stream_version, receive, send, extra)
            return
        if not await transport.deliver(body):
            await _respond_error(send, 404, errors.INVALID_REQUEST, "session not found (it ended)", version=version)
            return
        if type(message) is Notification and message.method == "notifications/cancelled":
            with contextlib.suppress(errors.McpError):
                cancelled = jsonrpc.decode_params(message.params, CancelledParams).request_id
                if not isinstance(cancelled, msgspec.UnsetType):
                    transport.end_request_stream(cancelled)
        await _respond(send, 202)

    async def _get(self, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
        if not _accepts(headers.get("accept", ""), _SSE):
            await _respond_error(
                send,
                406,
                errors.INVALID_REQUEST,
                f"Accept must list {_SSE}",
                version=headers.get("mcp-protocol-version"),
            )
            return
        sess = await self._session_of(headers, send)
        if sess is None:
            return
        sess.initialized = True
        sess.touch(self._sessions)
        last = headers.get("last-event-id")
        if last:
            found = sess.transport.find(last)
            if found is None:
                await _respond_error(
                    send,
                    400,
                    errors.INVALID_REQUEST,
                    f"Last-Event-ID {last!r} names no stream of this session that can be resumed",
                    version=sess.version,
                )
                return
            stream, cursor = found
        else:
            stream = sess.transport.standalone
            cursor = stream.delivered
        await self._stream(sess, stream, cursor, sess.version, receive, send, [])

    async def _delete(self, headers: Mapping[str, str], send: Send) -> None:
        sess = await self._session_of(headers, send)
        if sess is None:
            return
        self._end(sess)
        with anyio.move_on_after(5):
            await sess.finished.wait()
        await _respond(send, 204)

    # --- the modern leg (2026-07-28) --------------------------------------------------------------

    async def _post_modern(self, headers: Mapping[str, str], receive: Receive, send: Send, scope: Scope) -> None:
        """A POST with a 2026-07-28 ``MCP-Protocol-Version``: any session id is ignored."""
        body = await self._read_body(headers, receive, send)
        if body is None:
            return
        self._trace_modern("receive", body)
        try:
            message = jsonrpc.decode(body)
        except jsonrpc.InvalidMessage as exc:
            await _respond_modern_error(send, exc.id, exc.code, exc.message)
            return
        await self._modern_message(headers, message, receive, send, scope)

    def _trace_modern(self, direction: str, data: bytes, related: RequestId | None = None) -> None:
        """Record a 2026-07-28 POST's request or final reply (its notifications go through the session)."""
        host, trace = self._modern, self.server.trace
        if trace is not None and host is not None:
            trace.record(host.session.name, direction, data, related=related, origin=host.session)

    async def _modern_message(
        self, headers: Mapping[str, str], message: jsonrpc.Message, receive: Receive, send: Send, scope: Scope
    ) -> None:
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
            await _respond_modern_error(send, request_id, mcp_headers.HEADER_MISMATCH, f"Header mismatch: {problem}")
            return
        if type(message) is Request:
            await self._modern_request(message, receive, send, scope)
        else:  # This revision defines no client notifications on HTTP (cancelling is closing the stream).
            await _respond(send, 202)

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

    async def _modern_request(self, message: Request, receive: Receive, send: Send, scope: Scope) -> None:
        """Serve one 2026-07-28 request on its own POST: JSON, or SSE once a notification comes first."""
        host = self._modern
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
        out, notes = anyio.create_memory_object_stream[bytes](16)
        host.transport.routes[internal] = out
        final: list[tuple[int, bytes]] = []
        owner = (client_key(scope), self.limits.max_parked_per_client)

        async def handle() -> None:
            modern.PARK_OWNER.set(owner)  # this task's own context: parked calls count against the client
            try:
                request = Request(id=internal, method=message.method, params=message.params)
                result = await host.connection.handle_request(host.session, request)
                final.append((200, jsonrpc.encode_result(message.id, result)))
            except McpError as exc:
                data = msgspec.UNSET if exc.data is None else exc.data
                reply = jsonrpc.encode_error(message.id, exc.code, exc.message, data)
                final.append((_modern_status(exc.code), reply))
            except Exception:
                logger.exception("handler for %s failed", message.method)
                final.append((200, jsonrpc.encode_error(message.id, errors.INTERNAL_ERROR, "internal error")))
            finally:
                if final:
                    self._trace_modern("send", final[0][1], message.id)
                # Nothing more reaches this POST: the reply (if any) goes after what is queued.
                host.transport.routes.pop(internal, None)
                out.close()

        try:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    # The client closing the response stream IS the cancellation (2026-07-28).
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                tg.start_soon(handle)
                await self._answer_modern(notes, final, send)
                tg.cancel_scope.cancel()
        except OSError:  # the ASGI server could not write: the client is gone
            logger.debug("modern request %r: client went away", message.id)
        finally:
            host.transport.routes.pop(internal, None)
            notes.close()

    async def _answer_modern(
        self, notes: anyio.abc.ObjectReceiveStream[bytes], final: list[tuple[int, bytes]], send: Send
    ) -> None:
        """Plain JSON when the answer comes first; else SSE: the notifications, then the answer.

        A request that stays silent for ``keepalive_interval`` also switches to
        SSE, so that keep-alive comments can hold the connection open.
        """
        streaming = False
        while True:
            note: bytes | None = None
            with anyio.move_on_after(self.keepalive_interval):
                try:
                    note = await notes.receive()
                except anyio.EndOfStream:
                    break
            if not streaming:
                streaming = True
                headers = [
                    (b"content-type", _SSE.encode()),
                    (b"cache-control", b"no-cache, no-transform"),
                    (b"x-accel-buffering", b"no"),
                ]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
            chunk = PING if note is None else encode_event(note)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not streaming:
            if final:
                status, reply = final[0]
                await _respond(send, status, reply, content_type=_JSON)
            return
        tail = encode_event(final[0][1]) if final else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    # --- SSE -----------------------------------------------------------------------------------

    async def _stream(
        self,
        sess: HTTPSession,
        stream: _Stream,
        cursor: int,
        version: str,
        receive: Receive,
        send: Send,
        extra_headers: list[tuple[bytes, bytes]],
    ) -> None:
        """Answer with ``stream`` as SSE from after ``cursor`` until it is done or the client leaves."""
        token = object()
        if stream.owner is not None:
            stream.wake()  # the connection reading it so far ends
        stream.owner = token
        sess.live += 1
        disconnected = False
        try:
            headers = [
                (b"content-type", _SSE.encode()),
                (b"cache-control", b"no-cache, no-transform"),
                (b"x-accel-buffering", b"no"),
                *extra_headers,
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            head = b""
            if supports(version, Feature.SSE_PRIMING):
                head = encode_event(None, id=stream.event_id(cursor), retry=self.retry_ms)

            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal disconnected
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    disconnected = True
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                await self._pump(sess, stream, token, cursor, head, send)
                tg.cancel_scope.cancel()
            if not disconnected:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the ASGI server could not write: the client is gone
            logger.debug("SSE stream %d: client went away", stream.key)
        finally:
            sess.live -= 1
            sess.touch(self._sessions)
            if stream.owner is token:
                stream.owner = None
            if stream.done:
                if stream.fully_delivered:
                    sess.transport.drop(stream)
                else:
                    sess.transport.retain(stream)

    async def _pump(
        self, sess: HTTPSession, stream: _Stream, token: object, cursor: int, head: bytes, send: Send
    ) -> None:
        pending = head
        transport = sess.transport
        while stream.owner is token:
            changed = stream.changed
            batch, cursor_after = stream.since(cursor)
            if batch or pending:
                await send({"type": "http.response.body", "body": pending + b"".join(batch), "more_body": True})
                pending = b""
                cursor = cursor_after
                if cursor > stream.delivered:
                    stream.delivered = cursor
                continue
            if stream.done or transport.closed:
                return
            with anyio.move_on_after(self.keepalive_interval) as scope:
                await changed.wait()
            if scope.cancelled_caught:
                await send({"type": "http.response.body", "body": PING, "more_body": True})


# --- serving -----------------------------------------------------------------------------------


async def serve_http(
    server: Server | StreamableHTTPApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    asgi_server: Literal["uvicorn", "hypercorn"] | None = None,
    graceful_timeout: float = 2.0,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    **app_options: Any,
) -> None:
    """Serve ``server`` over Streamable HTTP until cancelled.

    Binds ``host:port`` (default 127.0.0.1 and a free port) and reports the
    bound port through ``task_status``: ``port = await tg.start(serve_http, server)``.
    Runs uvicorn on asyncio and hypercorn on trio unless ``asgi_server`` says
    otherwise (uvicorn needs asyncio). ``app_options`` go to
    :class:`StreamableHTTPApp`; or pass a ready app instead of a server. On
    cancellation every session ends, then the HTTP server stops (waiting at
    most ``graceful_timeout`` for connections).

    Binding a non-loopback address needs ``allowed_hosts`` (and usually
    authentication in front): the default accepts only loopback host names.
    """
    if isinstance(server, StreamableHTTPApp):
        if app_options:
            raise TypeError("pass app options to StreamableHTTPApp, not serve_http, when giving an app")
        app = server
    else:
        app = StreamableHTTPApp(server, **app_options)
    sock = bind(host, port)
    bound_port = int(sock.getsockname()[1])
    stop = anyio.Event()
    shield = anyio.CancelScope(shield=True)

    async def run_server(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with shield:
            await run_asgi(
                app, sock, stop, asgi_server=asgi_server, graceful_timeout=graceful_timeout, task_status=task_status
            )

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            try:
                await tg.start(run_server)
                logger.info("MCP server %s on http://%s:%d%s", app.server.name, host, bound_port, app.path)
                task_status.started(bound_port)
                await anyio.sleep_forever()
            finally:
                app.close()
                stop.set()
                shield.deadline = anyio.current_time() + graceful_timeout + 3
                tg.cancel_scope.cancel()
    finally:
        if sock.fileno() != -1:
            sock.close()


# --- client ------------------------------------------------------------------------------------


class _Exchange:
    """Where one request's answer stands: the stream to resume, and whether it came.

    ``transform`` rewrites the request's response before the session sees it
    (``tools/list`` on the modern leg drops tools with invalid ``x-mcp-header``).
    """

    __slots__ = ("answered", "last_event_id", "request_id", "retry_ms", "transform")

    def __init__(self, request_id: RequestId | None, transform: Callable[[bytes], bytes] | None = None) -> None:
        self.request_id = request_id
        self.last_event_id = ""
        self.retry_ms = 1000
        self.answered = False
        self.transform = transform


class _ModernCall:
    """What the transport knows about one 2026-07-28 request it sends."""

    __slots__ = ("headers", "method", "probe")

    def __init__(self, headers: dict[str, str], method: str, probe: bool) -> None:
        self.headers = headers
        self.method = method
        #: The era probe (the first request, a server/discover): 401/403/5xx end the connection.
        self.probe = probe


_MAX_RESUME_FAILURES = 5


class _NamedTool(msgspec.Struct):
    name: str = ""


class _ToolList(msgspec.Struct):
    tools: list[_NamedTool] = []


class _ToolNames(msgspec.Struct):
    result: _ToolList = msgspec.field(default_factory=_ToolList)


class StreamableHTTPClientTransport:
    """The client side of Streamable HTTP (made by :func:`http_client`).

    Attributes:
        url: The MCP endpoint.
        session_id: ``MCP-Session-Id`` the server issued, once known.
        protocol_version: The negotiated revision, once the initialize result passed through.
        era: ``"modern"`` once a request with the 2026-07-28 envelope went out,
            ``"legacy"`` once ``initialize`` did; ``None`` before either.
    """

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        task_group: anyio.abc.TaskGroup,
        *,
        headers: Mapping[str, str] | None,
        limits: Limits,
        standalone_stream: bool,
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._http = http
        self._tg = task_group
        self._extra_headers = dict(headers or {})
        self._max = limits.max_message_bytes
        self._want_standalone = standalone_stream
        self._standalone: anyio.CancelScope | None = None
        self._in_send, self._in_recv = anyio.create_memory_object_stream[bytes | MessageTooLarge](64)
        self._requests: dict[RequestId, anyio.CancelScope] = {}
        self._initialize_id: RequestId | None = None
        self._fatal: str | None = None
        self._closed = False
        self.era: str | None = None
        self._sent_request = False
        # In-flight 2026-07-28 requests (cancelled by closing their POST, never by a notification).
        self._modern_calls: set[RequestId] = set()
        self._modern_version = LATEST_MODERN
        # tool name -> its x-mcp-header annotations, from the latest modern tools/list
        self._tool_headers: dict[str, tuple[mcp_headers.ParamHeader, ...]] = {}

    # --- Transport protocol --------------------------------------------------------------------

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        if self._closed or self._fatal is not None:
            raise anyio.ClosedResourceError
        try:
            parsed: jsonrpc.Message | None = jsonrpc.decode(message)
        except jsonrpc.InvalidMessage:
            parsed = None
        if type(parsed) is Request:
            call: _ModernCall | None = None
            if parsed.method == "initialize":
                self._initialize_id = parsed.id
                self.era = "legacy"
            elif modern.has_envelope(parsed.params):
                call = self._modern_call(parsed)
            self._sent_request = True
            scope = anyio.CancelScope()
            self._requests[parsed.id] = scope
            self._tg.start_soon(self._request, message, parsed.id, scope, call)
            return
        cancelled: RequestId | None = None
        if type(parsed) is Notification and parsed.method == "notifications/cancelled":
            cancelled = self._cancelled_id(parsed)
            if cancelled is not None and (cancelled in self._modern_calls or self.era == "modern"):
                # 2026-07-28 over HTTP: closing the request's POST is the cancellation; nothing is sent.
                running = self._requests.get(cancelled)
                if running is not None:
                    running.cancel()
                return
        extra: dict[str, str] = {}
        if self.era == "modern" and type(parsed) is Notification:
            extra = {"mcp-protocol-version": self._modern_version, "mcp-method": parsed.method}
        await self._post_one_way(message, extra)
        if type(parsed) is Notification:
            if parsed.method == "notifications/cancelled":
                if cancelled is not None and cancelled in self._requests:
                    self._requests[cancelled].cancel()
            elif parsed.method == "notifications/initialized" and self._want_standalone and self._standalone is None:
                self._standalone = anyio.CancelScope()
                ready = anyio.Event()
                self._tg.start_soon(self._standalone_stream, self._standalone, ready)
                # Some servers route a handler's requests to the GET stream and drop them when
                # none is open: let it open (or be refused) before the first call goes out.
                with anyio.move_on_after(_STANDALONE_WAIT):
                    await ready.wait()

    def _modern_call(self, request: Request) -> _ModernCall:
        """Headers and flags for a request carrying the 2026-07-28 envelope."""
        headers = mcp_headers.request_headers(request.method, request.params, self._tool_headers)
        version = headers.get("mcp-protocol-version")
        if version is not None:
            self._modern_version = version
        if self.era is None:
            self.era = "modern"
        probe = not self._sent_request and request.method == "server/discover"
        self._modern_calls.add(request.id)
        return _ModernCall(headers, request.method, probe)

    @staticmethod
    def _cancelled_id(notification: Notification) -> RequestId | None:
        with contextlib.suppress(errors.McpError):
            cancelled = jsonrpc.decode_params(notification.params, CancelledParams).request_id
            if not isinstance(cancelled, msgspec.UnsetType):
                return cancelled
        return None

    async def receive(self) -> bytes:
        try:
            item = await self._in_recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._fatal is not None:
                raise ConnectionClosed(self._fatal) from None
            raise
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def aclose(self) -> None:
        """Stop every exchange and end the session on the server (DELETE)."""
        if self._closed:
            return
        self._closed = True
        for scope in self._requests.values():
            scope.cancel()
        if self._standalone is not None:
            self._standalone.cancel()
        self._in_send.close()
        self._in_recv.close()
        if self.session_id is not None and self._fatal is None:
            import httpx

            with anyio.move_on_after(2), contextlib.suppress(httpx.HTTPError):
                response = await self._http.delete(self.url, headers=self._headers(accept=None))
                if response.status_code not in (200, 202, 204, 404, 405):
                    logger.debug("DELETE of the MCP session answered HTTP %d", response.status_code)

    # --- helpers -------------------------------------------------------------------------------

    def _headers(self, *, accept: str | None, content: bool = False, last_event_id: str = "") -> dict[str, str]:
        headers = dict(self._extra_headers)
        if accept is not None:
            headers["accept"] = accept
        if content:
            headers["content-type"] = _JSON
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id:
            headers["last-event-id"] = last_event_id
        return headers

    def _note_session(self, response: httpx.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and self.session_id is None:
            self.session_id = sid

    def _session_gone(self, response: httpx.Response) -> bool:
        """A 404 for our session: the server ended it. End the connection."""
        if response.status_code != 404 or self.session_id is None:
            return False
        if self._fatal is None:
            self._fatal = f"the server ended MCP session {self.session_id[:8]}... (HTTP 404); start a new session"
            logger.warning("%s", self._fatal)
            self.session_id = None
            self._in_send.close()
            for scope in self._requests.values():
                scope.cancel()
            if self._standalone is not None:
                self._standalone.cancel()
        return True

    async def _feed(
        self, data: bytes, request_id: RequestId | None, transform: Callable[[bytes], bytes] | None = None
    ) -> bool:
        """Pass one message to the session; True when it is the response to ``request_id``."""
        answered = False
        try:
            message: jsonrpc.Message | None = jsonrpc.decode(data)
        except jsonrpc.InvalidMessage:
            message = None
        if type(message) is Response or type(message) is ErrorResponse:
            answered = request_id is not None and _same_id(message.id, request_id)
            if answered and transform is not None and type(message) is Response:
                data = transform(data)
            if type(message) is Response and _same_id(message.id, self._initialize_id):
                self._initialize_id = None
                version = _initialize_version(message.result)
                if version:
                    self.protocol_version = version
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._in_send.send(data)
        return answered

    async def _fail(self, request_id: RequestId, code: int, message: str) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._in_send.send(jsonrpc.encode_error(request_id, code, message))

    async def _fail_http(self, request_id: RequestId, response: httpx.Response) -> None:
        body = await _read_bounded(response, 65536)
        code = errors.INVALID_REQUEST if 400 <= response.status_code < 500 else errors.INTERNAL_ERROR
        detail = ""
        if body:
            try:
                error = jsonrpc.decode(body)
            except jsonrpc.InvalidMessage:
                detail = body[:200].decode("utf-8", "replace").strip()
            else:
                if type(error) is ErrorResponse:
                    code, detail = error.code, error.message
        reason = response.reason_phrase or "error"
        text = f"HTTP {response.status_code} {reason} from {self.url}" + (f": {detail}" if detail else "")
        await self._fail(request_id, code, text)

    async def _post_one_way(self, message: bytes, extra_headers: Mapping[str, str] | None = None) -> None:
        """POST a notification or a response (answered 202)."""
        import httpx

        headers = self._headers(accept=f"{_JSON}, {_SSE}", content=True)
        if extra_headers:
            headers.update(extra_headers)
        try:
            async with self._http.stream("POST", self.url, content=message, headers=headers) as response:
                self._note_session(response)
                if self._session_gone(response):
                    raise anyio.BrokenResourceError
                if not 200 <= response.status_code < 300:
                    body = await _read_bounded(response, 2048)
                    logger.warning(
                        "server refused a message with HTTP %d: %s",
                        response.status_code,
                        body.decode("utf-8", "replace").strip(),
                    )
        except httpx.HTTPError as exc:
            raise anyio.BrokenResourceError(f"POST to {self.url} failed: {exc!r}") from exc

    async def _request(
        self, message: bytes, request_id: RequestId, scope: anyio.CancelScope, call: _ModernCall | None = None
    ) -> None:
        try:
            with scope:
                if call is None:
                    await self._exchange(message, request_id)
                else:
                    await self._exchange_modern(message, request_id, call)
        except Exception as exc:  # pragma: no cover - a bug here must not hang the caller
            logger.exception("HTTP exchange for request %r failed", request_id)
            await self._fail(request_id, errors.INTERNAL_ERROR, f"HTTP transport failed: {exc!r}")
        finally:
            if self._requests.get(request_id) is scope:
                del self._requests[request_id]
            self._modern_calls.discard(request_id)

    # --- the modern leg (2026-07-28) ------------------------------------------------------------

    async def _exchange_modern(self, message: bytes, request_id: RequestId, call: _ModernCall) -> None:
        """POST one 2026-07-28 request and read its answer (JSON or SSE); no session, no resumption."""
        import httpx

        headers = {**self._extra_headers, "accept": f"{_JSON}, {_SSE}", "content-type": _JSON, **call.headers}
        transform = self._read_tools if call.method == "tools/list" else None
        try:
            async with self._http.stream("POST", self.url, content=message, headers=headers) as response:
                if not 200 <= response.status_code < 300:
                    await self._fail_modern_http(request_id, response, call)
                    return
                media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                if media == _JSON:
                    body = await _read_bounded(response, self._max)
                    if len(body) > self._max:
                        await self._fail(request_id, errors.INVALID_REQUEST, f"response exceeds {self._max} bytes")
                    elif not await self._feed(body, request_id, transform):
                        problem = "the server's JSON answer was not this request's response"
                        await self._fail(request_id, errors.INTERNAL_ERROR, problem)
                    return
                if media != _SSE:
                    await self._fail(
                        request_id, errors.INTERNAL_ERROR, f"unexpected Content-Type {media!r} from {self.url}"
                    )
                    return
                state = _Exchange(request_id, transform)
                await self._read_sse(response, state)
                if state.answered:
                    return
                problem = "the server closed the stream before answering"
        except httpx.HTTPError as exc:
            if call.probe:
                self._end(f"the era probe (server/discover) to {self.url} failed: {exc!r}")
                return
            problem = f"POST to {self.url} failed: {exc!r}"
        # Streams of this revision cannot be resumed: the request is lost (call again).
        await self._fail(request_id, errors.CONNECTION_CLOSED, problem)

    async def _fail_modern_http(self, request_id: RequestId, response: httpx.Response, call: _ModernCall) -> None:
        """A modern request answered with an HTTP error: the server's JSON-RPC error, kept whole."""
        status = response.status_code
        body = await _read_bounded(response, 65536)
        error: ErrorResponse | None = None
        with contextlib.suppress(jsonrpc.InvalidMessage):
            decoded = jsonrpc.decode(body) if body else None
            if type(decoded) is ErrorResponse:
                error = decoded
        if call.probe and (status in (401, 403) or status >= 500) and error is None:
            # Not evidence of the protocol era (authorization, an outage): do not fall back to initialize.
            reason = response.reason_phrase or "error"
            self._end(f"the era probe (server/discover) to {self.url} was answered HTTP {status} {reason}")
            return
        if error is not None:
            data = msgspec.UNSET if error.data is None else error.data
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._in_send.send(jsonrpc.encode_error(request_id, error.code, error.message, data))
            return
        detail = body[:200].decode("utf-8", "replace").strip()
        code = errors.INVALID_REQUEST if 400 <= status < 500 else errors.INTERNAL_ERROR
        text = f"HTTP {status} {response.reason_phrase or 'error'} from {self.url}" + (f": {detail}" if detail else "")
        await self._fail(request_id, code, text)

    def _end(self, reason: str) -> None:
        """End the connection: the session's receive raises ConnectionClosed(reason)."""
        if self._fatal is None:
            self._fatal = reason
            logger.warning("%s", reason)
            self._in_send.close()
            for scope in self._requests.values():
                scope.cancel()

    def _read_tools(self, data: bytes) -> bytes:
        """Learn ``x-mcp-header`` annotations from a ``tools/list`` response; drop tools whose are invalid."""
        if b"x-mcp-header" not in data:
            if not self._tool_headers:
                return data
            try:
                listed = msgspec.json.decode(data, type=_ToolNames).result.tools
            except msgspec.DecodeError:
                return data
            for tool in listed:
                self._tool_headers.pop(tool.name, None)
            return data
        try:
            message = msgspec.json.decode(data)
            tools = message["result"]["tools"]
            if not isinstance(tools, list):
                return data
        except (msgspec.DecodeError, KeyError, TypeError):
            return data
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                found = mcp_headers.param_headers(tool.get("inputSchema"))
            except ValueError as exc:
                logger.warning("dropped tool %r from tools/list: invalid x-mcp-header (%s)", name, exc)
                self._tool_headers.pop(name, None)
                continue
            if found:
                self._tool_headers[name] = found
            else:
                self._tool_headers.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return data
        message["result"]["tools"] = kept
        return msgspec.json.encode(message)

    async def _exchange(self, message: bytes, request_id: RequestId) -> None:
        """POST a request and read its answer, resuming the stream with GET if it drops."""
        import httpx

        state = _Exchange(request_id)
        failures = 0
        first = True
        while True:
            progress = False
            problem = "the stream ended before the response"
            try:
                if first:
                    request = self._http.stream(
                        "POST",
                        self.url,
                        content=message,
                        headers=self._headers(accept=f"{_JSON}, {_SSE}", content=True),
                    )
                else:
                    request = self._http.stream(
                        "GET", self.url, headers=self._headers(accept=_SSE, last_event_id=state.last_event_id)
                    )
                async with request as response:
                    if first:
                        self._note_session(response)
                    if self._session_gone(response):
                        return
                    if not 200 <= response.status_code < 300:
                        await self._fail_http(request_id, response)
                        return
                    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                    if first and media == _JSON:
                        body = await _read_bounded(response, self._max)
                        if len(body) > self._max:
                            await self._fail(request_id, errors.INVALID_REQUEST, f"response exceeds {self._max} bytes")
                        elif not await self._feed(body, request_id):
                            await self._fail(
                                request_id,
                                errors.INTERNAL_ERROR,
                                "the server's JSON answer was not this request's response",
                            )
                        return
                    if media != _SSE:
                        await self._fail(
                            request_id, errors.INTERNAL_ERROR, f"unexpected Content-Type {media!r} from {self.url}"
                        )
                        return
                    progress = await self._read_sse(response, state)
            except httpx.HTTPError as exc:
                if first and not state.last_event_id:
                    await self._fail(request_id, errors.CONNECTION_CLOSED, f"POST to {self.url} failed: {exc!r}")
                    return
                logger.debug("SSE stream for request %r dropped: %r", request_id, exc)
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if state.answered:
                return
            if not state.last_event_id:
                await self._fail(
                    request_id,
                    errors.CONNECTION_CLOSED,
                    "the server closed the stream before answering, and it cannot be resumed (no event id)",
                )
                return
            failures = 0 if progress else failures + 1
            if failures >= _MAX_RESUME_FAILURES:
                await self._fail(
                    request_id,
                    errors.CONNECTION_CLOSED,
                    f"the answer stream broke and {failures} attempts to resume it failed (last: {problem})",
                )
                return
            first = False
            await anyio.sleep(state.retry_ms / 1000)

    async def _read_sse(self, response: httpx.Response, state: _Exchange) -> bool:
        """Read one SSE connection until the answer or its end; True when anything new came."""
        decoder = SSEDecoder(self._max)
        decoder.last_event_id = state.last_event_id
        progress = False
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                if event.oversized:
                    progress = True
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await self._in_send.send(MessageTooLarge(self._max))
                elif event.event == "message" and event.data:  # empty data: a priming event
                    progress = True
                    if await self._feed(event.data, state.request_id, state.transform):
                        state.answered = True
            if decoder.last_event_id != state.last_event_id:
                progress = True
                state.last_event_id = decoder.last_event_id
            if decoder.retry is not None:
                state.retry_ms = decoder.retry
            if state.answered:
                break
        return progress

    async def _standalone_stream(self, scope: anyio.CancelScope, ready: anyio.Event) -> None:
        """The optional GET stream for server messages unrelated to our requests.

        ``ready`` is set once the first GET got its response headers, or failed.
        """
        try:
            await self._standalone_loop(scope, ready)
        finally:
            ready.set()

    async def _standalone_loop(self, scope: anyio.CancelScope, ready: anyio.Event) -> None:
        import httpx

        state = _Exchange(None)
        failures = 0
        with scope:
            while not self._closed and self._fatal is None:
                progress = False
                try:
                    async with self._http.stream(
                        "GET", self.url, headers=self._headers(accept=_SSE, last_event_id=state.last_event_id)
                    ) as response:
                        ready.set()
                        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                        if response.status_code != 200 or media != _SSE:
                            # 405 (no GET stream), 404/400 from servers without one: fine, do without.
                            logger.debug("no standalone SSE stream (HTTP %d)", response.status_code)
                            return
                        progress = await self._read_sse(response, state)
                except httpx.HTTPError as exc:
                    logger.debug("standalone SSE stream dropped: %r", exc)
                failures = 0 if progress else failures + 1
                if failures >= _MAX_RESUME_FAILURES:
                    return
                await anyio.sleep(state.retry_ms / 1000)


#: Seconds to let the standalone GET stream open before the first request after initialize.
_STANDALONE_WAIT = 2.0


async def _read_bounded(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a body (one more than allowed tells it was too long)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            break
    return bytes(body[: limit + 1])


@contextlib.asynccontextmanager
async def http_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    standalone_stream: bool = True,
    timeout: float = 30.0,
) -> AsyncIterator[StreamableHTTPClientTransport]:
    """A Streamable HTTP transport to the MCP endpoint ``url``; use with :class:`minimcp.Client`.

    Args:
        url: The MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: Extra headers on every request (``Authorization``, say).
        limits: ``max_message_bytes`` bounds each message read.
        standalone_stream: Open the GET stream for server messages after the
            handshake (servers without one are fine).
        timeout: Seconds to connect and to send a request. Reading an answer has
            no HTTP timeout: the session's request timeouts govern it.

    On exit the session is ended on the server (DELETE) and every exchange stops.
    """
    import httpx

    limits = limits or Limits()
    error: BaseException | None = None
    async with (
        httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
            follow_redirects=False,
        ) as http,
        anyio.create_task_group() as tg,
    ):
        transport = StreamableHTTPClientTransport(
            url, http, tg, headers=headers, limits=limits, standalone_stream=standalone_stream
        )
        try:
            yield transport
        except BaseException as exc:
            # Re-raised below, outside the task group, so it is not wrapped in an exception group.
            error = exc
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            tg.cancel_scope.cancel()
    if error is not None:
        raise error


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect a :class:`minimcp.Client` to a Streamable HTTP server and initialize.

    Extra keyword arguments go to :class:`~minimcp.Client`.
    """
    from minimcp.client import Client

    async with (
        http_client(url, headers=headers, limits=limits) as transport,
        Client(transport, limits=limits, **client_options) as client,
    ):
        yield client
