"""Shared by several test files: what tests/peers/test_url_browser.py sets up and others reuse."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pathlib
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc

from tests.helpers.chromium import find_chromium

REPO = pathlib.Path(__file__).resolve().parents[2]


STEP = 20.0  # seconds for one browser step (a CDP call, a page load)


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
]


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def child_env() -> dict[str, str]:
    """Our environment, with the repository importable (the example imports minimcp)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def tail(path: pathlib.Path, chars: int = 3000) -> str:
    """The end of a (small, local) log file."""
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


class CdpError(Exception):
    pass


class Cdp:
    """A minimal synchronous CDP client: one browser WebSocket, one flattened page session.

    Use it from a single worker thread; every wait is bounded by ``STEP``.
    """

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.session_id: str | None = None

    def _recv(self, deadline: float, what: str) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"CDP: no {what} within {STEP} s")
        try:
            message: dict[str, Any] = json.loads(self.ws.recv(timeout=remaining))
        except TimeoutError:
            raise TimeoutError(f"CDP: no {what} within {STEP} s") from None
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        """Send a command (to the page session unless ``browser``) and return its result."""
        request_id = next(self.ids)
        message: dict[str, Any] = {"id": request_id, "method": method, "params": params or {}}
        if not browser and self.session_id is not None:
            message["sessionId"] = self.session_id
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + STEP
        while True:
            reply = self._recv(deadline, f"answer to {method}")
            if reply.get("id") == request_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        """The first buffered or incoming event ``method`` of the page session (consumed)."""
        deadline = time.monotonic() + STEP
        while True:
            for i, event in enumerate(self.events):
                if event["method"] == method and event.get("sessionId") == self.session_id:
                    del self.events[i]
                    return event
            message = self._recv(deadline, f"event {method}")
            if "method" in message:
                self.events.append(message)

    def open_page(self) -> None:
        """A fresh tab, attached as a flattened session, with page events on."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)
        attached = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True)
        self.session_id = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in reply:
            raise CdpError(f"{expression!r} threw: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def page_state(self) -> dict[str, str]:
        return {
            "url": self.evaluate("location.href"),
            "title": self.evaluate("document.title"),
            "text": self.evaluate("document.body ? document.body.innerText : ''"),
        }


@contextlib.asynccontextmanager
async def headless_chromium(log_path: pathlib.Path) -> AsyncIterator[str]:
    """Start headless Chromium with a fresh profile; yield its browser DevTools WebSocket URL.

    Chromium runs in its own process group (it forks zygote, GPU and renderer processes);
    on the way out the whole group is terminated, then killed, and the profile removed.
    """
    executable = find_chromium()
    profile = pathlib.Path(tempfile.mkdtemp(prefix="minimcp-chromium-"))
    log = log_path.open("wb")
    process: anyio.abc.Process | None = None
    try:
        process = await anyio.open_process(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        port_file = profile / "DevToolsActivePort"
        with anyio.fail_after(30):
            while True:
                if process.returncode is not None:
                    raise AssertionError(
                        f"chromium exited with {process.returncode} before DevTools was up; log:\n{tail(log_path)}"
                    )
                lines = tail(port_file).splitlines()
                if len(lines) >= 2 and lines[0].isdigit() and lines[1].startswith("/devtools/browser/"):
                    break
                await anyio.sleep(0.05)
        yield f"ws://127.0.0.1:{int(lines[0])}{lines[1]}"
    finally:
        with anyio.CancelScope(shield=True):
            if process is not None:
                await stop_process_group(process)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


async def stop_process_group(process: anyio.abc.Process) -> None:
    """SIGTERM the group led by ``process`` (ours: start_new_session), wait; then SIGKILL it."""
    group = process.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, sig)
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is not None:
            break
    # Helpers of the group that outlived the main process.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await process.aclose()


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG_SIGNATURE), f"not a PNG: {data[:16]!r}"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height

