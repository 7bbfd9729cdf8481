"""Where OAuth metadata lives: the spec's discovery URL orders and the ``WWW-Authenticate`` challenge, sans-I/O.

Shared by both sides' clients of an authorization server: :mod:`~minimcp.auth.oauth_client` (the MCP
client signing in) and :mod:`~minimcp.auth.signin` (a server's page signing a person in). One
implementation of each order the spec gives:

* Protected Resource Metadata (RFC 9728; MCP 2025-11-25+): the challenge's ``resource_metadata``,
  else the path-inserted well-known URL, else the root one (:func:`resource_metadata_urls`);
* Authorization Server Metadata (RFC 8414 and OpenID Connect Discovery; MCP 2025-11-25+): for an
  issuer with a path, the RFC 8414 path-inserted URL, the OpenID path-inserted one, then the
  OpenID path-appended one; without a path, the two root URLs (:func:`discovery_urls`).
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["Challenge", "discovery_urls", "parse_challenge", "resource_metadata_urls", "resource_matches"]

_PARAM = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))')


class Challenge:
    """A ``Bearer`` (or ``DPoP``) challenge's parameters (RFC 6750 §3, RFC 9449 §7.1): ``error``, ``scope``..."""

    __slots__ = ("params",)

    def __init__(self, params: dict[str, str]) -> None:
        self.params = params

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def scopes(self) -> list[str] | None:
        """The scopes it names (``None``: it names none)."""
        scope = self.params.get("scope")
        return scope.split() if scope else None

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata") or None


def parse_challenge(header: str | None) -> Challenge:
    """The first ``Bearer`` or ``DPoP`` challenge of a ``WWW-Authenticate`` value (empty when there is none)."""
    if not header:
        return Challenge({})
    match = re.search(r"(?i)\b(?:bearer|dpop)\b", header)
    if match is None:
        return Challenge({})
    params: dict[str, str] = {}
    for name, quoted, bare in _PARAM.findall(header, match.end()):
        params.setdefault(name.lower(), re.sub(r"\\(.)", r"\1", quoted) if quoted else bare)
    return Challenge(params)


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients try them (RFC 8414, then OpenID)."""
    parts = urllib.parse.urlsplit(issuer)
    path = parts.path.rstrip("/")
    root = f"{parts.scheme}://{parts.netloc}"
    if not path:
        return [f"{root}/.well-known/oauth-authorization-server", f"{root}/.well-known/openid-configuration"]
    return [
        f"{root}/.well-known/oauth-authorization-server{path}",
        f"{root}/.well-known/openid-configuration{path}",
        f"{root}{path}/.well-known/openid-configuration",
    ]


def resource_metadata_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where the MCP server's Protected Resource Metadata may be, in the spec's order."""
    parts = urllib.parse.urlsplit(server_url)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [challenge.resource_metadata] if challenge.resource_metadata else []
    if path:
        urls.append(f"{root}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{root}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def _origin_and_path(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return f"{scheme}://{host}:{port}", parts.path.rstrip("/")


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether a metadata document's ``resource`` names the server at ``server_url`` (RFC 9728 §3.3): the same
    origin, and the server's path is the resource's path or below it."""
    origin, path = _origin_and_path(resource)
    server_origin, server_path = _origin_and_path(server_url)
    return origin == server_origin and (server_path == path or server_path.startswith(path + "/"))
