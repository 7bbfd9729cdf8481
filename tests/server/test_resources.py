"""minimcp.server.resources: URI templates, template readers, and a reader's value turned into contents."""

from __future__ import annotations

import pytest

from minimcp.server.resources import RegisteredTemplate, UriTemplate, to_contents
from minimcp.wire.types import ResourceContents, ResourceTemplate


def test_a_simple_variable_matches_one_path_segment() -> None:
    t = UriTemplate("bookings://{date}/tables/{table}")
    assert t.names == ("date", "table")
    assert t.match("bookings://2025-12-24/tables/7") == {"date": "2025-12-24", "table": "7"}
    assert t.match("bookings://2025/12/tables/7") is None  # "/" is not in one segment
    assert t.match("bookings://2025-12-24/tables/") is None  # a variable is never empty
    assert t.match("bookings://2025-12-24/tables/7/extra") is None
    assert t.match("bookings://x/tables/7?q=1") is None


def test_a_plus_variable_matches_anything() -> None:
    t = UriTemplate("file:///{+path}")
    assert t.match("file:///etc/hosts") == {"path": "etc/hosts"}
    assert t.match("file:///") is None


def test_the_literal_parts_are_not_patterns() -> None:
    t = UriTemplate("a.b://{x}(1)")
    assert t.match("a.b://v(1)") == {"x": "v"}
    assert t.match("aXb://v(1)") is None
    assert UriTemplate("static://only").match("static://only") == {}


def test_a_repeated_variable_is_refused() -> None:
    with pytest.raises(ValueError, match="repeats"):
        UriTemplate("x://{a}/{a}")


def test_a_template_reader_must_take_every_variable() -> None:
    async def read(date: str, table: str) -> str:
        return ""

    async def partial(date: str) -> str:
        return ""

    definition = ResourceTemplate(uri_template="bookings://{date}/{table}", name="b")
    made = RegisteredTemplate.create(definition, read)
    assert made.template.match("bookings://d/t") == {"date": "d", "table": "t"}
    with pytest.raises(TypeError, match=r"'partial' lacks parameters \['table'\]"):
        RegisteredTemplate.create(definition, partial)


def test_text_bytes_and_ready_contents() -> None:
    text = ResourceContents(uri="x://1", mime_type="text/plain", text="hello")
    assert to_contents("x://1", "text/plain", "hello") == [text]
    assert to_contents("x://1", None, b"\x00\xff") == [ResourceContents(uri="x://1", blob="AP8=")]
    assert to_contents("x://1", None, bytearray(b"a"))[0].blob == "YQ=="
    ready = ResourceContents(uri="x://other", text="t")
    assert to_contents("x://1", None, [ready, "s"]) == [ready, ResourceContents(uri="x://1", text="s")]
    assert to_contents("x://1", None, []) == []


def test_anything_else_is_refused_naming_its_type() -> None:
    with pytest.raises(TypeError, match="returned int"):
        to_contents("x://1", None, 5)
    with pytest.raises(TypeError, match="returned dict"):
        to_contents("x://1", None, ["ok", {"a": 1}])
