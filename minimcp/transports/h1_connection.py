"""One HTTP/1.1 server connection without I/O: h11 plus minimcp's checks, bytes in to ASGI events and back to bytes.

h11 does every byte of parsing and framing; this class adds what an ASGI
server must decide on top of it, so it can be read, tested and fuzzed with
no sockets (:mod:`minimcp.transports.h1_server` is its I/O loop):

* a request's head is at most ``max_head_bytes`` (h11 bounds an incomplete
  head; a head that arrives whole in one read is measured here): beyond,
  ``431`` and close;
* a request with both ``Content-Length`` and ``Transfer-Encoding`` is refused
  (``400`` and close: h11 lets ``Transfer-Encoding`` win, a smuggling vector
  behind a proxy that reads the other one);
* anything h11 refuses (bad request line, header bytes, two different
  ``Content-Length``, a bad chunk size, an unknown transfer coding) gets h11's
  status hint (``400``, ``501``) and close.

:meth:`H1Connection.next_event` returns one of the documented outcomes:
:class:`Head` (a request's head, as ASGI scope parts), :class:`Body` (bytes of
its body; ``more`` false at its end), :data:`NEED_DATA` (feed more bytes),
:data:`PAUSED` (a request is under way: bytes of the next one wait, buffered),
:data:`CLOSED` (the peer closed) or :class:`Reject` (bytes to write, then close).
What the connection buffers is h11's receive buffer: the bytes fed and not yet
returned (the I/O loop feeds one read at a time, and only when asked for).
"""

from __future__ import annotations

import functools
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import unquote

import h11

__all__ = ["CLOSED", "NEED_DATA", "PAUSED", "Body", "H1Connection", "Head", "Reject"]

#: Feed more bytes (:meth:`H1Connection.receive_data`), or the end of the input (``b""``).
NEED_DATA: Final = "need-data"
#: A request (and its body) has been returned; the next request waits until its response ends.
PAUSED: Final = "paused"
#: The peer closed its side (or the connection cannot go on): nothing more comes.
CLOSED: Final = "closed"

class Head:
    """A request's head: what an ASGI ``http`` scope needs from it (names of headers lower case)."""

    __slots__ = ("headers", "http_version", "method", "path", "query_string", "raw_path")

    def __init__(self, method: str, raw_path: bytes, query_string: bytes, http_version: str,
                 headers: list[tuple[bytes, bytes]]) -> None:
        self.method = method
        self.raw_path = raw_path
        self.path = unquote(raw_path.decode("ascii"))  # h11 admits only visible ASCII in a target
        self.query_string = query_string
        self.http_version = http_version
        self.headers = headers


class Body:
    """Bytes of a request's body; ``more`` is false for the last (possibly empty) piece."""

    __slots__ = ("data", "more")

    def __init__(self, data: bytes, more: bool) -> None:
        self.data = data
        self.more = more


class Reject:
    """The request cannot be served: write :attr:`data` (an error response), then close."""

    __slots__ = ("data", "reason", "status")

    def __init__(self, status: int, reason: str, data: bytes) -> None:
        self.status = status
        self.reason = reason
        self.data = data


Event = Head | Body | Reject | str

_FRAMING = frozenset((b"content-length", b"transfer-encoding"))


