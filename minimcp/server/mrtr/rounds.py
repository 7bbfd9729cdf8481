"""Revision 2026-07-28 on the server: serving one round of a call that spans rounds.

The call itself is :mod:`minimcp.server.mrtr.run`.

On 2026-07-28 there is no handshake: every request carries its protocol
version, the client's capabilities and (usually) its identity in
``params._meta``, and a server may not send the client requests of its own.
A question to the person becomes an ``input_required`` result; the client
answers by calling again with ``inputResponses`` and the ``requestState`` we
gave it.

minimcp keeps the tool author's ``await ctx.elicit(...)`` unchanged, anywhere
in a tool body. The tool runs in a task of its own (a :class:`Run`); when it
asks, the request being served answers ``input_required`` and the run stays
suspended -- *parked* (:class:`~minimcp.server.mrtr.parking.Parking`) under a handle sealed
into ``requestState``. The retry finds the handle and delivers the answer: the
same coroutine goes on, exactly as on the handshake era.

When the handle is not here (the process restarted, the retry reached another
worker, the park was dropped to make room), the tool is *replayed*: it runs
again from the top and each ``ctx.elicit`` returns the answer recorded in the
sealed state, in order, until the first unanswered question. So code that runs
before a question may run more than once; a tool that must not be replayed is
registered with ``replayable=False`` and its retries then fail cleanly.

What is recorded is only what the tool can use of each answer
(:func:`~minimcp.wire.input_required.clean_answer`), and when the open questions were asked: an
answer arriving after the question's timeout is no answer, and ``ctx.elicit``
gives ``Cancelled("timeout")`` as on the handshake era, parked or replayed. A
parked call is dropped when that timeout passes.

The pure half of this revision (envelope, meta keys, codes, result shape,
questions and answers) is :mod:`minimcp.wire.envelope` and :mod:`minimcp.wire.input_required`; :func:`serve`
is the entry from
:class:`~minimcp.server.connection.ServerConnection`.
"""

from __future__ import annotations

import itertools
import logging
import operator
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

import msgspec

from minimcp.core._backend import BareTaskCancelled
from minimcp.core.dispatch import Deferred
from minimcp.server import handlers
from minimcp.server.context import Context
from minimcp.server.mrtr.retry import binding, check_retry, client_of, refusal, resume, use, user_of
from minimcp.server.mrtr.run import NOT_STARTED, Asking, Raised, Returned, Run
from minimcp.server.mrtr.state import InvalidState, StateTooLarge
from minimcp.server.outcome import ToolRun
from minimcp.server.tools import RegisteredTool, argument_error, error_result, to_result
from minimcp.wire import errors, jsonrpc
from minimcp.wire.elicitation import UrlElicitationRequired
from minimcp.wire.envelope import (
    NO_META,
    UNSUPPORTED_VERSION,
    Envelope,
    complete,
    complete_reply,
    read_envelope,
)
from minimcp.wire.errors import ConnectionClosed, McpError
from minimcp.wire.input_required import asked, digest, input_required, input_required_reply
from minimcp.wire.jsonrpc import Request
from minimcp.wire.types import UNSET, GetPromptParams, ServerCapabilities, UnsetType
from minimcp.wire.versions import MODERN, SUPPORTED, has_envelope

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal
    from minimcp.auth.request import AuthenticatedRequest
    from minimcp.server.connection import ServerConnection

__all__ = ["CallParams", "ServingRun", "answers_of", "arguments_digest", "drive", "serve"]

logger = logging.getLogger("minimcp.modern")
server_logger = logging.getLogger("minimcp.server")

_ENVELOPE_PREFIX = "io.modelcontextprotocol/"


# --- serving one round ---------------------------------------------------------------------

