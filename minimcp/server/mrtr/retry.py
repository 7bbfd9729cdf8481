"""Revision 2026-07-28: whether a retry may go on -- every check of its ``requestState``, written once.

A retry (``tools/call`` or ``prompts/get`` with ``requestState``) reaches the server one of two ways: the
read loop takes it over (:func:`minimcp.server.mrtr.takeover.take_call`, no task, one decoding), or a
handler task serves it (:func:`minimcp.server.mrtr.rounds.serve`). Both call the same steps:

1. :func:`check_retry` -- the state verifies (sealed by one of our keys, byte for byte), has not expired,
   and is bound to this call: its method, its tool or prompt, its arguments and its client. It names the
   parked run the retry resumes, if that run is here.
2. single use -- the state is recorded as used: :func:`use_now` (the read loop: a store that answers at
   once) or :func:`use` (a handler task: any store, awaited), each refusing a state used before.
3. :func:`answered_late` -- an answer after the question's timeout is no answer (the call goes on as
   timed out); :func:`resume` hands a parked run its answers by that rule (the read loop decides the
   rule, and that no answer is missing, before step 2: it records a state only for a retry it serves).

The read loop's way decides nothing of its own: a retry that any step would refuse, or that needs an
await or a replay, it leaves to the handler task's way (False), which answers it with the refusal
(:func:`refusal`) -- the same code and message whichever way the retry came.

The binding a state is sealed with is made here only (:func:`binding`).
"""

from __future__ import annotations

import binascii
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from minimcp.server.mrtr.state import InvalidState, StateSealer
from minimcp.server.mrtr.used_states import MemoryUsedStates, StoreUnavailable
from minimcp.wire import errors
from minimcp.wire.envelope import Envelope
from minimcp.wire.errors import McpError
from minimcp.wire.input_required import asked

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal
    from minimcp.server.connection import ServerConnection
    from minimcp.server.mrtr.run import Run

__all__ = [
    "Retry", "answered_late", "binding", "check_retry", "client_of", "refusal", "resume", "use", "use_now", "user_of",
]

#: Refusals of a retry's state are logged where the 2026-07-28 rounds always logged them.
logger = logging.getLogger("minimcp.modern")


def client_of(envelope: Envelope | None) -> str | None:
    """The client's name a request's envelope gives (``None``: none), as a state is bound to it."""
    info = envelope.client_info if envelope is not None else None
    return info.name if info is not None else None


def user_of(principal: Principal) -> str:
    """The person a state is bound to (``u``): a digest of the principal's key ``(iss, sub)``, never the
    token's bytes (a refreshed token is the same person) nor the subject itself (the state is signed, not
    encrypted: it does not show who the person is)."""
    key = b"minimcp principal\x00" + msgspec.json.encode(principal.key)
    return binascii.b2a_base64(hashlib.sha256(key).digest()[:16], newline=False).rstrip(b"=").decode()


def binding(
    method: str, name: str, arguments_digest: str, client: str | None, user: str | None = None
) -> dict[str, Any]:
    """What a state is bound to: the method (``m``), the tool or prompt (``t``), the arguments' digest (``a``),
    the client's name (``p``, ``None`` when it gave none) and, with authorization, the person (``u``:
    :func:`user_of`; left out without, so a state sealed by a server that checks no tokens never opens on
    one that does)."""
    bound = {"m": method, "t": name, "a": arguments_digest, "p": client}
    if user is not None:
        bound["u"] = user
    return bound


class Retry(msgspec.Struct, gc=False):
    """A retry whose state verified, has not expired and is bound to its call (:func:`check_retry`)."""

    #: The run parked under the state's handle when it was checked (still parked), or None.
    run: Run | None
    #: The state's payload (a replay reads it); None: checked from its header and ``run``'s record.
    state: dict[str, Any] | None
    #: The handle of the run the state names (None: none).
    handle: str | None
    #: The arguments' digest the state is bound to.
    digest: str
    #: The state's name in the store of used states (:meth:`StateSealer.state_id`), and its expiry.
    state_id: str
    exp: float


