"""A session's outgoing requests: sending one, waiting for its response, its timeout, its cancellation.

:class:`Requests` is the half of :class:`~minimcp.core.session.Session` that asks (the session
inherits it; the read loop in ``session.py`` hands it the responses and progress notices).
Each request has an entry in the session's :class:`~minimcp.core.pending.PendingTable`, whose
cell (from :mod:`minimcp.core._backend`) the requester awaits. An entry ends exactly once: by its
response (:meth:`Requests._resolve`), its deadline (:meth:`Requests._expire`, served by the
session's timer), its requester giving up (:meth:`Requests._abandon`: the peer is
sent ``notifications/cancelled``), or the end of the connection (the session's close).

A private mixin beside its class, not an object the session holds: composition would cost an attribute
load per request and per response (``self._requests`` on the session's side, and the session's pending
table, clock, transport and timer read through a back-reference on this side), on the path every
request takes.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, overload

import anyio
import msgspec

from minimcp.core._backend import Cell, drop_outcome
from minimcp.core.config import Limits
from minimcp.core.pending import PendingBudget, PendingTable, ProgressWatch
from minimcp.core.transport import CANCELLED, MessageKind, Outgoing
from minimcp.wire import errors, jsonrpc
from minimcp.wire.errors import ConnectionClosed, McpError, RequestTimeout, TooManyPending
from minimcp.wire.jsonrpc import Notification, RequestId, Response
from minimcp.wire.types import CancelledParams, ProgressParams, RequestParams

if TYPE_CHECKING:
    from minimcp.core.stats import SessionStats
    from minimcp.core.trace import WireTrace
    from minimcp.core.transport import Transport

__all__ = ["DEFAULT", "Default", "Requests", "Timeout", "decode_result"]

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
DEFAULT: Final = Default.DEFAULT


def _cancelled(id_: RequestId, reason: str) -> bytes:
    return jsonrpc.encode_notification(CANCELLED, CancelledParams(request_id=id_, reason=reason))


def decode_result(method: str, raw: msgspec.Raw, result_type: type[T]) -> T:
    """A response's raw result, decoded into ``result_type``.

    Raises:
        McpError: ``-32602`` naming the method and the problem (a result of the wrong shape,
            bytes that are not valid UTF-8).
    """
    try:
        return jsonrpc.decoder_for(result_type).decode(raw)
    except msgspec.DecodeError as exc:
        raise McpError(errors.INVALID_PARAMS, f"invalid {method} result from peer: {exc}") from None



class Requests:
    """The requests a session sends (a base of :class:`~minimcp.core.session.Session`, which sets
    the attributes below)."""

    name: str
    limits: Limits
    budget: PendingBudget
    stats: SessionStats
    _pending: PendingTable[Cell]
    _next_id: int
    _closed: bool
    #: Makes a fresh cell (:func:`minimcp.core._backend.cell_factory`, chosen once per session).
    _new_cell: Callable[[], Cell]
    now: Callable[[], float]
    _tg: anyio.abc.TaskGroup | None
    _human_waits: int
    _describes: bool
    transport: Transport
    _trace: WireTrace | None
    #: The session's deadline timer (``Session._arm_timer``): a deadline came or moved sooner.
    _arm_timer: Callable[[], None]

    # What the session provides (its own methods replace these).

    def _sent_now(self, message: bytes, *, related: RequestId | None) -> bool:
        raise NotImplementedError  # pragma: no cover - the session's

    async def send_raw(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None:
        raise NotImplementedError  # pragma: no cover - the session's

    async def _send_quietly(
        self, message: bytes, related: RequestId | None, outgoing: Outgoing | None = None
    ) -> None:
        raise NotImplementedError  # pragma: no cover - the session's

    def _request_sent_now(self, data: bytes, related: RequestId | None, cell: Cell) -> bool:
        """A request handed to a described transport without waiting, with its description (its
        ``send_nowait_described``, if it has one: then no ``_send_and_wait`` frame, nor the encoded request, is
        kept while the answer is awaited; see :class:`~minimcp.core.transport.DescribedTransport`)."""
        # Looked up, not kept: one more attribute per session costs 1.3 KB (its __dict__ would not be shared).
        nowait = getattr(self.transport, "send_nowait_described", None)
        if nowait is None or self._closed or self._trace is not None:
            return False
        return nowait(data, related=related, outgoing=self._about_request(cell)) is True

    @staticmethod
    def _about_request(cell: Cell) -> Outgoing:
        """The description of a request, for a transport that asks (see ``Session._describes``)."""
        return Outgoing(MessageKind.REQUEST, cell.id, cell.method)

    def _about_cancel(self, cell: Cell) -> Outgoing | None:
        """The description of the ``notifications/cancelled`` for ``cell``'s request, if asked for."""
        return Outgoing(MessageKind.NOTIFICATION, None, CANCELLED, cell.id) if self._describes else None

    @overload
    async def request(
        self,
        method: RequestParams[T],
        /,
        *,
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
        method: str | RequestParams[Any],
        params: Any = msgspec.UNSET,
        *,
        result_type: type[T] | None = None,
        timeout: Timeout = Default.DEFAULT,
        related: RequestId | None = None,
        progress: ProgressWatch | None = None,
    ) -> T | msgspec.Raw:
        """Send a request and wait for its response.

        ``request(ListToolsParams())`` sends ``tools/list`` and returns a ``ListToolsResult``:
        a params object whose class names its method and result type
        (:class:`~minimcp.wire.types.RequestParams`) stands for all three arguments.

        Args:
            method: The method name, or a params object that names it (then no
                ``params`` or ``result_type``).
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
        if not isinstance(method, str):
            if params is not msgspec.UNSET or result_type is not None:
                raise TypeError("a params object names its method and result type: pass it alone")
            params, result_type, method = method, method.result, method.method
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
        # A new pending entry (checked against the bounds first), with its deadline, and the
        # encoded request (encoded before anything is registered).
        if self._closed:
            raise ConnectionClosed()
        if len(self._pending.cells) >= self.limits.max_pending_outbound:
            raise TooManyPending(self.limits.max_pending_outbound)
        budget = self.budget
        if budget.used >= budget.limit:
            raise TooManyPending(budget.limit)
        id_ = self._next_id
        data = jsonrpc.encode_request(id_, method, params)
        self._next_id += 1
        cell = self._new_cell()
        cell.id = id_
        cell.method = method
        cell.related = related
        cell.progress = None
        cell.sending = False
        if timeout is Default.DEFAULT:
            timeout = self.limits.request_timeout
        if self._pending.open(cell, self.now() if timeout is not None else 0.0, timeout):
            self._arm_timer()
        self.stats.requests_sent += 1
        if progress is not None:
            self._pending.watch(cell, progress)
        if cell.is_future and (
            self._request_sent_now(data, related, cell) if self._describes else self._sent_now(data, related=related)
        ):
            cell.sink = self  # nobody else sees it being given up on (AsyncioCell.cancel)
            return cell
        return self._send_and_wait(cell, data, related)

    async def _send_and_wait(self, cell: Cell, data: bytes, related: RequestId | None) -> msgspec.Raw:
        try:
            if not self._sent_now(data, related=related):
                cell.sending = True
                try:
                    await self.send_raw(  # (described only to a transport that asks: see Session._describes)
                        data, related=related, outgoing=self._about_request(cell) if self._describes else None
                    )
                finally:
                    cell.sending = False
                if not self._pending.holds(cell) and not self._closed:
                    # It timed out while waiting for room: the peer hears of it only now, after
                    # the request itself (no answer can have come before the request went out).
                    reason = str(RequestTimeout(cell.method, cell.timeout))
                    await self._send_quietly(_cancelled(cell.id, reason), related, self._about_cancel(cell))
            del data  # sent: not held while the request waits (its bytes, per pending call)
            if cell.is_future:
                # From here on, as on the fast path, a cancelled awaiter reaches the session through
                # the cell (AsyncioCell.cancel), which takes the entry out before the future is done.
                cell.sink = self
                return await cell  # the future itself: no coroutine of the cell's own
            if not cell.done:  # (trio: the cell's wait, awaited here: no frame of the cell's own either)
                await cell.parked()
            return cell.outcome()
        except BaseException:
            drop_outcome(cell)  # it ended (timeout, close) while still being sent: nobody awaits it now
            cancelled = self._abandon(cell)  # nothing, if the request had already ended
            if cancelled is not None and not self._sent_now(cancelled, related=related):
                with anyio.CancelScope(shield=True):
                    await self._send_within(cancelled, cell, self.limits.notice_timeout)
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
        :class:`minimcp.core._backend.AbandonSink`): forget it and tell the peer."""
        message = self._abandon(cell)
        if message is not None and not self._sent_now(message, related=cell.related) and self._tg is not None:
            # Sent from a task (within ``limits.notice_timeout``): the transport has no room now.
            self._tg.start_soon(self._send_within, message, cell, self.limits.notice_timeout)

    async def _send_within(self, notice: bytes, cell: Cell, seconds: float) -> None:
        """Send the ``notifications/cancelled`` for ``cell``'s request, giving up after ``seconds``."""
        with anyio.move_on_after(seconds):
            await self._send_quietly(notice, cell.related, self._about_cancel(cell))

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

    def _expire(self, now: float) -> None:
        for cell in self._pending.expire(now, self._human_waits > 0, self.limits.max_request_time):
            self.stats.timeouts += 1
            error = RequestTimeout(cell.method, cell.timeout)
            # The peer hears of it before the requester does (and before anything it sends next);
            # a request still waiting for room sends its notice itself, after it (_send_and_wait).
            notice = _cancelled(cell.id, str(error))
            if self._closed or cell.sending or self._sent_now(notice, related=cell.related) or self._tg is None:
                cell.settle(None, error)
            else:
                self._tg.start_soon(self._time_out, cell, error, notice)

    async def _time_out(self, cell: Cell, error: RequestTimeout, notice: bytes) -> None:
        try:
            await self._send_within(notice, cell, self.limits.notice_timeout)
        finally:
            cell.settle(None, error)

    def _resolve(self, id_: RequestId, response: Response | None, error: McpError | None) -> None:
        cell = self._pending.resolve(id_)
        if cell is None:
            # Unknown, late (after a timeout or cancel), or a duplicate: harmless.
            self.stats.unknown_responses += 1
            logger.debug("%s: dropped a response for unknown id %r", self.name, id_)
            return
        if response is not None:
            # A cell in the table is never done (every ending takes it out first; a cancelled
            # awaiter through AsyncioCell.cancel): on asyncio the future's own C set_result does
            # what settle would, one Python call less per response.
            cell.resolve_raw(response.result)
        else:
            cell.settle(None, error)

    def _on_progress(self, message: Notification) -> None:
        try:
            params = jsonrpc.decode_params(message.params, ProgressParams)
        except McpError:
            return
        watch, sooner = self._pending.progressed(params.progress_token, self.now(), self.limits.max_request_time)
        if watch is None:
            return  # progress for a request that is over: ignored
        if sooner:
            self._arm_timer()
        if watch.callback is not None:
            try:
                watch.callback(params)
            except Exception:
                logger.exception("%s: progress callback failed", self.name)