async def serve(conn: ServerConnection, request: Request) -> Any:
    """Answer one request of a connection locked to 2026-07-28 (every result in the revision's shape)."""
    method = request.method
    if method == "initialize" and not has_envelope(request.params):
        raise McpError(
            UNSUPPORTED_VERSION,
            "this connection speaks protocol 2026-07-28 (no initialize); open a new connection to use "
            "the handshake",
            {"supported": list(MODERN), "requested": _requested_version(request.params)},
        )
    if method == "tools/call":
        return await _call_tool(conn, request)  # its params and envelope in one decoding
    server, registry = conn.server, conn.registry
    info = conn.modern.wire
    envelope = info.read_envelope(request.params)
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": [*MODERN, *reversed(SUPPORTED)],
            "capabilities": msgspec.to_builtins(_modern_capabilities(server.capabilities())),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return complete(result, info, cacheable=True)
    lister = handlers.LISTS.get(method)
    if lister is not None:
        principal = _principal_of(conn, request)
        allowed = principal.scopes if principal is not None and conn.hide_unpermitted else None
        return complete(await lister(registry, conn.limits.page_size, request, allowed), info, cacheable=True)
    if method == "resources/read":
        try:
            value = await handlers.read_resource(conn, registry, request, envelope, _principal_of(conn, request))
        except McpError as exc:
            if exc.code == errors.RESOURCE_NOT_FOUND:  # resource-not-found is -32602 from 2026-07-28 on
                raise McpError(errors.INVALID_PARAMS, exc.message, exc.data) from None
            raise
        return complete(value, info, cacheable=True)
    if method == "prompts/get":
        return await _get_prompt(conn, request, envelope)
    if method == "completion/complete":
        return complete(await handlers.complete(conn, registry, request, envelope, _principal_of(conn, request)), info)
    raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")


def _principal_of(conn: ServerConnection, request: Request) -> Principal | None:
    """Who sent ``request``: its own person (2026-07-28 over HTTP, authorization on), else the connection's."""
    return conn.principal if type(request) is Request else cast("AuthenticatedRequest", request).principal


class CallParams(msgspec.Struct, rename="camel", gc=False):
    """``tools/call`` params on 2026-07-28, the one struct both ways in decode them with (the handshake era's
    is :class:`~minimcp.server.handlers.CallToolWire`): the arguments kept raw (the tool's own type decodes
    them), ``_meta`` as bytes (the envelope is read from them, and a parked call's context keeps what it
    needs of them). ``inputResponses`` is checked by :func:`answers_of`."""

    name: str
    arguments: msgspec.Raw = jsonrpc.NO_PARAMS
    meta: msgspec.Raw = msgspec.field(default=NO_META, name="_meta")
    input_responses: dict[str, Any] | UnsetType | None = UNSET
    request_state: str | UnsetType = UNSET


_decode_call_params = msgspec.json.Decoder(CallParams).decode
_DICTS = itertools.repeat(dict)  # (answers_of: ``dict`` for each value; endless, and holds no state of a call)
_DIGEST = operator.attrgetter("digest")  # (_sealed_round: each question's digest, read in C)


def answers_of(params: CallParams | GetPromptParams) -> dict[str, Any]:
    """A request's ``inputResponses`` (``{}``: none).

    Raises:
        McpError: ``-32602``, they are not an object of objects.
    """
    responses = params.input_responses
    if responses is UNSET:
        return {}
    # (every value checked in C: isinstance of each value and dict, no frame or loop of ours per request)
    if isinstance(responses, dict) and all(map(isinstance, responses.values(), _DICTS)):
        return responses
    raise McpError(errors.INVALID_PARAMS, "inputResponses must be an object of objects")


def arguments_digest(tool: RegisteredTool, arguments: msgspec.Raw) -> str:
    """The digest of a ``tools/call``'s arguments its states are bound to (``"a"``): of the arguments as sent,
    of ``{}`` for a tool that takes none."""
    return digest(msgspec.json.decode(arguments or b"{}") if tool.args_type is not None else {})


