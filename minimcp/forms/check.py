"""Checking answers against form fields: each kind, the string formats, the bounds, and a field's own consistency.

The server re-validates every accepted answer here (the client's word is not trusted); the
command line checks each typed value with the same rules (:func:`check_value`). See
:mod:`minimcp.forms` for the decisions (``bool`` is never a number, lengths count code
points, what each format accepts).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from minimcp.forms.fields import NO_DEFAULT, FormField, def_error
from minimcp.wire.errors import FormValidationError

__all__ = [
    "answer_checks",
    "check_value",
    "checked_field",
    "fail",
    "json_type",
    "parse_date",
    "parse_datetime",
    "short",
    "validate_answer",
    "validate_checked",
]

_SHORT = 40  # characters of a value quoted in an error message


_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(\S+)")


def parse_date(text: str) -> datetime.date | None:
    """``YYYY-MM-DD`` as a real calendar day, else ``None``."""
    m = _DATE.fullmatch(text)
    try:
        return datetime.date(*map(int, m.groups())) if m else None
    except ValueError:
        return None


def parse_datetime(text: str) -> datetime.datetime | None:
    """An RFC 3339 date-time with ``Z`` or a numeric offset (aware), else ``None``; fractions cut to microseconds."""
    m = _DATE_TIME.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, sign, oh, om = m.groups()
    try:
        offset = datetime.timedelta(hours=int(oh or 0), minutes=int(om or 0))
        zone = datetime.timezone(-offset if sign == "-" else offset)
        micro = int((frac or "0")[:6].ljust(6, "0"))
        return datetime.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo=zone)
    except ValueError:
        return None


def _is_email(text: str) -> bool:
    local, _, domain = text.partition("@")
    if not local or "@" in domain or any(c.isspace() for c in text):
        return False
    return domain == "localhost" or ("." in domain and all(domain.split(".")))


def _is_uri(text: str) -> bool:
    m = _URI.fullmatch(text)
    if m is None or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return False
    rest = m.group(1)
    return not rest.startswith("//") or bool(re.split(r"[/?#]", rest[2:], maxsplit=1)[0])


_FORMAT_CHECKS: dict[str, tuple[Callable[[str], object], str]] = {
    "email": (_is_email, "an email address"),
    "uri": (_is_uri, "an absolute URI with a scheme"),
    "date": (parse_date, "a date YYYY-MM-DD"),
    "date-time": (parse_datetime, "an RFC 3339 date-time with a time zone"),
}
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"))


def json_type(value: object) -> str:
    """The JSON type name of a decoded value, for error messages (``bool`` is ``boolean``, never a number)."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    return next((name for tp, name in _JSON_TYPES if isinstance(value, tp)), type(value).__name__)


def short(value: object) -> str:
    """``repr(value)``, cut to a length an error message can quote."""
    text = repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


def fail(f: FormField, constraint: str, detail: str) -> FormValidationError:
    """A :class:`FormValidationError` for field ``f`` breaking ``constraint``."""
    return FormValidationError(f.name, constraint, f"field {f.name!r}: {detail}")


