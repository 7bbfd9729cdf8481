"""stdio: newline-delimited JSON over a child process's stdin/stdout.

Server side (:func:`stdio_server`): reads this process's stdin, writes its
stdout. stdout carries only MCP messages: while serving, file descriptor 1 is
pointed at stderr, so a stray ``print()`` in a tool lands in the log instead
of corrupting the protocol. On asyncio, pipes and sockets go through the
event loop's own transports (:class:`~minimcp.transports._stdio_asyncio.LoopStdio`); on trio they are read and
written without threads (non-blocking descriptors, :func:`anyio.wait_readable`);
a terminal or a regular file falls back to a worker thread. Output is queued
whole and written in gathered writes; both directions are bounded by
``Limits.stream_buffer_bytes``.

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
import threading
from collections.abc import AsyncIterator, Sequence

import anyio
import anyio.abc

from minimcp.core._backend import backend_name, start_owned, threadsafe_caller
from minimcp.core.config import Limits
from minimcp.core.transport import Transport
from minimcp.transports._lines import _Reader
from minimcp.wire.jsonrpc import RequestId

__all__ = ["StdioTransport", "stdio_client", "stdio_server"]

logger = logging.getLogger("minimcp.stdio")

_CHUNK = 65536


class StdioTransport:
    """Messages over a byte-stream pair (a child's pipes, or our own fds)."""

    def __init__(
        self,
        receive_chunk: anyio.abc.ByteReceiveStream,
        send_bytes: anyio.abc.ByteSendStream,
        limits: Limits,
        task_group: anyio.abc.TaskGroup | None = None,
    ) -> None:
        self._in = receive_chunk
        self._out = send_bytes
        self._reader = _Reader(limits)
        self._reading: anyio.CancelScope | None = None
        self._limit = limits.stream_buffer_bytes
        self._grace = limits.shutdown_timeout
        # Output: whole messages wait in _queue; a writer task (started when there is something
        # to write, gone when the queue is empty) writes everything queued in gathered writes.
        # Senders never write themselves, so cancelling one never cuts, strands or holds up
        # anyone's bytes. The writer runs in the opener's task group (stdio_client and
        # stdio_server hold one); without one, in a task this transport owns (see
        # minimcp.core._backend.start_owned), which aclose() ends and awaits.
        self._tg = task_group
        self._queue: list[bytes] = []
        self._queued = 0
        self._writer: anyio.CancelScope | None = None  # the running writer's scope
        self._owned: object = None  # the writer's task when no task group was given (a strong reference)
        self._progress: anyio.Event | None = None
        self._failed = False
        self._closing = False

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        """Queue the message whole (messages never interleave) for the writer task.

        Waits, before queueing, while more than ``limits.stream_buffer_bytes`` is queued: a
        sender cancelled while it waits leaves nothing behind.
        """
        self._check_open()
        while self._queued > self._limit:
            await self._wait_progress()
            self._check_open()
        self._put(message)

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Queue the message if that needs no waiting; ``False``: use :meth:`send`."""
        if self._failed or self._closing or self._queued > self._limit:
            return False
        self._put(message)
        return True

    def _put(self, message: bytes) -> None:
        self._queue.append(message)
        self._queue.append(b"\n")
        self._queued += len(message) + 1
        if self._writer is None:
            self._writer = scope = anyio.CancelScope()
            if self._tg is not None:
                self._tg.start_soon(self._write_queued, scope)
            else:
                self._owned = start_owned(self._write_queued, scope)

    def _check_open(self) -> None:
        if self._failed:
            raise anyio.BrokenResourceError
        if self._closing:
            raise anyio.ClosedResourceError

    async def _wait_progress(self) -> None:
        if self._progress is None:
            self._progress = anyio.Event()
        await self._progress.wait()

    async def _write_queued(self, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await self._write_all()
        finally:
            self._writer = None
            self._wake_senders()

    async def _write_all(self) -> None:
        try:
            while self._queue:
                data = b"".join(self._queue)
                self._queue.clear()
                self._queued = 0
                self._wake_senders()
                await self._out.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._broken()
        except Exception:  # pragma: no cover - a stream failing some other way: the connection is over
            logger.exception("stdio: writing failed")
            self._broken()

    def _wake_senders(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.set()

    def _broken(self) -> None:
        # Nobody can hear us any more: the connection is over, whatever is left to read.
        self._failed = True
        self._queue.clear()
        self._queued = 0
        self._reader.abandon()
        if self._reading is not None:
            self._reading.cancel()

    def receive_nowait(self) -> bytes | None:
        """The next message if one is already here (``None`` if not); ends as :meth:`receive` does."""
        return self._reader.next()

    async def receive(self) -> bytes:
        reader = self._reader
        while True:
            line = reader.next()
            if line is not None:
                return line
            chunk = b""
            with anyio.CancelScope() as self._reading:
                try:
                    chunk = await self._in.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    chunk = b""
            self._reading = None
            if not reader.eof:
                reader.feed(chunk)

    async def aclose(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self._writer is not None:  # give the last messages a moment to leave, then stop the writer
            with anyio.move_on_after(self._grace, shield=True):
                while self._writer is not None:
                    await self._wait_progress()
            if self._writer is not None:
                self._writer.cancel()
                with anyio.CancelScope(shield=True):  # it ends at once: no task outlives the close
                    while self._writer is not None:
                        await self._wait_progress()
        with contextlib.suppress(Exception):
            await self._out.aclose()


# --- server side: our own stdin / stdout ----------------------------------------------------


class _FdReceive(anyio.abc.ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self.fd = fd
        mode = os.fstat(fd).st_mode
        # epoll cannot watch regular files, and a terminal is shared with the shell.
        self.terminal = _TerminalRead(fd) if os.isatty(fd) else None
        self.threaded = stat.S_ISREG(mode) or self.terminal is not None
        if not self.threaded:
            os.set_blocking(fd, False)

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        if self.terminal is not None:
            data = await self.terminal.read(max_bytes)
        elif self.threaded:
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


class _TerminalRead:
    """Reads a terminal on a daemon thread of its own.

    A read nobody waits for any more (ctrl-C) stays blocked until the next line; on a
    worker thread of the event loop it would hold up the process's exit until then.
    An abandoned read is taken up again by the next :meth:`read`, so no line is lost.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._done: anyio.Event | None = None  # set when the running read has its outcome
        self._outcome: bytes | OSError = b""

    async def read(self, max_bytes: int) -> bytes:
        if self._done is None:
            self._done = done = anyio.Event()
            wake = threadsafe_caller(done.set)

            def work() -> None:
                try:
                    self._outcome = os.read(self.fd, max_bytes)
                except OSError as exc:
                    self._outcome = exc
                with contextlib.suppress(RuntimeError):  # the event loop has ended meanwhile
                    wake()

            threading.Thread(target=work, name="minimcp stdin", daemon=True).start()
        await self._done.wait()
        self._done = None
        if isinstance(self._outcome, OSError):
            raise self._outcome
        return self._outcome


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


class _GenericStdio(StdioTransport):
    """Our own stdin/stdout through anyio (trio; terminals and regular files via a thread)."""

    async def aclose(self) -> None:
        await super().aclose()
        await self._in.aclose()


async def _own_stdio(out_fd: int, limits: Limits, tg: anyio.abc.TaskGroup) -> Transport:
    if backend_name() == "asyncio":
        from minimcp.transports._stdio_asyncio import LoopStdio, kind

        # Both pipes or both sockets (a terminal, a regular file or a mix takes the generic way).
        if kind(0) == kind(out_fd) != "other":
            return await LoopStdio.open(0, out_fd, limits)
    return _GenericStdio(_FdReceive(0), _FdSend(out_fd), limits, tg)


@contextlib.asynccontextmanager
async def stdio_server(*, limits: Limits | None = None) -> AsyncIterator[Transport]:
    """A transport on this process's stdin and stdout.

    While it is open, ``sys.stdout`` and fd 1 point at stderr; MCP messages go
    to the original stdout through a private descriptor.
    """
    limits = limits or Limits()
    sys.stdout.flush()
    out_fd = os.dup(1)
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    blocking_in = os.get_blocking(0)
    blocking_out = os.get_blocking(saved_stdout)
    try:
        async with anyio.create_task_group() as tg:  # the writer's (on trio, or a terminal)
            transport = await _own_stdio(out_fd, limits, tg)
            try:
                yield transport
            finally:
                await transport.aclose()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        # The descriptors share their open files with our parent's: leave them as we found them.
        with contextlib.suppress(OSError):
            os.set_blocking(0, blocking_in)
        with contextlib.suppress(OSError):
            os.set_blocking(saved_stdout, blocking_out)
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
    new_session: bool = True,
) -> AsyncIterator[StdioTransport]:
    """Spawn ``command`` and talk MCP over its stdin/stdout.

    Args:
        command: Program and arguments (no shell).
        env: Environment for the child (default: ours).
        cwd: Working directory for the child.
        limits: ``max_message_bytes`` and ``shutdown_timeout``.
        stderr: Where the child's stderr goes (default: inherited).
        new_session: Start the child in a session of its own (POSIX), so the
            terminal's ctrl-C reaches only us and we shut the child down as
            below; ``False`` keeps it in ours (a server that asks on /dev/tty).

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
        start_new_session=new_session,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        async with anyio.create_task_group() as tg:  # the writer's
            transport = StdioTransport(process.stdout, process.stdin, limits, tg)
            try:
                yield transport
            finally:
                with anyio.CancelScope(shield=True):
                    await transport.aclose()  # (already closed by a Session that ran on it)
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
