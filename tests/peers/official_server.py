"""A peer server written with the official MCP Python SDK (``mcp`` 2.x), for interop tests.

Serves stdio (``python tests/peers/official_server.py``), or Streamable HTTP on
``http://127.0.0.1:PORT/mcp`` (``python tests/peers/official_server.py http PORT``). Tools:

- ``add(a: int, b: int) -> int``
- ``ask_name()``: asks the client for a ``name`` (form elicitation) and returns
  ``"hello <name>"``, ``"declined"`` or ``"cancelled"``.

Only the official SDK's idiomatic API is used here; minimcp is not imported.
"""

from __future__ import annotations

from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    MCPServer,
)
from pydantic import BaseModel

mcp = MCPServer(name="official-peer", version="0.0.1")


class NameForm(BaseModel):
    name: str


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the person for their name and greet them."""
    result = await ctx.elicit("What is your name?", NameForm)
    if isinstance(result, AcceptedElicitation):
        return f"hello {result.data.name}"
    if isinstance(result, DeclinedElicitation):
        return "declined"
    assert isinstance(result, CancelledElicitation)
    return "cancelled"


if __name__ == "__main__":
    import sys

    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp (used by tests/transports/http/test_http.py).
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), streamable_http_path="/mcp")
    else:
        mcp.run()  # stdio
