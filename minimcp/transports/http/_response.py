"""One live HTTP response reading a request's SSE stream: its writes, and its wait for the end (no task of its own)."""

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import anyio

from minimcp.core._backend import relayed_wait, running_loop
from minimcp.transports._backend_io import FutureWaker, checkpoint, end_wait, trio_cancel_scope

if TYPE_CHECKING:
    from minimcp.transports.http._asgi import ASGIMessage, EndReceive, Park, Receive, Send, SendNow
    from minimcp.transports.http._streams import Stream

__all__ = ["Reader"]

logger = logging.getLogger("minimcp.http")
_NO_SCOPE = contextlib.nullcontext()


class Reader:
    """One live HTTP response reading a request's stream, with no task of its own.

    Whoever pushes an event (the request's handler, mostly) writes it through
    :meth:`flush` (on asyncio the question and the result, through :meth:`flush_nowait`:
    a write that has to wait is finished by the response; on trio through the server's ``send_now``, when it
    offers one); the response's own coroutine only waits in ``receive()`` for
    the end (:meth:`respond`): the ASGI server says ``http.disconnect`` when the
    client leaves, and when the response is complete (a server that does not is
    woken by the last write). One writer at a time: a push that finds a write
    under way leaves its event to that writer, which loops until nothing is left.
    The last event goes out with the end of the response (one write).
    """

    __slots__ = (
        "clock",
        "cursor",
        "end_receive",
        "ended",
        "ending",
        "finished",
        "head",
        "hold",
        "idle",
        "last_write",
        "owner",
        "park",
        "rest",
        "scope",
        "send",
        "send_now",
        "stream",
        "waiting",
        "write_timeout",
        "writing",
    )

    def __init__(
        self,
        stream: Stream,
        send: Send,
        cursor: int,
        head: bytes,
        write_timeout: float,
        clock: Callable[[], float] = anyio.current_time,
        send_now: SendNow | None = None,
        end_receive: EndReceive | None = None,
        park: Park | None = None,
    ) -> None:
        self.stream = stream
        self.send = send
        # the server's synchronous send (minimcp's own server, on trio): flush_nowait writes through it
        self.send_now = send_now
        # the server's way to end the wait in receive() (minimcp's own server): on trio no cancel scope for it
        self.end_receive = end_receive
        # the server's way to take the open response over (minimcp's own, trio on Linux): no wait in receive()
        self.park = park
        # while parked (the server holds the open response and calls unparked at its end; see parked), what
        # respond would call at the end (ended(self, owner))
        self.ended: Callable[[Reader, Any], None] | None = None
        self.owner: Any = None
        self.write_timeout = write_timeout  # seconds one write may wait for a client that does not read
        self.cursor = cursor  # the seq of the last event written
        self.head = head  # bytes to write before the next events (the priming event, a keep-alive)
        self.hold = False  # the head alone waits: it goes out with the first event (or when let go)
        self.writing = True  # the response head is not out yet: pushes only buffer
        self.finished = False  # the end of the response is written
        self.ending = False  # asked to end (session closed, request cancelled, another reader took over)
        self.waiting = False  # its coroutine waits in receive()
        # what ends that wait (end_wait): asyncio, a future; trio, a cancel scope or the server's end_receive
        self.scope: Any = None
        # A write begun by flush_nowait that has to wait for the client: (its steps, what it waits on, the
        # seq it writes up to, whether it is the last), for the response's own coroutine to finish.
        self.rest: tuple[Generator[Any, Any, Any], Any, int, bool] | None = None
        self.idle: anyio.Event | None = None  # set when the write under way ends (made only when awaited)
        self.clock = clock  # the backend's (SessionTransport.clock)
        self.last_write = clock()

    @property
    def parked(self) -> bool:
        """Whether the server holds the open response (see ``minimcp.park``): it calls :meth:`unparked` at its end."""
        return self.ended is not None

    async def flush(self) -> None:
        """Write what the stream holds beyond :attr:`cursor` (no-op while another write is under way)."""
        if self.writing or self.finished:
            return
        self.writing = True
        try:
            await self.write_all()
        finally:
            self.release()
        if self.parked and self.ending:  # end() came during the write: the end goes out now
            self._finish_parked()
        if self.finished and self.waiting:
            if isinstance(self.scope, FutureWaker):
                # asyncio: the wait ends by completing a future of its own (race-free, no cancellation), so
                # at once; when the ASGI server has woken receive() already, the response just reads its end.
                self._interrupt()
            else:
                await self._wake_waiter()

    def flush_nowait(self) -> None:
        """:meth:`flush` for a caller that does not wait (``SessionTransport.send_nowait_described``, asyncio):
        the writes the ASGI server takes at once are made here; one that has to wait for the client is
        finished, with what follows, by the response's own coroutine (:meth:`respond`), woken for it.
        With :attr:`send_now` (the server's synchronous send: trio, on minimcp's server) every write is made
        here, and what the kernel does not take at once is the server's to write."""
        if self.writing or self.finished:
            return
        self.writing = True
        stream = self.stream
        send_now = self.send_now
        try:
            while stream.owner is self:
                due = self._due()
                if due is None:
                    break
                message, after, last = due
                if send_now is not None:
                    send_now(message)
                    self._wrote(after, last)
                    if last:
                        break
                    continue
                steps = self.send(message).__await__()
                try:
                    waits_on = steps.send(None)
                except StopIteration:
                    self._wrote(after, last)
                    if last:
                        break
                    continue
                self.rest = (steps, waits_on, after, last)  # ``writing`` stays held for the response's coroutine
                self._interrupt()
                return
        except Exception as exc:  # as in write_all
            logger.debug("SSE stream %d: could not write (%r): the client went away", stream.key, exc)
            self.gone()
        self.release()
        if self.finished:
            self._interrupt()

    def _due(self) -> tuple[ASGIMessage, int, bool] | None:
        """The next write: its message, the seq it reaches and whether it ends the response (the held
        head goes with it); None while nothing is due (or a priming head is held for what follows)."""
        stream = self.stream
        batch, after = stream.since(self.cursor)
        last = stream.done and after >= stream.next_seq - 1
        head = self.head
        if not batch and not last and (not head or self.hold):
            return None
        self.head = b""
        body = head + b"".join(batch) if batch else head
        return {"type": "http.response.body", "body": body, "more_body": not last}, after, last

    def _wrote(self, after: int, last: bool) -> None:
        """A write up to seq ``after`` went out (``last``: with the end of the response)."""
        self.last_write = self.clock()
        self.cursor = after
        stream = self.stream
        if after > stream.delivered:
            stream.delivered = after
        if last:
            self.finished = True

    async def _write_rest(self) -> None:
        """Finish the write :meth:`flush_nowait` began (bounded by :attr:`write_timeout`), then write what
        follows; the response's own coroutine does this."""
        rest = self.rest
        assert rest is not None
        self.rest = None
        steps, waits_on, after, last = rest
        del rest
        try:
            with anyio.move_on_after(self.write_timeout) as scope:
                await _Resumed(steps, waits_on)
            del steps, waits_on
            if scope.cancelled_caught:
                self.stalled()
            else:
                self._wrote(after, last)
                await self.write_all()
        except Exception as exc:  # as in write_all
            logger.debug("SSE stream %d: could not write (%r): the client went away", self.stream.key, exc)
            self.gone()
        finally:
            self.release()

    async def write_all(self) -> bool:
        """The writing loop; the caller holds :attr:`writing`. Never raises for a client that has gone.

        False when the client has gone (or stalled, see :attr:`write_timeout`) during it.
        """
        stream = self.stream
        try:
            while stream.owner is self:
                due = self._due()
                if due is None:
                    return True
                message, after, last = due
                if not await self._write(message):
                    self.stalled()
                    return False
                self._wrote(after, last)
                if last:
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
        """End the response soon (its coroutine writes what is left, then the end; parked: now)."""
        self.ending = True
        if self.parked:
            self._finish_parked()
        else:
            self._interrupt()

    def _finish_parked(self) -> None:
        """:meth:`finish` for a parked response (its writes go through ``send_now``): what is due, then the end,
        written now; a write under way (:meth:`flush`) does this when it ends."""
        if self.writing or self.finished:
            return
        self.flush_nowait()
        if self.writing or self.finished:
            return
        assert self.send_now is not None  # (a parked response has it: see respond)
        try:
            self.send_now({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception as exc:  # as in finish
            logger.debug("SSE stream %d: could not end the response (%r)", self.stream.key, exc)
            self.gone()
        else:
            self.finished = True

    def unparked(self, disconnected: bool) -> None:
        """The server's call at the end of a parked response (see ``minimcp.park``): what :meth:`respond` does
        after its wait (``disconnected``: the client left, or the connection died)."""
        if disconnected and not self.finished:
            self.gone()
        ended, owner = self.ended, self.owner
        self.ended = self.owner = None
        assert ended is not None
        ended(self, owner)

    def _interrupt(self) -> None:
        """End the wait in ``receive()``, if one is under way (it sees :attr:`ending` or :attr:`finished`)."""
        scope = self.scope
        if scope is not None and self.waiting:
            end_wait(scope)

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
        # trio: the ASGI servers we know end a pending receive() with http.disconnect once the response is
        # complete, which wakes the waiter by the time it runs (no cancellation); any other is woken here.
        try:
            await checkpoint()
        finally:
            self._interrupt()

    def __call__(self, _: object) -> None:
        """asyncio: the future ``receive()`` waits on is done: wake the response's wait (a callback of that future:
        the reader itself, not a bound method made for every wait, 64 bytes per pending call)."""
        wake = self.scope
        if wake is not None and self.waiting:
            end_wait(wake)

    @types.coroutine
    def respond(
        self,
        receive: Receive,
        start: ASGIMessage,
        hold: Callable[[Reader], None] | None,
        ended: Callable[[Reader, Any], None],
        owner: Any,
    ) -> Generator[Any, Any, None]:
        """The whole response, in one frame: ``start`` (its head), what the stream holds, then the wait in
        ``receive()`` until it is complete, the client leaves, or :meth:`end`; ``ended(self, owner)`` last.

        ``hold`` (the pacer's) holds a lone priming event back a moment. The wait is ended with no
        cancellation. On trio (the reference path) a native cancel scope around ``await receive()`` ends it
        (trio's cancellation is level-triggered: a wake that comes as ``receive()`` returns is simply unused),
        or the server's :attr:`end_receive` when it offers one (minimcp's own: ``receive()`` then returns, and
        the response holds no cancel scope while it waits, some 600 bytes).
        On asyncio ``receive()`` is driven step by step here and the task waits on a future of its own
        (:func:`minimcp.core._backend.relayed_wait`, which documents the asyncio protocol this relies on),
        completed by the future ``receive()`` waits on (a done-callback) or by :meth:`end`; woken early,
        ``receive()`` is closed where it waits. (Driven here, in this frame, rather than by a helper: a
        pending call holds no second frame.)
        """
        try:
            try:
                yield from self.send(start).__await__()
                if hold is not None:
                    hold(self)
                del start, hold  # not held while the response stays open (bytes per pending call)
                yield from self.write_all().__await__()
            finally:
                self.release()
            disconnected = False
            loop = running_loop()
            park = self.park
            if park is not None and not (self.finished or self.ending) and park(self.unparked):
                # minimcp's server holds the open response from here, with no task (unparked at its end); what
                # only a wait in receive() uses is let go (two bound methods: 128 bytes per pending call)
                self.ended, self.owner = ended, owner
                self.park = self.end_receive = None
                return
            if loop is None:  # trio
                # (one local for both backends' wake: 8 bytes a frame)
                wake: Any = self.end_receive or trio_cancel_scope()
                self.scope = wake
                self.waiting = True
                try:
                    with _NO_SCOPE if wake is self.end_receive else wake:
                        while not (self.finished or self.ending):
                            steps: Any = receive()  # a coroutine's own steps (``__await__`` adds a wrapper)
                            if type(steps) is not types.CoroutineType:
                                steps = steps.__await__()
                            if (yield from steps)["type"] == "http.disconnect":
                                disconnected = True
                                break
                finally:
                    self.waiting = False
                    self.scope = None
            while loop is not None:  # asyncio: one receive() each
                if self.rest is not None:  # a write flush_nowait began waits for the client: finish it here
                    yield from self._write_rest().__await__()
                if self.finished or self.ending:
                    break
                steps = receive()  # its own steps when a coroutine (no wrapper per wait)
                if type(steps) is not types.CoroutineType:
                    steps = steps.__await__()
                throw: BaseException | None = None
                message: Any = None
                while True:
                    try:
                        inner = steps.send(None) if throw is None else steps.throw(throw)
                    except StopIteration as exc:  # (the one exception local of this frame)
                        message = exc.value
                        break
                    throw = None
                    if inner is None:  # a bare yield (one turn of the loop)
                        try:
                            yield None
                        except GeneratorExit:
                            steps.close()
                            raise
                        except BaseException as exc:
                            throw = exc
                        continue
                    if self.finished or self.ending or self.rest is not None:  # not waited on: see above
                        steps.close()
                        break
                    while not inner.done():  # wait on ``wake``: set when ``inner`` is done, or by end()
                        wake = self.scope = relayed_wait(loop, inner, self)
                        self.waiting = True
                        try:
                            yield wake
                        except GeneratorExit:
                            steps.close()
                            raise
                        except BaseException as exc:  # the task itself is cancelled: receive() sees it
                            throw = exc
                            inner.cancel()
                            break
                        finally:
                            self.waiting = False
                            self.scope = None
                            inner.remove_done_callback(self)
                        if self.finished or self.ending or self.rest is not None:
                            break
                    if throw is None and not inner.done():  # woken by end(), the last write or flush_nowait
                        steps.close()
                        break
                if message is not None and message["type"] == "http.disconnect":
                    disconnected = True
                    break
            if self.rest is not None:  # the client left meanwhile: the write ends (bounded) all the same
                yield from self._write_rest().__await__()
            if disconnected and not self.finished:
                self.gone()
            if self.ending and not self.finished:
                yield from self.finish().__await__()
        except OSError:  # the ASGI server could not write: the client is gone
            logger.debug("SSE stream %d: client went away", self.stream.key)
        finally:
            if self.ended is None:  # (else parked: unparked calls it)
                ended(self, owner)


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
