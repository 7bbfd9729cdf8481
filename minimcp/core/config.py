"""Limits and defaults, in one place.

Every buffer, queue and table in minimcp has a bound, and every bound is a
field here. A :class:`Limits` is immutable; make a changed copy with
:meth:`Limits.replace`. The rule for a worker's name (:func:`check_worker_id`, used by
the HTTP app's session ids and the bus between workers) is configuration too, so it is here.
"""

from __future__ import annotations

import re

import msgspec
import msgspec.structs

__all__ = ["Limits", "check_worker_id"]

_WORKER_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def check_worker_id(value: object, what: str = "worker_id") -> str:
    """``value`` if it may name a worker (``[A-Za-z0-9_-]{1,32}``), else a ``ValueError`` naming ``what``."""
    if not isinstance(value, str) or _WORKER_ID.fullmatch(value) is None:
        raise ValueError(
            f"{what} must be 1 to 32 ASCII letters, digits, '_' or '-' (it names this worker in session ids "
            f"and on the bus), not {value!r}"
        )
    return value


class Limits(msgspec.Struct, frozen=True):
    """Bounds and default timeouts of a session.

    A frozen :class:`msgspec.Struct` (a dataclass would cost ~2 ms to define at import):
    keyword or positional construction, equality and hashing by value, no other
    attributes; :func:`msgspec.structs.fields` lists the fields.

    Attributes:
        max_message_bytes: Largest accepted message (a stdio line, an HTTP body,
            a WebSocket frame). Larger ones get a JSON-RPC error and are dropped
            without being buffered whole.
        max_pending_outbound: Requests we sent and still await, per session
            (``tools/call`` on a client; ``elicitation/create`` and friends on a
            server). One more raises :class:`~minimcp.wire.errors.TooManyPending`.
        max_pending_total: Pending outbound requests across all sessions of one
            server. One more raises :class:`~minimcp.wire.errors.TooManyPending`.
        max_inflight_inbound: Requests from the peer being handled at once, per
            session. One more is answered at once with a ``-32003`` error.
        request_timeout: Default seconds to wait for a response to a request we
            sent; ``None`` waits forever (not recommended).
        elicitation_timeout: Default seconds a question to a person may wait.
        max_request_time: Hard cap, in seconds, on how long a request may wait
            while its clock is paused for a person answering a question.
        max_used_states: ``requestState`` tokens a server remembers as used
            (revision 2026-07-28), each until it expires; a used one is refused
            with ``-32602``. At the limit the oldest records are forgotten and the
            states they named (and any older) are refused too.
        shutdown_timeout: Seconds the stdio client waits for a server to exit at
            each step of close stdin -> terminate -> kill.
        page_size: Items per page of ``tools/list`` and the other list methods.
        max_subscriptions: Resource subscriptions per session.
        max_sessions_per_client: HTTP sessions one client address (an IPv6
            ``/64``) may hold, and with authorization on one person
            (``Principal.key``, wherever they connect from) too; one more ends
            that address's (or person's) least recently used session without
            pending work (``503`` when all have work).
            ``None``: no per-client bound (behind a proxy every client shares
            the proxy's address). The WebSocket server bounds its connections
            (an upgrade in progress counts) the same way per address and, with
            authorization on, per person: one more ends that address's (or
            person's) least recently used idle connection (close code 1008)
            or is refused (``429``) when all have work. Whatever this bound, a
            full WebSocket server makes room for a new address at the expense
            of the address holding the most connections
            (:mod:`minimcp.transports._ws_slots`).
        max_parked_per_client: Tool calls of revision 2026-07-28 that one
            client address, and with authorization on one person, may have
            parked waiting for answers; a new call that would park one more
            for either is refused with ``-32003``.
        http_header_timeout: Seconds a client of the HTTP server (minimcp's own,
            uvicorn or hypercorn, as run by minimcp) has to send a request's
            headers, counted from the connection or the end of its previous
            request; then the connection is closed (so it is also how long an
            idle keep-alive connection stays open).
        max_http_connections: Requests the HTTP server serves at once (open
            SSE streams included); beyond, ``503``. uvicorn and minimcp's own
            server also close connections beyond it as soon as they are
            accepted (minimcp's after a ``503``).
        max_http_head_bytes: Bytes of a request's head (request line and
            headers) the HTTP server accepts; beyond, the request is refused
            (``431``, or ``400`` from h11) and its connection closed.
        progress_interval: Minimum seconds between two progress notifications of
            one request (extra ones are dropped; the final one is always sent).
        waiting_progress_interval: Seconds between the progress notifications sent
            while a tool waits on a person (a form, a URL step, sampling), to calls
            that carried a ``progressToken``; a host that restarts its request clock
            on progress then does not give up on the call. ``None``: never sent.
        stream_buffer_bytes: Bytes a byte-stream transport (stdio) holds in each
            direction: read-ahead waiting to be handled (reading pauses above
            it) and written messages the pipe has not taken yet (senders wait
            above it). WebSocket: output the socket has not taken yet (pongs,
            close frames and messages); above it senders wait and a server stops
            reading (a client fails the connection, 1008, when pongs it owes a
            server that does not read pass this much again). minimcp's HTTP
            server: response bytes ``send_now`` framed that the socket has not
            taken yet; beyond, the client is treated as gone (closed).
        initialize_timeout: Seconds a new client has to get going: a WebSocket
            connection, once upgraded, to send its first request (``initialize``,
            or any request of 2026-07-28; else it is closed with 1008), and an
            HTTP session to send anything after ``initialize`` (else it is
            ended). ``None``: no deadline.
        idle_timeout: Seconds a WebSocket connection may stay idle: nothing
            received from the client and no work pending on either side (no
            question waiting on a person, no handler running, no subscription,
            no URL step open); then it is closed with 1000. Checked at keepalive
            ticks, so it may take up to one ``ping_interval`` longer. ``None``: never.
        ping_interval: Seconds between keepalive pings on a WebSocket connection
            (both sides); ``None``: no pings.
        ping_timeout: Seconds the peer has to answer a keepalive ping (it is
            queued behind unsent output, so a peer that stops reading fails it
            too); then the connection is dropped (1011). ``None``: no deadline.
        notice_timeout: Seconds a ``notifications/cancelled`` the session sends on
            its own (a request of ours that timed out or was given up) may take to
            be handed to the transport; past it the notice is dropped (the peer's
            output is stuck). Generous on purpose: on a loaded machine one turn of
            the event loop can take seconds, and a dropped notice leaves the
            peer's work running. While the output is stuck, a requester that gave
            up (or whose request timed out) hears of it up to this much later.
        max_form_shapes: Shapes of raw form schemas (dicts a tool passes to
            ``ctx.elicit``) kept compiled, so that questions of one shape share one
            compiled form whatever their defaults (:mod:`minimcp.forms.cache`; one
            cache per process, bounded by the limits of the server whose tool
            asks). Beyond, the oldest shape is dropped; ``0`` compiles every question.
        stream_write_timeout: Seconds one write to an HTTP response stream (an
            SSE event of a request's stream, written by the task that sends it,
            usually the request's own handler) may wait for a client that does
            not read; then that client is treated as gone: the stream's events
            stay in its replay buffer for a resumption, and the handler goes on.
        max_http_inbox: Messages (POST bodies) one HTTP session holds for its
            handlers to read; beyond, a POST waits in line (keeping its
            connection): each message the session reads lets the first one in.
        max_pending_sign_ins: Page sign-ins begun and not yet finished that a
            :class:`minimcp.auth.signin.PageSignIn` remembers (their ``state``,
            PKCE verifier and nonce); beyond, the oldest is dropped (its callback
            is then refused as an unknown ``state``), and expired ones go first.
            A sealed sign-in (``PageSignIn(keys=...)``) is kept in no process.
        max_token_bytes: Characters of an access token that
            ``Authorization`` (on every request) and the verifiers
            (:mod:`minimcp.auth`) read; a longer one is refused unread
            (``too_large``), before any parsing or fetch.
        max_auth_keys: Keys kept from one issuer's key set (JWKS); keys beyond
            are ignored (a warning is logged), so a key set cannot grow the cache.
        auth_key_refetch_interval: Minimum seconds between two fetches of an
            issuer's keys. A token naming an unknown key (``kid``) makes one fetch
            (concurrent ones share it); another within this interval is refused
            (``unknown_key``, or ``unavailable`` while the issuer cannot be reached)
            without a fetch.
        auth_keys_max_age: Seconds an issuer's fetched keys are used before the
            next token makes them be fetched again (a key the issuer withdrew stops
            verifying). A failed fetch keeps the keys in use. ``None``: only an
            unknown ``kid`` fetches them again.
        auth_fetch_timeout: Seconds one request to an authorization server (its
            metadata, its keys, an introspection) may take in all; then the token
            is refused ``unavailable``.
        max_auth_response_bytes: Bytes of an authorization server's answer (its
            metadata, its key set, an introspection answer) read at most; a
            longer one is treated as a failed fetch.
        max_introspection_cache: Introspection outcomes a verifier remembers
            (keyed by a hash of the token, never the token); beyond, the least
            recently used is forgotten.
        introspection_cache_ttl: Seconds an introspection outcome is reused
            (never past the token's ``exp``); a token revoked meanwhile is still
            taken this long.
        max_verified_tokens: JWTs a :class:`minimcp.auth.jwt.JWTVerifier`
            remembers as verified (keyed by a hash of the token, never the token;
            kept until the token's ``exp``, its ``exp`` and ``nbf`` checked on every
            use, dropped when its key leaves the issuer's key set), so a token
            seen again is not parsed nor its signature checked again; beyond, the
            least recently used is forgotten. ``0``: every token verified each time.
    """

    max_message_bytes: int = 4 * 1024 * 1024
    max_pending_outbound: int = 200_000
    max_pending_total: int = 1_000_000
    max_inflight_inbound: int = 200_000
    request_timeout: float | None = 60.0
    elicitation_timeout: float | None = 300.0
    max_request_time: float = 3600.0
    max_used_states: int = 500_000
    shutdown_timeout: float = 2.0
    page_size: int = 100
    max_subscriptions: int = 10_000
    max_sessions_per_client: int | None = 2000
    max_parked_per_client: int = 1000
    http_header_timeout: float = 10.0
    max_http_connections: int = 10_000
    progress_interval: float = 0.05
    waiting_progress_interval: float | None = 15.0
    stream_buffer_bytes: int = 1024 * 1024
    initialize_timeout: float | None = 30.0
    idle_timeout: float | None = 1800.0
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0
    notice_timeout: float = 10.0
    max_form_shapes: int = 256
    max_http_head_bytes: int = 16 * 1024
    stream_write_timeout: float = 30.0
    max_http_inbox: int = 1024
    max_pending_sign_ins: int = 10_000
    max_token_bytes: int = 8192
    max_auth_keys: int = 100
    auth_key_refetch_interval: float = 30.0
    auth_keys_max_age: float | None = 3600.0
    auth_fetch_timeout: float = 10.0
    max_auth_response_bytes: int = 256 * 1024
    max_introspection_cache: int = 10_000
    introspection_cache_ttl: float = 60.0
    max_verified_tokens: int = 10_000

    def replace(self, **changes: object) -> Limits:
        """A copy with the given fields changed."""
        return msgspec.structs.replace(self, **changes)
