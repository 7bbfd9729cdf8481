"""A bounded inbox of messages for one reader, whose waits cost a one-shot cell (no task, event or stream).

An idle HTTP session's read loop waits here for the next POST body. An anyio memory
object stream costs more for that: its two stream objects and shared state, and, while the
reader waits, an anyio ``Event`` over an ``asyncio.Event`` with its deque and future, an
``OrderedDict`` entry and two coroutine frames (3 to 4 KB per idle session, measured with
tracemalloc). Here the reader waits on one cell from :mod:`minimcp._backend` (an
``asyncio.Future`` on asyncio; a parked task on trio), and a sender finding the inbox full
waits on one too, in a FIFO; the reader moves the first waiting sender's message in as it
takes one out (each message is delivered once, in order).

Ending: :meth:`Inbox.close` (no more input: new messages are refused, the reader takes what
is queued, then gets ``EndOfStream``) and :meth:`Inbox.break_` (the reader is gone: queued
and waiting messages are refused, later ones too).
"""

from __future__ import annotations

from collections import deque

import anyio
import msgspec

from minimcp._backend import Cell, new_cell, running_loop

__all__ = ["Inbox"]

# What a waiting party's cell is settled with: "look again", and "refused" (a sender, after break_).
_WOKEN = msgspec.Raw(b"1")
_REFUSED = msgspec.Raw(b"0")


class Inbox:
    """At most ``max_items`` messages queued for one reader; senders beyond that wait (FIFO)."""

    __slots__ = ("_items", "_max", "_reader", "_senders", "broken", "closed")

    def __init__(self, max_items: int) -> None:
        self._max = max_items
        self._items: list[bytes] = []
        self._reader: Cell | None = None  # the reader's cell while it waits
        self._senders: deque[tuple[Cell, bytes]] | None = None  # made when a sender first waits
        self.closed = False  # no more input
        self.broken = False  # the reader is gone

    def __len__(self) -> int:
        return len(self._items)

    # --- the reader ----------------------------------------------------------------------------

    def receive_nowait(self) -> bytes | None:
        """The next message if one is queued, else ``None``.

        Raises:
            anyio.EndOfStream: closed, and nothing is left.
            anyio.ClosedResourceError: after :meth:`break_`.
        """
        items = self._items
        if not items:
            if self.broken:
                raise anyio.ClosedResourceError
            if self.closed:
                raise anyio.EndOfStream
            return None
        data = items.pop(0)
        senders = self._senders
        if senders:  # the first waiting sender's message takes the place just freed
            cell, waiting = senders.popleft()
            items.append(waiting)
            cell.settle(_WOKEN, None)
        return data

    async def receive(self) -> bytes:
        """The next message, waiting for one (raises as :meth:`receive_nowait`)."""
        while True:
            data = self.receive_nowait()
            if data is not None:
                return data
            cell = self._reader = new_cell(running_loop())
            try:
                await cell.wait()
            finally:
                self._reader = None

    def break_(self) -> None:
        """The reader is gone: refuse what is queued or waiting, and anything later."""
        self.closed = self.broken = True
        self._items.clear()
        senders, self._senders = self._senders, None
        while senders:
            senders.popleft()[0].settle(_REFUSED, None)

    # --- the senders ---------------------------------------------------------------------------

    def put_nowait(self, data: bytes) -> bool:
        """Queue ``data`` if there is room (False: full, or senders wait before it).

        Raises:
            anyio.BrokenResourceError: after :meth:`break_`.
            anyio.ClosedResourceError: after :meth:`close`.
        """
        if self.closed:
            raise anyio.BrokenResourceError if self.broken else anyio.ClosedResourceError
        items = self._items
        if len(items) >= self._max or self._senders:
            return False
        items.append(data)
        reader = self._reader
        if reader is not None:
            self._reader = None
            reader.settle(_WOKEN, None)
        return True

    async def put(self, data: bytes) -> None:
        """Queue ``data``, waiting for room (FIFO among waiting senders); raises as :meth:`put_nowait`."""
        if self.put_nowait(data):
            return
        senders = self._senders
        if senders is None:
            senders = self._senders = deque()
        entry = (new_cell(running_loop()), data)
        senders.append(entry)
        try:
            taken = await entry[0].wait()
        except BaseException:
            if self._senders is senders and entry in senders:  # (a rare cancellation: a linear search)
                senders.remove(entry)
            raise
        if taken is _REFUSED:
            raise anyio.BrokenResourceError

    def close(self) -> None:
        """No more input: later messages are refused; the reader takes what is queued, then ends."""
        self.closed = True
        reader = self._reader
        if reader is not None:
            self._reader = None
            reader.settle(_WOKEN, None)
