"""Revision 2026-07-28: a ``tools/call`` message decoded once by the read loop, its params typed, and taken over.

The read loop (``Session.take_call``, set on a connection locked to 2026-07-28) hands each
message naming ``"tools/call"`` to :func:`take_call` before decoding it the usual way. The
message is decoded in one pass, envelope and typed params (:class:`~minimcp.rounds._CallToolParams`)
together, where the usual way decodes the envelope, skipping the params, and then the params again.
A request taken (:func:`minimcp.rounds.take_params`) is then in flight as one the session's
:meth:`~minimcp.session.Session._start_handler` took over. Anything else -- not a valid
request, an id in use, no free in-flight slot, a request ``take_params`` refuses -- is left
(False): the read loop decodes the bytes again the usual way (the raw params), which answers it
as ever. Nothing is changed before everything is checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from minimcp.rounds import _CallToolParams, take_params

if TYPE_CHECKING:
    from minimcp.connection import ServerConnection

__all__ = ["take_call"]


class _CallMessage(msgspec.Struct, gc=False):
    """A request's envelope (as :func:`minimcp.jsonrpc.decode` reads it) with ``tools/call`` params."""

    jsonrpc: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: _CallToolParams | None = None


_decode = msgspec.json.Decoder(_CallMessage).decode
_MARK = b'"tools/call"'


def take_call(conn: ServerConnection, data: bytes) -> bool:
    """Whether the message ``data`` was a 2026-07-28 ``tools/call`` request the read loop took over."""
    if _MARK not in data:
        return False
    try:
        message = _decode(data)
    except Exception:  # (msgspec's errors, a RecursionError: told by the usual way)
        return False
    id_, params = message.id, message.params
    if (
        params is None or message.method != "tools/call" or message.jsonrpc != "2.0"
        or (type(id_) is not int and type(id_) is not str)  # (as jsonrpc.decode: exact types)
    ):
        return False
    session = conn.session
    if not session.may_adopt(id_):  # (the checks of Session._start_handler, in its order)
        return False
    if not take_params(conn, id_, params):
        return False
    session.stats.requests_received += 1
    return True
