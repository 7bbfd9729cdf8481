"""Server features beyond tools: resources, list changes, prompts, completion, logging,
progress, sampling, roots, and rich tool content -- end to end through the client
(and, where the wire matters, through a raw JSON-RPC peer)."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Client, Context, Limits, McpError, RequestTimeout, Server
from minimcp.server.connection import ServerConnection
from minimcp.wire.types import (
    AudioContent,
    CreateMessageParams,
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageParams,
    ProgressParams,
    PromptMessage,
    ResourceContents,
    ResourceLink,
    Root,
    TextContent,
)
from tests.helpers import connected, raw_client

TEMPLATE = "test://template/{id}/data"
BINARY = b"\x00\x01\xfe\xffbinary"


async def flush(client: Client) -> None:
    """Round trip: every notification the server sent before this is handled when it returns."""
    await client.ping()


# --- resources ---------------------------------------------------------------------------------


def resource_server(**kwargs: Any) -> Server:
    app = Server("res", **kwargs)

    def reader(i: int) -> Any:
        async def read() -> str:
            return f"item {i}"

        return read

    for i in range(5):
        app.resource(f"test://static/{i}", name=f"r{i}")(reader(i))

    @app.resource("test://text", name="text", mime_type="text/plain", description="Some text.")
    async def text() -> str:
        return "hello world"

    @app.resource("test://binary", name="binary", mime_type="application/octet-stream")
    async def binary() -> bytes:
        return BINARY

    @app.resource_template(TEMPLATE, name="data", mime_type="application/json", description="Item data.")
    async def data(id: str) -> str:
        return json.dumps({"id": id})

    return app


async def test_resources_list_paginates_and_client_follows_cursors() -> None:
    app = Server("res", limits=Limits(page_size=2))

    def reader(i: int) -> Any:
        async def read() -> str:
            return str(i)

        return read

    for i in range(5):
        app.resource(f"test://r/{i}", name=f"r{i}")(reader(i))
    async with raw_client(app) as (peer, _):
        await peer.initialize()
        first = (await peer.request(1, "resources/list"))["result"]
        assert [r["uri"] for r in first["resources"]] == ["test://r/0", "test://r/1"]
        second = (await peer.request(2, "resources/list", {"cursor": first["nextCursor"]}))["result"]
        assert [r["uri"] for r in second["resources"]] == ["test://r/2", "test://r/3"]
        third = (await peer.request(3, "resources/list", {"cursor": second["nextCursor"]}))["result"]
        assert [r["uri"] for r in third["resources"]] == ["test://r/4"]
        assert "nextCursor" not in third
        for i, bad in enumerate(["bogus", "-1", "99"]):
            reply = await peer.request(10 + i, "resources/list", {"cursor": bad})
            assert reply["error"]["code"] == -32602, bad
    async with connected(app) as (client, _):
        resources = await client.list_resources()
        assert [(r.uri, r.name) for r in resources] == [(f"test://r/{i}", f"r{i}") for i in range(5)]


async def test_unicode_digit_cursor_is_invalid_params() -> None:
    app = Server("res", limits=Limits(page_size=2))

    @app.resource("test://one")
    async def one() -> str:
        return "1"

    async with raw_client(app) as (peer, _):
        await peer.initialize()
        reply = await peer.request(1, "resources/list", {"cursor": "\u00b2"})
        assert reply["error"]["code"] == -32602


async def test_read_text_and_binary_resources() -> None:
    async with connected(resource_server()) as (client, _):
        listed = {r.uri: r for r in await client.list_resources()}
        assert listed["test://text"].mime_type == "text/plain"
        assert listed["test://text"].description == "Some text."
        (text,) = await client.read_resource("test://text")
        assert text == ResourceContents(uri="test://text", mime_type="text/plain", text="hello world")
        assert text.blob is None
        (blob,) = await client.read_resource("test://binary")
        assert blob.uri == "test://binary"
        assert blob.mime_type == "application/octet-stream"
        assert blob.text is None
        assert isinstance(blob.blob, str) and base64.b64decode(blob.blob) == BINARY


async def test_binary_resource_on_the_wire_is_base64_blob() -> None:
    async with raw_client(resource_server()) as (peer, _):
        await peer.initialize()
        reply = await peer.request(1, "resources/read", {"uri": "test://binary"})
        assert reply["result"]["contents"] == [
            {
                "uri": "test://binary",
                "mimeType": "application/octet-stream",
                "blob": base64.b64encode(BINARY).decode("ascii"),
            }
        ]


async def test_templates_list_and_read_through_template() -> None:
    async with connected(resource_server()) as (client, _):
        (template,) = await client.list_resource_templates()
        assert template.uri_template == TEMPLATE
        assert template.name == "data"
        assert template.mime_type == "application/json"
        assert template.description == "Item data."
        (contents,) = await client.read_resource("test://template/42/data")
        assert contents.uri == "test://template/42/data"
        assert contents.mime_type == "application/json"
        assert isinstance(contents.text, str) and json.loads(contents.text) == {"id": "42"}
        (other,) = await client.read_resource("test://template/abc-7/data")
        assert isinstance(other.text, str) and json.loads(other.text) == {"id": "abc-7"}


@pytest.mark.parametrize(
    "uri", ["test://nope", "test://template/1/2/data", "test://template//data", "test://text/extra"]
)
async def test_unknown_resource_is_32002(uri: str) -> None:
    async with connected(resource_server()) as (client, _):
        with pytest.raises(McpError) as info:
            await client.read_resource(uri)
        assert info.value.code == -32002
        assert uri in info.value.message
        assert info.value.data == {"uri": uri}


async def test_subscribe_update_reaches_only_subscribed_client_and_unsubscribe_stops_it() -> None:
    app = resource_server()
    got_a: list[tuple[str, Any]] = []
    got_b: list[tuple[str, Any]] = []
    async with (
        connected(app, on_notification=lambda m, p: got_a.append((m, p))) as (a, conn_a),
        connected(app, on_notification=lambda m, p: got_b.append((m, p))) as (b, conn_b),
    ):
        await a.subscribe("test://text")
        assert conn_a.subscriptions == {"test://text"} and conn_b.subscriptions == set()
        assert await app.notify_resource_updated("test://text") == 1
        assert await app.notify_resource_updated("test://binary") == 0
        await flush(a)
        await flush(b)
        assert got_a == [("notifications/resources/updated", {"uri": "test://text"})]
        assert got_b == []

        await a.unsubscribe("test://text")
        assert conn_a.subscriptions == set()
        assert await app.notify_resource_updated("test://text") == 0
        await flush(a)
        await flush(b)
        assert len(got_a) == 1 and got_b == []


async def test_resources_capability_only_when_resources_exist() -> None:
    async with connected(resource_server()) as (client, _):
        assert client.server_capabilities.resources == {"subscribe": True, "listChanged": True}

    only_template = Server("t")

    @only_template.resource_template(TEMPLATE)
    async def data(id: str) -> str:
        return id

    assert only_template.capabilities().resources == {"subscribe": True, "listChanged": True}

    bare = Server("bare")

    @bare.tool()
    async def noop() -> str:
        return ""

    async with connected(bare) as (client, _):
        assert client.server_capabilities.resources is msgspec.UNSET
        assert client.server_capabilities.prompts is msgspec.UNSET
        assert client.server_capabilities.tools == {"listChanged": True}


# --- list_changed ------------------------------------------------------------------------------


async def test_notify_list_changed_reaches_initialized_clients_only() -> None:
    app = resource_server()
    got: list[tuple[str, Any]] = []
    async with (
        connected(app, on_notification=lambda m, p: got.append((m, p))) as (client, _),
        raw_client(app) as (raw, raw_conn),
    ):
        # The raw peer initializes but never sends notifications/initialized.
        reply = await raw.request(
            "init",
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert "result" in reply and not raw_conn.initialized
        await flush(client)  # the server has now seen the client's notifications/initialized
        await app.notify_list_changed("tools")
        await flush(client)
        assert got == [("notifications/tools/list_changed", {})]
        assert await raw.nothing_for(0.1)

        await raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await raw.request(1, "ping")
        await app.notify_list_changed("prompts")
        assert (await raw.recv()) == {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
        await app.notify_list_changed("resources")
        assert (await raw.recv())["method"] == "notifications/resources/list_changed"
        await flush(client)
        assert [m for m, _ in got] == [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ]


async def test_notify_list_changed_rejects_unknown_kind() -> None:
    app = Server("x")
    for kind in ("tool", "roots", "", "Tools"):
        with pytest.raises(ValueError):
            await app.notify_list_changed(kind)


async def test_remove_tool_is_reflected_in_list_tools() -> None:
    app = Server("x")

    @app.tool()
    async def keep() -> str:
        return "k"

    @app.tool()
    async def drop() -> str:
        return "d"

    async with connected(app) as (client, _):
        assert [t.name for t in await client.list_tools()] == ["keep", "drop"]
        app.remove_tool("drop")
        assert [t.name for t in await client.list_tools()] == ["keep"]
        with pytest.raises(McpError) as info:
            await client.call_tool("drop")
        assert info.value.code == -32602
        assert (await client.call_tool("keep")).text == "k"


# --- prompts -----------------------------------------------------------------------------------


def prompt_server() -> Server:
    app = Server("prompts")

    @app.prompt(title="Greeting")
    async def greet(name: str, style: str = "plain") -> str:
        """Say hello."""
        return f"Hello {name} ({style})"

    @app.prompt(name="rich")
    async def rich_prompt() -> list[PromptMessage]:
        return [
            PromptMessage(role="user", content=ImageContent(data="AAAA", mime_type="image/png")),
            PromptMessage(
                role="assistant",
                content=EmbeddedResource(
                    resource=ResourceContents(uri="test://doc", mime_type="text/plain", text="the doc")
                ),
            ),
        ]

    return app


async def test_prompts_list() -> None:
    async with connected(prompt_server()) as (client, _):
        assert client.server_capabilities.prompts == {"listChanged": True}
        prompts = {p.name: p for p in await client.list_prompts()}
        assert set(prompts) == {"greet", "rich"}
        greet = prompts["greet"]
        assert greet.title == "Greeting"
        assert greet.description == "Say hello."
        assert greet.arguments is not None
        assert [(a.name, a.required) for a in greet.arguments] == [("name", True), ("style", False)]
        assert prompts["rich"].arguments is None


async def test_get_prompt_with_arguments() -> None:
    async with connected(prompt_server()) as (client, _):
        result = await client.get_prompt("greet", {"name": "Ann"})
        assert result.messages == [PromptMessage(role="user", content=TextContent(text="Hello Ann (plain)"))]
        assert result.description == "Say hello."
        result = await client.get_prompt("greet", {"name": "Bo", "style": "formal"})
        assert result.messages[0].content == TextContent(text="Hello Bo (formal)")


@pytest.mark.parametrize(
    ("name", "arguments", "needle"),
    [
        ("greet", None, "name"),
        ("greet", {"style": "x"}, "name"),
        ("greet", {"name": "a", "bogus": "x"}, "bogus"),
        ("missing", {}, "missing"),
    ],
)
async def test_get_prompt_errors_are_invalid_params(
    name: str, arguments: dict[str, str] | None, needle: str
) -> None:
    async with connected(prompt_server()) as (client, _):
        with pytest.raises(McpError) as info:
            await client.get_prompt(name, arguments)
        assert info.value.code == -32602
        assert needle in info.value.message


async def test_prompt_keeps_image_and_embedded_resource_messages() -> None:
    async with connected(prompt_server()) as (client, _):
        result = await client.get_prompt("rich")
        assert len(result.messages) == 2
        first, second = result.messages
        assert first.role == "user"
        assert first.content == ImageContent(data="AAAA", mime_type="image/png")
        assert second.role == "assistant"
        assert second.content == EmbeddedResource(
            resource=ResourceContents(uri="test://doc", mime_type="text/plain", text="the doc")
        )


# --- completion --------------------------------------------------------------------------------


async def test_completion_handler_gets_ref_argument_value_and_context() -> None:
    app = prompt_server()
    seen: list[tuple[Any, ...]] = []

    @app.completion
    async def complete(ref: dict[str, Any], name: str, value: str, context: dict[str, str]) -> list[str]:
        seen.append((ref, name, value, context))
        if name == "many":
            return [f"v{i}" for i in range(150)]
        if name == "hundred":
            return [f"v{i}" for i in range(100)]
        return [c for c in ("python", "pytorch", "rust") if c.startswith(value)]

    async with connected(app) as (client, _):
        assert client.server_capabilities.completions == {}
        ref = {"type": "ref/prompt", "name": "greet"}
        completion = await client.complete(ref, "style", "py", context={"name": "Ann"})
        assert seen == [(ref, "style", "py", {"name": "Ann"})]
        assert completion.values == ["python", "pytorch"]
        assert completion.total == 2
        assert completion.has_more is False

        resource_ref = {"type": "ref/resource", "uri": TEMPLATE}
        completion = await client.complete(resource_ref, "id", "r")
        assert seen[-1] == (resource_ref, "id", "r", {})
        assert completion.values == ["rust"]

        many = await client.complete(ref, "many", "")
        assert len(many.values) == 100
        assert many.values[0] == "v0" and many.values[-1] == "v99"
        assert many.has_more is True
        assert many.total == 150

        hundred = await client.complete(ref, "hundred", "")
        assert len(hundred.values) == 100 and hundred.has_more is False


async def test_completion_without_handler_is_not_declared_and_empty() -> None:
    async with connected(prompt_server()) as (client, _):
        assert client.server_capabilities.completions is msgspec.UNSET
        completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "name", "A")
        assert completion.values == []
        assert completion.has_more is not True


# --- logging -----------------------------------------------------------------------------------


def logging_server() -> Server:
    app = Server("log")

    @app.tool()
    async def chatty(ctx: Context) -> str:
        sent = [
            await ctx.log("debug", "dbg", logger="app"),
            await ctx.log("info", "hello", logger="app"),
            await ctx.log("error", {"code": 7, "why": "disk"}, logger="db"),
        ]
        return ",".join(str(s) for s in sent)

    return app


async def test_set_logging_level_filters_messages() -> None:
    got: list[LoggingMessageParams] = []
    async with connected(logging_server(), logging_handler=got.append) as (client, conn):
        await client.set_logging_level("warning")
        assert conn.log_level == "warning"
        result = await client.call_tool("chatty")
        assert result.text == "False,False,True"
        assert got == [LoggingMessageParams(level="error", data={"code": 7, "why": "disk"}, logger="db")]


async def test_default_logging_level_delivers_debug() -> None:
    got: list[LoggingMessageParams] = []
    async with connected(logging_server(), logging_handler=got.append) as (client, _):
        result = await client.call_tool("chatty")
        assert result.text == "True,True,True"
        assert [(m.level, m.data, m.logger) for m in got] == [
            ("debug", "dbg", "app"),
            ("info", "hello", "app"),
            ("error", {"code": 7, "why": "disk"}, "db"),
        ]


@pytest.mark.parametrize("params", [{"level": "verbose"}, {"level": "WARNING"}, {"level": 3}, {}])
async def test_invalid_logging_level_is_invalid_params(params: dict[str, Any]) -> None:
    async with raw_client(logging_server()) as (peer, conn):
        await peer.initialize()
        reply = await peer.request(1, "logging/setLevel", params)
        assert reply["error"]["code"] == -32602
        assert conn.log_level == "debug"
        ok = await peer.request(2, "logging/setLevel", {"level": "critical"})
        assert ok["result"] == {}
        assert conn.log_level == "critical"  # type: ignore[comparison-overlap]  # (mypy keeps the narrowing from above)


# --- progress ----------------------------------------------------------------------------------


async def test_progress_reaches_on_progress_in_order_without_duplicates() -> None:
    app = Server("p", limits=Limits(progress_interval=0))
    sent: list[bool] = []

    @app.tool()
    async def work(ctx: Context) -> str:
        for p in (1, 2, 2, 3):
            sent.append(await ctx.report_progress(p, 3, message=f"step {p}"))
        return "done"

    got: list[ProgressParams] = []
    async with connected(app) as (client, _):
        result = await client.call_tool("work", on_progress=got.append)
        assert result.text == "done"
    assert sent == [True, True, False, True]
    assert [(g.progress, g.total, g.message) for g in got] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert len({g.progress_token for g in got}) == 1


async def test_no_progress_token_means_no_progress_sent() -> None:
    app = Server("p", limits=Limits(progress_interval=0))

    @app.tool()
    async def work(ctx: Context) -> str:
        return str([await ctx.report_progress(1, 2), await ctx.report_progress(2, 2)])

    async with raw_client(app) as (peer, _):
        await peer.initialize()
        reply = await peer.request(1, "tools/call", {"name": "work"})
        assert reply["id"] == 1
        assert reply["result"]["content"] == [{"type": "text", "text": "[False, False]"}]
        assert await peer.nothing_for(0.1)

        # Control: with a token the same tool does send progress, before its response.
        await peer.send(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "work", "_meta": {"progressToken": 7}}}
        )
        first = await peer.recv()
        assert first == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": 7, "progress": 1, "total": 2},
        }
        assert (await peer.recv())["params"]["progress"] == 2
        final = await peer.recv()
        assert final["id"] == 2 and final["result"]["content"][0]["text"] == "[True, True]"


async def test_progress_after_the_call_finished_is_dropped() -> None:
    app = Server("p", limits=Limits(progress_interval=0))
    saved: list[Context] = []

    @app.tool()
    async def work(ctx: Context) -> str:
        saved.append(ctx)
        return str(await ctx.report_progress(1, 10))

    async with raw_client(app) as (peer, _):
        await peer.initialize()
        await peer.send(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "work", "_meta": {"progressToken": "tok"}}}
        )
        assert (await peer.recv())["method"] == "notifications/progress"
        reply = await peer.recv()
        assert reply["result"]["content"][0]["text"] == "True"
        (ctx,) = saved
        assert ctx.progress_token == "tok"
        assert await ctx.report_progress(5, 10) is False
        assert await ctx.report_progress(10, 10) is False
        assert await peer.nothing_for(0.1)


async def test_progress_rate_limit_lets_first_and_final_through() -> None:
    app = Server("p", limits=Limits(progress_interval=10))
    sent: list[bool] = []

    @app.tool()
    async def work(ctx: Context) -> str:
        for p in (1, 2, 3, 4, 5):
            sent.append(await ctx.report_progress(p, 10))
        sent.append(await ctx.report_progress(10, 10))
        return "ok"

    got: list[ProgressParams] = []
    async with connected(app) as (client, _):
        assert (await client.call_tool("work", on_progress=got.append)).text == "ok"
    assert sent == [True, False, False, False, False, True]
    assert [(g.progress, g.total) for g in got] == [(1, 10), (10, 10)]


def slow_progress_server(steps: int = 6) -> Server:
    app = Server("slow")

    @app.tool()
    async def slow(ctx: Context) -> str:
        for i in range(1, steps + 1):
            await anyio.sleep(0.1)
            await ctx.report_progress(i, steps)
        return "finished"

    return app


# The clocks below are generous next to the 0.1 s between two progress notifications, so that
# a busy machine (a gap of several tenths) changes no outcome; every call still lasts longer
# than its timeout.


async def test_reset_timeout_on_progress_keeps_a_long_call_alive() -> None:
    got: list[float] = []
    async with connected(slow_progress_server(steps=15)) as (client, _):
        result = await client.call_tool(
            "slow", timeout=1.0, reset_timeout_on_progress=True, on_progress=lambda p: got.append(p.progress)
        )
        assert result.text == "finished"  # after 1.5 s or more: longer than the timeout
        assert got == list(range(1, 16))


async def test_without_reset_the_same_call_times_out() -> None:
    async with connected(slow_progress_server(steps=15)) as (client, conn):
        with pytest.raises(RequestTimeout), anyio.fail_after(30):  # the call alone lasts 1.5 s or more
            await client.call_tool("slow", timeout=1.0, on_progress=lambda p: None)
        with anyio.fail_after(30):
            while conn.session.inflight_count:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)


async def test_reset_timeout_is_capped_by_max_request_time() -> None:
    async with connected(slow_progress_server(steps=50), limits=Limits(max_request_time=1.5)) as (client, _):
        start = anyio.current_time()
        with pytest.raises(RequestTimeout), anyio.fail_after(30):  # the call alone lasts 5 s or more
            await client.call_tool("slow", timeout=1.0, reset_timeout_on_progress=True)
        assert anyio.current_time() - start >= 1.45  # the cap, not the reset timeout, ended it


# --- sampling ----------------------------------------------------------------------------------


def sampling_server() -> Server:
    app = Server("s")

    @app.tool()
    async def ask(ctx: Context) -> str:
        result = await ctx.sample("What is 2+2?", max_tokens=42, system_prompt="be brief", temperature=0.5)
        assert isinstance(result.content, TextContent)
        return f"{result.role}|{result.model}|{result.content.text}"

    return app


async def test_sampling_without_handler_is_a_tool_error() -> None:
    async with connected(sampling_server()) as (client, conn):
        assert client.capabilities().sampling is msgspec.UNSET
        assert conn.client_capabilities.sampling is msgspec.UNSET
        result = await client.call_tool("ask")
        assert result.is_error is True
        assert "did not declare sampling" in result.text


async def test_sampling_with_handler() -> None:
    seen: list[CreateMessageParams] = []

    async def handler(params: CreateMessageParams) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    async with connected(sampling_server(), sampling_handler=handler) as (client, conn):
        assert client.capabilities().sampling == {}
        assert conn.client_capabilities.sampling == {}
        result = await client.call_tool("ask")
        assert result.is_error is not True
        assert result.text == "assistant|m|4"
    (params,) = seen
    assert params.max_tokens == 42
    assert params.system_prompt == "be brief"
    assert params.temperature == 0.5
    assert len(params.messages) == 1
    assert params.messages[0].role == "user"
    assert params.messages[0].content == TextContent(text="What is 2+2?")


# --- roots -------------------------------------------------------------------------------------


def roots_server() -> Server:
    app = Server("r")

    @app.tool()
    async def roots(ctx: Context) -> str:
        return json.dumps([[r.uri, r.name] for r in await ctx.list_roots()])

    return app


async def test_roots_declared_and_listed() -> None:
    async with connected(roots_server(), roots=[Root(uri="file:///a", name="a")]) as (client, conn):
        assert client.capabilities().roots == {"listChanged": True}
        assert conn.client_capabilities.roots == {"listChanged": True}
        result = await client.call_tool("roots")
        assert result.is_error is not True
        assert json.loads(result.text) == [["file:///a", "a"]]


async def test_roots_without_client_roots_is_a_tool_error() -> None:
    async with connected(roots_server()) as (client, conn):
        assert conn.client_capabilities.roots is msgspec.UNSET
        result = await client.call_tool("roots")
        assert result.is_error is True
        assert "roots" in result.text
        # Asked anyway, the client refuses roots/list with -32601.
        with pytest.raises(McpError) as info:
            await conn.session.request("roots/list")
        assert info.value.code == -32601


async def test_set_roots_notifies_server_and_updates_list() -> None:
    app = roots_server()
    changed: list[ServerConnection] = []
    event = anyio.Event()

    def on_changed(conn: ServerConnection) -> None:
        changed.append(conn)
        event.set()

    app.on_roots_changed = on_changed
    async with connected(app, roots=[Root(uri="file:///a", name="a")]) as (client, conn):
        await client.set_roots([Root(uri="file:///b", name="b"), Root(uri="file:///c", name="c")])
        with anyio.fail_after(5):
            await event.wait()
        assert changed == [conn]
        result = await client.call_tool("roots")
        assert json.loads(result.text) == [["file:///b", "b"], ["file:///c", "c"]]


# --- rich tool content -------------------------------------------------------------------------


RICH = [
    ImageContent(data=base64.b64encode(b"png").decode(), mime_type="image/png"),
    AudioContent(data=base64.b64encode(b"wav").decode(), mime_type="audio/wav"),
    EmbeddedResource(resource=ResourceContents(uri="test://doc", mime_type="text/plain", text="doc text")),
    EmbeddedResource(resource=ResourceContents(uri="test://bin", blob=base64.b64encode(b"\x00").decode())),
    ResourceLink(uri="test://linked", name="linked", mime_type="text/markdown", size=12, description="a link"),
]


def rich_server() -> Server:
    app = Server("rich")

    @app.tool()
    async def rich() -> list[Any]:
        return list(RICH)

    return app


async def test_tool_content_types_round_trip_through_client() -> None:
    async with connected(rich_server()) as (client, _):
        result = await client.call_tool("rich")
        assert result.is_error is not True
        assert result.content == RICH
        assert [type(c) for c in result.content] == [
            ImageContent, AudioContent, EmbeddedResource, EmbeddedResource, ResourceLink
        ]


async def test_tool_content_types_on_the_wire() -> None:
    async with raw_client(rich_server()) as (peer, _):
        await peer.initialize()
        reply = await peer.request(1, "tools/call", {"name": "rich"})
        content = reply["result"]["content"]
        assert [c["type"] for c in content] == ["image", "audio", "resource", "resource", "resource_link"]
        assert isinstance(RICH[0], ImageContent)
        assert content[0] == {"type": "image", "data": RICH[0].data, "mimeType": "image/png"}
        assert content[2]["resource"] == {"uri": "test://doc", "mimeType": "text/plain", "text": "doc text"}
        assert content[3]["resource"] == {"uri": "test://bin", "blob": "AA=="}
        assert content[4] == {
            "type": "resource_link", "uri": "test://linked", "name": "linked",
            "description": "a link", "mimeType": "text/markdown", "size": 12,
        }

