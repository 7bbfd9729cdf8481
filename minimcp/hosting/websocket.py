"""Serving a Server and connecting a Client over WebSocket: the role-level layer above the WebSocket transport.

:mod:`minimcp.transports.websocket` (the transport) imports no role; this module is where
a ``Server`` meets the upgraded connections and a ``Client`` meets the client transport
(``tests/docs/test_layers.py`` checks the direction). Both names are also found on
:mod:`minimcp.transports.websocket`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from minimcp.core.config import Limits
from minimcp.transports._client_bounds import client_key
from minimcp.transports._ports import SessionActivity
from minimcp.transports._ws_slots import NoSlot, SlotTable
from minimcp.transports.websocket import (
    SUBPROTOCOL,
    WebSocketHandshakeError,
    WebSocketTransport,
    read_handshake,
    redacted_log,
    running,
    websocket_client,
    write_now,
)
from minimcp.wire import errors
from minimcp.wire.errors import McpError

try:
    from websockets.datastructures import Headers
    from websockets.exceptions import NegotiationError
    from websockets.frames import CloseCode
    from websockets.http11 import Request, Response
    from websockets.protocol import OPEN
    from websockets.server import ServerProtocol
    from websockets.typing import Origin, Subprotocol
except ImportError as exc:  # pragma: no cover - minimcp.transports.websocket has already said so
    raise ImportError("serving MCP over WebSocket needs the 'websockets' package: pip install 'minimcp[ws]'") from exc

if TYPE_CHECKING:
    import httpx

    from minimcp.auth.config import Authorization
    from minimcp.auth.principal import Principal
    from minimcp.client.client import Client
    from minimcp.core.dispatch import Deferred
    from minimcp.core.session import Session
    from minimcp.server.connection import ServerConnection
    from minimcp.server.server import Server
    from minimcp.wire.jsonrpc import Notification
    from minimcp.wire.jsonrpc import Request as JsonRpcRequest

__all__ = ["connect_websocket", "serve_websocket"]

logger = logging.getLogger("minimcp.websocket")

MCP = Subprotocol(SUBPROTOCOL)
_LOOPBACK_ORIGIN = re.compile(r"https?://(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?", re.IGNORECASE)
#: Seconds the accept loop pauses after a failed accept (out of descriptors, ...).
_ACCEPT_BACKOFF = 0.1


def _select_subprotocol(protocol: ServerProtocol, offered: Sequence[Subprotocol]) -> Subprotocol | None:
    if MCP in offered:
        return MCP
    if not offered:
        return None  # lenient: a plain WebSocket client that names no subprotocol
    raise NegotiationError(f"unsupported subprotocol; this server speaks {SUBPROTOCOL!r}")


async def serve_websocket(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str | None = "/mcp",
    limits: Limits | None = None,
    allowed_origins: Sequence[str | re.Pattern[str]] | None = None,
    max_connections: int = 1000,
    handshake_timeout: float = 10.0,
    close_timeout: float = 5.0,
    auth: Authorization | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over WebSocket until cancelled; each connection is one session.

    Use ``port = await task_group.start(serve_websocket, server)`` to learn the
    bound port (with the default ``port=0`` the system picks one).

    Args:
        server: The MCP server; each connection runs ``server.serve``.
        host: Interface to listen on (loopback by default).
        port: TCP port; 0 for any free one.
        path: The only accepted request path (404 otherwise); ``None`` accepts any.
        limits: ``max_message_bytes`` per message, ``stream_buffer_bytes`` of
            unsent output, the liveness bounds ``initialize_timeout``,
            ``idle_timeout``, ``ping_interval`` and ``ping_timeout``, and
            ``max_sessions_per_client``: connections one client address (and,
            with ``auth``, one person) may hold (default: ``server.limits``).
        allowed_origins: Origins a browser may connect from (exact strings or
            compiled patterns matched in full). Default: loopback origins
            (``http(s)://localhost|127.0.0.1|[::1]`` with any port). A request
            without ``Origin`` is always accepted.
        max_connections: Connections held at once, counted from the TCP accept
            (an upgrade in progress holds one). A new one beyond a bound ends
            another connection (close code 1008 with the reason) or is refused
            (``429`` at its address's or person's bound, ``503`` when full); the
            rules are in :mod:`minimcp.transports._ws_slots`: in short, one
            address holding most slots cannot keep a new address out.
        handshake_timeout: Seconds a client has to complete the upgrade request.
        close_timeout: Seconds to spend on a closing handshake.
        auth: Authorization (:class:`~minimcp.auth.config.Authorization`): the
            upgrade request's ``Authorization: Bearer`` token is checked before
            anything else; a refused one gets ``401`` with ``WWW-Authenticate``
            (``503`` when the authorization server cannot be asked), a token
            without the server's ``required_scopes`` ``403``, and no WebSocket
            is opened. An accepted one is the connection's ``principal``
            (``ctx.auth``) for its whole life (a new token means a new
            connection). A request needing scopes the token lacks
            (``Server.scopes_needed``) is answered with JSON-RPC error
            ``-32004`` (:data:`minimcp.wire.errors.INSUFFICIENT_SCOPE`; data:
            ``requiredScopes``, every scope that request needs, and the
            ``wwwAuthenticate`` challenge) and runs nothing; the connection
            stays. Refusals are counted on ``auth.metrics`` (as over HTTP).
            The protected resource metadata (RFC 9728) is answered on a plain
            ``GET`` of its well-known paths on this listener. ``None``:
            nothing is checked.
    """
    limits = limits or server.limits
    origins: list[Origin | re.Pattern[str] | None] = [None]
    if allowed_origins is None:
        origins.append(_LOOPBACK_ORIGIN)
    else:
        origins.extend(o if isinstance(o, re.Pattern) else Origin(o) for o in allowed_origins)
    table: SlotTable[_Slot] = SlotTable(max_connections, limits.max_sessions_per_client)
    well_known: tuple[str, ...] = ()
    if auth is not None:
        from minimcp.auth.resource import metadata_paths

        well_known = metadata_paths(auth)
    ids = itertools.count()
    refusing = 0  # connections being refused (not in the table); at most max_connections more

    def evict(victim: _Slot, reason: str) -> None:
        table.remove(victim)
        logger.info("websocket: ending a connection from %s: %s", victim.client or "?", reason)
        victim.evicted = reason
        if victim.transport is not None:
            tg.start_soon(victim.transport.fail, CloseCode.POLICY_VIOLATION, reason)
        elif victim.scope is not None:
            victim.scope.cancel()  # still upgrading: its socket is closed

    async def handle(stream: anyio.abc.SocketStream) -> None:
        nonlocal refusing
        slot = _Slot(str(next(ids)), client_key({"client": stream.extra(SocketAttribute.remote_address, None)}), table)
        refusal: NoSlot | None = None
        try:
            room = table.make_room(slot.client)
        except NoSlot as exc:
            if refusing >= max_connections:
                await stream.aclose()
                return
            refusal = exc
            refusing += 1
        else:
            if room is not None:
                evict(*room)
            table.add(slot)
        try:
            async with stream:
                protocol = ServerProtocol(
                    origins=origins,
                    subprotocols=[MCP],
                    select_subprotocol=_select_subprotocol,
                    max_size=limits.max_message_bytes,
                    logger=redacted_log("websockets.server"),  # a bearer token never reaches a log line
                )
                events: list[object] = []
                with anyio.move_on_after(handshake_timeout) as slot.scope:
                    events = await read_handshake(stream, protocol)
                    request = events[0] if events else None
                    if isinstance(request, Request):
                        del events[0]
                        protocol.send_response(await answer(protocol, request, slot, refusal))
                    await write_now(stream, protocol)
                if slot.scope.cancelled_caught or protocol.state is not OPEN:
                    return  # refused, malformed, evicted or too slow: the stream closes here
                async with running(stream, protocol, close_timeout, events, limits, slot) as transport:
                    slot.transport = transport
                    if slot.evicted is not None:
                        await transport.fail(CloseCode.POLICY_VIOLATION, slot.evicted)
                    await server.serve(transport, task_status=slot)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError) as exc:
            logger.debug("websocket connection lost: %r", exc)
        except Exception:
            logger.exception("websocket connection failed")
        finally:
            if refusal is not None:
                refusing -= 1
            table.remove(slot)

    async def answer(protocol: ServerProtocol, request: Request, slot: _Slot, refusal: NoSlot | None) -> Response:
        """The response to the upgrade request: ``101`` (accepted), or a refusal."""
        route = request.path.split("?", 1)[0]
        if route in well_known and auth is not None:
            return _metadata_response(auth)
        if refusal is not None:
            return protocol.reject(refusal.status, f"{refusal}\n")
        if path is not None and route != path:
            return protocol.reject(404, f"Not Found: the MCP endpoint is {path}\n")
        if auth is not None:
            refused = await _authorize(protocol, request, auth, slot)
            if refused is not None:
                return refused
            key = slot.principal.key if slot.principal is not None else None
            try:
                room = table.make_room_for_person(key)
            except NoSlot as exc:
                return protocol.reject(exc.status, f"{exc}\n")
            if room is not None:
                evict(*room)
            slot.person = key  # (after the search above, which must not pick this very connection)
            table.add_person(slot)
        return protocol.accept(request)

    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    async with listener, anyio.create_task_group() as tg:
        await tg.start(server.run_background)  # a shared used-state store, the bus between workers

        async def accept_loop(sub: anyio.abc.SocketListener) -> None:
            while True:
                try:
                    stream = await sub.accept()
                except OSError as exc:  # out of descriptors, a reset before accept, ...
                    logger.warning("websocket accept failed: %s", exc)
                    await anyio.sleep(_ACCEPT_BACKOFF)
                    continue
                tg.start_soon(handle, stream)

        for sub in listener.listeners:
            assert isinstance(sub, anyio.abc.SocketListener)
            tg.start_soon(accept_loop, sub)
        bound = int(listener.extra(SocketAttribute.local_port))
        logger.info("serving MCP over WebSocket on ws://%s:%d%s", host, bound, path or "/")
        task_status.started(bound)


