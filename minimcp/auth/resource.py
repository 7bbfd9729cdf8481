"""What a protected resource tells clients: its metadata (RFC 9728) and its challenges (RFC 6750)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection
from typing import Any

import msgspec

from minimcp.auth.config import Authorization
from minimcp.auth.principal import TokenRefused

__all__ = ["challenge", "invalid_request", "metadata", "metadata_paths", "metadata_url"]

_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_paths(auth: Authorization) -> tuple[str, ...]:
    """The paths the metadata is served at: path-inserted (``/.well-known/oauth-protected-resource/mcp``)
    first, then the root one (clients try them in this order)."""
    path = urllib.parse.urlsplit(auth.resource).path.rstrip("/")
    return (_WELL_KNOWN + path, _WELL_KNOWN) if path else (_WELL_KNOWN,)


def metadata_url(auth: Authorization) -> str:
    """The URL of the metadata a ``401`` points to (``resource_metadata=``): the path-inserted one."""
    parts = urllib.parse.urlsplit(auth.resource)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, metadata_paths(auth)[0], "", ""))


def metadata(auth: Authorization) -> bytes:
    """The protected resource metadata document (RFC 9728 §2), as JSON."""
    document: dict[str, Any] = {
        "resource": auth.resource,
        "authorization_servers": list(auth.authorization_servers),
        "bearer_methods_supported": ["header"],
    }
    if auth.scopes_supported:
        document["scopes_supported"] = list(auth.scopes_supported)
    if auth.resource_name:
        document["resource_name"] = auth.resource_name
    return msgspec.json.encode(document)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(auth: Authorization, refused: TokenRefused | None = None, scopes: Collection[str] = ()) -> str:
    """A ``WWW-Authenticate`` value: ``Bearer resource_metadata="…"``, the scopes the request needs
    (``scope="…"``: ``scopes``, else the server's ``challenge_scopes``), and, for a refused
    token, ``error="invalid_token"`` with the refusal's description (a missing token gets no error,
    RFC 6750 §3.1). ``refused`` None with ``scopes``: ``error="insufficient_scope"`` (a ``403``).
    """
    needed = sorted(scopes or auth.challenge_scopes)
    parts = [f"resource_metadata={_quoted(metadata_url(auth))}"]
    if needed:
        parts.append(f"scope={_quoted(' '.join(needed))}")
    if refused is not None and refused.reason != "missing":
        parts.append('error="invalid_token"')
        parts.append(f"error_description={_quoted(refused.description)}")
    elif refused is None and scopes:
        parts.append('error="insufficient_scope"')
        parts.append(f"error_description={_quoted('this operation needs more scopes than the token has')}")
    return "Bearer " + ", ".join(parts)


def invalid_request(auth: Authorization, description: str) -> str:
    """A ``WWW-Authenticate`` value for a malformed request (a ``400``, RFC 6750 §3.1 ``invalid_request``): a token
    sent another way than the ``Authorization`` header, say."""
    parts = [
        f"resource_metadata={_quoted(metadata_url(auth))}",
        'error="invalid_request"',
        f"error_description={_quoted(description)}",
    ]
    return "Bearer " + ", ".join(parts)
