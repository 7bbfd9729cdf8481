"""Page sign-in: the application signs a person in at its authorization server (code + PKCE) to learn who opened a page.

The spec's URL mode wants the server to verify the person who opens a URL step's page before
accepting anything; its recipe: the page signs the person in at the MCP authorization server and
compares the subject with the one the step was made for
(:meth:`~minimcp.server.server.Server.url_step_is_for`). :class:`PageSignIn` is that sign-in, with
the application as its own OAuth client (pre-registered, or registered dynamically, RFC 7591):
authorization code with PKCE ``S256``, ``state`` (single use, expiring, a bounded table:
``Limits.max_pending_sign_ins``) and an OpenID ``nonce``; the authorization server's ``iss`` on the
redirect checked (RFC 9207). It is framework-agnostic: :meth:`PageSignIn.begin` gives the URL to
redirect the browser to, :meth:`PageSignIn.finish` takes the callback's query parameters and
answers the :class:`~minimcp.auth.principal.Principal` (``(iss, sub)`` as in the MCP tokens).

Several workers: by default the sign-ins begun and not finished are kept in this process, so a
callback that a load balancer sends to another worker is refused. Given the server's state keys
and its store of used states (``keys=server.url_step_keys, used_states=server.used_states``: with
``MINIMCP_STATE_KEYS`` and a ``RedisUsedStates`` shared by every worker), nothing is kept in the
process: the ``state`` parameter is the pending sign-in itself, signed (HMAC-SHA256 under a key
derived from the first state key; any of them opens it), carrying a random id, its expiry and
where to go back; the PKCE verifier and the nonce are derived from that id under the key, so
they never travel and any worker finds them again. Single use is the store's: the first
:meth:`PageSignIn.finish` records the id (``SET NX`` in Redis), every later one on any worker is
refused. Chosen over a cookie (the library sees only the callback's query, whatever the page's
framework) and over a table of its own in Redis (the used-state store already gives "first use
wins" on every worker, and a forged or expired ``state`` is refused before it is asked). The
``return_to`` travels signed, not encrypted: the authorization server sees it in the request.
The bound is then the store's (``Limits.max_used_states`` in memory; Redis forgets a record when its
sign-in expires); without keys it is ``Limits.max_pending_sign_ins``, as before.

Who signed in is read from the ``userinfo`` endpoint with the access token just obtained (and,
when an ``id_token`` comes back, its ``iss``, ``aud``, ``nonce`` and ``sub`` must agree; it was
received directly from the token endpoint, OpenID Connect Core §3.1.3.7). Needs httpx (the
``auth`` extra), imported here only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from minimcp.auth.discovery import discovery_urls
from minimcp.auth.principal import Principal
from minimcp.core.config import Limits
from minimcp.wire.errors import MinimcpError

if TYPE_CHECKING:
    import httpx

__all__ = ["PageSignIn", "SignInRefused", "UsedOnce"]

_SEALED = "s1"  # the format of a sealed state: s1.<id>.<expiry s>.<return_to b64>.<MAC>
_TAG_BYTES = 16  # 128 bits of HMAC-SHA256


class UsedOnce(Protocol):
    """Where a sealed sign-in's id is recorded as used (the server's store of used states fits:
    :class:`~minimcp.server.mrtr.used_states.UsedStates`)."""

    async def consume(self, key: str, expires_at: float) -> bool:
        """True for the first use of ``key`` only, on every worker sharing the store (``expires_at``: wall clock)."""
        ...


class SignInRefused(MinimcpError):
    """A sign-in did not prove who the person is; :attr:`reason` says why in one word (``state``: unknown,
    used or expired; ``issuer``: RFC 9207 mismatch; ``denied``: the authorization server said no;
    ``token``: the code exchange failed; ``identity``: the answer did not name one person;
    ``unavailable``: the authorization server, or the store of used sign-ins, could not be asked (a
    sealed sign-in is then not used up); ``metadata``: it is unfit)."""

    def __init__(self, reason: str, description: str) -> None:
        super().__init__(description)
        self.reason = reason
        self.description = description


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _sign_in_key(key: bytes) -> bytes:
    """The key a sign-in is signed with: derived from a state key (never the key of a URL step or a state)."""
    return hmac.new(key, b"minimcp page sign-in", hashlib.sha256).digest()


def _mac(key: bytes, *parts: str) -> bytes:
    return hmac.new(key, "\x00".join(parts).encode(), hashlib.sha256).digest()


def _derived(key: bytes, sid: str) -> tuple[str, str]:
    """The PKCE verifier (43 characters) and the nonce of the sealed sign-in ``sid``: only the key holder knows them."""
    return _b64(_mac(key, "verifier", sid)), _b64(_mac(key, "nonce", sid)[:18])


class _Pending:
    __slots__ = ("expires_at", "nonce", "return_to", "verifier")

    def __init__(self, verifier: str, nonce: str, return_to: str, expires_at: float) -> None:
        self.verifier, self.nonce, self.return_to, self.expires_at = verifier, nonce, return_to, expires_at


class PageSignIn:
    """The application's own sign-in at ``issuer``, for its pages (see the module docs).

    Args:
        issuer: The authorization server (the one whose tokens the MCP server takes), exactly as its
            metadata's ``issuer`` says it.
        redirect_uri: The page server's callback URL (it calls :meth:`finish` with its query).
        client_id: A pre-registered client; ``None``: :meth:`start` registers one (RFC 7591,
            ``application_type: web``).
        client_secret: The pre-registered client's secret (``client_secret_basic``), if it has one.
        scopes: Asked for (``openid`` is what identifies the person).
        limits: ``max_pending_sign_ins`` bounds the sign-ins begun and not finished (oldest dropped),
            kept in this process when no ``keys`` are given.
        timeout: Seconds a sign-in may take from :meth:`begin` to :meth:`finish`.
        http: An ``httpx.AsyncClient`` to use (else one of its own, closed by :meth:`aclose`).
        keys: The server's state keys (``server.url_step_keys``): the sign-in travels signed in
            ``state`` and any worker sharing the keys finishes it (see the module docs). With
            several workers give a pre-registered ``client_id`` too (one client for all of them).
        used_states: With ``keys``, where each sign-in is used up (``server.used_states``; shared
            by the workers, as ``RedisUsedStates`` is). Required with ``keys``.
    """

    def __init__(
        self,
        issuer: str,
        redirect_uri: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        scopes: Sequence[str] = ("openid",),
        client_name: str = "minimcp pages",
        limits: Limits | None = None,
        timeout: float = 600.0,
        http: httpx.AsyncClient | None = None,
        keys: Sequence[bytes] | None = None,
        used_states: UsedOnce | None = None,
    ) -> None:
        if (keys is None) != (used_states is None):
            raise ValueError("give keys and used_states together (a sealed sign-in is used up in the store)")
        if keys is not None and not keys:
            raise ValueError("keys: give at least one state key")
        self.issuer = issuer
        self.redirect_uri = redirect_uri
        self.client_id = client_id
        self.client_secret = client_secret
        self.scopes = tuple(scopes)
        self.client_name = client_name
        self.max_pending = (limits or Limits()).max_pending_sign_ins
        self.timeout = timeout
        #: The authorization server's metadata (read by :meth:`start`).
        self.metadata: dict[str, Any] = {}
        self._pending: dict[str, _Pending] = {}
        self._keys = tuple(_sign_in_key(key) for key in keys) if keys is not None else None
        self._used = used_states
        self._http = http
        self._own_http = http is None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        return self._http

    async def aclose(self) -> None:
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    async def start(self) -> None:
        """Read the issuer's metadata (its ``issuer`` must be :attr:`issuer` exactly; PKCE ``S256`` must be
        offered) and register the client when none was given.

        Raises:
            SignInRefused: ``metadata`` (no fit document, no S256, no registration endpoint), ``unavailable``.
        """
        for url in discovery_urls(self.issuer):
            answer = await self._call("GET", url)
            if answer.status_code == 200:
                document = answer.json()
                if isinstance(document, dict) and document.get("issuer") == self.issuer:
                    self.metadata = document
                    break
        else:
            raise SignInRefused("metadata", f"no metadata of issuer {self.issuer} names it as its issuer")
        if "S256" not in self.metadata.get("code_challenge_methods_supported", ()):
            raise SignInRefused("metadata", "the authorization server does not say it supports PKCE S256")
        if self.client_id is None:
            await self._register()

    async def _register(self) -> None:
        endpoint = self.metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise SignInRefused("metadata", "no client_id given and the server offers no dynamic registration")
        body = {
            "redirect_uris": [self.redirect_uri],
            "application_type": "web",
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "client_name": self.client_name,
            "scope": " ".join(self.scopes),
        }
        answer = await self._call("POST", endpoint, json=body)
        registered = answer.json() if answer.status_code in (200, 201) else {}
        if not isinstance(registered.get("client_id"), str):
            raise SignInRefused("metadata", f"dynamic registration was refused ({answer.status_code})")
        self.client_id = registered["client_id"]
        self.client_secret = registered.get("client_secret")

    def begin(self, return_to: str) -> tuple[str, str]:
        """Start a sign-in: the authorization URL to redirect the browser to, and its ``state`` (the page
        may keep it in a cookie to tie the callback to the browser). ``return_to``: where :meth:`finish`
        says to go afterwards (the page that asked)."""
        if not self.metadata or self.client_id is None:
            raise RuntimeError("PageSignIn.start() must run first")
        if self._keys is not None:
            state, verifier, nonce = self._seal(return_to)
        else:
            now = time.monotonic()
            pending = self._pending
            for old, entry in list(pending.items()):  # expired first, then the oldest beyond the bound
                if entry.expires_at > now and len(pending) < self.max_pending:
                    break
                del pending[old]
            verifier, state, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(24), secrets.token_urlsafe(24)
            pending[state] = _Pending(verifier, nonce, return_to, now + self.timeout)
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": " ".join(self.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": _b64(hashlib.sha256(verifier.encode("ascii")).digest()),
            "code_challenge_method": "S256",
        }
        endpoint = str(self.metadata["authorization_endpoint"])
        joiner = "&" if urllib.parse.urlsplit(endpoint).query else "?"
        return endpoint + joiner + urllib.parse.urlencode(query), state

    async def finish(self, params: Mapping[str, str]) -> tuple[Principal, str]:
        """End a sign-in with the callback's query parameters: who signed in, and where to go back.

        The ``state`` is used up whatever the outcome (a replay is refused; with ``keys``, on every
        worker sharing ``used_states``).

        Raises:
            SignInRefused: see its reasons; nothing about the person is known then.
        """
        state = params.get("state")
        if self._keys is not None:
            entry = await self._open(state) if isinstance(state, str) else None
        else:
            entry = self._pending.pop(state, None) if isinstance(state, str) else None
            if entry is not None and entry.expires_at <= time.monotonic():
                entry = None
        if entry is None:
            raise SignInRefused("state", "this sign-in is unknown, was used already, or has expired")
        iss = params.get("iss")
        if (iss is not None or self.metadata.get("authorization_response_iss_parameter_supported")) and (
            iss != self.issuer
        ):
            raise SignInRefused("issuer", "the answer does not come from the expected authorization server")
        if "error" in params or "code" not in params:
            raise SignInRefused("denied", f"the authorization server refused: {params.get('error', 'no code')}")
        form = {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": self.redirect_uri,
            "code_verifier": entry.verifier,
        }
        auth: tuple[str, str] | None = None
        if self.client_secret:
            auth = (str(self.client_id), self.client_secret)
        else:
            form["client_id"] = str(self.client_id)
        answer = await self._call("POST", str(self.metadata["token_endpoint"]), data=form, auth=auth)
        tokens = answer.json() if answer.status_code == 200 else {}
        access = tokens.get("access_token") if isinstance(tokens, dict) else None
        if not isinstance(access, str):
            raise SignInRefused("token", f"the code exchange was refused ({answer.status_code})")
        return await self._who(access, tokens.get("id_token"), entry.nonce), entry.return_to

    def _seal(self, return_to: str) -> tuple[str, str, str]:
        """A sealed sign-in: its ``state``, PKCE verifier and nonce (the last two derived, never sent)."""
        assert self._keys is not None
        key, sid = self._keys[0], secrets.token_urlsafe(18)
        signed = ".".join((_SEALED, sid, str(int(time.time() + self.timeout)), _b64(return_to.encode())))
        return f"{signed}.{_b64(_mac(key, 'state', signed)[:_TAG_BYTES])}", *_derived(key, sid)

    async def _open(self, state: str) -> _Pending | None:
        """The sign-in sealed in ``state`` (``None``: forged, expired or used already), used up now."""
        assert self._keys is not None and self._used is not None
        signed, _, tag = state.rpartition(".")
        parts = signed.split(".")
        if len(parts) != 4 or parts[0] != _SEALED or not parts[2].isdigit():
            return None
        key = next((k for k in self._keys if hmac.compare_digest(tag, _b64(_mac(k, "state", signed)[:_TAG_BYTES]))),
                   None)  # fmt: skip
        expires_at = int(parts[2])
        if key is None or expires_at <= time.time():
            return None
        try:
            first = await self._used.consume("signin." + parts[1], float(expires_at))
        except MinimcpError as exc:  # the store cannot tell: refuse, never let a sign-in through twice
            raise SignInRefused("unavailable", "the store of used sign-ins did not answer") from exc
        if not first:
            return None
        return_to = base64.urlsafe_b64decode(parts[3] + "=" * (-len(parts[3]) % 4)).decode()
        return _Pending(*_derived(key, parts[1]), return_to, expires_at)

    async def _who(self, access_token: str, id_token: object, nonce: str) -> Principal:
        claims: dict[str, Any] = {}
        if isinstance(id_token, str):
            claims = _payload(id_token)
            audience = claims.get("aud")
            audiences = audience if isinstance(audience, list) else [audience]
            if claims.get("iss") != self.issuer or self.client_id not in audiences or claims.get("nonce") != nonce:
                raise SignInRefused("identity", "the id_token is not for this sign-in")
        endpoint = self.metadata.get("userinfo_endpoint")
        if isinstance(endpoint, str):
            answer = await self._call("GET", endpoint, headers={"Authorization": f"Bearer {access_token}"})
            info = answer.json() if answer.status_code == 200 else None
            if not isinstance(info, dict) or not isinstance(info.get("sub"), str):
                raise SignInRefused("identity", f"userinfo did not say who signed in ({answer.status_code})")
            if claims and claims.get("sub") != info["sub"]:
                raise SignInRefused("identity", "userinfo and the id_token name different people")
            claims = {**claims, **info}
        if not isinstance(claims.get("sub"), str):
            raise SignInRefused("identity", "neither userinfo nor an id_token said who signed in")
        return Principal(issuer=self.issuer, subject=claims["sub"], client_id=self.client_id, claims=claims)

    async def _call(self, method: str, url: str, **options: Any) -> httpx.Response:
        import httpx

        try:
            return await self.http.request(method, url, **options)
        except httpx.HTTPError as exc:
            why = f"the authorization server did not answer ({type(exc).__name__})"
            raise SignInRefused("unavailable", why) from exc


def _payload(jwt: str) -> dict[str, Any]:
    try:
        part = jwt.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (IndexError, ValueError) as exc:
        raise SignInRefused("identity", "the id_token is not a JWT") from exc
    if not isinstance(claims, dict):
        raise SignInRefused("identity", "the id_token is not a JWT")
    return claims
