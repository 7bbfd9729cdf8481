"""Protocol revisions and the per-revision rules, and which era a request belongs to.

This is the only module that compares revision strings. Everything else asks a
named question (``supports(version, Feature.ELICITATION_URL)``) so that adding a
revision means editing one table, not hunting for ``if version >= ...``.

Which era a request belongs to (:func:`has_envelope`: whether its params carry the
2026-07-28 ``_meta`` protocol version) is asked of every request by a connection of
either era, so it lives here rather than with the rest of the 2026-07-28 wire
(:mod:`minimcp.wire.envelope`): a handshake-era server never loads that.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import msgspec

__all__ = [
    "LATEST",
    "LATEST_MODERN",
    "MARKER",
    "META_VERSION",
    "MODERN",
    "SUPPORTED",
    "Era",
    "Feature",
    "era_of",
    "has_envelope",
    "is_modern",
    "is_supported",
    "negotiate",
    "supports",
]

#: Handshake-era revisions this implementation speaks, oldest first.
SUPPORTED: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: The revision offered by our client and answered by our server when the peer's is unknown.
LATEST: str = SUPPORTED[-1]
#: Revisions without a handshake: every request carries its version and capabilities in
#: ``_meta``, and questions to the person travel as ``input_required`` results (multi
#: round-trip requests) instead of nested server-to-client requests.
MODERN: tuple[str, ...] = ("2026-07-28",)
LATEST_MODERN: str = MODERN[-1]


class Era(enum.StrEnum):
    """The two ways a connection speaks MCP; a connection keeps the one it began with.

    The values are the strings the era had before it was an enum, so ``era == "modern"``
    still holds for ``Era.MODERN``.
    """

    #: The revisions in :data:`SUPPORTED`: ``initialize`` first, then nested server-to-client
    #: requests (``elicitation/create``, ...) while a call runs.
    LEGACY = "legacy"
    #: The revisions in :data:`MODERN`: no handshake, the version and capabilities in each
    #: request's ``_meta``, questions as ``input_required`` results (multi round-trip requests).
    MODERN = "modern"


def era_of(version: str) -> Era:
    """The era of revision ``version``.

    Raises:
        ValueError: ``version`` is not a revision this implementation speaks.
    """
    if version in MODERN:
        return Era.MODERN
    if version in SUPPORTED:
        return Era.LEGACY
    raise ValueError(f"unknown protocol revision {version!r}")


class Feature(enum.StrEnum):
    """Behaviour that depends on the negotiated revision."""

    #: Incoming JSON-RPC batch arrays must be accepted (2025-03-26 only).
    BATCHES = "batches"
    #: Form-mode ``elicitation/create`` exists (the client capability ``elicitation``).
    ELICITATION = "elicitation"
    #: Elicitation ``mode`` field, URL mode, ``-32042`` and ``elicitation/complete``.
    ELICITATION_URL = "elicitation_url"
    #: ``default`` on string / number / enum form fields (SEP-1034), not only booleans.
    ELICITATION_DEFAULTS = "elicitation_defaults"
    #: Titled single select (``oneOf``) and multi-select arrays (SEP-1330).
    ELICITATION_ENUMS = "elicitation_enums"
    #: An error response may omit ``id`` when it could not be read.
    ERROR_WITHOUT_ID = "error_without_id"
    #: Streamable HTTP SSE priming event (an ``id`` with empty data) and ``retry`` (SEP-1699).
    SSE_PRIMING = "sse_priming"


# Revision each feature first appeared in (and, for batches, the last one that had it).
_SINCE: dict[Feature, str] = {
    Feature.ELICITATION: "2025-06-18",
    Feature.ELICITATION_URL: "2025-11-25",
    Feature.ELICITATION_DEFAULTS: "2025-11-25",
    Feature.ELICITATION_ENUMS: "2025-11-25",
    Feature.ERROR_WITHOUT_ID: "2025-11-25",
    Feature.SSE_PRIMING: "2025-11-25",
}
_ONLY: dict[Feature, frozenset[str]] = {
    Feature.BATCHES: frozenset({"2025-03-26"}),
}


def is_supported(version: str) -> bool:
    """Whether ``version`` is a handshake-era revision this implementation speaks."""
    return version in SUPPORTED


def is_modern(version: str) -> bool:
    """Whether ``version`` is a modern (no handshake, multi round-trip) revision we speak."""
    return version in MODERN


def negotiate(requested: str) -> str:
    """The revision a server answers to a client that asked for ``requested``.

    The spec: echo the client's revision when we support it, otherwise answer
    another one we support (our latest).
    """
    return requested if requested in SUPPORTED else LATEST


def supports(version: str, feature: Feature) -> bool:
    """Whether ``feature`` exists on the negotiated ``version``.

    Revision strings are ISO dates, so ordering them as strings is ordering
    them in time; this is the one place where that is done. The answers for
    the revisions we speak are worked out once (this runs on every message).
    """
    known = _FEATURES.get(version)
    if known is not None:
        return feature in known
    return _supports(version, feature)


def _supports(version: str, feature: Feature) -> bool:
    only = _ONLY.get(feature)
    if only is not None:
        return version in only
    return version >= _SINCE[feature]


_FEATURES: dict[str, frozenset[Feature]] = {
    v: frozenset(f for f in Feature if _supports(v, f)) for v in (*SUPPORTED, *MODERN)
}


# --- which era a request belongs to (the 2026-07-28 envelope's version key) ---------------------------

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
