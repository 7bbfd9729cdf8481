"""minimcp.server.mrtr.state, the v2 token: ``v2.<handle>.<arguments digest>.<expiry ms>.<body>.<MAC>``.

The MAC is keyed BLAKE2b-256 over the token's text up to its last dot, under a key derived from
each sealing key; v1 tokens (HMAC-SHA256 over the decoded body) still open. The checks through
a server (the read loop's fast path) are in test_state_v2_rounds.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Any

import pytest

from minimcp.server.mrtr import state as state_module
from minimcp.server.mrtr.state import InvalidState, StateSealer
from minimcp.wire.input_required import digest
from tests.helpers import counted_urandom
from tests.helpers.state_v2 import TAMPERED, _flip

KEY = b"k" * 32
OLD = b"o" * 32
OTHER = b"x" * 32
HANDLE = "hAnDle-_0123456"
BINDING = {"m": "tools/call", "t": "book", "a": digest({"date": "2025-12-24"}), "p": "client"}
NOW = 1000.0


def payload(**extra: Any) -> dict[str, Any]:
    return {**BINDING, "h": HANDLE, "ks": ["q1"], "ans": [["d", {"x": "yes"}]], **extra}


def refused(sealer: StateSealer, token: str, *, now: float = NOW, binding: dict[str, Any] = BINDING) -> str:
    """The reason ``open`` gives for ``token``, after checking ``open_header_id`` (the header route of a retry
    whose call is parked here) refuses it too (it checks no binding: only for ``binding`` left as it is)."""
    if binding is BINDING:
        with pytest.raises(InvalidState):
            sealer.open_header_id(token, now=now)
    with pytest.raises(InvalidState) as info:
        sealer.open(token, now=now, binding=binding)
    return info.value.reason


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_a_v2_token_is_sealed_by_default_and_opens_with_its_payload() -> None:
    sealer = StateSealer(KEY)
    token = sealer.seal(payload(), now=NOW, ttl=60.0)
    version, handle, args, exp, body, mac = token.split(".")
    assert (version, handle, args, exp) == ("v2", HANDLE, BINDING["a"], "1060000")
    inside = _unb64(body)
    assert b'"h"' not in inside and b'"exp"' not in inside and b'"a"' not in inside  # (in the header)
    opened = sealer.open(token, now=NOW, binding=BINDING)
    assert {k: v for k, v in opened.items() if k != "n"} == {**payload(), "exp": 1060.0}
    assert sealer.open_header_id(token, now=NOW) == (HANDLE, BINDING["a"], 1060.0, mac[:22])
    assert StateSealer.state_id(token) == mac[:22]


@pytest.mark.parametrize("size", [32, 64, 65, 200])
def test_the_v2_mac_is_keyed_blake2b_over_the_text_for_any_key_length(size: int) -> None:
    """BLAKE2b-256 keyed with a hash of the key under a fixed personalisation (a key of any length;
    BLAKE2b takes at most 64 bytes), over every character before the last dot."""
    key = bytes(i % 251 for i in range(size))
    token = StateSealer(key).seal(payload(), now=NOW, ttl=60.0)
    signed, mac = token.rsplit(".", 1)
    derived = hashlib.blake2b(key, digest_size=32, person=b"minimcp.state.v2").digest()
    assert mac == _b64(hashlib.blake2b(signed.encode(), key=derived, digest_size=32).digest())
    # Not the v1 MAC, and not BLAKE2b under the raw key: v1 and v2 never share a MAC key.
    assert mac != _b64(hmac.new(key, signed.encode(), hashlib.sha256).digest())
    if size <= 64:
        assert mac != _b64(hashlib.blake2b(signed.encode(), key=key, digest_size=32).digest())










def spare_bits_token(sealer: StateSealer) -> str:
    """A token whose body's text has spare bits in its last character (its length is not a multiple of 4)."""
    for n in range(4):
        token = sealer.seal(payload(blob="x" * n), now=NOW, ttl=60.0)
        if len(token.split(".")[4]) % 4 in (2, 3):
            return token
    raise AssertionError("no body length with spare bits")  # pragma: no cover


