"""The client decides which tools it may call and which ``Mcp-Param-*`` headers a request carries
(``minimcp.client.headers``); the HTTP client transport only asks, per request (issue #17).

Over 2026-07-28 HTTP, ``Client.list_tools`` leaves out a tool whose ``x-mcp-header`` declarations
break the rules and remembers the others'; each ``tools/call`` then mirrors the declared arguments.
A :class:`~minimcp.transports.trace.TracedTransport` in between (the CLI's ``--trace``) changes
nothing. Requests sent past the Client are not filtered; over memory (and stdio) no tool is left
out. The transport's own era is a :class:`~minimcp.wire.versions.Era`.

Every async test runs on asyncio and on trio; servers bind 127.0.0.1.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Client, Server, connect_http
from minimcp.client.headers import ToolHeaders, headered
from minimcp.transports.http import StreamableHTTPClientTransport, http_client
from minimcp.transports.http import _headers as mcp_headers
from minimcp.transports.memory import memory_pair
from minimcp.transports.trace import TracedTransport
from minimcp.wire.types import ListToolsResult
from minimcp.wire.versions import Era
from tests.helpers import connected
from tests.helpers.http import serving
from tests.helpers.http_modern import recorded

pytest.importorskip("httpx")

TIMEOUT = 20


def annotated_server() -> Server:
    """``good`` mirrors ``r`` as ``Mcp-Param-R``; ``bad_kind`` declares a header on an object (invalid)."""
    server = Server("annotated")

    @server.tool(input_schema={"type": "object", "properties": {"x": {"type": "object", "x-mcp-header": "X"}}})
    async def bad_kind(x: dict[str, Any] | None = None) -> str:
        return "never listed"

    @server.tool(input_schema={"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}})
    async def good(r: str = "") -> str:
        return f"ok {r}"

    return server


async def test_a_traced_http_transport_still_gets_the_clients_headers() -> None:
    """The CLI's --trace wraps the HTTP transport: the Client finds the transport underneath, so the
    invalid tool is still left out and the declared argument still travels as Mcp-Param-R."""
    seen: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with recorded(annotated_server()) as (url, _, recorder), http_client(url) as raw:
            traced = TracedTransport(raw, lambda direction, data: seen.append(direction))
            assert headered(traced) is raw
            async with Client(traced, era="modern") as client:
                assert [tool.name for tool in await client.list_tools()] == ["good"]
                assert (await client.call_tool("good", {"r": "eu"})).text == "ok eu"
    calls = [headers for headers, message in recorder.posts() if message["method"] == "tools/call"]
    assert len(calls) == 1 and calls[0]["mcp-param-r"] == "eu"
    assert "send" in seen and "receive" in seen


async def test_requests_past_the_client_are_not_filtered() -> None:
    """A raw tools/list comes back as the server sent it (the transport reads no result); a raw
    tools/call still carries the Mcp-Param headers of the tools the Client listed."""
    with anyio.fail_after(TIMEOUT):
        async with recorded(annotated_server()) as (url, _, recorder), connect_http(url, era="modern") as client:
            raw = await client.session.request("tools/list", {"_meta": client._envelope()})
            listed = msgspec.json.decode(raw, type=ListToolsResult)
            assert [tool.name for tool in listed.tools] == ["bad_kind", "good"]
            assert [tool.name for tool in await client.list_tools()] == ["good"]
            params = {"name": "good", "arguments": {"r": "Zürich"}, "_meta": client._envelope()}
            answer = msgspec.json.decode(await client.session.request("tools/call", params))
            assert answer["content"][0]["text"] == "ok Zürich"
    calls = [headers for headers, message in recorder.posts() if message["method"] == "tools/call"]
    assert calls[0]["mcp-param-r"] == mcp_headers.encode_value("Zürich")


async def test_memory_transport_mirrors_nothing_and_keeps_every_tool() -> None:
    """Without HTTP headers the declarations are ignored (the revision lets stdio clients do so):
    no tool is left out on either era."""
    assert headered(memory_pair()[0]) is None
    for era in ("modern", "legacy"):
        with anyio.fail_after(TIMEOUT):
            async with connected(annotated_server(), era=era) as (client, _):
                assert client._tool_headers is None
                assert [tool.name for tool in await client.list_tools()] == ["bad_kind", "good"]
                assert (await client.call_tool("good", {"r": "eu"})).text == "ok eu"


async def test_the_http_transport_keeps_its_era_as_an_era() -> None:
    """The transport's era is Era.MODERN / Era.LEGACY (not a bare string), set by what went out first."""
    with anyio.fail_after(TIMEOUT):
        async with serving(annotated_server()) as (url, _):
            for era, expected in (("modern", Era.MODERN), ("legacy", Era.LEGACY)):
                async with connect_http(url, era=era) as client:
                    await client.list_tools()
                    transport = client.session.transport
                    assert isinstance(transport, StreamableHTTPClientTransport)
                    assert type(transport.era) is Era and transport.era is expected


def test_tool_headers_learn_forget_and_drop() -> None:
    """A later tools/list replaces what an earlier one taught: a tool that lost its declaration
    mirrors nothing any more; an invalid declaration drops the tool and forgets the old one."""
    table = ToolHeaders()
    declared = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}
    plain = {"type": "object", "properties": {"r": {"type": "string"}}}
    invalid = {"type": "object", "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}
    call = msgspec.json.encode({"name": "t", "arguments": {"r": "eu"}})

    def tools(schema: dict[str, Any]) -> Any:
        return msgspec.convert({"tools": [{"name": "t", "inputSchema": schema}]}, ListToolsResult).tools

    assert [t.name for t in table.usable(tools(declared))] == ["t"]
    assert table.request_headers("tools/call", call)["mcp-param-r"] == "eu"
    assert [t.name for t in table.usable(tools(plain))] == ["t"]
    assert "mcp-param-r" not in table.request_headers("tools/call", call)
    table.usable(tools(declared))
    assert table.usable(tools(invalid)) == []
    assert "mcp-param-r" not in table.request_headers("tools/call", call)
