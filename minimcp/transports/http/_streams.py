"""One HTTP session's server side: numbered SSE streams, replay buffers, resumption, retention, and their writers."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import anyio

from minimcp.core.transport import MessageKind, Outgoing
from minimcp.transports._backend_io import NativeEvent, checkpoint, native_clock, native_event_class
from minimcp.transports.http._response import Reader
from minimcp.transports.http._sse import PING, encode_event
from minimcp.transports.http._wire import is_response, is_uint, same_id
from minimcp.wire.jsonrpc import RequestId

if TYPE_CHECKING:
    from minimcp.transports.http._asgi import Send

__all__ = ["SessionTransport", "Stream"]

logger = logging.getLogger("minimcp.http")

#: Inbound messages (POST bodies) queued for the session before a POST waits (``Limits.max_http_inbox``).
DEFAULT_INBOX = 1024


class Stream:
    """One SSE stream of a session: its events, a bounded replay buffer, and who is reading it.

    Events are numbered from 1; event ``n`` has id ``"<key>-<n>"``. The id
    ``"<key>-0"`` (sent by a priming event) means "before the first event".
    """

    __slots__ = (
        "_changed",
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
        self.events: list[bytes] = []  # a list: a deque's first block alone is 600 bytes per stream
        self.first_seq = 1  # seq of events[0]
        self.next_seq = 1
        self.delivered = 0  # highest seq written to a live connection
        self.done = False  # the last event (the response) is in the buffer
        # The live connection reading it, if any: a Reader (request streams: written through by whoever
        # pushes), or the token of a task that waits on ``changed`` (the standalone stream).
        self.owner: object | None = None
        self._changed: anyio.Event | None = None  # made only when a task waits for a change

    @property
    def changed(self) -> anyio.Event:
        """Set at the next push or wake (for a task that waits for news)."""
        event = self._changed
        if event is None:
            event = self._changed = anyio.Event()
        return event

    def event_id(self, seq: int) -> str:
        return f"{self.key}-{seq}"

    def push(self, message: bytes, *, last: bool = False) -> None:
        seq = self.next_seq
        self.next_seq = seq + 1
        self.events.append(encode_event(message, id=self.event_id(seq)))
        if len(self.events) > self.max_events:
            del self.events[0]
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
        if self._changed is not None:
            self.wake()

    def wake(self) -> None:
        """Tell a task waiting on :attr:`changed` (a :class:`Reader` is written to by the pusher instead)."""
        event = self._changed
        if event is not None:
            self._changed = None
            event.set()

    def end_reader(self) -> None:
        """Make the :class:`Reader` reading this stream, if any, end its response soon."""
        owner = self.owner
        if type(owner) is Reader:
            owner.end()

    def since(self, cursor: int) -> tuple[list[bytes], int]:
        """The buffered events after seq ``cursor``, and the seq of the last one."""
        start = max(cursor + 1, self.first_seq)
        if start >= self.next_seq:
            return [], cursor
        if start > cursor + 1:
            logger.warning("SSE stream %d: events %d..%d were evicted before delivery", self.key, cursor + 1, start - 1)
        return self.events[start - self.first_seq :], self.next_seq - 1

    @property
    def fully_delivered(self) -> bool:
        return self.delivered >= self.next_seq - 1


class _Waiting:
    """A POST whose message waits for room in a session's inbox."""

    __slots__ = ("admitted", "body", "event")

    def __init__(self, body: bytes, event: NativeEvent) -> None:
        self.body = body
        self.event = event
        self.admitted = False


