"""Revision 2026-07-28: the parked run a retry taken over by the read loop resumes, its ``requestState`` checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from minimcp.context import Context
from minimcp.state import InvalidState

if TYPE_CHECKING:
    from minimcp.connection import ServerConnection
    from minimcp.mrtr import Envelope
    from minimcp.runs import Run
    from minimcp.tools import RegisteredTool

__all__ = ["parked_run"]


def parked_run(
    conn: ServerConnection, token: str, name: str, client: str | None, arguments: msgspec.Raw, now: float,
    tool: RegisteredTool, arguments_digest: Callable[[RegisteredTool, msgspec.Raw], str], envelope: Envelope,
) -> tuple[Run, str, float] | None:
    """The run parked on ``conn`` that a ``tools/call`` retry with ``token`` resumes, the arguments' digest
    its state is bound to and the state's expiry; ``None``: not decided here (the usual way opens the
    state and answers, refusals included). The state is not recorded as used here.

    The common case decodes no body: a v2 token naming (in its header) a run parked on this
    connection that answered its first round itself (it keeps that call's argument bytes), retried
    with those bytes, its tool and its client. Every state sealed for such a run is bound to its
    first call (each retry was checked against that binding), so the binding is the run's own
    record (``envelope``: the request's, whose client is ``client``); the token's MAC is checked over
    its text, and its expiry and arguments' digest are read from its header, which the MAC covers.
    Anything else is opened in full (:meth:`~minimcp.state.StateSealer.open_bound`) and checked against the request.
    """
    server = conn.server
    parking = server.parking
    if token.startswith("v2."):
        end = token.find(".", 3)
        run = parking.peek(token[3:end]) if end > 3 else None
        if (
            run is not None and run.conn is conn and run.arguments is not None and run.tool == name
            and isinstance(run.context, Context) and msgspec.Raw(run.arguments) == arguments
        ):
            held = run.context.envelope
            info = held.client_info if held is not None else None
            if held is envelope or (info.name if info else None) == client:
                try:
                    _handle, sealed, exp = server.sealer.open_header(token)
                except InvalidState:
                    return None
                return (run, sealed, exp) if sealed and exp >= now else None
    try:
        state = server.sealer.open_bound(token, now=now)  # (only what is checked here is read)
        if state.m != "tools/call" or state.t != name or state.p != client:
            return None
        handle = state.h
        run = parking.peek(handle) if isinstance(handle, str) else None
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
