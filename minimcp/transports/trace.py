"""A transport wrapper that reports every message (a wire trace), for learning and debugging."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, cast

from minimcp.core.transport import DescribedTransport, Outgoing, Transport
from minimcp.wire.jsonrpc import RequestId

__all__ = ["TracedTransport"]

Direction = Literal["send", "receive"]


class TracedTransport:
    """Wraps a transport and calls ``on_message(direction, data)`` for each message.

    It asks for the session's descriptions of outgoing messages when the transport it wraps
    does (see :class:`~minimcp.core.transport.DescribedTransport`), and passes them on. It offers
    none of the other fast paths of :class:`~minimcp.core.transport.FastTransport`
    (``send_nowait``, ``send_nowait_described``, ``receive_nowait``, ``receive_or_wait``): every
    message then goes through :meth:`send` and :meth:`receive`, where it is reported in order, and a
    traced session (for learning and debugging) pays one coroutine per message for that.
    """

    def __init__(self, inner: Transport, on_message: Callable[[Direction, bytes], None]) -> None:
        self.inner = inner
        self.on_message = on_message
        self.wants_outgoing: bool = getattr(inner, "wants_outgoing", False) is True

    async def send(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None:
        self.on_message("send", message)
        if outgoing is not None and self.wants_outgoing:
            await cast(DescribedTransport, self.inner).send(message, related=related, outgoing=outgoing)
        else:
            await self.inner.send(message, related=related)

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self.on_message("receive", data)
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()