def check_value(f: FormField, value: object) -> Any:
    """Check one answer value against ``f``; return it normalized (``3.0`` -> ``3`` for integers)."""
    kind = f.kind
    if kind == "multiselect":
        return _check_choices(f, value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise fail(f, "type", f"expected boolean, got {json_type(value)}")
        return value
    if kind in ("integer", "number"):
        if type(value) is not int:  # (a plain int is an integer and a number as it is)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail(f, "type", f"expected {kind}, got {json_type(value)}")
            if isinstance(value, float) and not (math.isfinite(value) and (kind == "number" or value.is_integer())):
                raise fail(f, "type", f"expected {kind}, got the number {value}")
            value = int(value) if kind == "integer" else value
        if f.minimum is not None and value < f.minimum:
            raise fail(f, "minimum", f"expected a value >= {f.minimum}, got {value}")
        if f.maximum is not None and value > f.maximum:
            raise fail(f, "maximum", f"expected a value <= {f.maximum}, got {value}")
        return value
    if not isinstance(value, str):
        raise fail(f, "type", f"expected string, got {json_type(value)}")
    if kind == "select" and value not in (values := [v for v, _ in f.options]):
        raise fail(f, "enum", f"expected one of {', '.join(map(repr, values))}, got {short(value)}")
    if f.min_length is not None and len(value) < f.min_length:
        raise fail(f, "minLength", f"expected at least {f.min_length} characters, got {len(value)}")
    if f.max_length is not None and len(value) > f.max_length:
        raise fail(f, "maxLength", f"expected at most {f.max_length} characters, got {len(value)}")
    if f.format is not None:
        check, what = _FORMAT_CHECKS[f.format]
        if check(value) in (None, False):
            raise fail(f, "format", f"expected {what} (format {f.format}), got {short(value)}")
    return value


def _check_choices(f: FormField, value: object) -> list[str]:
    if not isinstance(value, list):
        raise fail(f, "type", f"expected array of strings, got {json_type(value)}")
    values = [v for v, _ in f.options]
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise fail(f, "type", f"expected array of strings, got an item of type {json_type(item)}")
        if item not in values:
            raise fail(f, "enum", f"expected items from {', '.join(map(repr, values))}, got {short(item)}")
        if item in value[:i]:
            raise fail(f, "uniqueItems", f"option {item!r} is selected more than once")
    if f.min_items is not None and len(value) < f.min_items:
        raise fail(f, "minItems", f"expected at least {f.min_items} selections, got {len(value)}")
    if f.max_items is not None and len(value) > f.max_items:
        raise fail(f, "maxItems", f"expected at most {f.max_items} selections, got {len(value)}")
    return list(value)


def checked_field(f: FormField) -> FormField:
    """Check a field's own consistency (bounds, options, default); return it with a normalized default."""
    for lo, hi in ((f.min_length, f.max_length), (f.minimum, f.maximum), (f.min_items, f.max_items)):
        if lo is not None and hi is not None and lo > hi:
            raise def_error(f.name, f"the bounds {lo}..{hi} cannot be satisfied")
    values = [v for v, _ in f.options]
    if f.kind in ("select", "multiselect") and (not values or len(set(values)) != len(values)):
        raise def_error(f.name, "a select needs at least one option and no duplicate options")
    if f.min_items is not None and f.min_items > len(values):
        raise def_error(f.name, f"min_items {f.min_items} exceeds the {len(values)} options")
    if f.default is NO_DEFAULT:
        return f
    try:
        return dataclasses.replace(f, default=check_value(f, f.default))
    except FormValidationError as exc:
        raise def_error(f.name, f"the default {short(f.default)} is not a valid answer ({exc})") from None


def validate_answer(fields: tuple[FormField, ...], content: object) -> dict[str, Any]:
    """Check the ``content`` of an accepted answer against ``fields`` (the body of :meth:`Form.validate`)."""
    return validate_checked(answer_checks(fields), content)


#: A field, its name, and the type whose values it takes as they are with no other check (or None).
Check = tuple[FormField, str, "type | None"]


def answer_checks(fields: tuple[FormField, ...]) -> tuple[Check, ...]:
    """What :func:`validate_checked` needs of ``fields``: worked out once per form (``Form.checks``)."""
    return tuple((f, f.name, _plain_type(f)) for f in fields)


def _plain_type(f: FormField) -> type | None:
    """The one type whose values (exactly that type) :func:`check_value` gives back as they are, for any
    value of it: a boolean; an integer or number without bounds (a plain int); a string without bounds
    or format. None for other fields (each value is checked by check_value)."""
    if f.kind == "boolean":
        return bool
    if f.kind in ("integer", "number") and f.minimum is None and f.maximum is None:
        return int
    if f.kind == "string" and f.min_length is None and f.max_length is None and f.format is None:
        return str
    return None


def validate_checked(checks: tuple[Check, ...], content: object) -> dict[str, Any]:
    """:func:`validate_answer` from the fields' :func:`answer_checks`."""
    if type(content) is not dict and not isinstance(content, Mapping):  # (a decoded answer is a dict: no ABC check)
        raise FormValidationError(None, "type", f"the answer content must be an object, got {json_type(content)}")
    out: dict[str, Any] = {}
    for f, name, plain in checks:
        if name in content:
            value = content[name]
            # (a value of the field's plain type is what check_value would give back: no call for it)
            out[name] = value if type(value) is plain else check_value(f, value)
        elif f.required:
            raise fail(f, "required", "a value is required but the answer omits it")
    return out