async def _call_tool(conn: ServerConnection, request: Request) -> dict[str, Any]:
    try:
        params = _decode_call_params(request.params or b"{}")
    except msgspec.DecodeError as exc:  # (a ValidationError too)
        read_envelope(request.params)  # a bad envelope is told first, as for every other method
        raise McpError(errors.INVALID_PARAMS, f"invalid params: {exc}") from None
    envelope = conn.modern.wire.envelope_of(params.meta)
    tool = conn.registry.tools.get(params.name)
    if tool is None:
        raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
    try:
        kwargs = tool.arguments(params.arguments)
    except msgspec.DecodeError as exc:
        return complete(error_result(argument_error(params.name, exc)), conn.modern.wire)
    sealed = arguments_digest(tool, params.arguments)
    name, context_param = params.name, tool.context_param

    def body(ctx: Context | None) -> Awaitable[Any]:
        call = dict(kwargs)
        if context_param is not None:
            call[context_param] = ctx
        return ToolRun(conn, tool, name, tool.fn(**call), ctx, True)

    wants_context = context_param is not None
    meta = dict(envelope.rest) if envelope.rest else UNSET  # (read once per _meta with the envelope)
    return await _rounds(conn, request, envelope, "tools/call", name, sealed, params, meta, wants_context, body)


async def _get_prompt(conn: ServerConnection, request: Request, envelope: Envelope) -> dict[str, Any]:
    params = jsonrpc.decode_params(request.params, GetPromptParams)
    prompt, arguments = handlers.prompt_and_arguments(conn.registry, params)
    return await _rounds(
        conn,
        request,
        envelope,
        "prompts/get",
        params.name,
        digest(arguments),
        params,
        params.meta,
        prompt.context_param is not None,
        lambda ctx: handlers.prompt_result(prompt, arguments, ctx),
    )


async def _rounds(
    conn: ServerConnection,
    request: Request,
    envelope: Envelope,
    method: str,
    name: str,
    sealed: str,
    params: Any,
    meta: dict[str, Any] | UnsetType,
    wants_context: bool,
    body: Callable[[Context | None], Awaitable[Any]],
) -> dict[str, Any]:
    """Serve one round of a multi round-trip request (tools/call, prompts/get).

    A new call starts ``body`` in a :class:`Run`; a retry resumes the parked run
    named in its ``requestState``, or replays ``body`` with the recorded answers. ``sealed``: the digest of
    the arguments its states are bound to (``"a"``).
    """
    client = client_of(envelope)
    principal = _principal_of(conn, request)
    user = user_of(principal) if principal is not None else None
    inputs = answers_of(params)
    if isinstance(params.request_state, str):
        now = time.time()
        try:  # (opened in full: the run is taken only after the awaited use below)
            retry = check_retry(conn, method, name, client, params.request_state, now, sealed, user)
        except InvalidState as exc:
            raise refusal(exc, name) from None
        assert retry is not None and retry.state is not None  # (this way: opened in full, or refused)
        await use(conn, retry, name)
        state, bound = retry.state, retry.binding
        run = conn.modern.parking.take(retry.handle) if retry.handle is not None else None
        if run is not None:
            if run.context is not None:
                # Capabilities, identity and log level come from this request only; so does the person's
                # token (the same person: the state is bound to them; its scopes and expiry maybe renewed).
                run.context.envelope = envelope
                run.context.request_id = request.id
                run.context.principal = principal
            if not resume(run, inputs, retry.late):
                # A needed answer is missing: ask the same questions again, still parked.
                return _input_required(conn, run, bound)
        else:
            keys = [str(k) for k in state.get("ks", [])]
            digests, asked_at, _timeout = asked(state)
            if method == "tools/call" and name in conn.registry.not_replayable:
                raise McpError(
                    errors.INVALID_PARAMS,
                    f"this call of {name!r} cannot be resumed here (its state is gone and the tool is "
                    "not replayable); call the tool again",
                )
            conn.modern.workers.continued_here(state)  # parked on another worker: it drops its copy
            recorded = [list(p) for p in state.get("ans", []) if isinstance(p, list) and len(p) == 2]
            if retry.late:  # an answer after the question's timeout is no answer: the call goes on as timed out
                recorded.extend([d, None] for d in digests)
            elif keys and all(isinstance(inputs.get(k), dict) for k in keys):
                recorded.extend([d, inputs[k]] for k, d in zip(keys, digests, strict=False))
            call_id = state.get("c")
            run = _start_run(
                conn, name, envelope, request, meta, wants_context, body, recorded,
                call_id if isinstance(call_id, str) else None,
                asked=(digests, asked_at) if asked_at is not None else None, principal=principal, user=user,
            )
    else:
        bound = binding(method, name, sealed, client, user)
        # A first call may carry answers to questions asked by name (key=...).
        run = _start_run(
            conn, name, envelope, request, meta, wants_context, body, [], offered=inputs, principal=principal,
            user=user,
        )
    try:
        outcome = await run.next_outcome()
    except BaseException:
        run.stop()  # the client gave up on this round: stop the call
        raise
    if isinstance(outcome, Asking):
        return _input_required(conn, run, bound)
    if isinstance(outcome, Raised):
        if isinstance(outcome.error, UrlElicitationRequired):
            return _url_steps_required(conn, outcome.error, bound)
        raise outcome.error
    return complete(outcome.value, conn.modern.wire)