@pytest.mark.parametrize("how", sorted(TAMPERED))
def test_a_tampered_v2_token_is_refused(how: str) -> None:
    sealer = StateSealer(KEY)
    token = spare_bits_token(sealer)
    bad = TAMPERED[how](token)
    assert bad != token
    refused(sealer, bad)


def test_a_non_canonical_body_decodes_the_same_yet_is_refused() -> None:
    """v2 needs no canonical-base64 check: the MAC covers the text, so another text of the same bytes fails it."""
    sealer = StateSealer(KEY)
    token = spare_bits_token(sealer)
    bad = TAMPERED["body-last-bits"](token)
    assert _unb64(bad.split(".")[4]) == _unb64(token.split(".")[4])
    assert refused(sealer, bad) == "bad signature"


def test_an_expired_v2_token_is_refused_at_the_millisecond() -> None:
    sealer = StateSealer(KEY)
    token = sealer.seal(payload(), now=NOW, ttl=60.0)
    assert sealer.open(token, now=1060.0, binding=BINDING)  # the last instant still counts
    assert sealer.open_header_id(token, now=1060.0)[2] == 1060.0
    assert refused(sealer, token, now=1060.001) == "expired"  # (open_header_id refuses it too: see refused)


def test_a_v2_token_is_bound_to_its_call() -> None:
    sealer = StateSealer(KEY)
    token = sealer.seal(payload(), now=NOW, ttl=60.0)
    for name, other in (("t", "pay"), ("a", digest({"date": "2025-12-25"})), ("p", "eve"), ("m", "prompts/get")):
        assert refused(sealer, token, binding={**BINDING, name: other}) == f"bound to another {name}"


def test_key_rotation_for_v2_and_v1_the_first_key_seals_every_key_opens() -> None:
    rolled = StateSealer(KEY, old_keys=(OLD,))
    for version in ("v1", "v2"):
        old_token = StateSealer(OLD, version=version).seal(payload(), now=NOW, ttl=60.0)
        assert rolled.open(old_token, now=NOW, binding=BINDING)["ks"] == ["q1"]
        if version == "v2":
            assert rolled.open_header_id(old_token, now=NOW)[:3] == (HANDLE, BINDING["a"], 1060.0)
        assert refused(StateSealer(KEY), old_token) == "bad signature"  # the old key dropped
    assert refused(StateSealer(OLD), rolled.seal(payload(), now=NOW, ttl=60.0)) == "bad signature"  # seals: first key


def test_a_v2_token_sealed_under_another_key_is_refused() -> None:
    token = StateSealer(OTHER).seal(payload(), now=NOW, ttl=60.0)
    assert refused(StateSealer(KEY, old_keys=(OLD,)), token) == "bad signature"


def test_v1_tokens_still_open_in_a_v2_sealer_and_tampered_ones_are_still_refused() -> None:
    """A rolling deploy: a worker of the older release sealed v1; the new default sealer opens it with
    every v1 check (HMAC over the body, canonical base64, version) unchanged."""
    old_worker = StateSealer(KEY, version="v1")
    token = old_worker.seal(payload(), now=NOW, ttl=60.0)
    assert token.startswith("v1.") and token.count(".") == 2
    sealer = StateSealer(KEY)
    assert sealer.version == "v2"
    assert sealer.open(token, now=NOW, binding=BINDING)["h"] == HANDLE
    version, body, mac = token.split(".")
    assert refused(sealer, f"{version}.{_flip(body, 10)}.{mac}") == "bad signature"
    assert refused(sealer, f"{version}.{body}=.{mac}") == "not canonical base64"
    assert refused(sealer, f"v3.{body}.{mac}") == "unknown version"
    assert refused(sealer, token, now=1060.5) == "expired"
    assert refused(sealer, token, binding={**BINDING, "t": "pay"}) == "bound to another t"
    with pytest.raises(InvalidState, match="bad signature"):
        sealer.open_header_id(token, now=NOW)  # (v1 has no header: a retry's state is opened in full)


