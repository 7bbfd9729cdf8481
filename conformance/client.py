"""minimcp's client under the official MCP conformance suite (client leg).

The harness starts a mock server per scenario and runs::

    python conformance/client.py <server-url>

with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario (``CONFORMANCE_BACKEND=trio`` runs it on
trio). This program plays the
part a real application would: connect with :class:`minimcp.Client` over
Streamable HTTP, do what the scenario asks, and exit 0 (non-zero on error).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from minimcp import Accepted, Client, ElicitationRequest
from minimcp.transports.http import http_client

log = logging.getLogger("conformance.client")


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", f"<{type(block).__name__}>") for block in result.content)


async def initialize(url: str) -> None:
    """Handshake, then close."""
    async with http_client(url) as transport, Client(transport, name="minimcp-conformance-client") as client:
        log.info("initialized: %s %s", client.server_info, client.protocol_version)


async def tools_call(url: str) -> None:
    """List the tools, then call add_numbers."""
    async with http_client(url) as transport, Client(transport, name="minimcp-conformance-client") as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", _text(result))
        if result.is_error is True:
            raise SystemExit(f"add_numbers failed: {_text(result)}")


async def accept_with_defaults(request: ElicitationRequest) -> Accepted[dict[str, Any]]:
    """Accept without touching any field: the Client fills the schema's defaults (fill_defaults)."""
    log.info("elicitation from %s: %s (fields %s)", request.server_name, request.message,
             [f.name for f in request.form.fields])  # fmt: skip
    return Accepted({})


async def elicitation_defaults(url: str) -> None:
    """Call the tool that asks a form whose every field has a default (SEP-1034)."""
    async with (
        http_client(url) as transport,
        Client(
            transport,
            name="minimcp-conformance-client",
            elicitation_handler=accept_with_defaults,
            fill_defaults=True,
        ) as client,
    ):
        # The mock (TS SDK) sends its question on the standalone GET stream and drops it when that
        # stream is not open; http_client opens the GET right after the handshake and waits for it.
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("test_client_elicitation_defaults: %s", _text(result))


async def sse_retry(url: str) -> None:
    """Call a tool whose SSE stream the server closes before the answer (SEP-1699).

    The transport must wait the stream's ``retry`` delay and resume with a GET
    carrying ``Last-Event-ID``; the result arrives on that stream.
    """
    # No standalone GET stream here: this mock answers *any* GET with the pending tool result, so
    # it would take a standalone GET for the reconnection under test (the request's own GET with
    # Last-Event-ID, which the transport makes either way).
    async with (
        http_client(url, standalone_stream=False) as transport,
        Client(transport, name="minimcp-conformance-client") as client,
    ):
        result = await client.call_tool("test_reconnection", {})
        log.info("test_reconnection: %s", _text(result))


SCENARIOS: dict[str, Callable[[str], Awaitable[None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2:
        print("usage: MCP_CONFORMANCE_SCENARIO=<name> client.py <server-url>", file=sys.stderr)
        return 2
    run = SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    anyio.run(_bounded, run, argv[-1], backend=os.environ.get("CONFORMANCE_BACKEND", "asyncio"))
    return 0


async def _bounded(run: Callable[[str], Awaitable[None]], url: str) -> None:
    with anyio.fail_after(25):  # the harness kills the client at 30 s; fail visibly before that
        await run(url)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
