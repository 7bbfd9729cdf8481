"""Errors: JSON-RPC error codes and the exceptions minimcp raises.

Every exception that corresponds to a wire error carries its ``code``; only
:class:`McpError` (and subclasses) is ever turned into a JSON-RPC error
response, and only with its own message -- internal exception text never goes
on the wire.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CONNECTION_CLOSED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "SERVER_BUSY",
    "URL_ELICITATION_REQUIRED",
    "ConnectionClosed",
    "McpError",
    "RequestCancelled",
    "RequestTimeout",
    "TooManyPending",
    "UnsupportedVersion",
]

# JSON-RPC 2.0 reserved codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP 2025-11-25.
URL_ELICITATION_REQUIRED = -32042
# Implementation-defined (-32000..-32099), the values other SDKs use where they exist.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
SERVER_BUSY = -32003


class McpError(Exception):
    """A JSON-RPC error: received from the peer, or to be sent to it.

    Raise it from a request handler to answer with exactly this error.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class ConnectionClosed(McpError):
    """The connection ended while a request was pending (or before it was sent)."""

    def __init__(self, message: str = "connection closed") -> None:
        super().__init__(CONNECTION_CLOSED, message)


class RequestTimeout(McpError):
    """No response arrived within the request's timeout.

    The peer has been sent ``notifications/cancelled`` for the request.
    """

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(REQUEST_TIMEOUT, f"{method} timed out after {timeout:g} s")
        self.method = method
        self.timeout = timeout


class RequestCancelled(McpError):
    """A pending request was cancelled locally (the peer was told)."""

    def __init__(self, method: str) -> None:
        super().__init__(REQUEST_TIMEOUT, f"{method} was cancelled")
        self.method = method


class TooManyPending(McpError):
    """The per-session bound on pending outbound requests was reached."""

    def __init__(self, limit: int) -> None:
        super().__init__(SERVER_BUSY, f"too many pending requests (limit {limit})")
        self.limit = limit


class UnsupportedVersion(McpError):
    """The peer chose a protocol revision this implementation does not speak."""

    def __init__(self, version: str, supported: tuple[str, ...]) -> None:
        super().__init__(
            INVALID_REQUEST,
            f"server chose protocol version {version!r}; supported: {', '.join(supported)}",
            {"supported": list(supported), "requested": version},
        )
        self.version = version
