"""The HTTP app's two clocks for response streams: priming events held a moment, keep-alives on silent streams."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
import anyio.abc

from minimcp.transports.http._sse import PING
from minimcp.transports.http._streams import Reader, SessionTransport

__all__ = ["PRIMING_WINDOW", "Pacer"]

#: Seconds a priming event may wait to go out with the stream's first event (one write, not two).
PRIMING_WINDOW = 0.02
#: The shortest pause between two keep-alive sweeps.
_MIN_SWEEP = 0.005


class Pacer:
    """One task per clock for all of an app's response streams (none per stream)."""

    def __init__(self, keepalive_interval: float) -> None:
        self.keepalive_interval = keepalive_interval
        self._held: list[Reader] = []  # readers whose priming event waits
        self._priming: anyio.Event | None = None  # set when the first one is held

    def hold_priming(self, reader: Reader) -> None:
        """Nothing to send yet but the priming event: it waits for the first event, at most ``PRIMING_WINDOW``."""
        reader.hold = True
        if not self._held and self._priming is not None:
            self._priming.set()
        self._held.append(reader)

    async def run(
        self,
        tg: anyio.abc.TaskGroup,
        transports: Callable[[], Iterable[SessionTransport]],
    ) -> None:
        """Run both clocks in ``tg`` (until it is cancelled); ``transports`` lists the live sessions'."""
        tg.start_soon(self._release_primings, tg)
        tg.start_soon(self._keepalive, tg, transports)

    async def _release_primings(self, tg: anyio.abc.TaskGroup) -> None:
        while True:
            self._priming = event = anyio.Event()
            if not self._held:
                await event.wait()
            await anyio.sleep(PRIMING_WINDOW)
            held, self._held = self._held, []
            for reader in held:
                reader.hold = False
                if reader.head and not reader.writing and not reader.finished:
                    tg.start_soon(reader.flush)

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
