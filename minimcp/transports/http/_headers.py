"""The request metadata headers of Streamable HTTP on revision 2026-07-28, sans-I/O.

Every modern POST mirrors parts of its JSON-RPC body into HTTP headers, so
that gateways can route without parsing the body:

* ``MCP-Protocol-Version`` = ``params._meta["io.modelcontextprotocol/protocolVersion"]``;
* ``Mcp-Method`` = ``method``;
* ``Mcp-Name`` = ``params.name`` (``tools/call``, ``prompts/get``) or
  ``params.uri`` (``resources/read``);
* ``Mcp-Param-{Name}`` = the ``tools/call`` argument whose ``inputSchema``
  property carries ``"x-mcp-header": "{Name}"``.

A value that is not plain visible ASCII (or has edge whitespace, or itself
looks like the sentinel) travels as ``=?base64?<base64 of UTF-8>?=``. The
server decodes before comparing; any missing, mismatching or malformed header
is a ``-32020`` (HeaderMismatch) error with HTTP 400.

No event loop, no sockets: the client builds headers and the server checks
them with these functions.

Also here: the ``Host`` / ``Origin`` allow-list check (DNS rebinding and
cross-site requests) that every HTTP route we serve applies, on every
revision -- the MCP endpoint, and the pages an application serves beside it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import msgspec

from minimcp.wire.versions import META_VERSION

__all__ = [
    "NAMED_METHODS",
    "ParamHeader",
    "decode_value",
    "encode_value",
    "header_problem",
    "host_allowed",
    "host_origin_problem",
    "param_headers",
    "request_headers",
]

#: Methods whose ``Mcp-Name`` header mirrors a body field, and which field.
NAMED_METHODS: dict[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_PREFIX = "=?base64?"
_SUFFIX = "?="
# RFC 9110 token (field names): 1*tchar
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Visible ASCII, with spaces and tabs allowed inside (RFC 9110 field values).
_PLAIN = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?")
_PRIMITIVES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1
# Keywords whose values are data, not schemas (never walked for annotations).
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples", "example"})


def _is_sentinel(value: str) -> bool:
    return value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= len(_PREFIX) + len(_SUFFIX)


def encode_value(value: str) -> str:
    """A header value for ``value``: as is when plain visible ASCII, else the base64 sentinel."""
    if value == "" or (_PLAIN.fullmatch(value) is not None and not _is_sentinel(value)):
        return value
    return _PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SUFFIX


def decode_value(raw: str) -> str | None:
    """The value a header carries (the sentinel decoded); ``None`` when it is malformed."""
    value = raw.strip(" \t")
    if not _is_sentinel(value):
        return value if value == "" or _PLAIN.fullmatch(value) else None
    payload = value[len(_PREFIX) : -len(_SUFFIX)].encode("ascii", "replace")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded) != payload:  # only the canonical form (exact padding)
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, ValueError):  # bad alphabet or padding, or not UTF-8
        return None


# --- x-mcp-header annotations ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ParamHeader:
    """One ``x-mcp-header`` annotation: where the argument is, and the header's name part."""

    path: tuple[str, ...]
    name: str
    type: str

    @property
    def header(self) -> str:
        """The header name, lower case (as ASGI and httpx present them)."""
        return "mcp-param-" + self.name.lower()


def param_headers(schema: Any) -> tuple[ParamHeader, ...]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``.

    Raises:
        ValueError: an annotation breaks the rules (empty or not a token, not on
            a string / integer / boolean property, not reachable from the root
            through ``properties`` alone, or not unique ignoring case); the
            message says which. A client drops such a tool from ``tools/list``.
    """
    found: list[ParamHeader] = []
    _walk(schema, (), found)
    seen: set[str] = set()
    for item in found:
        key = item.name.lower()
        if key in seen:
            raise ValueError(f"x-mcp-header {item.name!r} is used twice (names are case-insensitive)")
        seen.add(key)
    return tuple(found)


def _walk(node: Any, path: tuple[str, ...] | None, out: list[ParamHeader]) -> None:
    """Collect annotations; ``path`` is the ``properties`` chain to ``node`` (None: not reachable)."""
    if isinstance(node, list):
        for item in node:
            _walk(item, None, out)
        return
    if not isinstance(node, dict):
        return
    if "x-mcp-header" in node:
        name = node["x-mcp-header"]
        where = "/".join(path) if path else "the schema root"
        if not path:
            raise ValueError(f"x-mcp-header at {where} is not on a property reachable through 'properties' alone")
        if not isinstance(name, str) or not name:
            raise ValueError(f"x-mcp-header of {where} is empty or not a string")
        if _TOKEN.fullmatch(name) is None:
            raise ValueError(f"x-mcp-header {name!r} of {where} is not an HTTP token")
        kind = node.get("type")
        if kind not in _PRIMITIVES:
            raise ValueError(f"x-mcp-header {name!r} of {where} is on a {kind!r} property (string, integer or boolean)")
        out.append(ParamHeader(path, name, str(kind)))
    for key, value in node.items():
        if key in _DATA_KEYWORDS or key == "x-mcp-header":
            continue
        if key == "properties" and isinstance(value, dict):
            for prop, sub in value.items():
                _walk(sub, None if path is None else (*path, str(prop)), out)
        else:
            _walk(value, None, out)


def _argument(arguments: Any, path: tuple[str, ...]) -> Any:
    """The argument at ``path`` (``None`` when absent)."""
    value = arguments
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _as_text(value: Any) -> str | None:
    """An argument as header text (``None``: nothing to mirror)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def _same(header: str, body: Any) -> bool:
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, int | float):
        try:
            number = float(header)
        except ValueError:
            return False
        return math.isfinite(number) and number == body
    return isinstance(body, str) and header == body


