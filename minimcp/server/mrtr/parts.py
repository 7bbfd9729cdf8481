"""Revision 2026-07-28: what a server keeps for it (sealer, parking, wire, used states, workers), as plain attributes.

One :class:`ModernParts` per server (``Server.modern_parts``, made with its first 2026-07-28
request), and every connection locked to 2026-07-28 holds it (``ServerConnection.modern``): a
round reads ``conn.modern.sealer`` as two plain attribute loads. The server's own ``sealer``,
``parking``, ``modern_wire`` and ``used_states`` read and write these same attributes, so a
sealer or a store set on the server while it serves is the one every connection uses next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minimcp.server.bus import WorkerSide
    from minimcp.server.mrtr.parking import Parking
    from minimcp.server.mrtr.state import StateSealer
    from minimcp.server.mrtr.used_states import UsedStates
    from minimcp.wire.envelope import ServerWire

__all__ = ["ModernParts"]


class ModernParts:
    """A server's 2026-07-28 objects, read per round (plain attributes: on Python 3.11 an attribute the
    server makes on first use through a class-level descriptor costs about five times a plain one)."""

    __slots__ = ("parking", "sealer", "used_states", "wire", "workers")

    def __init__(
        self, sealer: StateSealer, parking: Parking, wire: ServerWire, used_states: UsedStates, workers: WorkerSide
    ) -> None:
        #: Seals and opens ``requestState`` (``Server.sealer``).
        self.sealer = sealer
        #: Tool calls suspended between rounds (``Server.parking``).
        self.parking = parking
        #: The server's info and its clients' envelopes, prepared once (``Server.modern_wire``).
        self.wire = wire
        #: Where used states are recorded (``Server.used_states``).
        self.used_states = used_states
        #: This worker on the bus between workers (``Server.workers``).
        self.workers = workers
