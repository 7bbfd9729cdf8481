"""Fuzz targets for minimcp's sans-I/O layers: JSON-RPC decoding, line framing, elicitation forms, HTTP/1.1.

Each target takes bytes and checks an oracle; anything but the documented outcome is a crash:

``jsonrpc``
    ``jsonrpc.decode`` / ``decode_batch`` give a message or ``InvalidMessage`` (-32700 / -32600,
    with a readable id or none); a decoded message survives encode -> decode unchanged; its params
    decode into MCP types or raise ``McpError(-32602)``.
``framing``
    ``LineFramer`` gives the same lines however the stream is chunked (whole, in random pieces,
    byte by byte), never holds more than ``max_line`` bytes, and each line is non-empty, has no
    newline and fits the limit.
``forms``
    ``forms.parse_schema`` / ``compile_form`` of any JSON raise only ``FormDefinitionError``; for a
    parsed form, ``validate`` raises only ``FormValidationError``, filled defaults are always valid,
    ``schema_for`` raises only ``FormDefinitionError``, and the canonical schema parses back to the
    same fields.
``forms_typed``
    compiled typed forms (Struct, dataclass, TypedDict, enums, multi-select, formats, bounds) given
    any JSON answer: ``validate`` raises only ``FormValidationError``, and a valid answer builds.
``h1``
    ``H1Connection`` (minimcp's HTTP/1.1 server without I/O), driven as the server drives it (bytes
    fed only when it asks; each request's body read, then answered): only the documented outcomes
    (a head, body pieces, ``CLOSED``, or a ``Reject`` of 400 / 431 / 501 whose bytes are that
    response), never more buffered than the head bound plus one read, and the same requests, bodies
    and end however the bytes are chunked (unless a head near the size bound is refused one way).

Usage::

    python fuzz/fuzz_targets.py --minutes 3                  # every target, time split evenly
    python fuzz/fuzz_targets.py --minutes 1 --target forms   # one target
    python fuzz/fuzz_targets.py --engine random --minutes 1  # seeded mutation fuzzer (no atheris)
    python fuzz/fuzz_targets.py --replay fuzz/regressions/jsonrpc-* --target jsonrpc

The engine is atheris (coverage-guided libFuzzer) when it is installed, else a seeded mutation
fuzzer. Crash inputs are copied to ``fuzz/crashes/<target>-<sha1>``; the regression test of each
goes into ``tests/scenarios/test_hostile.py``, and the input into ``fuzz/regressions/`` (part of the
target's seeds, so the test suite replays it).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # pragma: no cover - depends on the environment
    import atheris

    HAVE_ATHERIS = True
except ImportError:  # pragma: no cover
    atheris = None
    HAVE_ATHERIS = False

if HAVE_ATHERIS and os.environ.get("MINIMCP_FUZZ_WORKER"):  # pragma: no cover - only in fuzz workers
    with atheris.instrument_imports(include=["minimcp"]):
        import msgspec

        from minimcp import forms
        from minimcp.transports import h1_connection as h1
        from minimcp.wire import errors, jsonrpc, types
        from minimcp.wire.framing import LineFramer, Oversized
else:
    import msgspec

    from minimcp import forms
    from minimcp.transports import h1_connection as h1
    from minimcp.wire import errors, jsonrpc, types
    from minimcp.wire.framing import LineFramer, Oversized

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MESSAGE_TYPES = (jsonrpc.Request, jsonrpc.Notification, jsonrpc.Response, jsonrpc.ErrorResponse)
PARAM_TYPES = (
    types.InitializeParams,
    types.CallToolParams,
    types.CancelledParams,
    types.ProgressParams,
    types.ElicitRequestParams,
    types.ElicitResult,
    types.CreateMessageParams,
    types.CompleteParams,
)


class Bytes:
    """Draws small decisions from the input bytes (deterministic; zeros once exhausted)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self, n: int) -> int:
        return (self.byte() << 8 | self.byte()) % n if n > 0 else 0

    def rest(self) -> bytes:
        return self.data[self.pos :]


