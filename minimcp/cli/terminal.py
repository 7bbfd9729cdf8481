"""Terminal I/O of the command-line client: styled streams, lines read off the event loop, ctrl-C and ctrl-D.

Only the standard library touches the terminal. Streams have fixed roles: results go
to stdout; logs, progress, notes and the trace go to stderr; questions go to the
terminal the person types on (stdout when stdin and stdout are both terminals,
else stderr).

Lines are read on a daemon thread (``input()`` with readline on a terminal, so
defaults can be prefilled and edited; plain ``os.read`` otherwise) and awaited
through :func:`anyio.to_thread.run_sync`. A question the server withdraws is
abandoned without leaving a worker thread blocked, so the program can always exit.
Ctrl-D ends one read (:class:`LineReader`); ctrl-C is noted before the event loop
acts on it (:func:`note_interrupts`), so the run can end with one line saying what
it stopped, and the terminal's settings are put back after (:func:`restore_terminal`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any, TextIO

import anyio

__all__ = ["Console", "LineReader", "Style", "note_interrupts", "restore_terminal"]

_READ_CHUNK = 4096  # bytes per os.read of a stdin that is not a terminal


# --- styling -------------------------------------------------------------------------------------------------


class Style:
    """ANSI styling for one stream; plain text when the stream is not a colour terminal."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.enabled = enabled
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "→←✓⚠·".encode(encoding)
            self.unicode = True
        except (UnicodeError, LookupError):
            self.unicode = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)

    def highlight(self, text: str) -> str:
        return self._wrap("1;4;33", text)

    def glyph(self, fancy: str, plain: str) -> str:
        return fancy if self.unicode else plain


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Console:
    """The three output streams, with one progress line on stderr that other output first settles."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, color: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        interactive_out = _isatty(sys.stdin) and _isatty(self.out)
        #: Where questions are shown: the terminal the person types on.
        self.ui = self.out if interactive_out else self.err
        self.out_style = Style(self.out, enabled=None if color is None else color and _isatty(self.out))
        self.err_style = Style(self.err, enabled=None if color is None else color and _isatty(self.err))
        self.ui_style = self.out_style if self.ui is self.out else self.err_style
        self.err_tty = _isatty(self.err)
        self._progress_width = 0  # characters of an unfinished progress line on stderr
        #: A prompt is shown and its line not yet typed: other output first moves to a new line.
        self.prompt_open = False
        #: Ctrl-C was pressed: the run is ending, and says so in one line; nothing else is shown.
        self.interrupted = False

    def settle(self) -> None:
        """End an unfinished progress line or prompt, so the next output starts on a fresh line."""
        if self.prompt_open:
            self.prompt_open = False
            try:
                self.ui.write("\n")
                self.ui.flush()
            except (BrokenPipeError, ValueError):
                pass
        if self._progress_width:
            self._progress_width = 0
            self.err.write("\n")
            self.err.flush()

    def _write(self, stream: TextIO, text: str) -> None:
        self.settle()
        try:
            stream.write(text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def result(self, text: str) -> None:
        """A result, on stdout."""
        self._write(self.out, text)

    def show(self, text: str) -> None:
        """Part of a question, where the person reads questions."""
        self._write(self.ui, text)

    def note(self, text: str) -> None:
        """A note, a log line or a trace line, on stderr."""
        self._write(self.err, text)

    def progress_line(self, text: str) -> None:
        """Draw (on a terminal: redraw in place) the progress line."""
        if not self.err_tty:
            self._write(self.err, text)
            return
        pad = max(0, self._progress_width - len(text))
        try:
            self.err.write("\r" + text + " " * pad + ("\b" * pad))
            self.err.flush()
        except (BrokenPipeError, ValueError):
            return
        self._progress_width = max(1, len(text))


# --- reading lines -------------------------------------------------------------------------------------------


class LineReader:
    """Reads answer lines from stdin on a daemon thread; awaited without blocking the event loop.

    On a terminal (stdin and stdout both TTYs) ``input()`` is used, with readline when
    it is available: the line is editable, and a default can be prefilled. Otherwise the
    prompt is written to ``prompt_stream`` and bytes are read from file descriptor 0.

    A read the caller stops waiting for (the server withdrew the question) stays open;
    the next read shows its own prompt and takes the line typed next. ``None`` means
    end of input: ctrl-D on a terminal ends that one read only (it cancels one question,
    and the next read waits for the person again); a closed pipe ends every read.
    """

    def __init__(
        self, prompt_stream: TextIO | None = None, *, use_input: bool | None = None, console: Console | None = None
    ) -> None:
        self.prompt_stream = prompt_stream or sys.stdout
        self.console = console
        if use_input is None:
            use_input = _isatty(sys.stdin) and _isatty(sys.stdout)
        self.use_input = use_input
        self.readline: ModuleType | None = None
        if use_input:
            try:
                import readline

                self.readline = readline
            except ImportError:  # pragma: no cover - Python built without readline
                self.readline = None
        self._cond = threading.Condition()
        self._busy = False  # the daemon thread is reading a line
        self._ready = False  # a line (or EOF) is waiting to be taken
        self._line: str | None = None
        self._buffer = b""
        self._eof = False  # the input is over for good (not a terminal: ctrl-D there ends one read)
        self._terminal = _isatty(sys.stdin)
        self._lock: anyio.Lock | None = None

    @property
    def can_prefill(self) -> bool:
        return self.readline is not None

    async def read(self, prompt: str, *, prefill: str | None = None, history: bool = False) -> str | None:
        """Show ``prompt`` and return the next line (without its newline), or ``None`` at end of input.

        ``history``: keep the line in readline's history (commands, not answers to questions).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            console = self.console
            if console is not None:
                console.settle()
            with self._cond:
                if self._eof:
                    return None
                if self._busy:
                    # An abandoned read is still waiting for a line: reuse it.
                    self._write_prompt(prompt)
                else:
                    self._busy, self._ready, self._line = True, False, None
                    thread = threading.Thread(
                        target=self._run, args=(prompt, prefill, history), name="minimcp-cli-input", daemon=True
                    )
                    thread.start()
            abandoned = threading.Event()

            def wait() -> str | None:
                with self._cond:
                    while not self._ready and not abandoned.is_set():
                        self._cond.wait()
                    if not self._ready:
                        return None
                    self._ready = False
                    return self._line

            if console is not None:
                console.prompt_open = True
            try:
                line = await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
            except BaseException:
                # Stop waiting; the line typed next goes to the next read. The prompt stays on screen.
                with self._cond:
                    abandoned.set()
                    self._cond.notify_all()
                raise
            if console is not None:
                console.prompt_open = line is None  # ctrl-D leaves the cursor after the prompt
            return line

    def _write_prompt(self, prompt: str) -> None:
        try:
            self.prompt_stream.write(prompt)
            self.prompt_stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _run(self, prompt: str, prefill: str | None, history: bool) -> None:
        try:
            line = self._read_input(prompt, prefill, history) if self.use_input else self._read_fd(prompt)
        except Exception:
            line = None
        with self._cond:
            self._busy = False
            self._ready = True
            self._line = line
            if line is None and not self._terminal:
                self._eof = True
            self._cond.notify_all()

    def _read_input(self, prompt: str, prefill: str | None, history: bool) -> str | None:
        rl = self.readline
        if rl is not None and prefill:
            rl.set_startup_hook(lambda: rl.insert_text(prefill))
        try:
            line = input(prompt)
        except EOFError:
            return None
        else:
            if rl is not None and line.strip() and not history:
                with contextlib.suppress(Exception):  # an answer, not a command: keep it out of the history
                    rl.remove_history_item(rl.get_current_history_length() - 1)
            return line
        finally:
            if rl is not None and prefill:
                rl.set_startup_hook(None)

    def _read_fd(self, prompt: str) -> str | None:
        self._write_prompt(prompt)
        while b"\n" not in self._buffer:
            chunk = os.read(0, _READ_CHUNK)
            if not chunk:
                rest, self._buffer = self._buffer, b""
                return rest.decode(errors="replace").rstrip("\r") if rest else None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").rstrip("\r")


# --- ctrl-C and the terminal's settings ----------------------------------------------------------------------


def note_interrupts(console: Console, noted: Callable[[], None]) -> Callable[[], None]:
    """On the first ctrl-C, mark ``console`` interrupted and call ``noted``, before the event loop's own
    SIGINT handler acts; returns the undo."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return lambda: None

    def on_sigint(signum: int, frame: FrameType | None) -> Any:
        if not console.interrupted:
            console.interrupted = True  # from now on nothing else is shown: one line says what stopped
            noted()
        return previous(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)

    def undo() -> None:
        if signal.getsignal(signal.SIGINT) is on_sigint:
            signal.signal(signal.SIGINT, previous)

    return undo


def restore_terminal() -> Callable[[], None]:
    """Save the terminal's settings; the returned function puts them back (a read may be cut short)."""
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except Exception:
        return lambda: None

    def restore() -> None:
        with contextlib.suppress(Exception):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    return restore
