"""A request with the principal its bearer token named: how a transport without sessions hands the person on."""

from __future__ import annotations

from minimcp.auth.principal import Principal
from minimcp.wire.jsonrpc import Request

__all__ = ["AuthenticatedRequest"]


class AuthenticatedRequest(Request, frozen=True, gc=False, kw_only=True):
    """A :class:`~minimcp.wire.jsonrpc.Request` and who sent it (revision 2026-07-28 over HTTP).

    Revision 2026-07-28 has no sessions: one connection serves every request of a worker, so the
    person cannot live on the connection (``ServerConnection.principal``, the handshake era's). The
    stateless HTTP leg hands such a request to the server instead of a plain one; the server reads
    :attr:`principal` where it reads the request (``ctx.auth``, the binding of its ``requestState``,
    the lists it may see). Without authorization the leg hands plain requests: nothing of this runs.
    """

    #: Whom the request's bearer token names (verified, its audience checked).
    principal: Principal
