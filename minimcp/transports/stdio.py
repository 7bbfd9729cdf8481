"""stdio: newline-delimited JSON over a child process's stdin/stdout.

Server side (:func:`stdio_server`): reads this process's stdin, writes its
stdout. stdout carries only MCP messages: while serving, file descriptor 1 is
pointed at stderr, so a stray ``print()`` in a tool lands in the log instead
of corrupting the protocol. On asyncio, pipes and sockets go through the
event loop's own transports (:class:`_LoopStdio`); on trio they are read and
written without threads (non-blocking descriptors, :func:`anyio.wait_readable`);
a terminal or a regular file falls back to a worker thread. Output is queued
whole and written in gathered writes; both directions are bounded by
``Limits.stream_buffer_bytes``.

Client side (:func:`stdio_client`): spawns the server and shuts it down the
way the spec asks: close its stdin, wait; terminate, wait; kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import stat
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

import anyio
import anyio.abc

from minimcp.config import Limits
from minimcp.framing import LineFramer, Oversized
from minimcp.jsonrpc import RequestId
from minimcp.transports import MessageTooLarge, Transport

__all__ = ["StdioTransport", "stdio_client", "stdio_server"]

logger = logging.getLogger("minimcp.stdio")

_CHUNK = 65536
# Queued output is written at the end of the loop's turn, or sooner once this much has gathered,
# so the peer can start on it while we go on: batches without lockstep.
_BATCH = 8192


class _Reader:
    """Turns chunks of bytes into messages, with the framer's bound."""

    def __init__(self, limits: Limits) -> None:
        self.framer = LineFramer(limits.max_message_bytes)
        self.lines: deque[bytes | Oversized] = deque()
        self.eof = False
        self.limit = limits.max_message_bytes
        #: Bytes of whole lines waiting to be taken.
        self.queued = 0

    def next(self) -> bytes | None:
        while self.lines:
            line = self.lines.popleft()
            if isinstance(line, Oversized):
                raise MessageTooLarge(self.limit)
            self.queued -= len(line)
            return line
        if self.eof:
            raise anyio.EndOfStream
        return None

    def abandon(self) -> None:
        """Nobody can hear our answers any more: drop what waits (an unfinished line too), end the stream."""
        self.framer.end()
        self.lines.clear()
        self.queued = 0
        self.eof = True

    def feed(self, chunk: bytes) -> None:
        if chunk:
            lines = self.framer.feed(chunk)
            if lines:
                self.lines.extend(lines)
                self.queued += sum(len(line) for line in lines if type(line) is bytes)
        elif not self.eof:
            self.eof = True
            last = self.framer.end()
            if last is not None:
                self.lines.append(last)
                self.queued += len(last)


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
        self._reading: anyio.CancelScope | None = None
        self._limit = limits.stream_buffer_bytes
        self._grace = limits.shutdown_timeout
        # Output: whole messages wait in _queue; a background writer task (started when there
        # is something to write, gone when the queue is empty) writes everything queued in
        # gathered writes. Senders never write themselves, so cancelling one never cuts,
        # strands or holds up anyone's bytes.
        self._queue: list[bytes] = []
        self._queued = 0
        self._writer: Callable[[], object] | None = None  # cancels the running writer
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
            self._writer = _background(self._write_queued)

    def _check_open(self) -> None:
        if self._failed:
            raise anyio.BrokenResourceError
        if self._closing:
            raise anyio.ClosedResourceError

    async def _wait_progress(self) -> None:
        if self._progress is None:
            self._progress = anyio.Event()
        await self._progress.wait()

    async def _write_queued(self) -> None:
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
        finally:
            self._writer = None
            self._wake_senders()

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
                self._writer()
        with contextlib.suppress(Exception):
            await self._out.aclose()


