"""Processes of the tests of several workers: Debian's haproxy and nginx installed on first use, configs, stopping.

Shared by ``tests/scaleout/test_scaleout.py`` (three booking workers) and ``test_scaleout_auth.py`` (two
authorizing workers): ``deploy/``'s configs take the workers' ports in place of their placeholders.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from tests.helpers.chromium import ChromiumUnavailable, ensure_installed

WAIT = 30  # seconds: generous bounds on a busy machine


def binary(package: str, name: str) -> str:
    """Debian's ``package``, installed on first use when missing and we are root; else a clear failure."""
    try:
        return ensure_installed(package, (name,), purpose="the tests of several workers behind a balancer")
    except ChromiumUnavailable as exc:  # (the installer's error, whatever the package)
        pytest.fail(str(exc), pytrace=False)


def render(template: str, front: int, ports: list[int]) -> str:
    """A deploy/ config with its placeholder ports (8100 in front, 8101... the workers) replaced; the lines of
    placeholder workers beyond ``ports`` (``w3`` of haproxy.cfg for two ports) are left out."""
    lines = template.splitlines(keepends=True)
    for n in range(len(ports) + 1, 10):
        lines = [line for line in lines if f"127.0.0.1:810{n}" not in line and not re.search(rf"\bw{n}\b", line)]
    text = "".join(lines).replace("127.0.0.1:8100", f"127.0.0.1:{front}")
    for n, port in enumerate(ports, 1):
        text = text.replace(f"127.0.0.1:810{n}", f"127.0.0.1:{port}")
    assert not re.search(r"127\.0\.0\.1:810\d", text), "a placeholder port was left"
    return text


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{what} exited with {process.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not listen on {port}")


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after ``WAIT`` seconds."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Stoppable(Protocol):
    def stop(self) -> None: ...


@contextlib.contextmanager
def stopped_at_end() -> Iterator[dict[str, Any]]:
    """A table for what a test module starts (a cluster per backend, each with ``stop()``), all stopped at its end."""
    made: dict[str, Stoppable] = {}
    try:
        yield made
    finally:
        for thing in made.values():
            thing.stop()
