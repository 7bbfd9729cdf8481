"""The short stable digest of a JSON-like value that binds a question, or a call's arguments, to a sealed state.

It is written into what a 2026-07-28 server hands out (``requestState``, the questions of an
``input_required`` result), so the pure wire of the revision and the server's rounds take it from here.
"""

from __future__ import annotations

import binascii
import hashlib
from typing import Any

import msgspec

__all__ = ["digest"]

_sorted_encode = msgspec.json.Encoder(order="sorted").encode
_sha256 = hashlib.sha256
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def digest(value: Any) -> str:
    """A short stable digest of a JSON-like value (sorted keys, compact)."""
    # 12 bytes code to 16 base64 characters without padding, with no call of base64's own.
    return binascii.b2a_base64(_sha256(_sorted_encode(value)).digest()[:12], newline=False).translate(
        _TO_URLSAFE
    ).decode()
