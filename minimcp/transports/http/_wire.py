"""Small facts about messages and headers that the app and the client of Streamable HTTP both read."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from minimcp.wire.jsonrpc import RequestId

__all__ = ["JSON", "SSE", "initialize_version", "is_response", "is_uint", "media_type", "same_id"]

JSON = "application/json"
SSE = "text/event-stream"

#: ``int()`` of more digits than this could reach Python's digit limit (4,300) and raise.
_MAX_UINT_DIGITS = 18


class _Kind(msgspec.Struct):
    method: Any = msgspec.UNSET


class _InitializeVersion(msgspec.Struct, rename="camel"):
    protocol_version: Any = None


_kind_decoder = msgspec.json.Decoder(_Kind)


def is_response(message: bytes) -> bool:
    """Whether an encoded message is a response (it has no ``method``)."""
    try:
        return _kind_decoder.decode(message).method is msgspec.UNSET
    except msgspec.DecodeError:  # pragma: no cover - the session only sends what it encoded
        return False


def is_uint(text: str) -> bool:
    """At most 18 ASCII digits (``str.isdigit`` also accepts ``"²"``, which ``int`` rejects)."""
    return len(text) <= _MAX_UINT_DIGITS and text.isascii() and text.isdigit()


def same_id(a: RequestId | None, b: RequestId | None) -> bool:
    """Equal request ids of the same type (``1`` and ``"1"`` are different requests)."""
    return a == b and type(a) is type(b)


def initialize_version(params: msgspec.Raw) -> str | None:
    """The ``protocolVersion`` of initialize params or of an initialize result, if it is a string."""
    try:
        value = msgspec.json.decode(params or b"{}", type=_InitializeVersion).protocol_version
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


@functools.lru_cache(maxsize=256)  # the same few Content-Type values come again and again
def media_type(content_type: str) -> str:
    """The media type of a ``Content-Type`` value, lower case, without parameters."""
    return content_type.split(";", 1)[0].strip().lower()
