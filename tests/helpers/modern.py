"""Shared by several test files: what tests/scenarios/test_modern.py sets up and others reuse."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import booking as booking_example

from minimcp import (
    Accepted,
    Cancelled,
    Context,
    Declined,
    Server,
)
from minimcp.wire.types import TextContent
from tests.helpers import RawPeer, raw_client
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture

V = "2026-07-28"


K_VERSION = "io.modelcontextprotocol/protocolVersion"


K_CAPS = "io.modelcontextprotocol/clientCapabilities"


K_INFO = "io.modelcontextprotocol/clientInfo"


K_LEVEL = "io.modelcontextprotocol/logLevel"


K_SERVER = "io.modelcontextprotocol/serverInfo"


NONE: dict[str, Any] = {}


FORM: dict[str, Any] = {"elicitation": {"form": {}}}


FORM_URL: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


KEY = b"k" * 32


PAGES = "http://127.0.0.1:9"


INVALID_STATE = "Invalid or expired requestState"


_ABSENT: Any = object()


def meta(
    caps: dict[str, Any] = FORM, *, client: str | None = "raw", version: Any = V, log_level: str | None = None
) -> dict[str, Any]:
    m: dict[str, Any] = {K_VERSION: version, K_CAPS: caps}
    if client is not None:
        m[K_INFO] = {"name": client, "version": "0"}
    if log_level is not None:
        m[K_LEVEL] = log_level
    return m


class Modern:
    """A raw client speaking 2026-07-28 by hand: fresh ids, the envelope on every request."""

    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer
        self.ids = 0

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    async def request(self, method: str, params: dict[str, Any] | None = None, **meta_options: Any) -> dict[str, Any]:
        body = dict(params or {})
        body.setdefault("_meta", meta(**meta_options))
        msg = await self.peer.request(self.next_id(), method, body)
        return msg

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        responses: Any = _ABSENT,
        state: Any = _ABSENT,
        **meta_options: Any,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if responses is not _ABSENT:
            params["inputResponses"] = responses
        if state is not _ABSENT:
            params["requestState"] = state
        return await self.request("tools/call", params, **meta_options)


def result_of(msg: dict[str, Any]) -> dict[str, Any]:
    assert "result" in msg, msg
    result: dict[str, Any] = msg["result"]
    return result


def error_of(msg: dict[str, Any], code: int) -> dict[str, Any]:
    assert "error" in msg, msg
    assert msg["error"]["code"] == code, msg
    error: dict[str, Any] = msg["error"]
    return error


def input_required(msg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The ``inputRequests`` and ``requestState`` of an ``input_required`` result (checked)."""
    result = result_of(msg)
    assert result["resultType"] == "input_required", result
    assert isinstance(result["requestState"], str) and result["requestState"]
    requests = result["inputRequests"]
    assert isinstance(requests, dict) and requests
    for entry in requests.values():
        assert set(entry) == {"method", "params"}  # bare: no jsonrpc, no id
    assert result["_meta"][K_SERVER]["name"]
    return requests, result["requestState"]


def complete(msg: dict[str, Any]) -> dict[str, Any]:
    result = result_of(msg)
    assert result["resultType"] == "complete", result
    assert K_SERVER in result["_meta"]
    return result


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def only(requests: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert len(requests) == 1, requests
    return next(iter(requests.items()))


@contextlib.asynccontextmanager
async def modern_peer(server: Server) -> AsyncIterator[tuple[Modern, Any]]:
    async with raw_client(server) as (peer, conn):
        yield Modern(peer), conn


async def wait_until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - polling state owned by other tasks
            await anyio.sleep(0.01)


def booking_app() -> booking_example.BookingApp:
    app = booking_example.build()
    app.pages_url = PAGES
    return app


NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


VALUE_FORM = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def describe(answer: Any) -> str:
    match answer:
        case Accepted(value):
            return f"hello {value['name']}"
        case Declined():
            return "declined"
        case Cancelled(reason):
            return f"cancelled {reason}"
    return "?"  # pragma: no cover


class Probe:
    """What the test tools did: how often the code before their first question ran, and more."""

    def __init__(self) -> None:
        self.pre: Counter[str] = Counter()
        self.cleaned: Counter[str] = Counter()
        self.slow = True


def make_server(probe: Probe, **options: Any) -> Server:
    """A server whose tools ask questions and count what re-runs."""
    app = Server("modern-test", "1.2.3", **options)

    @app.tool()
    async def ask_once(ctx: Context, tag: str = "") -> str:
        probe.pre[f"ask_once:{tag}"] += 1
        try:
            return describe(await ctx.elicit(f"Your name? {tag}".strip(), NAME_FORM))
        finally:
            probe.cleaned[f"ask_once:{tag}"] += 1

    @app.tool()
    async def ask_three(ctx: Context) -> str:
        probe.pre["ask_three"] += 1
        values = []
        for n in (1, 2, 3):
            answer = await ctx.elicit(f"Question {n}?", VALUE_FORM)
            assert isinstance(answer, Accepted)
            values.append(answer.value["value"])
        return ",".join(values)

    @app.tool(replayable=False)
    async def charge_card(ctx: Context) -> str:
        probe.pre["charge_card"] += 1
        return describe(await ctx.elicit("Confirm the charge, name?", NAME_FORM))

    @app.tool()
    async def quick(ctx: Context) -> str:
        probe.pre["quick"] += 1
        try:
            return describe(await ctx.elicit("Quick, your name?", NAME_FORM, timeout=0.2))
        finally:
            probe.cleaned["quick"] += 1

    @app.tool()
    async def slow_after(ctx: Context) -> str:
        probe.pre["slow_after"] += 1
        answer = describe(await ctx.elicit("Your name?", NAME_FORM))
        if probe.slow:
            probe.slow = False
            try:
                await anyio.sleep(30)
            finally:
                probe.cleaned["slow_after"] += 1
        return answer

    @app.tool()
    async def open_link(ctx: Context) -> str:
        answer = await ctx.elicit_url("Open this", "https://example.com/step")
        return "opened" if isinstance(answer, Accepted) else "not opened"

    @app.tool()
    async def think(ctx: Context) -> str:
        result = await ctx.sample("Say hi", max_tokens=5, timeout=30)
        content = result.content
        return content.text if isinstance(content, TextContent) else "?"

    @app.tool()
    async def think_default(ctx: Context) -> str:
        result = await ctx.sample("Say hi", max_tokens=5)  # the default timeout
        content = result.content
        return content.text if isinstance(content, TextContent) else "?"

    @app.tool()
    async def roots(ctx: Context) -> str:
        return ",".join(r.uri for r in await ctx.list_roots(timeout=30))

    @app.tool()
    async def chatty(ctx: Context) -> str:
        sent = await ctx.log("info", "working")
        return f"logged={sent}"

    @app.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @app.resource("mem://greeting", mime_type="text/plain")
    async def greeting() -> str:
        return "hi"

    @app.resource_template("mem://items/{item}")
    async def item(item: str) -> str:
        return f"item {item}"

    @app.prompt()
    async def topic(subject: str) -> str:
        return f"Tell me about {subject}"

    @app.completion
    async def complete_values(ref: dict[str, Any], name: str, value: str, context: dict[str, str]) -> list[str]:
        return [v for v in ("alpha", "beta") if v.startswith(value)]

    return app

