"""Shared by several test files: what tests/server/mrtr/test_state_keys.py sets up and others reuse."""

from __future__ import annotations

from typing import Any

from minimcp import Context, Server
from tests.helpers.modern import (
    NAME_FORM,
    describe,
)


def worker(state_key: Any = None, *, runs: list[str] | None = None, state_format: str | None = None) -> Server:
    """One worker of the service: a tool that asks a name (``runs`` counts its starts)."""
    server = Server("worker", state_key=state_key, state_format=state_format)
    started = runs if runs is not None else []

    @server.tool()
    async def greet(ctx: Context) -> str:
        started.append("greet")
        return describe(await ctx.elicit("Your name?", NAME_FORM))

    return server

