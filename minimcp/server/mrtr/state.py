"""Sealed ``requestState`` for multi round-trip requests (revision 2026-07-28), sans-I/O.

The client must echo ``requestState`` byte for byte, and the server must treat
it as attacker-controlled. We seal it under a server key and bind it to what it
belongs to: the method, the tool (or prompt / resource) name, a digest of the
arguments, the client identity where one is known and, with authorization, the person (a digest of
the token's ``(iss, sub)``: :func:`minimcp.server.mrtr.retry.user_of`), with an expiry. Anything
that does not verify -- tampered, expired, replayed onto another call, sealed by
another key -- is refused with one frozen message (the real reason goes to the
log only), never a crash and never a silent re-ask.

Two formats; both open, v2 is sealed (``StateSealer(version=...)``):

* **v2** ``v2.<handle>.<arguments digest>.<expiry ms>.<body>.<MAC>``: the body is
  the base64url of the sorted JSON payload without those three fields; the MAC is
  keyed BLAKE2b-256 over the token's *text* up to its last dot, under a key derived
  from the sealing key (BLAKE2b of it with a fixed personalisation: any key length,
  never the v1 key). An echo that is not byte for byte the token fails the MAC,
  whatever it decodes to, so no canonical-base64 check is needed; and the header is
  covered, so a retry whose call is parked in this process is checked from the MAC,
  the header and the parked run's own record, without decoding the body
  (:meth:`StateSealer.open_header_id`; :func:`minimcp.server.mrtr.retry.check_retry`). The handle and the
  digest go in the header only when they are plain texts without a dot (else in the
  body, the field left empty).
* **v1** ``v1.<body>.<MAC>`` (the format before): HMAC-SHA256 over the decoded
  body, whose text must be canonical base64url. Still opened with every check it
  had, for the states a worker of an older release sealed (a rolling deploy).

The payload is signed, not encrypted: it holds the answers the person already
gave to this same client, so the client learns nothing new from it. Do not
put server secrets in it.

A sealed state is not single-use by itself: every seal carries a nonce (v2: a
prefix drawn once per sealer and a count, no read of the system's randomness per
seal; v1: 9 random bytes) so no two tokens are alike, and
:meth:`StateSealer.state_id` names a token by its MAC, which the server records
as used (:mod:`minimcp.server.mrtr.used_states`).

Keys: :func:`parse_state_keys` reads one key or several (bytes, or hex text); the
first seals and all open (both formats), so a new key is rolled out by putting it
first and dropping the old one after the states it sealed expired.
:func:`state_keys_from_env` reads them from ``MINIMCP_STATE_KEYS``
(comma-separated hex), which is how every worker of one service gets the same keys.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import itertools
import os
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from minimcp.wire.errors import MinimcpError

__all__ = [
    "ENV_STATE_KEYS",
    "InvalidState",
    "StateKey",
    "StateSealer",
    "StateTooLarge",
    "ENV_STATE_FORMAT",
    "parse_state_keys",
    "state_format",
    "state_keys_from_env",
]

#: The environment variable with the sealing keys of a service's workers (comma-separated hex).
ENV_STATE_KEYS = "MINIMCP_STATE_KEYS"
#: The environment variable naming the format a server seals (``v2``, the default; ``v1`` while a rolling
#: upgrade from a release that opens only ``v1`` is under way).
ENV_STATE_FORMAT = "MINIMCP_STATE_FORMAT"
#: What a server whose key is random to its process logs once (``%s``: the server's name).
#: Fewest bytes in a sealing key.
MIN_KEY_BYTES = 32
#: One sealing key: raw bytes, or hex text.
StateKey = bytes | str

_encoder = msgspec.json.Encoder(order="sorted")


class InvalidState(MinimcpError):
    """A ``requestState`` that cannot be trusted; ``reason`` is for the log only."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StateTooLarge(MinimcpError, ValueError):
    """What a call carries across rounds would make a ``requestState`` over ``max_bytes``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the sealed state would be {size} bytes (limit {limit})")
        self.size = size
        self.limit = limit


_sha256 = hashlib.sha256

# base64url without padding, through binascii directly (base64's wrappers cost more than the coding).
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")
_b2a = binascii.b2a_base64  # (a module global: one load, where ``binascii.b2a_base64`` is two)


def _b64(data: bytes) -> str:
    # (the newline stripped with the padding: a call with ``newline=False`` costs about 200 instructions more)
    return _b2a(data).translate(_TO_URLSAFE).rstrip(b"=\n").decode()


def _mac2_text(keyed: Any, signed: bytes) -> bytes:
    """The v2 MAC of ``signed`` as it stands in a token (base64url): ``keyed`` is a prepared keyed BLAKE2b
    (:class:`_Mac2`), copied (sealing and opening both come here)."""
    mac = keyed.copy()
    mac.update(signed)
    return _b2a(mac.digest()).translate(_TO_URLSAFE).rstrip(b"=\n")  # (base64url, unpadded: as _b64)


#: base64url without padding (what ``secrets.token_urlsafe`` gives for the same bytes).
b64url = _b64


def _unb64(text: str) -> bytes:
    """Raises ValueError (``binascii.Error``, or a non-ASCII ``text``)."""
    return binascii.a2b_base64(text.encode("ascii").translate(_FROM_URLSAFE) + b"=" * (-len(text) % 4))


def _canonical_unb64(text: str) -> bytes | None:
    """The bytes of ``text`` if it is canonical unpadded base64url (what :func:`_b64` gives for them),
    checked without coding them again; ``None``: it may not be (:func:`_unb64` and :func:`_b64` tell).

    Canonical: only the 64 characters of the alphabet (strict decoding refuses any other, and the
    standard alphabet's ``+`` ``/`` and padding are refused first), a length base64 can have (not 1
    more than a multiple of 4), and a last character whose bits past the data are zero.
    """
    if "=" in text or "+" in text or "/" in text:
        return None
    try:
        data = binascii.a2b_base64(
            text.encode("ascii").translate(_FROM_URLSAFE) + _PADDING[len(text) % 4], strict_mode=True
        )
    except ValueError:
        return None
    rest = len(text) % 4  # (2: the last character carries 2 bits of data, 3: 4 bits)
    if rest and _ALPHABET.index(text[-1]) & (0xF if rest == 2 else 0x3):
        return None
    return data


_PADDING = (b"", b"===", b"==", b"=")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def parse_state_keys(keys: StateKey | Sequence[StateKey], *, source: str = "state_key") -> tuple[bytes, ...]:
    """Sealing keys from bytes, a hex string, or a sequence of them (the first seals, all open).

    Raises:
        ValueError: naming ``source`` and the key by its position (never its value): no key
            at all, an empty one, one that is not hex, or one shorter than 32 bytes.
    """
    items: Sequence[StateKey] = [keys] if isinstance(keys, (bytes, str)) else keys
    if isinstance(items, (bytes, str)) or not isinstance(items, Sequence):  # pragma: no cover - typed away
        raise ValueError(f"{source}: expected bytes, a hex string, or a list of them")
    if not items:
        raise ValueError(f"{source}: no key given (at least one is needed)")
    parsed: list[bytes] = []
    for n, item in enumerate(items, 1):
        name = f"{source}: key {n}" if len(items) > 1 else source
        if isinstance(item, str):
            text = item.strip()
            if not text:
                raise ValueError(f"{name} is empty")
            try:
                key = bytes.fromhex(text)
            except ValueError:
                raise ValueError(f"{name} is not hex (two hex digits per byte, 0-9 a-f)") from None
        elif isinstance(item, bytes):
            key = item
        else:
            raise ValueError(f"{name} is a {type(item).__name__}: expected bytes or a hex string")
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(
                f"{name} is {len(key)} bytes: a sealing key needs at least {MIN_KEY_BYTES} bytes "
                f"({2 * MIN_KEY_BYTES} hex digits; make one with: python -c \"import secrets; "
                "print(secrets.token_hex(32))\")"
            )
        parsed.append(key)
    return tuple(parsed)


def state_keys_from_env(environ: Mapping[str, str] | None = None) -> tuple[bytes, ...] | None:
    """The sealing keys in ``MINIMCP_STATE_KEYS`` (comma-separated hex), or None when it is unset.

    Raises:
        ValueError: the variable is set but empty, or one of its keys is not hex or
            shorter than 32 bytes (the message names which; it never shows a key).
    """
    value = (os.environ if environ is None else environ).get(ENV_STATE_KEYS)
    if value is None:
        return None
    if not value.strip():
        raise ValueError(f"{ENV_STATE_KEYS} is set but empty: give one or more hex keys, separated by commas")
    return parse_state_keys(value.split(","), source=ENV_STATE_KEYS)


def state_format(value: str | None, *, source: str = "state_format") -> str:
    """The format to seal: ``value`` (``"v1"`` or ``"v2"``), else ``MINIMCP_STATE_FORMAT``, else ``"v2"``.

    Raises:
        ValueError: naming ``source`` (or the variable) and the formats there are.
    """
    if value is None:
        value, source = os.environ.get(ENV_STATE_FORMAT), ENV_STATE_FORMAT
        if value is None:
            return "v2"
        value = value.strip()
    if value not in VERSIONS:
        raise ValueError(f"{source} must be one of {', '.join(VERSIONS)}, not {value!r}")
    return value


class _Mac:
    """HMAC-SHA256 under one key, the key set up once: each MAC copies the prepared state
    (``hmac.HMAC.copy``), where ``hmac.new``/``hmac.digest`` set the key up again on every call.
    Kept on ``hmac`` on purpose: a hand-built RFC 2104 from prepared SHA-256 states measured
    1.22 against 1.36 µs per MAC of a 300-byte body, not worth owning the construction."""

    __slots__ = ("_keyed",)

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)

    def __call__(self, data: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(data)
        return mac.digest()


class _Mac2:
    """Keyed BLAKE2b-256 (the v2 MAC) under a key derived from one sealing key, set up once: each MAC
    copies the prepared state, as :class:`_Mac` does for HMAC."""

    __slots__ = ("keyed",)

    def __init__(self, key: bytes) -> None:
        self.keyed = hashlib.blake2b(key=_v2_key(key), digest_size=32)

    def __call__(self, data: bytes) -> bytes:
        mac = self.keyed.copy()
        mac.update(data)
        return mac.digest()


def _v2_key(key: bytes) -> bytes:
    """The BLAKE2b key of the v2 MAC for one sealing key (any length; BLAKE2b takes at most 64 bytes):
    a hash of the key under a fixed personalisation, so it is never the key HMAC uses for v1."""
    return hashlib.blake2b(key, digest_size=32, person=b"minimcp.state.v2").digest()


#: The token formats :class:`StateSealer` can seal (all of them open).
VERSIONS = ("v1", "v2")
class StateSealer:
    """Seal and open ``requestState`` tokens with one key (rotation: older keys still open).

    ``version``: the format sealed (``"v2"``, the default, or ``"v1"``, which a worker of an
    older release can open); both always open.
    """

    def __init__(
        self,
        key: bytes | None = None,
        *,
        old_keys: tuple[bytes, ...] = (),
        max_bytes: int = 256 * 1024,
        version: str = "v2",
    ):
        if key is not None and len(key) < 32:
            raise ValueError("a requestState key needs at least 32 bytes")
        if version not in VERSIONS:
            raise ValueError(f"version must be one of {', '.join(VERSIONS)}, not {version!r}")
        self.key = key if key is not None else secrets.token_bytes(32)
        self.keys = (self.key, *old_keys)
        self._macs = tuple(_Mac(k) for k in self.keys)  # the first seals, all open
        self._macs2 = tuple(_Mac2(k) for k in self.keys)
        self._seal2 = self._macs2[0].keyed  # (copied per seal)
        self.max_bytes = max_bytes
        self.version = version
        # The nonce: a prefix drawn once per sealer and a count, no read of the system's randomness
        # per seal. It only has to make tokens unique (the MAC protects them): 72 random bits per
        # sealer (process) and a count never repeating within it.
        # (each nonce made in C: a count formatted after the prefix, one call per seal)
        self._nonces = map((_b64(os.urandom(9)) + "{:x}").format, itertools.count())

    def seal(self, payload: dict[str, Any], now: float, ttl: float) -> str:
        """A token for ``payload`` valid until ``now + ttl``, with a fresh nonce (the one sealer). ``payload`` is
        taken: a v2 seal puts the nonce in it and takes the header's members out (no copy of it per seal).

        Raises:
            StateTooLarge: the token would be longer than ``max_bytes`` (which :meth:`open`
                would refuse): nothing is handed out that cannot come back.
        """
        if self.version == "v1":
            body = {**payload, "n": _b64(os.urandom(9)), "exp": round(now + ttl, 3)}
            return self._sealed(_encoder.encode(body))
        # v2: ``v2.<handle>.<arguments digest>.<expiry>.<body>.<MAC>``, the MAC over all before its dot, the
        # expiry in whole milliseconds (the text has no dot). The handle (``"h"``) and the arguments' digest
        # (``"a"``) go in the header when they are non-empty ASCII texts without a dot (else they stay in
        # the body, the header's field empty); the body is the rest of the payload and the nonce, keys sorted.
        payload["n"] = next(self._nonces)
        handle = payload.get("h")
        if type(handle) is str and handle and handle.isascii() and "." not in handle:
            del payload["h"]
        else:
            handle = ""
        args = payload.get("a")
        if type(args) is str and args and args.isascii() and "." not in args:
            del payload["a"]
        else:
            args = ""
        # (the body's base64url, unpadded: two replaces, not a translate -- for a body's few hundred characters
        # they cost fewer instructions, a translate maps every byte: about 2k per seal)
        signed = f"v2.{handle}.{args}.{round((now + ttl) * 1000)}.".encode() + _b2a(
            _encoder.encode(payload)).replace(b"+", b"-").replace(b"/", b"_").rstrip(b"=\n")
        size = len(signed) + 44  # (the token: its signed part, a dot and the MAC's 43 characters)
        if size > self.max_bytes:
            raise StateTooLarge(size, self.max_bytes)
        return (signed + b"." + _mac2_text(self._seal2, signed)).decode()

    def _sealed(self, body: bytes) -> str:
        size = 4 + (len(body) * 4 + 2) // 3 + 43  # "v1." + unpadded base64 of the body + "." + the MAC
        if size > self.max_bytes:
            raise StateTooLarge(size, self.max_bytes)
        return "v1." + _b64(body) + "." + _b64(self._macs[0](body))

    @staticmethod
    def state_id(token: str) -> str:
        """A short name of a token that :meth:`open` accepted: the start of its MAC.

        The MAC covers the whole body (with its nonce), so two tokens that opened never
        share it, and nobody without the key can make a token with a chosen one.
        """
        return token[token.rfind(".") + 1 :][:22]

    def open(self, token: str, *, now: float, binding: dict[str, Any]) -> dict[str, Any]:
        """The payload of ``token`` if it verifies, has not expired and matches ``binding`` (the one opener;
        a v2 token's MAC, header and expiry are checked by :meth:`open_header_id`).

        Raises:
            InvalidState: with the reason (for the log, not for the wire).
        """
        if token.startswith("v2."):
            handle, args, _exp, _id = self.open_header_id(token, now=now)
            start = token.index(".", 5 + len(handle) + len(args)) + 1  # (past the expiry)
            try:
                body = _unb64(token[start : token.rfind(".")])
            except ValueError:  # pragma: no cover - a body we sealed always decodes
                raise InvalidState("malformed") from None
            try:
                payload = msgspec.json.decode(body)
            except msgspec.DecodeError:  # pragma: no cover - as above
                raise InvalidState("undecodable") from None
            if not isinstance(payload, dict):  # pragma: no cover - as above
                raise InvalidState("not an object")
            payload["exp"] = _exp
            if handle:
                payload["h"] = handle
            if args:
                payload["a"] = args
        else:
            try:
                payload = msgspec.json.decode(self._body(token))
            except msgspec.DecodeError:
                raise InvalidState("undecodable") from None
            if not isinstance(payload, dict):
                raise InvalidState("not an object")
            sealed_exp = payload.get("exp")
            if not isinstance(sealed_exp, (int, float)) or isinstance(sealed_exp, bool) or sealed_exp < now:
                raise InvalidState("expired")
        for name, value in binding.items():
            if payload.get(name) != value:
                raise InvalidState(f"bound to another {name}")
        return payload

    def open_header_id(self, token: str, now: float) -> tuple[str, str, float, str]:
        """A v2 token's header -- its handle, arguments' digest (``""``: not in the header) and expiry --
        and its :meth:`state_id`, its MAC checked under one of the keys and its expiry against ``now``,
        the body not decoded (:meth:`open` decodes it; a retry whose call is parked here is checked
        against the parked run's own record instead: :func:`minimcp.server.mrtr.retry.check_retry`).

        The MAC covers the token's text as sent, up to its last dot: an echo that is not byte for
        byte the token fails it, whatever it decodes to. A token of another version fails it too.

        Raises:
            InvalidState: it does not verify, or it has expired.
        """
        if len(token) > self.max_bytes:
            raise InvalidState("too large")
        if not token.isascii():
            raise InvalidState("malformed")  # (compare_digest takes ASCII text only)
        signed, _, mac_text = token.rpartition(".")
        signed_bytes, mac_bytes = signed.encode(), mac_text.encode()
        # The MAC's text is compared with the expected MAC's canonical text (state_id names a token by it);
        # the sealing key first (the usual one), then the older keys.
        for mac_of in self._macs2:
            if hmac.compare_digest(_mac2_text(mac_of.keyed, signed_bytes), mac_bytes):
                break
        else:
            raise InvalidState("bad signature")
        try:  # (sealed by a key of ours: the shape is ours -- no dot in the body; checked all the same)
            _version, handle, args, expiry, _body = signed.split(".")
            exp = int(expiry) / 1000
        except ValueError:
            raise InvalidState("malformed") from None
        if exp < now:
            raise InvalidState("expired")
        return handle, args, exp, mac_text[:22]  # (state_id)

    def _body(self, token: str) -> bytes:
        """The body of ``token``, its MAC checked under one of the keys and its version known."""
        if len(token) > self.max_bytes:
            raise InvalidState("too large")
        try:
            version, body_text, mac_text = token.split(".")
        except ValueError:
            raise InvalidState("malformed") from None
        body = _canonical_unb64(body_text)
        if body is None:  # (not canonical, or not base64 at all: which of them, told here)
            try:
                body = _unb64(body_text)
            except ValueError:
                raise InvalidState("malformed") from None
            if _b64(body) != body_text:
                raise InvalidState("not canonical base64")  # the echo must be byte for byte
        if not mac_text.isascii():
            raise InvalidState("malformed")  # (compare_digest takes ASCII text only)
        # The MAC's text is compared with the expected MAC's canonical text: that checks the
        # signature and that the text is canonical (state_id names a token by it) at once.
        for mac_of in self._macs:
            if hmac.compare_digest(_b64(mac_of(body)), mac_text):
                break
        else:
            try:
                mac = _unb64(mac_text)
            except ValueError:
                raise InvalidState("malformed") from None
            if _b64(mac) != mac_text:
                raise InvalidState("not canonical base64")
            raise InvalidState("unknown version" if version != "v1" else "bad signature")
        if version != "v1":
            raise InvalidState("unknown version")
        return body
