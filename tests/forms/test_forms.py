"""Tests for minimcp.forms: compiling form types, rendering, validating, building, parsing."""

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict, Union

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import Meta

from minimcp.forms import (
    NO_DEFAULT,
    AllowSensitive,
    Form,
    FormDefinitionError,
    FormField,
    FormValidationError,
    SensitiveFieldError,
    Titled,
    check_form,
    compile_form,
    parse_schema,
)

# --- form types used across the tests ---------------------------------------------------------


class Color(enum.Enum):
    """Docstrings of Enums are never used as titles."""

    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Extra(enum.Enum):
    CAKE = "cake"
    FLOWERS = "flowers"
    MUSIC = "music"


class Booking(msgspec.Struct):
    day: datetime.date
    party_size: Annotated[int, Meta(ge=1, le=12, title="Party size")]
    accept_alternative: bool = False
    notes: str | None = None
    seating: Annotated[Literal["in", "out"], Titled({"in": "Inside", "out": "Terrace"})] = "in"
    extras: Annotated[set[Extra], Meta(max_length=2)] = msgspec.field(
        default_factory=lambda: {Extra.MUSIC, Extra.CAKE}
    )


class Strings(msgspec.Struct):
    name: Annotated[str, Meta(min_length=1, max_length=5, title="Name", description="Who")]
    email: Annotated[str, Meta(extra_json_schema={"format": "email"})]
    site: Annotated[str, Meta(extra_json_schema={"format": "uri", "title": "Site"})]
    born: datetime.date
    when: datetime.datetime
    nick: str = "bob"


class Numbers(msgspec.Struct):
    count: Annotated[int, Meta(ge=0, le=10)]
    ratio: Annotated[float, Meta(ge=0.5, description="A ratio")]
    ok: bool
    level: int = 3
    weight: float = 1.5
    flag: bool = True


class Selects(msgspec.Struct):
    size: Literal["s", "m", "l"]
    color: Color
    planet: Annotated[Literal["earth", "mars"], Titled({"earth": "Earth"})]
    tone: Color = Color.GREEN
    fit: Literal["slim", "loose"] = "slim"


class Multi(msgspec.Struct):
    tags: Annotated[list[Literal["a", "b", "c"]], Meta(min_length=1, max_length=2)]
    colors: Annotated[frozenset[Color], Titled({Color.RED: "Red", "green": "Green", "blue": "Blue"})]
    extras: list[Annotated[Extra, Titled({"cake": "Cake"})]] = msgspec.field(
        default_factory=lambda: [Extra.MUSIC, Extra.CAKE]
    )


@dataclasses.dataclass
class Survey:
    rating: Annotated[int, Meta(ge=1, le=5)]
    comment: Optional[str]  # noqa: UP045 -- typing.Optional, optional without a default: build passes None
    mood: Literal["happy", "sad"] = "happy"
    topics: set[Literal["food", "service"]] = dataclasses.field(default_factory=set)
    computed: int = dataclasses.field(default=0, init=False)


class Profile(TypedDict, total=False):
    username: Required[str]
    age: int
    color: Color
    nickname: Required[str | None]


class Contact(TypedDict):
    email: Annotated[str, Meta(extra_json_schema={"format": "email"})]
    phone: NotRequired[str]


class Renamed(msgspec.Struct, rename="camel"):
    first_name: str
    is_adult: bool = False


# --- schema output -------------------------------------------------------------------------------


def test_booking_schema_is_exact() -> None:
    assert compile_form(Booking).schema == {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "party_size": {"type": "integer", "title": "Party size", "minimum": 1, "maximum": 12},
            "accept_alternative": {"type": "boolean", "default": False},
            "notes": {"type": "string"},
            "seating": {
                "type": "string",
                "oneOf": [{"const": "in", "title": "Inside"}, {"const": "out", "title": "Terrace"}],
                "default": "in",
            },
            "extras": {
                "type": "array",
                "items": {"type": "string", "enum": ["cake", "flowers", "music"]},
                "maxItems": 2,
                "default": ["cake", "music"],
            },
        },
        "required": ["day", "party_size"],
    }


