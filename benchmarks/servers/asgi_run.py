"""Serve an ASGI app on one of several ASGI servers, for the HTTP server comparison.

    await serve(app, asgi, backend)   # prints ``PORT <n>`` on stdout once it accepts

``asgi``: ``uvicorn-h11``, ``uvicorn-httptools`` (asyncio / uvloop), ``hypercorn``
(asyncio / uvloop / trio), ``minimcp-h1`` (minimcp's own HTTP/1.1 server,
``minimcp.transports.h1_server``, with default ``Limits``; asyncio / uvloop / trio)
or ``granian`` (its embedded server on the running asyncio
loop; asyncio / uvloop). Every server gets the same plain settings: no access log,
no lifespan, one process, the listening socket bound here (port 0).
"""

from __future__ import annotations

import socket
from typing import Any

import anyio

ASGI_SERVERS = ("uvicorn-h11", "uvicorn-httptools", "hypercorn", "minimcp-h1", "granian")


def supports(asgi: str, backend: str) -> bool:
    return backend != "trio" or asgi in ("hypercorn", "minimcp-h1")


def _bind() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


async def _announce_when_listening(port: int) -> None:
    with anyio.fail_after(60):
        while True:
            try:
                s = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.02)
                continue
            await s.aclose()
            break
    print(f"PORT {port}", flush=True)


async def serve(app: Any, asgi: str, backend: str) -> None:
    if not supports(asgi, backend):
        raise SystemExit(f"{asgi} does not run on {backend}")
    async with anyio.create_task_group() as tg:
        if asgi.startswith("uvicorn"):
            import uvicorn

            sock = _bind()
            port = sock.getsockname()[1]
            config = uvicorn.Config(app, lifespan="off", interface="asgi3", ws="none", http=asgi.split("-")[1],
                                    log_config=None, log_level="warning", access_log=False, backlog=2048)
            tg.start_soon(_announce_when_listening, port)
            await uvicorn.Server(config).serve(sockets=[sock])
        elif asgi == "hypercorn":
            from hypercorn.config import Config

            sock = _bind()
            port = sock.getsockname()[1]
            hconfig = Config()
            hconfig.bind = [f"fd://{sock.detach()}"]
            hconfig.loglevel = "WARNING"
            hconfig.accesslog = None
            hconfig.backlog = 2048
            tg.start_soon(_announce_when_listening, port)
            if backend == "trio":
                from hypercorn.trio import serve as trio_serve

                await trio_serve(app, hconfig, mode="asgi")
            else:
                from hypercorn.asyncio import serve as asyncio_serve

                await asyncio_serve(app, hconfig, mode="asgi")
        elif asgi == "minimcp-h1":
            from minimcp import Limits
            from minimcp.transports.h1_server import H1Server

            sock = _bind()
            port = sock.getsockname()[1]
            tg.start_soon(_announce_when_listening, port)
            await H1Server(app, Limits()).serve(sock, anyio.Event(), 2.0)
        elif asgi == "granian":
            from granian.constants import Interfaces
            from granian.server.embed import Server as Granian

            probe = _bind()  # a free port (granian binds its own socket)
            port = probe.getsockname()[1]
            probe.close()
            server = Granian(app, address="127.0.0.1", port=port, interface=Interfaces.ASGINL, backlog=2048,
                             log_enabled=False, log_access=False, websockets=False)
            tg.start_soon(_announce_when_listening, port)
            await server.serve()
        else:
            raise SystemExit(f"unknown ASGI server {asgi!r}")