# --- jsonrpc -------------------------------------------------------------------------------------------


def _check_message(message: Any) -> None:
    assert type(message) in MESSAGE_TYPES, type(message)
    t = type(message)
    if t is jsonrpc.Request or t is jsonrpc.Response:
        assert type(message.id) in (int, str)
    if t is jsonrpc.Request:
        again = jsonrpc.decode(jsonrpc.encode_request(message.id, message.method, message.params or msgspec.UNSET))
    elif t is jsonrpc.Notification:
        again = jsonrpc.decode(jsonrpc.encode_notification(message.method, message.params or msgspec.UNSET))
    elif t is jsonrpc.Response:
        again = jsonrpc.decode(jsonrpc.encode_result(message.id, message.result))
    else:
        data = msgspec.UNSET if message.data is None else message.data
        again = jsonrpc.decode(jsonrpc.encode_error(message.id, message.code, message.message, data))
    assert type(again) is t, (message, again)
    for field in message.__struct_fields__:
        a, b = getattr(message, field), getattr(again, field)
        if isinstance(a, msgspec.Raw):
            assert bytes(a) == bytes(b), field  # raw params/result travel byte for byte
        else:
            assert a == b or (a != a and b != b), (field, a, b)  # NaN is not equal to itself
    for field in ("params", "result"):
        raw = getattr(message, field, None)
        if raw:
            _raw_is_json(raw)
    params = getattr(message, "params", None)
    if params is not None:
        for params_type in PARAM_TYPES:
            try:
                jsonrpc.decode_params(params, params_type)
            except errors.McpError as exc:
                assert exc.code == errors.INVALID_PARAMS


def _raw_is_json(raw: msgspec.Raw) -> None:
    """What the layers above rely on: raw params and results are JSON (maybe of the wrong shape)."""
    try:
        msgspec.json.decode(raw)
    except msgspec.ValidationError:
        pass  # JSON that Python cannot hold (1e400): the typed decoders report it as -32602
    except msgspec.DecodeError as exc:
        # Documented: raw members skip UTF-8 validation (msgspec.Raw); the typed decoders report such
        # bytes as -32602 (checked for params below; tests/scenarios/test_hostile.py::test_fuzz_non_utf8_*).
        if "UTF-8" not in str(exc):
            raise


def target_jsonrpc(data: bytes) -> None:
    try:
        message = jsonrpc.decode(data)
    except jsonrpc.InvalidMessage as exc:
        assert exc.code in (errors.PARSE_ERROR, errors.INVALID_REQUEST), exc.code
        assert exc.id is None or type(exc.id) in (int, str)
        assert isinstance(exc.message, str) and exc.message
    else:
        _check_message(message)
    # the str path (decode() accepts str too): same outcome classes as bytes, lone surrogates included
    # (test_decode_str_with_lone_surrogates_is_a_documented_error).
    text = data.decode("utf-8", "surrogateescape")
    try:
        jsonrpc.decode(text)
    except jsonrpc.InvalidMessage as exc:
        assert exc.code in (errors.PARSE_ERROR, errors.INVALID_REQUEST)
    try:
        parts = jsonrpc.decode_batch(data)
    except jsonrpc.InvalidMessage as exc:
        assert exc.code in (errors.PARSE_ERROR, errors.INVALID_REQUEST)
    else:
        assert parts and jsonrpc.is_batch(data)
        for part in parts:
            if isinstance(part, jsonrpc.InvalidMessage):
                # -32700 for an element whose strings are not UTF-8 (the array itself was skimmed raw)
                assert part.code in (errors.PARSE_ERROR, errors.INVALID_REQUEST)
            else:
                assert type(part) in MESSAGE_TYPES


# --- framing -------------------------------------------------------------------------------------------


