"""The smallest useful minimcp server: one tool, served over stdio.

Try it with the client beside it (``python examples/hello_client.py``), or point
an MCP client such as Claude Code at ``python examples/hello_server.py``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from minimcp import Server

app = Server("hello", "1.0.0")


@app.tool()
async def greet(name: Annotated[str, msgspec.Meta(min_length=1, description="Who to greet")]) -> str:
    """Say hello to someone."""
    return f"Hello, {name}!"


@app.tool()
async def add(a: float, b: float) -> str:
    """Add two numbers."""
    return f"{a + b:g}"


if __name__ == "__main__":
    app.run()
