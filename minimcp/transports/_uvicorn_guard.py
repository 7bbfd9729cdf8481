"""uvicorn's h11 protocol with a deadline for each request's headers and a hard cap on open connections.

uvicorn (0.54) times out only an idle keep-alive connection; once a client has
sent a byte, nothing limits how long it may take to finish its headers, so
clients trickling a header line every few seconds hold their sockets forever.
Here a timer starts when a connection opens and again when a response ends;
it is stopped by the next request's complete head, and when it fires the
connection is closed. h11 itself bounds the size of a head (16 KiB).
Connections beyond ``max_connections`` are closed as soon as they are
accepted, before anything is read.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["guarded_h11_protocol"]

logger = logging.getLogger("minimcp.asgi")


def guarded_h11_protocol(header_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    """An ``H11Protocol`` subclass for ``uvicorn.Config(http=...)`` with these bounds."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                logger.warning("closed a new connection: %d are open (limit %d)", len(self.connections) - 1,
                               max_connections)
                transport.abort()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's head arrived whole
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.cycle is None or self.cycle.response_complete:  # no pipelined request started
                self._arm()

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._head_timer = self.loop.call_later(header_timeout, self._head_timed_out)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
                return
            logger.info("closed a connection whose request headers did not arrive within %g s", header_timeout)
            self.transport.close()

    return GuardedH11Protocol