def _frame(max_line: int, pieces: list[bytes]) -> list[Any]:
    framer = LineFramer(max_line)
    out: list[Any] = []
    for piece in pieces:
        out += framer.feed(piece)
        assert framer.buffered <= max_line, (framer.buffered, max_line)
    tail = framer.end()
    if tail is not None:
        out.append(tail)
    assert framer.buffered == 0
    return out


def target_framing(data: bytes) -> None:
    src = Bytes(data)
    max_line = 1 + src.int(300)
    cuts = sorted({src.int(4096) for _ in range(src.byte() % 16)})
    stream = src.rest()
    whole = _frame(max_line, [stream])
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[i:j] for i, j in zip([0, *points], [*points, len(stream)], strict=True)]
    assert _frame(max_line, pieces) == whole
    if len(stream) <= 512:
        assert _frame(max_line, [stream[i : i + 1] for i in range(len(stream))]) == whole
    for line in whole:
        if isinstance(line, Oversized):
            continue
        assert 0 < len(line) <= max_line and b"\n" not in line and line.strip(), line


# --- h1 ------------------------------------------------------------------------------------------------


def _h1_run(max_head: int, pieces: list[bytes]) -> list[Any]:
    """What ``H1Connection`` makes of ``pieces``, driven as minimcp's server drives it (then the end of input)."""
    conn = h1.H1Connection(max_head)
    out: list[Any] = []
    body = b""
    fed = 0
    for _ in range(100_000):
        event = conn.next_event()
        if event is h1.NEED_DATA:
            piece = pieces[fed] if fed < len(pieces) else b""
            if fed > len(pieces):
                raise AssertionError("asked for data after the end of the input")
            fed += 1
            conn.receive_data(piece)
            assert conn.buffered <= max_head + len(piece) + 1, (conn.buffered, max_head, len(piece))
        elif type(event) is h1.Head:
            assert isinstance(event.method, str) and isinstance(event.path, str)
            assert all(name == name.lower() for name, _ in event.headers)
            out.append(("head", event.method, event.raw_path, event.query_string, event.http_version, event.headers))
            body = b""
        elif type(event) is h1.Body:
            body += event.data
            if not event.more:
                out.append(("body", body))
                conn.response_start(200, [(b"content-type", b"text/plain")])
                answer = conn.response_body(b"ok", False)
                assert answer.startswith(b"HTTP/1.1 200 ") and conn.response_done, answer
                if not conn.reusable:
                    out.append("close")
                    return out
                conn.next_cycle()
        elif type(event) is h1.Reject:
            assert event.status in (400, 431, 501), event.status
            assert event.data.startswith(b"HTTP/1.1 %d " % event.status) and b"connection: close" in event.data
            out.append(("reject", event.status))
            return out
        else:
            assert event == h1.CLOSED, event  # PAUSED: never, as driven here
            out.append("closed")
            return out
    raise AssertionError("no end")


def target_h1(data: bytes) -> None:
    src = Bytes(data)
    max_head = 64 + src.int(2048)
    cuts = sorted({src.int(4096) for _ in range(src.byte() % 16)})
    stream = src.rest()
    whole = _h1_run(max_head, [stream] if stream else [])
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[i:j] for i, j in zip([0, *points], [*points, len(stream)], strict=True)]
    runs = [_h1_run(max_head, [p for p in pieces if p])]
    if len(stream) <= 512:
        runs.append(_h1_run(max_head, [stream[i : i + 1] for i in range(len(stream))]))
    for run in runs:
        if ("reject", 431) in (run[-1], whole[-1]):  # near the bound, a head may pass whole and not in pieces
            continue
        assert run == whole, (run, whole)


# --- forms ---------------------------------------------------------------------------------------------

