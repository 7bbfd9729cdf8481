"""The spawned server's stderr, relayed by the command-line client: whole while the session runs, bounded after.

The server gets a pipe as its stderr instead of our terminal. While the session runs,
everything it writes is passed on (after any unfinished progress line or prompt). Once
the session ends, at most ``SHUTDOWN_LINES`` more lines are shown and the rest counted
in one note; after ctrl-C nothing more is shown at all. ``-v`` shows everything.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections.abc import AsyncIterator

import anyio

from minimcp.cli.terminal import Console

__all__ = ["SHUTDOWN_LINES", "StderrRelay", "relaying"]

#: Lines of the server's stderr shown after the session has ended (the rest is counted).
SHUTDOWN_LINES = 10
_CHUNK = 65536  # bytes per read of the pipe


class StderrRelay:
    """One pipe: the server writes its end, :meth:`pump` passes what arrives on to our stderr."""

    def __init__(self, console: Console, *, verbose: bool = False, shutdown_lines: int = SHUTDOWN_LINES) -> None:
        self.console = console
        self.verbose = verbose
        self.shutdown_lines = shutdown_lines
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.ended = False  # the session is over: what comes now is bounded
        self.shown_after_end = 0
        self.hidden_lines = 0
        self.hidden_bytes = 0
        self.done = anyio.Event()  # the pipe reached its end (the server and all it started are gone)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._at_line_start = True
        self._hidden_partial = False  # the last hidden bytes end inside a line

    def child_started(self) -> None:
        """The server has its copy of the write end: close ours, so the pipe ends when the server does."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def end(self) -> None:
        """The session is over: from now on, bounded."""
        self.ended = True

    async def pump(self) -> None:
        try:
            while True:
                try:
                    data = os.read(self.read_fd, _CHUNK)
                except BlockingIOError:
                    await anyio.wait_readable(self.read_fd)
                    continue
                except OSError:
                    break
                if not data:
                    break
                self._pass_on(data)
        finally:
            self.done.set()

    def _pass_on(self, data: bytes) -> None:
        if not self.verbose:
            if self.console.interrupted:
                self._hide(data)
                return
            if self.ended:
                room = self.shutdown_lines - self.shown_after_end
                cut = -1
                for _ in range(max(0, room)):
                    cut = data.find(b"\n", cut + 1)
                    if cut < 0:
                        break
                if room <= 0:
                    self._hide(data)
                    return
                if cut >= 0:  # the room is used up within this chunk
                    self._hide(data[cut + 1 :])
                    data = data[: cut + 1]
                self.shown_after_end += data.count(b"\n")
        text = self._decoder.decode(data)
        if not text:
            return
        if self._at_line_start:
            self.console.settle()
        err = self.console.err
        try:
            err.write(text)
            err.flush()
        except (BrokenPipeError, ValueError):
            pass
        self._at_line_start = text.endswith("\n")

    def _hide(self, data: bytes) -> None:
        if data:
            self.hidden_lines += data.count(b"\n")
            self.hidden_bytes += len(data)
            self._hidden_partial = not data.endswith(b"\n")

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1

    def report(self) -> None:
        """After the end: one note for what was not shown (nothing after ctrl-C)."""
        if not self._at_line_start and not self.console.interrupted:
            self._write_newline()
        if self.hidden_bytes and not self.console.interrupted:
            lines = self.hidden_lines + self._hidden_partial
            style = self.console.err_style
            self.console.note(style.dim(
                f"(the server wrote {lines} more line{'s' if lines != 1 else ''} to stderr while shutting down; "
                "-v shows them)"
            ))  # fmt: skip

    def _write_newline(self) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.console.err.write("\n")
            self.console.err.flush()
        self._at_line_start = True


@contextlib.asynccontextmanager
async def relaying(relay: StderrRelay | None, grace: float) -> AsyncIterator[None]:
    """Run ``relay`` while the block runs; after it, wait up to ``grace`` seconds for the pipe's end."""
    if relay is None:
        yield
        return
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay.pump)
            try:
                yield
            finally:
                relay.end()
                if not relay.console.interrupted:
                    # A process the server started may hold the pipe open: do not wait for it long.
                    with anyio.move_on_after(grace, shield=True):
                        await relay.done.wait()
                tg.cancel_scope.cancel()
    finally:
        relay.report()
        relay.close()