class SessionTransport:
    """The server-side transport of one HTTP session: POST bodies in, SSE streams out.

    The inbox is a deque bounded by ``max_inbox`` (``Limits.max_http_inbox``): a POST whose
    body finds it full waits (its connection with it) in line; each message the session reads
    lets the first waiting one in. The session reads it without a
    coroutine while it holds messages (:meth:`receive_nowait`), and waits on one event
    when it is empty. Made inside the running event loop (it keeps that backend's event
    class and clock).
    """

    def __init__(
        self,
        *,
        max_events: int,
        max_retained: int,
        hand_off: Callable[[Callable[[], Coroutine[Any, Any, None]]], object] | None = None,
        max_inbox: int = DEFAULT_INBOX,
    ) -> None:
        self._inbox: deque[bytes] = deque()
        self._max_inbox = max(1, max_inbox)
        self._arrived: NativeEvent | None = None  # the session waits for a message
        self._waiting: deque[_Waiting] | None = None  # POSTs waiting for room, first come first in (made on need)
        self._reading = True  # False once the session's side is closed (aclose)
        self._event = native_event_class()
        #: The backend's clock (``anyio.current_time`` without its lookup).
        self.clock = native_clock()
        # None: a pusher writes to a Reader itself (bounded by its write_timeout). Else a task started by this
        # writes for it: hypercorn on trio shields its socket writes, so no deadline can free a stalled writer
        # (and flush_nowait cannot resume a write in another task on trio) -- but not for a Reader with the
        # server's send_now (minimcp's own server: its writes can be cut short, and send_now never waits).
        self.hand_off = hand_off
        self.max_events = max_events
        self.max_retained = max_retained
        self.standalone = Stream(0, None, max_events)
        self.streams: dict[int, Stream] = {0: self.standalone}
        self.by_request: dict[RequestId, Stream] = {}
        self._retained: list[int] = []  # at most max_retained keys, oldest first
        self._keys = itertools.count(1)
        self.closed = False

    # Transport protocol (the session's side)

    #: The session says what each message is (:class:`~minimcp.core.transport.DescribedTransport`): a
    #: response ends its stream, and nothing sent is read back to find that out.
    wants_outgoing = True

    async def send(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if related is not None:
            stream = self.by_request.get(related)
            if stream is not None and same_id(stream.request_id, related):
                last = is_response(message) if outgoing is None else outgoing.kind is MessageKind.RESPONSE
                stream.push(message, last=last)
                if last:
                    del self.by_request[related]
                    if stream.owner is None:
                        self.retain(stream)
                owner = stream.owner
                if type(owner) is Reader and not owner.writing:
                    if self.hand_off is not None and owner.send_now is None:
                        self.hand_off(owner.flush)
                    elif last:
                        # The end of the response: nothing follows it on this stream, so a write that has
                        # to wait for the client is finished by the response's own coroutine (under the same
                        # stream_write_timeout) and the handler is not held: no coroutines per write here.
                        owner.flush_nowait()
                    else:
                        await owner.flush()
                return
            if is_response(message) if outgoing is None else outgoing.kind is MessageKind.RESPONSE:
                # Its request's stream is gone (the client cancelled it): a response never
                # goes on the standalone stream.
                logger.debug("dropped a response for request %r: its stream has ended", related)
                return
        self.standalone.push(message)

    def send_nowait_described(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> bool:
        """:meth:`send` without waiting, for a described request or notification (the session's fast path
        for the requests it sends). False for a response, a message without its description, or once closed
        (then :meth:`send` is called). An open response reading the stream is written to at once
        (:meth:`Reader.flush_nowait`; on trio by a task of the app, as :meth:`send` does, unless the
        response has the server's ``send_now``)."""
        if self.closed or outgoing is None or outgoing.kind is MessageKind.RESPONSE:
            return False
        if related is not None:
            stream = self.by_request.get(related)
            if stream is not None and same_id(stream.request_id, related):
                stream.push(message)
                owner = stream.owner
                if type(owner) is Reader and not owner.writing:
                    if self.hand_off is None or owner.send_now is not None:
                        owner.flush_nowait()
                    else:
                        self.hand_off(owner.flush)
                return True
        self.standalone.push(message)
        return True

    async def receive(self) -> bytes:
        while True:
            message = self.receive_nowait()
            if message is not None:
                return message
            if self.closed:
                raise anyio.EndOfStream
            # One turn of the loop first: the POSTs made ready in this turn come in and are read in one go,
            # instead of waking the session once each (as anyio's memory streams do; measured at C = 100).
            await checkpoint()
            message = self.receive_nowait()
            if message is not None:
                return message
            arrived = self._arrived = self._event()
            await arrived.wait()

    def receive_nowait(self) -> bytes | None:
        """A message that is already there, else ``None`` (the session's fast path)."""
        inbox = self._inbox
        if not inbox:
            if not self._reading:
                raise anyio.ClosedResourceError
            return None
        message = inbox.popleft()
        waiting = self._waiting
        if waiting:
            first = waiting.popleft()  # its message takes the place just freed
            inbox.append(first.body)
            first.admitted = True
            first.event.set()
        return message

    async def aclose(self) -> None:
        self.close()
        self._reading = False
        self._inbox.clear()

    # the app's side

    def close(self) -> None:
        """No more input (the session's receive ends); open streams finish."""
        if self.closed:
            return
        self.closed = True
        self._wake_inbox()
        for stream in self.streams.values():
            stream.wake()
            stream.end_reader()

    def _wake_inbox(self) -> None:
        """Wake the session's read and the waiting POSTs (the session has ended: they are refused)."""
        arrived, waiting = self._arrived, self._waiting
        self._arrived = self._waiting = None
        if arrived is not None:
            arrived.set()
        for entry in waiting or ():
            entry.event.set()

    def deliver_nowait(self, body: bytes) -> bool:
        """:meth:`deliver` when the inbox has room (no coroutine): False when it has none or the session has
        ended (then :meth:`deliver` waits, or says so)."""
        if self.closed:
            return False
        inbox = self._inbox
        if len(inbox) < self._max_inbox and not self._waiting:
            inbox.append(body)
            arrived = self._arrived
            if arrived is not None:
                self._arrived = None
                arrived.set()
            return True
        return False

    async def deliver(self, body: bytes) -> bool:
        """Hand one inbound message to the session; False when the session has ended.

        Waits while the inbox holds ``max_inbox`` messages (see the class).
        """
        if self.closed:
            return False
        if self.deliver_nowait(body):
            return True
        waiting = self._waiting
        if waiting is None:
            waiting = self._waiting = deque()
        entry = _Waiting(body, self._event())
        waiting.append(entry)
        try:
            await entry.event.wait()
        finally:
            if not entry.admitted and self._waiting is waiting:
                with contextlib.suppress(ValueError):
                    waiting.remove(entry)  # cancelled while waiting
        return entry.admitted

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
        stream.end_reader()
        if stream.owner is None:
            self.retain(stream)

    def retain(self, stream: Stream) -> None:
        """Keep a finished stream that its client has not read to the end (bounded)."""
        if stream.key in self._retained:
            return
        self._retained.append(stream.key)
        while len(self._retained) > self.max_retained:
            self.streams.pop(self._retained.pop(0), None)

    async def pump(
        self, stream: Stream, token: object, cursor: int, head: bytes, send: Send, keepalive_interval: float
    ) -> None:
        """Write the standalone ``stream`` from after ``cursor`` while ``token`` owns it (pushers only wake this
        task), with a keep-alive comment after ``keepalive_interval`` of silence; returns when it ends."""
        pending = head
        while stream.owner is token:
            changed = stream.changed
            batch, cursor_after = stream.since(cursor)
            if batch or pending:
                await send({"type": "http.response.body", "body": pending + b"".join(batch), "more_body": True})
                pending = b""
                cursor = cursor_after
                if cursor > stream.delivered:
                    stream.delivered = cursor
                continue
            if stream.done or self.closed:
                return
            with anyio.move_on_after(keepalive_interval) as scope:
                await changed.wait()
            if scope.cancelled_caught:
                await send({"type": "http.response.body", "body": PING, "more_body": True})

    def let_go(self, stream: Stream, owner: object) -> None:
        """A response that read ``stream`` as ``owner`` has ended: a finished stream is dropped, or kept
        (bounded) while its client has not read it to the end."""
        if stream.owner is owner:
            stream.owner = None
        if stream.done:
            if stream.fully_delivered:
                self.drop(stream)
            else:
                self.retain(stream)

    def drop(self, stream: Stream) -> None:
        self.streams.pop(stream.key, None)
        retained = self._retained
        if stream.key in retained:  # (rarely: a stream is dropped once read to the end; no ValueError per call)
            retained.remove(stream.key)

    def find(self, event_id: str) -> tuple[Stream, int] | None:
        """The stream an event id belongs to and the seq to resume after."""
        key, sep, seq = event_id.strip().partition("-")
        if not sep or not is_uint(key) or not is_uint(seq):
            return None
        stream = self.streams.get(int(key))
        if stream is None:
            return None
        return stream, int(seq)
