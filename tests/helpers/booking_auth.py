"""The booking example with ``--auth-issuer`` served in this process, for the OAuth peer tests (issue 29)."""

from __future__ import annotations

import contextlib
import pathlib
import sys
from collections.abc import AsyncIterator

import anyio

from tests.helpers.nanoidp import NanoIDP

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import booking


@contextlib.asynccontextmanager
async def booking_behind(server: NanoIDP) -> AsyncIterator[tuple[booking.BookingApp, str]]:
    """The example over Streamable HTTP, protected by ``server`` (as its command line starts it); yields the app
    and its MCP URL (whose resource the tokens must name)."""
    args = booking.parse_args(["--transport", "http", "--auth-issuer", server.issuer, "--elicitation-timeout", "60"])
    async with anyio.create_task_group() as tg:
        app, url = await tg.start(booking.serve, args)
        try:
            yield app, url
        finally:
            tg.cancel_scope.cancel()
