"""One peer of one connection: routing, the pending table, timeouts, cancellation.

Theory of operation
-------------------
A :class:`Session` owns a task group. Inside it run the *read loop* and one
*timer* task; each inbound request gets a task of its own.

* The read loop only routes. It decodes a message and either resolves a
  pending entry (a response), starts a handler task (a request), or handles a
  notification at once. It never awaits a handler, so a handler that waits for
  an answer from the peer (a nested ``elicitation/create``) never blocks the
  reading of that answer.
* The pending table maps each id we sent to a one-shot cell. Every entry is
  resolved exactly once -- by a result, an error response, its timeout, a
  local cancellation, or the end of the connection -- and every one of those
  paths removes it. A response with an unknown or already-resolved id is
  dropped and counted.
* The pending table (:mod:`minimcp.pending`) holds the deadlines too.
  Timeouts cost no task and no cancel scope per request: FIFO lanes of equal
  timeouts plus one heap (:mod:`minimcp.deadlines`), served by the single
  timer task.
* Backend specifics (the one-shot cells, the bare handler tasks) live in
  :mod:`minimcp._backend`; this module is anyio code.
* ``notifications/cancelled`` from the peer cancels that request's handler;
  no response is sent for it. When a waiter of ours is cancelled (the handler
  it runs in was cancelled, say), the peer is told with
  ``notifications/cancelled`` for our pending request -- so cancelling a tool
  call cascades to the question it was asking.
* When the connection ends, every pending entry resolves with
  :class:`~minimcp.errors.ConnectionClosed` and every handler is cancelled.
  Afterwards the session holds nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, TypeVar, overload

import anyio
import msgspec

from minimcp import _backend, errors, jsonrpc
from minimcp._backend import AsyncioCell, Cell, Handlers, new_cell
from minimcp.config import Limits
from minimcp.dispatch import Deferred, Dispatcher, error_reply
from minimcp.errors import ConnectionClosed, McpError, RequestTimeout, TooManyPending
from minimcp.jsonrpc import ErrorResponse, Notification, Request, RequestId, Response
from minimcp.pending import PendingBudget, PendingTable, ProgressWatch
from minimcp.trace import WireTrace
from minimcp.transports import MessageTooLarge, Transport
from minimcp.types import CancelledParams, ProgressParams
from minimcp.versions import Feature, supports

__all__ = [
    "DEFAULT",
    "Default",
    "Deferred",
    "Dispatcher",
    "PendingBudget",
    "ProgressWatch",
    "Session",
    "SessionStats",
    "Timeout",
    "decode_result",
]

logger = logging.getLogger("minimcp.session")
T = TypeVar("T")


class Default(enum.Enum):
    """The type of :data:`DEFAULT`: "use the session's default" (for ``timeout=``)."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


#: A ``timeout=`` argument: seconds, ``None`` (no timeout) or :data:`DEFAULT`.
Timeout = float | None | Literal[Default.DEFAULT]

#: "Use the session's default" (for ``timeout=``), as opposed to ``None`` (no timeout).
#: Typed ``Any`` for the signatures still spelled ``timeout: float | None = DEFAULT``
#: (client.py, context.py); once they say ``Timeout``, this becomes ``Final``.
DEFAULT: Any = Default.DEFAULT


@dataclasses.dataclass(slots=True)
class SessionStats:
    """Counters of one session (cheap: plain integer increments)."""

    requests_sent: int = 0
    requests_received: int = 0
    notifications_received: int = 0
    responses_received: int = 0
    unknown_responses: int = 0
    timeouts: int = 0
    cancelled_by_us: int = 0
    cancelled_by_peer: int = 0
    invalid_messages: int = 0
    rejected_busy: int = 0


_EMPTY: dict[str, Any] = {}
# Messages the read loop takes in a row without yielding to the handlers it started, and how
# often it yields, at most, while every in-flight slot is taken before refusing a request.
_DRAIN_TURN = 64
_FULL_TRIES = 8