def _background(fn: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], object]:
    """Run ``fn()`` in a task of its own, outside any task group; return what cancels it.

    (The writer must outlive whichever sender started it, and no task group is at hand.)
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import trio  # only ever reached when running on trio

        scope = trio.CancelScope()

        async def run() -> None:
            with scope:
                await fn()

        trio.lowlevel.spawn_system_task(run, name="minimcp stdio writer")
        return scope.cancel
    task = loop.create_task(fn())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return task.cancel


_RUNNING: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks


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
            wake = _threadsafe(done.set)

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


def _threadsafe(fn: Callable[[], object]) -> Callable[[], object]:
    """A function another thread can call to run ``fn`` in the current event loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import trio  # only ever reached when running on trio

        return functools.partial(trio.lowlevel.current_trio_token().run_sync_soon, fn)
    return functools.partial(loop.call_soon_threadsafe, fn)


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


class _LoopStdio(asyncio.Protocol):
    """Our own stdin/stdout on asyncio, through the loop's pipe or socket transports.

    Chunks arrive in :meth:`data_received` and are framed at once, so the
    descriptor stays registered with the selector instead of being added and
    removed for every read; reading pauses while more than
    ``limits.stream_buffer_bytes`` of lines wait to be taken. Messages sent in
    one turn of the loop leave in one write (sooner once 8 KiB gathered); a
    sender waits, before queueing, while more than ``stream_buffer_bytes`` is
    unwritten. No lock: a message is queued whole without awaiting, so two
    never interleave.
    """

    def __init__(self, limits: Limits) -> None:
        self._loop = asyncio.get_running_loop()
        self._reader = _Reader(limits)
        self._limit = limits.stream_buffer_bytes
        self._grace = limits.shutdown_timeout
        self._read: asyncio.ReadTransport | None = None
        self._write: asyncio.WriteTransport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._parts: list[bytes] = []
        self._unflushed = 0
        self._flush_scheduled = False
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._write_gone = False
        self._write_closed: asyncio.Future[None] = self._loop.create_future()
        self._closing = False
        self._one_socket = False

    @classmethod
    async def open(cls, read_fd: int, write_fd: int, limits: Limits) -> _LoopStdio:
        """Pipes through the loop's pipe transports; sockets (a Node client's stdio, inetd's
        one socket for both) through its socket transports. ``write_fd`` becomes ours."""
        self = cls(limits)
        loop = self._loop
        if _kind(read_fd) == "socket":
            read_sock = socket.socket(fileno=os.dup(read_fd))
            if os.path.samestat(os.fstat(read_fd), os.fstat(write_fd)):  # one socket both ways
                os.close(write_fd)
                both, _ = await loop.connect_accepted_socket(lambda: self, read_sock)
                self._read, self._write, self._one_socket = both, both, True
            else:
                write_sock = socket.socket(fileno=write_fd)
                self._write, _ = await loop.connect_accepted_socket(lambda: _WriteSide(self), write_sock)
                self._read, _ = await loop.connect_accepted_socket(lambda: self, read_sock)
        else:
            write_file = open(write_fd, "wb", buffering=0, closefd=True)  # noqa: ASYNC230, SIM115 - no I/O; the transport closes it
            self._write, _ = await loop.connect_write_pipe(lambda: _WriteSide(self), write_file)
            read_file = open(read_fd, "rb", buffering=0, closefd=False)  # noqa: ASYNC230, SIM115 - no I/O; fd 0 stays open
            self._read, _ = await loop.connect_read_pipe(lambda: self, read_file)
        self._write.set_write_buffer_limits(high=self._limit)
        return self

    # --- reading (asyncio.Protocol) ---

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        if reader.queued > self._limit and not self._reading_paused and self._read is not None:
            self._reading_paused = True
            self._read.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self._reader.feed(b"")
        self._wake_reader()
        return True  # a socket stays open for our answers (a pipe closes its read side anyway)

    def connection_lost(self, exc: Exception | None) -> None:
        self._reader.feed(b"")
        self._wake_reader()
        if self._one_socket:  # the write side is gone too
            self._write_lost()

    # --- flow control of the write side when it is our own socket (else _WriteSide) ---

    def pause_writing(self) -> None:
        self._writable(not self._write_gone)

    def resume_writing(self) -> None:
        self._writable(False)

    def _wake_reader(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def receive_nowait(self) -> bytes | None:
        """The next message if one is already here (``None`` if not); ends as :meth:`receive` does."""
        reader = self._reader
        line = reader.next()
        if line is not None:
            if self._reading_paused and reader.queued <= self._limit // 2 and self._read is not None:
                self._reading_paused = False
                self._read.resume_reading()
        elif self._closing:
            raise anyio.ClosedResourceError
        return line

    async def receive(self) -> bytes:
        while True:
            line = self.receive_nowait()
            if line is not None:
                return line
            self._waiter = waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    # --- writing ---

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        # Wait for room first: a sender cancelled while it waits leaves nothing queued.
        while self._writing_paused and not self._write_gone and not self._closing:
            if self._drained is None:
                self._drained = self._loop.create_future()
            await asyncio.shield(self._drained)
        if self._write_gone:
            raise anyio.BrokenResourceError
        if self._closing:
            raise anyio.ClosedResourceError
        self._put(message)

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Queue the message if that needs no waiting; ``False``: use :meth:`send`."""
        if self._writing_paused or self._write_gone or self._closing:
            return False
        self._put(message)
        return True

    def _put(self, message: bytes) -> None:
        self._parts.append(message)
        self._parts.append(b"\n")
        self._unflushed += len(message) + 1
        if self._unflushed > _BATCH:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        parts = self._parts
        if not parts:
            return
        self._parts = []
        self._unflushed = 0
        if self._write is not None and not self._write_gone:
            self._write.write(b"".join(parts))

    def _writable(self, paused: bool) -> None:
        self._writing_paused = paused
        if not paused:
            drained, self._drained = self._drained, None
            if drained is not None and not drained.done():
                drained.set_result(None)

    def _write_lost(self) -> None:
        self._write_gone = True
        if not self._closing:
            # Nobody can hear us any more: the connection is over, whatever stdin still holds.
            self._reader.abandon()
            self._wake_reader()
        self._writable(False)
        if not self._write_closed.done():
            self._write_closed.set_result(None)

    async def aclose(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._wake_reader()
        self._writable(False)  # senders waiting for room give up (ClosedResourceError)
        self._flush()
        if self._write is not None:
            self._write.close()  # writes what the pipe has not taken yet, then closes
            with anyio.move_on_after(self._grace, shield=True):
                await asyncio.shield(self._write_closed)
            if not self._write_closed.done():  # the reader is not taking it: drop the rest
                self._write.abort()
                with anyio.CancelScope(shield=True):
                    await self._write_closed
        if self._read is not None:
            self._read.close()
            self._read = None


class _WriteSide(asyncio.BaseProtocol):
    """Flow control and loss of the write pipe, passed to its :class:`_LoopStdio`."""

    def __init__(self, owner: _LoopStdio) -> None:
        self.owner = owner

    def pause_writing(self) -> None:
        self.owner.pause_writing()

    def resume_writing(self) -> None:
        self.owner.resume_writing()

    def data_received(self, data: bytes) -> None:
        pass  # a stdout socket carries nothing our way

    def eof_received(self) -> bool:
        return True  # the peer shut its sending half: we can still write

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._write_lost()


def _kind(fd: int) -> str:
    mode = os.fstat(fd).st_mode
    return "pipe" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "other"


class _GenericStdio(StdioTransport):
    """Our own stdin/stdout through anyio (trio; terminals and regular files via a thread)."""

    async def aclose(self) -> None:
        await super().aclose()
        await self._in.aclose()


async def _own_stdio(out_fd: int, limits: Limits) -> _LoopStdio | _GenericStdio:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        on_asyncio = False
    else:
        on_asyncio = True
    # Both pipes or both sockets (a terminal, a regular file or a mix takes the generic way).
    if on_asyncio and _kind(0) == _kind(out_fd) != "other":
        return await _LoopStdio.open(0, out_fd, limits)
    return _GenericStdio(_FdReceive(0), _FdSend(out_fd), limits)


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
        transport = await _own_stdio(out_fd, limits)
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
