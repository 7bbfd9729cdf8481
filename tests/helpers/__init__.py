"""Shared test helpers: a raw JSON-RPC peer, and a running server + client pair."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Client, Limits, Server
from minimcp.server.connection import ServerConnection
from minimcp.transports.memory import MemoryTransport, memory_pair


class RawPeer:
    """The far end of a transport, driven by hand with raw JSON."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport

    async def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else msgspec.json.encode(message)
        await self.transport.send(data)

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            data = await self.transport.receive()
        result: dict[str, Any] = msgspec.json.decode(data)
        return result

    async def nothing_for(self, seconds: float = 0.2) -> bool:
        """True when no message arrives within ``seconds``."""
        with anyio.move_on_after(seconds):
            await self.transport.receive()
            return False
        return True

    async def request(self, id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        return await self.recv()

    async def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        reply = await self.request(
            "init",
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply


@contextlib.asynccontextmanager
async def raw_client(
    server: Server, *, limits: Limits | None = None
) -> AsyncIterator[tuple[RawPeer, ServerConnection]]:
    """Serve ``server`` on a memory pair; yield the raw client end and the server connection."""
    a, b = memory_pair(limits=limits)
    async with anyio.create_task_group() as tg:
        conn = await tg.start(server.serve, a)
        try:
            yield RawPeer(b), conn
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def connected(server: Server, **client_options: Any) -> AsyncIterator[tuple[Client, ServerConnection]]:
    """A minimcp client connected to ``server`` in memory."""
    a, b = memory_pair()
    async with anyio.create_task_group() as tg:
        conn = await tg.start(server.serve, a)
        async with Client(b, **client_options) as client:
            yield client, conn
        tg.cancel_scope.cancel()


def counted_urandom(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the reads of ``os.urandom`` from now on: the list's one item is the count."""
    drawn = [0]
    urandom = os.urandom

    def counted(n: int) -> bytes:
        drawn[0] += 1
        return urandom(n)

    monkeypatch.setattr(os, "urandom", counted)
    return drawn