def test_string_kinds_schema_is_exact() -> None:
    assert compile_form(Strings).schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Who", "minLength": 1, "maxLength": 5},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "title": "Site", "format": "uri"},
            "born": {"type": "string", "format": "date"},
            "when": {"type": "string", "format": "date-time"},
            "nick": {"type": "string", "default": "bob"},
        },
        "required": ["name", "email", "site", "born", "when"],
    }


def test_number_kinds_schema_is_exact() -> None:
    assert compile_form(Numbers).schema == {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0, "maximum": 10},
            "ratio": {"type": "number", "description": "A ratio", "minimum": 0.5},
            "ok": {"type": "boolean"},
            "level": {"type": "integer", "default": 3},
            "weight": {"type": "number", "default": 1.5},
            "flag": {"type": "boolean", "default": True},
        },
        "required": ["count", "ratio", "ok"],
    }


def test_select_kinds_schema_is_exact() -> None:
    assert compile_form(Selects).schema["properties"] == {
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "planet": {
            "type": "string",
            "oneOf": [{"const": "earth", "title": "Earth"}, {"const": "mars", "title": "mars"}],
        },
        "tone": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
        "fit": {"type": "string", "enum": ["slim", "loose"], "default": "slim"},
    }


def test_multiselect_schema_is_exact() -> None:
    titled = [{"const": c, "title": c.title()} for c in ("red", "green", "blue")]
    assert compile_form(Multi).schema == {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2,
            },
            "colors": {"type": "array", "items": {"anyOf": titled}},
            "extras": {
                "type": "array",
                "items": {"anyOf": [{"const": "cake", "title": "Cake"}, {"const": "flowers", "title": "flowers"},
                                    {"const": "music", "title": "music"}]},
                "default": ["music", "cake"],
            },
        },
        "required": ["tags", "colors"],
    }


def test_form_fields_describe_the_form() -> None:
    fields = {f.name: f for f in compile_form(Booking).fields}
    assert fields["party_size"] == FormField(name="party_size", kind="integer", required=True, title="Party size",
                                             minimum=1, maximum=12)
    assert fields["seating"].options == (("in", "Inside"), ("out", "Terrace")) and fields["seating"].titled
    assert fields["notes"].required is False and fields["notes"].default is NO_DEFAULT
    assert fields["extras"].kind == "multiselect" and fields["extras"].max_items == 2


def test_dataclass_and_typeddict_schemas() -> None:
    assert compile_form(Survey).schema == {
        "type": "object",
        "properties": {
            "rating": {"type": "integer", "minimum": 1, "maximum": 5},
            "comment": {"type": "string"},
            "mood": {"type": "string", "enum": ["happy", "sad"], "default": "happy"},
            "topics": {"type": "array", "items": {"type": "string", "enum": ["food", "service"]}, "default": []},
        },
        "required": ["rating"],
    }
    assert compile_form(Profile).schema == {
        "type": "object",
        "properties": {
            "username": {"type": "string"},
            "age": {"type": "integer"},
            "color": {"type": "string", "enum": ["red", "green", "blue"]},
            "nickname": {"type": "string"},
        },
        "required": ["username"],
    }
    assert compile_form(Contact).schema["required"] == ["email"]


def test_struct_rename_uses_wire_names() -> None:
    form = compile_form(Renamed)
    assert list(form.schema["properties"]) == ["firstName", "isAdult"]
    assert form.build({"firstName": "Ada"}) == Renamed(first_name="Ada", is_adult=False)


def test_raw_dict_schema_is_sent_as_written() -> None:
    """An author's raw schema (checked first) goes to 2025-11-25 clients word for word.

    So a deprecated-but-valid shape such as legacy ``enumNames`` can still be sent.
    """
    raw = {"type": "object", "properties": {"pick": {"type": "string", "enum": ["x", "y"], "enumNames": ["X", "Y"]}},
           "required": ["pick"]}
    form = compile_form(raw)
    assert form.schema == raw and form.schema is not raw
    assert form.schema_for("2025-11-25") == raw
    assert form.schema_for("2025-06-18")["properties"]["pick"] == {
        "type": "string", "enum": ["x", "y"], "enumNames": ["X", "Y"]}
    assert form.build({"pick": "y", "other": 1}) == {"pick": "y"}


