"""Shared by the end-to-end authorization tests: a minimcp server protected by a real NanoIDP, and forged tokens.

A :class:`Deployment` is one resource URL (``http://127.0.0.1:<port>/mcp``, the port picked once per test
module) whose tokens are made once by the module's NanoIDP; each test serves a fresh server on that port
over HTTP (:func:`serve_http`) or WebSocket (:func:`serve_websocket`) with a fresh verifier
(:class:`~minimcp.auth.jwt.JWTVerifier` discovering the keys through NanoIDP's metadata, or
:class:`~minimcp.auth.introspection.IntrospectionVerifier` asking its ``/introspect``).

The forgeries start from a real token: its claims re-encoded with ``alg: none``, HMAC-signed with the
issuer's public key as the secret, signed with a key the issuer never published, or re-signed with the
issuer's own private key (read from NanoIDP's key directory: the issuer itself minting a token whose only
fault is the one under test, an ``exp`` in the past, say).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from minimcp import Accepted, Context, ElicitationRequest, Server, serve_http, serve_websocket
from minimcp.auth import (
    Authorization,
    HeadlessBrowser,
    IntrospectionVerifier,
    JWTVerifier,
    MemoryTokenStore,
    OAuthClient,
    Verifier,
)
from tests.helpers.http import JSON_SSE, Raw, dump, initialize_request
from tests.helpers.nanoidp import INTROSPECTOR, NanoIDP, Tokens, free_port
from tests.helpers.websocket import RawWs

READ, WRITE = "bookings:read", "bookings:write"
SCOPES = (READ, WRITE)
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TIMEOUT = 30  # seconds a test may take on a busy machine

# What a refusal's challenge says (its error_description), by attack.
EXPIRED = "the token has expired"
NOT_YET = "the token is not valid yet"
ALGORITHM = "the token's signing algorithm is not accepted"
UNKNOWN_KEY = "the token is signed with a key the issuer does not publish"
OTHER_ISSUER = "the token was issued by another authorization server"
AUDIENCE = "the token was not issued for this resource"
TOO_LARGE = "the token is too large"
MALFORMED = "the Authorization header is not 'Bearer <token>'"


# --- the protected server ------------------------------------------------------------------------


class Deployment:
    """One resource (a loopback port picked for the module, or ``port``) and its tokens, each made once by ``idp``."""

    def __init__(self, idp: NanoIDP, port: int | None = None) -> None:
        self.idp = idp
        self.port = port or free_port()
        self.resource = f"http://127.0.0.1:{self.port}/mcp"
        self._tokens: dict[tuple[str, tuple[str, ...], str], Tokens] = {}

    def tokens(self, user: str, scopes: Sequence[str] = SCOPES, resource: str | None = None) -> Tokens:
        """``user``'s tokens for ``scopes`` and ``resource`` (this deployment's by default), made on first use."""
        key = (user, tuple(scopes), resource or self.resource)
        if key not in self._tokens:
            self._tokens[key] = self.idp.token_for(user, scopes, key[2])
        return self._tokens[key]

    def token(self, user: str, scopes: Sequence[str] = SCOPES, resource: str | None = None) -> str:
        return self.tokens(user, scopes, resource).access_token

    def verifier(self, *, fetches: list[str] | None = None, **options: Any) -> JWTVerifier:
        """A JWT verifier of the issuer that finds its keys through its metadata; ``fetches`` records each URL asked."""
        client = None
        if fetches is not None:

            async def record(request: httpx.Request) -> None:
                fetches.append(str(request.url))

            client = httpx.AsyncClient(event_hooks={"request": [record]}, timeout=10)
        return JWTVerifier(self.idp.issuer, http_client=client, **options)

    def introspection(self, **options: Any) -> IntrospectionVerifier:
        client_id, secret = INTROSPECTOR
        return IntrospectionVerifier(
            self.idp.endpoint("introspection"), client_id=client_id, client_secret=secret, issuer=self.idp.issuer,
            **options,
        )

    def authorization(self, verifier: Verifier, **options: Any) -> Authorization:
        return Authorization(
            verifier, resource=self.resource, authorization_servers=[self.idp.issuer], scopes_supported=SCOPES,
            **options,
        )

    @contextlib.asynccontextmanager
    async def serving(
        self, server: Server, auth: Authorization, transport: str = "http", *, port: int | None = None,
        close_verifier: bool = True,
    ) -> AsyncIterator[str]:
        """``server`` protected by ``auth`` on this deployment's port (or ``port``), over ``transport`` (``http`` or
        ``websocket``); yields its URL. The verifier is closed after unless told not to."""
        serve: Callable[..., Any] = serve_http if transport == "http" else serve_websocket
        scheme = "http" if transport == "http" else "ws"
        port = port or self.port
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(functools.partial(serve, server, port=port, auth=auth))
                try:
                    yield f"{scheme}://127.0.0.1:{port}/mcp"
                finally:
                    tg.cancel_scope.cancel()
        finally:
            close = getattr(auth.verifier, "aclose", None)
            if close is not None and close_verifier:
                await close()


class Ran:
    """What the tools of :func:`build` did, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []


