"""Shared by several test files: what tests/cli/test_cli.py sets up and others reuse."""

from __future__ import annotations

import os
import pathlib
import select
import subprocess
import sys
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


PY = sys.executable


RUN_TIMEOUT = 60  # seconds for one whole CLI run


READ_TIMEOUT = 30  # seconds to wait for one expected piece of terminal output


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX only")


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update({"NO_COLOR": "1", "TERM": "dumb", "PYTHONIOENCODING": "utf-8"})
    env.pop("BROWSER", None)
    env.update(extra)
    return env


def _controlling_terminal() -> None:
    """In the child: a session of its own, whose controlling terminal is its stdin (the pty)."""
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``python -m minimcp ARGS`` (or ``argv``) on a pseudo-terminal: read what it shows, type answers.

    The pty is the program's controlling terminal and the program its foreground process
    group, as in a shell: the ctrl-C character typed reaches every process of that group.
    """

    def __init__(self, args: list[str], env: dict[str, str], argv: list[str] | None = None) -> None:
        import pty

        self.master, self.slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv or [PY, "-m", "minimcp", *args],
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            cwd=str(REPO),
            env=env,
            preexec_fn=_controlling_terminal,
        )
        self.seen = ""  # everything read so far
        self._pos = 0  # where the next expect() starts looking
        self._eof = False

    def _pump(self, deadline: float) -> bool:
        """Read what is available before ``deadline``; False once nothing more can come."""
        if self._eof:
            return False
        ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every slave end is closed
            data = b""
        if not data:
            self._eof = True
            return False
        self.seen += data.decode("utf-8", errors="replace").replace("\r\n", "\n")
        return True

    def expect(self, text: str, timeout: float = READ_TIMEOUT) -> str:
        """Wait until ``text`` is shown (after the previous match); return the output up to it."""
        deadline = time.monotonic() + timeout
        while (index := self.seen.find(text, self._pos)) < 0:
            if time.monotonic() >= deadline or not self._pump(deadline):
                raise AssertionError(f"{text!r} did not appear within {timeout} s; the terminal shows:\n{self.seen}")
        shown = self.seen[self._pos : index + len(text)]
        self._pos = index + len(text)
        return shown

    def type(self, text: str) -> None:
        """Type ``text``; a trailing ``\\r`` is the Enter key."""
        os.write(self.master, text.encode())

    def answer(self, question: str, text: str) -> None:
        self.expect(question)
        self.type(text)

    def ctrl_c(self) -> None:
        """Type the interrupt character: the terminal sends SIGINT to its foreground process group."""
        import termios

        self.type(termios.tcgetattr(self.master)[6][termios.VINTR].decode())

    def ctrl_d(self) -> None:
        """Type the end-of-file character."""
        import termios

        self.type(termios.tcgetattr(self.master)[6][termios.VEOF].decode())

    def finish(self, timeout: float = RUN_TIMEOUT) -> tuple[int, str]:
        """Wait for the program to exit; its status and the output after the last match."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(min(deadline, time.monotonic() + 0.2))
        if self.proc.poll() is None:
            raise AssertionError(f"the program did not exit within {timeout} s; the terminal shows:\n{self.seen}")
        os.close(self.slave)  # our copy: reading to the end now ends at EOF
        self.slave = -1
        end = time.monotonic() + 5
        while self._pump(end) and time.monotonic() < end:
            pass
        return self.proc.returncode, self.seen[self._pos :]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self.master, self.slave):
            if fd >= 0:
                os.close(fd)
        self.master = self.slave = -1

