"""What a network transport and the server it serves read of each other: small protocols, no role imported.

:class:`minimcp.Server` satisfies :class:`Servable` and its
:class:`~minimcp.server.connection.ServerConnection` satisfies :class:`Connection`;
the transports name only these, and ``tests/docs/test_layers.py`` checks that no
transport module imports ``minimcp.server.server``, ``minimcp.server.context`` or
``minimcp.client.client``. What needs the roles themselves (building a
``ServerConnection``, a ``Client``) lives in the role-level serve modules
(:mod:`minimcp.hosting.http`, :mod:`minimcp.hosting.websocket`).

What a transport tells the server runs the other way, through :data:`PARK_OWNER` (whom a request
comes from) and :class:`SessionActivity` (what a WebSocket watchdog reads of a session).
"""

from __future__ import annotations

import contextvars
from collections.abc import Collection, Hashable
from typing import TYPE_CHECKING, Any, Protocol

from minimcp.core.dispatch import Dispatcher

if TYPE_CHECKING:
    import anyio.abc

    from minimcp.auth.principal import Principal
    from minimcp.core.config import Limits
    from minimcp.core.session import Session
    from minimcp.core.trace import WireTrace
    from minimcp.core.transport import Transport
    from minimcp.wire.types import Tool

__all__ = ["PARK_OWNER", "Connection", "Servable", "SessionActivity", "StatelessConnection", "is_utf8"]

#: Whom the request being served comes from -- its client address, the bound on the calls it may have parked
#: on revision 2026-07-28, and with authorization on its person (``Principal.key``, bounded the same; else
#: ``None``) -- set by the HTTP app around each request, read by the server's parking (``None``: not counted).
PARK_OWNER: contextvars.ContextVar[tuple[str, int, Hashable | None] | None] = contextvars.ContextVar(
    "PARK_OWNER", default=None
)


class Connection(Protocol):
    """One served connection, as a transport's bookkeeping reads it."""

    #: Who its requests come from (a transport that checks bearer tokens sets it on each request).
    principal: Principal | None
    #: Whether its lists leave out what the principal's scopes do not allow.
    hide_unpermitted: bool

    @property
    def session(self) -> Session: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def url_elicitations(self) -> Collection[str]: ...

    @property
    def subscriptions(self) -> Collection[str]: ...


class StatelessConnection(Dispatcher, Protocol):
    """The connection serving every 2026-07-28 POST of an HTTP app: a dispatcher whose lists the app's
    authorization may trim to each request's principal."""

    hide_unpermitted: bool


class _Workers(Protocol):
    def adopt_id(self, worker_id: str) -> None: ...


class Servable(Protocol):
    """A server a network transport can serve: it serves one connection per call of :meth:`serve`."""

    @property
    def name(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def trace(self) -> WireTrace | None: ...

    @property
    def workers(self) -> _Workers: ...

    def warn_if_state_key_random(self) -> None: ...

    def metrics_page(self) -> tuple[str, bytes]: ...

    def stateless_connection(self, transport: Transport) -> tuple[StatelessConnection, Session]: ...

    def tool_definition(self, name: str) -> Tool | None: ...

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]: ...

    async def run_background(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...

    async def serve(self, transport: Transport, *, task_status: anyio.abc.TaskStatus[Connection] = ...) -> None: ...


class SessionActivity:
    """Filled in by ``Server.serve`` (it is passed as that call's ``task_status``); read at watchdog ticks only.

    Nothing here runs per message: the counters read are the session's own.
    """

    __slots__ = ("conn",)

    def __init__(self) -> None:
        self.conn: Connection | None = None

    def started(self, value: Connection | None = None) -> None:  # anyio TaskStatus
        self.conn = value

    def has_requested(self) -> bool:
        """Whether the client has sent a request yet (``initialize``, or any request of 2026-07-28)."""
        return self.conn is not None and self.conn.session.stats.requests_received > 0

    def activity(self) -> tuple[int, bool]:
        """Messages received so far, and whether work is pending on either side.

        Pending work: a request we sent awaits its answer (a question to a person),
        a handler runs, the client holds a subscription, or a URL step is open.
        """
        conn = self.conn
        if conn is None:
            return 0, False
        session = conn.session
        stats = session.stats
        received = (
            stats.requests_received + stats.notifications_received + stats.responses_received + stats.invalid_messages
        )
        busy = bool(session.pending_count or session.inflight_count or conn.url_elicitations or conn.subscriptions)
        return received, busy


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (RFC 6455 requires it of text messages)."""
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