# --- revisions -------------------------------------------------------------------------------------


def test_schema_for_latest_is_canonical() -> None:
    form = compile_form(Booking)
    assert form.schema_for("2025-11-25") == form.schema


def test_schema_for_2025_06_18_drops_defaults_and_uses_enum_names() -> None:
    assert compile_form(Selects).schema_for("2025-06-18")["properties"] == {
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "planet": {"type": "string", "enum": ["earth", "mars"], "enumNames": ["Earth", "mars"]},
        "tone": {"type": "string", "enum": ["red", "green", "blue"]},
        "fit": {"type": "string", "enum": ["slim", "loose"]},
    }
    props = compile_form(Numbers).schema_for("2025-06-18")["properties"]
    assert props["level"] == {"type": "integer"} and props["weight"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean", "default": True}


def test_schema_for_2025_06_18_refuses_multiselect() -> None:
    with pytest.raises(FormDefinitionError, match=r"'extras'.*multi-select") as info:
        compile_form(Booking).schema_for("2025-06-18")
    assert info.value.field == "extras"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_schema_for_revisions_without_elicitation(version: str) -> None:
    with pytest.raises(FormDefinitionError, match="no elicitation") as info:
        compile_form(Numbers).schema_for(version)
    assert info.value.field is None


# --- building typed values ---------------------------------------------------------------------------


def test_build_struct() -> None:
    value = compile_form(Booking).build({"day": "2025-03-01", "party_size": 4.0, "extras": ["flowers"], "x": 1})
    assert value == Booking(day=datetime.date(2025, 3, 1), party_size=4, extras={Extra.FLOWERS})
    assert type(value.party_size) is int
    defaults = compile_form(Booking).build({"day": "2025-03-01", "party_size": 2})
    assert defaults.extras == {Extra.MUSIC, Extra.CAKE} and defaults.seating == "in" and defaults.notes is None


def test_build_converts_types() -> None:
    answer = {"name": "Ann", "email": "a@b.io", "site": "https://x.org", "born": "2000-02-29",
              "when": "2025-01-02T03:04:05.5+02:00"}
    value = compile_form(Strings).build(answer)
    assert value.born == datetime.date(2000, 2, 29) and value.nick == "bob"
    tz = datetime.timezone(datetime.timedelta(hours=2))
    assert value.when == datetime.datetime(2025, 1, 2, 3, 4, 5, 500000, tzinfo=tz)
    numbers = compile_form(Numbers).build({"count": 1, "ratio": 2, "ok": False})
    assert type(numbers.ratio) is float and numbers.ratio == 2.0
    selects = compile_form(Selects).build({"size": "m", "color": "blue", "planet": "mars"})
    assert selects == Selects(size="m", color=Color.BLUE, planet="mars")
    multi = compile_form(Multi).build({"tags": ["c"], "colors": ["red", "blue"], "extras": []})
    assert multi == Multi(tags=["c"], colors=frozenset({Color.RED, Color.BLUE}), extras=[])


def test_build_dataclass() -> None:
    value = compile_form(Survey).build({"rating": 5, "topics": ["food"]})
    assert value == Survey(rating=5, comment=None, topics={"food"})


def test_build_typeddict() -> None:
    assert compile_form(Profile).build({"username": "u", "color": "red"}) == {
        "username": "u", "color": Color.RED, "nickname": None}
    assert compile_form(Contact).build({"email": "me@example.com"}) == {"email": "me@example.com"}


def test_build_wraps_type_rejection() -> None:
    @dataclasses.dataclass
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n == 13:
                raise ValueError("unlucky")

    with pytest.raises(FormValidationError, match="unlucky") as info:
        compile_form(Checked).build({"n": 13})
    assert info.value.constraint == "construct"


# --- refusing what the restricted schema cannot express ------------------------------------------------


class Inner(msgspec.Struct):
    x: int


class NestedStruct(msgspec.Struct):
    address: Inner


class NestedDict(msgspec.Struct):
    address: dict[str, str]


class FreeList(msgspec.Struct):
    tags: list[str]


class TwoTypes(msgspec.Struct):
    value: Union[int, str]  # noqa: UP007 -- the typing.Union spelling


class Pair(msgspec.Struct):
    point: tuple[int, int]


class Blob(msgspec.Struct):
    data: bytes


class Anything(msgspec.Struct):
    stuff: Any


class Exclusive(msgspec.Struct):
    amount: Annotated[int, Meta(gt=0)]


class Below(msgspec.Struct):
    amount: Annotated[float, Meta(lt=1.0)]


class Patterned(msgspec.Struct):
    code: Annotated[str, Meta(pattern="^[A-Z]+$")]


class Multiple(msgspec.Struct):
    step: Annotated[int, Meta(multiple_of=5)]


class IntLiteral(msgspec.Struct):
    level: Literal[1, 2]


class IntEnum(enum.Enum):
    ONE = 1


class IntEnumField(msgspec.Struct):
    level: IntEnum


class TitledStr(msgspec.Struct):
    city: Annotated[str, Titled({"a": "A"})]


class RangeOnStr(msgspec.Struct):
    city: Annotated[str, Meta(ge=1)]


class LengthOnInt(msgspec.Struct):
    count: Annotated[int, Meta(min_length=1)]


class BadDefault(msgspec.Struct):
    size: Literal["s", "m"] = "xl"  # type: ignore[assignment]


class NaiveDefault(msgspec.Struct):
    at: datetime.datetime = datetime.datetime(2025, 1, 1)


class UnknownTitle(msgspec.Struct):
    size: Annotated[Literal["s"], Titled({"xl": "Huge"})]


class BadFormat(msgspec.Struct):
    host: Annotated[str, Meta(extra_json_schema={"format": "hostname"})]


class Empty(msgspec.Struct):
    pass


@pytest.mark.parametrize(
    ("form_type", "field", "words"),
    [
        (NestedStruct, "address", "nested objects are not allowed in elicitation forms; flatten it"),
        (NestedDict, "address", "nested objects"),
        (FreeList, "tags", "free-text lists"),
        (TwoTypes, "value", "unions of several types"),
        (Pair, "point", "tuples"),
        (Blob, "data", "binary"),
        (Anything, "stuff", "Any"),
        (Exclusive, "amount", "use ge/le"),
        (Below, "amount", "use ge/le"),
        (Patterned, "code", "pattern is not in the restricted schema"),
        (Multiple, "step", "multiple_of"),
        (IntLiteral, "level", "must be strings"),
        (IntEnumField, "level", "must be strings"),
        (TitledStr, "city", "Titled only applies"),
        (RangeOnStr, "city", "ge/le only apply"),
        (LengthOnInt, "count", "min_length/max_length only apply"),
        (BadDefault, "size", "default 'xl'"),
        (NaiveDefault, "at", "default"),
        (UnknownTitle, "size", "unknown options"),
        (BadFormat, "host", "hostname"),
    ],
)
def test_unsupported_constructs_name_the_field(form_type: type, field: str, words: str) -> None:
    with pytest.raises(FormDefinitionError) as info:
        compile_form(form_type)
    assert info.value.field == field
    assert f"field {field!r}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("form_type", [Empty, int, "not a type"])
def test_whole_form_refusals(form_type: Any) -> None:
    with pytest.raises(FormDefinitionError) as info:
        check_form(form_type)
    assert info.value.field is None


def test_empty_form_message_suggests_bool() -> None:
    with pytest.raises(FormDefinitionError, match="at least one field; for a yes/no question use a single bool"):
        compile_form(Empty)


def test_check_form_accepts_valid_forms_and_caches() -> None:
    for form_type in (Booking, Strings, Numbers, Selects, Multi, Survey, Profile, Contact, Renamed):
        check_form(form_type)
    assert compile_form(Booking) is compile_form(Booking)
    assert isinstance(compile_form(Booking), Form)


# --- validating answers ------------------------------------------------------------------------------------

GOOD_STRINGS = {"name": "Ann", "email": "a@b.io", "site": "https://x.org", "born": "2000-01-01",
                "when": "2025-01-02T03:04:05Z"}


@pytest.mark.parametrize(
    ("form_type", "patch", "field", "constraint"),
    [
        (Strings, {"name": 5}, "name", "type"),
        (Strings, {"name": ""}, "name", "minLength"),
        (Strings, {"name": "abcdef"}, "name", "maxLength"),
        (Strings, {"email": "nope"}, "email", "format"),
        (Strings, {"site": "/relative/path"}, "site", "format"),
        (Strings, {"born": "2001-02-29"}, "born", "format"),
        (Strings, {"when": "2025-01-02T03:04:05"}, "when", "format"),
        (Strings, {"nick": None}, "nick", "type"),
        (Numbers, {"count": -1}, "count", "minimum"),
        (Numbers, {"count": 11}, "count", "maximum"),
        (Numbers, {"count": 2.5}, "count", "type"),
        (Numbers, {"count": True}, "count", "type"),
        (Numbers, {"count": "3"}, "count", "type"),
        (Numbers, {"ratio": False}, "ratio", "type"),
        (Numbers, {"ratio": float("nan")}, "ratio", "type"),
        (Numbers, {"ratio": 0.1}, "ratio", "minimum"),
        (Numbers, {"ok": 1}, "ok", "type"),
        (Selects, {"size": "xl"}, "size", "enum"),
        (Selects, {"color": "RED"}, "color", "enum"),
        (Selects, {"planet": "Earth"}, "planet", "enum"),
        (Multi, {"tags": "a"}, "tags", "type"),
        (Multi, {"tags": [1]}, "tags", "type"),
        (Multi, {"tags": ["z"]}, "tags", "enum"),
        (Multi, {"tags": ["a", "a"]}, "tags", "uniqueItems"),
        (Multi, {"tags": []}, "tags", "minItems"),
        (Multi, {"tags": ["a", "b", "c"]}, "tags", "maxItems"),
    ],
)
def test_each_constraint_violation(form_type: type, patch: dict[str, Any], field: str, constraint: str) -> None:
    goods: dict[type, dict[str, Any]] = {
        Strings: GOOD_STRINGS, Numbers: {"count": 1, "ratio": 1, "ok": True},
        Selects: {"size": "s", "color": "red", "planet": "earth"}, Multi: {"tags": ["a"], "colors": []},
    }
    good = goods[form_type]
    form: Form[Any] = compile_form(form_type)
    form.validate(good)  # the baseline is valid
    with pytest.raises(FormValidationError) as info:
        form.validate({**good, **patch})
    assert (info.value.field, info.value.constraint) == (field, constraint)
    assert f"field {field!r}" in str(info.value)


def test_required_field_missing() -> None:
    with pytest.raises(FormValidationError, match=r"'party_size'.*required") as info:
        compile_form(Booking).validate({"day": "2025-01-01"})
    assert (info.value.field, info.value.constraint) == ("party_size", "required")


def test_first_problem_in_schema_order() -> None:
    with pytest.raises(FormValidationError) as info:
        compile_form(Numbers).validate({"ok": "x", "ratio": "y", "count": "z"})
    assert info.value.field == "count"


@pytest.mark.parametrize("content", [None, [], "text", 3])
def test_content_must_be_an_object(content: object) -> None:
    with pytest.raises(FormValidationError, match="must be an object") as info:
        compile_form(Numbers).validate(content)
    assert (info.value.field, info.value.constraint) == (None, "type")


def test_booking_answer_maybe_is_a_type_error() -> None:
    with pytest.raises(FormValidationError) as info:
        compile_form(Booking).validate({"day": "2025-01-01", "party_size": 2, "accept_alternative": "maybe"})
    assert (info.value.field, info.value.constraint) == ("accept_alternative", "type")
    assert str(info.value) == "field 'accept_alternative': expected boolean, got string"


def test_validate_drops_unknown_and_keeps_omitted_absent() -> None:
    out = compile_form(Numbers).validate({"count": 2.0, "ratio": 3, "ok": False, "admin": True})
    assert out == {"count": 2, "ratio": 3, "ok": False}
    assert type(out["count"]) is int


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("email", ["a@b.co", "first.last+tag@sub.example.org", "root@localhost"],
         ["a@b", "@b.co", "a@", "a@@b.co", "a b@c.de", "a@b..c", "a@b.c@d.e"]),
        ("uri", ["https://example.com/x?y#z", "mailto:a@b.co", "urn:isbn:123"],
         ["example.com", "/path", "http://", "1http://x.y", "http://a b", ""]),
        ("date", ["2024-02-29", "1999-12-31"],
         ["2023-02-29", "2024-13-01", "24-01-01", "2024-1-01", "2024-01-01T00:00:00Z",
          "\uff12\uff10\uff12\uff14-01-01"]),
        ("date-time", ["2024-02-29T23:59:59Z", "2024-01-01t00:00:00.123456789+05:30", "2024-01-01T00:00:00-00:00"],
         ["2024-01-01T00:00:00", "2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:60Z",
          "2024-01-01T00:00:00+25:00", "2024-01-01"]),
    ],
)
def test_formats(fmt: str, good: list[str], bad: list[str]) -> None:
    form = compile_form({"type": "object", "properties": {"v": {"type": "string", "format": fmt}}})
    for value in good:
        assert form.validate({"v": value}) == {"v": value}, value
    for value in bad:
        with pytest.raises(FormValidationError) as info:
            form.validate({"v": value})
        assert info.value.constraint == "format", value