async def _authorize(protocol: ServerProtocol, request: Request, auth: Authorization, slot: _Slot) -> Response | None:
    """Check the upgrade's bearer token: ``None`` and ``slot.principal`` set, or the refusal to send."""
    from minimcp.auth.principal import TokenRefused
    from minimcp.auth.resource import challenge

    headers = request.headers.get_all("Authorization")
    try:
        if len(headers) > 1:
            raise TokenRefused("malformed", "more than one Authorization header")
        principal = await auth.authenticate(headers[0] if headers else None)
    except TokenRefused as refused:
        auth.metrics.count(refused.reason)
        logger.info("websocket: upgrade refused: token %s", refused.reason)
        if refused.reason == "unavailable":
            return protocol.reject(503, f"{refused.description}\n")
        response = protocol.reject(401, f"{refused.description}\n")
        response.headers["WWW-Authenticate"] = challenge(auth, refused)
        return response
    missing = auth.required_scopes - principal.scopes
    if missing:
        auth.metrics.insufficient_scope += 1
        logger.info("websocket: upgrade refused: token lacks required scopes")
        response = protocol.reject(403, "the token lacks scopes this server requires\n")
        response.headers["WWW-Authenticate"] = challenge(auth, None, auth.required_scopes)
        return response
    slot.principal = principal
    slot.auth = auth
    return None


