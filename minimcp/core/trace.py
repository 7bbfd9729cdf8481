"""Wire trace: every message of a session, as JSON lines (opt-in; free when off).

::

    server = Server("booking", trace=WireTrace("wire.jsonl"))
    client = Client(transport, trace=WireTrace(print_line))

Each record is one line ``{"t": <unix time>, "session": <name>, "conn": <n>, "dir":
"send"|"receive", "msg": <the message>}``, plus ``"rel": <id>`` on a message sent on behalf
of an inbound request: a question a tool asks inside its ``tools/call``, or the call's
response. ``conn`` numbers the connections one trace has seen (1, 2, ...), so a server's
trace of many clients can be told apart; ``python -m minimcp diagram`` draws a trace as a
sequence diagram. A ``redact`` hook sees each decoded message first and returns
what to record (a copy with secrets blanked, say) or ``None`` to skip it. When no trace
is set the session pays one ``is None`` test per message.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Callable
from typing import IO, Any

import msgspec

__all__ = ["WireTrace"]

_encoder = msgspec.json.Encoder()


class WireTrace:
    """A trace sink: a file path, an open text/binary file, or a callback taking one line.

    Args:
        target: Where lines go.
        redact: ``redact(direction, message) -> message | None``.
    """

    def __init__(
        self,
        target: str | IO[str] | IO[bytes] | Callable[[str], None],
        *,
        redact: Callable[[str, Any], Any] | None = None,
    ) -> None:
        self._owned: IO[str] | None = None
        if isinstance(target, str):
            self._owned = open(target, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            target = self._owned
        self._target = target
        self.redact = redact
        self._lock = threading.Lock()
        self._conns: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count(1)

    def record(
        self, session: str, direction: str, data: bytes, *, related: Any = None, origin: object | None = None
    ) -> None:
        """Record one message (called by the session ``origin``; ``related``: the request it serves)."""
        try:
            message: Any = msgspec.json.decode(data)
        except msgspec.DecodeError:
            message = data.decode("utf-8", "replace")  # bytes that were not JSON are traced as text
        if self.redact is not None:
            message = self.redact(direction, message)
            if message is None:
                return
        entry: dict[str, Any] = {"t": round(time.time(), 6), "session": session}
        if origin is not None:
            with self._lock:
                conn = self._conns.get(origin)
                if conn is None:
                    conn = self._conns[origin] = next(self._numbers)
            entry["conn"] = conn
        entry["dir"] = direction
        if related is not None:
            entry["rel"] = related
        entry["msg"] = message
        line = _encoder.encode(entry)
        target: Any = self._target
        with self._lock:
            if not hasattr(target, "write"):
                target(line.decode())
            elif "b" in getattr(target, "mode", ""):
                target.write(line + b"\n")
                target.flush()
            else:
                target.write(line.decode() + "\n")
                target.flush()

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None
