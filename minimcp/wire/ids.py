"""The wire's opaque names: how long a call's id is, and the digest that binds a value to a sealed state.

Both are written into what a 2026-07-28 server hands out (call ids, ``requestState``), so the server's
context, its runs and the pure wire of the revision take them from here.
"""

from __future__ import annotations

import binascii
import hashlib
from typing import Any

import msgspec

__all__ = ["CALL_ID_BYTES", "digest"]

#: Random bytes in a call's id (96 bits).
CALL_ID_BYTES = 12

_sorted_encode = msgspec.json.Encoder(order="sorted").encode
_sha256 = hashlib.sha256
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def digest(value: Any) -> str:
    """A short stable digest of a JSON-like value (sorted keys, compact)."""
    # 12 bytes code to 16 base64 characters without padding, with no call of base64's own.
    return binascii.b2a_base64(_sha256(_sorted_encode(value)).digest()[:12], newline=False).translate(
        _TO_URLSAFE
    ).decode()