def _metadata_response(auth: Authorization) -> Response:
    """The protected resource metadata (RFC 9728), answered on a plain ``GET`` of its well-known paths."""
    from minimcp.auth.resource import metadata

    body = metadata(auth)
    headers = Headers(
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "max-age=3600"),
            ("Access-Control-Allow-Origin", "*"),
            ("Connection", "close"),
        ]
    )
    return Response(200, "OK", headers, body)


class _Slot:
    """One accepted connection as the slot table counts it, and what its server connection is told at start.

    Passed to ``Server.serve`` as its ``task_status``: ``started`` gives the connection its principal
    (and, with authorization, the scope check in front of its dispatcher) before any request is read.
    The watchdog reads it at its ticks (:meth:`activity`), which also marks it used for the table.
    """

    __slots__ = (
        "auth",
        "client",
        "evicted",
        "id",
        "last_active",
        "peer",
        "person",
        "principal",
        "scope",
        "seen",
        "table",
        "transport",
    )

    live = 0  # (what the table's expiry reads; nothing of a WebSocket's expires through the table)
    initialized = True

    def __init__(self, slot_id: str, client: str, table: SlotTable[_Slot]) -> None:
        self.id = slot_id
        self.client = client
        self.person: Hashable | None = None
        self.principal: Principal | None = None
        self.auth: Authorization | None = None
        self.last_active = anyio.current_time()
        self.peer = SessionActivity()
        self.scope: anyio.CancelScope | None = None
        self.transport: WebSocketTransport | None = None
        self.evicted: str | None = None  # the reason it was ended to make room
        self.table = table
        self.seen = 0

    def busy(self) -> bool:
        """Work pending: a question to a person, a handler running, a subscription or a URL step."""
        return self.peer.activity()[1]

    def has_requested(self) -> bool:
        return self.peer.has_requested()

    def activity(self) -> tuple[int, bool]:
        count, busy = self.peer.activity()
        if busy or count != self.seen:  # used since the last tick: the young end of the table
            self.seen = count
            self.last_active = anyio.current_time()
            self.table.touch(self)
        return count, busy

    def started(self, value: ServerConnection | None = None) -> None:  # anyio TaskStatus
        self.peer.started(value)
        if value is not None and self.principal is not None and self.auth is not None:
            value.principal = self.principal
            value.hide_unpermitted = self.auth.hide_unpermitted  # tools/list as the HTTP app shows it
            value.session.dispatcher = _ScopeCheck(value, self.principal, self.auth)


