"""The 2026-07-28 questions and answers: a call's input requests as the wire carries them, and what is kept of answers.

A tool that asks a person (or the client) something mid-call makes a
:class:`Question`; the server answers the call with an ``input_required`` result
naming its questions and a sealed ``requestState`` (:func:`input_required`, and its
response from prepared bytes, :func:`input_required_reply`, byte-equal to the
generic encoder's). The client retries the call with its answers: :func:`take_answer`
and :func:`clean_answer` say what is kept of each (only its typed fields), and
:func:`asked` reads which questions a sealed state says are open. A question and an
answer are matched by :func:`digest` of the question, not by its key.

Pure: no event loop, no clock. The envelope and the complete result are
:mod:`minimcp.wire.envelope`; sealing the state is :mod:`minimcp.server.mrtr.state`.
"""

from __future__ import annotations

import binascii
import hashlib
import typing
from typing import Any, Literal

import msgspec

from minimcp.wire.envelope import META_SERVER_INFO, ServerWire
from minimcp.wire.types import CreateMessageResult, ElicitResult, ListRootsResult, UnsetType

__all__ = [
    "FormQuestion",
    "Question",
    "asked",
    "clean_answer",
    "digest",
    "form_parts",
    "form_question",
    "input_required",
    "input_required_reply",
    "ready_question",
    "take_answer",
]

_encoder = msgspec.json.Encoder(order="sorted")
_encode = msgspec.json.encode


def digest(value: Any) -> str:
    """A short stable digest of a JSON-like value (sorted keys, compact)."""
    return _digest_of(_encoder.encode(value))


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
    found = _digest_of(_SORTED_FORM_HEAD + text + sorted_tail)
    return FormQuestion("elicitation/create", b'{"message":' + text + wire_tail, found, key, names)


#: What :func:`form_question`'s sorted payload starts with: ``{"m": method, "p": params}`` sorted, up to the message.
_SORTED_FORM_HEAD = b'{"m":"elicitation/create","p":{"message":'
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _digest_of(encoded: bytes) -> str:
    """:func:`digest` of a value whose sorted JSON is ``encoded``: 12 bytes of its SHA-256, in 16 base64url
    characters without padding (through binascii directly)."""
    return _b2a(_sha256(encoded).digest()[:12], newline=False).translate(_TO_URLSAFE).decode()


# (module globals: one load each, where ``binascii.b2a_base64`` is two; once or twice per round)
_b2a = binascii.b2a_base64
_sha256 = hashlib.sha256
_convert = msgspec.convert
_UNSET = msgspec.UNSET


def input_required(
    keys: typing.Sequence[str], questions: typing.Sequence[Question], state: str, server: ServerWire
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
        "_meta": {META_SERVER_INFO: server.info_values()},
    }


def input_required_reply(
    id_: Any, keys: typing.Sequence[str], questions: typing.Sequence[Question], state: str, server: ServerWire
) -> bytes:
    """The response to request ``id_`` with :func:`input_required`'s result, byte for byte as
    ``jsonrpc.encode_result`` gives it, put together from prepared bytes: the questions' params as
    they are, ``_meta`` encoded once per server info, no tree of dicts per round."""
    try:
        (key,), (question,) = keys, questions  # the usual round: one question, joined in one go
    except ValueError:
        pass  # (several: below)
    else:
        meta = server.meta_bytes()
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
    parts += (b'},"requestState":', _encode(state), b',"_meta":', server.meta_bytes(), b'}}')
    return b"".join(parts)


#: The methods a question asks, encoded.
_METHODS = {m: _encode(m) for m in ("elicitation/create", "sampling/createMessage", "roots/list")}
_ELICIT_JSON = _METHODS["elicitation/create"]


def _method_json(method: str) -> bytes:
    found = _METHODS.get(method)
    return found if found is not None else _encode(method)


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
            result = _convert(answer, ElicitResult)
            kept: dict[str, Any] = {"action": result.action}
            content = result.content
            if result.action != "accept" or content is _UNSET:  # (UNSET: UnsetType's one value)
                return (result if result.meta is _UNSET else kept), kept
            names = question.names if type(question) is FormQuestion else _field_names(question.wire).keys()
            if content.keys() <= names:  # (the usual answer: nothing to drop)
                kept["content"] = dict(content)
                return (result if result.meta is _UNSET else kept), kept
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
    given, kept = _cleaned(question, answer)
    return (answer, {}) if kept is None else (given, kept)



def asked(state: dict[str, Any]) -> tuple[list[str], float | None, float | None]:
    """The sealed state's open questions: their digests, when they were asked, and their timeout."""
    digests, at, timeout = state.get("qs"), state.get("at"), state.get("to")
    return [str(d) for d in digests] if isinstance(digests, list) else [], _number(at), _number(timeout)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