def _start_run(
    conn: ServerConnection,
    name: str,
    envelope: Envelope,
    request: Request,
    meta: dict[str, Any] | UnsetType,
    wants_context: bool,
    body: Callable[[Context | None], Awaitable[Any]],
    recorded: list[list[Any]],
    call_id: str | None = None,
    *,
    offered: dict[str, Any] | None = None,
    asked: tuple[list[str], float] | None = None,
    principal: Principal | None = None,
    user: str | None = None,
) -> Run:
    # (conn: a later retry on this connection may be taken over by its read loop)
    run = ServingRun(name, recorded, call_id, offered, conn.modern.parking, asked, conn, None, None, None, user)
    ctx: Context | None = None
    if wants_context:
        if isinstance(meta, dict):
            # The envelope's keys live on in ``envelope`` (renewed each round); the context keeps the
            # rest (a progress token): a parked call need not hold a second copy of the envelope.
            meta = {k: v for k, v in meta.items() if not k.startswith(_ENVELOPE_PREFIX)} or UNSET
        ctx = run.context = Context(conn, request.id, meta, envelope, run, name, principal)
    # The body is made here (a coroutine, not run yet): the parked task keeps only it, not the
    # closure that makes it.
    awaitable = body(ctx)
    try:
        run.scope = conn.session.start_detached(drive(run, awaitable, ctx))
    except ConnectionClosed:
        inner = awaitable.awaitable if isinstance(awaitable, Deferred) else awaitable
        if isinstance(inner, Coroutine):
            inner.close()  # never to run: no "never awaited" warning
        raise
    return run


