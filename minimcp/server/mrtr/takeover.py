"""Revision 2026-07-28: a ``tools/call`` request the read loop takes over -- a new call's run started, a retry resumed.

The read loop (``Session.take_call``, set on a connection locked to 2026-07-28) hands each
message naming ``"tools/call"`` to :func:`take_call` before decoding it the usual way. The
message is decoded in one pass, envelope and typed params (:class:`_TakenParams`) together,
the types checked by the decoder (a ``"2.0"`` request with an integer or text id,
``inputResponses`` objects only), where the usual way decodes the envelope, skipping the params,
and then the params again. A request decoded the usual way comes through
:func:`minimcp.server.mrtr.rounds.take_over` to :func:`take_request`.

:func:`take_call` takes the call over: a new call starts its
:class:`~minimcp.server.mrtr.rounds.ServingRun` at once; a retry whose run is parked here is handed its
answers at once, its state checked and recorded as used. A v2 state naming a run parked on this
connection that answered its first round itself, retried with that call's argument bytes, its
tool and its client, is checked from its MAC and header only
(:meth:`~minimcp.server.mrtr.state.StateSealer.open_header_id`); any other is opened
(:func:`minimcp.server.mrtr.retry_state.parked_run`). Either way the run's task answers the request, in
flight as one the session's ``_start_handler`` took over. Anything else -- not a valid request,
an id in use, no free in-flight slot, a state or params that do not check out, a replay, a
missing answer, a store of used states that must be awaited -- is left (False): the usual way
answers it, errors included, as ever. Nothing is changed before everything is checked.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from minimcp.server.context import Context
from minimcp.server.mrtr.retry_state import parked_run
from minimcp.server.mrtr.rounds import ServingRun, _drive
from minimcp.server.mrtr.state import InvalidState, StateSealer
from minimcp.server.mrtr.used_states import MemoryUsedStates
from minimcp.wire import jsonrpc, mrtr
from minimcp.wire.digest import digest
from minimcp.wire.errors import ConnectionClosed
from minimcp.wire.types import UNSET, UnsetType

if TYPE_CHECKING:
    from minimcp.server.connection import ServerConnection
    from minimcp.server.tools import RegisteredTool

__all__ = ["take_call", "take_request"]


class _TakenParams(msgspec.Struct, rename="camel"):
    """``tools/call`` params as the read loop takes them: :class:`minimcp.server.mrtr.rounds._CallToolParams` with
    ``inputResponses`` typed as the fast path needs them (anything else: not taken)."""

    name: str
    arguments: msgspec.Raw = jsonrpc.NO_PARAMS
    meta: msgspec.Raw = msgspec.field(default=mrtr.NO_META, name="_meta")
    input_responses: dict[str, dict[str, Any]] | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class _CallMessage(msgspec.Struct, gc=False):
    """A ``tools/call`` request as :func:`minimcp.wire.jsonrpc.decode` would take it (its exact types) and its
    params."""

    jsonrpc: Literal["2.0"]
    id: int | str
    method: Literal["tools/call"]
    params: _TakenParams


_decode = msgspec.json.Decoder(_CallMessage).decode
_encode = msgspec.json.encode
_MARK = b'"tools/call"'


def take_request(conn: ServerConnection, id_: Any, params: msgspec.Raw) -> bool:
    """:func:`take_call` of a ``tools/call`` request decoded the usual way (its id and params' bytes)."""
    inflight = conn.session.adoption(id_)
    if not params or inflight is None:
        return False
    # (encoded again: a rare path -- an escaped method name, the request that locked the era -- and the
    # one way in keeps every check in one place)
    data = _encode({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})
    return take_call(conn, data, inflight)


def take_call(conn: ServerConnection, data: bytes, inflight: dict[Any, Any]) -> bool:
    """Whether the message ``data`` was a 2026-07-28 ``tools/call`` request taken over (a new call, or a
    retry of one parked here); if so it is entered in ``inflight``, the session's table of requests in
    flight (the read loop counts it received)."""
    if _MARK not in data:
        return False
    try:
        message = _decode(data)
    except Exception:  # (msgspec's errors, a RecursionError: told by the usual way)
        return False
    id_ = message.id
    # The checks of Session._start_handler, in its order (the session serves: its read loop runs).
    if id_ in inflight or len(inflight) >= conn.session.limits.max_inflight_inbound:
        return False
    params = message.params
    try:
        envelope = mrtr.envelope_of(params.meta)
    except Exception:  # (told by the usual way)
        return False
    name = params.name
    tool = conn.registry.tools.get(name)
    if tool is None:
        return False
    server = conn.server
    arguments = params.arguments
    # A retry's arguments are those its state is bound to (checked below): they were checked on its
    # first call, and a parked run has its own; only a new call needs them decoded.
    token = params.request_state
    if token is UNSET:  # a new call: its ServingRun started, answering request id_
        try:
            kwargs = tool.arguments(arguments)
            sealed = _arguments_digest(tool, arguments)
        except Exception:  # (told by the usual way)
            return False
        inputs = params.input_responses
        info = envelope.client_info
        new = ServingRun(
            name, [], None, None if inputs is UNSET else inputs, parking=server.parking, conn=conn, serving=id_,
            binding={"m": "tools/call", "t": name, "a": sealed, "p": info.name if info is not None else None},
            arguments=bytes(arguments),  # (a copy: not the whole request's buffer)
        )
        ctx = None
        if tool.context_param is not None:
            rest = envelope.rest  # (all but the envelope's keys: they live on in the envelope)
            ctx = new.context = Context(conn, id_, dict(rest) if rest else UNSET, envelope, new, tool=name)
        try:
            new.scope = scope = conn.session.start_detached(_drive(new, None, ctx, tool, kwargs))
        except ConnectionClosed:
            return False
        inflight[id_] = scope
        return True
    inputs = params.input_responses
    if inputs is UNSET:
        inputs = {}
    used = server.used_states
    if type(used) is not MemoryUsedStates:
        return False
    now = time.time()
    info = envelope.client_info
    client = info.name if info is not None else None
    parking = server.parking
    # The usual retry: a v2 state naming (in its header) a run parked on this connection that answered
    # its first round itself (it keeps that call's argument bytes), retried with those bytes, its tool
    # and its client. Every state sealed for such a run is bound to its first call (each retry was
    # checked against that binding), so the binding is the run's own record; the state's MAC is
    # checked over its text, and its expiry and arguments' digest are read from its header.
    run = None
    if token.startswith("v2."):
        try:
            handle, sealed, exp, state_id = server.sealer.open_header_id(token)
        except InvalidState:
            return False  # (told by the usual way)
        run = parking.peek(handle)
    # (run.arguments: set by this module only, with run.context a Context or None)
    if (
        run is not None and run.conn is conn and run.tool == name and run.arguments == bytes(arguments)
        and (ctx := run.context) is not None
        and ((held := ctx.envelope) is envelope or _client_of(held) == client)  # (the same _meta: the same envelope)
    ):
        if not sealed or exp < now:
            return False
    else:
        found = parked_run(conn, token, name, client, arguments, now, tool, _arguments_digest)
        if found is None:
            return False
        run, sealed, exp = found
        state_id = StateSealer.state_id(token)
        ctx = run.context
    timeout = run.pending_timeout
    late = timeout is not None and now > run.asked_at + timeout  # (as Run.resume decides)
    if not late:  # (Run.missing: every value of inputs is an object, as decoded)
        for key in run.pending_keys:
            if key not in inputs:
                return False
    if not used.consume_now(state_id, exp):
        return False  # (already used: told by the usual way)
    parking.take(run.handle)
    run.serving, run.binding = id_, {"m": "tools/call", "t": name, "a": sealed, "p": client}
    assert ctx is not None  # (a Context: checked above, or by parked_run)
    ctx.envelope = envelope  # capabilities, identity and log level from this request only
    ctx.request_id = id_
    inflight[id_] = run.scope
    if late:
        run.expire()  # an answer after the question's timeout is no answer
    else:
        run.deliver(inputs)
    return True


def _client_of(envelope: mrtr.Envelope | None) -> str | None:
    info = envelope.client_info if envelope is not None else None
    return info.name if info is not None else None


def _arguments_digest(tool: RegisteredTool, arguments: msgspec.Raw) -> str:
    """The digest of a call's arguments a state is bound to (``"a"``), as :func:`minimcp.server.mrtr.rounds._rounds`
    makes it."""
    return digest(msgspec.json.decode(arguments or b"{}") if tool.args_type is not None else {})
