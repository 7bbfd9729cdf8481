"""A session's counters: what it sent, received, dropped and refused (plain integer increments)."""

from __future__ import annotations

import dataclasses

__all__ = ["SessionStats"]


@dataclasses.dataclass(slots=True)
class SessionStats:
    """Counters of one session (cheap: plain integer increments)."""

    requests_sent: int = 0
    requests_received: int = 0
    notifications_received: int = 0
    responses_received: int = 0
    unknown_responses: int = 0
    timeouts: int = 0
    cancelled_by_us: int = 0
    cancelled_by_peer: int = 0
    invalid_messages: int = 0
    rejected_busy: int = 0