# --- the client side -------------------------------------------------------------------------


class _Fields(msgspec.Struct):
    name: Any = None
    uri: Any = None
    arguments: msgspec.Raw = msgspec.Raw()  # decoded only for a tool with x-mcp-header annotations
    meta: Any = msgspec.field(default=None, name="_meta")

    def argument_values(self) -> Any:
        try:
            return msgspec.json.decode(self.arguments) if self.arguments else None
        except msgspec.DecodeError:
            return None


def _fields(params: bytes) -> _Fields:
    if not params:
        return _Fields()
    try:
        return msgspec.json.decode(params, type=_Fields)
    except msgspec.DecodeError:  # not an object: nothing to mirror, the server will say what is wrong
        return _Fields()


def request_headers(
    method: str, params: bytes, annotations: Mapping[str, tuple[ParamHeader, ...]] | None = None
) -> dict[str, str]:
    """The metadata headers of one modern request (its ``params`` as raw JSON).

    ``annotations`` maps tool names to their ``x-mcp-header`` annotations (from
    ``tools/list``); the arguments they name become ``Mcp-Param-*`` headers.
    """
    fields = _fields(params)
    headers = {"mcp-method": method}
    meta = fields.meta
    if isinstance(meta, dict) and isinstance(meta.get(META_VERSION), str):
        headers["mcp-protocol-version"] = meta[META_VERSION]
    source = NAMED_METHODS.get(method)
    if source is not None:
        value = getattr(fields, source)
        if isinstance(value, str):
            headers["mcp-name"] = encode_value(value)
    if method == "tools/call" and annotations and isinstance(fields.name, str) and fields.name in annotations:
        arguments = fields.argument_values()
        for item in annotations[fields.name]:
            text = _as_text(_argument(arguments, item.path))
            if text is not None:
                headers[item.header] = encode_value(text)
    return headers


# --- the server side -------------------------------------------------------------------------


def header_problem(
    headers: Mapping[str, str],
    method: str,
    params: bytes,
    annotations: Callable[[str], tuple[ParamHeader, ...]] | None = None,
) -> str | None:
    """What is wrong with a modern POST's metadata headers (``None``: they match the body).

    ``headers`` has lower-case names. ``annotations(tool_name)`` gives a tool's
    ``x-mcp-header`` annotations (asked for ``tools/call`` only).
    """
    raw_method = headers.get("mcp-method")
    if raw_method is None:
        return "missing Mcp-Method header"
    if raw_method.strip(" \t") != method:
        return f"Mcp-Method header {raw_method.strip()!r} does not match the body's method {method!r}"
    fields = _fields(params)
    meta = fields.meta
    if isinstance(meta, dict) and META_VERSION in meta:
        version = headers.get("mcp-protocol-version")
        if version is None:
            return "missing MCP-Protocol-Version header"
        if version.strip(" \t") != meta[META_VERSION]:
            return (
                f"MCP-Protocol-Version header {version.strip()!r} does not match the body's "
                f"{META_VERSION} {meta[META_VERSION]!r}"
            )
    source = NAMED_METHODS.get(method)
    if source is not None:
        expected = getattr(fields, source)
        if isinstance(expected, str):
            raw = headers.get("mcp-name")
            if raw is None:
                return f"missing Mcp-Name header (the body's params.{source} is {expected!r})"
            value = decode_value(raw)
            if value is None:
                return "Mcp-Name header is malformed (invalid characters or base64)"
            if value != expected:
                return f"Mcp-Name header {value!r} does not match the body's params.{source} {expected!r}"
    called: tuple[ParamHeader, ...] = ()
    if method == "tools/call" and annotations is not None and isinstance(fields.name, str):
        called = annotations(fields.name)
    arguments = fields.argument_values() if called else None
    for item in called:
        body = _argument(arguments, item.path)
        raw = headers.get(item.header)
        if body is None:
            if raw is not None:
                return f"Mcp-Param-{item.name} header is present but the argument {'.'.join(item.path)!r} is not"
            continue
        if raw is None:
            return f"missing Mcp-Param-{item.name} header (the argument {'.'.join(item.path)!r} is set)"
        value = decode_value(raw)
        if value is None:
            return f"Mcp-Param-{item.name} header is malformed (invalid characters or base64)"
        if not _same(value, body):
            return f"Mcp-Param-{item.name} header {value!r} does not match the argument {'.'.join(item.path)!r}"
    return None


# --- Host and Origin (DNS rebinding, cross-site requests) ------------------------------------------


def host_allowed(value: str, patterns: Collection[str]) -> bool:
    """``value`` equals a pattern (``"*"`` matches anything); ``name:*`` also matches ``name`` with any port or none."""
    for pattern in patterns:
        if pattern == "*" or value == pattern:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            port = value[len(base) + 1 :]
            if value == base or (value.startswith(base + ":") and port.isascii() and port.isdigit()):
                return True
    return False


def host_origin_problem(
    headers: Mapping[str, str], allowed_hosts: Collection[str], allowed_origins: Collection[str]
) -> str | None:
    """Why a request's ``Host`` or ``Origin`` is refused (``None``: both are allowed); answer it with 403.

    ``headers`` has lower-case names, the patterns are lower case (see
    :func:`host_allowed`). A missing ``Origin`` (a client that is not a
    browser) is allowed; a missing ``Host`` is not.
    """
    host = headers.get("host", "").lower()
    if "*" not in allowed_hosts and not host_allowed(host, allowed_hosts):
        return f"host {host!r} is not allowed"
    origin = headers.get("origin")
    if origin is not None and not host_allowed(origin.lower(), allowed_origins):
        return f"origin {origin!r} is not allowed"
    return None
