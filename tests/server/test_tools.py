"""minimcp.server.tools: a tool's schema and argument decoding from its signature, and its value back to a result."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Annotated, Any

import msgspec
import pytest

from minimcp.server.tools import (
    RegisteredTool,
    ToolError,
    argument_error,
    build_tool,
    error_result,
    to_result,
    tool_result,
    unchecked_failure,
)
from minimcp.wire.types import CallToolResult, ImageContent, TextContent, ToolAnnotations


class Ctx:
    """Stands for the Context type: a parameter of this type is not an argument."""


@dataclasses.dataclass
class Booking:
    date: str
    party_size: int


def build(fn: Any, **options: Any) -> RegisteredTool:
    settings: dict[str, Any] = {
        "name": None, "title": None, "description": None, "annotations": None,
        "input_schema": None, "output_schema": None, "structured": None, "context_type": Ctx,
    }
    return build_tool(fn, **{**settings, **options})


async def book(ctx: Ctx, date: str, party_size: Annotated[int, msgspec.Meta(ge=1, le=12)] = 2) -> Booking:
    """Book a table."""
    return Booking(date, party_size)


def test_schema_and_definition_come_from_the_signature() -> None:
    tool = build(book)
    assert tool.context_param == "ctx"
    assert tool.args_type is not None and tool.args_type.__struct_fields__ == ("date", "party_size")
    assert tool.structured
    d = tool.definition
    assert (d.name, d.description) == ("book", "Book a table.")
    assert d.input_schema["type"] == "object"
    assert d.input_schema["required"] == ["date"]
    assert d.input_schema["properties"]["party_size"] == {"type": "integer", "minimum": 1, "maximum": 12, "default": 2}
    assert "title" not in d.input_schema
    assert d.output_schema is not None
    properties = d.output_schema["properties"]
    assert isinstance(properties, dict) and set(properties) == {"date", "party_size"}


def test_explicit_options_win() -> None:
    ann = ToolAnnotations(read_only_hint=True)
    tool = build(book, name="reserve", title="Reserve", description="Other.", annotations=ann, structured=False)
    d = tool.definition
    assert (d.name, d.title, d.description, d.annotations) == ("reserve", "Reserve", "Other.", ann)
    assert not tool.structured


def test_arguments_are_decoded_and_checked() -> None:
    tool = build(book)
    assert tool.arguments(b'{"date":"2025-12-24"}') == {"date": "2025-12-24", "party_size": 2}
    assert tool.arguments(b'{"date":"d","party_size":4}') == {"date": "d", "party_size": 4}
    for bad in (b'{"party_size":2}', b'{"date":"d","party_size":13}', b'{"date":"d","extra":1}', b'{"date":5}'):
        with pytest.raises(msgspec.DecodeError):
            tool.arguments(bad)


def test_a_tool_without_parameters_takes_an_empty_object() -> None:
    async def ping() -> str:
        return "pong"

    tool = build(ping)
    assert tool.definition.input_schema == {"type": "object", "additionalProperties": False}
    assert tool.arguments(None) == {} and tool.arguments(b'{"x":1}') == {}
    assert not tool.structured and tool.definition.output_schema is None


def test_sync_functions_and_star_args_are_refused() -> None:
    def sync() -> str:
        return ""

    async def star(*args: int) -> str:
        return ""

    with pytest.raises(TypeError, match="async"):
        build(sync)
    with pytest.raises(TypeError, match=r"\*args"):
        build(star)


def test_an_unannotated_parameter_is_accepted_unchecked_with_a_warning() -> None:
    async def loose(x, y: int) -> str:  # type: ignore[no-untyped-def]
        return ""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tool = build(loose)
    assert tool.unchecked == ("x",)
    assert any("'x'" in str(w.message) and "no type annotation" in str(w.message) for w in caught)
    assert tool.arguments(b'{"x":[1,"a"],"y":1}') == {"x": [1, "a"], "y": 1}
    assert "'x' is not type-checked" in unchecked_failure(tool, "loose")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"{}", "missing required argument 'date'"),
        (b'{"date":"d","nope":1}', "unknown argument 'nope'"),
        (b'{"date":5}', "argument 'date': expected `str`, got `int`"),
    ],
)
def test_argument_errors_name_the_argument(raw: bytes, expected: str) -> None:
    tool = build(book)
    with pytest.raises(msgspec.DecodeError) as info:
        tool.arguments(raw)
    text = argument_error("book", info.value)
    assert text.startswith("Invalid arguments for tool 'book': ")
    assert expected in text


def test_values_become_results() -> None:
    tool = build(book)
    assert to_result(tool, "hi").content == [TextContent(text="hi")]
    assert to_result(tool, None).content == []
    image = ImageContent(data="AAAA", mime_type="image/png")
    assert to_result(tool, image).content == [image]
    assert to_result(tool, [image, TextContent(text="t")]).content == [image, TextContent(text="t")]
    made = to_result(tool, Booking("d", 2))
    assert made.structured_content == {"date": "d", "party_size": 2}
    assert msgspec.json.decode(made.content[0].text) == {"date": "d", "party_size": 2}  # type: ignore[union-attr]
    ready = CallToolResult(content=[])
    assert to_result(tool, ready) is ready


def test_an_unstructured_tool_returns_its_data_as_text_only() -> None:
    async def numbers() -> list[int]:
        return [1, 2]

    tool = build(numbers)
    result = to_result(tool, [1, 2])
    assert result.structured_content is None
    assert result.content == [TextContent(text="[1,2]")]


def test_tool_result_and_error_result() -> None:
    made = tool_result("done", Booking("d", 2))  # type: ignore[arg-type]  # (a dataclass works like a Struct)
    assert made.content == [TextContent(text="done")] and made.structured_content == {"date": "d", "party_size": 2}
    assert not made.is_error
    assert tool_result("no", is_error=True).is_error
    failed = error_result("bad")
    assert failed.is_error and failed.content == [TextContent(text="bad")]


def test_tool_error_is_a_minimcp_error() -> None:
    from minimcp.wire.errors import MinimcpError

    assert issubclass(ToolError, MinimcpError)