_KINDS = ("string", "number", "integer", "boolean", "array", "object", "null", 7, None)
_KEYS = (
    "title", "description", "default", "enum", "enumNames", "oneOf", "items", "format", "minLength",
    "maxLength", "minimum", "maximum", "minItems", "maxItems", "$ref", "properties", "anyOf",
)  # fmt: skip
_VALUES: tuple[Any, ...] = (
    0, 1, -1, 2, 5, 1.5, -0.0, 1e308, 2**64, True, False, None, "", "a", "b", "email", "uri", "date", "date-time",
    "x@y.z", "2024-02-29", "2024-01-01T00:00:00Z", "https://a.b/", ["a", "b"], ["a", "a"], [], [1], {},
    {"type": "string", "enum": ["a", "b"]}, {"anyOf": [{"const": "a", "title": "A"}, {"const": "b"}]},
    [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}], [{"const": 1}], {"type": "string"},
)  # fmt: skip
_NAMES = ("a", "b", "count", "email", "password", "day", "x y", "", "required")


def _value(src: Bytes) -> Any:
    return _VALUES[src.int(len(_VALUES))]


def _schema_from(src: Bytes) -> tuple[Any, Any]:
    props: dict[str, Any] = {}
    for _ in range(src.byte() % 5):
        prop: dict[str, Any] = {"type": _KINDS[src.int(len(_KINDS))]}
        for _ in range(src.byte() % 6):
            prop[_KEYS[src.int(len(_KEYS))]] = _value(src)
        props[_NAMES[src.int(len(_NAMES))]] = prop
    schema: dict[str, Any] = {"type": "object" if src.byte() % 8 else _value(src), "properties": props}
    if src.byte() % 2:
        schema["required"] = [_NAMES[src.int(len(_NAMES))] for _ in range(src.byte() % 3)]
    content = {_NAMES[src.int(len(_NAMES))]: _value(src) for _ in range(src.byte() % 5)}
    return schema, content


def _check_form(form: forms.Form[Any], content: Any) -> None:
    names = {f.name for f in form.fields}
    try:
        form.validate(form.fill_defaults({}))
    except forms.FormValidationError as exc:
        assert exc.constraint == "required", exc  # defaults are checked when the form is made
    for version in VERSIONS:
        try:
            rendered = form.schema_for(version)
        except forms.FormDefinitionError:
            continue
        again = forms.parse_schema(rendered)  # what we send, we can read back
        assert [f.name for f in again.fields] == [f.name for f in form.fields]
        if version == "2025-11-25":
            assert [(f.kind, f.required, f.options) for f in again.fields] == [
                (f.kind, f.required, f.options) for f in form.fields
            ]
    try:
        out = form.validate(content)
    except forms.FormValidationError as exc:
        assert exc.field is None or exc.field in names, exc
        assert exc.constraint, exc
    else:
        assert set(out) <= names
        assert form.validate(out) == out  # a validated answer is a fixed point
        form.build(content)
    if isinstance(content, dict):
        form.fill_defaults(content)


def target_forms(data: bytes) -> None:
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        schema, content = _schema_from(Bytes(data))
    else:
        if isinstance(value, list) and len(value) == 2:
            schema, content = value
        else:
            schema, content = value, {}
    try:
        form = forms.parse_schema(schema)
    except forms.FormDefinitionError:
        pass
    else:
        _check_form(form, content)
    if isinstance(schema, dict):
        try:
            compiled = forms.compile_form(schema)
        except forms.FormDefinitionError:  # SensitiveFieldError included
            pass
        else:
            _check_form(compiled, content)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Booking(msgspec.Struct):
    day: Annotated[str, msgspec.Meta(extra_json_schema={"format": "date"})]
    party: Annotated[int, msgspec.Meta(ge=1, le=12)]
    seating: Literal["indoor", "outdoor"] = "indoor"
    extras: list[Literal["cake", "music", "flowers"]] = []
    notes: Annotated[str, msgspec.Meta(max_length=20)] | None = None


@dataclasses.dataclass
class Contact:
    email: Annotated[str, msgspec.Meta(extra_json_schema={"format": "email"})]
    site: Annotated[str, msgspec.Meta(extra_json_schema={"format": "uri"})] = "https://example.com"
    ratio: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.5
    color: Color = Color.RED
    ok: bool = False

    def __post_init__(self) -> None:
        if self.email.endswith("@blocked.example"):
            raise ValueError("blocked domain")