async def drive(
    run: Run,
    awaitable: Awaitable[Any] | Deferred | None,
    ctx: Context | None,
    tool: RegisteredTool | None = None,
    kwargs: dict[str, Any] | None = None,
) -> None:
    """The run's own task: the tool's body, its outcome told to the request side, whatever ends it.

    A bare task of the session's awaiting the tool's own coroutine (a :class:`Deferred` finished here: no
    wrapping frame while parked). A call taken over (:mod:`minimcp.server.mrtr.takeover`) gives ``tool`` and its
    ``kwargs`` (its own dict) instead: the coroutine is made in the task, its result mapped as :class:`ToolRun`
    maps it (no object of it per call), and the run answers its request itself (:func:`_last_reply`).
    """
    error: McpError | None
    try:
        try:
            if tool is not None:
                assert kwargs is not None
                if tool.context_param is not None:
                    kwargs[tool.context_param] = ctx
                coro = tool.fn(**kwargs)
                kwargs = None  # (not held while parked)
                try:
                    value = await coro
                except BaseException as exc:  # (a cancellation is raised again)
                    result = ToolRun(run.conn, tool, run.tool, coro, ctx, True).finish(None, exc)
                else:
                    if ctx is not None:
                        ctx.finished = True  # (ToolRun.finish, written out: the usual result)
                    result = to_result(tool, value)  # (a CallToolResult as it is)
            elif isinstance(awaitable, Deferred):
                try:
                    value = await awaitable.awaitable
                except BaseException as exc:
                    result = awaitable.finish(None, exc)  # a cancellation is raised again
                else:
                    result = awaitable.finish(value, None)
            else:
                assert awaitable is not None
                result = await awaitable
        except McpError as exc:
            result, error = None, exc
        else:
            error = None
        if run.serving is None:
            run.finish(Returned(result) if error is None else Raised(error))
        else:
            id_, reply = _last_reply(run, result, error)  # (its outcome's parts: no Returned made per call)
            session = run.conn.session
            if not session.reply_adopted_now(id_, reply):  # (sent now: no coroutine)
                await session.reply_adopted(id_, reply)
    except BareTaskCancelled:
        pass  # asyncio: the call was stopped (dropped, timed out, given up on, or the session ended)
    finally:
        if ctx is not None:
            ctx.finished = True
        # The run and its context point at each other, and the task at the run: cut here, they go when
        # their last reference does, not in a pass of the cyclic GC (which a call per round trip kept busy).
        run.context, run.scope = None, NOT_STARTED
        if not run.finished:  # (finish takes the run out of its parking)
            abandoned = Raised(McpError(errors.INTERNAL_ERROR, f"the call of {run.tool!r} was abandoned"))
            if run.serving is None:
                run.finish(abandoned)
            else:  # (no reply if that request was cancelled: the usual way a serving run ends early)
                id_, _ = _end_serving(run)
                session = run.conn.session
                session.reply_adopted_nowait(id_, session.error_reply(id_, abandoned.error, "tools/call"))


# --- the read loop's fast path: a run answering the requests it serves ---------------------------


class ServingRun(Run):
    """A :class:`Run` that answers the requests it serves itself (taken over: :mod:`minimcp.server.mrtr.takeover`).

    Its task sends ``input_required`` when the tool asks (:meth:`answer_asking`) and the call's
    result when it ends (:func:`_last_reply`), for the request in :attr:`serving`: no handler
    task waits on its outcome. Between rounds (``serving`` is ``None``) it is a parked run like
    any other, and a retry served the usual way (:func:`_rounds`) waits on it as on any run.
    """

    __slots__ = ()

    def answer_asking(self) -> Awaitable[None] | None:
        conn, id_, binding = self.conn, self.serving, self.binding
        self.serving = self.binding = None
        session = conn.session
        try:
            sealed = _sealed_round(conn, self, binding or {})  # (its questions stay pending: read below)
            if isinstance(sealed, str):  # (the reply from prepared bytes: no tree of dicts per round)
                reply = input_required_reply(id_, self.pending_keys, self.pending, sealed, conn.modern.wire)
            else:
                reply = jsonrpc.encode_result(id_, sealed)
        except Exception as exc:  # the client's bound of parked calls (its run is stopped)
            reply = session.error_reply(id_, exc, "tools/call")
        if self.scope is NOT_STARTED:  # (stopped by the seal or the park: this task is being cancelled)
            session.reply_adopted_nowait(id_, reply)
        elif not session.reply_adopted_now(id_, reply):  # (sent now: no coroutine)
            sending: Awaitable[None] = session.reply_adopted(id_, reply)
            return sending
        return None


def _end_serving(run: Run) -> tuple[Any, dict[str, Any] | None]:
    """A serving run's call is over: out of its parking, finished; the request it served and its binding."""
    id_, binding = run.serving, run.binding
    run.serving = run.binding = None
    run.parking.discard(run)
    run.finished = True
    return id_, binding


