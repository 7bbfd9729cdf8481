"""Server-sent events (SSE), sans-I/O: encode events, decode a byte stream into events.

Follows the WHATWG "event stream" format as MCP's Streamable HTTP uses it:

* an event is a block of ``field: value`` lines ended by a blank line;
  ``data`` lines are joined with ``\\n``; ``id`` sets the last event id;
  ``retry`` sets the reconnection delay in milliseconds; lines starting with
  ``:`` are comments (keep-alives);
* lines end with ``\\r\\n``, ``\\n`` or ``\\r``;
* an event without any ``data`` line is not dispatched, but its ``id`` and
  ``retry`` still take effect; an event with an empty ``data:`` line is
  dispatched with empty data (MCP's *priming* event is one: an ``id``, a
  ``retry`` and empty data; readers skip it).

The decoder is bounded: an event whose data (or a single line) grows beyond
``max_event_bytes`` is dropped unread and reported as an :class:`Event` with
``oversized=True``, so a hostile peer cannot make it buffer without limit.

No event loop, no clock, no sockets here.
"""

from __future__ import annotations

import dataclasses

__all__ = ["PING", "Event", "SSEDecoder", "encode_event"]

#: A keep-alive comment.
PING = b": ping\n\n"
_BOM = b"\xef\xbb\xbf"


def encode_event(
    data: bytes | None = None, *, id: str | None = None, event: str | None = None, retry: int | None = None
) -> bytes:
    """One event on the wire.

    Args:
        data: The payload; ``None`` or empty for an empty ``data:`` line (a
            priming event). Line breaks inside it become separate ``data:`` lines.
        id: The event id (must not contain line breaks).
        event: The event type (default on the receiving side: ``message``).
        retry: Reconnection delay to advertise, in milliseconds.
    """
    if id is not None and ("\n" in id or "\r" in id or "\0" in id):
        raise ValueError("an SSE event id must not contain line breaks or NUL")
    if event is None and data and b"\n" not in data and b"\r" not in data:
        # A message of one line (JSON-RPC messages always are): one formatting, no list.
        if id is None:
            return b"data: %s\n\n" % data if retry is None else b"retry: %d\ndata: %s\n\n" % (retry, data)
        if retry is None:
            return b"id: %s\ndata: %s\n\n" % (id.encode(), data)
    parts: list[bytes] = []
    if id is not None:
        parts.append(b"id: " + id.encode())
    if event is not None:
        parts.append(b"event: " + event.encode())
    if retry is not None:
        parts.append(b"retry: %d" % retry)
    if data and (b"\n" in data or b"\r" in data):
        for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
            parts.append(b"data: " + line)
    else:
        parts.append(b"data: " + (data or b""))
    return b"\n".join(parts) + b"\n\n"


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """A dispatched event.

    Attributes:
        data: The joined ``data`` lines (empty for a priming event, and when ``oversized``).
        event: The event type (``message`` unless the stream said otherwise).
        id: The last event id at the time of dispatch (``""`` when none was ever set).
        oversized: The event was over the size bound; its data was dropped.
    """

    data: bytes
    event: str = "message"
    id: str = ""
    oversized: bool = False


class SSEDecoder:
    """Feed bytes, get events.

    Attributes:
        last_event_id: The most recent ``id`` seen (also from events without data).
        retry: The most recent ``retry`` value in milliseconds, or ``None``.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes
        self.last_event_id = ""
        self.retry: int | None = None
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._data_size = 0
        self._event_type = ""
        self._oversized = False
        self._skip_line = False  # inside a line that was too long
        self._after_cr = False  # the previous chunk ended with \r (a \n may follow)
        self._started = False

    def feed(self, chunk: bytes) -> list[Event]:
        """Decode ``chunk``; return the events it completed."""
        if not chunk:
            return []
        if not self._started:
            # A byte order mark at the very start is skipped, even when split across chunks.
            head = self._buffer + chunk
            if len(head) < 3 and _BOM.startswith(head):
                self._buffer = head
                return []
            self._started = True
            self._buffer = bytearray()
            chunk = bytes(head[3:] if head.startswith(_BOM) else head)
            if not chunk:
                return []
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        out: list[Event] = []
        buf = self._buffer
        start = len(buf)
        buf += chunk
        pos = 0
        n = len(buf)
        while True:
            # Find the next line terminator at or after ``start`` (earlier bytes were scanned).
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == n:
                    self._after_cr = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            if self._skip_line:
                self._skip_line = False
            else:
                self._line(bytes(buf[pos:end]), out)
            pos = start = nxt
        del buf[:pos]
        if len(buf) > self.max_event_bytes + 64:
            # A line that never ends: drop what we have, and the rest of it when it comes.
            buf.clear()
            self._skip_line = True
            self._oversized = True
            self._data.clear()
            self._data_size = 0
        return out

    def _line(self, line: bytes, out: list[Event]) -> None:
        if not line:
            self._dispatch(out)
            return
        if line[:1] == b":":
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            if self._oversized:
                return
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_bytes + 1:
                self._oversized = True
                self._data.clear()
                self._data_size = 0
                return
            self._data.append(value)
        elif name == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit() and len(value) <= 18:  # int() fails past 4,300 digits
            self.retry = int(value)
        # other field names are ignored (spec)

    def _dispatch(self, out: list[Event]) -> None:
        event_type = self._event_type or "message"
        self._event_type = ""
        if self._oversized:
            self._oversized = False
            out.append(Event(b"", event_type, self.last_event_id, oversized=True))
            return
        if not self._data:
            return
        data = b"\n".join(self._data)
        self._data.clear()
        self._data_size = 0
        out.append(Event(data, event_type, self.last_event_id))
