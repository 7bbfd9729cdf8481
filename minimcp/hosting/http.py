"""Serving a Server and connecting a Client over Streamable HTTP: the role-level layer above the HTTP transport.

The other modules of this package import no role (``minimcp.server.server``,
``minimcp.server.context``, ``minimcp.client.client``); this one is where a ``Server`` meets
the ASGI app and a ``Client`` meets the client transport
(``tests/docs/test_layers.py`` checks the direction).
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from minimcp.core.config import Limits
from minimcp.server.server import Server
from minimcp.transports.asgi_server import AsgiServer, bind, run_asgi
from minimcp.transports.http.app import StreamableHTTPApp
from minimcp.transports.http.client import http_client

if TYPE_CHECKING:
    import httpx

    from minimcp.client.client import Client

__all__ = ["connect_http", "serve_http"]

logger = logging.getLogger("minimcp.http")

#: Seconds past ``graceful_timeout`` the ASGI server gets to stop before it is cancelled.
_STOP_GRACE = 3.0
#: The cyclic GC's first threshold while ``serve_http(tune_gc=True)`` runs (CPython's default: 700).
TUNED_GC_THRESHOLD = 10_000


async def serve_http(
    server: Server | StreamableHTTPApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    asgi_server: AsgiServer | None = None,
    graceful_timeout: float = 2.0,
    tune_gc: bool = False,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    **app_options: Any,
) -> None:
    """Serve ``server`` over Streamable HTTP until cancelled.

    Binds ``host:port`` (default 127.0.0.1 and a free port) and reports the
    bound port through ``task_status``: ``port = await tg.start(serve_http, server)``.
    Runs uvicorn (with httptools) on asyncio and minimcp's own HTTP/1.1 server
    (:mod:`minimcp.transports.h1_server`, h11 on anyio) on trio, where the only
    other choice, hypercorn, cost several times the CPU per round trip; unless
    ``asgi_server`` says otherwise (``"minimcp"`` and ``"hypercorn"`` run on
    both backends, uvicorn needs asyncio). ``app_options`` go to
    :class:`StreamableHTTPApp`; or pass a ready app instead of a server. On
    cancellation every session ends, then the HTTP server stops (waiting at
    most ``graceful_timeout`` for connections).

    Binding a non-loopback address needs ``allowed_hosts`` (and usually
    authorization): the default accepts only loopback host names. Pass
    ``auth=Authorization(verifier, resource=..., authorization_servers=[...])``
    (:class:`~minimcp.auth.config.Authorization`) to make every request carry a
    bearer token for this server (see :class:`StreamableHTTPApp`'s ``auth``).

    ``tune_gc=True`` (for a process that only serves; ``Server.run("http")``, which
    runs its own event loop until the server stops, passes it unless told
    ``tune_gc=False``): once the server listens, the objects made at start-up
    are frozen out of the cyclic GC (``gc.freeze()``) and its first threshold
    is raised to :data:`TUNED_GC_THRESHOLD`, both undone when serving ends.
    With many calls open at once most of a round trip's objects outlive the
    GC's young generations and full passes rescan them all: at 1,000
    concurrent calls that cost about a quarter of the server's CPU. It changes
    the whole process's GC, so ``serve_http`` (a coroutine in the caller's own
    loop) leaves it off unless asked.
    """
    if isinstance(server, StreamableHTTPApp):
        if app_options:
            raise TypeError("pass app options to StreamableHTTPApp, not serve_http, when giving an app")
        app = server
    else:
        app = StreamableHTTPApp(server, **app_options)
    sock = bind(host, port)
    bound_port = int(sock.getsockname()[1])
    stop = anyio.Event()
    shield = anyio.CancelScope(shield=True)

    async def run_server(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with shield:
            await run_asgi(
                app, sock, stop, asgi_server=asgi_server, graceful_timeout=graceful_timeout, task_status=task_status
            )

    tuned: tuple[tuple[int, int, int], bool] | None = None
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            try:
                await tg.start(run_server)
                logger.info("MCP server %s on http://%s:%d%s", app.server.name, host, bound_port, app.path)
                if tune_gc:
                    tuned = _tune_gc()
                task_status.started(bound_port)
                await anyio.sleep_forever()
            finally:
                app.close()
                stop.set()
                shield.deadline = anyio.current_time() + graceful_timeout + _STOP_GRACE
                tg.cancel_scope.cancel()
    finally:
        if sock.fileno() != -1:
            sock.close()
        if tuned is not None:
            _untune_gc(tuned)


def _tune_gc() -> tuple[tuple[int, int, int], bool]:
    """Freeze the start-up heap (unless someone froze objects already) and raise the first GC threshold;
    what :func:`_untune_gc` needs to undo it."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.collect()  # garbage frozen would stay for good
        gc.freeze()
    gc.set_threshold(max(before[0], TUNED_GC_THRESHOLD), before[1], before[2])
    return before, freeze


def _untune_gc(tuned: tuple[tuple[int, int, int], bool]) -> None:
    before, froze = tuned
    gc.set_threshold(*before)
    if froze:
        gc.unfreeze()


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    auth: httpx.Auth | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect a :class:`minimcp.Client` to a Streamable HTTP server and initialize.

    ``auth``: authorization for every HTTP request; an :class:`~minimcp.auth.oauth_client.OAuthClient`
    signs in when the server answers 401 (``connect_http(url, auth=OAuthClient(browser))``).
    Extra keyword arguments go to :class:`~minimcp.Client`.
    """
    from minimcp.client.client import Client

    async with (
        http_client(url, headers=headers, limits=limits, auth=auth) as transport,
        Client(transport, limits=limits, **client_options) as client,
    ):
        yield client