class When(TypedDict):
    at: Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
    colors: set[Color]


TYPED_FORMS: list[forms.Form[Any]] = []


def _typed_forms() -> list[forms.Form[Any]]:
    if not TYPED_FORMS:
        TYPED_FORMS.extend(forms.compile_form(t) for t in (Booking, Contact, When))
    return TYPED_FORMS


def target_forms_typed(data: bytes) -> None:
    try:
        content = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        src = Bytes(data)
        names = ("day", "party", "seating", "extras", "notes", "email", "site", "ratio", "color", "ok", "at", "colors")
        content = {names[src.int(len(names))]: _value(src) for _ in range(src.byte() % 8)}
    for form in _typed_forms():
        try:
            form.build(content)
        except forms.FormValidationError as exc:
            assert exc.field is None or exc.field in {f.name for f in form.fields}, exc


TARGETS: dict[str, Callable[[bytes], None]] = {
    "jsonrpc": target_jsonrpc,
    "framing": target_framing,
    "forms": target_forms,
    "forms_typed": target_forms_typed,
    "h1": target_h1,
}

SEEDS: dict[str, list[bytes]] = {
    "jsonrpc": [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"n":1},"_meta":{}}}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"r"}}',
        b'{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"count":1}}}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m","data":[1]}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},7]',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"c","version":"1"}}}',
        b'{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"form","message":"m",'
        b'"requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}}',
    ],
    "framing": [
        b"\x00\x10\x03\x00\x05\x00\x09" + b'{"a":1}\n{"b":2}\r\n\n   \nxyz',
        b"\x00\x02\x01\x00\x01" + b"aaaa\nb\n",
        b"\x01\x00\x00" + b"x" * 300 + b"\n" + b"y" * 10,
    ],
    "forms": [
        json.dumps(
            {"type": "object", "properties": {
                "day": {"type": "string", "format": "date", "default": "2024-01-01"},
                "party": {"type": "integer", "minimum": 1, "maximum": 12},
                "seat": {"type": "string", "enum": ["in", "out"], "enumNames": ["In", "Out"]},
                "extras": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "maxItems": 1},
                "ok": {"type": "boolean", "default": True}},
             "required": ["day", "party"]}
        ).encode(),
        json.dumps([
            {"type": "object", "properties": {"n": {"type": "number", "minimum": 0.5}}, "required": ["n"]},
            {"n": 0.25},
        ]).encode(),
        b"\x03\x01\x02\x00\x05\x00\x07",
    ],
    "h1": [
        b"\x04\x00\x03\x00\x07\x00\x1d\x00\x40"
        b"POST /a%20b?x=1 HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nhost: x\r\n\r\n",
        b"\x04\x00\x02\x00\x20\x00\x30"
        b"POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        b"\x04\x00\x00"
        b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        b"\x04\x00\x00POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd",
        b"\x00\x00\x01\x00\x10GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 200 + b"\r\n\r\n",
        b"\x04\x00\x01\x00\x05POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"\x04\x00\x00GET / HTTP/1.0\r\n\r\nHEAD / HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n\r\n",
        b"\x04\x00\x00GET / HTTP/1.1\r\nhost: x\r\nx\x01: \xff\r\n\r\n",
    ],
    "forms_typed": [
        b'{"day":"2024-02-29","party":3,"extras":["cake"],"notes":"hi"}',
        b'{"email":"a@blocked.example","ratio":0.2,"color":"green"}',
        b'{"at":"2024-01-01T00:00:00+01:00","colors":["red","red"]}',
    ],
}

#: The inputs behind the findings in fuzz/README.md, one file each, named as crash inputs are
#: (``<target>-<sha1 prefix>``). They join their target's seeds, so the test suite replays them
#: (tests/scenarios/test_hostile.py::test_fuzz_oracles_hold_on_seed_inputs) and every fuzz run starts from them.
REGRESSIONS = HERE / "regressions"
for _path in sorted(REGRESSIONS.glob("*-*")):
    SEEDS[_path.name.rsplit("-", 1)[0]].append(_path.read_bytes())


