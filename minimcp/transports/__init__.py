"""Transports: how encoded messages travel between two peers.

A transport moves whole messages (one JSON-RPC message as UTF-8 bytes) in both
directions. The session above it never sees framing, sockets or processes.
"""

from __future__ import annotations

from typing import Protocol

from minimcp.errors import MinimcpError
from minimcp.jsonrpc import RequestId

__all__ = ["MessageTooLarge", "Transport"]


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

    A transport may also offer two fast paths, used when present (the stdio and
    in-memory transports do): ``send_nowait(message, *, related=None) -> bool``
    queues a message only if that needs no waiting (``False``: call ``send``,
    which waits for room or reports why it cannot), and ``receive_nowait() ->
    bytes | None`` returns a message that is already there (``None``: call
    ``receive``) and ends the same way ``receive`` does. They spare a coroutine
    per message when nothing has to wait.
    """

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None: ...

    async def receive(self) -> bytes: ...

    async def aclose(self) -> None: ...
