"""One request to its reply bytes: the role's handler called, its outcome or error mapped to JSON-RPC, once.

:func:`answer` is the whole path for callers that hold no :class:`~minimcp.core.session.Session`
task of their own (the stateless HTTP leg of revision 2026-07-28). The session's handler task
runs the same steps inline (:meth:`Session._serve_bare <minimcp.core.session.Session>`), with the
same :func:`outcome` and :func:`error_reply`, because one more coroutine frame per request
that waits on a person is one frame more per pending elicitation.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from minimcp.wire import errors, jsonrpc
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import Notification, Request, RequestId

if TYPE_CHECKING:
    from minimcp.core.session import Session

__all__ = ["Deferred", "Dispatcher", "answer", "error_reply", "outcome"]

logger = logging.getLogger("minimcp.session")


class Deferred:
    """A handler's answer in two steps: the session awaits :attr:`awaitable` in the request's
    own task, then :meth:`finish` turns its outcome into the result (or raises :class:`McpError`).

    A dispatcher returns one instead of a wrapping coroutine: one frame less for every request
    that waits, perhaps for minutes, on a person. Awaiting it does both steps.
    """

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable

    def finish(self, value: Any, error: BaseException | None) -> Any:
        """The result, from ``value``, or from ``error`` when the awaitable raised one.

        Called in every case; an ``error`` that is not an :class:`Exception` (a cancellation)
        must be raised again.
        """
        if error is not None:
            raise error
        return value

    def __await__(self) -> Generator[Any, None, Any]:
        return outcome(self).__await__()


class Dispatcher(Protocol):
    """What a role (server or client) provides to its session."""

    def handle_request(self, session: Session, request: Request) -> Awaitable[Any] | Deferred:
        """Start answering ``request``: an awaitable of the result object, or a :class:`Deferred`.

        Raising :class:`McpError` (here or from what is awaited) answers with that error.
        """
        ...

    def handle_notification(self, session: Session, notification: Notification) -> None:
        """React to a notification (must not block; start a task if it needs to)."""
        ...


async def outcome(handling: Awaitable[Any] | Deferred) -> Any:
    """The result of what a dispatcher's ``handle_request`` returned (raises as the handler did)."""
    if isinstance(handling, Deferred):
        try:
            value = await handling.awaitable
        except BaseException as exc:
            return handling.finish(None, exc)
        return handling.finish(value, None)
    return await handling


def error_reply(
    id_: RequestId | None,
    exc: Exception,
    *,
    method: str,
    null_id: bool = False,
    log: logging.Logger = logger,
    label: str = "minimcp",
) -> bytes:
    """The error response for a handler that raised ``exc``.

    :class:`McpError` keeps its code, message and data; any other exception is logged (with
    its traceback) and answered ``-32603 internal error``, telling the peer nothing of it.
    ``null_id``: the negotiated revision wants ``"id": null`` rather than no id when ``id_``
    is ``None``.
    """
    if isinstance(exc, McpError):
        data = msgspec.UNSET if exc.data is None else exc.data
        return jsonrpc.encode_error(id_, exc.code, exc.message, data, null_id=null_id)
    log.error("%s: handler for %s failed", label, method, exc_info=exc)
    return jsonrpc.encode_error(id_, errors.INTERNAL_ERROR, "internal error", null_id=null_id)


async def answer(
    handle: Callable[[Request], Awaitable[Any] | Deferred],
    request: Request,
    *,
    reply_id: RequestId | None = None,
    null_id: bool = False,
    log: logging.Logger = logger,
) -> tuple[bytes, int | None]:
    """Answer one request: ``handle(request)`` awaited, the outcome encoded.

    Args:
        handle: The role's handler, e.g. ``functools.partial(connection.handle_request, session)``.
        request: The decoded request.
        reply_id: The id to answer under (default: ``request.id``; the stateless HTTP leg
            renumbers requests internally and answers under the client's own id).
        null_id: See :func:`error_reply`.
        log: Where a handler's unexpected exception is logged.

    Returns:
        The reply's bytes, and the JSON-RPC error code when it is an error (``None``: a result).
        A cancellation is not answered: it propagates.
    """
    id_ = request.id if reply_id is None else reply_id
    method = request.method
    try:
        result = await outcome(handle(request))
    except McpError as exc:
        return error_reply(id_, exc, method=method, null_id=null_id, log=log), exc.code
    except Exception as exc:
        return error_reply(id_, exc, method=method, null_id=null_id, log=log), errors.INTERNAL_ERROR
    return jsonrpc.encode_result(id_, result), None
