"""Newline-delimited framing (the stdio transport), with a bound.

Sans-I/O: feed it whatever bytes arrived, get back whole lines. A line longer
than ``max_line`` is never buffered whole: the framer keeps only the bytes
needed to find its end, then reports one :data:`OVERSIZED` in its place, so
memory stays bounded whatever the peer sends. Work is linear in the input:
each byte is scanned once.
"""

from __future__ import annotations

from typing import Final

__all__ = ["OVERSIZED", "LineFramer", "Oversized"]


class Oversized:
    """Marker yielded in place of a line that exceeded the limit."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OVERSIZED"


OVERSIZED: Final = Oversized()


class LineFramer:
    """Split a byte stream into lines at ``\\n`` (a trailing ``\\r`` is dropped too).

    Empty lines are skipped (they carry no message).
    """

    __slots__ = ("_buf", "_discarding", "max_line")

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._discarding = False

    @property
    def buffered(self) -> int:
        """Bytes held for an unfinished line (at most ``max_line``)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Add ``data``; return the lines it completed, in order."""
        out: list[bytes | Oversized] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._discarding:
                if nl < 0:
                    return out
                self._discarding = False
                start = nl + 1
                continue
            if len(self._buf) + (end - start) > self.max_line:
                self._buf.clear()
                out.append(OVERSIZED)
                if nl < 0:
                    self._discarding = True
                    return out
                start = nl + 1
                continue
            if nl < 0:
                self._buf += data[start:]
                return out
            if self._buf:
                self._buf += data[start:nl]
                line = bytes(self._buf)
                self._buf.clear()
            else:
                line = data[start:nl]
            start = nl + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if line.strip():
                out.append(line)
        return out

    def end(self) -> bytes | None:
        """The stream ended: the unterminated last line, if any (``None`` if none)."""
        rest = bytes(self._buf).strip()
        self._buf.clear()
        if self._discarding:
            self._discarding = False
            return None
        return rest or None