def test_lengths_count_characters() -> None:
    form = compile_form({"type": "object", "properties": {"v": {"type": "string", "maxLength": 2}}})
    assert form.validate({"v": "éé"}) == {"v": "éé"}
    with pytest.raises(FormValidationError):
        form.validate({"v": "ééé"})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
answer_like = st.dictionaries(
    st.sampled_from(["day", "party_size", "accept_alternative", "notes", "seating", "extras", "tags", "count",
                     "ratio", "ok", "colors", "other"]) | st.text(max_size=5),
    json_values | st.lists(st.sampled_from(["a", "b", "cake", "music", "red", "x"]), max_size=4),
    max_size=8,
)


@given(content=json_values | answer_like)
def test_validate_never_raises_anything_else(content: object) -> None:
    for form_type in (Booking, Numbers, Multi, Strings):
        form = compile_form(form_type)
        try:
            out = form.validate(content)
        except FormValidationError:
            continue
        assert isinstance(out, dict) and set(out) <= {f.name for f in form.fields}
        form.build(content)  # a valid answer always builds


# --- the secret-name guard ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["password", "userPassword", "new_password2", "passwd", "passphrase", "pwd", "client_secret", "token",
     "access_token", "refreshToken", "authToken", "api_token", "githubtoken", "BearerToken2",
     "api_key", "apiKey", "APIKey", "apikey",
     "private_key", "card_number", "cardNumber", "credit_card", "cc_number", "cvv", "cvv2", "cvc",
     "security_code", "ssn", "pin", "PIN", "otp", "credentials"],
)
def test_secret_names_are_refused(name: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "string"}}}
    with pytest.raises(SensitiveFieldError) as info:
        compile_form(schema)
    assert info.value.field == name
    assert "ctx.elicit_url" in str(info.value) and f"allow_sensitive={{{name!r}}}" in str(info.value)
    assert isinstance(info.value, FormDefinitionError)
    compile_form(schema, allow_sensitive={name})  # the opt-out


