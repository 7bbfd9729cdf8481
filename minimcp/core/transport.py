"""Transports: how encoded messages travel between two peers.

A transport moves whole messages (one JSON-RPC message as UTF-8 bytes) in both
directions. The session above it never sees framing, sockets or processes.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable
from typing import Protocol

import msgspec

from minimcp.wire import jsonrpc
from minimcp.wire.errors import MinimcpError
from minimcp.wire.jsonrpc import RequestId

__all__ = ["DescribedTransport", "FastTransport", "MessageKind", "MessageTooLarge", "Outgoing", "Transport", "describe"]

CANCELLED = "notifications/cancelled"


class MessageTooLarge(MinimcpError):
    """The peer sent a message over the size limit; it was dropped unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"message exceeds the {limit}-byte limit")
        self.limit = limit


class Transport(Protocol):
    """One connection's message pipe.

    ``receive`` returns the next whole message and raises
    :class:`anyio.EndOfStream` (or :class:`anyio.ClosedResourceError`) when the
    connection is over, and :class:`MessageTooLarge` for a message it dropped.
    ``send`` may be called from many tasks at once. ``related`` names the
    inbound request a message belongs to (a nested request, or a response), so
    transports with several streams (Streamable HTTP) can route it; others
    ignore it.

    A transport may also offer fast paths, used when present: see :class:`FastTransport`.

    A transport that routes by what a message is (Streamable HTTP's client: a
    request opens a POST exchange, ``initialize`` starts a session) can be told
    that instead of parsing the bytes again: see :class:`DescribedTransport`.
    """

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None: ...

    async def receive(self) -> bytes: ...

    async def aclose(self) -> None: ...


class MessageKind(enum.Enum):
    """What a JSON-RPC message is, as far as routing it goes."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    #: A result or an error answering a request.
    RESPONSE = "response"


class Outgoing(msgspec.Struct, frozen=True, gc=False):
    """What the session knows about a message it sends, for a :class:`DescribedTransport`.

    Attributes:
        kind: Request, notification or response.
        id: A request's id, or the id a response answers (``None``: a notification,
            or an error answering a message whose id could not be read).
        method: A request's or notification's method (``""`` for a response).
        cancelled: For ``notifications/cancelled``, the id of the request it cancels.
    """

    kind: MessageKind
    id: RequestId | None = None
    method: str = ""
    cancelled: RequestId | None = None


class DescribedTransport(Transport, Protocol):
    """A transport that wants each message described as it is sent.

    It says so with the class attribute ``wants_outgoing = True``; the session reads
    it once, when it starts, and then passes ``outgoing=`` on every :meth:`send`
    (a ``send_nowait`` fast path is not used). It may offer one of its own for the
    requests the session sends: ``send_nowait_described(message, *, related,
    outgoing) -> bool`` (``False``: nothing sent, :meth:`send` is called).
    Transports without the attribute are called exactly as before, with no
    description made for them. ``outgoing`` is ``None`` when someone calls
    ``send`` directly with bytes: then :func:`describe` reads it from them.
    """

    #: ``True``: describe each message (a class attribute, or set once in ``__init__``).
    wants_outgoing: bool

    async def send(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None: ...


class FastTransport(Protocol):
    """The optional members of a transport: what the session looks up with ``getattr`` and uses when present.

    None is required, and each is looked up on its own (once per session, or per request for
    ``send_nowait_described``); a transport offers the ones it can do without waiting. They spare a
    coroutine per message when nothing has to wait. ``tests/docs/test_layers.py`` checks that these are
    exactly the names the session looks up.
    """

    #: ``True``: describe each message sent (see :class:`DescribedTransport`); ``send_nowait`` is then not used.
    wants_outgoing: bool

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Queue ``message`` only if that needs no waiting (``False``: nothing sent; ``send`` is called, which
        waits for room or reports why it cannot). The stdio and in-memory transports offer it."""
        ...

    def send_nowait_described(self, message: bytes, *, related: RequestId | None, outgoing: Outgoing) -> bool:
        """A described transport's ``send_nowait``, for the requests the session sends (``False``: ``send``)."""
        ...

    def receive_nowait(self) -> bytes | None:
        """A message that is already there (``None``: call ``receive``); ends as ``receive`` does."""
        ...

    def receive_or_wait(self) -> bytes | Awaitable[None]:
        """A message, or a future to await before asking again, so a wait costs no coroutine either
        (asyncio's stdio offers it)."""
        ...


class _CancelledId(msgspec.Struct):
    request_id: int | str | msgspec.UnsetType = msgspec.field(name="requestId", default=msgspec.UNSET)


def describe(message: bytes) -> Outgoing | None:
    """What an encoded message is, read back from its bytes (``None``: not a JSON-RPC message).

    The fallback of a :class:`DescribedTransport` sent bytes without a description.
    """
    try:
        parsed = jsonrpc.decode(message)
    except jsonrpc.InvalidMessage:
        return None
    if type(parsed) is jsonrpc.Request:
        return Outgoing(MessageKind.REQUEST, parsed.id, parsed.method)
    if isinstance(parsed, jsonrpc.Notification):
        cancelled: RequestId | None = None
        if parsed.method == CANCELLED and parsed.params:
            try:
                found = msgspec.json.decode(parsed.params, type=_CancelledId).request_id
            except msgspec.DecodeError:
                found = msgspec.UNSET
            if not isinstance(found, msgspec.UnsetType):
                cancelled = found
        return Outgoing(MessageKind.NOTIFICATION, None, parsed.method, cancelled)
    return Outgoing(MessageKind.RESPONSE, parsed.id)
