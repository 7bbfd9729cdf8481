"""minimcp/forms/schema.py: fields <-> the restricted requestedSchema, rendered per revision and parsed from the
wire."""

from __future__ import annotations

import pytest

from minimcp.forms.fields import FormField
from minimcp.forms.schema import CANONICAL, parse_fields, render_schema
from minimcp.wire.errors import FormDefinitionError
from tests.helpers.layers import PACKAGE, forbidden_imports, transitive_imports

SIZE = FormField("size", "select", options=(("s", "Small"), ("l", "Large")), titled=True, default="s")
EXTRAS = FormField("extras", "multiselect", options=(("a", "a"), ("b", "b")), required=False)
NAME = FormField("name", "string", min_length=1, default="Ann")


def test_the_module_is_pure() -> None:
    assert forbidden_imports((PACKAGE / "forms/schema.py").read_text(encoding="utf-8")) == set()
    assert transitive_imports("minimcp.forms.schema") == "clean"


def test_canonical_rendering() -> None:
    schema = render_schema((SIZE, EXTRAS, NAME), CANONICAL)
    assert schema["required"] == ["size", "name"]
    assert schema["properties"]["size"] == {
        "type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "s"
    }  # fmt: skip
    assert schema["properties"]["extras"] == {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    assert schema["properties"]["name"] == {"type": "string", "minLength": 1, "default": "Ann"}


def test_older_revisions_lose_what_they_cannot_carry() -> None:
    schema = render_schema((SIZE, NAME), "2025-06-18")
    assert schema["properties"]["size"] == {"type": "string", "enum": ["s", "l"], "enumNames": ["Small", "Large"]}
    assert "default" not in schema["properties"]["name"]
    with pytest.raises(FormDefinitionError) as caught:
        render_schema((EXTRAS,), "2025-06-18")
    assert caught.value.field == "extras"
    with pytest.raises(FormDefinitionError, match="no elicitation"):
        render_schema((NAME,), "2025-03-26")


def test_parsing_is_the_inverse_of_rendering() -> None:
    fields = (SIZE, EXTRAS, NAME)
    assert parse_fields(render_schema(fields, CANONICAL)) == fields


def test_parsing_reads_legacy_enum_names() -> None:
    (size,) = parse_fields({
        "type": "object",
        "properties": {"size": {"type": "string", "enum": ["s", "l"], "enumNames": ["Small", "Large"]}},
    })  # fmt: skip
    assert (size.kind, size.options, size.titled, size.required) == ("select", SIZE.options, True, False)


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "a"),
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}, "a"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}}}, "a"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}, "a"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "b"),
        ({"type": "object", "properties": {}}, None),
        ({"type": "array"}, None),
    ],
)
def test_parsing_refuses_what_leaves_the_restricted_schema(schema: object, field: str | None) -> None:
    with pytest.raises(FormDefinitionError) as caught:
        parse_fields(schema)
    assert caught.value.field == field
