"""The WebSocket server's slots: bounded in total, per client address and per person; whom a new connection evicts.

A slot is taken when a TCP connection is accepted (a connection still upgrading holds one too, so
silent sockets cannot fill the server) and given back when it ends. The bookkeeping per client
address and per person is the :class:`~minimcp.transports._client_bounds.SessionTable` the HTTP
app uses too (least recently used order, ``max_sessions_per_client``, IPv6 counted per ``/64``);
this table adds the rule for a full server. :meth:`SlotTable.make_room` names the connection to end
so that a new one fits:

* its address is at ``max_per_client``: that address's least recently used connection without
  pending work (none: the new one is refused, ``429``);
* the server is full: among the addresses that hold more connections than the new one's, the
  least recently used connection without pending work of the biggest holder that has one; if
  none of them has one, the least recently used connection of the biggest holder, pending work
  and all; if no address holds more, the new address's own least recently used idle connection
  (none: refused, ``503``). So a new address always gets in while another holds most slots, and
  an innocent address is never ended to make room for a bigger one;
* with authorization on, the person is known once the upgrade's token is verified:
  :meth:`SlotTable.make_room_for_person` does for ``max_per_client`` connections of one person
  (``Principal.key``) what the first rule does for an address.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from minimcp.transports._client_bounds import SessionTable, TableFull

__all__ = ["NoSlot", "SlotTable"]


class _Slot(Protocol):
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

    @property
    def person(self) -> Hashable | None: ...

    def busy(self) -> bool: ...


E = TypeVar("E", bound=_Slot)


class NoSlot(TableFull):
    """No slot for a new connection: :attr:`status` is the HTTP status its upgrade is refused with."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class SlotTable(Generic[E]):
    """Open WebSocket connections, oldest use first, counted per client address and per person."""

    def __init__(self, max_slots: int, max_per_client: int | None) -> None:
        self._table: SessionTable[E] = SessionTable(max_slots, max_per_client)

    def __len__(self) -> int:
        return len(self._table)

    def count(self, client: str) -> int:
        return self._table.count(client)

    def count_person(self, person: Hashable) -> int:
        return self._table.count_person(person)

    def add(self, slot: E) -> None:
        self._table.add(slot)

    def add_person(self, slot: E) -> None:
        """Count ``slot`` against its :attr:`person` (set just before)."""
        if slot.person is not None:
            self._table.claim(slot, slot.person)

    def touch(self, slot: E) -> None:
        self._table.touch(slot)

    def remove(self, slot: E) -> bool:
        """Give the slot back (False when it had already left)."""
        return self._table.remove(slot)

    def make_room(self, client: str) -> tuple[E, str] | None:
        """The connection to end (and the reason to give it) before one more of ``client`` is added.

        Raises:
            NoSlot: no connection may be ended for it (see the module's rules).
        """
        table = self._table
        limit = table.max_per_client
        mine = table.count(client)
        if limit is not None and mine >= limit:
            try:
                victim = table.make_room(client)
            except TableFull:
                raise NoSlot(f"too many connections from your address (limit {limit}), all busy", 429) from None
            assert victim is not None
            return victim, f"too many connections from your address (limit {limit})"
        if len(table) < table.max_sessions:
            return None
        groups: dict[str, list[E]] = {}
        for slot in table.values():  # oldest use first
            groups.setdefault(slot.client, []).append(slot)
        bigger = sorted((c for c, slots in groups.items() if len(slots) > mine), key=lambda c: -len(groups[c]))
        for address in bigger:
            for slot in groups[address]:
                if not slot.busy():
                    return slot, "server full: your address holds the most connections"
        if bigger:
            return groups[bigger[0]][0], "server full: your address holds the most connections"
        for slot in groups.get(client, ()):
            if not slot.busy():
                return slot, "server full: a newer connection from your address took this slot"
        raise NoSlot(f"server full ({table.max_sessions} connections, all busy)", 503)

    def make_room_for_person(self, person: Hashable) -> tuple[E, str] | None:
        """The connection to end before one more of ``person`` is counted; ``None``: there is room.

        Raises:
            NoSlot: ``person`` is at the bound and each of its connections has work pending.
        """
        limit = self._table.max_per_client
        try:
            victim = self._table.make_room_for_person(person)
        except TableFull:
            raise NoSlot(f"too many connections for your account (limit {limit}), all busy", 429) from None
        return None if victim is None else (victim, f"too many connections for your account (limit {limit})")
