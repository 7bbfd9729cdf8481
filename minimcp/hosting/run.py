"""Running a server as the process: ``Server.run`` and the command line, stopped quietly by Ctrl-C or SIGTERM.

Over a network transport (Streamable HTTP or WebSocket) the endpoint is announced on stderr.
SIGTERM (what a service manager, a container runtime or an MCP client ending a stdio server sends)
is a request to stop: the server is cancelled and winds down as on any cancellation (an HTTP server
stops accepting and gives open connections its graceful time), and the call returns. Ctrl-C stops
it the same way (received as a signal, never raised inside the server's code) and ends with exit
status 130, as shells expect of an interrupted program.
"""

from __future__ import annotations

import functools
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

import anyio
import anyio.abc

if TYPE_CHECKING:
    from minimcp.server.server import Server

__all__ = [
    "EXIT_INTERRUPTED",
    "TRANSPORTS",
    "endpoint_url",
    "is_interrupt",
    "run_network",
    "run_until_stopped",
    "serve_network",
]

logger = logging.getLogger("minimcp.serve")

#: What ``Server.run(transport=...)`` accepts.
TRANSPORTS = ("stdio", "http", "ws")
_NAMES = {"http": "Streamable HTTP", "ws": "WebSocket"}

#: The shells' status for a program ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for member in exc.exceptions for leaf in _leaves(member)]
    return [exc]


def _is_cancellation(exc: BaseException) -> bool:
    # asyncio.CancelledError, trio.Cancelled: named here without importing either loop.
    kind = type(exc)
    return kind.__name__ in ("CancelledError", "Cancelled") and kind.__module__.split(".")[0] in ("asyncio", "trio")


def is_interrupt(exc: BaseException) -> bool:
    """``KeyboardInterrupt``, alone or in exception groups (trio wraps it) beside nothing but cancellations.

    A group that also holds a real error is not an interrupt: that error must not be hidden.
    """
    leaves = _leaves(exc)
    return any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves) and all(
        isinstance(leaf, KeyboardInterrupt) or _is_cancellation(leaf) for leaf in leaves
    )


async def _stop_on_signals(
    scope: anyio.CancelScope,
    signums: list[signal.Signals],
    stopped: list[int],
    *,
    task_status: anyio.abc.TaskStatus[None],
) -> None:
    """Cancel ``scope`` at the first SIGTERM or Ctrl-C (SIGINT), noting which in ``stopped``.

    Ctrl-C is received as a signal too, so it cancels the server at its next checkpoint as
    SIGTERM does. Left to trio, it would raise ``KeyboardInterrupt`` inside whatever code was
    running when it came: in the HTTP server between two steps of writing a response, that
    left the connection's state broken and the process ended with a traceback.
    """
    with anyio.open_signal_receiver(*signums) as signals:
        task_status.started()
        async for signum in signals:
            stopped.append(signum)
            scope.cancel()
            return


def _can_watch_signals() -> bool:
    """Signal handlers can be set in the main thread only, and there is no SIGTERM to receive on Windows."""
    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


def run_until_stopped(
    func: Callable[[*Ts], Awaitable[T]],
    *args: *Ts,
    backend: str,
    what: str,
    logger: logging.Logger,
    interrupted: str | None = None,
) -> T | None:
    """``anyio.run(func, *args)`` until it returns, SIGTERM stops it, or Ctrl-C interrupts it.

    SIGTERM (POSIX, main thread): ``func`` is cancelled, one line naming ``what`` is logged,
    and this returns ``None``. Ctrl-C: ``func`` is cancelled the same way (POSIX, main
    thread: the signal is received before ``func`` starts, so never raised inside it), then
    one line (``interrupted``, or one naming ``what``) and ``SystemExit(130)``. A
    ``KeyboardInterrupt`` from elsewhere (another thread, Windows: the loop's own handling)
    ends the same way. Either way the caller sees neither a traceback nor a hang.
    """
    stopped: list[int] = []
    # SIGINT only when Python's own handler has it (asked before the loop starts: trio puts its own
    # in): ignored (a background job), it stays ignored; a handler of the application's stays its.
    signums: list[signal.Signals] = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signums.append(signal.SIGINT)

    async def main() -> T | None:
        if not _can_watch_signals():
            return await func(*args)
        result: T | None = None
        async with anyio.create_task_group() as tg:
            await tg.start(_stop_on_signals, tg.cancel_scope, signums, stopped)
            result = await func(*args)
            tg.cancel_scope.cancel()  # (it returned by itself: the watch ends)
        return result

    try:
        result = anyio.run(main, backend=backend)
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
        stopped.append(signal.SIGINT)
    if signal.SIGINT in stopped:
        logger.warning("%s", interrupted or f"interrupted (ctrl-C): {what} stopped")
        raise SystemExit(EXIT_INTERRUPTED) from None
    if stopped:
        logger.warning("terminated (SIGTERM): %s stopped", what)
    return result


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
        server = "h11" if backend == "trio" else "uvicorn"  # trio: minimcp's own server, on h11
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

    ``options`` go to :func:`~minimcp.hosting.http.serve_http` (the
    :class:`~minimcp.transports.http.StreamableHTTPApp` options: ``path``,
    ``allowed_hosts``, ``auth`` (an :class:`~minimcp.auth.config.Authorization`:
    bearer tokens checked on every request), ...) or
    :func:`~minimcp.hosting.websocket.serve_websocket`.
    """
    path = str(options.get("path") or "/mcp")
    async with anyio.create_task_group() as tg:
        if transport == "http":
            from minimcp.hosting.http import serve_http

            bound = await tg.start(functools.partial(serve_http, server, host, port, **options))
        elif transport == "ws":
            from minimcp.hosting.websocket import serve_websocket

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
