"""Shared by several test files: what tests/server/mrtr/test_state_v2.py sets up and others reuse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _flip(text: str, index: int) -> str:
    return text[:index] + ("A" if text[index] != "A" else "B") + text[index + 1:]


def _field(token: str, n: int, change: Any) -> str:
    parts = token.split(".")
    parts[n] = change(parts[n])
    return ".".join(parts)


TAMPERED: dict[str, Callable[[str], str]] = {
    "version": lambda t: "v3" + t[2:],
    "version-v1": lambda t: "v1" + t[2:],
    "handle": lambda t: _field(t, 1, lambda s: _flip(s, 0)),
    "handle-emptied": lambda t: _field(t, 1, lambda s: ""),
    "arguments-digest": lambda t: _field(t, 2, lambda s: _flip(s, 3)),
    "expiry": lambda t: _field(t, 3, lambda s: str(int(s) + 60_000)),
    "body-char": lambda t: _field(t, 4, lambda s: _flip(s, 10)),
    "body-last-bits": lambda t: _field(t, 4, lambda s: s[:-1] + _same_bytes_other_text(s[-1], len(s))),
    "mac-char": lambda t: _field(t, 5, lambda s: _flip(s, 5)),
    "mac-truncated": lambda t: t[:-1],
    "suffix": lambda t: t + "x",
    "suffix-dot": lambda t: t + ".x",
    "suffix-block": lambda t: t + "AAAA",
    "suffix-padding": lambda t: t + "=",
    "field-dropped": lambda t: _field(t, 2, lambda s: "") .replace("..", ".", 1),
    "dot-added": lambda t: _field(t, 4, lambda s: s[:8] + "." + s[8:]),
    "non-ascii": lambda t: t[:-1] + "\u00e9",
    "empty": lambda t: "",
    "only-version": lambda t: "v2.",
}


def _same_bytes_other_text(last: str, length: int) -> str:
    """Another end of a base64url text of ``length`` characters that decodes to the same bytes: its last
    character with a bit past the data set where it has such bits, else padding after it (a non-canonical echo)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    if length % 4 in (2, 3):
        return alphabet[alphabet.index(last) ^ 1]
    return last + "=="

