"""The client side of MCP authorization: OAuth 2.1 authorization code with PKCE, run when a server answers 401.

:class:`OAuthClient` is an ``httpx.Auth``: given to the HTTP client transport
(``connect_http(url, auth=OAuthClient(...))``), it puts ``Authorization: Bearer`` on every request
(POST, GET streams, DELETE; both protocol eras) and, when the server answers ``401``, signs in and
sends the request again:

1. **Discovery** (:mod:`~minimcp.auth.discovery`): the Protected Resource Metadata from the
   challenge's ``resource_metadata``, else the path-inserted well-known URL, else the root; its
   ``resource`` must name the server (else nothing more happens: no authorization starts). The
   authorization server's metadata by the spec's URL order; its ``issuer`` must be the one used.
   Servers of revision 2025-03-26 have no resource metadata: the authorization server is then the
   MCP server's origin, and without metadata its endpoints are ``/authorize``, ``/token`` and
   ``/register`` there.
2. **Registration**, in the spec's order: the application's pre-registered client (``client_id``,
   ``client_secret``), its Client ID Metadata Document (``client_metadata_url``) when the server
   says ``client_id_metadata_document_supported``, dynamic registration (RFC 7591,
   ``application_type: native``), else :class:`AuthorizationFailed` saying what to configure.
   Registrations are kept per authorization server and never used with another (SEP-2352).
3. **Authorization**: PKCE ``S256`` (refused when the metadata does not list it, unless
   ``allow_unlisted_pkce``), ``state``, the RFC 9207 ``iss`` checks, ``resource`` (RFC 8707) in the
   authorization and token requests, the token endpoint's client authentication as registered
   (``client_secret_basic``, ``client_secret_post``, ``none``). The browser step is the
   application's :data:`Browser` handler: it gets the authorization URL and answers the redirect's
   query parameters (:class:`HeadlessBrowser` fetches the URL and reads the redirect, for tests
   and servers that sign in without a person).
4. **Scopes**: the application's, else the challenge's ``scope``, else the metadata's
   ``scopes_supported``, else none; ``offline_access`` added only when the authorization server
   lists it. A ``403 insufficient_scope`` signs in again for the union of what was asked and what
   the challenge names; at most ``max_authorizations`` sign-ins per request, the first included.
5. **Refresh** shortly before expiry and after a ``401``; ``invalid_grant`` forgets the stored tokens
   and signs in from the start.

With ``dpop=True`` the tokens are bound to a key of the client's where the authorization server
offers DPoP (:mod:`~minimcp.auth.dpop`). The clients without a browser (client credentials,
workload identity, enterprise-managed authorization) are this class with another grant
(:mod:`~minimcp.auth.machine`). Tokens live in a :class:`~minimcp.auth.token_store.TokenStore`
(in memory by default). No token, code or secret is logged. Needs httpx (the ``http`` or ``auth``
extra), imported here only.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import logging
import secrets
import time
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import msgspec

from minimcp.auth.config import canonical_resource
from minimcp.auth.discovery import Challenge, discovery_urls, parse_challenge, resource_matches, resource_metadata_urls
from minimcp.auth.token_store import ClientCredentials, MemoryTokenStore, Tokens, TokenStore
from minimcp.core.config import Limits
from minimcp.wire.errors import MinimcpError

if TYPE_CHECKING:
    from minimcp.auth.dpop import DPoP

__all__ = ["AuthorizationFailed", "Browser", "HeadlessBrowser", "OAuthClient"]

logger = logging.getLogger("minimcp.auth")

#: The browser step: gets the authorization URL, answers the query parameters of the redirect back.
Browser = Callable[[str], Awaitable[Mapping[str, str]]]

_OFFLINE = "offline_access"
_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_NONCE_RETRIES = 2  # a server's use_dpop_nonce answers honoured per request (a nonce may rotate once)


class AuthorizationFailed(MinimcpError):
    """Signing in at the server's authorization server did not give a token; :attr:`reason` says where it
    stopped in one word (``discovery``, ``resource``, ``metadata``, ``pkce``, ``registration``,
    ``browser``, ``state``, ``issuer``, ``denied``, ``token``, ``unavailable``)."""

    def __init__(self, reason: str, description: str, *, error: str | None = None) -> None:
        super().__init__(description)
        self.reason = reason
        self.description = description
        #: The authorization server's OAuth error code (``invalid_grant``, ``invalid_scope``...), when it gave one.
        self.error = error


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _server_url(url: httpx.URL) -> str:
    """The MCP endpoint a request went to (no query, no fragment)."""
    return str(url.copy_with(query=None, fragment=None))


def basic_authorization(client_id: str, client_secret: str) -> str:
    """An ``Authorization: Basic`` value for a client (RFC 6749 §2.3.1: both parts form-encoded first)."""
    pair = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def _with_query(url: str, params: Mapping[str, str]) -> str:
    return url + ("&" if urllib.parse.urlsplit(url).query else "?") + urllib.parse.urlencode(params)


class HeadlessBrowser:
    """A :data:`Browser` without a person: GETs the authorization URL (with ``extra_params`` added, e.g.
    ``{"login_hint": ...}``), does not follow the redirect, and answers its ``Location``'s query.

    For tests, the conformance suite's mock authorization servers, and servers that sign in at once.
    """

    def __init__(self, extra_params: Mapping[str, str] | None = None, *, timeout: float = 10.0) -> None:
        self.extra_params = dict(extra_params or {})
        self.timeout = timeout

    async def __call__(self, authorization_url: str) -> Mapping[str, str]:
        url = _with_query(authorization_url, self.extra_params) if self.extra_params else authorization_url
        async with _client(self.timeout) as http:
            try:
                response = await http.get(url)
            except httpx.HTTPError as exc:
                raise AuthorizationFailed(
                    "browser", f"the authorization page did not answer ({type(exc).__name__})"
                ) from None
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise AuthorizationFailed(
                "browser", f"the authorization page did not redirect (HTTP {response.status_code})"
            )
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query, keep_blank_values=True))


def _client(timeout: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False)


class _Binding:
    """What one sign-in learnt about a server: its resource, authorization server, and what was asked."""

    __slots__ = ("issuer", "metadata", "resource", "scopes", "server_url")

    def __init__(self, server_url: str, resource: str, issuer: str, metadata: dict[str, Any]) -> None:
        self.server_url = server_url
        self.resource = resource
        self.issuer = issuer
        self.metadata = metadata
        self.scopes: list[str] = []


class OAuthClient(httpx.Auth):
    """Signs the application in at an MCP server's authorization server (see the module docs).

    Args:
        browser: The browser step (required unless a stored token always suffices).
        redirect_uri: Where the authorization server sends the browser back (registered with it).
        client_id: A pre-registered client (with ``client_secret`` when confidential).
        client_secret: Its secret (``client_secret_basic`` unless the server lists only ``client_secret_post``).
        client_issuer: The authorization server the pre-registered client belongs to (``None``: any).
        client_metadata_url: The https URL of the application's Client ID Metadata Document.
        client_name: Sent in dynamic registration.
        scopes: Asked for at first sign-in (``None``: the challenge's, else the server's).
        offline_access: Ask for ``offline_access`` (a refresh token) when the authorization server lists it.
        store: Where tokens and registrations are kept (default: in memory, for this object's life).
        allow_unlisted_pkce: Proceed when the metadata does not list ``code_challenge_methods_supported``
            (some servers support S256 without saying so); the spec says to refuse.
        max_authorizations: Sign-ins for one request at most, the first (on ``401``) and those for more
            scopes (on ``403 insufficient_scope``) together.
        refresh_margin: Seconds before expiry when a token is refreshed before use.
        http: An ``httpx.AsyncClient`` for the authorization server (yours: never closed); else one per sign-in.
        limits: ``auth_fetch_timeout`` and ``max_auth_response_bytes`` bound each request to the authorization server.
        dpop: Ask for DPoP-bound tokens (RFC 9449) where the authorization server lists ES256 in
            ``dpop_signing_alg_values_supported``: ``True`` makes a key for this object's life, a
            :class:`~minimcp.auth.dpop.DPoP` brings the application's (needs the ``auth`` extra).
    """

    requires_request_body = True
    #: The grant needs a browser (authorization code with PKCE); the machine clients' grants do not.
    interactive = True

    def __init__(
        self,
        browser: Browser | None = None,
        *,
        redirect_uri: str = "http://127.0.0.1/callback",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_issuer: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "minimcp",
        scopes: Sequence[str] | None = None,
        offline_access: bool = True,
        store: TokenStore | None = None,
        allow_unlisted_pkce: bool = False,
        max_authorizations: int = 3,
        refresh_margin: float = 30.0,
        http: httpx.AsyncClient | None = None,
        limits: Limits | None = None,
        dpop: bool | DPoP = False,
    ) -> None:
        self.browser = browser
        self.redirect_uri = redirect_uri
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_issuer = client_issuer
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.scopes = list(scopes) if scopes is not None else None
        self.offline_access = offline_access
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.allow_unlisted_pkce = allow_unlisted_pkce
        self.max_authorizations = max_authorizations
        self.refresh_margin = refresh_margin
        self._http = http
        self._limits = limits or Limits()
        self._binding: _Binding | None = None
        self._tokens: Tokens | None = None
        self._lock: anyio.Lock | None = None
        self._flow_http: httpx.AsyncClient | None = None
        self._dpop_option = dpop
        self._dpop: DPoP | None = None

    # --- httpx.Auth -----------------------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("OAuthClient works with httpx.AsyncClient only")
        yield request  # pragma: no cover

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server_url = _server_url(request.url)
        sent = await self._usable_token(server_url)
        self._authorize_request(request, sent)
        response = yield request
        refreshed = signed_in = False
        authorizations = nonces = 0
        while response.status_code in (401, 403):
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if (
                self._dpop is not None
                and self._dpop.remember_nonce(str(request.url), response.headers)
                and challenge.error == "use_dpop_nonce"
                and nonces < _NONCE_RETRIES
            ):
                nonces += 1  # RFC 9449 §9: the same request again, its proof carrying the server's nonce
            elif response.status_code == 401:
                if signed_in:
                    return  # a fresh token was refused: the server's answer stands
                async with self._guard():
                    if self._tokens is not None and self._tokens is not sent:
                        pass  # another request signed in meanwhile: try its token
                    elif sent is not None and not refreshed and await self._refreshed():
                        refreshed = True
                    else:
                        async with self._flow():
                            signed_in = await self._sign_in(server_url, challenge, sent)
                        authorizations += signed_in
                    sent = self._tokens
            else:
                if challenge.error != "insufficient_scope" or authorizations >= self.max_authorizations:
                    return
                authorizations += 1
                async with self._guard():
                    asked = self._binding.scopes if self._binding is not None else []
                    wanted = list(dict.fromkeys([*asked, *(challenge.scopes or [])]))
                    logger.info("the server wants more scopes (%s): signing in again", " ".join(challenge.scopes or []))
                    async with self._flow():
                        await self._sign_in(server_url, challenge, sent, scopes=wanted)
                    sent = self._tokens
            self._authorize_request(request, sent)
            response = yield request
        if self._dpop is not None:
            self._dpop.remember_nonce(str(request.url), response.headers)  # a server may rotate it on any answer

    # --- tokens ---------------------------------------------------------------------------------

    def _guard(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def _authorize_request(self, request: httpx.Request, tokens: Tokens | None) -> None:
        if tokens is None:
            return
        if tokens.token_type.lower() == "dpop" and self._dpop is not None:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = self._dpop.proof(request.method, str(request.url), tokens.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    async def _usable_token(self, server_url: str) -> Tokens | None:
        """The token to send to ``server_url`` (renewed first when it is about to expire), if any."""
        binding = self._binding
        if binding is None or binding.server_url != server_url:
            return None  # never send a token before its server's authorization server is known
        tokens = self._tokens
        renewable = tokens is not None and (tokens.refresh_token is not None or not self.interactive)
        if tokens is not None and renewable and tokens.expires_within(self.refresh_margin):
            async with self._guard():
                if self._tokens is tokens:
                    await self._refreshed()
            tokens = self._tokens
        return tokens

    async def _refreshed(self) -> bool:
        async with self._flow():
            return await self._refresh()

    async def _refresh(self) -> bool:
        """Refresh the current token; False when it cannot be (``invalid_grant`` forgets the stored tokens)."""
        binding, tokens = self._binding, self._tokens
        if binding is None or tokens is None:
            return False
        if not tokens.refresh_token:
            return await self._grant_again(binding)
        client = await self.store.get_client(binding.issuer)
        if client is None:
            return False
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "resource": binding.resource}
        status, answer = await self._token_request(binding, client, form)
        if status != 200:
            if answer.get("error") == "invalid_grant":
                logger.info("the refresh token was refused (invalid_grant): signing in again")
                await self.store.set_tokens(binding.issuer, binding.resource, None)
            else:
                logger.warning("refreshing the token failed (HTTP %d %s)", status, answer.get("error", ""))
            self._tokens = None
            return False
        fresh = self._tokens_of(answer, tokens.refresh_token)
        await self.store.set_tokens(binding.issuer, binding.resource, fresh)
        self._tokens = fresh
        logger.debug("token refreshed at %s", binding.issuer)
        return True

    async def _grant_again(self, binding: _Binding) -> bool:
        """A new token without a refresh token, where the grant needs no person (the machine clients); else False."""
        return False

    @contextlib.asynccontextmanager
    async def _flow(self) -> AsyncIterator[None]:
        """One HTTP client for the requests of one sign-in or refresh (unless the application gave one)."""
        if self._http is not None or self._flow_http is not None:
            yield
            return
        make = functools.partial(_client, self._limits.auth_fetch_timeout)
        self._flow_http = await anyio.to_thread.run_sync(make)  # loads TLS certificates: off the loop
        try:
            yield
        finally:
            http, self._flow_http = self._flow_http, None
            await http.aclose()

    # --- signing in -----------------------------------------------------------------------------

    async def _sign_in(
        self, server_url: str, challenge: Challenge, refused: Tokens | None, *, scopes: list[str] | None = None
    ) -> bool:
        """Sign in (True), or adopt tokens the store kept for this server and authorization server (False)."""
        binding, prm = await self._discover(server_url, challenge)
        if scopes is None:
            stored = await self.store.get_tokens(binding.issuer, binding.resource)
            if stored is not None and (refused is None or stored.access_token != refused.access_token):
                binding.scopes = (stored.scope or "").split()  # kept from before (by another process, say)
                self._binding, self._tokens = binding, stored
                return False
        client = await self._client_for(binding)
        if scopes is None:
            scopes = self.scopes or challenge.scopes or list(prm.get("scopes_supported") or [])
        supported = binding.metadata.get("scopes_supported")
        asked = [s for s in scopes if s != _OFFLINE or (isinstance(supported, list) and _OFFLINE in supported)]
        if self.offline_access and asked and isinstance(supported, list) and _OFFLINE in supported:
            asked = list(dict.fromkeys([*asked, _OFFLINE]))
        binding.scopes = [s for s in asked if s != _OFFLINE]
        answer = await self._grant(binding, client, asked)
        self._binding, self._tokens = binding, self._tokens_of(answer, None)
        await self.store.set_tokens(binding.issuer, binding.resource, self._tokens)
        logger.info("signed in at %s", binding.issuer)
        return True

    def _dpop_for(self, binding: _Binding) -> DPoP | None:
        """The DPoP key to prove possession of at ``binding``'s authorization server, if DPoP is used there."""
        option = self._dpop_option
        if option is False:
            return None
        if self._dpop is None:
            algorithms = binding.metadata.get("dpop_signing_alg_values_supported")
            if not isinstance(algorithms, list) or "ES256" not in algorithms:
                return None
            if option is True:
                from minimcp.auth.dpop import DPoP  # pyjwt[crypto]: only for a client that uses DPoP

                self._dpop = DPoP()
            else:
                self._dpop = option
        return self._dpop

    async def _grant(self, binding: _Binding, client: ClientCredentials, asked: list[str]) -> dict[str, Any]:
        """The token endpoint's answer (with an ``access_token``) for this client's grant: authorization code + PKCE."""
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(24)
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": client.redirect_uri or self.redirect_uri,
            "code_challenge": _b64(hashlib.sha256(verifier.encode("ascii")).digest()),
            "code_challenge_method": "S256",
            "state": state,
            "resource": binding.resource,
        }
        if asked:
            query["scope"] = " ".join(asked)
        if self.browser is None:
            raise AuthorizationFailed("browser", "signing in needs a browser handler (OAuthClient(browser=...))")
        logger.info("signing in at %s for %s", binding.issuer, binding.resource)
        answer = await self.browser(_with_query(str(binding.metadata["authorization_endpoint"]), query))
        self._check_redirect(binding, answer, state)
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": query["redirect_uri"],
            "code_verifier": verifier,
            "resource": binding.resource,
        }
        return await self._granted(binding, client, form, "the code")

    async def _granted(
        self, binding: _Binding, client: ClientCredentials, form: dict[str, str], what: str
    ) -> dict[str, Any]:
        """The token endpoint's answer to ``form``; :class:`AuthorizationFailed` (once: no retry) unless a token."""
        status, tokens = await self._token_request(binding, client, form)
        if status != 200 or not isinstance(tokens.get("access_token"), str):
            error = tokens.get("error")
            detail = f"{error or 'no access_token'} {tokens.get('error_description') or ''}".strip()
            raise AuthorizationFailed(
                "token",
                f"the token endpoint refused {what} (HTTP {status} {detail})",
                error=error if isinstance(error, str) else None,
            )
        return tokens

    def _check_redirect(self, binding: _Binding, answer: Mapping[str, str], state: str) -> None:
        """The redirect's ``state`` and ``iss`` (RFC 9207: compared as strings), then its outcome."""
        got = answer.get("state")
        if not isinstance(got, str) or not hmac.compare_digest(got, state):
            raise AuthorizationFailed("state", "the redirect's state is not the one sent")
        iss = answer.get("iss")
        if iss is not None and iss != binding.issuer:
            raise AuthorizationFailed("issuer", "the redirect comes from another authorization server (iss)")
        if iss is None and binding.metadata.get("authorization_response_iss_parameter_supported") is True:
            raise AuthorizationFailed("issuer", "the authorization server promised iss on its redirect and sent none")
        if "error" in answer or not answer.get("code"):
            error = answer.get("error", "no code")
            raise AuthorizationFailed(
                "denied", f"the authorization server refused: {error} {answer.get('error_description', '')}".strip()
            )

    async def _discover(self, server_url: str, challenge: Challenge) -> tuple[_Binding, dict[str, Any]]:
        """The server's resource and authorization server (its metadata), and its resource metadata."""
        prm: dict[str, Any] = {}
        for url in resource_metadata_urls(server_url, challenge):
            status, document = await self._call("GET", url)
            if status == 200 and document:
                prm = document
                break
        if prm:
            resource = prm.get("resource")
            if not isinstance(resource, str) or not resource_matches(resource, server_url):
                raise AuthorizationFailed(
                    "resource",
                    f"the server's resource metadata names another resource ({resource!r}), not {server_url}",
                )
            servers = prm.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise AuthorizationFailed("discovery", "the server's resource metadata names no authorization server")
            issuer = servers[0]
        else:  # revision 2025-03-26: the MCP server's origin is the authorization server
            resource, issuer = canonical_resource(server_url), _origin(server_url)
        metadata: dict[str, Any] = {}
        for url in discovery_urls(issuer):
            status, document = await self._call("GET", url)
            if status == 200 and document:
                named = document.get("issuer")
                if named == issuer or (not prm and isinstance(named, str) and _origin(named) == issuer):
                    # 2025-03-26 (no resource metadata): the document is the MCP server's own, from its origin;
                    # that revision does not ask its issuer to be the origin (servers of then often name a path).
                    metadata, issuer = document, named
                    break
                logger.warning("ignored the metadata at %s: its issuer is not %s", url, issuer)
        if not metadata:
            if prm:
                raise AuthorizationFailed(
                    "metadata", f"no metadata of authorization server {issuer} names it as issuer"
                )
            metadata = {  # 2025-03-26 without metadata: the default endpoints at the server's origin
                "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": f"{issuer}/token",
                "registration_endpoint": f"{issuer}/register",
            }
        elif self.interactive:
            methods = metadata.get("code_challenge_methods_supported")
            if methods is None and not self.allow_unlisted_pkce:
                raise AuthorizationFailed(
                    "pkce",
                    f"{issuer} does not list code_challenge_methods_supported, so PKCE S256 is not known to work "
                    "(OAuthClient(allow_unlisted_pkce=True) for a server known to support it)",
                )
            if methods is not None and (not isinstance(methods, list) or "S256" not in methods):
                raise AuthorizationFailed("pkce", f"{issuer} does not support PKCE S256")
        for key in ("authorization_endpoint", "token_endpoint") if self.interactive else ("token_endpoint",):
            if not isinstance(metadata.get(key), str):
                raise AuthorizationFailed("metadata", f"the metadata of {issuer} has no {key}")
        return _Binding(server_url, resource, issuer, metadata), prm

    async def _client_for(self, binding: _Binding) -> ClientCredentials:
        """The registration to use at ``binding``'s authorization server, registering when there is none."""
        stored = await self.store.get_client(binding.issuer)
        if stored is not None:
            return stored
        metadata = binding.metadata
        methods = metadata.get("token_endpoint_auth_methods_supported")
        if self.client_id is not None and self.client_issuer in (None, binding.issuer):
            method = "none"
            if self.client_secret is not None:
                method = "client_secret_post" if methods == ["client_secret_post"] else "client_secret_basic"
            client = ClientCredentials(self.client_id, self.client_secret, method)
        elif self.client_metadata_url is not None and metadata.get("client_id_metadata_document_supported") is True:
            client = ClientCredentials(self.client_metadata_url, None, "none")
        elif isinstance(metadata.get("registration_endpoint"), str):
            client = await self._register(binding, methods)
        else:
            raise AuthorizationFailed(
                "registration",
                f"{binding.issuer} offers no dynamic registration: give OAuthClient a client_id (pre-registered "
                "there) or a client_metadata_url (if it supports Client ID Metadata Documents)",
            )
        await self.store.set_client(binding.issuer, client)
        return client

    async def _register(self, binding: _Binding, methods: object) -> ClientCredentials:
        method = "client_secret_basic"
        if isinstance(methods, list):
            method = next((m for m in _AUTH_METHODS if m in methods), method)
        body = {
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "application_type": "native",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        }
        status, answer = await self._call("POST", str(binding.metadata["registration_endpoint"]), json=body)
        if status not in (200, 201) or not isinstance(answer.get("client_id"), str):
            raise AuthorizationFailed(
                "registration",
                f"{binding.issuer} refused dynamic registration (HTTP {status} {answer.get('error', '')})",
            )
        secret = answer.get("client_secret")
        method = str(answer.get("token_endpoint_auth_method") or method)
        if method not in _AUTH_METHODS:
            method = "client_secret_basic" if isinstance(secret, str) else "none"
        logger.info("registered at %s", binding.issuer)
        return ClientCredentials(
            answer["client_id"], secret if isinstance(secret, str) else None, method, self.redirect_uri
        )

    async def _token_request(
        self, binding: _Binding, client: ClientCredentials, form: dict[str, str]
    ) -> tuple[int, dict[str, Any]]:
        """POST ``form`` to the token endpoint with the client's authentication (and a DPoP proof when used)."""
        endpoint = str(binding.metadata["token_endpoint"])
        headers: dict[str, str] = {}
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic" and client.client_secret is not None:
            headers["Authorization"] = basic_authorization(client.client_id, client.client_secret)
        elif client.client_id:  # none of it for an anonymous grant (RFC 7523 §3.1: client authentication optional)
            form = {**form, "client_id": client.client_id}
            if method == "client_secret_post" and client.client_secret is not None:
                form["client_secret"] = client.client_secret
        dpop = self._dpop_for(binding)
        for attempt in range(_NONCE_RETRIES + 1):
            if method == "private_key_jwt":  # a fresh assertion (its own jti) per request
                form = {**form, "client_assertion_type": _ASSERTION_TYPE}
                form["client_assertion"] = self._client_assertion(binding, client)
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", endpoint)
            status, answer, answer_headers = await self._call_with_headers(
                "POST", endpoint, data=form, headers=dict(headers)
            )
            if dpop is None or not dpop.remember_nonce(endpoint, answer_headers):
                break
            if status != 400 or answer.get("error") != "use_dpop_nonce" or attempt == _NONCE_RETRIES:
                break  # RFC 9449 §8: a new nonce on an error other than use_dpop_nonce is kept for next time
        return status, answer

    def _client_assertion(self, binding: _Binding, client: ClientCredentials) -> str:
        """A ``private_key_jwt`` client assertion (RFC 7523 §2.2); only the machine clients hold a key."""
        raise AuthorizationFailed("registration", f"{client.client_id} authenticates with a key this client lacks")

    @staticmethod
    def _tokens_of(answer: dict[str, Any], refresh_token: str | None) -> Tokens:
        expires_in = answer.get("expires_in")
        refresh = answer.get("refresh_token")
        scope = answer.get("scope")
        return Tokens(
            access_token=str(answer["access_token"]),
            token_type=str(answer.get("token_type") or "Bearer"),
            refresh_token=refresh if isinstance(refresh, str) else refresh_token,
            expires_at=time.time() + expires_in if isinstance(expires_in, int | float) else None,
            scope=scope if isinstance(scope, str) else None,
        )

    async def _call(self, method: str, url: str, **options: Any) -> tuple[int, dict[str, Any]]:
        """One request to an authorization server: its status and JSON object (empty when it is none)."""
        status, document, _ = await self._call_with_headers(method, url, **options)
        return status, document

    async def _call_with_headers(
        self, method: str, url: str, **options: Any
    ) -> tuple[int, dict[str, Any], httpx.Headers]:
        """:meth:`_call`, and the answer's headers."""
        limit = self._limits.max_auth_response_bytes
        timeout = self._limits.auth_fetch_timeout
        body = bytearray()
        try:
            with anyio.fail_after(timeout):
                http = self._http or self._flow_http
                own = http is None
                if http is None:
                    http = await anyio.to_thread.run_sync(functools.partial(_client, timeout))
                try:
                    headers = {"Accept": "application/json", **options.pop("headers", {})}
                    async with http.stream(method, url, headers=headers, **options) as response:
                        status, answer_headers = response.status_code, response.headers
                        async for chunk in response.aiter_bytes():
                            body += chunk
                            if len(body) > limit:
                                raise AuthorizationFailed("unavailable", f"{method} {url}: answer over {limit} bytes")
                finally:
                    if own:
                        await http.aclose()
        except TimeoutError:
            raise AuthorizationFailed("unavailable", f"{method} {url}: no answer within {timeout} s") from None
        except httpx.HTTPError as exc:
            raise AuthorizationFailed("unavailable", f"{method} {url}: {type(exc).__name__}") from None
        try:
            document = msgspec.json.decode(bytes(body)) if body else {}
        except msgspec.DecodeError:
            document = {}
        return status, document if isinstance(document, dict) else {}, answer_headers