@pytest.mark.parametrize(
    "name", ["tokens_used", "max_tokens", "pinned", "spin", "secretary", "iban", "account_number", "username",
             "email", "key", "sort_key", "keyboard", "passenger_count", "topping"],
)
def test_harmless_names_pass(name: str) -> None:
    check_form({"type": "object", "properties": {name: {"type": "string"}}})


class Login(msgspec.Struct):
    user: str
    password: str


class LoginTitled(msgspec.Struct):
    word: Annotated[str, Meta(title="Your password")]


class ApiKeyAllowed(msgspec.Struct):
    api_key_name: Annotated[str, AllowSensitive, Meta(description="which key to rotate")]


def test_secret_guard_on_types_and_opt_outs() -> None:
    with pytest.raises(SensitiveFieldError, match="field 'password' looks like a secret"):
        compile_form(Login)
    with pytest.raises(SensitiveFieldError) as info:
        compile_form(LoginTitled)
    assert info.value.field == "word"
    assert compile_form(Login, allow_sensitive={"password"}).fields[1].name == "password"
    assert compile_form(ApiKeyAllowed).schema["properties"]["api_key_name"] == {
        "type": "string", "description": "which key to rotate"}
    with pytest.raises(SensitiveFieldError):
        compile_form(Login)  # the opt-out was not cached for the plain key