@functools.lru_cache(maxsize=64)
def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def error_response(status: int, text: bytes = b"") -> bytes:
    """A complete ``status`` response that closes the connection, framed by h11 (for errors and refusals)."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    conn.next_event()
    body = text or _reason(status) + b"\n"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body)),
               (b"connection", b"close")]
    out = conn.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
    return (out or b"") + (conn.send(h11.Data(data=body)) or b"") + (conn.send(h11.EndOfMessage()) or b"")


class H1Connection:
    """h11's server connection plus minimcp's checks: bytes in -> events; ASGI ``send`` messages -> bytes out.

    Reading: :meth:`receive_data`, then :meth:`next_event` until it asks for data or pauses. Writing:
    :meth:`response_start` (kept until the first body, so head and body go out in one write) and
    :meth:`response_body`. After a response: :attr:`reusable` tells whether the next request may come
    on this connection (then :meth:`next_cycle`). Never raises on any input.
    """

    __slots__ = (
        "_conn", "_head_bytes", "_head_request", "_next", "_start", "closing", "max_head_bytes", "request_done",
        "response_done",
    )

    def __init__(self, max_head_bytes: int) -> None:
        self.max_head_bytes = max_head_bytes
        self._conn = h11.Connection(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self._head_bytes = 0  # bytes fed since the head being read began (an upper bound of its size)
        self._next: Any = None  # an h11 event read ahead (the piece of a body after the one returned)
        self._head_request = False  # the request is a HEAD: its response carries no body
        self._start: tuple[int, list[tuple[bytes, bytes]]] | None = None  # a response head not yet written
        self.request_done = False  # the whole request body has been returned
        self.response_done = False  # the end of the response has been framed
        self.closing = False  # the connection must close once the response is written (an error, or asked)

    def receive_data(self, data: bytes) -> None:
        """Bytes from the peer; ``b""`` at the end of its input."""
        if self._conn.their_state is h11.IDLE:
            self._head_bytes += len(data)
        try:
            self._conn.receive_data(data)
        except RuntimeError:  # bytes after the peer closed: nothing more is read
            self.closing = True

    def body_over(self) -> bool:
        """Whether the whole request body has been returned, taking the end of a body that is here already
        and carries nothing more (a GET's): the app never read it. A piece of body is kept for
        :meth:`next_event` (False)."""
        if self.request_done:
            return True
        if self._next is not None:
            return False
        try:
            event = self._conn.next_event()
        except h11.RemoteProtocolError:
            return False  # (h11 reports it again at the next call)
        if type(event) is h11.EndOfMessage:
            self.request_done = True
            return True
        if event is not h11.NEED_DATA and event is not h11.PAUSED:
            self._next = event
        return False

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet returned as events (bounded by the caller: it feeds only when asked)."""
        return len(self._conn.trailing_data[0])

    def next_event(self) -> Event:
        """The next outcome of the bytes fed so far (see the module's list)."""
        if self.closing and self._conn.their_state is h11.IDLE:
            return CLOSED
        event: Any = self._next
        if event is not None:
            self._next = None
            if type(event) is h11.Data:
                return Body(bytes(event.data), True)
        try:
            event = event or self._conn.next_event()
        except h11.RemoteProtocolError as exc:
            return self._reject(exc.error_status_hint, str(exc))
        if event is h11.NEED_DATA:
            return NEED_DATA
        if event is h11.PAUSED:
            return PAUSED
        kind = type(event)
        if kind is h11.Data:
            data = bytes(event.data)
            try:
                following = self._conn.next_event()  # the end of the body, when it is here already: one event
            except h11.RemoteProtocolError:
                following = None  # reported at the next call
            if following is h11.NEED_DATA or following is None:
                return Body(data, True)
            if type(following) is h11.EndOfMessage:
                self.request_done = True
                return Body(data, False)
            self._next = following  # more data (chunks)
            return Body(data, True)
        if kind is h11.EndOfMessage:
            self.request_done = True
            return Body(b"", False)
        if kind is h11.Request:
            return self._head(event)
        return CLOSED  # ConnectionClosed

    def _head(self, request: h11.Request) -> Head | Reject:
        headers = request.headers
        if self._head_bytes > self.max_head_bytes:  # perhaps: measure it (rare: a big body in the same read)
            size = len(request.target) + len(request.method) + 13
            for name, value in headers:
                size += len(name) + len(value) + 4
            if size > self.max_head_bytes:
                return self._reject(431, f"a request's head passed {self.max_head_bytes} bytes")
        self._head_bytes = 0
        pairs = list(headers)
        names = [name for name, _ in pairs]
        if b"transfer-encoding" in names and b"content-length" in names:
            return self._reject(400, "both Content-Length and Transfer-Encoding")
        self._head_request = request.method == b"HEAD"
        target = bytes(request.target)
        raw_path, _, query = target.partition(b"?")
        try:
            return Head(request.method.decode("ascii"), raw_path, query, request.http_version.decode("ascii"), pairs)
        except UnicodeDecodeError:  # h11 lets through obs-text in a method; ASGI wants str
            return self._reject(400, "a non-ASCII request line")

    def _reject(self, status: int, reason: str) -> Reject:
        self.closing = True
        self.request_done = self.response_done = True
        return Reject(status, reason, error_response(status))

    # -- writing -------------------------------------------------------------------------------------

    def response_start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        """An ASGI ``http.response.start`` (kept: it is written with the first body)."""
        if self._start is not None or self.response_done or self._conn.our_state is not h11.SEND_RESPONSE:
            raise RuntimeError("http.response.start sent twice, or after the response")
        self._start = (status, headers)

    def response_body(self, data: bytes, more: bool) -> bytes:
        """An ASGI ``http.response.body``: the bytes to write (the head first, when it is still kept).

        Raises:
            RuntimeError: no response started, or the response is over.
        """
        conn = self._conn
        out = b""
        start = self._start
        if start is not None:
            self._start = None
            status, headers = start
            if not more and not any(name.lower() in _FRAMING for name, _ in headers):
                headers = [*headers, (b"content-length", b"%d" % len(data))]  # whole: no chunked framing
            if self.closing:
                headers = [*headers, (b"connection", b"close")]
            try:
                out = conn.send(h11.Response(status_code=status, headers=headers, reason=_reason(status))) or b""
            except h11.LocalProtocolError as exc:
                raise RuntimeError(f"bad response head: {exc}") from exc
        elif self.response_done or conn.our_state is not h11.SEND_BODY:
            raise RuntimeError("http.response.body before http.response.start, or after the response")
        try:
            if data and not self._head_request:
                out += conn.send(h11.Data(data=data)) or b""
            if not more:
                out += conn.send(h11.EndOfMessage()) or b""
                self.response_done = True
        except h11.LocalProtocolError as exc:  # more bytes than its Content-Length said
            self.closing = True
            raise RuntimeError(f"bad response body: {exc}") from exc
        return out

    def continue_bytes(self) -> bytes:
        """``100 Continue`` when the client waits for it to send its body (at the first read), else ``b""``."""
        conn = self._conn
        if not conn.client_is_waiting_for_100_continue or self.response_started:
            return b""
        return conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b""

    @property
    def response_started(self) -> bool:
        """Whether the app has begun its response (``http.response.start`` came)."""
        return self._start is not None or self._conn.our_state is not h11.SEND_RESPONSE

    @property
    def reusable(self) -> bool:
        """After a response: whether the connection may serve another request (keep-alive)."""
        conn = self._conn
        return not self.closing and conn.our_state is h11.DONE and conn.their_state is h11.DONE

    def next_cycle(self) -> None:
        """Begin the next request (after a response that left the connection :attr:`reusable`)."""
        self._conn.start_next_cycle()
        self._head_bytes = self.buffered  # the next head's bytes already here
        self.request_done = self.response_done = False

    def close_after_response(self) -> None:
        """The response being written is the connection's last (``connection: close`` when still possible)."""
        self.closing = True
