"""uvicorn's h11 and httptools protocols with a deadline for each request's headers and a hard cap on open connections.

uvicorn (0.54) times out only an idle keep-alive connection; once a client has
sent a byte, nothing limits how long it may take to finish its headers, so
clients trickling a header line every few seconds hold their sockets forever.
Here a deadline starts when a connection opens and again when a response ends;
it is lifted by the next request's complete head, and when it passes the
connection is closed. A deadline is a number, not a timer: each connection has
at most one timer, which checks its deadline when it fires and is set again for
a later one (one timer per connection per ``header_timeout``, not one per
request, which uvicorn's own keep-alive timer already costs). Connections
beyond ``max_connections`` are closed as soon as they are accepted, before
anything is read.

The size of a head is bounded too: h11 does it itself (uvicorn passes it
``max_head_bytes``), while httptools buffers a header of any length, so its
protocol counts the bytes received while a head is incomplete and answers
``431`` past ``max_head_bytes`` (checked after each read, so a head may
overshoot by one read of the socket, at most 256 KiB on asyncio).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["guarded_h11_protocol", "guarded_httptools_protocol"]

logger = logging.getLogger("minimcp.asgi")

_TOO_LARGE = b"request headers too large\n"
_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE), _TOO_LARGE)
)


class _HeadDeadline:
    """The header deadline and the connection cap, for a uvicorn protocol class later in the MRO."""

    header_timeout: float
    max_connections: int
    # set by the uvicorn protocol
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    cycle: Any
    _head_deadline: float | None = None  # loop time by which a request's head must be whole (None: no head due)
    _head_timer: asyncio.TimerHandle | None = None  # at most one, at or before the deadline

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if len(self.connections) > self.max_connections:
            logger.warning("closed a new connection: %d are open (limit %d)", len(self.connections) - 1,
                           self.max_connections)
            transport.abort()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_deadline = None
        if self._head_timer is not None:
            self._head_timer.cancel()  # (it holds this protocol)
            self._head_timer = None
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self.cycle is None or self.cycle.response_complete:  # no pipelined request started
            self._arm()

    def _arm(self) -> None:
        if self.transport.is_closing():
            return
        deadline = self._head_deadline = self.loop.time() + self.header_timeout
        if self._head_timer is None:
            self._head_timer = self.loop.call_at(deadline, self._head_check)

    def _disarm(self) -> None:
        self._head_deadline = None  # the timer, if any, finds no deadline when it fires

    def _head_check(self) -> None:
        self._head_timer = None
        deadline = self._head_deadline
        if deadline is None or self.transport.is_closing():
            return
        if self.loop.time() < deadline:  # a later deadline than the one the timer was set for
            self._head_timer = self.loop.call_at(deadline, self._head_check)
            return
        self._head_deadline = None
        if self.cycle is not None and not self.cycle.response_complete:
            return
        logger.info("closed a connection whose request headers did not arrive within %g s", self.header_timeout)
        self.transport.close()


def guarded_h11_protocol(header_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    """An ``H11Protocol`` subclass for ``uvicorn.Config(http=...)`` with these bounds."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(_HeadDeadline, H11Protocol):
        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's head arrived whole
                self._disarm()

    GuardedH11Protocol.header_timeout = header_timeout
    GuardedH11Protocol.max_connections = max_connections
    return GuardedH11Protocol


def guarded_httptools_protocol(
    header_timeout: float, max_connections: int, max_head_bytes: int
) -> type[asyncio.Protocol]:
    """An ``HttpToolsProtocol`` subclass for ``uvicorn.Config(http=...)`` with these bounds."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(_HeadDeadline, HttpToolsProtocol):
        _in_head = True  # a request's head may be arriving (from the connection or the end of a request)
        _head_bytes = 0

        def data_received(self, data: bytes) -> None:
            if not self._in_head:
                super().data_received(data)
                return
            self._head_bytes += len(data)
            super().data_received(data)
            if self._in_head and self._head_bytes > max_head_bytes and not self.transport.is_closing():
                logger.info("answered 431: a request's head passed %d bytes", max_head_bytes)
                self._disarm()
                self.transport.write(_431)
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._disarm()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._in_head = True
            self._head_bytes = 0

    GuardedHttpToolsProtocol.header_timeout = header_timeout
    GuardedHttpToolsProtocol.max_connections = max_connections
    return GuardedHttpToolsProtocol
