"""Shared by the HTTP server tests: read a raw connection until the server closes it."""

from __future__ import annotations

import contextlib

import anyio
import anyio.abc


async def until_closed(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection (reads with no deadline of their own)."""
    got = b""
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        while True:
            got += await stream.receive()
    return got
