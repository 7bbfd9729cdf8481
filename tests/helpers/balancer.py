"""Processes of the tests of several workers: Debian's haproxy and nginx installed on first use, configs, stopping.

Shared by ``tests/scaleout/test_scaleout.py`` (three booking workers), ``test_scaleout_auth.py`` and
``test_scaleout_attacks.py`` (two authorizing workers, :class:`AuthWorkers`) and
``tests/scenarios/test_booking_auth_workers.py`` (two booking workers with ``--auth-issuer``): ``deploy/``'s
configs take the workers' ports in place of their placeholders.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import pytest

from tests.helpers.chromium import ChromiumUnavailable, ensure_installed
from tests.helpers.nanoidp import NanoIDP
from tests.helpers.redis_server import RedisProcess, free_port

WAIT = 30  # seconds: generous bounds on a busy machine
ROOT = pathlib.Path(__file__).resolve().parents[2]


def binary(package: str, name: str) -> str:
    """Debian's ``package``, installed on first use when missing and we are root; else a clear failure."""
    try:
        return ensure_installed(package, (name,), purpose="the tests of several workers behind a balancer")
    except ChromiumUnavailable as exc:  # (the installer's error, whatever the package)
        pytest.fail(str(exc), pytrace=False)


def render(template: str, front: int, ports: list[int], ws_ports: list[int] | None = None) -> str:
    """A deploy/ config with its placeholder ports (8100 in front, 8101... the workers, 8111... their WebSocket
    listeners) replaced; the lines of placeholder workers beyond ``ports`` (``w3`` of haproxy.cfg for two ports)
    and of WebSocket listeners beyond ``ws_ports`` (all of them by default) are left out."""
    ws_ports = ws_ports or []
    lines = template.splitlines(keepends=True)
    for n in range(len(ports) + 1, 10):
        lines = [line for line in lines if f"127.0.0.1:810{n}" not in line and not re.search(rf"\bw{n}\b", line)]
    for n in range(len(ws_ports) + 1, 10):
        lines = [line for line in lines if f"127.0.0.1:811{n}" not in line]
    text = "".join(lines).replace("127.0.0.1:8100", f"127.0.0.1:{front}")
    for n, port in enumerate(ports, 1):
        text = text.replace(f"127.0.0.1:810{n}", f"127.0.0.1:{port}")
    for n, port in enumerate(ws_ports, 1):
        text = text.replace(f"127.0.0.1:811{n}", f"127.0.0.1:{port}")
    assert not re.search(r"127\.0\.0\.1:81[01]\d", text), "a placeholder port was left"
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


@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[str, Any]]:
    """The fixture: a module's table of clusters, one per backend (:func:`started_once`), stopped at its end."""
    with stopped_at_end() as made:
        yield made


class Startable(Stoppable, Protocol):
    def start(self) -> None: ...


C = TypeVar("C", bound=Startable)


def started_once(made: dict[str, Any], backend: str, make: Callable[[], C]) -> C:
    """The module's cluster for ``backend`` in ``made`` (:func:`stopped_at_end`'s table): made and started on first
    use, the same one after."""
    if backend not in made:
        cluster = made[backend] = make()
        cluster.start()
    found: C = made[backend]
    return found


