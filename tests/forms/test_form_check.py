"""minimcp/forms/check.py: checking answer values against fields (kinds, formats, bounds, field consistency)."""

from __future__ import annotations

import datetime

import pytest

from minimcp.forms.check import (
    check_value,
    checked_field,
    json_type,
    parse_date,
    parse_datetime,
    short,
    validate_answer,
)
from minimcp.forms.fields import NO_DEFAULT, FormField
from minimcp.wire.errors import FormDefinitionError, FormValidationError
from tests.helpers.layers import PACKAGE, forbidden_imports, transitive_imports

AGE = FormField("age", "integer", minimum=0, maximum=120)
SIZE = FormField("size", "select", options=(("s", "Small"), ("l", "Large")))
EXTRAS = FormField("extras", "multiselect", options=(("a", "a"), ("b", "b")), max_items=1)


def test_the_module_is_pure() -> None:
    assert forbidden_imports((PACKAGE / "forms/check.py").read_text(encoding="utf-8")) == set()
    assert transitive_imports("minimcp.forms.check") == "clean"


def test_values_are_normalized_or_refused_with_the_broken_rule() -> None:
    assert check_value(AGE, 3.0) == 3 and type(check_value(AGE, 3.0)) is int
    assert check_value(SIZE, "l") == "l"
    assert check_value(EXTRAS, ["b"]) == ["b"]
    cases = [
        (AGE, True, "type"),  # bool is never a number
        (AGE, 3.5, "type"),
        (AGE, float("inf"), "type"),
        (AGE, -1, "minimum"),
        (AGE, 121, "maximum"),
        (SIZE, "m", "enum"),
        (EXTRAS, ["a", "b"], "maxItems"),
        (EXTRAS, ["a", "a"], "uniqueItems"),
        (EXTRAS, "a", "type"),
    ]
    for field, value, constraint in cases:
        with pytest.raises(FormValidationError) as caught:
            check_value(field, value)
        assert (caught.value.field, caught.value.constraint) == (field.name, constraint), value


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("email", "a@example.com", "a@b@c"),
        ("uri", "https://example.com/x", "//example.com"),
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2025-12-25T19:30:00+01:00", "2025-12-25T19:30:60Z"),
    ],
)
def test_formats(fmt: str, good: str, bad: str) -> None:
    field = FormField("f", "string", format=fmt)
    assert check_value(field, good) == good
    with pytest.raises(FormValidationError) as caught:
        check_value(field, bad)
    assert caught.value.constraint == "format"


def test_dates_parse_to_values() -> None:
    assert parse_date("2025-12-26") == datetime.date(2025, 12, 26)
    assert parse_date("2025-13-01") is None
    moment = parse_datetime("2025-12-25T19:30:00.1234567-02:00")
    assert moment is not None and moment.microsecond == 123456
    assert moment.utcoffset() == datetime.timedelta(hours=-2)
    assert parse_datetime("2025-12-25 19:30:00") is None


def test_validate_answer_keeps_named_fields_in_order() -> None:
    optional = FormField("note", "string", required=False)
    assert validate_answer((AGE, optional), {"age": 4, "stray": 1}) == {"age": 4}
    with pytest.raises(FormValidationError) as caught:
        validate_answer((AGE,), {})
    assert (caught.value.field, caught.value.constraint) == ("age", "required")
    with pytest.raises(FormValidationError) as caught:
        validate_answer((AGE,), [1])
    assert caught.value.field is None and "got array" in str(caught.value)


def test_checked_field_refuses_inconsistent_fields_and_normalizes_the_default() -> None:
    assert checked_field(FormField("n", "integer", default=2.0)).default == 2
    assert checked_field(FormField("n", "integer")).default is NO_DEFAULT
    for broken in (
        FormField("n", "integer", minimum=5, maximum=1),
        FormField("s", "select"),
        FormField("s", "select", options=(("a", "a"), ("a", "A"))),
        FormField("m", "multiselect", options=(("a", "a"),), min_items=2),
        FormField("n", "integer", maximum=3, default=4),
    ):
        with pytest.raises(FormDefinitionError) as caught:
            checked_field(broken)
        assert caught.value.field == broken.name


def test_message_helpers() -> None:
    values: tuple[object, ...] = (None, True, 1, 1.5, "x", [], {})
    assert [json_type(v) for v in values] == [
        "null", "boolean", "integer", "number", "string", "array", "object"
    ]  # fmt: skip
    assert short("x" * 100).endswith("...") and len(short("x" * 100)) == 40
    assert short("abc") == "'abc'"
