"""DPoP proofs for an OAuth client (RFC 9449): a key of its own, a fresh signed proof per request, server nonces.

Given ``OAuthClient(dpop=True)`` (or a :class:`DPoP` of the application's), the client proves
possession of a private key at the token endpoint and at the MCP server: each request carries a
``DPoP`` header, a JWT (``typ: dpop+jwt``, ES256, the public key as ``jwk``) naming the request's
method (``htm``) and URL without query or fragment (``htu``), with a fresh ``jti``, ``iat``, the
access token's hash (``ath``) at the resource server, and the server's last nonce when it gave one
(``DPoP-Nonce``; a ``use_dpop_nonce`` error asks for it, §8 and §9). Tokens bound to the key are
presented with the ``DPoP`` scheme instead of ``Bearer``.

Needs pyjwt with cryptography (the ``auth`` extra), imported here only.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["DPoP"]

#: The one signing algorithm minimcp's proofs use (RFC 9449 §5.1: the server lists what it accepts).
ALGORITHM = "ES256"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class DPoP:
    """A DPoP key (P-256, made here unless given) and the nonces servers handed out, one per origin.

    One object per application identity: tokens bound to its key are useless with another, so an
    application that keeps tokens across runs keeps the key too (``private_key``).
    """

    algorithm = ALGORITHM

    def __init__(self, private_key: ec.EllipticCurvePrivateKey | None = None) -> None:
        key = private_key if private_key is not None else ec.generate_private_key(ec.SECP256R1())
        if not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("a DPoP key for ES256 must be on the P-256 curve")
        self._key = key
        numbers = key.public_key().public_numbers()
        self.jwk: dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }
        self._nonces: dict[str, str] = {}

    @property
    def thumbprint(self) -> str:
        """The key's JWK thumbprint (RFC 7638), what a bound token's ``cnf.jkt`` names."""
        canonical = '{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}'.format(**self.jwk)
        return _b64(hashlib.sha256(canonical.encode("ascii")).digest())

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for one request (``access_token``: the token it presents, hashed into ``ath``)."""
        parts = urllib.parse.urlsplit(url)
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.jwk}
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=headers)

    def remember_nonce(self, url: str, headers: Mapping[str, str]) -> bool:
        """Keep the ``DPoP-Nonce`` a server at ``url`` answered with; True when it is one not sent yet."""
        nonce = headers.get("dpop-nonce")
        if not nonce:
            return False
        origin = _origin(url)
        fresh = self._nonces.get(origin) != nonce
        self._nonces[origin] = nonce
        return fresh
