"""minimcp/forms/types.py: Python form types -> fields, the builder of typed answers, and secret-guard exemptions."""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Literal, NotRequired, TypedDict

import msgspec
import pytest

from minimcp.forms.fields import NO_DEFAULT, AllowSensitive
from minimcp.forms.types import read_type
from minimcp.wire.errors import FormDefinitionError, FormValidationError
from tests.helpers.layers import PACKAGE, forbidden_imports, transitive_imports

NO_NAMES: frozenset[str] = frozenset()


class Seat(enum.Enum):
    WINDOW = "window"
    AISLE = "aisle"


class Booking(msgspec.Struct):
    day: datetime.date
    party: Annotated[int, msgspec.Meta(ge=1, le=8)]
    seat: Seat = Seat.WINDOW
    extras: set[Literal["cake", "candles"]] = set()
    note: str | None = None


def test_the_module_is_pure() -> None:
    assert forbidden_imports((PACKAGE / "forms/types.py").read_text(encoding="utf-8")) == set()
    assert transitive_imports("minimcp.forms.types") == "clean"


def test_a_struct_becomes_fields_and_a_builder() -> None:
    fields, make, exempt = read_type(Booking, NO_NAMES)
    kinds = [(f.name, f.kind, f.required) for f in fields]
    assert kinds == [
        ("day", "string", True), ("party", "integer", True), ("seat", "select", False),
        ("extras", "multiselect", False), ("note", "string", False),
    ]  # fmt: skip
    assert fields[0].format == "date" and (fields[1].minimum, fields[1].maximum) == (1, 8)
    assert fields[2].default == "window" and fields[3].default == [] and fields[4].default is NO_DEFAULT
    assert exempt == set()
    built = make({"day": "2025-12-26", "party": 2, "extras": ["cake"]})
    assert built == Booking(datetime.date(2025, 12, 26), 2, Seat.WINDOW, {"cake"}, None)


def test_typeddict_and_dataclass_builders() -> None:
    class Answer(TypedDict):
        name: str
        age: NotRequired[int]

    fields, make, _ = read_type(Answer, NO_NAMES)
    assert [(f.name, f.required) for f in fields] == [("name", True), ("age", False)]
    assert make({"name": "Ann"}) == {"name": "Ann"}

    @dataclasses.dataclass
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError("n must be positive")

    _, make, _ = read_type(Positive, NO_NAMES)
    assert make({"n": 3}) == Positive(3)
    with pytest.raises(FormValidationError) as caught:
        make({"n": -1})
    assert caught.value.constraint == "construct" and "n must be positive" in str(caught.value)


def test_exemptions_from_the_secret_guard_are_wire_names() -> None:
    class Login(msgspec.Struct, rename="camel"):
        api_key: str
        pin_code: Annotated[str, AllowSensitive]

    _, _, exempt = read_type(Login, frozenset({"api_key"}))
    assert exempt == {"api_key", "apiKey", "pinCode"}
    with pytest.raises(FormDefinitionError, match="not fields of"):
        read_type(Login, frozenset({"nope"}))


@pytest.mark.parametrize(
    ("annotation", "words"),
    [
        (dict, "nested objects"),
        (tuple[int, int], "tuples"),
        (bytes, "binary data"),
        (int | str, "unions"),
        (list[str], "multi-select items"),
        (Annotated[int, msgspec.Meta(gt=0)], "exclusive bounds"),
        (Annotated[str, msgspec.Meta(pattern="x")], "pattern"),
    ],
)
def test_types_the_schema_cannot_express_are_refused_naming_the_field(annotation: object, words: str) -> None:
    form_type = msgspec.defstruct("Bad", [("field_x", annotation)])
    with pytest.raises(FormDefinitionError, match=words) as caught:
        read_type(form_type, NO_NAMES)
    assert caught.value.field == "field_x"
