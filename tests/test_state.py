"""minimcp.server.mrtr.state: sealing and opening requestState tokens (the key parsing is in test_state_keys.py)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from minimcp.server.mrtr.state import InvalidState, StateSealer, StateTooLarge
from minimcp.wire.digest import digest
from minimcp.wire.errors import MinimcpError

KEY = b"k" * 32
OTHER = b"o" * 32
BINDING = {"m": "tools/call", "t": "book", "a": digest({"date": "2025-12-24"})}


def sealed(sealer: StateSealer, now: float = 1000.0, ttl: float = 60.0, **extra: Any) -> str:
    return sealer.seal({**BINDING, "answers": {"q1": "yes"}, **extra}, now=now, ttl=ttl)


def reason(sealer: StateSealer, token: str, *, now: float = 1000.0, binding: dict[str, Any] = BINDING) -> str:
    with pytest.raises(InvalidState) as info:
        sealer.open(token, now=now, binding=binding)
    return info.value.reason


def test_a_sealed_state_opens_with_its_payload() -> None:
    sealer = StateSealer(KEY, version="v1")  # (v2: tests/test_state_v2.py)
    token = sealed(sealer)
    assert token.startswith("v1.") and token.count(".") == 2
    payload = sealer.open(token, now=1030.0, binding=BINDING)
    assert payload["answers"] == {"q1": "yes"} and payload["t"] == "book"
    assert payload["exp"] == 1060.0


def test_every_seal_is_unique_and_named_by_its_mac() -> None:
    sealer = StateSealer(KEY)
    a, b = sealed(sealer), sealed(sealer)
    assert a != b
    assert StateSealer.state_id(a) != StateSealer.state_id(b)
    assert StateSealer.state_id(a) == a.rsplit(".", 1)[1][:22]


def test_an_expired_state_is_refused() -> None:
    sealer = StateSealer(KEY)
    token = sealed(sealer, now=1000.0, ttl=60.0)
    assert sealer.open(token, now=1060.0, binding=BINDING)  # the last instant still counts
    assert reason(sealer, token, now=1060.5) == "expired"


def test_a_state_replayed_onto_another_call_is_refused() -> None:
    sealer = StateSealer(KEY)
    token = sealed(sealer)
    assert reason(sealer, token, binding={**BINDING, "t": "pay"}) == "bound to another t"
    assert reason(sealer, token, binding={**BINDING, "a": digest({"date": "2025-12-25"})}) == "bound to another a"
    assert reason(sealer, token, binding={**BINDING, "c": "client-2"}) == "bound to another c"


def test_a_tampered_state_is_refused() -> None:
    sealer = StateSealer(KEY, version="v1")
    version, body, mac = sealed(sealer).split(".")
    payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).replace(b'"yes"', b'"no!"')
    forged = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    assert reason(sealer, f"{version}.{forged}.{mac}") == "bad signature"
    assert reason(sealer, f"v3.{body}.{mac}") == "unknown version"
    assert reason(sealer, f"v2.{body}.{mac}") == "bad signature"  # (not a v2 MAC)
    assert reason(sealer, f"{version}.{body}") == "malformed"
    assert reason(sealer, f"{version}.{body}=.{mac}") == "not canonical base64"


def test_another_key_cannot_open_it_but_an_old_key_still_does() -> None:
    old = StateSealer(OTHER)
    token = sealed(old)
    assert reason(StateSealer(KEY), token) == "bad signature"
    rolled = StateSealer(KEY, old_keys=(OTHER,))
    assert rolled.open(token, now=1000.0, binding=BINDING)["answers"] == {"q1": "yes"}
    assert reason(StateSealer(OTHER), sealed(rolled)) == "bad signature"  # new seals use the first key


def test_size_is_bounded_both_ways() -> None:
    sealer = StateSealer(KEY, max_bytes=400)
    with pytest.raises(StateTooLarge) as info:
        sealed(sealer, blob="x" * 400)
    assert info.value.limit == 400 and info.value.size > 400
    assert isinstance(info.value, ValueError) and isinstance(info.value, MinimcpError)
    token = sealed(sealer, blob="x" * 100)
    assert len(token) <= 400
    assert reason(StateSealer(KEY, max_bytes=len(token) - 1), token) == "too large"


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        StateSealer(b"short")
    assert len(StateSealer().key) == 32  # no key: a random one


def test_digest_is_stable_and_ignores_key_order() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    assert len(digest(None)) == 16 and "=" not in digest("x")


@pytest.mark.parametrize("mac", ["é" * 43, "A" * 42 + "\u0100", "\x00" * 43])
def test_a_mac_of_foreign_characters_is_refused_not_a_crash(mac: str) -> None:
    sealer = StateSealer(KEY, version="v1")
    version, body, _ = sealed(sealer).split(".")
    assert reason(sealer, f"{version}.{body}.{mac}") in ("malformed", "not canonical base64")


@pytest.mark.parametrize("size", [32, 63, 64, 65, 200])
def test_the_mac_is_hmac_sha256_of_the_body_for_any_key_length(size: int) -> None:
    import hashlib
    import hmac

    key = bytes(i % 251 for i in range(size))
    version, body, mac = StateSealer(key, version="v1").seal({"x": 1}, now=0.0, ttl=60.0).split(".")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    expected = base64.urlsafe_b64encode(hmac.new(key, raw, hashlib.sha256).digest()).decode().rstrip("=")
    assert (version, mac) == ("v1", expected)
