"""A real ``redis-server`` for tests: Debian's binary on a free loopback port, as a tracked subprocess.

Installed on first use when missing and we are root (``apt-get install redis-server``), else a
clear failure. :class:`RedisProcess` can be stopped and started again on the same port (a Redis
restart); the ``redis`` fixture starts one and stops it in teardown. Used by ``tests/scaleout/test_bus.py``
and ``tests/scaleout/test_redis_used_states.py``.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.helpers.chromium import ChromiumUnavailable, ensure_installed

WAIT = 30  # seconds: generous bounds for a busy machine


def redis_server_binary() -> str:
    """Debian's redis-server; installed on first use when we are root (as Chromium is), else a clear failure."""
    try:
        return ensure_installed("redis-server", ("redis-server",), purpose="the tests of several workers")
    except ChromiumUnavailable as exc:  # (the installer's error, whatever the package)
        pytest.fail(str(exc), pytrace=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisProcess:
    """One redis-server on loopback, no persistence; stop() and start() again on the same port."""

    def __init__(self) -> None:
        self.binary = redis_server_binary()
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and self.process.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError(f"redis-server did not listen on {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@pytest.fixture
def redis() -> Iterator[RedisProcess]:
    server = RedisProcess()
    server.start()
    try:
        yield server
    finally:
        server.stop()