@contextlib.asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    limits: Limits | None = None,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP server over WebSocket and initialize.

    ``auth``: authorization for the upgrade request; an :class:`~minimcp.auth.oauth_client.OAuthClient`
    puts its token there, refreshes one about to expire first, and, when the server refuses the upgrade
    (``401``, or ``403 insufficient_scope``), signs in from the challenge as over HTTP and upgrades again
    with the new token. The server checks the token at the upgrade only: a connection keeps the token it
    opened with, and a new connection (with the same ``auth``) gets a refreshed one.

    Extra keyword arguments go to :class:`~minimcp.Client`. On exit the
    connection is closed with the closing handshake.
    """
    from minimcp.client.client import Client

    async with contextlib.AsyncExitStack() as stack:
        if auth is None:
            transport = await stack.enter_async_context(websocket_client(url, limits=limits, headers=headers))
        else:
            transport = await _authorized_upgrade(stack, url, auth, limits, headers)
        client = await stack.enter_async_context(Client(transport, limits=limits, **client_options))
        yield client


async def _authorized_upgrade(
    stack: contextlib.AsyncExitStack,
    url: str,
    auth: httpx.Auth,
    limits: Limits | None,
    headers: Mapping[str, str] | None,
) -> WebSocketTransport:
    """Open the WebSocket with ``auth``'s ``Authorization`` header, driving its flow as httpx would: a refused
    upgrade is the flow's response (status and challenge), and the request it answers with is tried next."""
    import httpx

    http_url = "http" + url[2:] if url[:3].lower() == "ws:" or url[:4].lower() == "wss:" else url  # the same origin
    request = httpx.Request("GET", http_url, headers=headers)
    flow = auth.async_auth_flow(request)
    try:
        request = await flow.__anext__()
        while True:
            sent = {name: value for name, value in (headers or {}).items() if name.lower() != "authorization"}
            if "authorization" in request.headers:
                sent["Authorization"] = request.headers["authorization"]
            try:
                return await stack.enter_async_context(websocket_client(url, limits=limits, headers=sent))
            except WebSocketHandshakeError as refused:
                if refused.status not in (401, 403):
                    raise
                challenge = {"WWW-Authenticate": refused.www_authenticate} if refused.www_authenticate else {}
                response = httpx.Response(refused.status, headers=challenge, request=request)
                try:
                    request = await flow.asend(response)
                except StopAsyncIteration:
                    raise refused from None
    finally:
        await flow.aclose()


class _ScopeCheck:
    """The dispatcher of a connection with a principal: a request needing scopes the token lacks is answered
    with an error before its handler is called; everything else goes to the server connection as it is.

    Put in front only with authorization on (a connection without one pays nothing).
    """

    __slots__ = ("auth", "conn", "granted", "scopes_needed")

    def __init__(self, conn: ServerConnection, principal: Principal, auth: Authorization) -> None:
        self.conn = conn
        self.auth = auth
        self.granted = principal.scopes
        self.scopes_needed = conn.server.scopes_needed

    def handle_request(self, session: Session, request: JsonRpcRequest) -> Awaitable[Any] | Deferred:
        needed = self.scopes_needed(request.method, request.params)
        if needed and not needed <= self.granted:
            from minimcp.auth.resource import challenge

            every = needed | self.auth.required_scopes  # all this request needs, in one answer (SEP-2350)
            self.auth.metrics.insufficient_scope += 1
            logger.info("websocket: %s refused: the token lacks scopes it needs", request.method)
            raise McpError(
                errors.INSUFFICIENT_SCOPE,
                f"{request.method} needs scopes the token does not grant; reconnect with a token that has them",
                {"requiredScopes": sorted(every), "wwwAuthenticate": challenge(self.auth, None, every)},
            )
        return self.conn.handle_request(session, request)

    def handle_notification(self, session: Session, notification: Notification) -> None:
        self.conn.handle_notification(session, notification)
