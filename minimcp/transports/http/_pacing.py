"""The HTTP app's two clocks for response streams: priming events held a moment, keep-alives on silent streams."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import anyio
import anyio.abc

from minimcp.transports.http._response import Reader
from minimcp.transports.http._sse import PING
from minimcp.transports.http._streams import SessionTransport

__all__ = ["PRIMING_MAX_HOLD", "PRIMING_WINDOW", "Pacer"]

#: Seconds a priming event waits at least for the stream's first event, to go out with it (one write, not
#: two); at most about twice this: it is let go at the second tick after it was held, unless the loop lags.
PRIMING_WINDOW = 0.02
#: Seconds a priming event may wait at most while the loop lags (a tick comes more than one window late: the
#: server is behind, and the first events of the calls it holds come later too); then it goes out alone.
PRIMING_MAX_HOLD = 1.0
#: Seconds between two siftings of the priming events kept on a lagging loop (those whose first event came
#: meanwhile are dropped, so a finished call is not held on to for up to PRIMING_MAX_HOLD).
_KEPT_SWEEP = 0.1
#: The shortest pause between two keep-alive sweeps.
_MIN_SWEEP = 0.005


class Pacer:
    """One task per clock for all of an app's response streams (none per stream)."""

    def __init__(self, keepalive_interval: float) -> None:
        self.keepalive_interval = keepalive_interval
        self._held: list[Reader] = []  # readers whose priming event waits, held since the last tick
        # those held before earlier ticks, one batch per tick (the loop time of that tick), oldest first:
        # let go at the next tick, or while the loop lags at the first tick PRIMING_MAX_HOLD after theirs
        self._older: list[tuple[float, list[Reader]]] = []
        self._priming: anyio.Event | None = None  # the clock waits for a first one to be held
        self._swept = -math.inf  # when the batches kept on a lagging loop were last sifted

    def hold_priming(self, reader: Reader) -> None:
        """Nothing to send yet but the priming event: it waits for the first event (see ``PRIMING_WINDOW``)."""
        reader.hold = True
        self._held.append(reader)
        waiting = self._priming
        if waiting is not None:
            self._priming = None
            waiting.set()

    async def run(
        self,
        tg: anyio.abc.TaskGroup,
        transports: Callable[[], Iterable[SessionTransport]],
    ) -> None:
        """Run both clocks in ``tg`` (until it is cancelled); ``transports`` lists the live sessions'."""
        tg.start_soon(self._release_primings, tg)
        tg.start_soon(self._keepalive, tg, transports)

    async def _release_primings(self, tg: anyio.abc.TaskGroup) -> None:
        clock = anyio.current_time
        last = clock()
        while True:
            if not self._held and not self._older:
                self._priming = event = anyio.Event()
                await event.wait()
                last = clock()
            await anyio.sleep(PRIMING_WINDOW)
            now = clock()
            self.tick(tg, now=now, lagging=now - last > 2 * PRIMING_WINDOW)
            last = now

    def tick(self, tg: anyio.abc.TaskGroup, *, now: float = 0.0, lagging: bool = False) -> None:
        """One tick of the priming clock (at loop time ``now``): let go the priming events held before the
        previous tick (each has waited at least ``PRIMING_WINDOW``); those held since wait for the next.

        While the loop lags (``lagging``: this tick came more than a window late), those held before stay
        held until ``PRIMING_MAX_HOLD`` after the tick that found them: on a loop that is behind, the first
        events come late too, and a priming event written alone is one socket write more per call.
        """
        older = self._older
        due_batches = len(older)
        if lagging:
            due_batches = 0
            while due_batches < len(older) and now - older[due_batches][0] >= PRIMING_MAX_HOLD:
                due_batches += 1
            if now - self._swept >= _KEPT_SWEEP:
                # Those kept: only the readers still waiting (a finished call's reader is not held on to).
                self._swept = now
                for _, batch in older[due_batches:]:
                    batch[:] = [reader for reader in batch if _still_waits(reader)]
        self._older = older[due_batches:]
        if self._held:
            self._older.append((now, self._held))
            self._held = []
        due: list[Reader] = []
        for _, batch in older[:due_batches]:
            for reader in batch:
                reader.hold = False
                if reader.head and not reader.writing and not reader.finished:
                    if reader.write_timeout == math.inf:
                        tg.start_soon(reader.flush)  # no deadline bounds its write (trio): a task of its own
                    else:
                        due.append(reader)
        if due:
            tg.start_soon(_flush_each, due)

    async def _keepalive(self, tg: anyio.abc.TaskGroup, transports: Callable[[], Iterable[SessionTransport]]) -> None:
        """Keep-alive comments on every response stream silent for ``keepalive_interval``."""
        interval = self.keepalive_interval
        while True:
            await anyio.sleep(max(interval / 2, _MIN_SWEEP))
            self._ping_silent(tg, transports(), interval)

    @staticmethod
    def _ping_silent(tg: anyio.abc.TaskGroup, transports: Iterable[SessionTransport], interval: float) -> None:
        # A function of its own, so that no loop variable holds a session while the sweep sleeps.
        since = anyio.current_time() - interval
        for transport in transports:
            for stream in transport.streams.values():
                owner = stream.owner
                if type(owner) is Reader and not owner.writing and not owner.finished and owner.last_write <= since:
                    tg.start_soon(owner.ping, PING)


def _still_waits(reader: Reader) -> bool:
    """Whether a held reader's priming event is still unwritten (else its first event took it along)."""
    if reader.head and not reader.finished:
        return True
    reader.hold = False
    return False


async def _flush_each(readers: list[Reader]) -> None:
    """Write the priming events let go at one tick, one after the other, in one task (not a task each).

    Each write is bounded by its reader's ``write_timeout``; a priming event is the first bytes of a
    fresh response, so it waits only for a client whose socket buffer is already full.
    """
    for reader in readers:
        await reader.flush()
