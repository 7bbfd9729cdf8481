"""The HTTP app's bearer-token gate: metadata routes, 401/400/503 refusals, the 403 step-up, refusal counters.

Loaded only by an app given ``auth=`` (a :class:`~minimcp.auth.config.Authorization`): an app without it
never imports this module nor :mod:`minimcp.auth`. Tokens are read from the ``Authorization`` header only,
never logged, never echoed: a refusal names the reason (``error_description``), not the token.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Collection, Mapping

from minimcp.auth.config import Authorization
from minimcp.auth.metrics import QUERY_TOKEN, RefusalMetrics
from minimcp.auth.principal import Principal, TokenRefused
from minimcp.auth.resource import challenge, invalid_request, metadata, metadata_paths
from minimcp.transports.http._asgi import Scope, Send, respond, respond_error
from minimcp.transports.http._wire import JSON
from minimcp.wire import errors
from minimcp.wire.jsonrpc import RequestId

__all__ = ["Gate"]

logger = logging.getLogger("minimcp.http")

_UNAVAILABLE = "the authorization server could not be reached to check the token; try again later"
_QUERY = (
    "send the access token in the Authorization header (Bearer), never in the URL: "
    "a token in a query string is refused unread"
)
#: What a client may cache of the metadata (it changes only with the server's configuration).
_METADATA_HEADERS = ((b"cache-control", b"max-age=3600"),)


def _has_query_token(query: bytes) -> bool:
    """Whether a query string carries an ``access_token`` parameter (RFC 6750 §2.3), however encoded."""
    if b"access_token" not in query and b"%" not in query:
        return False
    pairs = urllib.parse.parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    return any(name == "access_token" for name, _ in pairs)


class Gate:
    """What the HTTP app checks of every request to its MCP endpoint, and what it answers when it refuses.

    Args:
        auth: The authorization (verifier, resource, authorization servers, scopes).
    """

    __slots__ = ("_document", "auth", "metrics", "paths")

    def __init__(self, auth: Authorization) -> None:
        self.auth = auth
        #: Refusals counted by reason, and the 403s: the authorization's own (a WebSocket server given the same
        #: object counts on it too).
        self.metrics: RefusalMetrics = auth.metrics
        #: The paths the protected resource metadata is served at.
        self.paths = frozenset(metadata_paths(auth))
        self._document = metadata(auth)

    async def serve_metadata(self, method: str, send: Send) -> None:
        """Answer a request to one of :attr:`paths` (RFC 9728 §3: ``GET``, JSON, no token needed)."""
        if method != "GET":
            message = "the protected resource metadata answers GET only"
            await respond_error(send, 405, message, headers=[(b"allow", b"GET")])
            return
        await respond(send, 200, self._document, content_type=JSON, headers=_METADATA_HEADERS)

    async def admit(self, headers: Mapping[str, str], scope: Scope, send: Send) -> Principal | None:
        """The principal of a request to the MCP endpoint; ``None`` after answering it with a refusal.

        ``400 invalid_request`` for a token in the query string (RFC 6750 §3.1: an unsupported way of sending
        one; it is not read, so a leaked token is never accepted from a URL), ``401`` for a missing or refused
        token (with the challenge), ``503`` when the authorization server could not be asked (never an
        acceptance), ``403 insufficient_scope`` when the token lacks the server's ``required_scopes``.
        """
        auth = self.auth
        version = headers.get("mcp-protocol-version")
        if _has_query_token(scope.get("query_string", b"")):
            self.metrics.count(QUERY_TOKEN)
            header = invalid_request(auth, _QUERY)
            await respond_error(send, 400, _QUERY, version=version, headers=[(b"www-authenticate", header.encode())])
            return None
        try:
            principal = await auth.authenticate(headers.get("authorization"))
        except TokenRefused as refused:
            self.metrics.count(refused.reason)
            if refused.reason == "unavailable":
                logger.warning("could not check a bearer token: %s", refused.description)
                await respond_error(send, 503, _UNAVAILABLE, code=errors.SERVER_BUSY, version=version)
                return None
            logger.debug("refused a bearer token: %s (%s)", refused.reason, refused.description)
            header = challenge(auth, refused)
            await respond_error(
                send, 401, refused.description, version=version, headers=[(b"www-authenticate", header.encode())]
            )
            return None
        required = auth.required_scopes
        if required and not required <= principal.scopes:
            await self.refuse_scopes(send, required, None, version)
            return None
        return principal

    def lacks(self, principal: Principal, needed: frozenset[str]) -> frozenset[str] | None:
        """Every scope an operation needing ``needed`` (beyond the server's required ones) asks for, when
        ``principal`` lacks one of them; ``None`` when it may go ahead."""
        if needed <= principal.scopes:
            return None
        return needed | self.auth.required_scopes

    async def refuse_scopes(
        self, send: Send, scopes: Collection[str], id: RequestId | None, version: str | None
    ) -> None:
        """``403`` with ``error="insufficient_scope"`` naming ``scopes`` (all the operation needs, in one
        challenge: the client asks for them together; SEP-2350)."""
        self.metrics.insufficient_scope += 1
        header = challenge(self.auth, scopes=scopes)
        message = f"insufficient scope: this operation needs {' '.join(sorted(scopes))}"
        challenged = [(b"www-authenticate", header.encode())]
        await respond_error(send, 403, message, id=id, version=version, headers=challenged)