def test_allow_sensitive_must_name_fields() -> None:
    with pytest.raises(FormDefinitionError, match="pasword"):
        compile_form(Login, allow_sensitive={"pasword"})


# --- client side: parse_schema and fill_defaults ------------------------------------------------------------


@pytest.mark.parametrize("form_type", [Booking, Strings, Numbers, Selects, Multi, Survey, Profile, Renamed])
def test_parse_schema_round_trip(form_type: type) -> None:
    form: Form[Any] = compile_form(form_type)
    parsed = parse_schema(form.schema)
    assert parsed.fields == form.fields
    assert parsed.schema == form.schema


def test_parse_schema_legacy_enum_names_and_ignored_keywords() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "pick": {"type": "string", "title": "Pick", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
            "code": {"type": "string", "pattern": "^[0-9]+$", "default": "12"},
            "many": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}, "minItems": 1},
        },
    }
    form = parse_schema(schema)
    assert form.schema == schema
    assert form.fields == (
        FormField(name="pick", kind="select", required=False, title="Pick", options=(("x", "Ex"), ("y", "Why")),
                  titled=True),
        FormField(name="code", kind="string", required=False, default="12"),
        FormField(name="many", kind="multiselect", required=False, options=(("p", "P"),), titled=True, min_items=1),
    )
    assert form.validate({"code": "abc"}) == {"code": "abc"}  # pattern is not enforced
    assert form.schema_for("2025-11-25") == schema  # sent back as given


