"""Serving a Server and connecting a Client over WebSocket: the role-level layer above the WebSocket transport.

:mod:`minimcp.transports.websocket` (the transport) imports no role; this module is where
a ``Server`` meets the upgraded connections and a ``Client`` meets the client transport
(``tests/docs/test_layers.py`` checks the direction). Both names are also found on
:mod:`minimcp.transports.websocket`.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from minimcp.core.config import Limits
from minimcp.transports._ports import SessionActivity
from minimcp.transports.websocket import SUBPROTOCOL, read_handshake, running, websocket_client, write_now

try:
    from websockets.exceptions import NegotiationError
    from websockets.http11 import Request
    from websockets.protocol import OPEN
    from websockets.server import ServerProtocol
    from websockets.typing import Origin, Subprotocol
except ImportError as exc:  # pragma: no cover - minimcp.transports.websocket has already said so
    raise ImportError("serving MCP over WebSocket needs the 'websockets' package: pip install 'minimcp[ws]'") from exc

if TYPE_CHECKING:
    from minimcp.client.client import Client
    from minimcp.server.server import Server

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
            unsent output, and the liveness bounds ``initialize_timeout``,
            ``idle_timeout``, ``ping_interval`` and ``ping_timeout`` (default:
            ``server.limits``).
        allowed_origins: Origins a browser may connect from (exact strings or
            compiled patterns matched in full). Default: loopback origins
            (``http(s)://localhost|127.0.0.1|[::1]`` with any port). A request
            without ``Origin`` is always accepted.
        max_connections: Connections served at once; further ones wait in the
            listen backlog (a slot is freed when its connection ends, at the
            latest by the initialize, idle or keepalive deadline).
        handshake_timeout: Seconds a client has to complete the upgrade request.
        close_timeout: Seconds to spend on a closing handshake.
    """
    limits = limits or server.limits
    origins: list[Origin | re.Pattern[str] | None] = [None]
    if allowed_origins is None:
        origins.append(_LOOPBACK_ORIGIN)
    else:
        origins.extend(o if isinstance(o, re.Pattern) else Origin(o) for o in allowed_origins)
    slots = anyio.Semaphore(max_connections)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        try:
            async with stream:
                protocol = ServerProtocol(
                    origins=origins,
                    subprotocols=[MCP],
                    select_subprotocol=_select_subprotocol,
                    max_size=limits.max_message_bytes,
                )
                events: list[object] = []
                with anyio.move_on_after(handshake_timeout) as handshake:
                    events = await read_handshake(stream, protocol)
                    request = events[0] if events else None
                    if isinstance(request, Request):
                        del events[0]
                        if path is not None and request.path.split("?", 1)[0] != path:
                            response = protocol.reject(404, f"Not Found: the MCP endpoint is {path}\n")
                        else:
                            response = protocol.accept(request)
                        protocol.send_response(response)
                    await write_now(stream, protocol)
                if handshake.cancelled_caught or protocol.state is not OPEN:
                    return  # refused, malformed, or too slow: the stream closes here
                peer = SessionActivity()
                async with running(stream, protocol, close_timeout, events, limits, peer) as transport:
                    await server.serve(transport, task_status=peer)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError) as exc:
            logger.debug("websocket connection lost: %r", exc)
        except Exception:
            logger.exception("websocket connection failed")
        finally:
            slots.release()

    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    async with listener, anyio.create_task_group() as tg:
        await tg.start(server.run_background)  # a shared used-state store, the bus between workers

        async def accept_loop(sub: anyio.abc.SocketListener) -> None:
            while True:
                await slots.acquire()
                try:
                    stream = await sub.accept()
                except OSError as exc:  # out of descriptors, a reset before accept, ...
                    slots.release()
                    logger.warning("websocket accept failed: %s", exc)
                    await anyio.sleep(_ACCEPT_BACKOFF)
                    continue
                except BaseException:
                    slots.release()
                    raise
                tg.start_soon(handle, stream)

        for sub in listener.listeners:
            assert isinstance(sub, anyio.abc.SocketListener)
            tg.start_soon(accept_loop, sub)
        bound = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        logger.info("serving MCP over WebSocket on ws://%s:%d%s", host, bound, path or "/")
        task_status.started(bound)


@contextlib.asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    limits: Limits | None = None,
    headers: Mapping[str, str] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP server over WebSocket and initialize.

    Extra keyword arguments go to :class:`~minimcp.Client`. On exit the
    connection is closed with the closing handshake.
    """
    from minimcp.client.client import Client

    async with (
        websocket_client(url, limits=limits, headers=headers) as transport,
        Client(transport, limits=limits, **client_options) as client,
    ):
        yield client
