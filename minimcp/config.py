"""Limits and defaults, in one place.

Every buffer, queue and table in minimcp has a bound, and every bound is a
field here. A :class:`Limits` is immutable; make a changed copy with
:meth:`Limits.replace`.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Limits"]


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    """Bounds and default timeouts of a session.

    Attributes:
        max_message_bytes: Largest accepted message (a stdio line, an HTTP body,
            a WebSocket frame). Larger ones get a JSON-RPC error and are dropped
            without being buffered whole.
        max_pending_outbound: Requests we sent and still await, per session
            (``tools/call`` on a client; ``elicitation/create`` and friends on a
            server). One more raises :class:`~minimcp.errors.TooManyPending`.
        max_pending_total: Pending outbound requests across all sessions of one
            server. One more raises :class:`~minimcp.errors.TooManyPending`.
        max_inflight_inbound: Requests from the peer being handled at once, per
            session. One more is answered at once with a ``-32003`` error.
        request_timeout: Default seconds to wait for a response to a request we
            sent; ``None`` waits forever (not recommended).
        elicitation_timeout: Default seconds a question to a person may wait.
        max_request_time: Hard cap, in seconds, on how long a request may wait
            while its clock is paused for a person answering a question.
        shutdown_timeout: Seconds the stdio client waits for a server to exit at
            each step of close stdin -> terminate -> kill.
        page_size: Items per page of ``tools/list`` and the other list methods.
        max_subscriptions: Resource subscriptions per session.
        progress_interval: Minimum seconds between two progress notifications of
            one request (extra ones are dropped; the final one is always sent).
        stream_buffer_bytes: Bytes a byte-stream transport (stdio) holds in each
            direction: read-ahead waiting to be handled (reading pauses above
            it) and written messages the pipe has not taken yet (senders wait
            above it).
        notice_timeout: Seconds a ``notifications/cancelled`` the session sends on
            its own (a request of ours that timed out or was given up) may take to
            be handed to the transport; past it the notice is dropped (the peer's
            output is stuck). Generous on purpose: on a loaded machine one turn of
            the event loop can take seconds, and a dropped notice leaves the
            peer's work running. While the output is stuck, a requester that gave
            up (or whose request timed out) hears of it up to this much later.
    """

    max_message_bytes: int = 4 * 1024 * 1024
    max_pending_outbound: int = 200_000
    max_pending_total: int = 1_000_000
    max_inflight_inbound: int = 200_000
    request_timeout: float | None = 60.0
    elicitation_timeout: float | None = 300.0
    max_request_time: float = 3600.0
    shutdown_timeout: float = 2.0
    page_size: int = 100
    max_subscriptions: int = 10_000
    progress_interval: float = 0.05
    stream_buffer_bytes: int = 1024 * 1024
    notice_timeout: float = 10.0

    def replace(self, **changes: object) -> Limits:
        """A copy with the given fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