def _cancelled(id_: RequestId, reason: str) -> bytes:
    return jsonrpc.encode_notification("notifications/cancelled", CancelledParams(request_id=id_, reason=reason))


def decode_result(method: str, raw: msgspec.Raw, result_type: type[T]) -> T:
    """A response's raw result, decoded into ``result_type``.

    Raises:
        McpError: ``-32602`` naming the method and the problem (a result of the wrong shape,
            bytes that are not valid UTF-8).
    """
    try:
        return jsonrpc.decoder_for(result_type).decode(raw)  # type: ignore[no-any-return]
    except msgspec.DecodeError as exc:
        raise McpError(errors.INVALID_PARAMS, f"invalid {method} result from peer: {exc}") from None


class Session:
    """Drives one connection: run :meth:`run` in a task, use :meth:`request` / :meth:`notify`.

    Args:
        transport: The message pipe.
        dispatcher: The role handling inbound requests and notifications.
        limits: Bounds and default timeouts.
        name: A label for logs.
    """

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        limits: Limits | None = None,
        name: str = "session",
        budget: PendingBudget | None = None,
    ) -> None:
        self.transport = transport
        self._send_nowait: Callable[..., bool] | None = getattr(transport, "send_nowait", None)
        self.dispatcher = dispatcher
        self.limits = limits or Limits()
        self.name = name
        #: Pending requests across every session sharing this budget (one server's).
        self.budget = budget if budget is not None else PendingBudget(self.limits.max_pending_total)
        self.stats = SessionStats()
        #: Negotiated protocol revision, set by the role after the handshake.
        self.protocol_version: str | None = None
        self._pending: PendingTable[Cell] = PendingTable(self.budget)
        # In-flight inbound handlers: their handles (.cancel()) from _backend.Handlers.
        self._inflight: dict[RequestId, Any] = {}
        self._handlers: Handlers | None = None
        self._loop: Any = None  # the asyncio loop (its clock, its cells); None on trio
        # Outbound ids start at 1: some hosts (the TypeScript SDK) test a cancelled request's
        # id for truthiness and would ignore a notifications/cancelled for id 0.
        self._next_id = 1
        self._timer_wake = anyio.Event()
        self._human_waits = 0
        self._initialize_id: RequestId | None = None
        #: Answer ``ping`` in the read loop (the modern revision has no ping: then it is dispatched).
        self.answer_ping = True
        #: Opt-in wire trace (see :class:`minimcp.trace.WireTrace`); ``None``: off.
        self.trace: WireTrace | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed = False
        self._finished = anyio.Event()
        self._close_reason: str | None = None

    # --- public state ------------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """Requests we sent that still await a response."""
        return len(self._pending)

    @property
    def inflight_count(self) -> int:
        """Requests from the peer whose handlers are running."""
        return len(self._inflight)

    @property
    def closed(self) -> bool:
        """Whether the session has ended (or is ending)."""
        return self._closed

    def holds_nothing(self) -> bool:
        """True when no pending entry, handler, or deadline is left (after close)."""
        return not self._pending and not self._inflight

    # --- running -----------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve the connection until it ends or :meth:`close` is called."""
        self._loop = _backend.running_loop()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._timer_loop)
                task_status.started()
                try:
                    # Handler tasks are owned by this block: on leaving it, pending requests
                    # end (before the handlers see their cancellation), then every handler is
                    # cancelled and awaited.
                    async with Handlers(self._inflight, self._close_pending) as self._handlers:
                        await self._read_loop()
                finally:
                    self._handlers = None
                    self._close_pending()
                    tg.cancel_scope.cancel()
        finally:
            self._close_pending()
            self._tg = None
            with anyio.CancelScope(shield=True):
                try:
                    await self.transport.aclose()
                except Exception:  # pragma: no cover - a transport failing to close is only logged
                    logger.debug("%s: transport close failed", self.name, exc_info=True)
            self._finished.set()

    def now(self) -> float:
        """The event loop's clock (``loop.time`` on asyncio: cheaper than ``anyio.current_time``)."""
        loop = self._loop
        return loop.time() if loop is not None else anyio.current_time()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the session's task group (cancelled when the session ends).

        Raises:
            ConnectionClosed: the session is not running.
        """
        if self._tg is None or self._closed:
            raise ConnectionClosed()
        self._tg.start_soon(fn, *args)

    def close(self) -> None:
        """End the session: pending requests fail with ConnectionClosed, handlers are cancelled."""
        self._close_pending()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def wait_closed(self) -> None:
        """Wait until :meth:`run` has finished."""
        await self._finished.wait()

    def _close_pending(self) -> None:
        self._closed = True
        if self._pending:
            reason = self._close_reason or "connection closed"
            for cell in self._pending.close():
                cell.settle(None, ConnectionClosed(f"{reason} while waiting for {cell.method}"))
        # Handlers are cancelled as the session's run ends; they are cancelled here too in
        # case close() runs before that.
        for handle in self._inflight.values():
            handle.cancel()

    # --- outbound ----------------------------------------------------------------------------

    async def send_raw(self, message: bytes, *, related: RequestId | None = None) -> None:
        """Send an already encoded message (raises ConnectionClosed if the pipe is gone)."""
        if self._closed:
            raise ConnectionClosed()
        if self.trace is not None:
            self.trace.record(self.name, "send", message, related=related, origin=self)
        try:
            await self.transport.send(message, related=related)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise ConnectionClosed() from exc

    def _sent_now(self, message: bytes, related: RequestId | None) -> bool:
        """Hand the message to the transport without waiting, if it can take it now.

        ``False`` (nothing sent): use :meth:`send_raw`, which waits for room or says why not.
        """
        nowait = self._send_nowait
        if nowait is None or self._closed or not nowait(message, related=related):
            return False
        if self.trace is not None:
            self.trace.record(self.name, "send", message, related=related, origin=self)
        return True

    async def notify(self, method: str, params: Any = msgspec.UNSET, *, related: RequestId | None = None) -> None:
        """Send a notification."""
        await self.send_raw(jsonrpc.encode_notification(method, params), related=related)

    @overload
    async def request(
        self,
        method: str,
        params: Any = ...,
        *,
        result_type: type[T],
        timeout: Timeout = ...,
        related: RequestId | None = ...,
        progress: ProgressWatch | None = ...,
    ) -> T: ...

    @overload
    async def request(
        self,
        method: str,
        params: Any = ...,
        *,
        result_type: None = ...,
        timeout: Timeout = ...,
        related: RequestId | None = ...,
        progress: ProgressWatch | None = ...,
    ) -> msgspec.Raw: ...

    async def request(
        self,
        method: str,
        params: Any = msgspec.UNSET,
        *,
        result_type: type[T] | None = None,
        timeout: Timeout = Default.DEFAULT,
        related: RequestId | None = None,
        progress: ProgressWatch | None = None,
    ) -> T | msgspec.Raw:
        """Send a request and wait for its response.

        Args:
            method: The method name.
            params: A Struct or dict, encoded as the ``params`` object.
            result_type: Decode the result into this type (raw JSON when ``None``).
            timeout: Seconds to wait; ``None`` for no limit; default
                ``limits.request_timeout``.
            related: The inbound request this one is nested in (for routing).
            progress: Route ``notifications/progress`` carrying ``progress.token``
                to its callback (put the same token in the params' ``_meta``), and
                optionally push the deadline back on each one (up to
                ``limits.max_request_time`` in total).

        Raises:
            McpError: the peer answered with an error (its code and message).
            RequestTimeout: no answer in time; the peer was sent ``notifications/cancelled``.
            TooManyPending: the session's pending table is full.
            ConnectionClosed: the connection ended first.
        """
        raw = await self.start_request(method, params, timeout=timeout, related=related, progress=progress)
        if result_type is None:
            return raw
        return decode_result(method, raw, result_type)

    def start_request(
        self,
        method: str,
        params: Any = msgspec.UNSET,
        *,
        timeout: Timeout = Default.DEFAULT,
        related: RequestId | None = None,
        progress: ProgressWatch | None = None,
    ) -> Awaitable[msgspec.Raw]:
        """:meth:`request` without its decoding: returns what to await for the raw result
        (decode it with :func:`decode_result`).

        The request is sent at once when the transport has room (else once the returned
        awaitable is awaited). On asyncio the awaitable is then the pending entry's own
        future: no coroutine waits beside it. Cancelling the awaiting task (or the future)
        ends the request and tells the peer, as with :meth:`request`. What :meth:`request`
        raises before sending (a full table, a closed session, params that cannot be
        encoded) is raised at once, with nothing left behind.
        """
        cell, data = self._open(method, params, timeout, related, progress)
        if type(cell) is AsyncioCell and self._sent_now(data, related):
            cell.sink = self  # nobody else sees it being given up on (AsyncioCell.cancel)
            return cell
        return self._send_and_wait(cell, data, related)

    def _open(
        self, method: str, params: Any, timeout: Timeout, related: RequestId | None,
        progress: ProgressWatch | None,
    ) -> tuple[Cell, bytes]:
        """A new pending entry (checked against the bounds first), with its deadline, and the
        encoded request (encoded before anything is registered)."""
        if self._closed:
            raise ConnectionClosed()
        if len(self._pending) >= self.limits.max_pending_outbound:
            raise TooManyPending(self.limits.max_pending_outbound)
        budget = self.budget
        if budget.used >= budget.limit:
            raise TooManyPending(budget.limit)
        id_ = self._next_id
        data = jsonrpc.encode_request(id_, method, params)
        self._next_id += 1
        cell = new_cell(self._loop)
        cell.id = id_
        cell.method = method
        cell.related = related
        cell.progress = None
        cell.sending = False
        if timeout is Default.DEFAULT:
            timeout = self.limits.request_timeout
        if self._pending.open(cell, self.now() if timeout is not None else 0.0, timeout):
            self._timer_wake.set()
        self.stats.requests_sent += 1
        if progress is not None:
            self._pending.watch(cell, progress)
        return cell, data

    async def _send_and_wait(self, cell: Cell, data: bytes, related: RequestId | None) -> msgspec.Raw:
        try:
            if not self._sent_now(data, related):
                cell.sending = True
                try:
                    await self.send_raw(data, related=related)
                finally:
                    cell.sending = False
                if not self._pending.holds(cell) and not self._closed:
                    # It timed out while waiting for room: the peer hears of it only now, after
                    # the request itself (no answer can have come before the request went out).
                    reason = str(RequestTimeout(cell.method, cell.timeout))
                    await self._send_quietly(_cancelled(cell.id, reason), related)
            if type(cell) is AsyncioCell:
                return await cell  # the future itself: no coroutine of the cell's own
            return await cell.wait()
        except BaseException:
            if type(cell) is AsyncioCell and cell.done() and not cell.cancelled():
                cell.exception()  # it ended (timeout, close) while still being sent: nobody awaits it now
            cancelled = self._abandon(cell)  # nothing, if the request had already ended
            if cancelled is not None and not self._sent_now(cancelled, related):
                with anyio.CancelScope(shield=True):
                    await self._send_within(cancelled, related, self.limits.notice_timeout)
            raise

    def _abandon(self, cell: Cell) -> bytes | None:
        """The requester gave up (cancelled, or the send failed): forget the entry; returns the
        ``notifications/cancelled`` to send, or ``None`` if the request had already ended."""
        if not self._pending.abandon(cell):
            return None
        self.stats.cancelled_by_us += 1
        if self._closed:
            return None
        return _cancelled(cell.id, "cancelled by the requester")

    def cell_abandoned(self, cell: Cell) -> None:
        """The awaiter of a cell handed out by :meth:`start_request` was cancelled (see
        :class:`minimcp._backend.AbandonSink`): forget it and tell the peer."""
        self._send_soon(self._abandon(cell), cell.related)

    def _send_soon(self, message: bytes | None, related: RequestId | None) -> None:
        """Send without awaiting: now if the transport takes it, else from a task (``limits.notice_timeout``)."""
        if message is not None and not self._sent_now(message, related) and self._tg is not None:
            self._tg.start_soon(self._send_within, message, related, self.limits.notice_timeout)

    async def _send_within(self, message: bytes, related: RequestId | None, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._send_quietly(message, related)

    # --- deadlines ---------------------------------------------------------------------------

    def begin_human_wait(self) -> None:
        """A person is answering a question of the peer's: pause our request clocks.

        While any such wait is open, timeouts of our pending requests are pushed
        back instead of firing (up to ``limits.max_request_time`` in total), so a
        ``tools/call`` does not time out because its tool is waiting on the person.
        """
        self._human_waits += 1

    def end_human_wait(self) -> None:
        """The question was answered (see :meth:`begin_human_wait`)."""
        self._human_waits -= 1

    async def _timer_loop(self) -> None:
        while True:
            delay = self._pending.deadlines.earliest() - self.now()
            if delay > 0:
                with anyio.move_on_after(delay):  # an infinite delay: until woken
                    await self._timer_wake.wait()
            if self._timer_wake.is_set():
                self._timer_wake = anyio.Event()
            self._expire(self.now())

    def _expire(self, now: float) -> None:
        for cell in self._pending.expire(now, self._human_waits > 0, self.limits.max_request_time):
            self.stats.timeouts += 1
            error = RequestTimeout(cell.method, cell.timeout)
            # The peer hears of it before the requester does (and before anything it sends next);
            # a request still waiting for room sends its notice itself, after it (_send_and_wait).
            notice = _cancelled(cell.id, str(error))
            if self._closed or cell.sending or self._sent_now(notice, cell.related) or self._tg is None:
                cell.settle(None, error)
            else:
                self._tg.start_soon(self._time_out, cell, error, notice)

    async def _time_out(self, cell: Cell, error: RequestTimeout, notice: bytes) -> None:
        try:
            await self._send_within(notice, cell.related, self.limits.notice_timeout)
        finally:
            cell.settle(None, error)

    # --- inbound -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        receive = self.transport.receive
        # Messages already there are taken without a coroutine each (the transport's fast path).
        receive_nowait: Callable[[], bytes | None] | None = getattr(self.transport, "receive_nowait", None)
        drained = 0
        while True:
            try:
                data = receive_nowait() if receive_nowait is not None else None
                if data is None:
                    drained = 0
                    data = await receive()
                else:
                    # Let the handlers just started (and the timer) run now and then, and while
                    # every in-flight slot is taken, as long as that frees some (quick handlers).
                    drained += 1
                    if drained >= _DRAIN_TURN:
                        drained = 0
                        await anyio.lowlevel.checkpoint()
                    if len(self._inflight) >= self.limits.max_inflight_inbound:
                        await self._let_handlers_finish()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                logger.debug("%s: connection ended", self.name)
                return
            except ConnectionClosed as exc:
                # The transport knows why the connection is over (an HTTP session the server ended, say).
                logger.debug("%s: connection ended: %s", self.name, exc.message)
                self._close_reason = exc.message
                return
            except MessageTooLarge as exc:
                self.stats.invalid_messages += 1
                await self._send_error(None, errors.INVALID_REQUEST, str(exc))
                continue
            if self.trace is not None:
                self.trace.record(self.name, "receive", data, origin=self)
            try:
                message = jsonrpc.decode(data)
            except jsonrpc.InvalidMessage as exc:
                await self._on_invalid(data, exc)
                continue
            sending = self._route(message)
            if sending is not None:
                await sending

    async def _let_handlers_finish(self) -> None:
        """Every in-flight slot is taken: yield (a few times at most) while that frees some."""
        for _ in range(_FULL_TRIES):
            await anyio.lowlevel.checkpoint()
            if len(self._inflight) < self.limits.max_inflight_inbound:
                return

    async def _on_invalid(self, data: bytes, exc: jsonrpc.InvalidMessage) -> None:
        """A line that is not a JSON-RPC message: a batch (where allowed), or an error answer."""
        if (
            exc.code == errors.INVALID_REQUEST
            and self.protocol_version is not None
            and supports(self.protocol_version, Feature.BATCHES)
            and jsonrpc.is_batch(data)
        ):
            await self._on_batch(data)
            return
        self.stats.invalid_messages += 1
        logger.debug("%s: invalid message: %s", self.name, exc.message)
        await self._send_error(exc.id, exc.code, exc.message)

    async def _on_batch(self, data: bytes) -> None:
        try:
            parts = jsonrpc.decode_batch(data)
        except jsonrpc.InvalidMessage as exc:
            self.stats.invalid_messages += 1
            await self._send_error(exc.id, exc.code, exc.message)
            return
        for part in parts:
            if isinstance(part, jsonrpc.InvalidMessage):
                self.stats.invalid_messages += 1
                await self._send_error(part.id, part.code, part.message)
            elif isinstance(part, Request) and part.method == "initialize":
                await self._send_error(part.id, errors.INVALID_REQUEST, "initialize must not be part of a batch")
            else:
                sending = self._route(part)
                if sending is not None:
                    await sending

    def _route(self, message: jsonrpc.Message) -> Awaitable[None] | None:
        """Route one message without awaiting anything (no coroutine per message on the hot path).

        Returns what is left to send, if anything: the answer to a ``ping``, or the refusal of
        a request that could not be started.
        """
        if type(message) is Response:
            self.stats.responses_received += 1
            self._resolve(message.id, message, None)
        elif type(message) is Request:
            self.stats.requests_received += 1
            if message.method == "ping" and self.answer_ping and not message.params:
                # Answered by the read loop itself: no task, allowed at any time (spec).
                pong = jsonrpc.encode_result(message.id, _EMPTY)
                return None if self._sent_now(pong, message.id) else self._send_quietly(pong, message.id)
            refusal = self._start_handler(message)
            if refusal is not None:
                return self._send_error(message.id, *refusal)
        elif type(message) is Notification:
            self.stats.notifications_received += 1
            if message.method == "notifications/cancelled":
                self._on_cancelled(message)
            elif message.method == "notifications/progress" and self._pending.progress:
                self._on_progress(message)
            else:
                try:
                    self.dispatcher.handle_notification(self, message)
                except Exception:
                    logger.exception("%s: notification handler for %s failed", self.name, message.method)
        else:
            assert type(message) is ErrorResponse
            self.stats.responses_received += 1
            if message.id is None:
                self.stats.unknown_responses += 1
                logger.warning("%s: peer reported an error: %s (%d)", self.name, message.message, message.code)
                return None
            self._resolve(message.id, None, McpError(message.code, message.message, message.data))
        return None

    def _resolve(self, id_: RequestId, response: Response | None, error: McpError | None) -> None:
        cell = self._pending.resolve(id_)
        if cell is None:
            # Unknown, late (after a timeout or cancel), or a duplicate: harmless.
            self.stats.unknown_responses += 1
            logger.debug("%s: dropped a response for unknown id %r", self.name, id_)
            return
        cell.settle(response.result if response is not None else None, error)

    def _on_progress(self, message: Notification) -> None:
        try:
            params = jsonrpc.decode_params(message.params, ProgressParams)
        except McpError:
            return
        watch, sooner = self._pending.progressed(params.progress_token, self.now(), self.limits.max_request_time)
        if watch is None:
            return  # progress for a request that is over: ignored
        if sooner:
            self._timer_wake.set()
        if watch.callback is not None:
            try:
                watch.callback(params)
            except Exception:
                logger.exception("%s: progress callback failed", self.name)

    def _on_cancelled(self, message: Notification) -> None:
        try:
            params = jsonrpc.decode_params(message.params, CancelledParams)
        except McpError:
            return  # malformed cancellations are ignored silently (spec)
        id_ = params.request_id
        if isinstance(id_, msgspec.UnsetType):
            return
        scope = self._inflight.get(id_)
        if scope is None:
            logger.debug("%s: cancellation for unknown request %r ignored", self.name, id_)
            return
        if id_ == self._initialize_id and type(id_) is type(self._initialize_id):
            return  # initialize must not be cancelled; ignore the attempt
        self.stats.cancelled_by_peer += 1
        if Handlers.never_ran(scope):
            # Cancelled before its first step (the request and its cancellation came in one read):
            # its body, which takes the entry out, will never run.
            del self._inflight[id_]
        scope.cancel()

    def _start_handler(self, request: Request) -> tuple[int, str] | None:
        """Start the request's handler task; or the error (code, message) to refuse it with."""
        if request.id in self._inflight:
            return errors.INVALID_REQUEST, f"request id {request.id!r} is already in use"
        if len(self._inflight) >= self.limits.max_inflight_inbound:
            self.stats.rejected_busy += 1
            return (
                errors.SERVER_BUSY,
                f"too many requests in flight (limit {self.limits.max_inflight_inbound}); retry later",
            )
        handlers = self._handlers
        if handlers is None:  # pragma: no cover - the read loop runs inside the handler group
            return None
        if request.method == "initialize":
            self._initialize_id = request.id
        # The request goes only to _serve_bare, which lets go of it while the handler waits.
        self._inflight[request.id] = handlers.start(self._serve_bare(request))
        return None

    async def _serve_bare(self, request: Request) -> None:
        """Answer one request: the whole of a handler task (see :class:`minimcp._backend.Handlers`).

        The steps of :func:`minimcp.dispatch.answer`, inline: awaiting that coroutine here
        would hold one more frame for every request that waits on a person.
        """
        id_, method = request.id, request.method
        try:
            try:
                handling = self.dispatcher.handle_request(self, request)
                # The request (and the raw message bytes its params point into) is not kept
                # alive while the handler waits, perhaps for minutes, on a person.
                del request
                if isinstance(handling, Deferred):  # dispatch.outcome, inlined: no frame of its own
                    try:
                        value = await handling.awaitable
                    except BaseException as exc:
                        result = handling.finish(None, exc)
                    else:
                        result = handling.finish(value, None)
                else:
                    result = await handling
                reply = jsonrpc.encode_result(id_, result)
            except Exception as exc:
                reply = self._error_reply(id_, exc, method)  # (a short call: a smaller frame)
            # Still in flight (and cancellable) until the reply is handed over: replies
            # waiting for room in the output count against max_inflight_inbound.
            if self._loop is None:  # trio: a handler cancelled before it began sends nothing
                await _backend.trio_checkpoint_if_cancelled()
            if not self._sent_now(reply, id_):
                with contextlib.suppress(ConnectionClosed):
                    await self.send_raw(reply, related=id_)
        except _backend.BareTaskCancelled:
            return  # cancelled by the peer (no response, per spec) or by shutdown
        finally:
            self._inflight.pop(id_, None)

    def _error_reply(self, id_: RequestId, exc: Exception, method: str) -> bytes:
        return error_reply(id_, exc, method=method, null_id=self._null_id(), log=logger, label=self.name)

    def _null_id(self) -> bool:
        """Whether an error without an id says ``"id": null`` (revisions before it could be left out)."""
        return self.protocol_version is not None and not supports(self.protocol_version, Feature.ERROR_WITHOUT_ID)

    def _error_bytes(self, id_: RequestId | None, code: int, message: str) -> bytes:
        return jsonrpc.encode_error(id_, code, message, null_id=self._null_id())

    async def _send_error(self, id_: RequestId | None, code: int, message: str) -> None:
        await self._send_quietly(self._error_bytes(id_, code, message), id_)

    async def _send_quietly(self, message: bytes, related: RequestId | None) -> None:
        """Send, where a connection that is already gone needs no further handling."""
        with contextlib.suppress(ConnectionClosed):
            await self.send_raw(message, related=related)
