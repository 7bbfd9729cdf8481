"""minimcp's HTTP/1.1 server: an ASGI app on a listening socket, on anyio (asyncio or trio), one task per connection.

The bytes are h11's (through :class:`~minimcp.transports.h1_connection.H1Connection`,
the sans-I/O half); this module is the I/O loop. It uses the non-blocking
socket itself (``recv``/``send`` first, a wait for the socket -- the backend's own,
:func:`~minimcp.transports._backend_io.native_socket_waits` -- only when the kernel has nothing or no room), so a
``send`` the kernel takes at once finishes without suspending, and a request's
body is read only when the app awaits ``receive()`` (one read at a time: that
is the backpressure).

Bounds, from :class:`~minimcp.core.config.Limits`:

* ``http_header_timeout``: a connection has that long from its accept, and
  from the end of each response, to complete the next request's head
  (trickled bytes do not extend it); it also closes idle keep-alive
  connections. A deadline is a number on the connection; one task of the
  server checks them a few times per timeout (no timer per request);
* ``max_http_head_bytes``: beyond, ``431`` and close;
* ``max_http_connections``: a connection accepted beyond it is answered
  ``503`` and closed before anything is read;
* a response ``send`` the client does not read waits (the app's
  ``stream_write_timeout`` cancels it): a cancelled or failed write closes the
  connection, never reused half-written;
* ``stream_buffer_bytes``: the bytes ``send_now`` (the scope's
  ``minimcp.send_now`` extension: a synchronous ``http.response.body``) keeps
  when the kernel does not take them at once; beyond, the client is gone. A
  task of the server writes them (started only then), and closes a client that
  takes nothing for ``stream_write_timeout``; later sends, the next request and
  the close wait behind them.

ASGI: ``http.disconnect`` comes when the peer closes, and to a ``receive()``
that waits once the response is complete (on trio that wait has no cancel
scope of its own: the end of the response wakes it, in the server's own epoll on Linux,
:class:`~minimcp.transports._backend_io.ReadinessWatch`, else with ``notify_closing``).
The scope's ``minimcp.end_receive`` extension ends such a wait early for an app
that stops reading a response, with no cancel scope on its side either. Where the
watch runs (trio on Linux) the scope's ``minimcp.park`` lets an app hand over a
response that only waits for its end or for its client to leave: the app's call
and the connection's task end, the watch calls the connection when the socket is
readable, and a new task of the server goes on with the connection once the
response ends (an open call then holds no task, no frame and no cancel scope of
the HTTP server or the app: ~8 KB per pending call against ~17 KB).
The accept task takes up to ``_ACCEPTS`` connections a turn, so a burst of
connects does not wait in the backlog behind the running connections. On stop: no more accepts, idle
connections close, responses under way get ``graceful_timeout`` to end, then
they are cancelled.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.abc

from minimcp.core._backend import backend_name
from minimcp.core.config import Limits
from minimcp.transports._backend_io import (
    ReadinessWatch,
    SocketWaits,
    native_cancel_scope_class,
    native_socket_waits,
    native_task_group,
    readiness_watch,
)
from minimcp.transports.h1_connection import NEED_DATA, Body, H1Connection, Head, Reject, error_response

__all__ = ["END_RECEIVE", "PARK", "RECEIVE_ENDED", "SEND_NOW", "H1Server", "run_h1"]

logger = logging.getLogger("minimcp.asgi")

#: the ASGI scope's extension (``scope["extensions"][SEND_NOW]``): a synchronous ``send`` of an
#: ``http.response.body`` that never suspends (:meth:`_Connection.send_now`)
SEND_NOW: Final = "minimcp.send_now"
#: the ASGI scope's extension (``scope["extensions"][END_RECEIVE]``): end a ``receive()`` that waits for the end
#: of the response, without cancelling it; it returns ``{"type": RECEIVE_ENDED}`` (:meth:`_Connection.end_receive`)
END_RECEIVE: Final = "minimcp.end_receive"
RECEIVE_ENDED: Final = "minimcp.receive_ended"
#: the ASGI scope's extension (``scope["extensions"][PARK]``, trio on Linux): the app hands its open response to
#: the server and returns; the connection keeps no task until the response ends (:meth:`_Connection.park`)
PARK: Final = "minimcp.park"
_READ: Final = 65536  # bytes of one read of a socket
_DISCONNECT: Final = {"type": "http.disconnect"}
_NOTIFY: Final = object()  # _Connection.waiter on trio: woken through the watch, else notify_closing (wake)
_NO_SCOPE: Final = contextlib.nullcontext()
#: connections accepted in one turn of the accept task, as asyncio's own servers do (one accept per turn
#: left a burst of a thousand connects waiting seconds in the backlog behind the running connections)
_ACCEPTS: Final = 100


def _disconnect() -> dict[str, Any]:
    return dict(_DISCONNECT)


class _Connection:
    """One accepted socket: its h11 state, head deadline and the ASGI ``receive``/``send`` of its requests."""

    __slots__ = (
        "backlog", "client", "dead", "deadline", "drained", "h1", "parked", "parks", "paused", "room", "scope",
        "server", "sock", "wait_ended", "waiter", "waiting_write", "writer",
    )

    def __init__(self, server: H1Server, sock: socket.socket, client: Any) -> None:
        self.server = server
        self.sock = sock
        self.client = client
        self.h1 = H1Connection(server.limits.max_http_head_bytes)
        self.deadline: float | None = None  # by when the next head must be complete (None: a request runs)
        self.scope: Any = server.new_scope()  # the connection's task (the header deadline and the stop cancel it)
        self.dead = False  # the peer left or a write failed: no more reads or writes, then close
        # a receive() waiting for the end of the response: its cancel scope (asyncio), _NOTIFY (trio: see wake)
        self.waiter: Any = None
        self.paused: anyio.Event | None = None  # that wait, no longer reading (a pipelined request is too long)
        self.wait_ended = False  # end_receive ended that wait (it returns RECEIVE_ENDED)
        self.backlog = bytearray()  # bytes send_now framed that the kernel has not taken yet (bounded)
        self.writer: anyio.CancelScope | None = None  # the task writing the backlog, while there is one
        self.drained: anyio.Event | None = None  # set when the backlog is written or dropped (made when awaited)
        self.waiting_write = False  # a write (send) waits for the socket: send_now may not write meanwhile
        # the app's park(): what to call when the parked response ends (None: not parked; see park)
        self.parked: Callable[[bool], object] | None = None
        self.room = 0  # while parked: bytes of a pipelined request still to read (then reading stops)
        # responses parked so far: a task whose app call parked one has handed the connection over (even when
        # that response ended before the call returned: a resumed task goes on with it, see H1Server._connection)
        self.parks = 0

    async def read(self) -> bool:
        """Feed one read of the socket to h11; False at the end of the peer's input."""
        sock = self.sock
        while True:
            try:
                data: bytes | None = sock.recv(_READ)
            except BlockingIOError:
                data = None  # (waited below: a wait inside ``except`` would hold the exception meanwhile)
            except OSError:
                data = b""
            if data is None:
                await self.server.waits.readable(sock)
                continue
            self.h1.receive_data(data)
            return bool(data)

    async def receive(self) -> dict[str, Any]:
        """ASGI ``receive``: the next piece of the request's body (read now), else ``http.disconnect`` when
        the response is complete or the peer leaves."""
        h1 = self.h1
        if self.dead:
            return _disconnect()
        while not h1.request_done:
            event = h1.next_event()
            if type(event) is Body:
                return {"type": "http.request", "body": event.data, "more_body": event.more}
            if event is NEED_DATA:
                go_on = h1.continue_bytes()
                if go_on:
                    await self.write(go_on)
                await self.read()
                continue
            if type(event) is Reject:  # a bad chunk, or the peer closed mid-body
                logger.info("closed a connection: %s", event.reason)
                if not h1.response_started:
                    self.write_nowait(event.data)
            self.gone()
            return _disconnect()
        if h1.response_done:
            return _disconnect()
        # the wait's waker (see wake): on trio notify_closing, which needs no cancel scope per wait
        if self.server.on_trio:
            waiter: Any = _NOTIFY
            scope: contextlib.AbstractContextManager[Any] = _NO_SCOPE
        else:
            waiter = scope = anyio.CancelScope()
        sock = self.sock
        waits, watch = self.server.waits, self.server.watch
        fd = sock.fileno()
        room = self.server.limits.max_http_head_bytes  # bytes of a pipelined request kept meanwhile
        self.waiter = waiter
        try:
            with scope:
                while not (self.dead or h1.response_done or self.wait_ended):
                    if room <= 0:
                        paused = self.paused = anyio.Event()
                        await paused.wait()  # read no more: the end of the response wakes this
                        continue
                    # Wait, then read: the client sends nothing more while its response goes on, mostly, and a
                    # read that raises (BlockingIOError) would give this frame a frame object for its traceback,
                    # kept while the response waits (~290 bytes).
                    try:
                        if watch is not None:  # trio on Linux: the server's own epoll (ReadinessWatch: ~0.6 KB less)
                            await watch.readable(fd)
                        else:
                            await waits.readable(sock)
                    except waits.closed:  # woken by notify_closing (trio's own wait): the loop sees why
                        continue
                    if self.dead or h1.response_done or self.wait_ended:  # woken by wake
                        break
                    try:
                        data = sock.recv(min(_READ, room))
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        self.gone()
                        break
                    room -= len(data)
                    h1.receive_data(data)  # the next request, pipelined: kept until this one ends
        finally:
            self.waiter = None
            ended, self.wait_ended = self.wait_ended, False
        if ended and not (self.dead or h1.response_done):
            return {"type": RECEIVE_ENDED}
        return _disconnect()

    def end_receive(self) -> None:
        """The ``minimcp.end_receive`` extension: end a ``receive()`` that waits for the end of the response
        (the app no longer needs it: it stops reading this response); that ``receive()`` returns
        ``{"type": RECEIVE_ENDED}``. Without such a wait under way, nothing."""
        if self.waiter is not None:
            self.wait_ended = True
            self.wake()

    def park(self, on_end: Callable[[bool], object]) -> bool:
        """The ``minimcp.park`` extension: the app hands the open response to the server and returns at once.

        For a response that only waits for its end, written by other tasks (``send_now``, ``send``), or
        for its client to leave: instead of a task waiting in ``receive()``, the connection keeps no task
        meanwhile (its socket is watched by the server's :class:`ReadinessWatch`; the app's call, and the
        connection's task, end). ``on_end(disconnected)`` is called once, in a task of the server, when the
        response is complete (``False``) or the client left, a write failed or the server stopped
        (``True``); the connection then goes on (the next request) or closes. Offered on trio on Linux;
        False (nothing changes: wait in ``receive()``) when the response is over already, the request
        still has a body to read, a write waits, or the server is stopping (its stop ends the responses
        parked before it; one parked later would be missed).
        """
        watch = self.server.watch
        if (
            watch is None or self.parked is not None or self.dead or self.h1.response_done or self.waiting_write
            or self.waiter is not None or self.server.stopping or not self.h1.body_over()
        ):
            return False
        self.room = self.server.limits.max_http_head_bytes  # bytes of a pipelined request kept meanwhile
        if not watch.call_when_readable(self.sock.fileno(), self._readable):
            return False
        self.parked = on_end
        self.parks += 1
        return True

    def _readable(self) -> None:
        """The parked connection's socket is readable (in the watch's task): the client left, or pipelines."""
        if self.parked is None:
            return
        sock = self.sock
        try:
            data: bytes | None = sock.recv(min(_READ, self.room))
        except BlockingIOError:
            data = None
        except OSError:
            data = b""
        if data is not None:
            if not data:
                self.gone()
                self.wake()
                return
            self.room -= len(data)
            self.h1.receive_data(data)  # the next request, pipelined: kept until this one ends
        # (more to come; at the bound the socket is left alone until the response ends)
        watch = self.server.watch
        if self.room > 0 and watch is not None:
            try:
                watched = watch.call_when_readable(sock.fileno(), self._readable)
            except (OSError, ValueError):  # (never expected: this runs in the watch's task, which must not fail)
                watched = False
            if not watched:  # the watch has ended (the server stops)
                self.gone()
                self.wake()

    def unpark(self) -> Callable[[bool], object]:
        """Take a parked response back from the watch (it ended, or the server stops): returns its ``on_end``."""
        on_end, self.parked = self.parked, None
        watch = self.server.watch
        assert on_end is not None and watch is not None
        watch.drop(self.sock.fileno(), self._readable)
        return on_end

    def wake(self) -> None:
        """End the wait of a ``receive()`` for the end of the response (it ended, or the connection died).

        On trio no cancel scope per wait: on Linux the server's :class:`ReadinessWatch` wakes it; elsewhere
        ``notify_closing`` ends its ``wait_readable`` (trio's waits on a socket belong to the run, not to a
        task, so any task can end one), which wakes a write waiting for room on the socket too (end_receive
        comes while the response goes on): that write waits again."""
        if self.parked is not None:
            self.server.resume(self, self.unpark())
            return
        waiter = self.waiter
        if waiter is _NOTIFY:
            watch = self.server.watch
            if watch is None or not watch.wake(self.sock.fileno()):  # (none waits there: trio's own wait)
                anyio.notify_closing(self.sock)
        elif isinstance(waiter, anyio.CancelScope):
            waiter.cancel()
        paused = self.paused
        if paused is not None:
            self.paused = None
            paused.set()

    async def send(self, message: Any) -> None:
        """ASGI ``send``; returns without suspending when the kernel takes the bytes at once.

        Raises:
            OSError: the client is gone (ASGI 2.4), or an earlier write failed or was cancelled.
            RuntimeError: a message out of order.
        """
        h1 = self.h1
        kind = message["type"]
        if kind == "http.response.start":
            h1.response_start(message["status"], list(message.get("headers", ())))
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if self.dead:
            raise OSError("the client went away")
        data = h1.response_body(message.get("body", b""), message.get("more_body", False))
        try:
            if self.backlog:  # after what send_now left: in order, behind it
                self.queue(data)
                await self.flushed()
                if self.dead:
                    raise OSError("the client went away")
            elif data:
                await self.write(data)
        finally:
            if h1.response_done or self.dead:
                self.wake()

    def send_now(self, message: Any) -> None:
        """The ``minimcp.send_now`` extension: an ``http.response.body`` framed and written without suspending.

        What the kernel does not take at once stays in :attr:`backlog` (at most ``stream_buffer_bytes``:
        beyond, the client is treated as gone), written by a task of the server under ``stream_write_timeout``
        (:meth:`_write_backlog`); a later :meth:`send` waits behind it. The connection's next request, or its
        close, waits for it too.

        Raises:
            OSError: the client is gone (or the backlog passed its bound).
            RuntimeError: a message out of order.
        """
        if message["type"] != "http.response.body":
            raise RuntimeError(f"send_now takes http.response.body, not {message['type']!r}")
        if self.waiting_write:
            raise RuntimeError("send_now while a send waits for the socket (one write at a time)")
        if self.dead:
            raise OSError("the client went away")
        h1 = self.h1
        data = h1.response_body(message.get("body", b""), message.get("more_body", False))
        try:
            if self.backlog:
                self.queue(data)
            elif data:
                sent = self.send_at_once(data)
                if sent < len(data):
                    self.queue(memoryview(data)[sent:])
        finally:
            if h1.response_done or self.dead:
                self.wake()

    def queue(self, data: bytes | memoryview) -> None:
        """Put ``data`` behind the backlog (the writer task starts with the first bytes).

        Raises:
            OSError: the backlog would pass ``stream_buffer_bytes`` (the client is treated as gone).
        """
        backlog = self.backlog
        limit = self.server.limits.stream_buffer_bytes
        if len(backlog) + len(data) > limit:
            logger.info("closed a connection: its client left more than %d bytes of a response unread", limit)
            self.gone()
            raise OSError("the client does not read (stream_buffer_bytes)")
        backlog += data
        if self.writer is None and backlog:
            self.writer = anyio.CancelScope()
            self.server.start_soon(self._write_backlog, self.writer)

    async def _write_backlog(self, scope: anyio.CancelScope) -> None:
        """Write the backlog; a client that takes nothing for ``stream_write_timeout`` is gone."""
        sock, backlog = self.sock, self.backlog
        waits = self.server.waits
        timeout = self.server.limits.stream_write_timeout
        try:
            with scope:
                scope.deadline = anyio.current_time() + timeout
                while backlog and not self.dead:
                    try:
                        await waits.writable(sock)
                    except waits.closed:  # notify_closing (wake, or the close): the loop sees why
                        continue
                    try:
                        sent = sock.send(backlog)
                    except BlockingIOError:
                        continue
                    del backlog[:sent]
                    scope.deadline = anyio.current_time() + timeout
            if scope.cancelled_caught and backlog and not self.dead:
                logger.info("closed a connection: its client read nothing for %g s", timeout)
        except Exception as exc:  # OSError: the client left (nothing here may end the server's task group)
            logger.debug("closed a connection: a write failed (%r)", exc)
        finally:
            self.writer = None
            if backlog:  # not all written: never reused half-written
                backlog.clear()
                self.gone()
            drained = self.drained
            if drained is not None:
                self.drained = None
                drained.set()
            if self.dead or self.h1.response_done:
                self.wake()

    async def flushed(self) -> None:
        """Wait until the backlog is written (or dropped: then the connection is dead).

        A wait cancelled meanwhile (the app's write deadline) leaves the connection dead: bytes behind it
        would be out of order."""
        while self.writer is not None:
            drained = self.drained = self.drained or anyio.Event()
            try:
                await drained.wait()
            except BaseException:
                self.gone()
                raise

    def send_at_once(self, data: bytes) -> int:
        """How many bytes of ``data`` the kernel takes now (0 when it has no room).

        Raises:
            OSError: the client is gone (the connection is dead from now on).
        """
        try:
            return self.sock.send(data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            self.gone()
            raise OSError(f"the client went away ({exc})") from exc

    async def write(self, data: bytes) -> None:
        """All of ``data``, or the connection is dead (cancelled, failed) and this raises."""
        sock = self.sock
        sent = self.send_at_once(data)
        if sent == len(data):
            return
        view = memoryview(data)[sent:]
        waits = self.server.waits
        self.waiting_write = True
        try:
            while view:
                try:
                    await waits.writable(sock)
                except waits.closed:  # notify_closing: wake (end_receive), or the connection's close
                    if self.dead:
                        raise OSError("the connection closed") from None
                    continue
                try:
                    view = view[sock.send(view) :]
                except BlockingIOError:
                    continue
        except OSError as exc:
            self.gone()
            raise OSError(f"the client went away ({exc})") from exc
        finally:
            self.waiting_write = False
            if view:  # cancelled (a stalled client) or failed: never reused half-written
                self.gone()

    def write_nowait(self, data: bytes) -> None:
        """What the kernel takes of ``data`` now (an error response before a close)."""
        with contextlib.suppress(OSError):
            self.sock.send(data)

    def gone(self) -> None:
        """The peer left, or a write failed: the connection closes when its request ends."""
        self.dead = True
        self.h1.close_after_response()
        writer = self.writer
        if writer is not None:
            writer.cancel()


class H1Server:
    """Serves one ASGI app on listening sockets (see the module's docstring): :meth:`serve` until ``stop``."""

    waits: SocketWaits  # the backend's own waits on a socket (set by serve(): connections exist only meanwhile)

    def __init__(self, app: Any, limits: Limits, *, use_watch: bool = True) -> None:
        self.app = app
        self.limits = limits
        self.connections: set[_Connection] = set()
        self.stopping = False
        self.on_trio = False  # set by serve(): a response's wait is woken by notify_closing (_Connection.wake)
        # trio on Linux: what a response's wait for its client to leave waits in (set by serve(); see wake)
        self.watch: ReadinessWatch | None = None
        self._use_watch = use_watch
        self._emptied: anyio.Event | None = None
        # serve()'s task group of the backend's own (trio: a nursery): the connections and backlog writers run in it
        self._tasks: Any = None
        self.new_scope: Callable[[], Any] = anyio.CancelScope  # a connection's (serve(): the backend's own class)
        self._refusal = error_response(503, b"too many connections; try again later\n")

    async def serve(
        self,
        sock: socket.socket,
        stop: anyio.Event,
        graceful_timeout: float,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve connections from the listening ``sock`` (non-blocking, not closed here) until ``stop`` is set."""
        self.on_trio = backend_name() == "trio"
        self.waits = native_socket_waits()
        self.new_scope = native_cancel_scope_class()
        self.watch = readiness_watch() if self._use_watch else None
        async with anyio.create_task_group() as tg, native_task_group() as tasks:
            self._tasks = tasks
            accepting = anyio.CancelScope()
            tg.start_soon(self._accept, sock, accepting)
            tg.start_soon(self._reap)
            if self.watch is not None:
                tg.start_soon(self.watch.run)
            task_status.started()
            await stop.wait()
            accepting.cancel()
            self.stopping = True
            for conn in list(self.connections):
                if conn.deadline is not None:  # idle, or its head not yet whole
                    conn.scope.cancel()
            with anyio.move_on_after(graceful_timeout):
                while self.connections:
                    emptied = self._emptied = anyio.Event()
                    await emptied.wait()
            if self.connections:
                logger.info("stopped %d HTTP requests still under way after %g s", len(self.connections),
                            graceful_timeout)
            for conn in list(self.connections):
                if conn.parked is not None:  # no task to cancel: ended here
                    conn.gone()
                    self._ended(conn.unpark(), conn)
                    self._close(conn)
            tg.cancel_scope.cancel()

    def start_soon(self, func: Any, *args: Any) -> None:
        """Start a task of the server (a connection, a parked response's continuation, a backlog writer)."""
        assert self._tasks is not None  # (connections exist only while serve runs)
        self._tasks.start_soon(func, *args)

    async def _accept(self, sock: socket.socket, scope: anyio.CancelScope) -> None:
        limit = self.limits.max_http_connections
        burst = 0  # connections accepted since this task last let the others run
        with scope:
            while True:
                if burst >= _ACCEPTS:
                    burst = 0
                    await anyio.lowlevel.checkpoint()  # a flood of connects does not starve the others
                try:
                    conn_sock, client = sock.accept()
                except BlockingIOError:
                    conn_sock = None  # (waited below, not inside ``except``)
                except OSError as exc:  # out of file descriptors, or a connection reset in the backlog
                    logger.warning("could not accept a connection: %s", exc)
                    await anyio.sleep(0.05)
                    continue
                if conn_sock is None:
                    burst = 0
                    await self.waits.readable(sock)
                    continue
                conn_sock.setblocking(False)
                if len(self.connections) >= limit:
                    logger.warning("closed a new connection: %d are open (limit %d)", len(self.connections), limit)
                    with contextlib.suppress(OSError):
                        conn_sock.send(self._refusal)
                    conn_sock.close()
                    burst += 1
                    continue
                if conn_sock.family != socket.AF_UNIX:
                    conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    client = tuple(client[:2])
                else:
                    client = None
                conn = _Connection(self, conn_sock, client)
                self.connections.add(conn)
                self.start_soon(self._connection, conn)
                burst += 1

    async def _reap(self) -> None:
        """Close connections whose head did not come in time (one pass a tenth of the header timeout)."""
        timeout = self.limits.http_header_timeout
        tick = max(0.01, min(1.0, timeout / 10))
        while True:
            await anyio.sleep(tick)
            now = anyio.current_time()
            for conn in self.connections:
                deadline = conn.deadline
                if deadline is not None and deadline <= now:
                    conn.deadline = None
                    logger.info("closed a connection whose request headers did not arrive within %g s", timeout)
                    conn.scope.cancel()

    async def _connection(self, conn: _Connection, resumed: bool = False) -> None:
        """The connection's task: its requests until it closes, or until a response is parked (then a new
        task goes on when that response ends: ``resumed``)."""
        parks = conn.parks
        try:
            with conn.scope:
                await self._requests(conn, resumed)
        except Exception:
            logger.exception("HTTP connection failed")
        finally:
            if conn.parks == parks:  # (else handed over: the watch holds it, or a resumed task goes on with it)
                self._close(conn)

    def _close(self, conn: _Connection) -> None:
        self.connections.discard(conn)
        conn.gone()  # a backlog writer still running ends
        sock = conn.sock
        conn.wake()  # a receive() of another task still waiting for the response's end (it sees dead)
        anyio.notify_closing(sock)
        sock.close()
        emptied = self._emptied
        if emptied is not None and not self.connections:
            emptied.set()

    def resume(self, conn: _Connection, on_end: Callable[[bool], object]) -> None:
        """A parked response ended (complete, or the connection died): in a new task of the server the app's
        ``on_end`` is called and the connection goes on (the next request, or its close)."""
        conn.scope = self.new_scope()  # (a trio cancel scope is entered once)
        self.start_soon(self._resumed, conn, on_end)

    async def _resumed(self, conn: _Connection, on_end: Callable[[bool], object]) -> None:
        self._ended(on_end, conn)
        del on_end  # (the app's: not held while the connection goes on, idle between requests)
        await self._connection(conn, resumed=True)

    @staticmethod
    def _ended(on_end: Callable[[bool], object], conn: _Connection) -> None:
        try:
            on_end(conn.dead or not conn.h1.response_done)
        except Exception:
            logger.exception("exception in the ASGI application (the end of a parked response)")

    async def _requests(self, conn: _Connection, resumed: bool = False) -> None:
        """The connection's requests, one after another, until it closes or a response is parked
        (``resumed``: go on after that response)."""
        h1 = conn.h1
        timeout = self.limits.http_header_timeout
        if resumed and not await self._next_request(conn):
            return
        conn.deadline = anyio.current_time() + timeout
        server = None
        ended = False  # the peer closed its side
        while True:
            event = h1.next_event()
            if event is NEED_DATA:
                ended = not await conn.read()  # at the end h11 reports CLOSED next, or a Reject for a half head
                continue
            if type(event) is Head:
                conn.deadline = None
                if server is None:
                    server = _sockname(conn.sock)
                if await self._request(conn, event, server) or not await self._next_request(conn):
                    return
                conn.deadline = anyio.current_time() + timeout
                continue
            if type(event) is Reject and not ended:
                logger.info("answered %d and closed the connection: %s", event.status, event.reason)
                conn.write_nowait(event.data)
            return  # CLOSED (PAUSED and Body come only after a head)

    async def _next_request(self, conn: _Connection) -> bool:
        """After a response: whether the connection serves another request (then its cycle has begun)."""
        await conn.flushed()  # what send_now left is written before the next request or the close
        if conn.dead or self.stopping or not self._drain(conn.h1):
            return False
        conn.h1.next_cycle()
        return True

    async def _request(self, conn: _Connection, head: Head, server: Any) -> bool:
        """One request's app call; True if the app parked its response (the connection is no longer this task's:
        the watch holds it, or, when that response has ended already, a resumed task goes on with it)."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": head.http_version,
            "method": head.method,
            "scheme": "http",
            "path": head.path,
            "raw_path": head.raw_path,
            "query_string": head.query_string,
            "root_path": "",
            "headers": head.headers,
            "client": conn.client,
            "server": server,
            "extensions": {SEND_NOW: conn.send_now, END_RECEIVE: conn.end_receive},
        }
        if self.watch is not None:
            scope["extensions"][PARK] = conn.park
        h1 = conn.h1
        if self.stopping:
            h1.close_after_response()
        parks = conn.parks
        try:
            await self.app(scope, conn.receive, conn.send)
        except Exception:
            logger.exception("exception in the ASGI application")
            if conn.parks != parks:  # its response was parked: it is not this call's
                return True
            if not h1.response_started and not conn.dead:
                h1.close_after_response()
                h1.response_start(500, [(b"content-type", b"text/plain; charset=utf-8")])
                with contextlib.suppress(OSError):
                    await conn.send({"type": "http.response.body", "body": b"Internal Server Error\n"})
            conn.gone()
            return False
        if conn.parks != parks:  # the response goes on, with no task (see _Connection.park)
            return True
        if not h1.response_done:  # the app returned without (ending) a response
            if h1.response_started or conn.dead:
                conn.gone()
                return False
            logger.error("the ASGI application returned without a response")
            h1.close_after_response()
            h1.response_start(500, [])
            await conn.send({"type": "http.response.body", "body": b""})
            conn.gone()
        return False

    @staticmethod
    def _drain(h1: H1Connection) -> bool:
        """Whether the connection can serve another request: the rest of this one's body, if it is
        buffered already, is dropped (a GET's end, mostly); one still to come closes the connection."""
        while not h1.request_done:
            event = h1.next_event()
            if type(event) is not Body:
                return False
        return h1.reusable


def _sockname(sock: socket.socket) -> Any:
    try:
        name = sock.getsockname()
    except OSError:
        return None
    return tuple(name[:2]) if isinstance(name, tuple) else None


async def run_h1(
    app: Any,
    sock: socket.socket,
    stop: anyio.Event,
    graceful_timeout: float,
    task_status: anyio.abc.TaskStatus[None],
    limits: Limits,
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set (``run_asgi(..., asgi_server="minimcp")``)."""
    await H1Server(app, limits).serve(sock, stop, graceful_timeout, task_status)
