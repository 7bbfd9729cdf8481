"""stdio: newline-delimited JSON over a child process's stdin/stdout.

Server side (:func:`stdio_server`): reads this process's stdin, writes its
stdout. stdout carries only MCP messages: while serving, file descriptor 1 is
pointed at stderr, so a stray ``print()`` in a tool lands in the log instead
of corrupting the protocol. Pipes and sockets are read without threads
(non-blocking descriptors and :func:`anyio.wait_readable`); a terminal or a
regular file falls back to a worker thread.

Client side (:func:`stdio_client`): spawns the server and shuts it down the
way the spec asks: close its stdin, wait; terminate, wait; kill.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Sequence

import anyio
import anyio.abc

from minimcp.config import Limits
from minimcp.framing import LineFramer, Oversized
from minimcp.jsonrpc import RequestId
from minimcp.transports import MessageTooLarge

__all__ = ["StdioTransport", "stdio_client", "stdio_server"]

logger = logging.getLogger("minimcp.stdio")

_CHUNK = 65536


class _Reader:
    """Turns chunks of bytes into messages, with the framer's bound."""

    def __init__(self, limits: Limits) -> None:
        self.framer = LineFramer(limits.max_message_bytes)
        self.lines: deque[bytes | Oversized] = deque()
        self.eof = False
        self.limit = limits.max_message_bytes

    def next(self) -> bytes | None:
        while self.lines:
            line = self.lines.popleft()
            if isinstance(line, Oversized):
                raise MessageTooLarge(self.limit)
            return line
        if self.eof:
            raise anyio.EndOfStream
        return None

    def feed(self, chunk: bytes) -> None:
        if chunk:
            self.lines.extend(self.framer.feed(chunk))
        else:
            self.eof = True
            last = self.framer.end()
            if last is not None:
                self.lines.append(last)


class StdioTransport:
    """Messages over a byte-stream pair (a child's pipes, or our own fds)."""

    def __init__(
        self,
        receive_chunk: anyio.abc.ByteReceiveStream,
        send_bytes: anyio.abc.ByteSendStream,
        limits: Limits,
    ) -> None:
        self._in = receive_chunk
        self._out = send_bytes
        self._reader = _Reader(limits)
        self._lock = anyio.Lock()

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        async with self._lock:
            await self._out.send(message + b"\n")

    async def receive(self) -> bytes:
        reader = self._reader
        while True:
            line = reader.next()
            if line is not None:
                return line
            try:
                chunk = await self._in.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                chunk = b""
            reader.feed(chunk)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._out.aclose()


# --- server side: our own stdin / stdout ----------------------------------------------------


class _FdReceive(anyio.abc.ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self.fd = fd
        mode = os.fstat(fd).st_mode
        # epoll cannot watch regular files, and a terminal is shared with the shell.
        self.threaded = stat.S_ISREG(mode) or os.isatty(fd)
        if not self.threaded:
            os.set_blocking(fd, False)

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        if self.threaded:
            data = await anyio.to_thread.run_sync(os.read, self.fd, max_bytes, abandon_on_cancel=True)
        else:
            while True:
                try:
                    data = os.read(self.fd, max_bytes)
                    break
                except BlockingIOError:
                    await anyio.wait_readable(self.fd)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self.threaded:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fd, True)


class _FdSend(anyio.abc.ByteSendStream):
    def __init__(self, fd: int) -> None:
        self.fd = fd
        mode = os.fstat(fd).st_mode
        self.threaded = stat.S_ISREG(mode) or os.isatty(fd)
        if not self.threaded:
            os.set_blocking(fd, False)

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self.threaded:
                n = await anyio.to_thread.run_sync(os.write, self.fd, view)
            else:
                try:
                    n = os.write(self.fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                except BrokenPipeError as exc:
                    raise anyio.BrokenResourceError from exc
            view = view[n:]

    async def aclose(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


@contextlib.asynccontextmanager
async def stdio_server(*, limits: Limits | None = None) -> AsyncIterator[StdioTransport]:
    """A transport on this process's stdin and stdout.

    While it is open, ``sys.stdout`` and fd 1 point at stderr; MCP messages go
    to the original stdout through a private descriptor.
    """
    limits = limits or Limits()
    sys.stdout.flush()
    out_fd = os.dup(1)
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        transport = StdioTransport(_FdReceive(0), _FdSend(out_fd), limits)
        try:
            yield transport
        finally:
            await transport.aclose()
            await transport._in.aclose()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)


# --- client side: spawn the server ---------------------------------------------------------


@contextlib.asynccontextmanager
async def stdio_client(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    limits: Limits | None = None,
    stderr: int | None = None,
) -> AsyncIterator[StdioTransport]:
    """Spawn ``command`` and talk MCP over its stdin/stdout.

    Args:
        command: Program and arguments (no shell).
        env: Environment for the child (default: ours).
        cwd: Working directory for the child.
        limits: ``max_message_bytes`` and ``shutdown_timeout``.
        stderr: Where the child's stderr goes (default: inherited).

    On exit: close the child's stdin and wait ``shutdown_timeout``; then
    terminate and wait; then kill.
    """
    limits = limits or Limits()
    process = await anyio.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    transport = StdioTransport(process.stdout, process.stdin, limits)
    try:
        yield transport
    finally:
        with anyio.CancelScope(shield=True):
            await _shutdown(process, limits.shutdown_timeout)


async def _shutdown(process: anyio.abc.Process, grace: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for step in (None, process.terminate, process.kill):
        if step is not None:
            with contextlib.suppress(ProcessLookupError):
                step()
        with anyio.move_on_after(grace):
            await process.wait()
        if process.returncode is not None:
            break
    else:  # pragma: no cover - a process that survives SIGKILL
        logger.warning("stdio server process %s did not exit after kill", process.pid)
    with contextlib.suppress(Exception):
        await process.aclose()
