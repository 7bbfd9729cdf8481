"""Revision 2026-07-28: whether a retry may go on -- every check of its ``requestState``, written once.

A retry (``tools/call`` or ``prompts/get`` with ``requestState``) reaches the server one of two ways: the
read loop takes it over (:func:`minimcp.server.mrtr.takeover.take_call`, no task, one decoding), or a
handler task serves it (:func:`minimcp.server.mrtr.rounds.serve`). Both call :func:`check_retry`, which
decides every check:

1. the state verifies (sealed by one of our keys, byte for byte), has not expired, and is bound to this
   call: its method, its tool or prompt, its arguments, its client and its person. It names the parked
   run the retry resumes, if that run is here.
2. late answers -- an answer after the question's timeout is no answer (the call goes on as timed out):
   :attr:`Retry.late`, which :func:`resume` and a replay follow.
3. single use -- the state is recorded as used, refusing a state used before: by :func:`check_retry`
   itself on the read loop's way (a store that answers at once, and only for a retry it serves: no
   answer missing), by :func:`use` (any store, awaited) on a handler task's.

The read loop's way decides nothing of its own: a retry that any step would refuse, or that needs an
await or a replay, it leaves to the handler task's way (:func:`check_retry` gives None), which answers it
with the refusal (:func:`refusal`) -- the same code and message whichever way the retry came.

The binding a state is sealed with is made here only (:func:`binding`), once per request.
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

__all__ = ["Retry", "binding", "check_retry", "client_of", "refusal", "resume", "use", "user_of"]

#: Refusals of a retry's state are logged where the 2026-07-28 rounds always logged them.
logger = logging.getLogger("minimcp.modern")


def client_of(envelope: Envelope | None) -> str | None:
    """The client's name a request's envelope gives (``None``: none), as a state is bound to it."""
    return envelope.client if envelope is not None else None


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
    #: What the state is bound to (:func:`binding`): the next round's state is sealed with it.
    binding: dict[str, Any]
    #: The state's name in the store of used states (:meth:`StateSealer.state_id`), and its expiry.
    state_id: str
    exp: float
    #: Whether the answers come after the pending questions' timeout (then they are no answers): those of
    #: ``run``, else those recorded in ``state``.
    late: bool


def check_retry(
    conn: ServerConnection,
    method: str,
    name: str,
    client: str | None,
    token: str,
    now: float,
    arguments_digest: str | Callable[[], str],
    user: str | None = None,
    arguments: bytes | None = None,
    envelope: Envelope | None = None,
    responses: Mapping[str, Any] | None = None,
) -> Retry | None:
    """Whether ``token`` may carry this retry on: it verifies, has not expired at ``now``, and is bound to
    ``method``, ``name``, the arguments (their digest: ``arguments_digest``, or what it gives when called),
    ``client`` and ``user`` (the retry's person, :func:`user_of`; ``None`` without authorization); and
    whether its answers come late. A state of another person is refused before anything runs and is not
    used up: its owner may still retry with it.

    ``arguments``: the call's argument bytes, given by a caller that takes the parked run at once (no
    await between). A v2 state naming a run parked on ``conn`` that answered the first round of this
    same call itself -- the tool, the argument bytes, the client and the person of its first call -- is then
    checked from its MAC and header alone: every state sealed for that run is bound to that first call (each
    retry was checked against it), so the run's record is the binding, and the body is not decoded. Any
    other state is opened in full and checked against :func:`binding`. ``envelope``: the request's (its
    :func:`client_of` is ``client``); a run whose context holds that same frozen envelope has that client,
    not read again.

    ``responses``: the retry's answers, given by the read loop's way (with ``arguments``), which serves only
    a retry of a run parked on ``conn`` with a context, no answer missing unless late, whose state a store
    that answers at once records as used here: None for any other (a replay, a missing answer, a store to
    await, a state used before), which the handler task's way decides. That way records the state as used
    itself (:func:`use`).

    Raises:
        InvalidState: the state may not carry the retry (the reason is for the log: :func:`refusal`).
    """
    parts = conn.modern
    used = parts.used_states
    if responses is not None and type(used) is not MemoryUsedStates:
        return None  # (a store to await: the handler task's way)
    run: Run | None = None
    state: dict[str, Any] | None = None
    handle: str | None
    if arguments is not None and token.startswith("v2."):
        handle, sealed, exp, state_id = parts.sealer.open_header_id(token, now)
        run = parts.parking.peek(handle)
        if (
            run is not None and sealed and method == "tools/call" and run.conn is conn and run.tool == name
            and run.arguments == arguments and run.user == user and (ctx := run.context) is not None
            and ((held := ctx.envelope) is envelope is not None or client_of(held) == client)
        ):
            bound = binding(method, name, sealed, client, user)
        else:
            run = None
    if run is None:
        digest = arguments_digest if isinstance(arguments_digest, str) else arguments_digest()
        bound = binding(method, name, digest, client, user)
        state = parts.sealer.open(token, now=now, binding=bound)
        named = state.get("h")
        named_handle = named if isinstance(named, str) else None
        run = parts.parking.peek(named_handle) if named_handle is not None else None
        handle, state_id, exp = named_handle, StateSealer.state_id(token), float(state["exp"])
        if responses is not None and (run is None or run.conn is not conn or run.context is None):
            return None  # (not parked here, or no context to renew: the handler task's way)
    asked_at: float | None
    if run is not None:
        timeout, asked_at = run.pending_timeout, run.asked_at
    else:
        _digests, asked_at, timeout = asked(state or {})
    late = asked_at is not None and timeout is not None and now > asked_at + timeout
    if responses is not None and (
        run is None or (not late and run.missing(responses)) or not used.consume_now(state_id, exp)  # type: ignore[attr-defined]
    ):
        return None  # (an answer missing, or the state used before: the handler task's way)
    return Retry(run, state, handle, bound, state_id, exp, late)


def refusal(exc: InvalidState, name: str) -> McpError:
    """The error a retry whose state :func:`check_retry` refused is answered with (the reason: logged only)."""
    logger.info("refused requestState for %r: %s", name, exc.reason)
    return McpError(errors.INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})


async def use(conn: ServerConnection, retry: Retry, name: str) -> None:
    """Record the retry's state as used, or refuse it.

    Raises:
        McpError: ``-32602`` saying it was already used; ``-32603`` when the store of used states cannot
            tell (fails closed: the state stays unused).
    """
    try:
        fresh = await conn.modern.used_states.consume(retry.state_id, retry.exp)
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


def resume(run: Run, responses: Mapping[str, Any], late: bool) -> bool:
    """Wake the parked ``run`` a retry reached: with its answers ``late`` (:attr:`Retry.late`) its questions end
    as timed out; else the answers are delivered. False: an answer is missing, nothing was delivered, the run
    still waits."""
    if late:
        run.expire()  # an answer after the question's timeout is no answer
    elif run.missing(responses):
        return False
    else:
        run.deliver(responses)
    return True
