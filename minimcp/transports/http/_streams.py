"""The server side of one HTTP session: numbered SSE streams, their replay buffers, resumption and retention."""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging

import anyio

from minimcp.jsonrpc import RequestId
from minimcp.transports.http._sse import encode_event
from minimcp.transports.http._wire import is_response, is_uint, same_id

__all__ = ["SessionTransport", "Stream"]

logger = logging.getLogger("minimcp.http")

#: Inbound messages (POST bodies) queued for the session before a POST waits.
_INBOX = 64


class Stream:
    """One SSE stream of a session: its events, a bounded replay buffer, and who is reading it.

    Events are numbered from 1; event ``n`` has id ``"<key>-<n>"``. The id
    ``"<key>-0"`` (sent by a priming event) means "before the first event".
    """

    __slots__ = (
        "changed",
        "delivered",
        "done",
        "events",
        "first_seq",
        "key",
        "max_events",
        "next_seq",
        "owner",
        "request_id",
    )

    def __init__(self, key: int, request_id: RequestId | None, max_events: int) -> None:
        self.key = key
        self.request_id = request_id
        self.max_events = max_events
        self.events: collections.deque[bytes] = collections.deque()
        self.first_seq = 1  # seq of events[0]
        self.next_seq = 1
        self.delivered = 0  # highest seq written to a live connection
        self.done = False  # the last event (the response) is in the buffer
        self.owner: object | None = None  # the live connection reading it, if any
        self.changed = anyio.Event()

    def event_id(self, seq: int) -> str:
        return f"{self.key}-{seq}"

    def push(self, message: bytes, *, last: bool = False) -> None:
        seq = self.next_seq
        self.next_seq = seq + 1
        self.events.append(encode_event(message, id=self.event_id(seq)))
        if len(self.events) > self.max_events:
            self.events.popleft()
            if self.first_seq > self.delivered:
                # Expected on the standalone stream while no GET is open; a problem on a request's.
                logger.log(
                    logging.WARNING if self.request_id is not None else logging.DEBUG,
                    "SSE stream %d: replay buffer full (%d events); dropped event %d before it was delivered",
                    self.key,
                    self.max_events,
                    self.first_seq,
                )
            self.first_seq += 1
        if last:
            self.done = True
        self.wake()

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def since(self, cursor: int) -> tuple[list[bytes], int]:
        """The buffered events after seq ``cursor``, and the seq of the last one."""
        start = max(cursor + 1, self.first_seq)
        if start >= self.next_seq:
            return [], cursor
        if start > cursor + 1:
            logger.warning("SSE stream %d: events %d..%d were evicted before delivery", self.key, cursor + 1, start - 1)
        return list(itertools.islice(self.events, start - self.first_seq, None)), self.next_seq - 1

    @property
    def fully_delivered(self) -> bool:
        return self.delivered >= self.next_seq - 1


class SessionTransport:
    """The server-side transport of one HTTP session: POST bodies in, SSE streams out."""

    def __init__(self, *, max_events: int, max_retained: int) -> None:
        self._in_send, self._in_recv = anyio.create_memory_object_stream[bytes](_INBOX)
        self.max_events = max_events
        self.max_retained = max_retained
        self.standalone = Stream(0, None, max_events)
        self.streams: dict[int, Stream] = {0: self.standalone}
        self.by_request: dict[RequestId, Stream] = {}
        self._retained: collections.deque[int] = collections.deque()
        self._keys = itertools.count(1)
        self.closed = False

    # Transport protocol (the session's side)

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if related is not None:
            stream = self.by_request.get(related)
            if stream is not None and same_id(stream.request_id, related):
                last = is_response(message)
                stream.push(message, last=last)
                if last:
                    del self.by_request[related]
                    if stream.owner is None:
                        self.retain(stream)
                return
            if is_response(message):
                # Its request's stream is gone (the client cancelled it): a response never
                # goes on the standalone stream.
                logger.debug("dropped a response for request %r: its stream has ended", related)
                return
        self.standalone.push(message)

    async def receive(self) -> bytes:
        return await self._in_recv.receive()

    async def aclose(self) -> None:
        self.close()
        self._in_recv.close()

    # the app's side

    def close(self) -> None:
        """No more input (the session's receive ends); open streams finish."""
        if self.closed:
            return
        self.closed = True
        self._in_send.close()
        for stream in self.streams.values():
            stream.wake()

    async def deliver(self, body: bytes) -> bool:
        """Hand one inbound message to the session; False when the session has ended."""
        try:
            await self._in_send.send(body)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def open_request_stream(self, request_id: RequestId) -> Stream | None:
        """A new stream for a POSTed request; None when that id is still open."""
        if request_id in self.by_request:
            return None
        stream = Stream(next(self._keys), request_id, self.max_events)
        self.streams[stream.key] = stream
        self.by_request[request_id] = stream
        return stream

    def end_request_stream(self, request_id: RequestId) -> None:
        """The client cancelled the request: no response will come; end its stream."""
        stream = self.by_request.get(request_id)
        if stream is None or not same_id(stream.request_id, request_id):
            return
        del self.by_request[request_id]
        stream.done = True
        stream.wake()
        if stream.owner is None:
            self.retain(stream)

    def retain(self, stream: Stream) -> None:
        """Keep a finished stream that its client has not read to the end (bounded)."""
        if stream.key in self._retained:
            return
        self._retained.append(stream.key)
        while len(self._retained) > self.max_retained:
            self.streams.pop(self._retained.popleft(), None)

    def drop(self, stream: Stream) -> None:
        self.streams.pop(stream.key, None)
        with contextlib.suppress(ValueError):
            self._retained.remove(stream.key)

    def find(self, event_id: str) -> tuple[Stream, int] | None:
        """The stream an event id belongs to and the seq to resume after."""
        key, sep, seq = event_id.strip().partition("-")
        if not sep or not is_uint(key) or not is_uint(seq):
            return None
        stream = self.streams.get(int(key))
        if stream is None:
            return None
        return stream, int(seq)
