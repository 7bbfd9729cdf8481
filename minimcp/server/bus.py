"""What ``Server(bus=...)`` accepts and what a server asks of its worker's side of the bus: protocols only.

The bus carries small :class:`Notice` values between the workers of one service (see
:mod:`minimcp.scaleout.bus` for what each kind means); the implementations (an in-memory hub,
Redis pub/sub) and the worker that acts on what it hears (:mod:`minimcp.scaleout.workers`) sit in
``scaleout/``, a layer above, and load only when a server is given a bus or a worker id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.abc
import msgspec

__all__ = ["KINDS", "Bus", "BusStats", "Notice", "WorkerSide"]

KINDS = frozenset({"url_complete", "list_changed", "resource_updated", "continued"})


class Notice(msgspec.Struct, frozen=True, array_like=True):
    """One thing one worker tells the others."""

    kind: str  #: one of :data:`KINDS`
    key: str  #: what it is about: an elicitation id, a list's name, a URI, a parked call's handle
    origin: str  #: the worker that published it
    #: For ``url_complete``: who completed it, checked by the worker holding the step against the person
    #: it was made for (``None``: not checked, the application completed it itself; ``()``: nobody signed
    #: in; ``(iss, sub)``: that person). Absent in older notices (read as ``None``).
    person: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown bus notice kind {self.kind!r} (one of {', '.join(sorted(KINDS))})")



class BusStats(msgspec.Struct):
    published: int = 0
    delivered: int = 0
    dropped: int = 0  #: notices not sent (the bus was down or its queue full) or not readable
    reconnects: int = 0


class Bus(Protocol):
    """What a server needs of a bus."""

    stats: BusStats

    def publish(self, notice: Notice) -> None:
        """Send ``notice`` to every worker (never blocks; a notice that cannot go is dropped and logged)."""

    async def run(
        self,
        deliver: Callable[[Notice], None],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hand every notice heard to ``deliver`` until cancelled (start it in the server's task group)."""


class WorkerSide(Protocol):
    """What the server and its 2026-07-28 rounds ask of this worker's side of the bus
    (:class:`minimcp.scaleout.workers.Workers`)."""

    #: The bus it publishes on and listens to (``None``: none, this worker is alone).
    bus: Bus | None
    #: This worker's name (in session ids and on the bus).
    worker_id: str
    #: What a sealed state carries to name this worker (empty without a bus).
    sealed: dict[str, str]

    def adopt_id(self, worker_id: str) -> None: ...

    def publish(self, kind: str, key: str, person: tuple[str, ...] | None = None) -> bool: ...

    def continued_here(self, state: dict[str, object]) -> None: ...

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None: ...