def _last_reply(run: Run, result: Any, error: McpError | None) -> tuple[Any, bytes]:
    """A serving run's call ended with ``result`` (``error`` None: a :class:`Returned`) or ``error`` (a
    :class:`Raised`): the request it serves, and the reply that answers it."""
    conn, id_, binding = run.conn, run.serving, run.binding  # (_end_serving, written out: once per call)
    run.serving = run.binding = None
    # (no parking.discard: a run serving a request is not parked -- it leaves its parking before it
    # serves a retry, and parks only once it answered input_required, serving nothing)
    run.finished = True
    try:
        if error is None:
            reply = complete_reply(id_, result, conn.modern.wire)
        elif isinstance(error, UrlElicitationRequired):
            reply = jsonrpc.encode_result(id_, _url_steps_required(conn, error, binding or {}))
        else:
            reply = conn.session.error_reply(id_, error, "tools/call")
    except Exception as exc:
        reply = conn.session.error_reply(id_, exc, "tools/call")
    return id_, reply


def _input_required(conn: ServerConnection, run: Run, binding: dict[str, Any]) -> dict[str, Any]:
    """Park ``run`` and answer ``input_required`` with its open questions (and a fresh state)."""
    keys, questions = run.pending_keys, run.pending
    sealed = _sealed_round(conn, run, binding)
    if not isinstance(sealed, str):
        return sealed
    return input_required(keys, questions, sealed, conn.modern.wire)


def _sealed_round(conn: ServerConnection, run: Run, binding: dict[str, Any]) -> str | dict[str, Any]:
    """Seal ``run``'s round and park it: the state for its ``input_required``, or the result ending a
    ``tools/call`` whose state would be too large."""
    server, parts = conn.server, conn.modern
    try:
        payload = {**binding, "h": run.handle, "ks": run.pending_keys, "qs": list(map(_DIGEST, run.pending)),
                   "at": run.asked_at, "to": run.pending_timeout, "ans": run.answers, "c": run.call_id,
                   **parts.workers.sealed}
        state = parts.sealer.seal(payload, time.time(), server.state_ttl)  # (positional: a call without keywords)
    except StateTooLarge as exc:
        run.stop()
        text = (f"the call of {run.tool!r} cannot go on: the answers it carries to its next question "
                f"are too large ({exc.size} bytes sealed, limit {exc.limit})")
        server_logger.warning("%s", text)
        if binding["m"] != "tools/call":
            raise McpError(errors.INTERNAL_ERROR, text) from None
        return complete(error_result(text), conn.modern.wire)
    if server.replay_every_retry:
        run.stop()  # dropped at once, as on a full park table: the retry replays
    else:
        run.parking.park(run)  # (the server's: a run's own attribute, read for less than the server's)
    return state


def _url_steps_required(conn: ServerConnection, exc: UrlElicitationRequired, binding: dict[str, Any]) -> dict[str, Any]:
    # -32042 does not exist on 2026-07-28: the steps become URL input requests, and the
    # retry simply runs the tool again (it checks for itself whether the steps are done).
    server = conn.server
    requests = {
        f"url{i + 1}": {"method": "elicitation/create",
                        "params": {"mode": "url", "message": item.message, "url": item.url}}
        for i, item in enumerate(exc.elicitations)
    }
    state = conn.modern.sealer.seal({**binding, "h": None, "ks": [], "ans": []}, now=time.time(), ttl=server.state_ttl)
    result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
    return complete(result, conn.modern.wire)


def _requested_version(params: msgspec.Raw) -> Any:
    try:
        return msgspec.json.decode(params or b"{}").get("protocolVersion")
    except (msgspec.DecodeError, AttributeError):
        return None


def _modern_capabilities(caps: ServerCapabilities) -> ServerCapabilities:
    # 2026-07-28 removed logging/setLevel and resources/subscribe, and list changes travel only
    # through subscriptions/listen, which we do not offer: so no subscribe / listChanged either.
    def plain(value: dict[str, Any] | UnsetType) -> dict[str, Any] | UnsetType:
        return {} if isinstance(value, dict) else value

    return msgspec.structs.replace(
        caps, logging=UNSET, resources=plain(caps.resources), prompts=plain(caps.prompts), tools=plain(caps.tools)
    )
