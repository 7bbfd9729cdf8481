"""What a WebSocket server's liveness watchdog reads from the session on its connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minimcp.transports._ports import Connection

__all__ = ["SessionActivity", "is_utf8"]


class SessionActivity:
    """Filled in by ``Server.serve`` (it is passed as that call's ``task_status``); read at watchdog ticks only.

    Nothing here runs per message: the counters read are the session's own.
    """

    __slots__ = ("conn",)

    def __init__(self) -> None:
        self.conn: Connection | None = None

    def started(self, value: Connection | None = None) -> None:  # anyio TaskStatus
        self.conn = value

    def has_requested(self) -> bool:
        """Whether the client has sent a request yet (``initialize``, or any request of 2026-07-28)."""
        return self.conn is not None and self.conn.session.stats.requests_received > 0

    def activity(self) -> tuple[int, bool]:
        """Messages received so far, and whether work is pending on either side.

        Pending work: a request we sent awaits its answer (a question to a person),
        a handler runs, the client holds a subscription, or a URL step is open.
        """
        conn = self.conn
        if conn is None:
            return 0, False
        session = conn.session
        stats = session.stats
        received = (
            stats.requests_received + stats.notifications_received + stats.responses_received + stats.invalid_messages
        )
        busy = bool(session.pending_count or session.inflight_count or conn.url_elicitations or conn.subscriptions)
        return received, busy


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (RFC 6455 requires it of text messages)."""
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
