"""Authorization on both sides: minimcp as an OAuth 2.1 resource server, and its client signing in at one.

Layer 3.5, between the engine (:mod:`minimcp.core`) and the transports: the server's transports
check a request's bearer token before anything of MCP runs, and the client's HTTP transport meets
the ``401`` that starts a sign-in. A first reading may skip it: nothing below it uses it, neither
side loads it unless given authorization, and stdio never uses it (the spec takes credentials for
stdio from the environment).

Server side, in reading order: :mod:`~minimcp.auth.principal` (who a token names, why one is
refused, the verifier protocol), :mod:`~minimcp.auth.config` (the one object a server is given:
verifier, resource URL, authorization servers, scopes; it checks the issuer and the audience
whatever the verifier), :mod:`~minimcp.auth.request` (a 2026-07-28 request with its person: no session holds
it), then the verifiers (``jwt``: signed access tokens against the issuer's keys;
``introspection``: RFC 7662 for opaque tokens, both fetching through ``fetch``), and ``signin`` (a
page signs the person in at the same authorization server, to check who opened a URL step).

Client side: :mod:`~minimcp.auth.oauth_client` (:class:`OAuthClient`, given to ``connect_http`` or
``connect_websocket`` as ``auth=``: discovery, registration, authorization code with PKCE, refresh, step-up),
:mod:`~minimcp.auth.machine` (clients without a person: client credentials, workload identity,
enterprise-managed authorization), :mod:`~minimcp.auth.dpop` (DPoP proofs, RFC 9449),
:mod:`~minimcp.auth.token_store` (where it keeps tokens and registrations: the protocol and the
in-memory store), :mod:`~minimcp.auth.file_token_store` (the store on disk, a ``0600`` file per
authorization server and resource, as the ``minimcp`` command keeps them). Shared:
:mod:`~minimcp.auth.discovery` (the spec's metadata URL orders and the ``WWW-Authenticate``
challenge). Needs the ``auth`` extra (``pip install minimcp[auth]``) for the
verifiers and the sign-ins (httpx; the client needs only httpx, which the ``http`` extra has too).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minimcp.auth.config import Authorization, canonical_resource
    from minimcp.auth.dpop import DPoP
    from minimcp.auth.file_token_store import FileTokenStore
    from minimcp.auth.introspection import IntrospectionVerifier
    from minimcp.auth.jwt import JWTVerifier
    from minimcp.auth.machine import ClientCredentialsAuth, EnterpriseAuth, JWTBearerAuth
    from minimcp.auth.oauth_client import AuthorizationFailed, Browser, HeadlessBrowser, OAuthClient
    from minimcp.auth.principal import Principal, Refusal, TokenRefused, Verifier
    from minimcp.auth.token_store import ClientCredentials, MemoryTokenStore, Tokens, TokenStore

# This package's public names, each loaded on first use from its module here: a server with
# authorization loads only the verifier it uses (pyjwt for JWTs, httpx for fetches), and importing
# one module of the package (``principal``, say) loads no other.
_LAZY = {
    "Authorization": "config",
    "AuthorizationFailed": "oauth_client",
    "Browser": "oauth_client",
    "ClientCredentials": "token_store",
    "FileTokenStore": "file_token_store",
    "ClientCredentialsAuth": "machine",
    "DPoP": "dpop",
    "EnterpriseAuth": "machine",
    "JWTBearerAuth": "machine",
    "HeadlessBrowser": "oauth_client",
    "MemoryTokenStore": "token_store",
    "OAuthClient": "oauth_client",
    "TokenStore": "token_store",
    "Tokens": "token_store",
    "canonical_resource": "config",
    "IntrospectionVerifier": "introspection",
    "JWTVerifier": "jwt",
    "Principal": "principal",
    "Refusal": "principal",
    "TokenRefused": "principal",
    "Verifier": "principal",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'minimcp.auth' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "Authorization",
    "AuthorizationFailed",
    "Browser",
    "ClientCredentials",
    "FileTokenStore",
    "ClientCredentialsAuth",
    "DPoP",
    "EnterpriseAuth",
    "HeadlessBrowser",
    "MemoryTokenStore",
    "OAuthClient",
    "TokenStore",
    "Tokens",
    "IntrospectionVerifier",
    "JWTBearerAuth",
    "JWTVerifier",
    "Principal",
    "Refusal",
    "TokenRefused",
    "Verifier",
    "canonical_resource",
]
