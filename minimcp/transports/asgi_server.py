"""Run an ASGI app on a local port inside the current event loop (asyncio or trio).

minimcp does not hand-write an HTTP server: on asyncio this uses uvicorn, on
trio hypercorn (both optional extras: ``pip install minimcp[http]``). The
listening socket is bound here first, so the caller learns the real port even
when it asked for port 0.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Any

import anyio
import anyio.abc

__all__ = ["serve_asgi"]

logger = logging.getLogger("minimcp.asgi")


def _running_backend() -> str:
    try:
        import asyncio

        asyncio.get_running_loop()
        return "asyncio"
    except RuntimeError:
        return "trio"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def serve_asgi(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` until cancelled; ``await tg.start(serve_asgi, app)`` returns the bound port.

    Raises:
        ImportError: the ASGI server for this backend is not installed.
    """
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    try:
        if _running_backend() == "asyncio":
            import uvicorn

            config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, interface="asgi3")
            server = uvicorn.Server(config)
            # Leave the host program's signal handling alone.
            server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
            task_status.started(bound)
            try:
                await server.serve(sockets=[sock])
            finally:
                server.should_exit = True
        else:
            from hypercorn.config import Config
            from hypercorn.trio import serve

            hconfig = Config()
            hconfig.bind = [f"fd://{sock.fileno()}"]
            hconfig.accesslog = None
            hconfig.errorlog = logger
            task_status.started(bound)
            await serve(app, hconfig, mode="asgi")
    finally:
        sock.close()
