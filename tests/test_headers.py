"""minimcp.transports.http._headers: the 2026-07-28 metadata headers (built by the client, checked by the server)
and the Host / Origin allow-list."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minimcp.transports.http._headers import (
    ParamHeader,
    decode_value,
    encode_value,
    header_problem,
    host_allowed,
    host_origin_problem,
    param_headers,
    request_headers,
)
from minimcp.wire.era_probe import META_VERSION

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "order": {"type": "object", "properties": {"priority": {"type": "integer", "x-mcp-header": "Priority"}}},
        "note": {"type": "string", "default": {"x-mcp-header": "NotASchema"}},
    },
}
ANNOTATIONS = param_headers(SCHEMA)
TWICE = {"type": "integer", "x-mcp-header": "k"}  # the same header name as "K"


def params(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


VALUES = ["plain", "with inner space", "", "caf\u00e9", " edge", "tab\t", "=?base64?x?=", "a\nb"]


@pytest.mark.parametrize("value", VALUES)
def test_values_round_trip(value: str) -> None:
    encoded = encode_value(value)
    assert encoded.isascii() and "\n" not in encoded
    assert decode_value(encoded) == value


def test_only_plain_values_travel_as_they_are() -> None:
    assert encode_value("eu-west-1") == "eu-west-1"
    assert encode_value("caf\u00e9") == "=?base64?Y2Fmw6k=?="
    assert decode_value("  eu-west-1 ") == "eu-west-1"  # edge whitespace of the header itself


MALFORMED = [
    "=?base64?Y2Fmw6k?=",  # unpadded
    "=?base64?YR==?=",  # decodes ("a"), but is not the canonical spelling ("YQ==")
    "=?base64?!!!!?=",  # not the base64 alphabet
    "=?base64?/w==?=",  # not UTF-8
    "caf\u00e9",  # not ASCII, and not encoded
    "a\x01b",  # a control character
]


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_values_are_none(raw: str) -> None:
    assert decode_value(raw) is None


def test_annotations_are_found_through_properties_only() -> None:
    expected = (
        ParamHeader(("region",), "Region", "string"),
        ParamHeader(("order", "priority"), "Priority", "integer"),
    )
    assert expected == ANNOTATIONS
    assert ANNOTATIONS[0].header == "mcp-param-region"


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"x-mcp-header": "Root", "type": "object"}, "the schema root"),
        ({"properties": {"a": {"type": "array", "x-mcp-header": "A"}}}, "'array' property"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}}, "not an HTTP token"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "empty"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "K"}, "b": TWICE}}, "used twice"),
        ({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}, "not on a property reachable"),
    ],
)
def test_broken_annotations_are_refused_naming_the_problem(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        param_headers(schema)


def test_the_client_mirrors_method_name_version_and_annotated_arguments() -> None:
    body = params(
        name="ship", arguments={"region": "caf\u00e9", "order": {"priority": 3}}, _meta={META_VERSION: "2026-07-28"}
    )
    headers = request_headers("tools/call", body, {"ship": ANNOTATIONS})
    assert headers == {
        "mcp-method": "tools/call",
        "mcp-protocol-version": "2026-07-28",
        "mcp-name": "ship",
        "mcp-param-region": "=?base64?Y2Fmw6k=?=",
        "mcp-param-priority": "3",
    }
    assert header_problem(headers, "tools/call", body, lambda name: ANNOTATIONS) is None
    assert request_headers("resources/read", params(uri="file:///a"))["mcp-name"] == "file:///a"
    assert request_headers("ping", b"") == {"mcp-method": "ping"}
    assert request_headers("tools/call", b"[1]") == {"mcp-method": "tools/call"}  # not an object: nothing to mirror


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"mcp-method": None}, "missing Mcp-Method"),
        ({"mcp-method": "tools/list"}, "does not match the body's method"),
        ({"mcp-protocol-version": None}, "missing MCP-Protocol-Version"),
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version header '2025-11-25' does not match"),
        ({"mcp-name": None}, "missing Mcp-Name"),
        ({"mcp-name": "other"}, "Mcp-Name header 'other' does not match"),
        ({"mcp-name": "=?base64?%%?="}, "Mcp-Name header is malformed"),
        ({"mcp-param-priority": None}, "missing Mcp-Param-Priority"),
        ({"mcp-param-priority": "4"}, "Mcp-Param-Priority header '4' does not match"),
        ({"mcp-param-region": "=?base64?Y2Fmw6k?="}, "Mcp-Param-Region header is malformed"),
    ],
)
def test_the_server_names_what_does_not_match(change: dict[str, str | None], problem: str) -> None:
    body = params(name="ship", arguments={"region": "caf\u00e9", "order": {"priority": 3}}, _meta={META_VERSION: "v"})
    headers = request_headers("tools/call", body, {"ship": ANNOTATIONS})
    for name, value in change.items():
        if value is None:
            del headers[name]
        else:
            headers[name] = value
    found = header_problem(headers, "tools/call", body, lambda name: ANNOTATIONS)
    assert found is not None and problem in found


def test_a_header_for_an_absent_argument_is_refused() -> None:
    body = params(name="ship", arguments={"region": "eu"})
    headers = {"mcp-method": "tools/call", "mcp-name": "ship", "mcp-param-region": "eu", "mcp-param-priority": "1"}
    found = header_problem(headers, "tools/call", body, lambda name: ANNOTATIONS)
    assert found is not None and "present but the argument 'order.priority' is not" in found


def test_numbers_and_booleans_compare_as_values() -> None:
    schema = {"type": "integer", "x-mcp-header": "N"}, {"type": "boolean", "x-mcp-header": "B"}
    flags = param_headers({"properties": {"n": schema[0], "b": schema[1]}})
    body = params(name="t", arguments={"n": 2.0, "b": False})
    headers = request_headers("tools/call", body, {"t": flags})
    assert (headers["mcp-param-n"], headers["mcp-param-b"]) == ("2", "false")
    assert header_problem({**headers, "mcp-param-n": "2.0"}, "tools/call", body, lambda name: flags) is None
    assert header_problem({**headers, "mcp-param-b": "0"}, "tools/call", body, lambda name: flags) is not None
    assert header_problem({**headers, "mcp-param-n": "nan"}, "tools/call", body, lambda name: flags) is not None


def test_host_patterns() -> None:
    assert host_allowed("localhost:8000", ["localhost:*"])
    assert host_allowed("localhost", ["localhost:*"])
    assert not host_allowed("localhost:80x", ["localhost:*"])
    assert not host_allowed("localhost.evil.example", ["localhost:*"])
    assert host_allowed("anything", ["*"])
    assert host_allowed("api.example", ["api.example"]) and not host_allowed("api.example:443", ["api.example"])


def test_host_and_origin_problems() -> None:
    hosts, origins = ["localhost:*"], ["http://localhost:*"]
    assert host_origin_problem({"host": "localhost:8000"}, hosts, origins) is None  # no Origin: not a browser
    assert host_origin_problem({"host": "LOCALHOST:8000", "origin": "http://localhost:3000"}, hosts, origins) is None
    assert host_origin_problem({"host": "evil.example"}, hosts, origins) == "host 'evil.example' is not allowed"
    assert host_origin_problem({}, hosts, origins) == "host '' is not allowed"
    found = host_origin_problem({"host": "localhost", "origin": "https://evil.example"}, hosts, origins)
    assert found == "origin 'https://evil.example' is not allowed"
    assert host_origin_problem({}, ["*"], origins) is None
