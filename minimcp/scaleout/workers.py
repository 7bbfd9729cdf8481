"""One worker's side of the bus between workers: what the server publishes, and what it does with what it hears."""

from __future__ import annotations

import contextlib
import logging
import secrets
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from minimcp.core.config import check_worker_id
from minimcp.server.bus import Bus, Notice
from minimcp.wire.errors import ConnectionClosed

if TYPE_CHECKING:
    from minimcp.server.server import Server

__all__ = ["Workers"]

logger = logging.getLogger("minimcp.workers")

class Workers:
    """This worker on the bus: it publishes what the others must know, and acts on what they publish.

    Every notice is a hint, re-checked against this worker's own tables: a URL completion goes
    out only for an id one of its sessions holds (and only once), and not when it names a person
    other than the one the step was made for, a ``continued`` notice drops
    only a call parked here, a list or resource notice only re-sends what a local change would.
    Its own notices (``Notice.origin`` is :attr:`worker_id`) it ignores: it acted on them already.
    Bus failures are the bus's to log and retry; nothing here waits on the bus.
    """

    def __init__(self, server: Server, bus: Bus | None, worker_id: str | None) -> None:
        self.server = server
        self.bus = bus
        self._named = worker_id is not None
        #: Names this worker on the bus (``Notice.origin``) and in the states it seals.
        self.worker_id = check_worker_id(worker_id) if worker_id is not None else secrets.token_urlsafe(6)
        #: What a ``requestState`` sealed here carries about this worker (with a bus: its id).
        self.sealed: dict[str, str] = {"w": self.worker_id} if bus is not None else {}
        # List and resource notices heard, not yet re-sent to this worker's sessions (coalesced: at most
        # the three lists, and the URIs some session here subscribed to).
        self._fan_out: dict[tuple[str, str], None] = {}
        self._wake: anyio.Event | None = None  # made by run(), in its event loop
        self._running: anyio.Event | None = None  # set when the running subscriber stops

    def adopt_id(self, worker_id: str) -> None:
        """Take ``worker_id`` (a session id prefix) as this worker's name, unless one was given already."""
        if not self._named:
            self._named = True
            self.worker_id = check_worker_id(worker_id)
            if self.sealed:
                self.sealed = {"w": self.worker_id}

    # publishing

    def publish(self, kind: str, key: str, person: tuple[str, ...] | None = None) -> bool:
        """Tell the other workers (never blocks, never raises); False without a bus. ``person``: who
        completed a URL step (see :attr:`Notice.person`)."""
        bus = self.bus
        if bus is None:
            return False
        try:
            bus.publish(Notice(kind, key, self.worker_id, person))
        except Exception:  # a bus must not fail the caller; local delivery goes on
            logger.exception("bus: publishing %s %r failed", kind, key)
            return False
        return True

    def continued_here(self, state: dict[str, object]) -> None:
        """A retry replays here a call another worker parked: tell that worker to drop its copy."""
        owner, handle = state.get("w"), state.get("h")
        if isinstance(owner, str) and owner != self.worker_id and isinstance(handle, str):
            self.publish("continued", handle)

    # hearing

    def heard(self, notice: Notice) -> None:
        """The bus's callback: act on another worker's notice, at once and without waiting."""
        if notice.origin == self.worker_id:
            return
        server, kind, key = self.server, notice.kind, notice.key
        if kind == "url_complete":
            person = notice.person  # (): nobody signed in; anything but (iss, sub) is read as nobody too
            who = (person[0], person[1]) if person is not None and len(person) == 2 else None
            if person is not None and not server.url_step_is_for(key, who):
                # Completed for someone else than the step's person: refused; the step stays open for its own.
                logger.warning("bus: refused worker %s's completion of a URL step made for another person",
                               notice.origin)
                return
            conn = server.take_url_owner(key)  # a session here holds that id: tell it, once
            if conn is not None:
                with contextlib.suppress(ConnectionClosed):  # the session is ending: nobody to tell
                    conn.session.spawn(conn.send_url_complete, key)
        elif kind == "continued":
            run = server.parking.take(key)
            if run is not None:
                logger.info("the parked call of %r continued on worker %s: dropped here", run.tool, notice.origin)
                run.continued_elsewhere = True
                run.scope.cancel()
        elif kind == "list_changed":
            if key in ("tools", "resources", "prompts"):
                self._queue(kind, key)
        elif any(key in conn.subscriptions for conn in server.connections):  # resource_updated
            self._queue(kind, key)

    def _queue(self, kind: str, key: str) -> None:
        self._fan_out[(kind, key)] = None
        if self._wake is not None:
            self._wake.set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen on the bus until cancelled (:meth:`Server.run_background` starts it).

        One listener per server: a second runner waits, and takes over when the first stops.
        """
        if self.bus is None:
            task_status.started()
            return
        started = False
        while (running := self._running) is not None:
            if not started:
                task_status.started()
                started = True
            await running.wait()
        running = self._running = anyio.Event()
        self._wake = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send_fan_out)
                await tg.start(self._listen, self.bus)
                if not started:
                    task_status.started()
        finally:
            self._running = None
            running.set()

    async def _listen(self, bus: Bus, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        once = _Once(task_status)
        wait = 0.1
        while True:
            try:
                await bus.run(self.heard, task_status=once)
                logger.warning("bus: the subscriber ended; starting it again in %.1f s", wait)
            except Exception:  # a bus that fails must not end the server: log, and listen again
                logger.exception("bus: the subscriber failed; starting it again in %.1f s", wait)
            once.started()
            await anyio.sleep(wait)
            wait = min(wait * 2, 5.0)

    async def _send_fan_out(self) -> None:
        server, pending = self.server, self._fan_out
        while True:
            if not pending:
                assert self._wake is not None
                await self._wake.wait()
            self._wake = anyio.Event()
            while pending:
                kind, key = next(iter(pending))
                del pending[(kind, key)]
                try:
                    if kind == "list_changed":
                        await server.list_changed_here(key)
                    else:
                        await server.resource_updated_here(key)
                except Exception:  # one failed delivery must not stop the others
                    logger.exception("bus: re-sending %s %r to this worker's sessions failed", kind, key)


class _Once(anyio.abc.TaskStatus[None]):
    """A task status that passes on only the first ``started`` (a bus started again reports again)."""

    def __init__(self, status: anyio.abc.TaskStatus[None]) -> None:
        self.status = status
        self.done = False

    def started(self, value: None = None) -> None:
        if not self.done:
            self.done = True
            self.status.started()
