"""An idle session holds no standing machinery beyond the one task that reads (issue 19).

* An idle Streamable HTTP session holds one task (its reader), one event (its read's wait), no timer, and on
  asyncio one cancel scope (its task group); its traced bytes stay under a generous bound.
* The deadline timer exists only while a deadline is ahead: no task (trio) or loop timer
  (asyncio) before the first request with a timeout, none after its deadline has passed.
(The HTTP session's inbox is tested in ``test_http_throughput.py``.)
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections import Counter
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from minimcp import Limits, RequestTimeout
from minimcp.core.session import Session
from minimcp.transports.http import StreamableHTTPApp
from minimcp.transports.memory import memory_pair
from tests.helpers.http_lean import V, ask_server

TIMEOUT = 30
#: Idle sessions opened per measurement (beside a first one, opened before the baseline).
N = 40


async def initialize(app: StreamableHTTPApp) -> str:
    """Open one session (initialize, then initialized) as a client that then goes quiet; its id.

    Its requests hold no event of their own (an ASGI server that never says ``http.disconnect``
    after a response: the app wakes itself), so that the session's own can be counted.
    """
    sid: str | None = None
    for body in (
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ):
        headers = [
            (b"host", b"localhost"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]
        if sid is not None:
            headers += [(b"mcp-session-id", sid.encode()), (b"mcp-protocol-version", V.encode())]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 1)}
        sent: list[dict[str, Any]] = []
        messages = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

        async def receive(messages: list[dict[str, Any]] = messages) -> dict[str, Any]:
            if messages:
                return messages.pop()
            await anyio.sleep_forever()
            raise AssertionError  # pragma: no cover

        async def send(message: MutableMapping[str, Any], sent: list[dict[str, Any]] = sent) -> None:
            sent.append(dict(message))

        await app(scope, receive, send)
        if sid is None:
            sid = dict(sent[0]["headers"])[b"mcp-session-id"].decode()
        else:
            assert sent[0]["status"] == 202
    assert sid is not None
    return sid


def _machinery() -> Counter[str]:
    """Cancel scopes, events and loop timers alive, by kind (anyio's, asyncio's and trio's alike)."""
    gc.collect()
    out: Counter[str] = Counter()
    for o in gc.get_objects():
        name = type(o).__name__
        if name == "CancelScope":
            out["scope"] += 1
        elif name == "Event" or (name == "TimerHandle" and not o.cancelled()):  # (a cancelled one is garbage)
            out[name] += 1
    return out


async def test_an_idle_http_session_holds_one_task_one_event_and_no_timer(anyio_backend: str) -> None:
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            await initialize(app)  # lazily built state exists before the baseline
            tasks, kinds = len(anyio.get_running_tasks()), _machinery()
            for _ in range(N):
                await initialize(app)
            grown_tasks = len(anyio.get_running_tasks()) - tasks
            grown = _machinery()
            grown.subtract(kinds)
            assert app.session_count == N + 1
            # Before: 3 tasks (the app's for the session, the server's for the session's run,
            # the session's timer), 7 cancel scopes and 7 events per idle session.
            assert grown_tasks <= N, f"{grown_tasks} tasks for {N} idle sessions"
            # One event each: the session's read waiting for the next POST (the inbox's, a native one).
            assert grown["Event"] <= N, f"{grown['Event']} events for {N} idle sessions"
            assert grown["TimerHandle"] <= 0
            # asyncio: the session's task group; trio: that (anyio's scope over trio's), its handlers'
            # nursery and its task's own scope.
            per_session = 1 if anyio_backend == "asyncio" else 4
            assert grown["scope"] <= per_session * N, f"{grown['scope']} cancel scopes for {N} idle sessions"
            tg.cancel_scope.cancel()


async def test_an_idle_http_session_holds_under_14_kb(anyio_backend: str) -> None:
    """Traced bytes per idle session, the app driven directly (before: 26 KB on asyncio, 29 KB on trio).

    asyncio measures 12.3-12.6 KB; trio 13.3-13.9 KB from run to run of the same code (what trio's
    run loop keeps per task moves), so trio is held to issue 19's 15 KB, asyncio to 14 KB."""
    app = StreamableHTTPApp(ask_server())
    tracemalloc.start()
    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                await tg.start(app.run)
                for _ in range(3):
                    await initialize(app)
                gc.collect()
                before = tracemalloc.get_traced_memory()[0]
                for _ in range(N):
                    await initialize(app)
                gc.collect()
                per_session = (tracemalloc.get_traced_memory()[0] - before) / N
                tg.cancel_scope.cancel()
    finally:
        tracemalloc.stop()
    bound = 14_000 if anyio_backend == "asyncio" else 15_000
    assert per_session < bound, f"{per_session:.0f} bytes per idle HTTP session"


async def test_the_deadline_timer_runs_only_while_a_deadline_is_ahead(anyio_backend: str) -> None:
    a, b = memory_pair()
    limits = Limits(request_timeout=None)

    class Silent:  # answers nothing: a request with a timeout times out
        def handle_request(self, session: Session, request: object) -> object:
            return anyio.Event().wait()  # (not sleep_forever: on asyncio that is a loop timer)

        def handle_notification(self, session: Session, notification: object) -> None:
            pass

    client = Session(a, Silent(), limits=limits, name="client")  # type: ignore[arg-type]
    server = Session(b, Silent(), limits=limits, name="server")  # type: ignore[arg-type]
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tasks, timers = len(anyio.get_running_tasks()), _machinery()["TimerHandle"]
            await tg.start(client.run)
            await tg.start(server.run)
            # Idle: each session's own task only (before: a timer task each as well).
            assert len(anyio.get_running_tasks()) == tasks + 2
            with pytest.raises(TimeoutError):  # a request without a timeout: still no timer while it waits
                with anyio.fail_after(0.2):
                    await client.request("slow")
            await anyio.wait_all_tasks_blocked()
            assert len(anyio.get_running_tasks()) == tasks + 2  # (the peer's handler was cancelled with it)
            assert _machinery()["TimerHandle"] == timers
            with pytest.raises(RequestTimeout):
                # A deadline: the timer runs (a task on trio, a loop callback on asyncio) until it has passed.
                await client.request("slow", timeout=0.05)
            await anyio.wait_all_tasks_blocked()
            assert len(anyio.get_running_tasks()) == tasks + 2  # no timer task left (nor the peer's handler)
            assert _machinery()["TimerHandle"] == timers
            tg.cancel_scope.cancel()
