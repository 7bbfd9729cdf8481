"""Errors: JSON-RPC error codes and the one tree of exceptions minimcp raises.

Every exception class of minimcp derives from :class:`MinimcpError`, so
``except MinimcpError`` catches anything the library raises on purpose. Below
the root the tree splits in two. :class:`McpError` and its subclasses carry a
JSON-RPC ``code``: an error the peer answered with, one a handler raises to
answer with, or the end of a request reported in that same shape (closed
connection, timeout, too many pending). Everything else is local: a problem
found in this process (malformed bytes, a bad form type, a URL we must not
send, a sealed state that does not verify, ...); where one leads to a reply,
the code that catches it builds that reply.
Classes that were ``ValueError`` or ``TypeError`` still are, so existing
``except`` clauses keep working. The tree (module in brackets)::

    MinimcpError
    +-- McpError                          carries code, message, data
    |   +-- ConnectionClosed              -32000: the connection ended first
    |   +-- RequestTimeout                -32001: no answer in time (the peer was told)
    |   +-- TooManyPending                -32003: the bound on pending requests
    |   +-- UnsupportedVersion            -32600: the peer chose a revision we do not speak
    |   +-- QuestionFailed                [wire.elicitation] the client answered a question with an error
    |   +-- UrlElicitationRequired        [wire.elicitation] -32042: URL steps must be completed first
    +-- local errors                      not McpError: found and handled in this process
        +-- InvalidMessage                [wire.jsonrpc] bytes that are not one JSON-RPC message (code to answer with)
        +-- MessageTooLarge               [core.transport] a message over the size limit, dropped
        +-- WebSocketHandshakeError       [transports.websocket] the upgrade was refused
        +-- TableFull                     [transports._client_bounds] no room for a new session
        |   +-- NoSlot                    [transports._ws_slots] no WebSocket slot for a new connection
        +-- TokenRefused                  [auth.principal] a bearer token not accepted (401/503), with its reason
        +-- FetchFailed                   [auth.fetch] an authorization server's metadata, keys or answer not fetched
        +-- SignInRefused                 [auth.signin] a page sign-in that did not prove who the person is
        +-- AuthorizationFailed           [auth.oauth_client] the client could not get a token for the server
        +-- WrongPerson                   [server.url_steps] also PermissionError: a URL step made for someone else
        +-- ElicitationUnsupported        [wire.elicitation] the client cannot be asked this way
        +-- FormDefinitionError           [wire.errors] also TypeError: a form type the schema cannot express
        |   +-- SensitiveFieldError       [wire.errors] a field that looks like a secret (URL mode only)
        +-- FormValidationError           [wire.errors] also ValueError: an answer that does not fit the form
        +-- InvalidElicitationUrl         [wire.urls] also ValueError: a URL a server must not send
        +-- ToolError                     [server.tools] ends a tool call with an error result
        +-- InvalidState                  [server.mrtr.state] a requestState that cannot be trusted
        +-- StateTooLarge                 [server.mrtr.state] also ValueError: a requestState over its size bound
        +-- StoreUnavailable              [server.mrtr.used_states] the store of used states cannot answer
        +-- CliError                      [cli.args] a problem the command line reports in one line
        +-- AnswerError                   [cli.questions] also ValueError: a typed answer that does not fit

Only :class:`McpError` (and subclasses) is ever turned into a JSON-RPC error
response, and only with its own message -- internal exception text never goes
on the wire.
"""

from __future__ import annotations

__all__ = [
    "CONNECTION_CLOSED",
    "INSUFFICIENT_SCOPE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "SERVER_BUSY",
    "URL_ELICITATION_REQUIRED",
    "ConnectionClosed",
    "FormDefinitionError",
    "FormValidationError",
    "McpError",
    "MinimcpError",
    "RequestTimeout",
    "SensitiveFieldError",
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
INSUFFICIENT_SCOPE = -32004
"""A request needs scopes the bearer token of its connection lacks (WebSocket with authorization on).

No MCP revision names a JSON-RPC code for it (over HTTP it is ``403`` with ``error="insufficient_scope"``,
and WebSocket is in no released spec), so it is implementation-defined: outside the range 2026-07-28
reserves for MCP (-32020..-32099), beside our others. Not :data:`SERVER_BUSY` (-32003): that one says
"try again later", and retrying with the same token can never succeed; the client must get a token with
the scopes named in the error's ``data`` (``requiredScopes``, ``wwwAuthenticate``) and reconnect.
"""
# A resource that does not exist (MCP 2025-11-25 names -32002; from 2026-07-28 on it is -32602).
RESOURCE_NOT_FOUND = -32002


class MinimcpError(Exception):
    """The root of every exception minimcp raises (the tree is in this module's docstring)."""


class McpError(MinimcpError):
    """A JSON-RPC error: received from the peer, or to be sent to it.

    Raise it from a request handler to answer with exactly this error.
    """

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: The error's ``data`` member: what the peer sent (JSON), or what a handler
        #: raised with (anything msgspec encodes); ``None`` when absent.
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


# The form errors live here, not beside the form compiler, so code that catches them
# (a tool call's outcome, a question's answer) does not load the forms machinery.
class FormDefinitionError(MinimcpError, TypeError):
    """The form type or schema cannot be expressed in the restricted elicitation schema.

    Attributes:
        field: The offending field's name, or ``None`` when the problem concerns the whole form.
    """

    def __init__(self, field: str | None, message: str) -> None:
        """Record ``field``; ``message`` is the full, human-readable explanation."""
        super().__init__(message)
        self.field = field


class SensitiveFieldError(FormDefinitionError):
    """A form field looks like a secret; secrets must go through URL mode (``ctx.elicit_url``)."""


class FormValidationError(MinimcpError, ValueError):
    """An elicitation answer breaks the form schema.

    Attributes:
        field: The offending field's name, or ``None`` when the problem concerns the whole answer.
        constraint: The broken rule: ``type``, ``required``, ``minLength``, ``maxLength``, ``format``,
            ``minimum``, ``maximum``, ``enum``, ``minItems``, ``maxItems``, ``uniqueItems`` or ``construct``
            (the form type's own constructor refused the value).
    """

    def __init__(self, field: str | None, constraint: str, message: str) -> None:
        """Record ``field`` and ``constraint``; ``message`` is the full explanation."""
        super().__init__(message)
        self.field = field
        self.constraint = constraint
