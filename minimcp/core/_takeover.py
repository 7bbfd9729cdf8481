"""Requests a session's read loop handed over (``Session.take_over``): each answered by a task of its own.

:class:`AdoptedRequests` is a base of :class:`~minimcp.core.session.Session`. A role may take a
request over in the read loop instead of the session starting a handler task for it (revision
2026-07-28: a tool call's run answers the request it serves, :func:`minimcp.server.mrtr.rounds.take_over`).
Such a request is in flight like a handler's -- it counts against ``max_inflight_inbound``, its
id is busy, the peer's ``notifications/cancelled`` cancels the task answering it, the session's
end cancels it -- until its reply is handed over; a cancelled one gets no reply, as a
cancelled handler sends none.

A private mixin beside its class, not an object the session holds: composition would cost an attribute
load per adopted request (and the session's in-flight table and sender read through a back-reference),
on the 2026-07-28 path every tool call round takes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from minimcp.core.transport import MessageKind, Outgoing
from minimcp.wire.errors import ConnectionClosed
from minimcp.wire.jsonrpc import Request, RequestId

__all__ = ["AdoptedRequests"]


class AdoptedRequests:
    """The adopted-request half of a session (the session sets these attributes and provides the methods)."""

    _inflight: dict[RequestId, Any]
    _handlers: Any
    limits: Any
    _cancelling: set[RequestId] | None
    _closed: bool
    _sent_now: Callable[..., bool]
    send_raw: Callable[..., Awaitable[None]]
    spawn: Callable[..., None]
    _send_quietly: Callable[..., Coroutine[Any, Any, None]]
    _error_reply: Callable[[RequestId, Exception, str], bytes]

    #: A role's fast path (:func:`minimcp.server.mrtr.rounds.take_over`): True if it took a request over.
    #: Set on the instance only where needed (a class attribute: other sessions' dicts stay as they were).
    take_over: Callable[[Request], bool] | None = None
    #: The same for a message's bytes, before the usual decoding (:func:`minimcp.server.mrtr.takeover.take_call`),
    #: called by the read loop with the message and the table of requests in flight: it checks, as a
    #: handler's start does, that the id is not in it and that there is room under
    #: ``max_inflight_inbound`` (the session is serving: its read loop runs), and enters a request
    #: it takes there (``table[id_] = handle``, as :meth:`adopt` does).
    take_call: Callable[[bytes, dict[RequestId, Any]], bool] | None = None

    def adoption(self, id_: RequestId) -> dict[RequestId, Any] | None:
        """Whether request ``id_`` may be taken over -- the checks a handler's start makes, in its order
        (the id not in flight already, room under ``max_inflight_inbound``, the session serving) -- and
        where: the table of requests in flight, in which ``table[id_] = handle`` is :meth:`adopt` (no
        call of its own on the fast path); ``None``: it may not be taken over."""
        inflight = self._inflight
        if id_ not in inflight and len(inflight) < self.limits.max_inflight_inbound and self._handlers is not None:
            return inflight
        return None

    def adopt(self, id_: RequestId, handle: Any) -> None:
        """Request ``id_`` is answered by a task of its own (``handle.cancel()`` cancels it): in flight
        until :meth:`reply_adopted` / :meth:`reply_adopted_nowait`; the peer's cancellation cancels it."""
        self._inflight[id_] = handle

    async def reply_adopted(self, id_: RequestId, reply: bytes) -> None:
        """Send the reply of adopted request ``id_`` (none if it was cancelled) and end it: the
        request's own task answering it, as a handler task does."""
        try:
            if not self._gave_up(id_) and not self._sent_now(reply, related=id_):
                with contextlib.suppress(ConnectionClosed):
                    await self.send_raw(reply, related=id_, outgoing=Outgoing(MessageKind.RESPONSE, id_))
        finally:
            self._release(id_)

    def reply_adopted_now(self, id_: RequestId, reply: bytes) -> bool:
        """:meth:`reply_adopted` when it need not wait (no coroutine): True if the reply was sent now, or
        is not to be sent (the request was cancelled), and the request ended; False: nothing was done,
        await :meth:`reply_adopted`."""
        try:
            if not self._gave_up(id_) and not self._sent_now(reply, related=id_):
                return False
        except BaseException:
            self._release(id_)
            raise
        self._release(id_)
        return True

    def reply_adopted_nowait(self, id_: RequestId, reply: bytes | None) -> None:
        """:meth:`reply_adopted` from a task that is ending or being stopped: sent now, or by a task of
        the session's if the transport has no room (``None``: nothing to send)."""
        try:
            if reply is not None and not self._gave_up(id_) and not self._sent_now(reply, related=id_):
                with contextlib.suppress(ConnectionClosed):
                    self.spawn(self._send_quietly, reply, id_, Outgoing(MessageKind.RESPONSE, id_))
        finally:
            self._release(id_)

    def _gave_up(self, id_: RequestId) -> bool:
        """Whether request ``id_`` was cancelled (by the peer, or the session's end): no reply is sent."""
        return self._closed or bool(self._cancelling and id_ in self._cancelling)

    def _release(self, id_: RequestId) -> None:
        self._inflight.pop(id_, None)
        if self._cancelling:
            self._cancelling.discard(id_)

    def error_reply(self, id_: RequestId, exc: Exception, method: str) -> bytes:
        """The error response to request ``id_`` whose handler raised ``exc`` (as a handler task's)."""
        return self._error_reply(id_, exc, method)

