"""Unguessable names for 2026-07-28 runs (handles, call ids), drawn from the system's randomness in batches.

A run takes each name with one ``NAMES.pop()`` (atomic: two threads never get the same one),
and calls :func:`more_names` when the batch is used up: one read of the system's randomness
and one base64 coding per :data:`NAMES_PER_DRAW` names, not per run.
"""

from __future__ import annotations

import binascii
import os

from minimcp.wire.jsonrpc import CALL_ID_BYTES

__all__ = ["NAMES", "NAMES_PER_DRAW", "more_names"]

#: Names drawn and not yet taken: CALL_ID_BYTES random bytes each, base64url, unpadded.
NAMES: list[str] = []
#: How many names one read of the system's randomness draws (what secrets.token_bytes reads).
NAMES_PER_DRAW = 64

_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
assert CALL_ID_BYTES % 3 == 0, "the names split the base64 text where their bytes split"
_CHARS = CALL_ID_BYTES * 4 // 3
#: Where each name of a draw's text sits.
_SLICES = [slice(i, i + _CHARS) for i in range(0, _CHARS * NAMES_PER_DRAW, _CHARS)]


def more_names() -> str:
    """Draw a batch of names into :data:`NAMES`; one of them."""
    text = binascii.b2a_base64(os.urandom(CALL_ID_BYTES * NAMES_PER_DRAW), newline=False).translate(_TO_URLSAFE)
    NAMES.extend(map(text.decode().__getitem__, _SLICES))  # (cut in C: no bytecode per name)
    return NAMES.pop()


if hasattr(os, "register_at_fork"):  # a forked worker draws its own names, never its parent's
    os.register_at_fork(after_in_child=NAMES.clear)
