"""The benchmark tool on the official MCP Python SDK (its own idiomatic API; no minimcp).

    python benchmarks/servers/official_server.py [--transport stdio|http] [--backend asyncio|uvloop|trio]
        [--tracemalloc]

``ask(i)`` asks one question (``ctx.elicit(message, PydanticModel)``) and returns the
answer; ``stats`` is the same instrumentation tool as in the other benchmark servers.
On http the bound port is printed on stdout as ``PORT <n>``.
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
import sys
import tracemalloc

import anyio
from instrument import stats_text
from mcp.server.mcpserver import AcceptedElicitation, Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer(name="bench-official", version="1.0.0")


class Answer(BaseModel):
    answer: str


@mcp.tool()
async def ask(i: int, ctx: Context) -> str:
    """Ask one question and return the answer."""
    reply = await ctx.elicit(f"Answer for call {i}", Answer)
    if isinstance(reply, AcceptedElicitation):
        return reply.data.answer
    return "no answer"


@mcp.tool()
def stats(collect: bool = False, snapshot: str = "") -> str:
    """This process's memory (benchmark instrumentation)."""
    return stats_text(collect, snapshot)


async def serve_http() -> None:
    # mcp.run("streamable-http") with a free port that we announce (the SDK's own app and uvicorn).
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    app = mcp.streamable_http_app(host="127.0.0.1", max_sessions=None)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", backlog=4096, timeout_keep_alive=600))
    print(f"PORT {port}", flush=True)
    await server.serve(sockets=[sock])


if __name__ == "__main__":
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    backend = "trio" if args.backend == "trio" else "asyncio"
    options = {"use_uvloop": True} if args.backend == "uvloop" else {}
    # mcp.run() is anyio.run(mcp.run_stdio_async); we pass the backend ourselves.
    entry = mcp.run_stdio_async if args.transport == "stdio" else serve_http
    try:
        anyio.run(entry, backend=backend, backend_options=options)
    except KeyboardInterrupt:
        sys.exit(0)