# --- engines -------------------------------------------------------------------------------------------


def _save_crash(target: str, data: bytes, crash_dir: pathlib.Path) -> pathlib.Path:
    crash_dir.mkdir(parents=True, exist_ok=True)
    path = crash_dir / f"{target}-{hashlib.sha1(data).hexdigest()[:16]}"
    path.write_bytes(data)
    return path


_TOKENS = [b"{", b"}", b"[", b"]", b'"', b":", b",", b"\n", b"\r", b"\\u", b"\\ud800", b"null", b"true", b"1e400",
           b"-0", b"99999999999999999999", b'"jsonrpc":"2.0"', b'"id":', b'"method":', b'"params":', b'"result":',
           b'"error":', b'"type":"string"', b'"enum":[]', b'"default":', b"\xff", b"\x00", b"[" * 40]  # fmt: skip


def _crash_kind(exc: BaseException) -> str:
    """One key per distinct failure: exception type and where it was raised (not its message)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{pathlib.Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


def _mutate(rng: random.Random, data: bytes, corpus: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(out))
        if op == 0 and out:
            out[pos % len(out)] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and out:
            del out[pos % len(out) : pos % len(out) + rng.randint(1, 8)]
        elif op == 3:
            out[pos:pos] = rng.choice(_TOKENS)
        elif op == 4 and out:
            i = rng.randrange(len(out))
            out[pos:pos] = out[i : i + rng.randint(1, 32)]
        elif op == 5:
            other = rng.choice(corpus)
            out = out[:pos] + bytearray(other[rng.randint(0, len(other)) :])
        else:
            out[pos:pos] = str(rng.choice([0, -1, 2**31, 2**63, 2**64, 1.5, 1e308])).encode()
    return bytes(out[:4096])


def run_random(target: str, seconds: float, seed: int, crash_dir: pathlib.Path) -> dict[str, Any]:
    """A seeded mutation fuzzer: mutate seeds (and inputs that got further), run the oracle."""
    fn = TARGETS[target]
    rng = random.Random(seed)
    corpus = list(SEEDS[target])
    crashes: dict[str, str] = {}
    runs = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        data = _mutate(rng, rng.choice(corpus), corpus)
        runs += 1
        try:
            fn(data)
        except Exception as exc:  # the oracle failed: a crash
            kind = _crash_kind(exc)
            if kind not in crashes:
                crashes[kind] = f"{_save_crash(target, data, crash_dir)}: {str(exc)[:100]}"
            continue
        if len(corpus) < 2000 and rng.random() < 0.02:
            corpus.append(data)
    return {"target": target, "engine": "random", "seed": seed, "runs": runs, "seconds": seconds,
            "corpus": len(corpus), "crashes": crashes}  # fmt: skip


def _worker(target: str, seconds: float, corpus_dir: pathlib.Path, artifacts: pathlib.Path) -> None:  # pragma: no cover
    fn = TARGETS[target]

    def one_input(data: bytes) -> None:
        fn(data)

    corpus_dir.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(SEEDS[target]):
        (corpus_dir / f"seed-{i}").write_bytes(seed)
    argv = [sys.argv[0], str(corpus_dir), f"-max_total_time={max(1, int(seconds))}", f"-artifact_prefix={artifacts}/",
            "-timeout=20", "-rss_limit_mb=4096", "-max_len=8192", "-print_final_stats=1"]  # fmt: skip
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def _atheris_crash(log: str) -> tuple[str, str]:
    """The failure a worker log reports: (exception type at its innermost frame, message)."""
    lines = log.splitlines()
    marks = [i for i, ln in enumerate(lines) if "Uncaught Python exception" in ln]
    if not marks:
        return "unknown (see the worker log)", ""
    block = lines[marks[-1] + 1 :]
    message = block[0] if block else ""
    where = "?"
    for ln in block[1:]:
        m = re.match(r'\s*File "([^"]+)", line (\d+)', ln)
        if m:
            where = f"{pathlib.Path(m.group(1)).name}:{m.group(2)}"
        if ln.startswith("==") or ln.startswith("SUMMARY"):
            break
    return f"{message.split(':', 1)[0]} at {where}", message[:100]


def run_atheris(target: str, seconds: float, work: pathlib.Path, crash_dir: pathlib.Path) -> dict[str, Any]:
    """Coverage-guided fuzzing in a worker process; restarted after each crash until time is up."""
    corpus_dir = work / "corpus" / target
    artifacts = work / "artifacts" / target
    artifacts.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MINIMCP_FUZZ_WORKER": "1", "PYTHONPATH": str(ROOT)}
    deadline = time.monotonic() + seconds
    runs = 0
    restarts = 0
    crashes: dict[str, str] = {}
    last_stats = ""
    while (left := deadline - time.monotonic()) >= 1:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", target, "--seconds", str(left), "--work", str(work)],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        log = proc.stdout + proc.stderr
        done = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)[^\n]*", log)
        if done:
            runs += int(done[-1])
        stats = re.findall(r"#\d+\s+DONE[^\n]*", log)
        last_stats = stats[-1] if stats else last_stats
        kind, message = _atheris_crash(log)
        for artifact in artifacts.glob("*"):
            if kind not in crashes:
                crashes[kind] = f"{_save_crash(target, artifact.read_bytes(), crash_dir)}: {message}"
            artifact.unlink()
        if proc.returncode == 0:
            break
        restarts += 1
        if restarts > 50:
            break
    corpus = len(list(corpus_dir.glob("*"))) if corpus_dir.exists() else 0
    return {"target": target, "engine": "atheris", "runs": runs, "seconds": round(seconds), "corpus": corpus,
            "final_stats": last_stats, "crashes": crashes}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="total time, split evenly between targets")
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    parser.add_argument("--engine", choices=["auto", "atheris", "random"], default="auto")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random engine")
    parser.add_argument("--work", type=pathlib.Path, default=None, help="corpus and artifacts (default: a temp dir)")
    parser.add_argument("--crashes", type=pathlib.Path, default=HERE / "crashes")
    parser.add_argument("--replay", type=pathlib.Path, nargs="*", help="run these inputs through --target")
    parser.add_argument("--worker", choices=list(TARGETS), help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=60.0, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:  # pragma: no cover - runs in the atheris subprocess
        work = args.work
        _worker(args.worker, args.seconds, work / "corpus" / args.worker, work / "artifacts" / args.worker)
        return
    targets = list(TARGETS) if args.target == "all" else [args.target]
    if args.replay:
        failed = 0
        for path in args.replay:
            for t in targets:
                try:
                    TARGETS[t](path.read_bytes())
                    print(f"{path} [{t}]: ok")
                except Exception as exc:
                    failed += 1
                    print(f"{path} [{t}]: {type(exc).__name__}: {exc}")
        sys.exit(1 if failed else 0)
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if HAVE_ATHERIS else "random"
    if engine == "atheris" and not HAVE_ATHERIS:
        sys.exit("atheris is not installed: pip install atheris, or use --engine random")
    seconds = args.minutes * 60 / len(targets)
    own_work = args.work is None
    work = pathlib.Path(tempfile.mkdtemp(prefix="minimcp-fuzz-")) if own_work else args.work
    results = []
    try:
        for t in targets:
            if engine == "atheris":
                result = run_atheris(t, seconds, work, args.crashes)
            else:
                result = run_random(t, seconds, args.seed, args.crashes)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(len(r["crashes"]) for r in results)
    print(json.dumps({"engine": engine, "minutes": args.minutes, "runs": sum(r["runs"] for r in results),
                      "crashes": total}))  # fmt: skip
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
