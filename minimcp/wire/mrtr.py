"""The 2026-07-28 wire, pure: envelope keys and checks, error codes, result shape, questions and answers.

This is the sans-I/O half of revision 2026-07-28 serving: what a request's
``params._meta`` must say (:func:`~minimcp.wire.era_probe.has_envelope`, :func:`read_envelope`), the
codes the revision adds, the shape of a complete result (:func:`complete`), a
question as the wire carries it (:class:`Question`) and what is kept of an
answer (:func:`clean_answer`). It imports no event loop: :mod:`minimcp.server.mrtr.rounds`
builds the runs on top of it, and :mod:`minimcp.server.mrtr.run` their parking.
"""

from __future__ import annotations

import binascii
import dataclasses
import hashlib
import typing
from typing import Any, Literal

import msgspec

from minimcp.wire import capabilities as _capabilities
from minimcp.wire import errors, jsonrpc
from minimcp.wire.digest import digest
from minimcp.wire.era_probe import META_VERSION
from minimcp.wire.errors import McpError
from minimcp.wire.types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageResult,
    ElicitResult,
    Implementation,
    ListRootsResult,
    LoggingLevel,
    UnsetType,
)
from minimcp.wire.versions import MODERN, Feature, is_modern, supports

__all__ = [
    "HEADER_MISMATCH",
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "MISSING_CAPABILITY",
    "UNSUPPORTED_VERSION",
    "Envelope",
    "FormQuestion",
    "Question",
    "asked",
    "clean_answer",
    "complete",
    "form_parts",
    "form_question",
    "read_envelope",
    "ready_question",
    "required_capability",
    "take_answer",
]

META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: A header that is missing, malformed, or does not match the body.
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

_LEVELS = frozenset(typing.get_args(LoggingLevel))
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

    def __post_init__(self) -> None:
        version = self.version
        set_ = object.__setattr__  # (frozen)
        set_(self, "form_allowed", _capabilities.can_elicit_form(version, self.capabilities))
        set_(self, "form_mode", "form" if supports(version, Feature.ELICITATION_URL) else msgspec.UNSET)
        set_(self, "raw_forms_as_written", supports(version, Feature.ELICITATION_ENUMS))


def read_envelope(params: msgspec.Raw) -> Envelope:
    """Read and check a modern request's ``_meta``.

    Raises:
        McpError: ``-32602`` naming a missing or malformed key; ``-32022`` with
            ``supported`` / ``requested`` for a revision we do not serve.
    """
    try:
        raw = msgspec.json.decode(params or b"{}", type=_MetaBytes).meta
    except msgspec.DecodeError:
        raw = _NO_META
    return envelope_of(raw)


def envelope_of(raw: msgspec.Raw) -> Envelope:
    """:func:`read_envelope` of a request's ``_meta`` bytes (:data:`NO_META`: none), decoded with its params.

    Raises:
        McpError: as :func:`read_envelope`.
    """
    global _last_envelope
    last = _last_envelope
    if last is not None and last[0] == raw:
        return last[1]  # the same bytes as the last request's: the same (frozen) envelope
    envelope = _read_meta(msgspec.json.decode(raw) if raw else None)
    _last_envelope = (raw.copy(), envelope)  # a copy: not the whole request's buffer
    return envelope


#: The last ``_meta`` read (its bytes) and its envelope. A client sends the same ``_meta`` with
#: every request: its calls then share one envelope, read once (a parked call holds no copy of
#: its own). One entry: a mix of clients only reads more often.
_last_envelope: tuple[msgspec.Raw, Envelope] | None = None


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


