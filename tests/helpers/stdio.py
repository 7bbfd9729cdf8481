"""Shared by several test files: what tests/transports/test_stdio.py sets up and others reuse."""

from __future__ import annotations

import anyio
import anyio.abc


class GatedSink(anyio.abc.ByteSendStream):
    """A pipe whose reader takes data only when let: each send waits for the gate."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0
        self.gate = anyio.Event()
        self.entered = anyio.Event()
        self.broken = False

    async def send(self, item: bytes) -> None:
        self.entered.set()
        await self.gate.wait()
        if self.broken:
            raise anyio.BrokenResourceError
        self.data += item
        self.writes += 1

    async def aclose(self) -> None:
        pass


class Silent(anyio.abc.ByteReceiveStream):
    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def aclose(self) -> None:
        pass

