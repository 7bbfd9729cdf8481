"""stdio on asyncio: our own stdin/stdout through the event loop's pipe or socket transports (the fast path)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat

import anyio

from minimcp.core.config import Limits
from minimcp.transports._lines import _Reader
from minimcp.wire.jsonrpc import RequestId

__all__ = ["LoopStdio", "kind"]

# Queued output is written at the end of the loop's turn, or sooner once this much has gathered,
# so the peer can start on it while we go on: batches without lockstep.
_BATCH = 8192


def kind(fd: int) -> str:
    mode = os.fstat(fd).st_mode
    return "pipe" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "other"



class LoopStdio(asyncio.Protocol):
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
    async def open(cls, read_fd: int, write_fd: int, limits: Limits) -> LoopStdio:
        """Pipes through the loop's pipe transports; sockets (a Node client's stdio, inetd's
        one socket for both) through its socket transports. ``write_fd`` becomes ours."""
        self = cls(limits)
        loop = self._loop
        if kind(read_fd) == "socket":
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
        # _Reader.feed for a non-empty chunk, inline (one call less per chunk on the hot path)
        lines = reader.framer.feed(data)
        if lines:
            reader.lines.extend(lines)
            reader.queued += sum(len(line) for line in lines if type(line) is bytes)
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
        lines = reader.lines
        line: bytes | None
        if lines and type(first := lines[0]) is bytes:  # _Reader.next's common case, inline
            lines.popleft()
            line = first
            reader.queued -= len(first)
        elif lines or reader.eof:
            line = reader.next()  # an oversized line, or the end
        else:
            line = None
        if line is not None:
            if self._reading_paused and reader.queued <= self._limit // 2 and self._read is not None:
                self._reading_paused = False
                self._read.resume_reading()
        elif self._closing:
            raise anyio.ClosedResourceError
        return line

    def receive_or_wait(self) -> bytes | asyncio.Future[None]:
        """The next message if one is already here; else a future done once one may be (await
        it, then ask again). Ends as :meth:`receive` does. A read loop taking its messages this
        way awaits no coroutine of the transport's: one call per message, waiting or not."""
        line = self.receive_nowait()
        if line is not None:
            return line
        self._waiter = waiter = self._loop.create_future()
        return waiter

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
    """Flow control and loss of the write pipe, passed to its :class:`LoopStdio`."""

    def __init__(self, owner: LoopStdio) -> None:
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