def build(name: str = "e2e") -> tuple[Server, Ran]:
    """A server with ``whoami`` (open: who ``ctx.auth`` is) and ``book`` (needs ``bookings:write``, asks a name)."""
    server = Server(name, state_key=b"e2e-state-key-".ljust(32, b"x"))
    ran = Ran()

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the caller is."""
        ran.events.append("whoami")
        who = ctx.auth
        assert who is not None
        return json.dumps(
            {"iss": who.issuer, "sub": who.subject, "scopes": sorted(who.scopes), "client_id": who.client_id}
        )

    @server.tool(scopes=[WRITE])
    async def book(ctx: Context, room: str) -> str:
        """Book a room (needs bookings:write); asks the name to book it under."""
        ran.events.append(f"book {room}")
        answer = await ctx.elicit("Your name?", NAME_FORM)
        who = ctx.auth
        assert who is not None
        value = getattr(answer, "value", None)
        ran.events.append(f"booked {room}")
        return f"{who.subject} booked {room} for {value['name'] if value else '-'}"

    return server, ran


def signing_in(user: str, store: MemoryTokenStore, scopes: Sequence[str] | None, **options: Any) -> OAuthClient:
    """Our OAuth client signing ``user`` in headlessly at NanoIDP (its persona sign-in, by ``login_hint``), asking
    for ``scopes`` (``None``: what the server's challenge names), its redirect on a free loopback port."""
    return OAuthClient(
        HeadlessBrowser({"login_hint": f"persona-auto-login:{user}"}),
        redirect_uri=f"http://127.0.0.1:{free_port()}/callback",
        scopes=scopes,
        store=store,
        **options,
    )


async def named(request: ElicitationRequest) -> Accepted[dict[str, Any]]:
    """The answer to :func:`build`'s ``book`` form: the name Alice."""
    return Accepted({"name": "Alice"})


class Bearer(Raw):
    """A hand-driven HTTP session whose requests carry ``Authorization: Bearer <token>`` (when a token is set)."""

    def __init__(self, http: Any, url: str, token: str | None) -> None:
        super().__init__(http, url)
        self.token = token

    def headers(self, **extra: str) -> dict[str, str]:
        headers = super().headers(**extra)
        if self.token is not None:
            headers.setdefault("authorization", f"Bearer {self.token}")
        return headers


class Outcome:
    """What the server answered an attempt: the status, the challenge's parameters (empty when none), and the
    worker that answered (``X-MCP-Worker``, set by ``deploy/haproxy.cfg``; ``None`` without a balancer)."""

    def __init__(self, status: int, challenge: str | None, worker: str | None = None) -> None:
        self.status = status
        self.challenge = challenge_of(challenge) if challenge else {}
        self.worker = worker


async def attempt(
    url: str, header: str | None, *, query: str = "", message: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Outcome:
    """Send ``Authorization: header`` (none when ``None``): over HTTP a POST of ``message`` (initialize by default,
    with ``headers`` added), over WebSocket (a ``ws:`` URL) the upgrade."""
    if url.startswith("ws:"):
        sent_ws = {"Authorization": header} if header is not None else None
        async with RawWs.connect(url + query, subprotocols=["mcp"], headers=sent_ws) as raw:
            assert raw.response is not None
            got = raw.response
            status = 200 if got.status_code == 101 else got.status_code
            return Outcome(status, got.headers.get("WWW-Authenticate"), got.headers.get("X-MCP-Worker"))
    sent = {"accept": JSON_SSE, "content-type": "application/json", **(headers or {})}
    if header is not None:
        sent["authorization"] = header
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.post(url + query, content=dump(message or initialize_request()), headers=sent)
    if header is not None and len(header) > 40:
        assert header.split()[-1] not in answer.text  # a refusal never echoes the token
    return Outcome(answer.status_code, answer.headers.get("www-authenticate"), answer.headers.get("x-mcp-worker"))


def assert_refused_as(outcome: Outcome, description: str) -> None:
    """``outcome`` is a ``401 invalid_token`` saying ``description``, pointing at the resource's metadata."""
    assert outcome.status == 401, vars(outcome)
    assert outcome.challenge["error"] == "invalid_token"
    assert outcome.challenge["error_description"] == description
    assert outcome.challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


async def assert_refused(url: str, token: str, description: str) -> None:
    assert_refused_as(await attempt(url, f"Bearer {token}"), description)


def challenge_of(value: str) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", ...`` value."""
    assert value.startswith("Bearer "), value
    found: dict[str, str] = {}
    for part in value[len("Bearer ") :].split('", '):
        name, _, quoted = part.partition("=")
        found[name.strip()] = quoted.strip('"')
    return found


# --- forged tokens -------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_b64(value: dict[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


def header_and_claims(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JWT's header and claims, unverified."""
    return jwt.get_unverified_header(token), jwt.decode(token, options={"verify_signature": False})


def alg_none(token: str) -> str:
    """``token``'s header and claims re-encoded with ``alg: none`` and no signature."""
    header, claims = header_and_claims(token)
    return f"{_json_b64({**header, 'alg': 'none'})}.{_json_b64(claims)}."


def hmac_signed(token: str, secret: bytes) -> str:
    """``token``'s claims HS256-signed with ``secret`` (the issuer's public key, in the attack), its ``kid`` kept."""
    header, claims = header_and_claims(token)
    signing_input = f"{_json_b64({**header, 'alg': 'HS256'})}.{_json_b64(claims)}"
    signature = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def issuer_key(idp: NanoIDP) -> tuple[bytes, str]:
    """NanoIDP's signing key now (PEM) and its ``kid``, from its key directory."""
    keys = idp.directory / "keys"
    return (keys / "rsa_private.pem").read_bytes(), (keys / "kid.txt").read_text().strip()


def public_key_pem(idp: NanoIDP) -> bytes:
    """The issuer's public signing key (PEM): what an attacker gets from its published key set."""
    return (idp.directory / "keys" / "rsa_public.pem").read_bytes()


def resigned(token: str, key: bytes, kid: str, **changes: Any) -> str:
    """``token``'s claims with ``changes`` (None removes a claim), RS256-signed with ``key`` under ``kid``."""
    _, claims = header_and_claims(token)
    for name, value in changes.items():
        if value is None:
            claims.pop(name, None)
        else:
            claims[name] = value
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


@functools.cache
def rogue_key() -> bytes:
    """An RSA key (PEM) that no issuer publishes (made once: a 2048-bit key takes a while)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def now() -> int:
    return int(time.time())
