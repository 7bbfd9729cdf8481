"""Spawn the hello server over stdio, list its tools and call one."""

from __future__ import annotations

import pathlib
import sys

import anyio

from minimcp import connect_stdio

SERVER = pathlib.Path(__file__).with_name("hello_server.py")


async def main() -> None:
    async with connect_stdio([sys.executable, str(SERVER)]) as client:
        assert client.server_info is not None
        print(f"connected to {client.server_info.name} (protocol {client.protocol_version})")
        for tool in await client.list_tools():
            print(f"  tool {tool.name}: {tool.description}")
        result = await client.call_tool("greet", {"name": "world"})
        print("greet ->", result.text)
        result = await client.call_tool("add", {"a": 2, "b": "three"})
        print("add with a bad argument ->", result.text, "(is_error:", result.is_error, ")")


if __name__ == "__main__":
    anyio.run(main)
