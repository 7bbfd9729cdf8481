"""Per-client bounds shared by the HTTP and WebSocket transports: whom a request is from, sessions counted per client.

:func:`client_key` names the client address a bound counts against (IPv6 per ``/64``);
:class:`SessionTable` holds live sessions (HTTP sessions, WebSocket connections) in least recently
used order, counted per client address and, with authorization on, per person (``Principal.key``),
and names the session to end so that one more fits. The WebSocket server adds its rule for a full
server on top (:mod:`minimcp.transports._ws_slots`).
"""

from __future__ import annotations

import ipaddress
import logging
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from minimcp.wire.errors import MinimcpError

__all__ = ["SessionTable", "TableFull", "client_key"]

# (The HTTP app's logger: only its sessions expire through the table; the name is users' configuration.)
logger = logging.getLogger("minimcp.http")


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
    """Live sessions by id, oldest use first, and counted per client address and per person.

    ``touch`` moves a session to the young end; :meth:`make_room` names the
    session to end so that one more fits: with the client at its own bound,
    that client's least recently used session without pending work; with the
    table full, the least recently used one without pending work of anyone.
    With authorization on, a session is also :meth:`claim`-ed for its person
    (``Principal.key``), and :meth:`make_room_for_person` does for a person at
    ``max_per_client`` what :meth:`make_room` does for an address (the same
    bound: a person is one more client).
    """

    def __init__(self, max_sessions: int, max_per_client: int | None) -> None:
        self.max_sessions = max_sessions
        self.max_per_client = max_per_client
        self._all: OrderedDict[str, S] = OrderedDict()
        self._by_client: dict[str, OrderedDict[str, S]] = {}
        self._by_person: dict[Hashable, OrderedDict[str, S]] = {}  # (empty without authorization)
        self._person_of: dict[str, Hashable] = {}  # session id -> its person

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

    def count_person(self, person: Hashable) -> int:
        mine = self._by_person.get(person)
        return len(mine) if mine is not None else 0

    def add(self, sess: S) -> None:
        self._all[sess.id] = sess
        self._by_client.setdefault(sess.client, OrderedDict())[sess.id] = sess

    def claim(self, sess: S, person: Hashable) -> None:
        """Count ``sess`` (in the table, claimed by no one yet) against ``person`` too."""
        if self._all.get(sess.id) is sess and sess.id not in self._person_of:
            self._person_of[sess.id] = person
            self._by_person.setdefault(person, OrderedDict())[sess.id] = sess

    def touch(self, sess: S) -> None:
        """``sess`` was used just now (nothing happens when it has left the table)."""
        if self._all.get(sess.id) is sess:
            self._all.move_to_end(sess.id)
            self._by_client[sess.client].move_to_end(sess.id)
            if self._person_of:  # (authorization on)
                person = self._person_of.get(sess.id)
                if person is not None:
                    self._by_person[person].move_to_end(sess.id)

    def remove(self, sess: S) -> bool:
        """Take ``sess`` out (False when it is not the session under its id)."""
        if self._all.get(sess.id) is not sess:
            return False
        del self._all[sess.id]
        _forget(self._by_client, sess.client, sess.id)
        if self._person_of:
            person = self._person_of.pop(sess.id, None)
            if person is not None:
                _forget(self._by_person, person, sess.id)
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

    def make_room_for_person(self, person: Hashable) -> S | None:
        """The session to end before one more is claimed for ``person``: that person's least recently used one
        without pending work when they are at ``max_per_client``; ``None``: there is room.

        Raises:
            TableFull: ``person`` is at the bound, and each of their sessions has pending work.
        """
        limit = self.max_per_client
        if limit is None or self.count_person(person) < limit:
            return None
        victim = _idlest(self._by_person[person])
        if victim is None:
            raise TableFull(f"too many sessions for your account (limit {limit}), all with work pending")
        return victim


def _forget(groups: dict[Any, OrderedDict[str, S]], key: Hashable, session_id: str) -> None:
    """Take ``session_id`` out of ``groups[key]`` (and the group, once empty)."""
    mine = groups[key]
    del mine[session_id]
    if not mine:
        del groups[key]


def _idlest(sessions: OrderedDict[str, S]) -> S | None:
    """The least recently used session without pending work."""
    for sess in sessions.values():
        if not sess.busy():
            return sess
    return None


