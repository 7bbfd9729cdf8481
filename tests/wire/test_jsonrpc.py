"""Tests for minimcp.wire.jsonrpc: decoding, validating and encoding single JSON-RPC messages."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimcp.wire import errors
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import (
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    Response,
    decode,
    decode_batch,
    decode_params,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    is_batch,
)
from minimcp.wire.types import CallToolParams, PaginatedParams

MESSAGE_TYPES = (Request, Notification, Response, ErrorResponse)


def invalid(data: bytes | str) -> InvalidMessage:
    """Decode ``data`` expecting InvalidMessage; return the exception."""
    with pytest.raises(InvalidMessage) as info:
        decode(data)
    return info.value


def obj(**members: Any) -> bytes:
    """A JSON object with exactly ``members`` (``jsonrpc`` not added)."""
    return json.dumps(members).encode()


# --- decoding each kind of message -------------------------------------------------------------


@pytest.mark.parametrize("id_", [0, 7, -3, 2**53, "abc", "", "7"])
def test_decode_request_keeps_id_and_method(id_: int | str) -> None:
    """A message with ``id`` and ``method`` is a Request with the id as sent."""
    msg = decode(obj(jsonrpc="2.0", id=id_, method="tools/list"))
    assert type(msg) is Request
    assert msg.id == id_ and type(msg.id) is type(id_)
    assert msg.method == "tools/list"


def test_decode_request_params_stay_raw_and_decode_later() -> None:
    """``params`` is kept as the raw JSON bytes and decodes with decode_params."""
    msg = decode(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}')
    assert type(msg) is Request
    assert isinstance(msg.params, msgspec.Raw)
    assert bytes(msg.params) == b'{"name":"add","arguments":{"a":1}}'
    params = decode_params(msg.params, CallToolParams)
    assert params.name == "add"
    assert params.arguments == {"a": 1}


def test_decode_request_without_params_has_empty_raw() -> None:
    """A request without ``params`` carries an empty Raw (absent, not ``null``)."""
    msg = decode(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert type(msg) is Request
    assert bytes(msg.params) == b""


def test_decode_notification() -> None:
    """A message with ``method`` and no ``id`` is a Notification."""
    msg = decode(b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{"x":[1,2]}}')
    assert type(msg) is Notification
    assert msg.method == "notifications/initialized"
    assert decode_params(msg.params, dict) == {"x": [1, 2]}


def test_decode_accepts_str_and_memoryview() -> None:
    """decode takes str, bytes, bytearray and memoryview alike."""
    text = '{"jsonrpc":"2.0","method":"m"}'
    for data in (text, text.encode(), bytearray(text.encode()), memoryview(text.encode())):
        assert decode(data) == Notification("m", msgspec.Raw())


@pytest.mark.parametrize("id_", [1, "r-1"])
def test_decode_result_response(id_: int | str) -> None:
    """A message with ``id`` and ``result`` is a Response; ``result`` stays raw."""
    msg = decode(obj(jsonrpc="2.0", id=id_, result={"tools": []}))
    assert type(msg) is Response
    assert msg.id == id_ and type(msg.id) is type(id_)
    assert isinstance(msg.result, msgspec.Raw)
    assert decode_params(msg.result, dict) == {"tools": []}


def test_decode_error_response_with_id_and_data() -> None:
    """An error response exposes id, code, message and data."""
    msg = decode(b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}}')
    assert msg == ErrorResponse(4, -32601, "no such method", {"m": "x"})


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}',
        b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}',
    ],
    ids=["id-null", "id-absent"],
)
def test_decode_error_response_without_readable_id(data: bytes) -> None:
    """An error response whose id is null or absent decodes with ``id=None``."""
    msg = decode(data)
    assert msg == ErrorResponse(None, -32700, "parse error", None)


# --- not JSON: -32700 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b'{"jsonrpc":"2.0",', b"nope", b"\xff\xfe", b'{"jsonrpc":"2.0","id":5,"method":"x"} trailing'],
)
def test_unparseable_json_is_parse_error_without_id(data: bytes) -> None:
    """Bytes that are not JSON give -32700 and no id, even if an id appears in them."""
    exc = invalid(data)
    assert exc.code == errors.PARSE_ERROR == -32700
    assert exc.id is None


# --- JSON but not a message: -32600 ------------------------------------------------------------


@pytest.mark.parametrize("data", [b'"hello"', b"42", b"null", b"true", b"1.5"])
def test_top_level_not_an_object_is_invalid_request(data: bytes) -> None:
    """A JSON value that is not an object is -32600, not -32700."""
    exc = invalid(data)
    assert exc.code == errors.INVALID_REQUEST == -32600
    assert exc.id is None


@pytest.mark.parametrize(
    "data",
    [
        b'{"id":5,"method":"x"}',
        b'{"jsonrpc":"1.0","id":5,"method":"x"}',
        b'{"jsonrpc":2.0,"id":5,"method":"x"}',
        b'{"jsonrpc":null,"id":5,"method":"x"}',
    ],
    ids=["missing", "1.0", "number", "null"],
)
def test_bad_jsonrpc_member_is_invalid_request_with_readable_id(data: bytes) -> None:
    """``jsonrpc`` must be exactly the string "2.0"; the error keeps a readable id."""
    exc = invalid(data)
    assert exc.code == -32600
    assert "jsonrpc" in exc.message
    assert exc.id == 5 and type(exc.id) is int


def test_bad_jsonrpc_member_with_unreadable_id_has_no_id() -> None:
    """With ``jsonrpc`` wrong and an id that is not an id, ``exc.id`` is None."""
    exc = invalid(b'{"jsonrpc":"1.0","id":[5],"method":"x"}')
    assert exc.code == -32600
    assert exc.id is None


@pytest.mark.parametrize(
    ("id_json", "what"),
    [
        ("null", "null"),
        ("7.0", "float"),
        ("true", "boolean"),
        ("false", "boolean"),
        ('{"a":1}', "object"),
        ("[1]", "array"),
    ],
)
def test_request_with_non_id_value_is_invalid_request(id_json: str, what: str) -> None:
    """A request id that is null, a float, a boolean, an object or an array is rejected, naming the type."""
    exc = invalid(f'{{"jsonrpc":"2.0","id":{id_json},"method":"x"}}')
    assert exc.code == -32600
    assert exc.id is None
    assert what in exc.message


@pytest.mark.parametrize(("id_json", "what"), [("7.0", "float"), ("true", "boolean"), ('{"a":1}', "object")])
def test_result_response_with_non_id_value_is_invalid(id_json: str, what: str) -> None:
    """A result response needs a string or integer id (not a float / boolean / object)."""
    exc = invalid(f'{{"jsonrpc":"2.0","id":{id_json},"result":{{}}}}')
    assert exc.code == -32600
    assert exc.id is None
    assert what in exc.message


@pytest.mark.parametrize("id_json", [None, "null"])
def test_result_response_without_id_is_invalid(id_json: str | None) -> None:
    """A result response with an absent or null id is -32600."""
    id_part = "" if id_json is None else f'"id":{id_json},'
    exc = invalid(f'{{"jsonrpc":"2.0",{id_part}"result":{{}}}}')
    assert exc.code == -32600
    assert exc.id is None


@pytest.mark.parametrize("id_json", ["7.0", "true", "[1]"])
def test_error_response_with_non_id_value_is_invalid(id_json: str) -> None:
    """An error response may have a null or absent id, but not a float / boolean / array."""
    exc = invalid(f'{{"jsonrpc":"2.0","id":{id_json},"error":{{"code":1,"message":"m"}}}}')
    assert exc.code == -32600


def test_no_method_no_result_no_error_is_invalid_request() -> None:
    """A message that is none of request, notification, response is -32600 with its id."""
    exc = invalid(b'{"jsonrpc":"2.0","id":5}')
    assert exc.code == -32600
    assert exc.id == 5
    exc = invalid(b'{"jsonrpc":"2.0"}')
    assert exc.code == -32600
    assert exc.id is None


@pytest.mark.parametrize("method_json", ["5", "null", '["x"]', '{"a":1}', "true"])
def test_method_not_a_string_is_invalid_request(method_json: str) -> None:
    """``method`` must be a string; the error keeps the readable id."""
    exc = invalid(f'{{"jsonrpc":"2.0","id":"abc","method":{method_json}}}')
    assert exc.code == -32600
    assert "method" in exc.message
    assert exc.id == "abc"


def test_notification_with_non_string_method_is_invalid() -> None:
    """Without an id, a non-string ``method`` is -32600 with no id."""
    exc = invalid(b'{"jsonrpc":"2.0","method":1}')
    assert exc.code == -32600
    assert exc.id is None


@pytest.mark.parametrize(
    "error_json",
    [
        '{"message":"m"}',
        '{"code":"1","message":"m"}',
        '{"code":1.0,"message":"m"}',
        '{"code":true,"message":"m"}',
        '{"code":1}',
        '{"code":1,"message":2}',
        '{"code":1,"message":null}',
        '"oops"',
        "[1]",
        "null",
    ],
)
def test_error_object_without_int_code_and_str_message_is_invalid(error_json: str) -> None:
    """``error`` must be an object with an integer ``code`` and a string ``message``."""
    exc = invalid(f'{{"jsonrpc":"2.0","id":1,"error":{error_json}}}')
    assert exc.code == -32600
    assert "code" in exc.message and "message" in exc.message


@pytest.mark.parametrize("data", [b'[{"jsonrpc":"2.0","method":"x"}]', b"[]", b"  \n[1, 2]"])
def test_batch_array_is_invalid_request_mentioning_batch(data: bytes) -> None:
    """decode() refuses a batch array with -32600 and a message that says "batch"."""
    exc = invalid(data)
    assert exc.code == -32600
    assert "batch" in exc.message
    assert exc.id is None


def test_is_batch() -> None:
    """is_batch looks at the first non-blank byte only."""
    assert is_batch(b"[1]")
    assert is_batch(b" \r\n\t[")
    assert not is_batch(b'{"a":[1]}')
    assert not is_batch(b"")
    assert not is_batch(b'"[abc"')


def test_deeply_nested_json_is_invalid_message_not_recursion_error() -> None:
    """A deeply nested value inside any member gives InvalidMessage, never another exception."""
    depth = 5000
    data = b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * depth + b"]" * depth + b"}"
    with contextlib.suppress(InvalidMessage):
        decode(data)


def test_out_of_range_number_is_not_reported_as_non_object() -> None:
    """A valid error object whose ``data`` holds 1e400 is not described as "not a JSON object"."""
    exc = invalid(b'{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m","data":1e400}}')
    assert exc.code == -32600
    assert "must be a JSON object" not in exc.message


# --- request ids match by exact type -----------------------------------------------------------


def test_int_and_string_ids_are_distinct() -> None:
    """``"id": 7`` and ``"id": "7"`` decode to 7 (int) and "7" (str), which are unequal."""
    a = decode(b'{"jsonrpc":"2.0","id":7,"result":{}}')
    b = decode(b'{"jsonrpc":"2.0","id":"7","result":{}}')
    assert isinstance(a, Response) and isinstance(b, Response)
    assert type(a.id) is int and a.id == 7
    assert type(b.id) is str and b.id == "7"
    assert a.id != b.id  # type: ignore[comparison-overlap]  # (that an int and a str never meet is the point)
    assert len({a.id, b.id}) == 2


@pytest.mark.parametrize("value", ["true", "false"])
@pytest.mark.parametrize("kind", ["method", "result", "error"])
def test_boolean_is_never_an_id(value: str, kind: str) -> None:
    """JSON true/false is never taken as an id (not even as 1/0), on any kind of message."""
    tail = {"method": '"method":"x"', "result": '"result":{}', "error": '"error":{"code":1,"message":"m"}'}[kind]
    exc = invalid(f'{{"jsonrpc":"2.0","id":{value},{tail}}}')
    assert exc.code == -32600
    assert exc.id is None


def test_boolean_id_is_not_readable_when_jsonrpc_is_wrong() -> None:
    """Even in an otherwise broken message, a boolean is not reported as the id."""
    exc = invalid(b'{"jsonrpc":"1.0","id":true,"method":"x"}')
    assert exc.id is None


# --- decode_batch ------------------------------------------------------------------------------


def test_decode_batch_decodes_each_element_or_reports_it() -> None:
    """Each batch element becomes a message or the InvalidMessage describing it, in order."""
    data = (
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},'
        b" 5,"
        b' {"jsonrpc":"2.0","method":"n"},'
        b' {"jsonrpc":"1.0","id":"q","method":"b"},'
        b' {"jsonrpc":"2.0","id":2,"result":{"ok":true}},'
        b" [1]]"
    )
    out = decode_batch(data)
    assert len(out) == 6
    assert type(out[0]) is Request and out[0].id == 1 and out[0].method == "a"
    assert isinstance(out[1], InvalidMessage) and out[1].code == -32600 and out[1].id is None
    assert type(out[2]) is Notification and out[2].method == "n"
    assert isinstance(out[3], InvalidMessage) and out[3].code == -32600 and out[3].id == "q"
    assert type(out[4]) is Response and decode_params(out[4].result, dict) == {"ok": True}
    assert isinstance(out[5], InvalidMessage) and out[5].code == -32600


def test_decode_batch_empty_array_is_invalid_request() -> None:
    """An empty batch is -32600."""
    with pytest.raises(InvalidMessage) as info:
        decode_batch(b" [ ] ")
    assert info.value.code == -32600
    assert info.value.id is None


@pytest.mark.parametrize("data", [b"[", b"[1,", b"[{]", b"\xff"])
def test_decode_batch_invalid_json_is_parse_error(data: bytes) -> None:
    """A batch that is not JSON is -32700."""
    with pytest.raises(InvalidMessage) as info:
        decode_batch(data)
    assert info.value.code == -32700
    assert info.value.id is None


@pytest.mark.parametrize("data", [b"{}", b"1", b'"x"'])
def test_decode_batch_valid_json_non_array_is_invalid_request(data: bytes) -> None:
    """Valid JSON that is not an array is an invalid request (-32600), not a parse error."""
    with pytest.raises(InvalidMessage) as info:
        decode_batch(data)
    assert info.value.code == -32600


# --- decode_params -----------------------------------------------------------------------------


class Greeting(msgspec.Struct):
    name: str
    times: int = 1


class AllDefaults(msgspec.Struct):
    cursor: str | None = None
    limit: int = 10


def test_decode_params_wrong_type_names_the_path() -> None:
    """A field of the wrong type is -32602 with the JSON path in the message."""
    msg = decode(b'{"jsonrpc":"2.0","id":1,"method":"greet","params":{"name":5}}')
    assert isinstance(msg, Request)
    with pytest.raises(McpError) as info:
        decode_params(msg.params, Greeting)
    assert info.value.code == errors.INVALID_PARAMS == -32602
    assert "$.name" in info.value.message


def test_decode_params_nested_path_is_named() -> None:
    """The path of a nested mistake is given in full."""
    with pytest.raises(McpError) as info:
        decode_params(msgspec.Raw(b'{"name":"t","arguments":[1]}'), CallToolParams)
    assert info.value.code == -32602
    assert "$.arguments" in info.value.message


def test_decode_params_missing_required_field_is_invalid_params() -> None:
    """A missing required field is -32602 naming the field."""
    with pytest.raises(McpError) as info:
        decode_params(msgspec.Raw(b'{"times":2}'), Greeting)
    assert info.value.code == -32602
    assert "name" in info.value.message


@pytest.mark.parametrize("raw", [b"[]", b'"x"', b"3"])
def test_decode_params_not_an_object_is_invalid_params(raw: bytes) -> None:
    """``params`` that is not an object does not fit a struct: -32602."""
    with pytest.raises(McpError) as info:
        decode_params(msgspec.Raw(raw), Greeting)
    assert info.value.code == -32602


def test_absent_params_decode_as_empty_object() -> None:
    """A request without ``params`` decodes into a struct whose fields all have defaults."""
    msg = decode(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert isinstance(msg, Request)
    assert decode_params(msg.params, AllDefaults) == AllDefaults()
    assert decode_params(msg.params, dict) == {}
    assert decode_params(msg.params, PaginatedParams) == PaginatedParams()


def test_absent_params_still_require_required_fields() -> None:
    """Absent params is ``{}``, so a required field is still reported missing (-32602)."""
    msg = decode(b'{"jsonrpc":"2.0","id":1,"method":"greet"}')
    assert isinstance(msg, Request)
    with pytest.raises(McpError) as info:
        decode_params(msg.params, Greeting)
    assert info.value.code == -32602


# --- encoding ----------------------------------------------------------------------------------


def compact(out: bytes) -> bytes:
    """``out`` re-serialised as compact JSON with the same member order."""
    return json.dumps(json.loads(out), separators=(",", ":"), ensure_ascii=False).encode()


def test_encode_request_is_compact_one_line_and_round_trips() -> None:
    """encode_request writes compact JSON on one line, with no trailing newline."""
    out = encode_request(3, "tools/call", {"name": "add", "arguments": {"a": [1, 2]}})
    assert out == b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":[1,2]}}}'
    assert out == compact(out)
    msg = decode(out)
    assert type(msg) is Request and msg.id == 3 and msg.method == "tools/call"
    assert decode_params(msg.params, dict) == {"name": "add", "arguments": {"a": [1, 2]}}


def test_encode_request_without_params_omits_them() -> None:
    """Without params the ``params`` member is absent."""
    out = encode_request("a", "ping")
    assert json.loads(out) == {"jsonrpc": "2.0", "id": "a", "method": "ping"}


def test_encode_notification_round_trips() -> None:
    """encode_notification writes a message with no id that decodes as a Notification."""
    out = encode_notification("notifications/progress", {"progress": 1})
    assert json.loads(out) == {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    assert out == compact(out)
    msg = decode(out)
    assert type(msg) is Notification
    assert decode_params(msg.params, dict) == {"progress": 1}
    assert json.loads(encode_notification("x")) == {"jsonrpc": "2.0", "method": "x"}


def test_encode_result_round_trips() -> None:
    """encode_result writes ``result`` and decodes back to a Response with the same id."""
    out = encode_result("r1", {"content": [{"type": "text", "text": "hi"}]})
    assert out == compact(out)
    msg = decode(out)
    assert type(msg) is Response and msg.id == "r1"
    assert decode_params(msg.result, dict) == {"content": [{"type": "text", "text": "hi"}]}


def test_encode_error_round_trips_with_data() -> None:
    """encode_error with data writes it inside ``error`` and decodes back."""
    out = encode_error(9, -32602, "bad", {"path": "$.x"})
    assert json.loads(out) == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {"code": -32602, "message": "bad", "data": {"path": "$.x"}},
    }
    assert out == compact(out)
    assert decode(out) == ErrorResponse(9, -32602, "bad", {"path": "$.x"})


def test_encode_error_omits_data_when_unset() -> None:
    """Without data the ``data`` member is absent from the error object."""
    out = encode_error(9, -32601, "no such method")
    assert "data" not in json.loads(out)["error"]


def test_encode_error_without_id_omits_id() -> None:
    """encode_error(None, ...) has no ``id`` member at all."""
    out = encode_error(None, -32700, "parse error")
    assert "id" not in json.loads(out)
    assert decode(out) == ErrorResponse(None, -32700, "parse error", None)


def test_encode_error_null_id_writes_id_null() -> None:
    """With null_id=True an unknown id is written as ``"id":null``."""
    out = encode_error(None, -32700, "parse error", null_id=True)
    assert b'"id":null' in out
    assert json.loads(out)["id"] is None
    assert decode(out) == ErrorResponse(None, -32700, "parse error", None)


def test_encode_error_null_id_does_not_override_a_real_id() -> None:
    """null_id only matters when id is None."""
    assert json.loads(encode_error(0, 1, "m", null_id=True))["id"] == 0


def test_encoded_newlines_in_strings_are_escaped() -> None:
    """Strings containing newlines never put a raw newline byte on the wire."""
    nasty = "line1\nline2\r\nline3\u2028"
    outs = [
        encode_request(nasty, nasty, {nasty: nasty}),
        encode_notification(nasty, {"k": [nasty]}),
        encode_result(nasty, {"text": nasty}),
        encode_error(nasty, 1, nasty, {"d": nasty}),
    ]
    for out in outs:
        assert b"\n" not in out
        assert b"\r" not in out
    req = decode(outs[0])
    assert type(req) is Request and req.id == nasty and req.method == nasty
    assert decode_params(req.params, dict) == {nasty: nasty}
    assert decode(outs[3]) == ErrorResponse(nasty, 1, nasty, {"d": nasty})


# --- properties --------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
envelope_values = st.one_of(
    json_values,
    st.just("2.0"),
    st.fixed_dictionaries({"code": json_values, "message": json_values}),
    st.fixed_dictionaries({"code": st.integers(), "message": st.text()}),
)
envelopes = st.dictionaries(envelope_keys | st.text(max_size=5), envelope_values, max_size=6)


def check_outcome(data: bytes | str) -> Any:
    """Decode ``data``; it must yield a well-formed message or InvalidMessage, nothing else."""
    try:
        msg = decode(data)
    except InvalidMessage as exc:
        assert exc.code in (-32700, -32600)
        assert exc.id is None or type(exc.id) in (int, str)
        assert isinstance(exc.message, str) and exc.message
        return exc
    assert type(msg) in MESSAGE_TYPES
    if isinstance(msg, Request | Response):  # (exact types: checked just above)
        assert type(msg.id) in (int, str)
    if isinstance(msg, ErrorResponse):
        assert msg.id is None or type(msg.id) in (int, str)
        assert type(msg.code) is int and type(msg.message) is str
    if isinstance(msg, Request | Notification):
        assert type(msg.method) is str
    return msg


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_give_message_or_invalid_message(data: bytes) -> None:
    """Any bytes decode to a message or raise InvalidMessage; no other exception escapes."""
    check_outcome(data)


@given(json_values)
def test_arbitrary_json_values_give_message_or_invalid_request(value: Any) -> None:
    """Any valid JSON value decodes to a message or raises -32600 (never -32700)."""
    out = check_outcome(msgspec.json.encode(value))
    if isinstance(out, InvalidMessage):
        assert out.code == -32600


@given(envelopes)
def test_arbitrary_envelopes_give_message_or_invalid_request(value: dict[str, Any]) -> None:
    """Objects built from envelope members decode to a message or raise -32600."""
    out = check_outcome(msgspec.json.encode(value))
    if isinstance(out, InvalidMessage):
        assert out.code == -32600
    elif value.get("jsonrpc") != "2.0":
        pytest.fail(f"accepted a message without jsonrpc 2.0: {value!r}")


request_ids = st.integers(min_value=-(2**53), max_value=2**53) | st.text()
params_values = st.none() | st.dictionaries(st.text(max_size=10), json_values, max_size=4)


@given(request_ids, st.text(), params_values)
def test_request_round_trip(id_: int | str, method: str, params: dict[str, Any] | None) -> None:
    """encode_request then decode gives back the same id (same type), method and params."""
    out = encode_request(id_, method) if params is None else encode_request(id_, method, params)
    assert b"\n" not in out
    msg = decode(out)
    assert type(msg) is Request
    assert msg.id == id_ and type(msg.id) is type(id_)
    assert msg.method == method
    if params is None:
        assert bytes(msg.params) == b""
    else:
        assert decode_params(msg.params, dict[str, Any]) == params


@given(request_ids | st.none(), st.integers(min_value=-(2**31), max_value=2**31), st.text(), st.booleans())
def test_error_round_trip(id_: int | str | None, code: int, message: str, null_id: bool) -> None:
    """encode_error then decode gives back id, code and message."""
    out = encode_error(id_, code, message, null_id=null_id)
    assert b"\n" not in out
    assert decode(out) == ErrorResponse(id_, code, message, None)
    assert ("id" in json.loads(out)) == (id_ is not None or null_id)