def check_retry(
    conn: ServerConnection,
    method: str,
    name: str,
    client: str | None,
    token: str,
    now: float,
    arguments_digest: Callable[[], str],
    arguments: bytes | None = None,
    envelope: Envelope | None = None,
    user: str | None = None,
) -> Retry:
    """Whether ``token`` may carry this retry on: it verifies, has not expired at ``now``, and is bound to
    ``method``, ``name``, the arguments (their digest: ``arguments_digest()``), ``client`` and ``user`` (the
    retry's person, :func:`user_of`; ``None`` without authorization). A state of another person is refused
    before anything runs and is not used up: its owner may still retry with it.

    ``arguments``: the call's argument bytes, given by a caller that takes the parked run at once (no
    await between). A v2 state naming a run parked on ``conn`` that answered the first round of this
    same call itself -- the tool, the argument bytes, the client and the person of its first call -- is then checked
    from its MAC and header alone: every state sealed for that run is bound to that first call (each
    retry was checked against it), so the run's record is the binding, and the body is not decoded.
    Any other state is opened in full and checked against :func:`binding`. ``envelope``: the request's
    (its :func:`client_of` is ``client``); a run whose context holds that same frozen envelope has that
    client, not read again.

    Raises:
        InvalidState: the state may not carry the retry (the reason is for the log: :func:`refusal`).
    """
    sealer = conn.server.sealer
    if arguments is not None and token.startswith("v2."):
        handle, sealed, exp, state_id = sealer.open_header_id(token, now=now)
        run = conn.server.parking.peek(handle)
        if (
            run is not None and sealed and method == "tools/call" and run.conn is conn and run.tool == name
            and run.arguments == arguments and run.user == user and (ctx := run.context) is not None
            and ((held := ctx.envelope) is envelope is not None or client_of(held) == client)
        ):
            return Retry(run, None, handle, sealed, state_id, exp)
    bound = binding(method, name, arguments_digest(), client, user)
    state = sealer.open(token, now=now, binding=bound)
    named = state.get("h")
    named_handle = named if isinstance(named, str) else None
    parked = conn.server.parking.peek(named_handle) if named_handle is not None else None
    return Retry(parked, state, named_handle, bound["a"], StateSealer.state_id(token), float(state["exp"]))


def refusal(exc: InvalidState, name: str) -> McpError:
    """The error a retry whose state :func:`check_retry` refused is answered with (the reason: logged only)."""
    logger.info("refused requestState for %r: %s", name, exc.reason)
    return McpError(errors.INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})


def use_now(conn: ServerConnection, retry: Retry) -> bool:
    """Record the retry's state as used, where the store answers at once (:class:`MemoryUsedStates`):
    False when it was used before, or when the store must be awaited (:func:`use` tells)."""
    used = conn.server.used_states
    return type(used) is MemoryUsedStates and used.consume_now(retry.state_id, retry.exp)


async def use(conn: ServerConnection, retry: Retry, name: str) -> None:
    """Record the retry's state as used, or refuse it.

    Raises:
        McpError: ``-32602`` saying it was already used; ``-32603`` when the store of used states cannot
            tell (fails closed: the state stays unused).
    """
    try:
        fresh = await conn.server.used_states.consume(retry.state_id, retry.exp)
    except StoreUnavailable as exc:  # fail closed: refused, and the state stays unused
        logger.warning("refused a requestState for %r: %s", name, exc)
        raise McpError(
            errors.INTERNAL_ERROR,
            "cannot accept this requestState now: the store of used states is unavailable; retry later",
            {"reason": "state_store_unavailable"},
        ) from None
    if not fresh:
        logger.info("refused a used requestState for %r", name)
        raise McpError(
            errors.INVALID_PARAMS,
            "requestState already used: each one is good for one retry (call again without it to start over)",
            {"reason": "request_state_used"},
        )


def answered_late(run: Run | None, state: dict[str, Any] | None, now: float) -> bool:
    """Whether the answers come after the pending questions' timeout (then they are no answers): those of
    the parked ``run``, else those recorded in ``state`` (a replay)."""
    timeout: float | None
    asked_at: float | None
    if run is not None:
        timeout, asked_at = run.pending_timeout, run.asked_at
    else:
        _digests, asked_at, timeout = asked(state or {})
    return asked_at is not None and timeout is not None and now > asked_at + timeout


def resume(run: Run, responses: Mapping[str, Any], now: float) -> bool:
    """Wake the parked ``run`` a retry reached at ``now``: after its questions' timeout they end as timed
    out; else the answers are delivered. False: an answer is missing, nothing was delivered, the run
    still waits."""
    if answered_late(run, None, now):
        run.expire()  # an answer after the question's timeout is no answer
    elif run.missing(responses):
        return False
    else:
        run.deliver(responses)
    return True