class TwoWorkers:
    """Redis, two worker processes (w1, w2) and haproxy in front of them (``deploy/haproxy.cfg`` cut to two),
    each on a free loopback port; :meth:`launch` starts them all, :meth:`stop` stops them all. With ``websocket``
    each worker also has a WebSocket listener (``ws_ports``), which haproxy's ``websockets`` backend reaches."""

    def __init__(self, tmp: pathlib.Path, *, websocket: bool = False) -> None:
        self.tmp = tmp
        self.redis = RedisProcess()
        self.front = free_port()
        self.ports = [free_port(), free_port()]
        self.ws_ports = [free_port(), free_port()] if websocket else []
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def public(self) -> str:
        """Where clients reach the service: haproxy (every worker's ``--public-url``)."""
        return f"http://127.0.0.1:{self.front}"

    @property
    def url(self) -> str:
        """The MCP endpoint at the balancer."""
        return self.public + "/mcp"

    @property
    def ws_url(self) -> str:
        """The MCP endpoint at the balancer, for WebSocket (the same address and path)."""
        return "ws" + self.url.removeprefix("http")

    def base(self, n: int) -> str:
        return f"http://127.0.0.1:{self.ports[n]}"

    def worker_url(self, n: int) -> str:
        return self.base(n) + "/mcp"

    def log(self, n: int) -> str:
        """Worker ``n``'s stderr so far."""
        return (self.tmp / f"w{n + 1}.log").read_text(errors="replace")

    def on_worker(self, url: str, n: int) -> str:
        """``url`` (at the balancer) sent to worker ``n`` instead, as a balancer might."""
        assert url.startswith(self.public + "/"), url
        return self.base(n) + url[len(self.public) :]

    def launch(self, argv_of: Callable[[int], list[str]], env: dict[str, str]) -> None:
        """Start Redis, worker ``n`` as ``argv_of(n)`` (from the repository, with ``env``) until it announces
        ``mcp: http://…``, then haproxy."""
        self.redis.start()
        for n in range(2):
            with (self.tmp / f"w{n + 1}.log").open("ab") as log:
                self.processes.append(subprocess.Popen(argv_of(n), cwd=ROOT, stdin=subprocess.DEVNULL,
                                                       stdout=subprocess.DEVNULL, stderr=log, env=env))  # fmt: skip
        for n in range(2):
            if self.ws_ports:
                wait_listening(self.ws_ports[n], self.processes[n], f"worker w{n + 1}'s WebSocket listener")
            deadline = time.monotonic() + 60
            while "mcp: http://" not in self.log(n):
                assert self.processes[n].poll() is None, f"worker w{n + 1} exited:\n{self.log(n)}"
                assert time.monotonic() < deadline, f"worker w{n + 1} did not start:\n{self.log(n)}"
                time.sleep(0.05)
        config = self.tmp / "haproxy.cfg"
        config.write_text(render((ROOT / "deploy" / "haproxy.cfg").read_text(), self.front, self.ports, self.ws_ports))
        with (self.tmp / "haproxy.log").open("ab") as log:
            balancer = subprocess.Popen([binary("haproxy", "haproxy"), "-db", "-f", str(config)],
                                        stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
        self.processes.append(balancer)
        wait_listening(self.front, balancer, "haproxy")

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop(process)
        self.redis.stop()


class AuthWorkers(TwoWorkers):
    """Two authorizing workers (``tests/helpers/auth_worker.py``, w1 and w2) on ``backend``, Redis and haproxy: one
    ``MINIMCP_STATE_KEYS``, one resource (the balancer's ``/mcp``), a ``JWTVerifier`` of ``idp`` on each, one page
    client pre-registered for both. With ``websocket`` each also listens for WebSocket (ws1, ws2);
    ``key_refetch_interval`` sets their ``Limits.auth_key_refetch_interval``."""

    KEYS = "a7" * 32  # one state key shared by both workers

    def __init__(self, backend: str, tmp: pathlib.Path, idp: NanoIDP, *, websocket: bool = False,
                 key_refetch_interval: float | None = None) -> None:  # fmt: skip
        super().__init__(tmp, websocket=websocket)
        self.backend, self.idp = backend, idp
        self.options = [] if key_refetch_interval is None else ["--key-refetch-interval", str(key_refetch_interval)]

    def start(self) -> None:
        page_client = self.idp.register_client(self.public + "/pages/callback", confidential=True, scopes=["openid"])
        assert page_client.client_secret is not None
        secret = page_client.client_secret
        env = {**os.environ, "MINIMCP_STATE_KEYS": self.KEYS, "PYTHONPATH": str(ROOT)}

        def argv(n: int) -> list[str]:
            listen = ["--port", str(self.ports[n])] + (["--ws-port", str(self.ws_ports[n])] if self.ws_ports else [])
            return [sys.executable, "-m", "tests.helpers.auth_worker", *listen, *self.options,
                    "--redis", self.redis.url, "--worker-id", f"w{n + 1}", "--public-url", self.public,
                    "--issuer", self.idp.issuer, f"--client-id={page_client.client_id}",
                    f"--client-secret={secret}",  # (one argument: a random secret may begin with "-")
                    "--backend", self.backend]  # fmt: skip

        self.launch(argv, env)
