"""The HTTP app's sessions and their table: least-recently-used order, a bound per client address, whom to evict."""

from __future__ import annotations

import ipaddress
import logging
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import anyio

from minimcp.errors import MinimcpError
from minimcp.transports.http._asgi import ASSUMED_VERSION

if TYPE_CHECKING:
    from minimcp.transports._hosting import Connection
    from minimcp.transports.http._streams import SessionTransport

__all__ = ["HTTPSession", "SessionTable", "TableFull", "client_key"]

logger = logging.getLogger("minimcp.http")


class HTTPSession:
    """One Streamable HTTP session: its transport, its server connection, and what the table needs."""

    __slots__ = (
        "_finished",
        "_version",
        "client",
        "connection",
        "ended",
        "id",
        "initialized",
        "last_active",
        "live",
        "transport",
    )

    def __init__(self, session_id: str, transport: SessionTransport, client: str) -> None:
        self.id = session_id
        self.transport = transport
        self.client = client  # whom it counts against (client_key)
        self.connection: Connection | None = None
        self.last_active = anyio.current_time()
        self.live = 0  # open SSE connections
        self.initialized = False  # a request after initialize came (else it expires after initialize_timeout)
        self.ended = False  # its server connection has finished
        self._finished: anyio.Event | None = None  # made only when someone waits for the end (DELETE)
        self._version: str | None = None  # once negotiated, it stays

    def busy(self) -> bool:
        """Whether it has work pending: a request being answered, a question asked, or an open stream."""
        conn = self.connection
        return bool(self.live or self.transport.by_request or (conn is not None and conn.session.pending_count))

    def finish(self) -> None:
        """Its server connection has finished."""
        self.ended = True
        if self._finished is not None:
            self._finished.set()

    async def wait_finished(self) -> None:
        if not self.ended:
            if self._finished is None:
                self._finished = anyio.Event()
            await self._finished.wait()

    def touch(self, table: SessionTable[HTTPSession]) -> None:
        self.last_active = anyio.current_time()
        table.touch(self)

    @property
    def version(self) -> str:
        version = self._version
        if version is None:
            conn = self.connection
            version = conn.protocol_version if conn is not None else None
            if not version:
                return ASSUMED_VERSION
            self._version = version
        return version


class _Entry(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def client(self) -> str: ...

    @property
    def live(self) -> int: ...

    @property
    def last_active(self) -> float: ...

    @property
    def initialized(self) -> bool: ...

    def busy(self) -> bool: ...


S = TypeVar("S", bound=_Entry)


class TableFull(MinimcpError):
    """No room for a new session: every session that could make room still has work pending."""


def client_key(scope: Mapping[str, Any]) -> str:
    """Whom a request comes from, for per-client bounds: the peer's IP address.

    IPv6 addresses count per ``/64`` (one host usually owns a whole ``/64``, so
    per-address counting would not bound it). ``""`` when the ASGI server does
    not say (every such request then shares one bound).
    """
    client = scope.get("client")
    if not client:
        return ""
    host = str(client[0])
    if ":" not in host:
        return host
    try:
        network = ipaddress.IPv6Network((host.split("%", 1)[0], 64), strict=False)
    except ValueError:
        return host
    return str(network)


class SessionTable(Generic[S]):
    """Live sessions by id, oldest use first, and counted per client.

    ``touch`` moves a session to the young end; :meth:`make_room` names the
    session to end so that one more fits: with the client at its own bound,
    that client's least recently used session without pending work; with the
    table full, the least recently used one without pending work of anyone.
    """

    def __init__(self, max_sessions: int, max_per_client: int | None) -> None:
        self.max_sessions = max_sessions
        self.max_per_client = max_per_client
        self._all: OrderedDict[str, S] = OrderedDict()
        self._by_client: dict[str, OrderedDict[str, S]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def get(self, session_id: str) -> S | None:
        return self._all.get(session_id)

    def values(self) -> list[S]:
        """A snapshot, oldest use first."""
        return list(self._all.values())

    def count(self, client: str) -> int:
        mine = self._by_client.get(client)
        return len(mine) if mine is not None else 0

    def add(self, sess: S) -> None:
        self._all[sess.id] = sess
        self._by_client.setdefault(sess.client, OrderedDict())[sess.id] = sess

    def touch(self, sess: S) -> None:
        """``sess`` was used just now (nothing happens when it has left the table)."""
        if self._all.get(sess.id) is sess:
            self._all.move_to_end(sess.id)
            self._by_client[sess.client].move_to_end(sess.id)

    def remove(self, sess: S) -> bool:
        """Take ``sess`` out (False when it is not the session under its id)."""
        if self._all.get(sess.id) is not sess:
            return False
        del self._all[sess.id]
        mine = self._by_client[sess.client]
        del mine[sess.id]
        if not mine:
            del self._by_client[sess.client]
        return True

    def expired(self, now: float, idle: float | None, fresh: float) -> list[S]:
        """Sessions without an open stream quiet for ``idle`` seconds, or ``fresh`` seconds if never past initialize."""
        out: list[S] = []
        for sess in self._all.values():
            if sess.live:
                continue
            quiet = now - sess.last_active
            if idle is not None and quiet > idle:
                logger.info("MCP session %s expired after %g s idle", sess.id[:8], idle)
                out.append(sess)
            elif not sess.initialized and quiet > fresh and not sess.busy():
                logger.info("MCP session %s expired: nothing came after initialize for %g s", sess.id[:8], fresh)
                out.append(sess)
        return out

    def make_room(self, client: str) -> S | None:
        """The session to end before a new one of ``client`` is added; ``None``: there is room.

        Raises:
            TableFull: at a bound, and every session that counts against it has pending work.
        """
        limit = self.max_per_client
        if limit is not None and self.count(client) >= limit:
            victim = _idlest(self._by_client[client])
            if victim is None:
                raise TableFull(f"too many sessions from your address (limit {limit}), all with work pending")
            return victim
        if len(self._all) >= self.max_sessions:
            victim = _idlest(self._all)
            if victim is None:
                raise TableFull(f"too many sessions (limit {self.max_sessions}), all with work pending")
            return victim
        return None


def _idlest(sessions: OrderedDict[str, S]) -> S | None:
    """The least recently used session without pending work."""
    for sess in sessions.values():
        if not sess.busy():
            return sess
    return None
