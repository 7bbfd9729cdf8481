"""Run an ASGI app on a local port inside the current event loop (asyncio or trio).

On trio this runs minimcp's own HTTP/1.1 server (:mod:`minimcp.transports.h1_server`:
h11 for the bytes, anyio for the I/O), on asyncio uvicorn (with the httptools
parser when it is installed, else h11); all optional extras: ``pip install
minimcp[http]``. ``asgi_server`` picks another: ``"minimcp"`` (on either
backend), ``"uvicorn"`` (its best parser), ``"uvicorn-httptools"``,
``"uvicorn-h11"`` or ``"hypercorn"`` (either backend). On trio hypercorn cost
about 1.35 ms of server CPU per round trip for the smallest ASGI app (issue 31),
minimcp's server a fraction of that (``benchmarks/README.md``). With httptools
minimcp spends about a third less server CPU per round trip than with h11
(``benchmarks/README.md``, "serve_http default"). The listening socket is bound
here first, so the caller learns the real port even when it asked for port 0,
and connections made before the server accepts wait in the backlog. Used by the
Streamable HTTP transport and by the example's pages.

All servers get the same bounds from :class:`~minimcp.core.config.Limits`: a
request's headers must arrive within ``http_header_timeout`` (uvicorn has no
such timeout of its own: see :mod:`minimcp.transports._uvicorn_guard`;
hypercorn closes a connection that stays without a request for its
``keep_alive_timeout``; minimcp's server keeps a deadline per connection), and
at most ``max_http_connections`` are served at once: uvicorn and minimcp's
server close connections beyond at once (minimcp's after a ``503``) and uvicorn
answers ``503`` at the bound; hypercorn has no such bound, so its app is
wrapped to answer requests beyond it with ``503``. A request's head is at most
``max_http_head_bytes``.
"""

from __future__ import annotations

import functools
import logging
import socket
from typing import Any, Literal, cast

import anyio
import anyio.abc

from minimcp.core._backend import backend_name
from minimcp.core.config import Limits

__all__ = ["AsgiServer", "bind", "run_asgi", "run_hypercorn", "run_uvicorn", "serve_asgi"]

logger = logging.getLogger("minimcp.asgi")

#: The HTTP servers ``run_asgi`` runs; ``"uvicorn"`` is uvicorn with httptools if installed, else h11.
#: Connections the kernel queues before the server accepts them (uvicorn's own default; 128 overflowed
#: under bursts of thousands of connects in benchmarks/bench_scaleout.py).
_BACKLOG = 2048

AsgiServer = Literal["minimcp", "uvicorn", "uvicorn-httptools", "uvicorn-h11", "hypercorn"]
_SERVERS = ("minimcp", "uvicorn", "uvicorn-httptools", "uvicorn-h11", "hypercorn")

def bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(_BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _limits_of(app: Any, limits: Limits | None) -> Limits:
    if limits is not None:
        return limits
    found = getattr(app, "limits", None)
    return found if isinstance(found, Limits) else Limits()


def _bounded(app: Any, limit: int) -> Any:
    """``app``, answering ``503`` to an HTTP request while ``limit`` others are being served."""
    active = 0

    async def bounded(scope: Any, receive: Any, send: Any) -> None:
        nonlocal active
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if active >= limit:
            logger.warning("answered 503: %d requests are being served (limit %d)", active, limit)
            headers = [(b"content-type", b"text/plain"), (b"connection", b"close")]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": b"too many connections; try again later\n"})
            return
        active += 1
        try:
            await app(scope, receive, send)
        finally:
            active -= 1

    return bounded


def _httptools_installed() -> bool:
    try:
        import httptools  # noqa: F401
    except ImportError:
        return False
    return True


async def run_uvicorn(
    app: Any,
    sock: socket.socket,
    stop: anyio.Event,
    graceful_timeout: float,
    task_status: anyio.abc.TaskStatus[None],
    limits: Limits | None = None,
    parser: Literal["httptools", "h11"] = "h11",
) -> None:
    import uvicorn

    from minimcp.transports._uvicorn_guard import guarded_h11_protocol, guarded_httptools_protocol

    bounds = _limits_of(app, limits)
    if parser == "httptools":
        protocol = guarded_httptools_protocol(
            bounds.http_header_timeout, bounds.max_http_connections, bounds.max_http_head_bytes
        )
    else:
        protocol = guarded_h11_protocol(bounds.http_header_timeout, bounds.max_http_connections)
    config = uvicorn.Config(
        app,
        lifespan="off",
        interface="asgi3",
        ws="none",
        http=protocol,
        h11_max_incomplete_event_size=bounds.max_http_head_bytes,
        limit_concurrency=bounds.max_http_connections + 1,  # uvicorn counts the connection asking
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(1, round(graceful_timeout)),
    )
    http_server = uvicorn.Server(config)
    ended = anyio.Event()

    async def serve() -> None:
        try:
            await http_server.serve(sockets=[sock])
        finally:
            ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        while not http_server.started:
            if ended.is_set():
                raise RuntimeError("uvicorn stopped before it started serving")
            await anyio.sleep(0.01)
        task_status.started()
        # Until we are told to stop, or uvicorn stops by itself (it handles SIGINT / SIGTERM).
        async with anyio.create_task_group() as wait:

            async def until(event: anyio.Event) -> None:
                await event.wait()
                wait.cancel_scope.cancel()

            wait.start_soon(until, stop)
            wait.start_soon(until, ended)
        http_server.should_exit = True


async def run_hypercorn(
    app: Any,
    sock: socket.socket,
    stop: anyio.Event,
    graceful_timeout: float,
    backend: str,
    task_status: anyio.abc.TaskStatus[None],
    limits: Limits | None = None,
) -> None:
    from hypercorn.config import Config

    bounds = _limits_of(app, limits)
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.graceful_timeout = graceful_timeout
    # hypercorn's idle timer runs from the connection (or the previous response) until a request's
    # head is parsed, and bytes arriving do not restart it: so it is a header timeout too.
    config.keep_alive_timeout = bounds.http_header_timeout
    config.h11_max_incomplete_size = bounds.max_http_head_bytes
    config.loglevel = "WARNING"
    config.accesslog = None
    asgi_app = cast("Any", _bounded(app, bounds.max_http_connections))  # hypercorn's ASGI types are TypedDicts
    if backend == "trio":
        from hypercorn.trio import serve as trio_serve

        async with anyio.create_task_group() as tg:
            serve = functools.partial(trio_serve, asgi_app, config, shutdown_trigger=stop.wait, mode="asgi")
            await tg.start(cast("Any", serve))
            task_status.started()
    else:
        from hypercorn.asyncio import serve as asyncio_serve

        # The socket already listens, so connections made before hypercorn accepts them wait in its backlog.
        task_status.started()
        await asyncio_serve(asgi_app, config, shutdown_trigger=stop.wait, mode="asgi")


async def run_asgi(
    app: Any,
    sock: socket.socket,
    stop: anyio.Event,
    *,
    asgi_server: AsgiServer | None = None,
    graceful_timeout: float = 2.0,
    limits: Limits | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set.

    By default uvicorn on asyncio (httptools if it is installed, else h11) and
    minimcp's own server (:mod:`minimcp.transports.h1_server`) on trio;
    ``asgi_server`` picks one of :data:`AsgiServer`.
    ``limits`` (default: the app's ``limits`` attribute, else :class:`Limits`) gives the
    header timeout, the head size and the connection bound.

    Raises:
        ValueError: an unknown ``asgi_server``.
        RuntimeError: uvicorn asked for on trio.
        ImportError: the server (h11 for minimcp's, or httptools, when asked for) is not installed.
    """
    backend = backend_name()
    kind = asgi_server or ("minimcp" if backend == "trio" else "uvicorn")
    if kind not in _SERVERS:
        raise ValueError(f"asgi_server must be one of {', '.join(_SERVERS)}, not {asgi_server!r}")
    if kind.startswith("uvicorn") and backend != "asyncio":
        raise RuntimeError("uvicorn runs on asyncio only; use asgi_server='minimcp' or 'hypercorn' on trio")
    if kind == "uvicorn":
        kind = "uvicorn-httptools" if _httptools_installed() else "uvicorn-h11"
    logger.debug("HTTP server: %s on %s", kind, backend)
    if kind == "uvicorn-httptools":
        await run_uvicorn(app, sock, stop, graceful_timeout, task_status, limits, "httptools")
    elif kind == "uvicorn-h11":
        await run_uvicorn(app, sock, stop, graceful_timeout, task_status, limits, "h11")
    elif kind == "minimcp":
        from minimcp.transports.h1_server import run_h1

        await run_h1(app, sock, stop, graceful_timeout, task_status, _limits_of(app, limits))
    else:
        await run_hypercorn(app, sock, stop, graceful_timeout, backend, task_status, limits)


async def serve_asgi(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    graceful_timeout: float = 2.0,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` until cancelled; ``await tg.start(serve_asgi, app)`` returns the bound port.

    Raises:
        ImportError: the ASGI server for this backend is not installed.
    """
    sock = bind(host, port)
    bound = int(sock.getsockname()[1])  # before hypercorn takes the socket over
    stop = anyio.Event()
    shield = anyio.CancelScope(shield=True)

    async def run(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with shield:
            await run_asgi(app, sock, stop, graceful_timeout=graceful_timeout, task_status=task_status)

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(run)
            try:
                task_status.started(bound)
                await anyio.sleep_forever()
            finally:
                stop.set()
                shield.deadline = anyio.current_time() + graceful_timeout + 3
    finally:
        if sock.fileno() != -1:
            sock.close()
