"""A small authorization server for the verifier tests: metadata, key set and introspection over real HTTP.

:class:`Issuer` is an ASGI app served by hypercorn (minimcp's own runner) on loopback, on the test's
backend; it counts what it is asked, and the test changes what it answers (keys, metadata, introspection
outcomes) between requests. Keys are real (RSA and EC, made with cryptography, once per process) and
tokens are signed with pyjwt.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import functools
import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp.core._backend import backend_name
from minimcp.transports import asgi_server

jwt = pytest.importorskip("jwt")
pytest.importorskip("httpx")
pytest.importorskip("hypercorn")
rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")

#: The resource (this MCP server) tokens are meant for.
RESOURCE = "https://mcp.example.com/mcp"
#: The resource server's own credentials at the issuer, for introspection.
CLIENT = ("mcp-server", "s3cret-of-the-resource-server")


@functools.cache
def private_key(name: str) -> Any:
    """A private key made once per process: ``rsa``, ``rsa2`` and ``rsa3`` (RSA 2048), ``ec`` (P-256)."""
    if name == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(name: str, kid: str | None) -> dict[str, Any]:
    """The public JWK of :func:`private_key` ``name``, with ``kid`` (none when ``None``)."""
    key = private_key(name).public_key()
    jwk: dict[str, Any] = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key) if name == "ec"
                                     else jwt.algorithms.RSAAlgorithm.to_jwk(key))
    if kid is not None:
        jwk["kid"] = kid
    return jwk


def public_pem(name: str) -> bytes:
    return bytes(private_key(name).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ))


def claims(issuer: str, **changes: Any) -> dict[str, Any]:
    """A token's claims for ``issuer``: a person, this resource as audience, five minutes to live."""
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": issuer, "sub": "alice", "aud": RESOURCE, "azp": "booking-app",
        "scope": "bookings:read bookings:write", "iat": now, "exp": now + 300,
    }
    base.update(changes)
    return {name: value for name, value in base.items() if value is not None}


def sign(payload: dict[str, Any], key: str = "rsa", kid: str | None = "k1", alg: str = "RS256") -> str:
    """``payload`` signed with :func:`private_key` ``key``, naming ``kid``."""
    headers = {"kid": kid} if kid is not None else {}
    return str(jwt.encode(payload, private_key(key), algorithm=alg, headers=headers))


def unsigned(payload: dict[str, Any], header: dict[str, Any]) -> str:
    """A token with ``header`` and ``payload`` and no signature (``alg: none`` and the like)."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(payload)}."


class Issuer:
    """The authorization server's HTTP side. ``url`` is its issuer once served (``path`` appended).

    Attributes a test changes: ``keys`` (the published JWKs), ``metadata_at`` (``"oauth"``: RFC 8414
    path-inserted; ``"openid"``: OpenID discovery appended to the issuer), ``metadata_issuer`` (the
    ``issuer`` its metadata names; ``None``: its own), ``answers`` (token -> introspection answer;
    others are inactive), ``padding`` (bytes added to each key set, to make it large).
    """

    def __init__(self, path: str = "") -> None:
        self.path = path
        self.url = ""
        self.keys: list[dict[str, Any]] = [public_jwk("rsa", "k1"), public_jwk("ec", "e1")]
        self.metadata_at = "oauth"
        self.metadata_issuer: str | None = None
        self.answers: dict[str, dict[str, Any]] = {}
        self.padding = 0
        self.hits: collections.Counter[str] = collections.Counter()
        self.seen: list[bytes] = []  # every request's body and headers, to check what the verifier sends
        self.headers: list[dict[bytes, bytes]] = []

    def _metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url if self.metadata_issuer is None else self.metadata_issuer,
            "jwks_uri": self.url + "/jwks",
            "introspection_endpoint": self.url + "/introspect",
        }

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]  # startup, shutdown
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.seen.append(body)
        self.headers.append(dict(scope["headers"]))
        path = scope["path"]
        self.hits[path] += 1
        status, answer = 404, dict[str, Any](error="not_found")
        metadata_path = {
            "oauth": f"/.well-known/oauth-authorization-server{self.path}",
            "openid": f"{self.path}/.well-known/openid-configuration",
        }[self.metadata_at]
        if path == metadata_path:
            self.hits["metadata"] += 1
            status, answer = 200, self._metadata()
        elif path == f"{self.path}/jwks":
            self.hits["jwks"] += 1
            status, answer = 200, {"keys": self.keys, "padding": "x" * self.padding}
        elif path == f"{self.path}/introspect" and scope["method"] == "POST":
            self.hits["introspect"] += 1
            status, answer = self._introspect(dict(scope["headers"]), body)
        payload = json.dumps(answer).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    def _introspect(self, headers: dict[bytes, bytes], body: bytes) -> tuple[int, dict[str, Any]]:
        expected = b"Basic " + base64.b64encode(f"{CLIENT[0]}:{CLIENT[1]}".encode())
        if headers.get(b"authorization") != expected:
            return 401, {"error": "invalid_client"}
        form = urllib.parse.parse_qs(body.decode())
        token = form.get("token", [""])[0]
        return 200, self.answers.get(token, {"active": False})


@contextlib.asynccontextmanager
async def serving(issuer: Issuer) -> AsyncIterator[str]:
    """``issuer`` on 127.0.0.1 at a free port (hypercorn, on the running backend); yields its issuer URL.
    Leaving the block stops it: its port then refuses connections."""
    sock = asgi_server.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    issuer.url = f"http://127.0.0.1:{port}{issuer.path}"
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(asgi_server.run_hypercorn, issuer, sock, stop, 0.1, backend_name())
        try:
            yield issuer.url
        finally:
            stop.set()
