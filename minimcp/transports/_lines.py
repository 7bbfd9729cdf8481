"""Chunks of a byte stream in, whole newline-framed messages out: what both stdio transports read with.

The pure framing is :class:`~minimcp.wire.framing.LineFramer`; this adds the queue of lines taken, the
message bound, and the end of the stream as the transports report it (``anyio.EndOfStream``), so it is
not pure. :mod:`minimcp.transports.stdio` (any backend) and :mod:`minimcp.transports._stdio_asyncio`
(asyncio's own pipes) both import it.
"""

from __future__ import annotations

from collections import deque

import anyio

from minimcp.core.config import Limits
from minimcp.core.transport import MessageTooLarge
from minimcp.wire.framing import LineFramer, Oversized

__all__ = ["_Reader"]


class _Reader:
    """Turns chunks of bytes into messages, with the framer's bound."""

    def __init__(self, limits: Limits) -> None:
        self.framer = LineFramer(limits.max_message_bytes)
        self.lines: deque[bytes | Oversized] = deque()
        self.eof = False
        self.limit = limits.max_message_bytes
        #: Bytes of whole lines waiting to be taken.
        self.queued = 0

    def next(self) -> bytes | None:
        while self.lines:
            line = self.lines.popleft()
            if isinstance(line, Oversized):
                raise MessageTooLarge(self.limit)
            self.queued -= len(line)
            return line
        if self.eof:
            raise anyio.EndOfStream
        return None

    def abandon(self) -> None:
        """Nobody can hear our answers any more: drop what waits (an unfinished line too), end the stream."""
        self.framer.end()
        self.lines.clear()
        self.queued = 0
        self.eof = True

    def feed(self, chunk: bytes) -> None:
        if chunk:
            lines = self.framer.feed(chunk)
            if lines:
                self.lines.extend(lines)
                self.queued += sum(len(line) for line in lines if type(line) is bytes)
        elif not self.eof:
            self.eof = True
            last = self.framer.end()
            if last is not None:
                self.lines.append(last)
                self.queued += len(last)