@pytest.mark.parametrize(
    ("prop", "field", "words"),
    [
        ({"$ref": "#/$defs/x"}, "v", "$ref"),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "v", "nested objects"),
        ({"type": "array", "items": {"type": "string"}}, "v", "multi-select"),
        ({"type": "array", "items": {"type": "object"}}, "v", "multi-select"),
        ({"type": "null"}, "v", "not allowed"),
        ({"type": ["string", "null"]}, "v", "not allowed"),
        ({}, "v", "not allowed"),
        ({"type": "string", "format": "hostname"}, "v", "hostname"),
        ({"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}, "v", "enumNames"),
        ({"type": "string", "oneOf": [{"title": "no const"}]}, "v", "const"),
        ({"type": "integer", "enum": [1, 2]}, "v", "strings"),
        ({"type": "string", "minLength": -1}, "v", "minLength"),
        ({"type": "string", "minLength": 5, "maxLength": 2}, "v", "cannot be satisfied"),
        ({"type": "boolean", "default": "yes"}, "v", "default"),
        ({"type": "string", "title": 3}, "v", "title"),
        ("string", "v", "object"),
    ],
)
def test_parse_schema_refusals(prop: Any, field: str, words: str) -> None:
    with pytest.raises(FormDefinitionError) as info:
        parse_schema({"type": "object", "properties": {"v": prop}})
    assert info.value.field == field and words in str(info.value)


@pytest.mark.parametrize(
    "schema",
    [
        [],
        {"type": "array", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {}},
        {"type": "object"},
        {"type": "object", "$defs": {}, "properties": {"a": {"type": "string"}}},
    ],
)
def test_parse_schema_whole_form_refusals(schema: Any) -> None:
    with pytest.raises(FormDefinitionError) as info:
        parse_schema(schema)
    assert info.value.field is None


def test_parse_schema_required_must_be_defined() -> None:
    with pytest.raises(FormDefinitionError, match="'ghost'") as info:
        parse_schema({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["ghost"]})
    assert info.value.field == "ghost"


def test_parse_schema_skips_secret_guard() -> None:
    form = parse_schema({"type": "object", "properties": {"password": {"type": "string"}}})
    assert form.build({"password": "x"}) == {"password": "x"}


def test_fill_defaults() -> None:
    form = compile_form(Booking)
    filled = form.fill_defaults({"day": "2025-01-01", "seating": "out"})
    assert filled == {"day": "2025-01-01", "seating": "out", "accept_alternative": False, "extras": ["cake", "music"]}
    filled["extras"].append("x")
    assert form.fields[-1].default == ["cake", "music"]  # the form's default is not shared
