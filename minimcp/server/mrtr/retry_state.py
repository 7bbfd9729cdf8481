"""Revision 2026-07-28: the parked run a retry taken over by the read loop resumes, its ``requestState`` checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from minimcp.server.context import Context

if TYPE_CHECKING:
    from minimcp.server.connection import ServerConnection
    from minimcp.server.mrtr.run import Run
    from minimcp.server.tools import RegisteredTool

__all__ = ["parked_run"]


def parked_run(
    conn: ServerConnection, token: str, name: str, client: str | None, arguments: msgspec.Raw, now: float,
    tool: RegisteredTool, arguments_digest: Callable[[RegisteredTool, msgspec.Raw], str],
) -> tuple[Run, str, float] | None:
    """The run parked on ``conn`` that a ``tools/call`` retry with ``token`` resumes, the arguments' digest
    its state is bound to and the state's expiry; ``None``: not decided here (the usual way opens the
    state and answers, refusals included). The state is not recorded as used here.

    The state is opened (:meth:`~minimcp.server.mrtr.state.StateSealer.open_bound`: its binding and handle only)
    and checked against the request. (The usual retry, whose v2 state names a run parked here that keeps
    its first call's argument bytes, is checked from the state's MAC and header alone, by
    :func:`minimcp.server.mrtr.takeover.take_call`, without coming here.)
    """
    try:
        state = conn.server.sealer.open_bound(token, now=now)  # (only what is checked here is read)
        if state.m != "tools/call" or state.t != name or state.p != client:
            return None
        handle = state.h
        run = conn.server.parking.peek(handle) if isinstance(handle, str) else None
        if run is None or run.conn is not conn or not isinstance(run.context, Context):
            return None
        sealed = state.a
        if not isinstance(sealed, str):
            return None
        # The state is bound to the arguments' digest: a retry repeating its first call's arguments byte
        # for byte has that call's digest, which every state sealed for this run carries; only other
        # bytes are decoded and digested again.
        first = run.arguments
        same = first is not None and msgspec.Raw(first) == arguments
        if not same and sealed != arguments_digest(tool, arguments):
            return None
    except Exception:
        return None
    return run, sealed, state.exp