def complete(result: Any, server_info: Implementation, *, cacheable: bool = False) -> dict[str, Any]:
    """A result in its modern shape: ``resultType``, ``serverInfo`` in ``_meta``, cache hints."""
    data: dict[str, Any] = msgspec.to_builtins(result)
    data.setdefault("resultType", "complete")
    meta = data.get("_meta")
    data["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_SERVER_INFO: _info_of(server_info)}
    if cacheable:
        data.setdefault("ttlMs", 0)
        data.setdefault("cacheScope", "private")
    return data


# --- questions and answers ------------------------------------------------------------------


class Question(msgspec.Struct, frozen=True, gc=False):
    """One input request: what the tool asked, ready for the wire.

    (A frozen msgspec Struct, untracked by the cyclic collector: made in a few hundred instructions
    where a frozen dataclass took thousands, and smaller while its call is parked.)
    """

    method: str
    #: The params as sent (JSON, in the tool's own order): a parked call holds these bytes, not a
    #: tree of dicts (:attr:`params` reads them).
    wire: bytes
    digest: str
    #: The ``inputRequests`` key the author chose (``None``: numbered ``q1``, ``q2``, ...).
    key: str | None = None

    @classmethod
    def create(cls, method: str, params: Any, key: str | None = None) -> Question:
        if params is msgspec.UNSET:
            params = {}
        # The digest is of the sorted JSON (what to_builtins then a sorted encoding gave).
        return cls(method, msgspec.json.encode(params), digest({"m": method, "p": params}), key)

    @property
    def params(self) -> dict[str, Any]:
        """The params as JSON values."""
        params: dict[str, Any] = msgspec.json.decode(self.wire)
        return params

    def to_wire(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    def to_raw_wire(self) -> dict[str, Any]:
        """:meth:`to_wire` with the params as they are (raw JSON: encoded as is, not decoded first)."""
        return {"method": self.method, "params": msgspec.Raw(self.wire)}


class FormQuestion(Question, frozen=True, gc=False):
    """A form question made by :func:`form_question`: also its fields' names (what :func:`clean_answer`
    keeps of an answer), shared with every question of its form."""

    names: frozenset[str] = frozenset()


def form_question(
    message: str, mode: Literal["form"] | UnsetType, encoded: tuple[bytes, bytes, frozenset[str]], key: str | None
) -> FormQuestion:
    """``Question.create("elicitation/create", ElicitRequestParams(message=message, mode=mode,
    requested_schema=schema), key)``, the same wire and digest, from ``encoded``: the schema's JSON as
    sent and sorted, and its properties' names (``Form.encoded_schema``, made once per form). Only the
    message is encoded; the params and the sorted payload are joined from bytes."""
    return ready_question(message, form_parts(mode, encoded), key)


def form_parts(
    mode: Literal["form"] | UnsetType, encoded: tuple[bytes, bytes, frozenset[str]]
) -> tuple[bytes, bytes, frozenset[str]]:
    """What follows the message in a form question's params as sent and in its sorted payload, and its
    fields' names: made once per form and revision (a revision has one ``mode``) for :func:`ready_question`."""
    wire_schema, sorted_schema, names = encoded
    middle = b',"mode":"form","requestedSchema":' if mode == "form" else b',"requestedSchema":'
    return middle + wire_schema + b"}", middle + sorted_schema + b"}}", names


def ready_question(message: str, parts: tuple[bytes, bytes, frozenset[str]], key: str | None) -> FormQuestion:
    """:func:`form_question` from its :func:`form_parts`: the message encoded, and put between them."""
    text = _encode(message)
    wire_tail, sorted_tail, names = parts
    # (_digest_of, written out: once per question)
    found = _b2a(_sha256(_SORTED_FORM_HEAD + text + sorted_tail).digest()[:12], newline=False).translate(
        _TO_URLSAFE
    ).decode()
    return FormQuestion("elicitation/create", b'{"message":' + text + wire_tail, found, key, names)


#: What :func:`form_question`'s sorted payload starts with: ``{"m": method, "p": params}`` sorted, up to the message.
_SORTED_FORM_HEAD = b'{"m":"elicitation/create","p":{"message":'
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_b2a = binascii.b2a_base64
_sha256 = hashlib.sha256


def _digest_of(encoded: bytes) -> str:
    """:func:`minimcp.wire.digest.digest` of a value whose sorted JSON is ``encoded``."""
    return binascii.b2a_base64(hashlib.sha256(encoded).digest()[:12], newline=False).translate(_TO_URLSAFE).decode()


def input_required(
    keys: typing.Sequence[str], questions: typing.Sequence[Question], state: str, server_info: Implementation
) -> dict[str, Any]:
    """An ``input_required`` result asking ``questions`` under ``keys`` (their params as raw JSON, which
    :func:`complete` cannot take)."""
    requests = {
        key: {"method": q.method, "params": msgspec.Raw(q.wire)} for key, q in zip(keys, questions, strict=True)
    }
    return {
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
        "_meta": {META_SERVER_INFO: _info_of(server_info)},
    }


def input_required_reply(
    id_: Any, keys: typing.Sequence[str], questions: typing.Sequence[Question], state: str,
    server_info: Implementation,
) -> bytes:
    """The response to request ``id_`` with :func:`input_required`'s result, byte for byte as
    ``jsonrpc.encode_result`` gives it, put together from prepared bytes: the questions' params as
    they are, ``_meta`` encoded once per server info, no tree of dicts per round."""
    try:
        (key,), (question,) = keys, questions  # the usual round: one question, joined in one go
    except ValueError:
        pass  # (several: below)
    else:
        last = _last_meta  # (_meta_of's check, written out: once per round)
        meta = last[1] if last[0] == server_info else _meta_of(server_info)
        method = question.method
        return b"".join((
            b'{"jsonrpc":"2.0","id":', _encode(id_),
            b',"result":{"resultType":"input_required","inputRequests":{', _encode(key),
            b':{"method":', _ELICIT_JSON if method == "elicitation/create" else _method_json(method),
            b',"params":', question.wire, b'}},"requestState":', _encode(state), b',"_meta":', meta, b"}}",
        ))
    parts = [b'{"jsonrpc":"2.0","id":', _encode(id_), b',"result":{"resultType":"input_required","inputRequests":{']
    for n, (key, question) in enumerate(zip(keys, questions, strict=True)):
        parts += (b',' if n else b'', _encode(key), b':{"method":', _encode(question.method), b',"params":',
                  question.wire, b'}')
    parts += (b'},"requestState":', _encode(state), b',"_meta":', _meta_of(server_info), b'}}')
    return b"".join(parts)


_encode = msgspec.json.encode
#: The methods a question asks, encoded.
_METHODS = {m: _encode(m) for m in ("elicitation/create", "sampling/createMessage", "roots/list")}
_ELICIT_JSON = _METHODS["elicitation/create"]


def _method_json(method: str) -> bytes:
    found = _METHODS.get(method)
    return found if found is not None else _encode(method)


def complete_reply(id_: Any, result: Any, server_info: Implementation) -> bytes:
    """The response to request ``id_`` with :func:`complete`'s ``result``, byte for byte as
    ``jsonrpc.encode_result`` gives it: for the usual tool result (a ``CallToolResult`` without
    ``_meta``), its encoding with the two members :func:`complete` appends put after it (no tree of
    dicts made of it, ``_meta`` encoded once per server info)."""
    if type(result) is CallToolResult and result.meta is None:
        last = _last_meta  # (_meta_of's check, written out: once per call)
        meta = last[1] if last[0] == server_info else _meta_of(server_info)
        return b"".join((
            b'{"jsonrpc":"2.0","id":', _encode(id_), b',"result":', _encode(result)[:-1],
            b',"resultType":"complete","_meta":', meta, b"}}",
        ))
    return jsonrpc.encode_result(id_, complete(result, server_info))


def _meta_of(server_info: Implementation) -> bytes:
    """``{"io.modelcontextprotocol/serverInfo": ...}`` encoded: made once per server's info (as :func:`_info_of`:
    an info changed in place is encoded again)."""
    global _last_meta
    last = _last_meta
    if last[0] == server_info:
        return last[1]
    meta = _encode({META_SERVER_INFO: _info_of(server_info)})
    _last_meta = (msgspec.structs.replace(server_info), meta)
    return meta


#: The last ``_meta`` of a result encoded: a copy of the server info as it was (another info, or one
#: changed in place, is encoded again) and the bytes (none yet: no info equals ``None``).
_last_meta: tuple[Implementation | None, bytes] = (None, b"")


def _info_of(server_info: Implementation) -> dict[str, Any]:
    """``serverInfo`` as JSON values (every result carries it): made once per server's info, then shared."""
    global _last_info
    last = _last_info
    if last is not None and last[0] is server_info and last[1] == server_info:
        return last[2]
    info: dict[str, Any] = msgspec.to_builtins(server_info)
    _last_info = (server_info, msgspec.structs.replace(server_info), info)
    return info


#: The last server info turned into JSON values: the info, a copy of it as it was (an info changed in
#: place is converted again), and what it gave (one entry: a process serving several servers only
#: converts more often). Shared by every result: never changed in place.
_last_info: tuple[Implementation, Implementation, dict[str, Any]] | None = None


def clean_answer(question: Question, answer: Any) -> dict[str, Any] | None:
    """What is kept of a client's answer to ``question``: its typed fields, no extras.

    For a form question, the content keeps only the form's fields (the form checks
    their values when the tool reads them); ``_meta`` and unknown members go
    everywhere. This is what the tool gets and what the sealed state carries, so
    padding an answer grows nothing. ``None``: the answer does not have the shape
    of the method's result at all.
    """
    return _cleaned(question, answer)[1]


def _cleaned(question: Question, answer: Any) -> tuple[Any, dict[str, Any] | None]:
    """:func:`clean_answer`'s result, and before it what the tool gets: that result, or for a form
    question's answer that had nothing to drop, the ``ElicitResult`` already converted from it (the
    same values: the tool's ``ctx.elicit`` does not convert them again)."""
    try:
        if question.method == "elicitation/create":
            result = msgspec.convert(answer, ElicitResult)
            kept: dict[str, Any] = {"action": result.action}
            content = result.content
            if result.action != "accept" or isinstance(content, UnsetType):
                return (result if isinstance(result.meta, UnsetType) else kept), kept
            names = question.names if type(question) is FormQuestion else _field_names(question.wire).keys()
            if content.keys() <= names:  # (the usual answer: nothing to drop)
                kept["content"] = dict(content)
                return (result if isinstance(result.meta, UnsetType) else kept), kept
            kept["content"] = {k: v for k, v in content.items() if k in names}
            return kept, kept
        if question.method == "sampling/createMessage":
            sampled: dict[str, Any] = msgspec.to_builtins(msgspec.convert(answer, CreateMessageResult))
            sampled.pop("_meta", None)
            if isinstance(sampled.get("content"), dict):
                sampled["content"].pop("_meta", None)
            return sampled, sampled
        if question.method == "roots/list":
            roots = msgspec.convert(answer, ListRootsResult).roots
            listed = {"roots": [{"uri": r.uri} if isinstance(r.name, UnsetType) else {"uri": r.uri, "name": r.name}
                                for r in roots]}
            return listed, listed
    except msgspec.ValidationError:
        return None, None
    return None, None


class _Fields(msgspec.Struct):
    properties: dict[str, msgspec.Raw] | None = None


class _FormParams(msgspec.Struct, rename="camel"):
    requested_schema: _Fields | None = None


_decode_form_params = msgspec.json.Decoder(_FormParams).decode


def _field_names(wire: bytes) -> dict[str, msgspec.Raw]:
    """The names of a form question's fields (``requestedSchema.properties``), read from its params'
    JSON without building the schema's values; none if the params have no such object."""
    try:
        schema = _decode_form_params(wire).requested_schema
    except msgspec.DecodeError:  # (not a form's shape: no fields)
        return {}
    return schema.properties if schema is not None and schema.properties is not None else {}


def take_answer(question: Question, answer: Any) -> tuple[Any, dict[str, Any]]:
    """An answer as the tool gets it, and as it is recorded (an unusable one: as given, and ``{}``).

    The tool gets what :func:`clean_answer` keeps, as JSON values -- or, for a form question, as the
    ``ElicitResult`` it was converted to where that holds the same values (``ctx.elicit`` takes either).
    """
    if type(question) is FormQuestion:  # the usual question (as _cleaned, written out: once per answer)
        try:
            result = _convert(answer, ElicitResult)
        except msgspec.ValidationError:
            return answer, {}
        content = result.content
        if result.action != "accept" or content is _UNSET:
            kept: dict[str, Any] = {"action": result.action}
            return (result if result.meta is _UNSET else kept), kept
        if content.keys() <= question.names:  # (the usual answer: nothing to drop)
            kept = {"action": "accept", "content": dict(content)}
            return (result if result.meta is _UNSET else kept), kept
    given, kept_ = _cleaned(question, answer)
    return (answer, {}) if kept_ is None else (given, kept_)


_convert = msgspec.convert
_UNSET = msgspec.UNSET



def asked(state: dict[str, Any]) -> tuple[list[str], float | None, float | None]:
    """The sealed state's open questions: their digests, when they were asked, and their timeout."""
    digests, at, timeout = state.get("qs"), state.get("at"), state.get("to")
    return [str(d) for d in digests] if isinstance(digests, list) else [], _number(at), _number(timeout)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def required_capability(kind: str) -> dict[str, Any]:
    """``data.requiredCapabilities`` for -32021."""
    if kind == "url":
        return {"elicitation": {"url": {}}}
    if kind == "form":
        return {"elicitation": {"form": {}}}
    return {kind: {}}

