"""The server role: handshake, ping, tools/list, tools/call; and the client's calls."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import anyio
import msgspec
import pytest

from minimcp import Accepted, Client, Context, Limits, McpError, Server, ToolError, UnsupportedVersion
from minimcp.transports.memory import memory_pair
from minimcp.wire.types import CallToolResult, ImageContent, TextContent
from minimcp.wire.versions import SUPPORTED
from tests.helpers import RawPeer, connected, raw_client


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class Totals(TypedDict):
    total: int


def make_server(**kwargs: Any) -> Server:
    app = Server("test", "1.2.3", instructions="be nice", **kwargs)

    @app.tool()
    async def add(a: int, b: Annotated[int, msgspec.Meta(ge=0, description="non-negative")] = 10) -> str:
        """Add two integers."""
        return str(a + b)

    @app.tool(name="point", title="A point")
    async def make_point(x: int, y: int) -> Point:
        return Point(x, y)

    @app.tool()
    async def weather(city: str) -> Weather:
        return Weather(city, 21.5)

    @app.tool()
    async def totals(values: list[int]) -> Totals:
        return {"total": sum(values)}

    @app.tool()
    async def image() -> list[TextContent | ImageContent]:
        return [TextContent(text="a pixel"), ImageContent(data="AAAA", mime_type="image/png")]

    @app.tool()
    async def explode() -> str:
        raise RuntimeError("secret /home/user/.ssh/id_rsa")

    @app.tool()
    async def refuse() -> str:
        raise ToolError("pick a smaller number")

    @app.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    async def explicit(q: str = "") -> str:
        return q

    @app.tool()
    async def who(ctx: Context) -> str:
        assert ctx.client_info is not None
        return f"{ctx.client_info.name} on {ctx.protocol_version}"

    @app.tool()
    async def nothing() -> None:
        return None

    return app


# --- handshake ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED)
async def test_initialize_echoes_each_supported_version(version: str) -> None:
    async with raw_client(make_server()) as (peer, conn):
        reply = await peer.initialize(version)
        result = reply["result"]
        assert result["protocolVersion"] == version
        assert result["serverInfo"] == {"name": "test", "version": "1.2.3"}
        assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
        assert result["instructions"] == "be nice"
        assert conn.protocol_version == version


@pytest.mark.parametrize("version", ["2099-01-01", "2024-01-01", "2026-07-28", ""])
async def test_initialize_answers_latest_for_unknown_versions(version: str) -> None:
    async with raw_client(make_server()) as (peer, _):
        reply = await peer.initialize(version)
        assert reply["result"]["protocolVersion"] == "2025-11-25"


async def test_client_refuses_a_version_it_does_not_speak() -> None:
    a, b = memory_pair()
    peer = RawPeer(b)

    async def fake_server() -> None:
        msg = await peer.recv()
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "result": {
                    "protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}
                },
            }
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        with pytest.raises(UnsupportedVersion) as info:
            async with Client(a):
                pass  # pragma: no cover - never entered
        assert "1999-01-01" in str(info.value)


async def test_ping_before_initialize_and_other_requests_refused() -> None:
    async with raw_client(make_server()) as (peer, _):
        assert await peer.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
        early = await peer.request(2, "tools/list")
        assert early["error"]["code"] == -32600 and "initialize" in early["error"]["message"]
        await peer.initialize()
        assert (await peer.request(3, "ping"))["result"] == {}
        assert (await peer.request(4, "nope/nope"))["error"]["code"] == -32601
        again = await peer.request(5, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "clientInfo": {"name": "x", "version": "1"}})
        assert again["error"]["code"] == -32600


async def test_initialize_with_bad_params_is_invalid_params() -> None:
    async with raw_client(make_server()) as (peer, _):
        reply = await peer.request(1, "initialize", {"protocolVersion": 5})
        assert reply["error"]["code"] == -32602


async def test_capabilities_follow_handlers() -> None:
    async def handler(q: Any) -> Any:
        return Accepted({})

    assert Client(memory_pair()[0]).capabilities().elicitation is msgspec.UNSET
    assert Client(memory_pair()[0], elicitation_handler=handler).capabilities().elicitation == {"form": {}}


async def test_client_sees_handshake_results() -> None:
    async with connected(make_server()) as (client, conn):
        assert client.server_info is not None and client.server_info.name == "test"
        assert client.protocol_version == "2025-11-25"
        assert client.instructions == "be nice"
        assert client.server_capabilities.tools == {"listChanged": True}
        await client.ping()
        with anyio.fail_after(5):
            while not conn.initialized:  # noqa: ASYNC110 - polls a state the test does not own, within a deadline
                await anyio.sleep(0.01)


async def test_server_ping_reaches_client() -> None:
    async with connected(make_server()) as (_client, conn):
        assert msgspec.json.decode(await conn.session.request("ping")) == {}


# --- tools ---------------------------------------------------------------------------------------


async def test_input_schema_from_type_hints() -> None:
    tools = {t.name: t for t in make_server().tools}
    assert tools["add"].input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer", "minimum": 0, "description": "non-negative", "default": 10},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert tools["add"].description == "Add two integers."
    assert tools["point"].title == "A point"
    assert tools["explicit"].input_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert tools["who"].input_schema == {"type": "object", "additionalProperties": False}
    assert tools["point"].output_schema == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert tools["add"].output_schema is None


def test_registration_errors() -> None:
    app = Server("x")

    @app.tool()
    async def dup() -> str:
        return ""

    with pytest.raises(ValueError, match="already registered"):
        app.tool(name="dup")(dup)

    def not_async() -> str:
        return ""

    with pytest.raises(TypeError, match="async"):
        app.tool(not_async)  # type: ignore[type-var]


async def test_tools_list_pagination_and_cursor_errors() -> None:
    app = make_server(limits=Limits(page_size=3))
    async with raw_client(app) as (peer, _):
        await peer.initialize()
        first = (await peer.request(1, "tools/list"))["result"]
        assert [t["name"] for t in first["tools"]] == ["add", "point", "weather"]
        cursor = first["nextCursor"]
        second = (await peer.request(2, "tools/list", {"cursor": cursor}))["result"]
        assert len(second["tools"]) == 3
        bad = await peer.request(3, "tools/list", {"cursor": "not-a-cursor"})
        assert bad["error"]["code"] == -32602
    async with connected(app) as (client, _):
        names = [t.name for t in await client.list_tools()]
        assert names == [t.name for t in app.tools] and len(names) == 10


async def test_call_tool_text_and_defaults() -> None:
    async with connected(make_server()) as (client, _):
        assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
        assert (await client.call_tool("add", {"a": 1})).text == "11"
        result = await client.call_tool("who")
        assert result.text == "minimcp-client on 2025-11-25"
        assert (await client.call_tool("nothing")).content == []


async def test_unknown_tool_is_invalid_params() -> None:
    async with connected(make_server()) as (client, _):
        with pytest.raises(McpError) as info:
            await client.call_tool("missing")
        assert info.value.code == -32602 and "missing" in info.value.message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": "one"}, "argument 'a': expected `int`, got `str`"),
        ({}, "missing required argument 'a'"),
        ({"a": 1, "b": -1}, "argument 'b'"),
        ({"a": 1, "c": 3}, "unknown argument 'c'"),
        ({"a": True}, "argument 'a'"),
    ],
)
async def test_argument_validation_errors_are_tool_errors_naming_the_argument(
    arguments: dict[str, Any], expected: str
) -> None:
    async with connected(make_server()) as (client, _):
        result = await client.call_tool("add", arguments)
        assert result.is_error is True
        assert expected in result.text


async def test_exceptions_become_short_tool_errors() -> None:
    async with connected(make_server()) as (client, _):
        boom = await client.call_tool("explode")
        assert boom.is_error is True
        assert "internal error" in boom.text and "ssh" not in boom.text and "Traceback" not in boom.text
        refused = await client.call_tool("refuse")
        assert refused.is_error is True and refused.text == "pick a smaller number"
        # the session keeps working
        assert (await client.call_tool("add", {"a": 0})).text == "10"


async def test_structured_output() -> None:
    async with connected(make_server()) as (client, _):
        point = await client.call_tool("point", {"x": 1, "y": 2})
        assert point.structured_content == {"x": 1, "y": 2}
        assert msgspec.json.decode(point.text) == {"x": 1, "y": 2}
        weather = await client.call_tool("weather", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
        totals = await client.call_tool("totals", {"values": [1, 2, 3]})
        assert totals.structured_content == {"total": 6}


async def test_content_blocks() -> None:
    async with connected(make_server()) as (client, _):
        result = await client.call_tool("image")
        assert isinstance(result, CallToolResult)
        assert result.content[0] == TextContent(text="a pixel")
        assert result.content[1] == ImageContent(data="AAAA", mime_type="image/png")


async def test_call_tool_timeout_cancels_the_tool_on_the_server() -> None:
    app = Server("slow")
    started = anyio.Event()
    cancelled = anyio.Event()

    @app.tool()
    async def slow() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return ""  # pragma: no cover

    from minimcp import RequestTimeout

    async with connected(app) as (client, conn):
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow", timeout=0.2)
        with anyio.fail_after(5):
            await cancelled.wait()
        assert conn.session.inflight_count == 0
        assert client.session.pending_count == 0


async def test_server_tracks_connections() -> None:
    app = make_server()
    async with connected(app) as (_, conn):
        assert conn in app.connections
    await anyio.sleep(0.05)
    assert conn not in app.connections
    assert conn.session.holds_nothing()
