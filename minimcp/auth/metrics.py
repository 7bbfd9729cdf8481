"""Refusal counters of a protected resource: tokens refused by reason, and requests refused for scopes (403)."""

from __future__ import annotations

__all__ = ["QUERY_TOKEN", "RefusalMetrics"]

#: Why a request was refused that no verifier decided: a token in the query string (RFC 6750 §2.3 is not offered).
QUERY_TOKEN = "query_token"


class RefusalMetrics:
    """What the transports that check bearer tokens count (a few integer increments per refusal, nothing per
    accepted request). One per :class:`~minimcp.auth.config.Authorization` (its ``metrics``), so an HTTP app
    and a WebSocket server given the same object count together. Read :attr:`refused` (reason -> count)
    and :attr:`insufficient_scope`, or serve :meth:`prometheus_text` beside the server's metrics (the HTTP
    app's ``metrics_path`` page does)."""

    __slots__ = ("insufficient_scope", "refused")

    def __init__(self) -> None:
        #: Requests refused for their token, by :data:`~minimcp.auth.principal.Refusal` (plus ``"query_token"``).
        self.refused: dict[str, int] = {}
        #: Requests refused for lack of a scope: HTTP ``403 insufficient_scope`` (both eras), a WebSocket upgrade
        #: without the required scopes (``403``), a WebSocket request answered ``-32004``.
        self.insufficient_scope = 0

    def count(self, reason: str) -> None:
        """One more request refused for ``reason``."""
        self.refused[reason] = self.refused.get(reason, 0) + 1

    def prometheus_text(self) -> str:
        """The counters in the Prometheus text exposition format."""
        out = [
            "# HELP minimcp_auth_refused_total Requests refused for their bearer token, by reason.",
            "# TYPE minimcp_auth_refused_total counter",
        ]
        out.extend(f'minimcp_auth_refused_total{{reason="{reason}"}} {n}' for reason, n in sorted(self.refused.items()))
        out.append("# HELP minimcp_auth_insufficient_scope_total Requests refused (403) for lack of a scope.")
        out.append("# TYPE minimcp_auth_insufficient_scope_total counter")
        out.append(f"minimcp_auth_insufficient_scope_total {self.insufficient_scope}")
        return "\n".join(out) + "\n"
