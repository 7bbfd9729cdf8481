"""The 2026-07-28 request envelope and complete result: which era a request is, what its ``_meta`` says, the codes.

Revision 2026-07-28 has no handshake: every request carries its client's
revision, capabilities and info in ``params._meta`` (the *envelope*), and every
result carries the server's info in its own ``_meta``. This module is that part
of the wire, pure (no event loop, no clock), loaded with a connection's first
2026-07-28 request (which era a request is, :func:`minimcp.wire.versions.has_envelope`,
is asked of every request, so it lives with the revisions):

* what the envelope must say and what it is read to (:func:`read_envelope`,
  :class:`Envelope`), and the error codes the revision adds;
* a result in its complete shape (:func:`complete`), and its JSON-RPC response built
  from prepared bytes (:func:`complete_reply`, byte-equal to the generic encoder's).

The questions a call asks and the answers it is given (``input_required``) are
:mod:`minimcp.wire.input_required`; the runs serving both are :mod:`minimcp.server.mrtr`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol

import msgspec

from minimcp.wire import capabilities as _capabilities
from minimcp.wire import errors, jsonrpc
from minimcp.wire.errors import McpError
from minimcp.wire.types import LOG_LEVELS, CallToolResult, ClientCapabilities, Implementation, LoggingLevel, UnsetType
from minimcp.wire.versions import META_VERSION, MODERN, Feature, is_modern, supports

__all__ = [
    "HEADER_MISMATCH",
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "MISSING_CAPABILITY",
    "NO_META",
    "UNSUPPORTED_VERSION",
    "Envelope",
    "Informed",
    "ServerWire",
    "complete",
    "complete_reply",
    "envelope_of",
    "read_envelope",
    "required_capability",
]

# --- the envelope ---------------------------------------------------------------------------

META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: A header that is missing, malformed, or does not match the body.
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

_LEVELS = frozenset(LOG_LEVELS)
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"


#: A request without ``_meta`` (its bytes, as :func:`envelope_of` takes them).
NO_META = _NO_META = msgspec.Raw(b"")


class _MetaBytes(msgspec.Struct):
    meta: msgspec.Raw = msgspec.field(default=_NO_META, name="_meta")


@dataclasses.dataclass(frozen=True, slots=True)
class Envelope:
    """What one modern request says about its client."""

    version: str
    capabilities: ClientCapabilities
    client_info: Implementation | None
    log_level: LoggingLevel | None
    #: The rest of the request's ``_meta`` (e.g. a progress token), without the envelope's keys; ``None``: nothing.
    rest: dict[str, Any] | None = dataclasses.field(default=None, compare=False, repr=False)
    # What the client's revision and capabilities allow a form question, worked out once per
    # envelope (an envelope is shared by a client's requests): as a handshake-era connection
    # works them out once, by its handshake (the same three names).
    #: Whether a form question may be asked.
    form_allowed: bool = dataclasses.field(init=False, compare=False, repr=False)
    #: The ``mode`` a form question carries (``"form"`` where URL mode exists, else unset).
    form_mode: Literal["form"] | UnsetType = dataclasses.field(init=False, compare=False, repr=False)
    #: Whether a raw schema's enums are sent as written (else in the revision's older shape).
    raw_forms_as_written: bool = dataclasses.field(init=False, compare=False, repr=False)
    #: The client's name (``clientInfo.name``; ``None``: it gave none), as a retry's state is bound to it.
    client: str | None = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        version = self.version
        set_ = object.__setattr__  # (frozen)
        set_(self, "form_allowed", _capabilities.can_elicit_form(version, self.capabilities))
        set_(self, "form_mode", "form" if supports(version, Feature.ELICITATION_URL) else msgspec.UNSET)
        set_(self, "raw_forms_as_written", supports(version, Feature.ELICITATION_ENUMS))
        set_(self, "client", self.client_info.name if self.client_info is not None else None)


def read_envelope(params: msgspec.Raw) -> Envelope:
    """Read and check a modern request's ``_meta``.

    Raises:
        McpError: ``-32602`` naming a missing or malformed key; ``-32022`` with
            ``supported`` / ``requested`` for a revision we do not serve.
    """
    return envelope_of(_meta_bytes(params))


def _meta_bytes(params: msgspec.Raw) -> msgspec.Raw:
    try:
        return msgspec.json.decode(params or b"{}", type=_MetaBytes).meta
    except msgspec.DecodeError:
        return _NO_META


def envelope_of(raw: msgspec.Raw) -> Envelope:
    """:func:`read_envelope` of a request's ``_meta`` bytes (:data:`NO_META`: none), decoded with its params.

    Raises:
        McpError: as :func:`read_envelope`.
    """
    return _read_meta(msgspec.json.decode(raw) if raw else None)


def _read_meta(meta: Any) -> Envelope:
    if not isinstance(meta, dict):
        raise McpError(errors.INVALID_PARAMS, "params._meta is required on this protocol revision")
    for key in (META_VERSION, META_CAPABILITIES):
        if key not in meta:
            raise McpError(errors.INVALID_PARAMS, f"params._meta is missing {key!r}")
    version = meta[META_VERSION]
    if not isinstance(version, str) or not is_modern(version):
        raise McpError(
            UNSUPPORTED_VERSION,
            f"unsupported protocol version {version!r}",
            {"supported": list(MODERN), "requested": version},
        )
    try:
        caps = msgspec.convert(meta[META_CAPABILITIES], ClientCapabilities)
        info_raw = meta.get(META_CLIENT_INFO)
        info = msgspec.convert(info_raw, Implementation) if info_raw is not None else None
    except msgspec.ValidationError as exc:
        raise McpError(errors.INVALID_PARAMS, f"invalid params._meta: {exc}") from None
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in _LEVELS:
        raise McpError(errors.INVALID_PARAMS, f"unknown log level {level!r}")
    rest = {k: v for k, v in meta.items() if not k.startswith(_ENVELOPE_PREFIX)} or None
    return Envelope(version, caps, info, level, rest)


# --- the complete result ---------------------------------------------------------------------

def complete(result: Any, server: ServerWire, *, cacheable: bool = False) -> dict[str, Any]:
    """A result in its modern shape: ``resultType``, ``server``'s info in ``_meta``, cache hints."""
    data: dict[str, Any] = msgspec.to_builtins(result)
    data.setdefault("resultType", "complete")
    meta = data.get("_meta")
    data["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_SERVER_INFO: server.info_values()}
    if cacheable:
        data.setdefault("ttlMs", 0)
        data.setdefault("cacheScope", "private")
    return data



_encode = msgspec.json.encode


def complete_reply(id_: Any, result: Any, server: ServerWire) -> bytes:
    """The response to request ``id_`` with :func:`complete`'s ``result``, byte for byte as
    ``jsonrpc.encode_result`` gives it: for the usual tool result (a ``CallToolResult`` without
    ``_meta``), its encoding with the two members :func:`complete` appends put after it (no tree of
    dicts made of it, ``_meta`` encoded once per server info)."""
    if type(result) is CallToolResult and result.meta is None:
        return b"".join((
            b'{"jsonrpc":"2.0","id":', _encode(id_), b',"result":', _encode(result)[:-1],
            b',"resultType":"complete","_meta":', server.meta_bytes(), b"}}",
        ))
    return jsonrpc.encode_result(id_, complete(result, server))


class Informed(Protocol):
    """What has a server's info: a :class:`~minimcp.server.server.Server` (its ``info``, which may be replaced or
    changed in place)."""

    info: Implementation


class ServerWire:
    """What one server prepares of the 2026-07-28 wire, once rather than per request: its info as every result
    carries it (converted and encoded once per info), and the envelope its clients send (read once per
    ``_meta``). One per server (``Server.modern_wire``, made with its first 2026-07-28 request): no state at
    module level, nothing shared between servers.
    """

    __slots__ = ("_encoded", "_last", "_owner", "_seen", "_values")

    def __init__(self, owner: Informed) -> None:
        self._owner = owner
        #: A copy of the info as it was prepared (another info, or one changed in place, is prepared again;
        #: none yet: no info equals ``None``), its JSON values (shared by every result: never changed in place)
        #: and ``{"io.modelcontextprotocol/serverInfo": ...}`` encoded.
        self._seen: Implementation | None = None
        self._values: dict[str, Any] = {}
        self._encoded = b""
        #: The last ``_meta`` read (its bytes) and its envelope. A client sends the same ``_meta`` with every
        #: request: its calls then share one envelope, read once (a parked call holds no copy of its own).
        #: One entry: a mix of clients only reads more often.
        self._last: tuple[msgspec.Raw, Envelope] | None = None

    def info_values(self) -> dict[str, Any]:
        """The server's info as JSON values (``serverInfo``), shared: never change it in place."""
        info = self._owner.info
        if self._seen != info:
            self._prepare(info)
        return self._values

    def meta_bytes(self) -> bytes:
        """A result's ``_meta``, ``{"io.modelcontextprotocol/serverInfo": ...}``, encoded."""
        info = self._owner.info
        if self._seen != info:
            self._prepare(info)
        return self._encoded

    def _prepare(self, info: Implementation) -> None:
        values: dict[str, Any] = msgspec.to_builtins(info)
        self._seen, self._values, self._encoded = (
            msgspec.structs.replace(info), values, _encode({META_SERVER_INFO: values}))

    def envelope_of(self, raw: msgspec.Raw) -> Envelope:
        """:func:`envelope_of`, read once for the same bytes as the last request's (the same, frozen, envelope).

        Raises:
            McpError: as :func:`read_envelope`.
        """
        last = self._last
        if last is not None and last[0] == raw:
            return last[1]
        envelope = envelope_of(raw)
        self._last = (raw.copy(), envelope)  # a copy: not the whole request's buffer
        return envelope

    def read_envelope(self, params: msgspec.Raw) -> Envelope:
        """:func:`read_envelope`, through :meth:`envelope_of`.

        Raises:
            McpError: as :func:`read_envelope`.
        """
        return self.envelope_of(_meta_bytes(params))


def required_capability(kind: str) -> dict[str, Any]:
    """``data.requiredCapabilities`` for -32021."""
    if kind == "url":
        return {"elicitation": {"url": {}}}
    if kind == "form":
        return {"elicitation": {"form": {}}}
    return {kind: {}}