def test_seals_are_unique_without_a_read_of_the_systems_randomness_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nonce is a prefix drawn once per sealer and a count: no getrandom per seal, never twice the same."""
    sealer = StateSealer(KEY)
    drawn = counted_urandom(monkeypatch)
    tokens = [sealer.seal(payload(), now=NOW, ttl=60.0) for _ in range(2000)]
    assert drawn[0] == 0
    assert len(set(tokens)) == len({StateSealer.state_id(t) for t in tokens}) == 2000
    # Another sealer (another process) draws its own prefix: its nonces are not this one's.
    other = StateSealer(KEY)
    first = {sealer.open(t, now=NOW, binding={})["n"] for t in tokens}
    assert not first & {other.open(other.seal(payload(), now=NOW, ttl=60.0), now=NOW, binding={})["n"]}


def test_a_handle_or_digest_the_header_cannot_hold_stays_in_the_body() -> None:
    sealer = StateSealer(KEY)
    for h, a in (("with.dot", "d.igest"), (None, None), ("", 5), ("h\u00e9", ["x"])):
        token = sealer.seal({"m": "tools/call", "h": h, "a": a}, now=NOW, ttl=60.0)
        assert token.count(".") == 5
        opened = sealer.open(token, now=NOW, binding={"h": h, "a": a})
        assert (opened["h"], opened["a"]) == (h, a)
        assert sealer.open_header_id(token, now=NOW)[:2] == ("", "")  # (the header's fields left empty)


def test_the_size_bound_counts_the_header() -> None:
    sealer = StateSealer(KEY)
    token = sealer.seal(payload(blob="x" * 100), now=NOW, ttl=60.0)
    exact = StateSealer(KEY, max_bytes=len(token))
    assert exact.open(exact.seal(payload(blob="x" * 100), now=NOW, ttl=60.0), now=NOW, binding=BINDING)
    assert refused(StateSealer(KEY, max_bytes=len(token) - 1), token) == "too large"
    with pytest.raises(state_module.StateTooLarge):
        StateSealer(KEY, max_bytes=len(token) - 1).seal(payload(blob="x" * 100), now=NOW, ttl=60.0)


def test_a_v2_seal_takes_its_payload() -> None:
    """The sealer takes the payload it is given (no copy per seal): the nonce put in, the header's members
    taken out; what it seals opens to the payload as given."""
    given = payload()
    kept = dict(given)
    token = StateSealer(KEY).seal(given, now=NOW, ttl=60.0)
    assert "h" not in given and "a" not in given and "n" in given
    opened = StateSealer(KEY).open(token, now=NOW, binding=BINDING)
    assert {k: v for k, v in opened.items() if k not in ("n", "exp")} == kept


def test_an_unknown_version_to_seal_is_refused() -> None:
    with pytest.raises(ValueError, match="v1, v2"):
        StateSealer(KEY, version="v9")


# Tokens sealed by the release before the sealers were made one (``seal``, ``seal_sorted`` and ``seal_parts``),
# key KEY, its nonce prefix drawn from an ``os.urandom`` that gave bytes 0..8: the usual round's (sealed by
# ``seal_parts``), a general one (``seal``: nested answers, a worker's mark) and the same in v1.
_USUAL = {"ans": [], "at": 1000.0, "c": None, "ks": ["q1"], "m": "tools/call", "p": "client", "qs": ["d1"],
          "t": "book", "to": 300.0}
_GENERAL = {**BINDING, "h": HANDLE, "ks": ["q2"], "qs": ["d2"], "at": 1000.0, "to": None,
            "ans": [["d1", {"x": "yes", "b": [1, {"z": 2, "y": 1}]}]], "c": "call-1", "w": "w1"}
SEALED_BEFORE = {
    "v2_usual": "v2.hAnDle-_0123456.8esHnr9gCCw_dIgZ.1060000.eyJhbnMiOltdLCJhdCI6MTAwMC4wLCJjIjpudWxsLCJrcyI6WyJx"
    "MSJdLCJtIjoidG9vbHMvY2FsbCIsIm4iOiJBQUVDQXdRRkJnY0kwIiwicCI6ImNsaWVudCIsInFzIjpbImQxIl0sInQiOiJib29rIiwidG8i"
    "OjMwMC4wfQ.h3EQvgfoSITpobbYcfQHd9odzc-rq9eMsrQIZoKydU0",
    "v2_general": "v2.hAnDle-_0123456.8esHnr9gCCw_dIgZ.1060000.eyJhbnMiOltbImQxIix7ImIiOlsxLHsieSI6MSwieiI6Mn1dLCJ4"
    "IjoieWVzIn1dXSwiYXQiOjEwMDAuMCwiYyI6ImNhbGwtMSIsImtzIjpbInEyIl0sIm0iOiJ0b29scy9jYWxsIiwibiI6IkFBRUNBd1FGQmdj"
    "STEiLCJwIjoiY2xpZW50IiwicXMiOlsiZDIiXSwidCI6ImJvb2siLCJ0byI6bnVsbCwidyI6IncxIn0.eblN4-Xws37lz1noBU96N2dKzUff"
    "DnvWSSTu-ikWs4w",
    "v1_general": "v1.eyJhIjoiOGVzSG5yOWdDQ3dfZElnWiIsImFucyI6W1siZDEiLHsiYiI6WzEseyJ5IjoxLCJ6IjoyfV0sIngiOiJ5ZXMi"
    "fV1dLCJhdCI6MTAwMC4wLCJjIjoiY2FsbC0xIiwiZXhwIjoxMDYwLjAsImgiOiJoQW5EbGUtXzAxMjM0NTYiLCJrcyI6WyJxMiJdLCJtIjoi"
    "dG9vbHMvY2FsbCIsIm4iOiJBQUVDQXdRRkJnY0kiLCJwIjoiY2xpZW50IiwicXMiOlsiZDIiXSwidCI6ImJvb2siLCJ0byI6bnVsbCwidyI6"
    "IncxIn0.dUifkB6qOh3hoVCApkN9bw561p2YO9RamrAHc5s6U3Q",
}


def test_tokens_sealed_by_the_release_before_open_the_same_and_are_sealed_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one sealer seals, for the same nonce, the very bytes the three sealers before it sealed (the
    usual round's token included), and the one opener opens their tokens to the same payload."""
    monkeypatch.setattr(os, "urandom", lambda n: bytes(range(n)))  # (read by the sealer: its nonce prefix)
    sealer, v1 = StateSealer(KEY), StateSealer(KEY, version="v1")
    usual = {**_USUAL, "m": "tools/call", "t": "book", "a": BINDING["a"], "p": "client", "h": HANDLE}
    # (each seal takes its payload: a copy each)
    assert sealer.seal(dict(usual), now=NOW, ttl=60.0) == SEALED_BEFORE["v2_usual"]
    assert sealer.seal(dict(_GENERAL), now=NOW, ttl=60.0) == SEALED_BEFORE["v2_general"]
    assert v1.seal(dict(_GENERAL), now=NOW, ttl=60.0) == SEALED_BEFORE["v1_general"]
    fresh = StateSealer(KEY)  # (another process: another nonce prefix)
    for name, expected in (("v2_usual", usual), ("v2_general", _GENERAL), ("v1_general", _GENERAL)):
        opened = fresh.open(SEALED_BEFORE[name], now=NOW, binding=BINDING)
        assert {k: v for k, v in opened.items() if k not in ("n", "exp")} == expected
        assert opened["exp"] == 1060.0
        if name.startswith("v2"):
            assert fresh.open_header_id(SEALED_BEFORE[name], now=NOW) == (
                HANDLE, BINDING["a"], 1060.0, StateSealer.state_id(SEALED_BEFORE[name]))
