"""``Server.run`` over a network transport: Streamable HTTP or WebSocket, with the endpoint announced on stderr."""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from minimcp.hosting.interrupt import run_until_stopped

if TYPE_CHECKING:
    from minimcp.server.server import Server

__all__ = ["TRANSPORTS", "endpoint_url", "run_network", "serve_network"]

logger = logging.getLogger("minimcp.serve")

#: What ``Server.run(transport=...)`` accepts.
TRANSPORTS = ("stdio", "http", "ws")
_NAMES = {"http": "Streamable HTTP", "ws": "WebSocket"}


def endpoint_url(transport: str, host: str, port: int, path: str) -> str:
    """The URL a client connects to (an IPv6 host in brackets)."""
    scheme = "http" if transport == "http" else "ws"
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{scheme}://{shown}:{port}{path}"


def _need(module: str, extra: str, why: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise ImportError(
            f"{why} needs the {module!r} package, from minimcp's {extra!r} extra: pip install 'minimcp[{extra}]'"
        ) from None


def check_extras(transport: str, backend: str) -> None:
    """Raise ImportError naming the extra to install when ``transport`` cannot be served here."""
    if transport == "http":
        server = "hypercorn" if backend == "trio" else "uvicorn"
        _need(server, "http", f"serving MCP over Streamable HTTP on {backend}")
    elif transport == "ws":
        _need("websockets", "ws", "serving MCP over WebSocket")


async def serve_network(
    server: Server,
    transport: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """Serve ``server`` over ``"http"`` or ``"ws"`` until cancelled; logs (and reports) the endpoint URL.

    ``options`` go to :func:`~minimcp.transports.http.serve_http` (the
    :class:`~minimcp.transports.http.StreamableHTTPApp` options: ``path``,
    ``allowed_hosts``, ...) or :func:`~minimcp.transports.websocket.serve_websocket`.
    """
    path = str(options.get("path") or "/mcp")
    async with anyio.create_task_group() as tg:
        if transport == "http":
            from minimcp.transports.http import serve_http

            bound = await tg.start(functools.partial(serve_http, server, host, port, **options))
        elif transport == "ws":
            from minimcp.transports.websocket import serve_websocket

            bound = await tg.start(functools.partial(serve_websocket, server, host, port, **options))
        else:
            raise ValueError(f"transport must be one of {', '.join(map(repr, TRANSPORTS))}, not {transport!r}")
        url = endpoint_url(transport, host, int(bound), path)
        logger.info("serving MCP over %s at %s", _NAMES[transport], url)
        task_status.started(url)


def _announce() -> None:
    """Make the endpoint line visible on stderr when the application configured no logging."""
    if not logging.getLogger().handlers and not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def run_network(server: Server, transport: str, *, host: str, port: int, backend: str, **options: Any) -> None:
    """What ``Server.run`` does for ``"http"`` and ``"ws"``: check the extra, then serve in a new event loop."""
    if transport not in ("http", "ws"):
        raise ValueError(f"transport must be one of {', '.join(map(repr, TRANSPORTS))}, not {transport!r}")
    check_extras(transport, backend)
    if transport == "http":
        # The loop is this call's own until the server stops: the process serves. (serve_http alone,
        # in someone else's loop, leaves the GC as it is unless asked.)
        options.setdefault("tune_gc", True)
    _announce()
    run_until_stopped(
        functools.partial(serve_network, server, transport, host, port, **options),
        backend=backend,
        what="the MCP server",
        logger=logger,
        interrupted="interrupted: the MCP server stopped",
    )
