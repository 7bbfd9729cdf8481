"""JSON-RPC 2.0 as MCP uses it: decode one message, encode one message.

Sans-I/O: bytes in, message objects out, and back. No event loop, no clock.

Decoding is two-phase. The envelope (``jsonrpc``, ``id``, ``method``, ...) is
decoded and checked here, while ``params`` and ``result`` stay as raw JSON
bytes (:class:`msgspec.Raw`). The layer that knows which method it is decodes
those raw bytes straight into the right typed structure, so each message is
parsed once and a params error can be told apart from an envelope error:

* not JSON at all                          -> ``-32700`` (error sent without ``id``)
* JSON but not a valid message             -> ``-32600`` (with ``id`` when one could be read)
* unknown method / params of the wrong shape -> ``-32601`` / ``-32602`` (decided by the caller)

Request ids match by exact type and value: ``7`` and ``"7"`` are different ids.
Floats, booleans, ``null`` and objects are not ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

import msgspec

from minimcp.wire import errors
from minimcp.wire.types import JSONValue

__all__ = [
    "CALL_ID_BYTES",
    "NO_PARAMS",
    "ErrorResponse",
    "InvalidMessage",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "decode",
    "decode_batch",
    "decode_params",
    "decoder_for",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "is_batch",
]

RequestId: TypeAlias = "int | str"
T = TypeVar("T")

#: ``params`` / ``result`` absent from the message.
NO_PARAMS: Final = msgspec.Raw()
#: Random bytes in the id a server gives a tool call (96 bits): what its own requests name it by
#: (revision 2026-07-28 carries it in ``requestState``).
CALL_ID_BYTES: Final = 12


class Request(msgspec.Struct, frozen=True, gc=False):
    """A request: it has an ``id`` and expects exactly one response."""

    id: RequestId
    method: str
    params: msgspec.Raw = NO_PARAMS


class Notification(msgspec.Struct, frozen=True, gc=False):
    """A notification: no ``id``, never answered."""

    method: str
    params: msgspec.Raw = NO_PARAMS


class Response(msgspec.Struct, frozen=True, gc=False):
    """A successful response; ``result`` is the raw JSON object."""

    id: RequestId
    result: msgspec.Raw


class ErrorResponse(msgspec.Struct, frozen=True, gc=False):
    """An error response. ``id`` is ``None`` when the peer could not read ours."""

    id: RequestId | None
    code: int
    message: str
    data: JSONValue = None


Message: TypeAlias = "Request | Notification | Response | ErrorResponse"


class InvalidMessage(errors.MinimcpError):
    """Bytes that are not one valid JSON-RPC message.

    Attributes:
        code: ``-32700`` (not JSON) or ``-32600`` (not a valid message).
        message: What is wrong, for the error response.
        id: The request id, when one could be read (answer with it), else ``None``.
    """

    def __init__(self, code: int, message: str, id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id


class _Envelope(msgspec.Struct, gc=False):
    jsonrpc: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: msgspec.Raw = NO_PARAMS
    result: msgspec.Raw = NO_PARAMS
    error: Any = msgspec.UNSET


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_envelopes_decoder = msgspec.json.Decoder(list[msgspec.Raw])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "an array"
    return type(value).__name__


def is_batch(data: bytes) -> bool:
    """Whether ``data`` is a JSON array (a JSON-RPC batch) rather than one message."""
    return data.lstrip()[:1] == b"["


def decode(data: bytes | bytearray | memoryview | str) -> Message:
    """Decode exactly one JSON-RPC message.

    Raises:
        InvalidMessage: with ``-32700`` for bytes that are not JSON, ``-32600``
            for JSON that is not a valid message (a batch array included; use
            :func:`decode_batch` on revisions that allow batches).
    """
    try:
        env = _envelope_decoder.decode(data)
    except msgspec.ValidationError as exc:
        # Valid JSON, but not an object (or a member msgspec cannot hold, like 1e400).
        raw = data.encode() if isinstance(data, str) else bytes(data)
        head = raw.lstrip()[:1]
        if head == b"[":
            raise InvalidMessage(
                errors.INVALID_REQUEST,
                "batch arrays are not accepted on this protocol revision; send one message at a time",
            ) from None
        if head == b"{":
            raise InvalidMessage(errors.INVALID_REQUEST, f"invalid message: {exc}") from None
        raise InvalidMessage(errors.INVALID_REQUEST, "a JSON-RPC message must be a JSON object") from None
    except msgspec.DecodeError as exc:
        raise InvalidMessage(errors.PARSE_ERROR, f"parse error: {exc}") from None
    except RecursionError:
        raise InvalidMessage(errors.INVALID_REQUEST, "message is nested too deeply") from None
    except UnicodeError:  # a str holding lone surrogates cannot be UTF-8
        raise InvalidMessage(errors.PARSE_ERROR, "parse error: the text is not valid Unicode") from None
    return _classify(env)


def decode_batch(data: bytes) -> list[Message | InvalidMessage]:
    """Decode a JSON-RPC batch (2025-03-26 only): each element, or why it is invalid.

    Raises:
        InvalidMessage: when ``data`` is not JSON or is an empty array.
    """
    try:
        parts = _envelopes_decoder.decode(data)
    except msgspec.ValidationError:
        raise InvalidMessage(errors.INVALID_REQUEST, "a batch must be a JSON array") from None
    except msgspec.DecodeError as exc:
        raise InvalidMessage(errors.PARSE_ERROR, f"parse error: {exc}") from None
    except RecursionError:
        raise InvalidMessage(errors.INVALID_REQUEST, "message is nested too deeply") from None
    if not parts:
        raise InvalidMessage(errors.INVALID_REQUEST, "an empty batch is not a valid request")
    out: list[Message | InvalidMessage] = []
    for part in parts:
        try:
            out.append(decode(part))
        except InvalidMessage as exc:
            out.append(exc)
    return out


def _classify(env: _Envelope) -> Message:
    id_ = env.id
    has_id = id_ is not msgspec.UNSET
    id_type = type(id_)
    good_id = id_type is int or id_type is str  # (exact types: a JSON true/false is a bool, not an id)
    readable = id_ if good_id else None
    if env.jsonrpc != "2.0":
        raise InvalidMessage(errors.INVALID_REQUEST, 'the "jsonrpc" member must be exactly "2.0"', readable)
    if env.method is not msgspec.UNSET:
        if not isinstance(env.method, str):
            raise InvalidMessage(errors.INVALID_REQUEST, 'the "method" member must be a string', readable)
        if not has_id:
            return Notification(env.method, env.params)
        if not good_id:
            raise InvalidMessage(
                errors.INVALID_REQUEST, f"a request id must be a string or an integer, not {_describe(id_)}"
            )
        return Request(id_, env.method, env.params)
    if env.error is not msgspec.UNSET:
        err = env.error
        if not isinstance(err, dict) or type(err.get("code")) is not int or not isinstance(err.get("message"), str):
            raise InvalidMessage(
                errors.INVALID_REQUEST, 'an error response needs "error" with an integer "code" and a string "message"'
            )
        if has_id and id_ is not None and not good_id:
            raise InvalidMessage(
                errors.INVALID_REQUEST, f"a response id must be a string or an integer, not {_describe(id_)}"
            )
        return ErrorResponse(readable, err["code"], err["message"], err.get("data"))
    if env.result is not NO_PARAMS:
        if not good_id:
            what = "missing" if not has_id else _describe(id_)
            raise InvalidMessage(errors.INVALID_REQUEST, f"a response id must be a string or an integer, not {what}")
        return Response(id_, env.result)
    raise InvalidMessage(
        errors.INVALID_REQUEST,
        'a message needs "method" (request, notification) or "result"/"error" (response)',
        readable,
    )


# One decoder per type decoded into (a handful: the protocol's params and result Structs).
class _Decoders(dict[object, "msgspec.json.Decoder[Any]"]):
    """type -> its shared JSON decoder, made on first use (by ``__missing__``)."""

    def __missing__(self, type: Any) -> msgspec.json.Decoder[Any]:
        decoder = self[type] = msgspec.json.Decoder(type)
        return decoder


_DECODERS = _Decoders()

if TYPE_CHECKING:

    def decoder_for(type: type[T]) -> msgspec.json.Decoder[T]:
        """The shared JSON decoder into ``type`` (made on first use)."""
        ...

else:
    #: The shared JSON decoder into a type (made on first use): the table's own lookup, so finding a
    #: decoder made before (every time but the first) costs no Python call.
    decoder_for = _DECODERS.__getitem__


def decode_params(raw: msgspec.Raw, type: type[T]) -> T:
    """Decode ``params`` (or a ``result``) into ``type``.

    An absent ``params`` decodes as an empty object, so structures whose
    fields all have defaults accept a request without params.

    Raises:
        McpError: ``-32602`` naming the offending path, e.g. ``$.name``.
    """
    decoder = decoder_for(type)
    try:
        return decoder.decode(raw if raw else b"{}")
    except msgspec.ValidationError as exc:
        raise errors.McpError(errors.INVALID_PARAMS, f"invalid params: {exc}") from None
    except msgspec.DecodeError as exc:  # e.g. bytes inside params that are not valid UTF-8
        raise errors.McpError(errors.INVALID_PARAMS, f"invalid params: {exc}") from None


# --- encoding --------------------------------------------------------------------------------

class _OutRequest(msgspec.Struct, gc=False):
    jsonrpc: str
    id: RequestId
    method: str
    params: Any = msgspec.UNSET


class _OutNotification(msgspec.Struct, gc=False):
    jsonrpc: str
    method: str
    params: Any = msgspec.UNSET


class _OutResult(msgspec.Struct, gc=False):
    jsonrpc: str
    id: RequestId
    result: Any


class _ErrorObject(msgspec.Struct, gc=False):
    code: int
    message: str
    data: Any = msgspec.UNSET


class _OutError(msgspec.Struct, gc=False):
    jsonrpc: str
    id: Any
    error: _ErrorObject


_encoder = msgspec.json.Encoder()


def encode_request(id: RequestId, method: str, params: object = msgspec.UNSET) -> bytes:
    """One request, compact JSON on one line (no trailing newline).

    ``params`` (like ``result`` and ``data`` below) is anything msgspec encodes as JSON:
    a Struct, a dict, ``msgspec.Raw`` bytes, or ``UNSET`` to leave the member out.
    """
    return _encoder.encode(_OutRequest("2.0", id, method, params))


def encode_notification(method: str, params: object = msgspec.UNSET) -> bytes:
    """One notification, compact JSON on one line."""
    return _encoder.encode(_OutNotification("2.0", method, params))


def encode_result(id: RequestId, result: object) -> bytes:
    """One successful response. ``result`` must encode as a JSON object."""
    return _encoder.encode(_OutResult("2.0", id, result))


def encode_error(
    id: RequestId | None, code: int, message: str, data: object = msgspec.UNSET, *, null_id: bool = False
) -> bytes:
    """One error response.

    Args:
        id: The request's id, or ``None`` when it could not be read.
        null_id: With ``id=None``, send ``"id": null`` (revisions before
            2025-11-25 required the member) instead of omitting it.
    """
    wire_id: Any = id if id is not None else (None if null_id else msgspec.UNSET)
    return _encoder.encode(_OutError("2.0", wire_id, _ErrorObject(code, message, data)))
