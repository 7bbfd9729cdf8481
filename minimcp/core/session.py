"""One peer of one connection: the read loop, routing, handler tasks, sending, close.

Theory of operation
-------------------
A :class:`Session` owns a task group. Inside it runs the *read loop*; each
inbound request gets a task of its own. An idle session holds nothing else: no
timer, no event (see *Lazy per-connection machinery* at the end).

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
* The pending table (:mod:`minimcp.core.pending`) holds the deadlines too.
  Timeouts cost no task and no cancel scope per request: FIFO lanes of equal
  timeouts plus one heap (:mod:`minimcp.core.deadlines`), served by one timer per
  session, armed only while a deadline is ahead: on asyncio a callback of the
  loop (``loop.call_at``), on trio a task started when the first deadline comes
  and ending when none is left.
* Backend specifics (the one-shot cells, the bare handler tasks) live in
  :mod:`minimcp.core._backend`; this module is anyio code. :class:`Session` is one
  class; two private mixins beside it hold its other halves, where composition would
  cost an attribute load per request: the requests we send (open, wait, time out,
  abandon) are :class:`minimcp.core._requests.Requests`, the requests a role takes
  over (2026-07-28) :class:`minimcp.core._takeover.AdoptedRequests`. One request to
  its reply is :mod:`minimcp.core.dispatch`.
* A transport that asks (``wants_outgoing``, read once) is told what each message it is
  handed is -- a :class:`~minimcp.core.transport.Outgoing` (kind, id, method) -- so it routes
  without parsing it (Streamable HTTP's client); other transports get the bytes alone.
* ``notifications/cancelled`` from the peer cancels that request's handler;
  no response is sent for it. When a waiter of ours is cancelled (the handler
  it runs in was cancelled, say), the peer is told with
  ``notifications/cancelled`` for our pending request -- so cancelling a tool
  call cascades to the question it was asking.
* When the connection ends, every pending entry resolves with
  :class:`~minimcp.wire.errors.ConnectionClosed` and every handler is cancelled.
  Afterwards the session holds nothing.

*Lazy per-connection machinery*: a server holds many idle sessions (HTTP: one per client, up
to ``session_idle_timeout``), so an idle one holds only its objects and the task that reads; the
timer lives while a deadline is ahead, :meth:`Session.wait_closed`'s event while someone waits,
the task group's other tasks (a notice under a deadline, :meth:`Session.spawn`) while they run.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import anyio
import msgspec

from minimcp.core import _backend
from minimcp.core._backend import Cell, Handlers
from minimcp.core._requests import Requests
from minimcp.core._takeover import AdoptedRequests
from minimcp.core.config import Limits
from minimcp.core.dispatch import Deferred, Dispatcher, error_reply
from minimcp.core.pending import PendingBudget, PendingTable
from minimcp.core.stats import SessionStats
from minimcp.core.trace import WireTrace
from minimcp.core.transport import DescribedTransport, MessageKind, MessageTooLarge, Outgoing, Transport
from minimcp.wire import errors, jsonrpc
from minimcp.wire.errors import ConnectionClosed, McpError
from minimcp.wire.jsonrpc import ErrorResponse, Notification, Request, RequestId, Response
from minimcp.wire.types import (
    CallToolParams,
    CancelledParams,
    CompleteParams,
    CreateMessageParams,
    ElicitRequestParams,
    GetPromptParams,
    ListRootsParams,
    ReadResourceParams,
)
from minimcp.wire.versions import Feature, supports

__all__ = ["Session"]

logger = logging.getLogger("minimcp.session")


_EMPTY: dict[str, Any] = {}
#: How the session describes each response it sends: one shared value, completed by :meth:`Session.send_raw`
#: only for a transport that asks (with ``related`` = the id it answers), so replies cost the others nothing.
_RESPONSE = Outgoing(MessageKind.RESPONSE)

#: The requests whose handler may wait long (on a person, a tool, the peer): a handler keeps the method's name
#: (for an error reply) as this constant, not the request's decoded copy (bytes per pending call).
_WAITING_METHODS: dict[str, str] = {
    p.method: p.method
    for p in (
        CallToolParams,
        GetPromptParams,
        ReadResourceParams,
        CompleteParams,
        ElicitRequestParams,
        CreateMessageParams,
        ListRootsParams,
    )
}
# Messages the read loop takes in a row before yielding to its handlers, and how often it yields,
# at most, while every in-flight slot is taken before refusing a request. Why these: a read loop
# that never yields while messages keep coming starves the handlers it started and the deadline timer,
# and refuses a burst of quick requests as busy (test_a_burst_of_quick_requests_is_not_refused_as_busy); one
# checkpoint per 64 messages is a small share of taking 64 messages, and a quick handler ends within a
# turn or two, so 8 turns free a slot whenever one can be freed without waiting on I/O.
_DRAIN_TURN = 64
_FULL_TRIES = 8


class Session(Requests, AdoptedRequests):
    """Drives one connection: run :meth:`run` in a task, use :meth:`request` / :meth:`notify`.

    Args:
        transport: The message pipe.
        dispatcher: The role handling inbound requests and notifications.
        limits: Bounds and default timeouts.
        name: A label for logs.
        budget: A bound on pending requests shared with other sessions (a server's);
            default: one of this session's own, ``limits.max_pending_total``.
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
        #: Whether the transport is told what each message is (:class:`~minimcp.core.transport.DescribedTransport`);
        #: read once here, so the others cost nothing per message.
        self._describes = getattr(transport, "wants_outgoing", False) is True
        # A described transport is sent to through send() only (there the description is made).
        self._send_nowait: Callable[..., bool] | None = (
            None if self._describes else getattr(transport, "send_nowait", None)
        )
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
        # Handlers already cancelled (see _cancel_handler); made at the first cancellation (an
        # empty set is 216 bytes per idle session).
        self._cancelling: set[RequestId] | None = None
        self._loop: Any = None  # the asyncio loop (its clock, its cells); None on trio
        self._new_cell = _backend.cell_factory(None)  # (the running backend's, once run starts)
        #: The event loop's clock: ``loop.time`` on asyncio (a builtin, cheaper than
        #: ``anyio.current_time``), set when the session starts running.
        self.now: Callable[[], float] = anyio.current_time
        # Outbound ids start at 1: some hosts (the TypeScript SDK) test a cancelled request's
        # id for truthiness and would ignore a notifications/cancelled for id 0.
        self._next_id = 1
        # The deadline timer, armed only while a deadline is ahead (_arm_timer): the loop's
        # TimerHandle on asyncio; on trio whether its task runs, and the event that wakes it.
        self._timer: Any = None
        self._timer_wake: anyio.Event | None = None
        self._human_waits = 0
        self._initialize_id: RequestId | None = None
        #: Answer ``ping`` in the read loop (the modern revision has no ping: then it is dispatched).
        self.answer_ping = True
        # Opt-in wire trace (the public property :attr:`trace`); ``None``: off.
        self._trace: WireTrace | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed = False
        self._pick_sender()
        self._ended = False  # run() has finished
        self._finished: anyio.Event | None = None  # made only when someone waits for the end
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

    @property
    def trace(self) -> WireTrace | None:
        """Opt-in wire trace (see :class:`minimcp.core.trace.WireTrace`); ``None``: off."""
        return self._trace

    @trace.setter
    def trace(self, trace: WireTrace | None) -> None:
        self._trace = trace
        self._pick_sender()

    # --- running -----------------------------------------------------------------------------

    async def run(
        self,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
        on_end: Callable[[], object] | None = None,
    ) -> None:
        """Serve the connection until it ends or :meth:`close` is called; then call ``on_end``, if given."""
        self._loop, self._new_cell, clock = _backend.running_backend()
        if clock is not None:
            self.now = clock
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if self._pending.deadlines:  # requests opened before the session ran
                    self._arm_timer()
                task_status.started()
                try:
                    # Handler tasks are owned by this block: on leaving it, pending requests
                    # end (before the handlers see their cancellation), then every handler is
                    # cancelled and awaited.
                    async with Handlers(self._inflight, self._close_pending) as self._handlers:
                        await self._read_loop()
                finally:
                    self._handlers = None
                    tg.cancel_scope.cancel()
        finally:
            self._close_pending()  # (a no-op after the handlers' block did it; else, a run that never got there)
            self._cancelling = None
            self._tg = None
            with anyio.CancelScope(shield=True):
                try:
                    await self.transport.aclose()
                except Exception:  # pragma: no cover - a transport failing to close is only logged
                    logger.debug("%s: transport close failed", self.name, exc_info=True)
            self._ended = True
            if self._finished is not None:
                self._finished.set()
            if on_end is not None:
                on_end()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the session's task group (cancelled when the session ends).

        Raises:
            ConnectionClosed: the session is not running.
        """
        if self._tg is None or self._closed:
            raise ConnectionClosed()
        self._tg.start_soon(fn, *args)

    def start_detached(self, body: Coroutine[Any, Any, None]) -> Any:
        """Run ``body`` in a bare task the session owns (:meth:`_backend.Handlers.start_detached`); its handle.

        Raises:
            ConnectionClosed: the session is not running (``body`` is closed unrun).
        """
        if self._handlers is None or self._closed:
            body.close()
            raise ConnectionClosed()
        return self._handlers.start_detached(body)

    def close(self) -> None:
        """End the session: pending requests fail with ConnectionClosed, handlers are cancelled."""
        self._close_pending()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def wait_closed(self) -> None:
        """Wait until :meth:`run` has finished."""
        if not self._ended:
            if self._finished is None:
                self._finished = anyio.Event()
            await self._finished.wait()

    def _close_pending(self) -> None:
        self._closed = True
        self._pick_sender()
        timer = self._timer
        if timer is not None and self._loop is not None:
            self._timer = None
            timer.cancel()  # (on trio the timer task ends with the task group)
        if self._pending:
            reason = self._close_reason or "connection closed"
            for cell in self._pending.close():
                cell.settle(None, ConnectionClosed(f"{reason} while waiting for {cell.method}"))
        # Handlers are cancelled as the session's run ends; they are cancelled here too in
        # case close() runs before that.
        for id_ in list(self._inflight):
            self._cancel_handler(id_)

    def _cancel_handler(self, id_: RequestId) -> None:
        """Cancel the handler of request ``id_``, once.

        On asyncio every ``task.cancel()`` throws a new ``CancelledError`` into the task, even
        into the clean-up the first one started under an anyio shield (a bare task is outside
        anyio's cancel scopes); the session's close and a repeated ``notifications/cancelled``
        would otherwise cut that clean-up short.
        """
        handle = self._inflight.get(id_)
        cancelling = self._cancelling
        if cancelling is None:
            cancelling = self._cancelling = set()
        if handle is None or id_ in cancelling:
            return
        cancelling.add(id_)
        handle.cancel()

    # --- the deadline timer --------------------------------------------------------------------
    # Armed only while a deadline is ahead (an idle session has none): on asyncio one
    # ``loop.call_at`` handle, re-armed when a sooner deadline comes and cancelled on close; on trio
    # (no loop callbacks) a task in the session's task group, started with the first deadline and
    # ending when none is left. A standing timer task per session cost about 4.3 KB per idle session
    # (its anyio task, cancel scope and wake event). What falls due is ``Requests._expire``'s.

    def _arm_timer(self) -> None:
        """A deadline came, or moved sooner than the timer waits for: have it fire by then."""
        if self._closed:
            return
        loop = self._loop
        if loop is None:  # trio (or not running yet: run() arms it)
            if self._timer is not None:
                wake = self._timer_wake
                if wake is not None:
                    wake.set()
            elif self._tg is not None and self._pending.deadlines:
                self._timer = True
                self._tg.start_soon(self._timer_task)
            return
        at = self._pending.deadlines.earliest()
        handle = self._timer
        if handle is not None:
            if handle.when() <= at:
                return
            handle.cancel()
        self._timer = None if at == math.inf else _backend.call_at(loop, at, self._on_timer)

    def _on_timer(self) -> None:
        """asyncio: the earliest deadline has come (a callback of the loop: no task, no scope)."""
        self._timer = None
        try:
            self._expire(self.now())
        except Exception:  # pragma: no cover - a failing timer ends the session, as a failing task would
            logger.exception("%s: the deadline timer failed", self.name)
            self.close()
            return
        self._arm_timer()

    async def _timer_task(self) -> None:
        """trio: serve the deadlines while any is ahead, then end (:meth:`_arm_timer` starts it again)."""
        try:
            while True:
                earliest = self._pending.deadlines.earliest()
                if earliest == math.inf:
                    return
                delay = earliest - self.now()
                if delay > 0:
                    wake = self._timer_wake = anyio.Event()
                    with anyio.move_on_after(delay):
                        await wake.wait()
                    self._timer_wake = None
                self._expire(self.now())
        finally:
            self._timer = None
            self._timer_wake = None

    # --- outbound ----------------------------------------------------------------------------

    async def send_raw(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None:
        """Send an already encoded message (raises ConnectionClosed if the pipe is gone).

        ``outgoing`` describes it, for a transport that asks (see
        :class:`~minimcp.core.transport.DescribedTransport`); other transports never see it.
        """
        if self._closed:
            raise ConnectionClosed()
        if self._trace is not None:
            self._trace.record(self.name, "send", message, related=related, origin=self)
        try:
            if outgoing is not None and self._describes:
                if outgoing is _RESPONSE:
                    outgoing = Outgoing(MessageKind.RESPONSE, related)
                await cast(DescribedTransport, self.transport).send(message, related=related, outgoing=outgoing)
            else:
                await self.transport.send(message, related=related)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise ConnectionClosed() from exc

    def _sent_now(self, message: bytes, *, related: RequestId | None) -> bool:
        """Hand the message to the transport without waiting, if it can take it now.

        ``False`` (nothing sent): use :meth:`send_raw`, which waits for room or says why not.
        While the session is open and untraced, the instance's ``_sent_now`` is the transport's
        own ``send_nowait`` instead (:meth:`_pick_sender`): then this method is not called.
        """
        nowait = self._send_nowait
        if nowait is None or self._closed or not nowait(message, related=related):
            return False
        if self._trace is not None:
            self._trace.record(self.name, "send", message, related=related, origin=self)
        return True

    def _pick_sender(self) -> None:
        """Choose what ``self._sent_now`` calls: while nothing is left for :meth:`_sent_now` to
        check or record (a transport with ``send_nowait``, not described, no trace, the session
        open), the transport's ``send_nowait`` itself, one call less per message sent; else
        that method. Called whenever one of those changes."""
        nowait = self._send_nowait
        if nowait is not None and self._trace is None and not self._closed:
            self._sent_now = nowait  # type: ignore[method-assign]
        else:
            self.__dict__.pop("_sent_now", None)  # the method again

    async def notify(self, method: str, params: Any = msgspec.UNSET, *, related: RequestId | None = None) -> None:
        """Send a notification."""
        about = Outgoing(MessageKind.NOTIFICATION, None, method) if self._describes else None
        await self.send_raw(jsonrpc.encode_notification(method, params), related=related, outgoing=about)

    # --- inbound -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        receive = self.transport.receive
        # Messages already there are taken without a coroutine each (the transport's fast path).
        receive_nowait: Callable[[], bytes | None] | None = getattr(self.transport, "receive_nowait", None)
        # A transport that hands out the future to wait on when nothing is there (asyncio's stdio)
        # spares the read loop a coroutine of its own per wait, and a call: one call per message.
        poll: Callable[[], bytes | Awaitable[None]] | None = getattr(self.transport, "receive_or_wait", None)
        drained = 0
        while True:
            try:
                got = poll() if poll is not None else receive_nowait() if receive_nowait is not None else None
                if not isinstance(got, bytes):
                    drained = 0
                    if poll is None:
                        data = await receive()
                    else:
                        assert got is not None  # (poll hands out bytes or a future)
                        while not isinstance(got, bytes):
                            await got  # (a future of the transport's: no coroutine)
                            got = poll()
                        data = got
                else:
                    data = got
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
            if self._trace is not None:
                self._trace.record(self.name, "receive", data, origin=self)
            if self.take_call is not None and self.take_call(data, self._inflight):
                self.stats.requests_received += 1
                continue  # (a 2026-07-28 tools/call decoded once and taken over: minimcp.server.mrtr.takeover)
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
                if self._sent_now(pong, related=message.id):
                    return None
                return self._send_quietly(pong, message.id, _RESPONSE)
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
        self._cancel_handler(id_)
        if Handlers.never_ran(scope):
            # Cancelled before its first step (the request and its cancellation came in one read):
            # its body, which takes the entry out, will never run.
            del self._inflight[id_]
            if self._cancelling:
                self._cancelling.discard(id_)

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
        if self.take_over is not None and self.take_over(request):
            return None
        if request.method == "initialize":
            self._initialize_id = request.id
        # The request goes only to _serve_bare, which lets go of it while the handler waits.
        self._inflight[request.id] = handlers.start(self._serve_bare(request))
        return None

    async def _serve_bare(self, request: Request) -> None:
        """Answer one request: the whole of a handler task (see :class:`minimcp.core._backend.Handlers`).

        The steps of :func:`minimcp.core.dispatch.answer`, inline: awaiting that coroutine (or
        :func:`minimcp.core.dispatch.outcome`) here would hold one more coroutine frame for every
        request that waits on a person: 200 to 360 bytes per waiting call (tracemalloc,
        CPython 3.11), 8 to 14 % of a pending elicitation's 2.5 KB.
        """
        # The method's name as a constant, where it is one of those that may wait: the decoded copy (59 bytes)
        # is not kept for every pending call.
        id_, method = request.id, _WAITING_METHODS.get(request.method, request.method)
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
            if not self._sent_now(reply, related=id_):
                with contextlib.suppress(ConnectionClosed):
                    await self.send_raw(reply, related=id_, outgoing=_RESPONSE)
        except _backend.BareTaskCancelled:
            return  # cancelled by the peer (no response, per spec) or by shutdown
        finally:
            self._inflight.pop(id_, None)
            if self._cancelling:
                self._cancelling.discard(id_)

    def _error_reply(self, id_: RequestId, exc: Exception, method: str) -> bytes:
        return error_reply(id_, exc, method=method, null_id=self._null_id(), log=logger, label=self.name)

    def _null_id(self) -> bool:
        """Whether an error without an id says ``"id": null`` (revisions before it could be left out)."""
        return self.protocol_version is not None and not supports(self.protocol_version, Feature.ERROR_WITHOUT_ID)

    def _error_bytes(self, id_: RequestId | None, code: int, message: str) -> bytes:
        return jsonrpc.encode_error(id_, code, message, null_id=self._null_id())

    async def _send_error(self, id_: RequestId | None, code: int, message: str) -> None:
        await self._send_quietly(self._error_bytes(id_, code, message), id_, _RESPONSE)

    async def _send_quietly(
        self, message: bytes, related: RequestId | None, outgoing: Outgoing | None = None
    ) -> None:
        """Send, where a connection that is already gone needs no further handling."""
        with contextlib.suppress(ConnectionClosed):
            await self.send_raw(message, related=related, outgoing=outgoing)
