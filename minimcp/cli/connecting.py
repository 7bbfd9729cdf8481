"""The client session a command runs in: the transport to the target, trace, server logs and stderr, ``--diagram``."""

from __future__ import annotations

import contextlib
import os
import typing
from collections.abc import AsyncIterator
from typing import Any

from minimcp import __version__
from minimcp.cli.args import CliError, Options
from minimcp.cli.questions import Questions
from minimcp.cli.render import format_log, format_trace
from minimcp.cli.server_stderr import StderrRelay, relaying
from minimcp.cli.terminal import Console
from minimcp.client.client import Client
from minimcp.core.config import Limits
from minimcp.core.trace import WireTrace
from minimcp.core.transport import Transport
from minimcp.transports.trace import TracedTransport
from minimcp.wire.types import LoggingLevel, LoggingMessageParams, UnsetType

if typing.TYPE_CHECKING:
    from minimcp.auth.oauth_client import OAuthClient
    from minimcp.cli.signing_in import SigningIn

__all__ = ["connect", "open_transport"]

_ID_SHOWN = 12  # characters of an elicitation id shown in a note


def _transport_for(
    options: Options, limits: Limits, stderr: int | None = None, auth: OAuthClient | None = None
) -> contextlib.AbstractAsyncContextManager[Transport]:
    """The transport's context manager (imports the HTTP and WebSocket transports only when needed)."""
    target = options.target
    headers = options.headers or None
    if target.kind == "stdio":
        from minimcp.transports.stdio import stdio_client

        return stdio_client(target.command, limits=limits, stderr=stderr)
    if target.kind == "http":
        try:
            from minimcp.transports.http import http_client
        except ImportError as exc:
            raise CliError(f"http(s):// targets need the http extra (pip install 'minimcp[http]'): {exc}") from None
        return http_client(target.url, headers=headers, limits=limits, auth=auth)
    try:
        from minimcp.transports.websocket import websocket_client
    except ImportError as exc:
        raise CliError(f"ws(s):// targets need the ws extra (pip install 'minimcp[ws]'): {exc}") from None
    return websocket_client(target.url, limits=limits, headers=headers)


@contextlib.asynccontextmanager
async def open_transport(
    options: Options, limits: Limits, stderr: int | None = None, auth: OAuthClient | None = None
) -> AsyncIterator[Transport]:
    """Open the transport to the target; failures to start or reach it become :class:`CliError`."""
    target = options.target
    async with contextlib.AsyncExitStack() as stack:
        try:
            transport = await stack.enter_async_context(_transport_for(options, limits, stderr, auth))
        except (FileNotFoundError, PermissionError) as exc:
            if target.kind != "stdio":
                raise
            raise CliError(f"cannot start the server command {target.command[0]!r}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise CliError(f"invalid URL {target.url!r}: {exc}") from None
        yield transport


@contextlib.asynccontextmanager
async def connect(options: Options, console: Console, questions: Questions) -> AsyncIterator[Client]:
    limits = Limits(request_timeout=options.timeout)
    err_style = console.err_style

    def trace(direction: str, data: bytes) -> None:
        console.note(format_trace(direction, data, err_style, pretty=options.trace == "pretty"))

    def log(params: LoggingMessageParams) -> None:
        console.note(format_log(params, err_style))

    def notified(method: str, params: Any) -> None:
        if (options.command == "connect" or options.verbose) and method.endswith("/list_changed"):
            what = method.removeprefix("notifications/").removesuffix("/list_changed")
            console.note(err_style.dim(f"(the server's {what} list changed)"))

    def completed(elicitation_id: str) -> None:
        short = elicitation_id if len(elicitation_id) <= _ID_SHOWN else elicitation_id[:_ID_SHOWN] + "..."
        console.note(err_style.green(f"{err_style.glyph('✓', 'ok')} the server reports browser step {short} complete"))

    # A spawned server's stderr comes through a pipe, so its shutdown cannot flood the terminal.
    relay = None
    if options.target.kind == "stdio" and os.name == "posix":
        relay = StderrRelay(console, verbose=options.verbose)
    async with contextlib.AsyncExitStack() as stack:
        signin = None
        if options.target.kind == "http":
            signin = await stack.enter_async_context(_signing_in(options, console, limits))
        await stack.enter_async_context(relaying(relay, limits.shutdown_timeout))
        auth = None if signin is None else signin.oauth
        raw = await stack.enter_async_context(
            open_transport(options, limits, None if relay is None else relay.write_fd, auth)
        )
        if relay is not None:
            relay.child_started()
        transport: Transport = raw if options.trace == "off" else TracedTransport(raw, trace)
        try:
            client = Client(
                transport,
                name="minimcp-cli",
                version=__version__,
                elicitation_handler=questions.elicit,
                url_handler=questions.consent,
                on_elicitation_complete=completed,
                logging_handler=log,
                on_notification=notified,
                limits=limits,
                trace=None if options.diagram is None else WireTrace(options.wire.append),
            )
            if signin is not None:
                signin.browser.session = client.session  # its clocks pause while the person signs in
            async with client:
                options.connected = True
                if options.log_level is not None:
                    if isinstance(client.server_capabilities.logging, UnsetType):
                        console.note(err_style.dim("(the server does not offer logging; --log-level ignored)"))
                    else:
                        await client.set_logging_level(typing.cast("LoggingLevel", options.log_level))
                try:
                    yield client
                finally:
                    if relay is not None:
                        relay.end()
        finally:
            if options.diagram is not None:
                _draw(options, console)


def _signing_in(
    options: Options, console: Console, limits: Limits
) -> contextlib.AbstractAsyncContextManager[SigningIn]:
    """The sign-in for an http(s) target (imports the OAuth client, hence httpx, only then)."""
    try:
        from minimcp.cli.signing_in import signing_in
    except ImportError as exc:
        raise CliError(f"http(s):// targets need the http extra (pip install 'minimcp[http]'): {exc}") from None
    return signing_in(options, console, limits)


def _draw(options: Options, console: Console) -> None:
    """Write the ``--diagram`` of the session (even one that failed: that is when it helps most)."""
    from minimcp.cli.diagram import write_diagram

    assert options.diagram is not None
    if options.diagram == "-":
        from minimcp.diagram.layout import read_trace, render_text

        console.note(render_text(read_trace(options.wire)).rstrip("\n"))
        return
    try:
        drawn = write_diagram(options.wire, options.diagram, title=f"minimcp {options.command}")
    except OSError as exc:
        console.note(console.err_style.red(f"could not write the diagram to {options.diagram}: {exc.strerror or exc}"))
    else:
        console.note(f"the diagram of this session ({len(drawn.events)} messages) is in {options.diagram}")
