"""One HTTP session's server side: numbered SSE streams, replay buffers, resumption, retention, and their writers."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from minimcp.jsonrpc import RequestId
from minimcp.transports._inbox import Inbox
from minimcp.transports.http._sse import PING, encode_event
from minimcp.transports.http._wire import is_response, is_uint, same_id

if TYPE_CHECKING:
    from minimcp.transports.http._asgi import ASGIMessage, Receive, Send

__all__ = ["Reader", "SessionTransport", "Stream"]

logger = logging.getLogger("minimcp.http")

#: Inbound messages (POST bodies) queued for the session before a POST waits.
_INBOX = 64


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


class Reader:
    """One live HTTP response reading a request's stream, with no task of its own.

    Whoever pushes an event (the request's handler, mostly) writes it through
    :meth:`flush`; the response's own coroutine only waits in ``receive()`` for
    the end: the ASGI server says ``http.disconnect`` when the client leaves,
    and when the response is complete (a server that does not is woken through
    :attr:`scope`). One writer at a time: a push that finds a write under way
    leaves its event to that writer, which loops until nothing is left. The
    last event goes out with the end of the response (one write).
    """

    __slots__ = (
        "cursor",
        "ending",
        "finished",
        "head",
        "hold",
        "idle",
        "last_write",
        "scope",
        "send",
        "stream",
        "waiting",
        "write_timeout",
        "writing",
    )

    def __init__(self, stream: Stream, send: Send, cursor: int, head: bytes, write_timeout: float) -> None:
        self.stream = stream
        self.send = send
        self.write_timeout = write_timeout  # seconds one write may wait for a client that does not read
        self.cursor = cursor  # the seq of the last event written
        self.head = head  # bytes to write before the next events (the priming event, a keep-alive)
        self.hold = False  # the head alone waits: it goes out with the first event (or when let go)
        self.writing = True  # the response head is not out yet: pushes only buffer
        self.finished = False  # the end of the response is written
        self.ending = False  # asked to end (session closed, request cancelled, another reader took over)
        self.waiting = False  # its coroutine waits in receive()
        self.scope: anyio.CancelScope | None = None  # around that wait
        self.idle: anyio.Event | None = None  # set when the write under way ends (made only when awaited)
        self.last_write = anyio.current_time()

    async def flush(self) -> None:
        """Write what the stream holds beyond :attr:`cursor` (no-op while another write is under way)."""
        if self.writing or self.finished:
            return
        self.writing = True
        try:
            await self.write_all()
        finally:
            self.release()
        if self.finished and self.waiting:
            await self._wake_waiter()

    async def write_all(self) -> bool:
        """The writing loop; the caller holds :attr:`writing`. Never raises for a client that has gone.

        False when the client has gone (or stalled, see :attr:`write_timeout`) during it.
        """
        stream = self.stream
        try:
            while stream.owner is self:
                batch, after = stream.since(self.cursor)
                last = stream.done and after >= stream.next_seq - 1
                head = self.head
                if not batch and not last and (not head or self.hold):
                    return True
                self.head = b""
                body = head + b"".join(batch) if batch else head
                if not await self._write({"type": "http.response.body", "body": body, "more_body": not last}):
                    self.stalled()
                    return False
                self.last_write = anyio.current_time()
                self.cursor = after
                if after > stream.delivered:
                    stream.delivered = after
                if last:
                    self.finished = True
                    return True
        except Exception as exc:
            # OSError: the client is gone (ASGI 2.4); some servers raise other errors after a disconnect.
            logger.debug("SSE stream %d: could not write (%r): the client went away", stream.key, exc)
            self.gone()
            return False
        return True

    async def _write(self, message: ASGIMessage) -> bool:
        """One ``send``; False when it waited :attr:`write_timeout` for a client that does not read.

        The deadline costs nothing when ``send`` returns without waiting (the ASGI server took
        the bytes): its first step runs here, and only a ``send`` that has to wait finishes under
        a deadline. A cancel scope around every write would cost 6 to 10 us on asyncio, a few
        per cent of an HTTP round trip.
        """
        steps = self.send(message).__await__()
        try:
            waits_on = next(steps)
        except StopIteration:
            return True
        with anyio.move_on_after(self.write_timeout) as scope:
            await _Resumed(steps, waits_on)
        return not scope.cancelled_caught

    def release(self) -> None:
        """The write under way has ended."""
        self.writing = False
        idle = self.idle
        if idle is not None:
            self.idle = None
            idle.set()

    async def finish(self) -> None:
        """After :meth:`end`: wait for a write under way, write what is left, then the end of the response."""
        while self.writing:
            idle = self.idle = self.idle or anyio.Event()
            await idle.wait()
        if self.finished:
            return
        self.writing = True
        try:
            if await self.write_all() and not self.finished:
                if await self._write({"type": "http.response.body", "body": b"", "more_body": False}):
                    self.finished = True
                else:
                    self.stalled()
        except Exception as exc:
            logger.debug("SSE stream %d: could not end the response (%r)", self.stream.key, exc)
            self.gone()
        finally:
            self.release()

    async def ping(self, ping: bytes) -> None:
        """A keep-alive comment (with anything pushed meanwhile)."""
        if self.writing or self.finished:
            return
        self.head += ping
        await self.flush()

    def end(self) -> None:
        """End the response soon (its coroutine writes what is left, then the end)."""
        self.ending = True
        scope = self.scope
        if scope is not None:
            scope.cancel()

    def stalled(self) -> None:
        """A write waited :attr:`write_timeout` for a client that does not read: it is treated as gone."""
        logger.info(
            "SSE stream %d: the client read nothing for %g s; treated as gone (its events stay for a resumption)",
            self.stream.key,
            self.write_timeout,
        )
        self.gone()

    def gone(self) -> None:
        """The client left: later events only go to the replay buffer."""
        if self.stream.owner is self:
            self.stream.owner = None

    async def _wake_waiter(self) -> None:
        # The ASGI servers we know end a pending receive() with http.disconnect once the response is
        # complete, which wakes the waiter by the time it runs; any other is woken by its scope.
        try:
            await anyio.lowlevel.checkpoint()
        finally:
            if self.waiting and self.scope is not None:
                self.scope.cancel()

    async def wait(self, receive: Receive) -> None:
        """Wait in ``receive()`` until the response is complete, the client leaves, or :meth:`end`."""
        if self.finished or self.ending:
            return
        with anyio.CancelScope() as scope:
            self.scope = scope
            self.waiting = True
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            finally:
                self.waiting = False
                self.scope = None
        if not self.finished and not scope.cancel_called:
            self.gone()  # a disconnect


class _Resumed:
    """The rest of an awaitable whose first step has run (it waits on ``waits_on``), to await."""

    __slots__ = ("steps", "waits_on")

    def __init__(self, steps: Generator[Any, Any, Any], waits_on: Any) -> None:
        self.steps = steps
        self.waits_on = waits_on

    def __await__(self) -> Generator[Any, Any, None]:
        steps, waits_on = self.steps, self.waits_on
        while True:  # what ``yield from`` does, from the second step on
            try:
                sent = yield waits_on
            except BaseException as exc:  # a cancellation (or close): the awaitable handles it
                try:
                    waits_on = steps.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    waits_on = steps.send(sent)
                except StopIteration:
                    return


class SessionTransport:
    """The server-side transport of one HTTP session: POST bodies in, SSE streams out."""

    def __init__(
        self,
        *,
        max_events: int,
        max_retained: int,
        hand_off: Callable[[Callable[[], Coroutine[Any, Any, None]]], object] | None = None,
    ) -> None:
        self._inbox = Inbox(_INBOX)  # (an anyio memory stream costs 3-4 KB more per idle session)
        # None: a pusher writes to a Reader itself (bounded by its write_timeout). Else a task started by this
        # writes for it: hypercorn on trio shields its socket writes, so no deadline can free a stalled writer.
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
                owner = stream.owner
                if type(owner) is Reader and not owner.writing:
                    if self.hand_off is None:
                        await owner.flush()
                    else:
                        self.hand_off(owner.flush)
                return
            if is_response(message):
                # Its request's stream is gone (the client cancelled it): a response never
                # goes on the standalone stream.
                logger.debug("dropped a response for request %r: its stream has ended", related)
                return
        self.standalone.push(message)

    async def receive(self) -> bytes:
        return await self._inbox.receive()

    def receive_nowait(self) -> bytes | None:
        """A message that is already there, else ``None`` (the session's fast path)."""
        return self._inbox.receive_nowait()

    async def aclose(self) -> None:
        self.close()
        self._inbox.break_()

    # the app's side

    def close(self) -> None:
        """No more input (the session's receive ends); open streams finish."""
        if self.closed:
            return
        self.closed = True
        self._inbox.close()
        for stream in self.streams.values():
            stream.wake()
            stream.end_reader()

    async def deliver(self, body: bytes) -> bool:
        """Hand one inbound message to the session; False when the session has ended."""
        try:
            if not self._inbox.put_nowait(body):
                await self._inbox.put(body)
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
