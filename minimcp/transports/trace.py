"""A transport wrapper that reports every message (a wire trace), for learning and debugging."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from minimcp.jsonrpc import RequestId
from minimcp.transports import Transport

__all__ = ["TracedTransport"]

Direction = Literal["send", "receive"]


class TracedTransport:
    """Wraps a transport and calls ``on_message(direction, data)`` for each message."""

    def __init__(self, inner: Transport, on_message: Callable[[Direction, bytes], None]) -> None:
        self.inner = inner
        self.on_message = on_message

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        self.on_message("send", message)
        await self.inner.send(message, related=related)

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self.on_message("receive", data)
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()
