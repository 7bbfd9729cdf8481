"""Revision 2026-07-28: a ``tools/call`` request the read loop takes over -- a new call's run started, a retry resumed.

The read loop (``Session.take_call``, set on a connection locked to 2026-07-28) hands each
message naming ``"tools/call"`` to :func:`take_call` before decoding it the usual way. The
message is decoded in one pass, envelope and params (:class:`~minimcp.server.mrtr.rounds.CallParams`)
together, the types checked by the decoder (a ``"2.0"`` request with an integer or text id). A
request decoded the usual way (an escaped method name, the request that locked the era) comes
through :func:`take_over` (``Session.take_over``) with its params' bytes.

A new call starts its :class:`~minimcp.server.mrtr.rounds.ServingRun` at once; a retry whose run is
parked on this connection is handed its answers at once. A retry is checked by
:func:`~minimcp.server.mrtr.retry.check_retry`, the one function the handler task's way calls too (the
state, its binding, late answers, and on this way its single use); nothing is checked here, and no
check is written here. Either
way the run's task answers the request, in flight as one the session's ``_start_handler`` took over.
Anything else -- not a valid request, an id in use, no free in-flight slot, a state or params that
do not check out, a replay, a missing answer, a store of used states that must be awaited -- is left
(False): the usual way (:func:`minimcp.server.mrtr.rounds.serve` in a handler task) answers it,
refusals included. Nothing is changed before everything is checked.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from minimcp.server.context import Context
from minimcp.server.mrtr.retry import binding, check_retry, user_of
from minimcp.server.mrtr.rounds import CallParams, ServingRun, answers_of, arguments_digest, drive
from minimcp.wire.errors import ConnectionClosed
from minimcp.wire.types import UNSET

if TYPE_CHECKING:
    from minimcp.server.connection import ServerConnection
    from minimcp.wire.jsonrpc import Request

__all__ = ["take_call", "take_over"]


class _CallMessage(msgspec.Struct, gc=False):
    """A ``tools/call`` request as :func:`minimcp.wire.jsonrpc.decode` would take it (its exact types) and its
    params."""

    jsonrpc: Literal["2.0"]
    id: int | str
    method: Literal["tools/call"]
    params: CallParams


_decode = msgspec.json.Decoder(_CallMessage).decode
_decode_params = msgspec.json.Decoder(CallParams).decode
_MARK = b'"tools/call"'


def take_call(
    conn: ServerConnection, data: bytes, inflight: dict[Any, Any], message: _CallMessage | None = None
) -> bool:
    """Whether the message ``data`` was a 2026-07-28 ``tools/call`` request taken over (a new call, or a
    retry of one parked here); if so it is entered in ``inflight``, the session's table of requests in
    flight (the read loop counts it received). ``message``: the request already decoded (:func:`take_over`;
    ``data`` is then not read)."""
    if message is None:
        if _MARK not in data:
            return False
        try:
            message = _decode(data)
        except Exception:  # (msgspec's errors, a RecursionError: told by the usual way)
            return False
    id_, params = message.id, message.params
    # The checks of Session._start_handler, in its order (the session serves: its read loop runs).
    if id_ in inflight or len(inflight) >= conn.session.limits.max_inflight_inbound:
        return False
    try:
        envelope = conn.modern.wire.envelope_of(params.meta)
    except Exception:  # (told by the usual way)
        return False
    name = params.name
    tool = conn.registry.tools.get(name)
    if tool is None:
        return False
    arguments = params.arguments
    token = params.request_state
    # (the read loop's transports hold the person on the connection: none tells it per request)
    user = user_of(principal) if (principal := conn.principal) is not None else None
    if token is UNSET:  # a new call: its ServingRun started, answering request id_
        # (a retry's arguments are those its state is bound to: they were checked on its first call)
        try:
            kwargs = tool.arguments(arguments)
            sealed = arguments_digest(tool, arguments)
            offered = None if params.input_responses is UNSET else answers_of(params)
        except Exception:  # (told by the usual way)
            return False
        new = ServingRun(  # (positional: tool, recorded, call_id, offered, parking, asked, conn, serving, binding,
            name, [], None, offered, conn.modern.parking, None, conn, id_,  # arguments, user)
            binding("tools/call", name, sealed, envelope.client, user),
            bytes(arguments),  # (a copy: not the whole request's buffer)
            user,
        )
        ctx = None
        if tool.context_param is not None:
            rest = envelope.rest  # (all but the envelope's keys: they live on in the envelope)
            ctx = new.context = Context(conn, id_, dict(rest) if rest else UNSET, envelope, new, name)
        try:
            new.scope = scope = conn.session.start_detached(drive(new, None, ctx, tool, kwargs))
        except ConnectionClosed:
            return False
        inflight[id_] = scope
        return True
    try:
        inputs = answers_of(params)
        retry = check_retry(  # (arguments, envelope and responses: positional, a call without keywords)
            conn, "tools/call", name, envelope.client, token, time.time(),
            partial(arguments_digest, tool, arguments), user, bytes(arguments), envelope, inputs,
        )
    except Exception:  # (answers that are not objects, InvalidState: the usual way)
        return False
    if retry is None:
        return False  # (the usual way: a replay, a missing answer, a state used before, ...)
    run = retry.run
    # (check_retry gives, on this way, a run parked on this connection with a context to renew)
    assert run is not None
    ctx = run.context
    assert ctx is not None
    run.parking.take(run.handle)  # (the server's, where check_retry found it)
    run.serving, run.binding = id_, retry.binding
    ctx.envelope = envelope  # capabilities, identity and log level from this request only
    ctx.request_id = id_
    inflight[id_] = run.scope
    if retry.late:  # (retry.resume's two ends, decided by check_retry: an answer after the timeout is no answer)
        run.expire()
    else:
        run.deliver(inputs)
    return True


def take_over(conn: ServerConnection, request: Request) -> bool:
    """:func:`take_call` of a request decoded the usual way (``Session.take_over``, from ``_start_handler``,
    which checked its id and the in-flight slots): True if taken."""
    if request.method != "tools/call" or not request.params:
        return False
    inflight = conn.session.adoption(request.id)
    if inflight is None:
        return False
    try:
        params = _decode_params(request.params)
    except Exception:  # (told by the usual way)
        return False
    return take_call(conn, b"", inflight, _CallMessage("2.0", request.id, "tools/call", params))

