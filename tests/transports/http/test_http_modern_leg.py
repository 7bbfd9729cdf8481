"""How a 2026-07-28 POST ends on the ASGI side: the app's call returns once its exchange is over.

The leg answers a request that needs no stream with one JSON body: a quick one has no watcher
task; a slower one has one, still waiting in ``receive``, which then ends on the
``http.disconnect`` an ASGI server reports after a sent response, or, from a server that reports
nothing, at the latest after ``keepalive_interval``, with nothing written after the reply. Driven at the ASGI level (the
scope, ``receive`` and ``send`` in the test's hands), on asyncio and trio.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from minimcp import Server
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.http_modern_leg import call_scope

TIMEOUT = 30


def quick_server(started: anyio.Event | None = None, cancelled: anyio.Event | None = None) -> Server:
    server = Server("leg", "1.0.0")
    started = started or anyio.Event()
    cancelled = cancelled or anyio.Event()

    @server.tool()
    async def hello() -> str:
        """Answers at once."""
        return "hi"

    @server.tool()
    async def slow() -> str:
        """Answers after a few of the leg's sweeps: its POST has a watcher by then."""
        await anyio.sleep(0.8)
        return "hi"

    @server.tool()
    async def forever() -> str:
        """Runs until cancelled (then says so)."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    return server




async def post_once(
    app: StreamableHTTPApp, tool: str, *, reports_end: bool, leaves: anyio.Event | None = None
) -> list[dict[str, Any]]:
    """One POST through ``app``; ``reports_end``: ``receive`` answers ``http.disconnect`` once the
    response is sent (as ASGI servers do), else it never returns again; ``leaves``: the client goes
    away once that is set. The messages sent back."""
    scope, content = call_scope(tool)
    sent: list[dict[str, Any]] = []
    answered = leaves or anyio.Event()
    bodies = [{"type": "http.request", "body": content, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop()
        if not reports_end:
            await anyio.sleep_forever()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    await app(scope, receive, send)
    return sent


def json_reply(sent: list[dict[str, Any]]) -> dict[str, Any]:
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]  # nothing after the reply
    assert sent[0]["status"] == 200
    assert dict(sent[0]["headers"])[b"content-type"] == b"application/json"
    reply: dict[str, Any] = json.loads(sent[1]["body"])
    return reply


@pytest.mark.parametrize("tool", ["hello", "slow"])
async def test_a_json_answer_ends_the_post_when_the_server_reports_the_exchange_over(tool: str) -> None:
    """A keep-alive interval of an hour: the POST still ends as soon as its reply is sent, with or
    without a watcher."""
    app = StreamableHTTPApp(quick_server(), keepalive_interval=3600)
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            for _ in range(3):
                reply = json_reply(await post_once(app, tool, reports_end=True))
                assert reply["id"] == 7 and reply["result"]["content"][0]["text"] == "hi"
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("tool", ["hello", "slow"])
async def test_a_post_ends_within_the_keepalive_interval_when_the_server_reports_nothing(tool: str) -> None:
    """A server that never reports ``http.disconnect``: the POST's call still returns, and no
    keep-alive comment follows the JSON reply."""
    app = StreamableHTTPApp(quick_server(), keepalive_interval=2.0)
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            reply = json_reply(await post_once(app, tool, reports_end=False))
            assert reply["id"] == 7 and reply["result"]["content"][0]["text"] == "hi"
        tg.cancel_scope.cancel()


async def test_a_client_leaving_a_running_request_cancels_it() -> None:
    """The client goes away while its request runs on (past the leg's sweeps): the tool is
    cancelled, nothing is written, and the app's call returns."""
    started, cancelled = anyio.Event(), anyio.Event()
    app = StreamableHTTPApp(quick_server(started, cancelled), keepalive_interval=3600)
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            leaves = anyio.Event()
            async with anyio.create_task_group() as posting:

                async def post() -> None:
                    assert await post_once(app, "forever", reports_end=True, leaves=leaves) == []

                posting.start_soon(post)
                await started.wait()
                leaves.set()
            await cancelled.wait()
        tg.cancel_scope.cancel()
