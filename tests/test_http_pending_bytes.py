"""A call waiting for an answer over Streamable HTTP holds little of the app's (issue 19).

The app is driven directly, as an ASGI server would drive it (no socket; the server's own
connection and request objects are not ours to count). Per pending elicitation the app holds:

* one coroutine frame of its own for the open response (``Reader.respond``) beside the ASGI
  entry point (``__call__``): the frames that opened it (``_post``, ``_read``) have returned;
* on asyncio no anyio cancel scope: the response's wait in ``receive()`` is ended through its
  own task (trio: one cancel scope);
* traced bytes (app, session, tool and the test's ASGI stand-in together) under a generous bound.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections import Counter
from collections.abc import MutableMapping
from typing import Any

import anyio
import anyio.abc

from minimcp.transports.http import StreamableHTTPApp
from tests.test_http_lean import V, ask_server, initialize

TIMEOUT = 30
#: Pending calls per measurement (beside a few opened before the baseline).
N = 60


class Calls:
    """Tool calls driven into the app, each left waiting for its answer (the client never answers)."""

    def __init__(self, app: StreamableHTTPApp, sid: str) -> None:
        self.app = app
        self.headers = [
            (b"host", b"localhost"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
            (b"mcp-session-id", sid.encode()),
            (b"mcp-protocol-version", V.encode()),
        ]
        self.asked = 0  # questions written to their response streams
        self.reached = anyio.Event()
        self.target = 0
        self.next_id = 1

    async def _one(self, body: bytes) -> None:
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop()
            await anyio.sleep_forever()
            raise AssertionError  # pragma: no cover

        async def send(message: MutableMapping[str, Any]) -> None:
            if b"elicitation/create" in message.get("body", b""):
                self.asked += 1
                if self.asked >= self.target:
                    self.reached.set()

        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": self.headers, "client": ("127.0.0.1", 1)}
        await self.app(scope, receive, send)

    async def open(self, tg: anyio.abc.TaskGroup, n: int) -> None:
        """Start ``n`` more calls; returns once each has asked its question."""
        self.target = self.asked + n
        self.reached = anyio.Event()
        for _ in range(n):
            call = {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"i": self.next_id}},
            }
            self.next_id += 1
            tg.start_soon(self._one, json.dumps(call).encode())
        await self.reached.wait()


def _held() -> Counter[str]:
    """The app's coroutine frames (by name) and anyio cancel scopes alive."""
    gc.collect()
    out: Counter[str] = Counter()
    for o in gc.get_objects():
        kind = type(o)
        if kind.__name__ == "coroutine" and "/minimcp/transports/http/" in o.cr_code.co_filename:
            out[o.cr_code.co_qualname] += 1
        elif kind.__name__ == "CancelScope" and kind.__module__.startswith("anyio"):
            out["anyio CancelScope"] += 1
    return out


async def _measure(anyio_backend: str) -> tuple[Counter[str], float]:
    app = StreamableHTTPApp(ask_server())
    tracemalloc.start()
    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                await tg.start(app.run)
                sid, _ = await initialize(app)
                calls = Calls(app, sid)
                await calls.open(tg, 5)  # lazily built state exists before the baseline
                held = _held()
                before = tracemalloc.get_traced_memory()[0]
                await calls.open(tg, N)
                gc.collect()
                per_call = (tracemalloc.get_traced_memory()[0] - before) / N
                grown = _held()
                grown.subtract(held)
                tg.cancel_scope.cancel()
    finally:
        tracemalloc.stop()
    return grown, per_call


async def test_a_pending_call_holds_one_response_frame_and_no_cancel_scope(anyio_backend: str) -> None:
    grown, _ = await _measure(anyio_backend)
    frames = {name: n for name, n in grown.items() if name != "anyio CancelScope" and n > 0}
    # Before: __call__, _post, _read and Reader.wait (4 per pending call), and an anyio cancel scope.
    assert sum(frames.values()) <= 2 * N, f"the app's coroutines per {N} pending calls: {frames}"
    # The test's own task for each call (an anyio task holds one), and on trio the response's wait.
    scopes = 1 if anyio_backend == "asyncio" else 2
    assert grown["anyio CancelScope"] <= scopes * N, f"{grown['anyio CancelScope']} cancel scopes for {N} pending calls"


async def test_a_pending_call_holds_few_bytes(anyio_backend: str) -> None:
    _, per_call = await _measure(anyio_backend)
    # Measured (CPython 3.11, anyio 4.16), test's own task per call included: before 11.1-11.3 KB on
    # asyncio, 14.0 KB on trio; after 9.5-9.7 KB and 13.2 KB.
    bound = 10_500 if anyio_backend == "asyncio" else 13_700
    assert per_call < bound, f"{per_call:.0f} bytes per pending HTTP call"
