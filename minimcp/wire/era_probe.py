"""Which era a request belongs to: whether its params carry the 2026-07-28 ``_meta`` protocol version.

The one check every request of a connection that has not (or has) locked the
handshake era needs, kept apart from the rest of the 2026-07-28 wire
(:mod:`minimcp.wire.mrtr`, which re-exports it) so that a handshake-era server never
loads that: a byte scan first, then a decode of ``_meta`` alone.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["MARKER", "META_VERSION", "has_envelope"]

#: The ``_meta`` key naming a 2026-07-28 request's protocol version.
META_VERSION = "io.modelcontextprotocol/protocolVersion"

#: The byte pattern of :data:`META_VERSION`: a params buffer without it has no envelope. A caller on a
#: hot path runs ``MARKER.search`` itself (a C call) and :func:`has_envelope` only on a hit.
MARKER = re.compile(re.escape(META_VERSION.encode()))


class _MetaOnly(msgspec.Struct):
    meta: Any = msgspec.field(default=None, name="_meta")


def has_envelope(params: msgspec.Raw) -> bool:
    """Whether a request's params carry the modern ``_meta`` version key (cheap pre-check first)."""
    if not params or MARKER.search(params) is None:  # scans the buffer without copying it
        return False
    try:
        meta = msgspec.json.decode(params, type=_MetaOnly).meta
    except msgspec.DecodeError:
        return False
    return isinstance(meta, dict) and META_VERSION in meta
