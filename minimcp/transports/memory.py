"""An in-process transport pair (tests, benchmarks, embedding).

Messages still go through the full encode/decode path: what travels is the
same bytes a socket would carry.
"""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from minimcp.core.config import Limits
from minimcp.core.transport import MessageTooLarge
from minimcp.wire.jsonrpc import RequestId

__all__ = ["MemoryTransport", "memory_pair"]


class MemoryTransport:
    """One end of a :func:`memory_pair`."""

    def __init__(
        self,
        send: MemoryObjectSendStream[bytes],
        receive: MemoryObjectReceiveStream[bytes],
        max_message_bytes: int,
    ) -> None:
        self._send = send
        self._receive = receive
        self.max_message_bytes = max_message_bytes

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        await self._send.send(message)

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Hand the message over if that needs no waiting; ``False``: use :meth:`send`."""
        try:
            self._send.send_nowait(message)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def receive(self) -> bytes:
        return self._checked(await self._receive.receive())

    def receive_nowait(self) -> bytes | None:
        """The next message if one is already here (``None`` if not); ends as :meth:`receive` does."""
        try:
            return self._checked(self._receive.receive_nowait())
        except anyio.WouldBlock:
            return None

    def _checked(self, message: bytes) -> bytes:
        if len(message) > self.max_message_bytes:
            raise MessageTooLarge(self.max_message_bytes)
        return message

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Close both directions at once, without awaiting (an abrupt end of the connection)."""
        self._send.close()
        self._receive.close()


def memory_pair(*, buffer: int = 1024, limits: Limits | None = None) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives.

    Args:
        buffer: Messages each direction may hold before ``send`` waits.
        limits: Supplies ``max_message_bytes``.
    """
    limit = (limits or Limits()).max_message_bytes
    a_send, b_receive = anyio.create_memory_object_stream[bytes](buffer)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](buffer)
    return MemoryTransport(a_send, a_receive, limit), MemoryTransport(b_send, b_receive, limit)
