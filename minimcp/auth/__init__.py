"""Authorization on the server: minimcp as an OAuth 2.1 resource server (opt-in, HTTP and WebSocket).

Layer 3.5, between the engine (:mod:`minimcp.core`) and the transports that check a request's
bearer token before anything of MCP runs. A first reading may skip it: nothing below it uses it, a
server without :class:`~minimcp.auth.config.Authorization` never loads it, and stdio never uses it
(the spec takes credentials for stdio from the environment).

Read in this order: :mod:`~minimcp.auth.principal` (who a token names, why one is refused, the
verifier protocol), :mod:`~minimcp.auth.config` (the one object a server is given: verifier,
resource URL, authorization servers, scopes; it checks the audience whatever the verifier),
:mod:`~minimcp.auth.request` (a 2026-07-28 request with its person: no session holds it), then
the verifiers (``jwt``: signed access tokens against the issuer's keys; ``introspection``: RFC 7662
for opaque tokens), and ``signin`` (a page signs the person in at the same authorization server,
to check who opened a URL step). Needs the ``auth`` extra (``pip install minimcp[auth]``) for the
verifiers and the sign-in only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minimcp.auth.config import Authorization, canonical_resource
    from minimcp.auth.introspection import IntrospectionVerifier
    from minimcp.auth.jwt import JWTVerifier
    from minimcp.auth.principal import Principal, Refusal, TokenRefused, Verifier

# This package's public names, each loaded on first use from its module here: a server with
# authorization loads only the verifier it uses (pyjwt for JWTs, httpx for fetches), and importing
# one module of the package (``principal``, say) loads no other.
_LAZY = {
    "Authorization": "config",
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
    "IntrospectionVerifier",
    "JWTVerifier",
    "Principal",
    "Refusal",
    "TokenRefused",
    "Verifier",
    "canonical_resource",
]
