"""Elicitation forms: Python types <-> the restricted MCP form schema.

Theory of operation
-------------------
A form-mode ``elicitation/create`` request carries a ``requestedSchema``: a flat JSON object whose properties
are primitives only (string, number, integer, boolean, single select and, from 2025-11-25, multi-select).
This module is the single translation point between that schema and Python, with no I/O:

* ``compile_form(FormType)`` reads a msgspec Struct, dataclass or TypedDict (or a raw dict schema) and
  produces a :class:`Form`: a tuple of :class:`FormField` (the typed description) plus the canonical
  2025-11-25 schema. Anything the restricted schema cannot express is refused up front with
  :class:`FormDefinitionError` naming the field and suggesting a fix; fields whose name or title looks like
  a secret raise :class:`SensitiveFieldError` (the spec forbids sensitive data in form mode). Compiled forms
  are cached per ``(type, allow_sensitive)``; struct fields use their wire (``rename``) names.
* ``Form.schema_for(version)`` renders the schema for the negotiated revision, asking
  :mod:`minimcp.versions`: 2025-06-18 loses non-boolean defaults, writes titled selects as legacy
  ``enum`` + ``enumNames`` and cannot carry multi-selects; older revisions have no elicitation at all.
* ``Form.validate(content)`` checks an accepted answer on the server (the client's word is not trusted) and
  returns a clean dict; ``Form.build(content)`` then makes the typed value (``Literal`` values stay ``str``,
  Enum fields get members, sets get sets, ``date``/``datetime`` annotated fields get parsed values).
* ``parse_schema(schema)`` is the client side: a schema from the wire becomes a ``Form`` whose ``fields``
  drive a UI; ``Form.fill_defaults`` pre-fills omitted answers.

Decisions
---------
* Fields the schema does not name are dropped from ``validate``'s result: the tool never sees them.
  Omitted optional fields stay absent (``build`` applies the Python defaults, or ``None`` for an optional
  field without one). ``null`` is never a valid answer value, not even for an optional field.
* ``bool`` is never a number. A float with an integral value (``3.0``) is accepted for an ``integer`` field
  and returned as the ``int`` 3; ``3.5`` is refused. Non-finite numbers are refused.
* Lengths count characters (code points). Formats: ``email`` is a sanity check only (exactly one ``@``,
  non-empty local part, no whitespace, a domain of non-empty dot-separated labels or ``localhost``);
  ``uri`` must be absolute (``scheme:rest``, with a non-empty authority after ``//``); ``date`` is
  ``YYYY-MM-DD`` and a real calendar day; ``date-time`` is RFC 3339 with ``Z`` or a numeric offset (the
  leap second ``:60`` is refused: Python cannot represent it).
* In Python types, ``Annotated[str, Meta(extra_json_schema={"format": "email"})]`` selects a string format;
  other ``extra_json_schema`` keys than ``title``/``description``/``format`` are ignored.
* ``parse_schema`` keeps the schema it was given as ``.schema`` and ignores keywords outside schema.ts such
  as ``pattern`` (they are not enforced); ``$ref``, nested objects, arrays other than multi-select, unknown
  types and defaults that break their own field are refused. An empty ``required`` list is not emitted.
* Secret guard: a name or title is split into lowercase words (camelCase, ``_``, ``-``, spaces; trailing
  digits ignored). It is refused when a word, or two adjacent words joined, is in :data:`SECRET_WORDS`,
  contains ``password``/``passwd``/``passphrase``, or ends in ``token``. So ``api_key``, ``accessToken``,
  ``card_number``, ``pin`` and ``cvv2`` are refused, while ``max_tokens``, ``tokens_used``, ``pinned``,
  ``secretary``, ``iban`` and ``account_number`` pass (identifiers, not credentials). Opt out per field
  with ``allow_sensitive={"name"}`` or ``Annotated[str, AllowSensitive]``.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import functools
import itertools
import math
import re
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar, get_args, get_origin, overload

import msgspec

from minimcp.errors import MinimcpError
from minimcp.versions import Feature, supports

__all__ = [
    "NO_DEFAULT",
    "SECRET_WORDS",
    "AllowSensitive",
    "Form",
    "FormDefinitionError",
    "FormField",
    "FormValidationError",
    "SensitiveFieldError",
    "Titled",
    "check_form",
    "compile_form",
    "parse_schema",
]

T = TypeVar("T")
Kind = Literal["string", "number", "integer", "boolean", "select", "multiselect"]
FORMATS = ("email", "uri", "date", "date-time")
_CANONICAL = "2025-11-25"  # the revision whose shape Form.schema has
_EMPTY_FORM = "a form needs at least one field; for a yes/no question use a single bool field"


class FormDefinitionError(MinimcpError, TypeError):
    """The form type or schema cannot be expressed in the restricted elicitation schema.

    Attributes:
        field: The offending field's name, or ``None`` when the problem concerns the whole form.
    """

    def __init__(self, field: str | None, message: str) -> None:
        """Record ``field``; ``message`` is the full, human-readable explanation."""
        super().__init__(message)
        self.field = field


class SensitiveFieldError(FormDefinitionError):
    """A form field looks like a secret; secrets must go through URL mode (``ctx.elicit_url``)."""


class FormValidationError(MinimcpError, ValueError):
    """An elicitation answer breaks the form schema.

    Attributes:
        field: The offending field's name, or ``None`` when the problem concerns the whole answer.
        constraint: The broken rule: ``type``, ``required``, ``minLength``, ``maxLength``, ``format``,
            ``minimum``, ``maximum``, ``enum``, ``minItems``, ``maxItems``, ``uniqueItems`` or ``construct``
            (the form type's own constructor refused the value).
    """

    def __init__(self, field: str | None, constraint: str, message: str) -> None:
        """Record ``field`` and ``constraint``; ``message`` is the full explanation."""
        super().__init__(message)
        self.field = field
        self.constraint = constraint


def _def_error(field: str | None, detail: str) -> FormDefinitionError:
    return FormDefinitionError(field, f"field {field!r}: {detail}" if field else detail)


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``FormField.default`` when the field has no default.
NO_DEFAULT: Any = _Sentinel("NO_DEFAULT")
#: ``Annotated[str, AllowSensitive]`` exempts one field from the secret-name guard.
AllowSensitive: Any = _Sentinel("AllowSensitive")


class Titled:
    """``Annotated`` marker giving display titles to select options.

    ``Annotated[Literal["a", "b"], Titled({"a": "Alpha"})]`` emits a titled select (``oneOf`` of
    ``const``/``title``); options without an entry are titled with their value. Keys may be option values
    or Enum members. On a multi-select, put it on the list type or on the item type.
    """

    __slots__ = ("titles",)

    def __init__(self, titles: Mapping[Any, str]) -> None:
        """Store the ``{option: title}`` mapping."""
        self.titles = {k.value if isinstance(k, enum.Enum) else k: v for k, v in titles.items()}


@dataclass(frozen=True, slots=True)
class FormField:
    """Typed description of one form field: what a UI needs to render it and a server to check it."""

    name: str
    kind: Kind
    required: bool = True
    title: str | None = None
    description: str | None = None
    default: Any = NO_DEFAULT
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[tuple[str, str], ...] = ()  # (value, title); title == value when untitled
    titled: bool = False
    min_items: int | None = None
    max_items: int | None = None


# --- secret-name guard -------------------------------------------------------------------------------------

#: Words (single, or two adjacent words joined) that mark a field name or title as a secret.
SECRET_WORDS = frozenset({
    "password", "passwd", "passphrase", "passcode", "pwd", "secret", "secrets", "token", "apikey", "privatekey",
    "secretkey", "accesskey", "credential", "credentials", "cardnumber", "cardno", "cardnum", "creditcard",
    "debitcard", "ccnumber", "ccnum", "cvv", "cvc", "csc", "securitycode", "ssn", "socialsecurity", "pin", "pincode",
    "otp",
})  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _looks_secret(text: str) -> bool:
    words = [w.rstrip("0123456789") for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", text).lower())]
    words += [a + b for a, b in itertools.pairwise(words)]
    return any(
        w in SECRET_WORDS or w.endswith("token") or any(p in w for p in ("password", "passwd", "passphrase"))
        for w in words
    )


def _guard(fields: Iterable[FormField], allowed: Collection[str]) -> None:
    for f in fields:
        if f.name not in allowed and (_looks_secret(f.name) or (f.title is not None and _looks_secret(f.title))):
            raise SensitiveFieldError(
                f.name,
                f"field {f.name!r} looks like a secret; sensitive data must not go through a form — use URL mode "
                "(ctx.elicit_url) so the person enters it in their browser, or opt out with "
                f"allow_sensitive={{{f.name!r}}} (or Annotated[..., AllowSensitive]) if it is not secret",
            )


# --- checking answers --------------------------------------------------------------------------------------

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(\S+)")


def _parse_date(text: str) -> datetime.date | None:
    m = _DATE.fullmatch(text)
    try:
        return datetime.date(*map(int, m.groups())) if m else None
    except ValueError:
        return None


def _parse_datetime(text: str) -> datetime.datetime | None:
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
    "date": (_parse_date, "a date YYYY-MM-DD"),
    "date-time": (_parse_datetime, "an RFC 3339 date-time with a time zone"),
}
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"))


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    return next((name for tp, name in _JSON_TYPES if isinstance(value, tp)), type(value).__name__)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fail(f: FormField, constraint: str, detail: str) -> FormValidationError:
    return FormValidationError(f.name, constraint, f"field {f.name!r}: {detail}")


def _check_value(f: FormField, value: object) -> Any:
    """Check one answer value against ``f``; return it normalized (``3.0`` -> ``3`` for integers)."""
    if f.kind == "multiselect":
        return _check_choices(f, value)
    if f.kind == "boolean":
        if not isinstance(value, bool):
            raise _fail(f, "type", f"expected boolean, got {_json_type(value)}")
        return value
    if f.kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(f, "type", f"expected {f.kind}, got {_json_type(value)}")
        if isinstance(value, float) and not (math.isfinite(value) and (f.kind == "number" or value.is_integer())):
            raise _fail(f, "type", f"expected {f.kind}, got the number {value}")
        value = int(value) if f.kind == "integer" else value
        if f.minimum is not None and value < f.minimum:
            raise _fail(f, "minimum", f"expected a value >= {f.minimum}, got {value}")
        if f.maximum is not None and value > f.maximum:
            raise _fail(f, "maximum", f"expected a value <= {f.maximum}, got {value}")
        return value
    if not isinstance(value, str):
        raise _fail(f, "type", f"expected string, got {_json_type(value)}")
    if f.kind == "select" and value not in (values := [v for v, _ in f.options]):
        raise _fail(f, "enum", f"expected one of {', '.join(map(repr, values))}, got {_short(value)}")
    if f.min_length is not None and len(value) < f.min_length:
        raise _fail(f, "minLength", f"expected at least {f.min_length} characters, got {len(value)}")
    if f.max_length is not None and len(value) > f.max_length:
        raise _fail(f, "maxLength", f"expected at most {f.max_length} characters, got {len(value)}")
    if f.format is not None:
        check, what = _FORMAT_CHECKS[f.format]
        if check(value) in (None, False):
            raise _fail(f, "format", f"expected {what} (format {f.format}), got {_short(value)}")
    return value


def _check_choices(f: FormField, value: object) -> list[str]:
    if not isinstance(value, list):
        raise _fail(f, "type", f"expected array of strings, got {_json_type(value)}")
    values = [v for v, _ in f.options]
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _fail(f, "type", f"expected array of strings, got an item of type {_json_type(item)}")
        if item not in values:
            raise _fail(f, "enum", f"expected items from {', '.join(map(repr, values))}, got {_short(item)}")
        if item in value[:i]:
            raise _fail(f, "uniqueItems", f"option {item!r} is selected more than once")
    if f.min_items is not None and len(value) < f.min_items:
        raise _fail(f, "minItems", f"expected at least {f.min_items} selections, got {len(value)}")
    if f.max_items is not None and len(value) > f.max_items:
        raise _fail(f, "maxItems", f"expected at most {f.max_items} selections, got {len(value)}")
    return list(value)


def _finish(f: FormField) -> FormField:
    """Check a field's own consistency (bounds, options, default); return it with a normalized default."""
    for lo, hi in ((f.min_length, f.max_length), (f.minimum, f.maximum), (f.min_items, f.max_items)):
        if lo is not None and hi is not None and lo > hi:
            raise _def_error(f.name, f"the bounds {lo}..{hi} cannot be satisfied")
    values = [v for v, _ in f.options]
    if f.kind in ("select", "multiselect") and (not values or len(set(values)) != len(values)):
        raise _def_error(f.name, "a select needs at least one option and no duplicate options")
    if f.min_items is not None and f.min_items > len(values):
        raise _def_error(f.name, f"min_items {f.min_items} exceeds the {len(values)} options")
    if f.default is NO_DEFAULT:
        return f
    try:
        return dataclasses.replace(f, default=_check_value(f, f.default))
    except FormValidationError as exc:
        raise _def_error(f.name, f"the default {_short(f.default)} is not a valid answer ({exc})") from None


# --- rendering schemas -------------------------------------------------------------------------------------


def _render(f: FormField, *, defaults: bool, enums: bool, version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string" if f.kind == "select" else f.kind}
    out.update((k, v) for k, v in (("title", f.title), ("description", f.description)) if v is not None)
    values = [v for v, _ in f.options]
    titled = [{"const": v, "title": t} for v, t in f.options]
    if f.kind == "multiselect":
        if not enums:
            raise _def_error(f.name, f"multi-select fields cannot be sent to a client on revision {version}; "
                                     "use a single select or one boolean field per option")  # fmt: skip
        out["type"] = "array"
        out["items"] = {"anyOf": titled} if f.titled else {"type": "string", "enum": values}
    elif f.kind == "select" and f.titled and enums:
        out["oneOf"] = titled
    elif f.kind == "select":
        out["enum"] = values
        if f.titled:
            out["enumNames"] = [t for _, t in f.options]
    out.update((k, v) for k, v in (
        ("format", f.format), ("minLength", f.min_length), ("maxLength", f.max_length), ("minimum", f.minimum),
        ("maximum", f.maximum), ("minItems", f.min_items), ("maxItems", f.max_items)) if v is not None)  # fmt: skip
    if f.default is not NO_DEFAULT and (defaults or f.kind == "boolean"):
        out["default"] = list(f.default) if isinstance(f.default, list) else f.default
    return out


def _render_schema(fields: tuple[FormField, ...], version: str) -> dict[str, Any]:
    if not supports(version, Feature.ELICITATION):
        raise FormDefinitionError(None, f"protocol revision {version!r} has no elicitation; "
                                        "check the client's elicitation capability before asking")  # fmt: skip
    defaults, enums = supports(version, Feature.ELICITATION_DEFAULTS), supports(version, Feature.ELICITATION_ENUMS)
    props = {f.name: _render(f, defaults=defaults, enums=enums, version=version) for f in fields}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required := [f.name for f in fields if f.required]:
        schema["required"] = required
    return schema


# --- the Form ------------------------------------------------------------------------------------------------


class Form(Generic[T]):
    """A compiled elicitation form: field descriptions, schema, answer validation and building.

    Attributes:
        fields: The fields, in schema order.
        schema: The canonical 2025-11-25 ``requestedSchema`` (for :func:`parse_schema`: the schema as given).
    """

    __slots__ = ("_given", "_make", "_rendered", "fields", "schema")

    def __init__(
        self, fields: tuple[FormField, ...], make: Callable[[dict[str, Any]], T], schema: dict[str, Any] | None = None
    ) -> None:
        """Wrap ``fields``; ``make`` turns a validated answer into the typed value.

        A ``schema`` given here (a raw schema the author wrote, already checked) is what
        :meth:`schema_for` sends to 2025-11-25 and later clients, word for word.
        """
        self.fields = fields
        self._make = make
        self._given = schema is not None
        self.schema = schema if schema is not None else _render_schema(fields, _CANONICAL)
        self._rendered: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"Form({[f.name for f in self.fields]})"

    def schema_for(self, version: str) -> dict[str, Any]:
        """Render the ``requestedSchema`` for a negotiated protocol revision.

        Args:
            version: The negotiated revision, e.g. ``"2025-06-18"``.

        Returns:
            The schema in that revision's shape, rendered once per revision and then shared
            (treat it as read-only).

        Raises:
            FormDefinitionError: The revision has no elicitation, or cannot express a field (a multi-select).
        """
        rendered = self._rendered.get(version)
        if rendered is None:
            if self._given and supports(version, Feature.ELICITATION_ENUMS):
                rendered = copy.deepcopy(self.schema)  # an author's raw schema goes out as written
            else:
                rendered = _render_schema(self.fields, version)
            self._rendered[version] = rendered
        return rendered

    def validate(self, content: object) -> dict[str, Any]:
        """Validate the ``content`` of an accepted answer (server side).

        Args:
            content: The decoded JSON ``content`` object of an ``accept`` result.

        Returns:
            The named fields' normalized values; unknown fields are dropped, omitted optional fields stay absent.

        Raises:
            FormValidationError: The first problem found, in schema order.
        """
        if not isinstance(content, Mapping):
            raise FormValidationError(None, "type", f"the answer content must be an object, got {_json_type(content)}")
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.name in content:
                out[f.name] = _check_value(f, content[f.name])
            elif f.required:
                raise _fail(f, "required", "a value is required but the answer omits it")
        return out

    def build(self, content: object) -> T:
        """Validate ``content``, then build the typed value.

        Args:
            content: The decoded JSON ``content`` object of an ``accept`` result.

        Returns:
            An instance of the form type (a dict for TypedDicts and raw schemas); omitted optional fields get
            their Python defaults.

        Raises:
            FormValidationError: The answer breaks the schema, or the form type's constructor refused it.
        """
        return self._make(self.validate(content))

    def fill_defaults(self, content: Mapping[str, Any]) -> dict[str, Any]:
        """Copy ``content`` and fill omitted fields from the schema defaults (client side).

        Args:
            content: The answers collected so far.

        Returns:
            A new dict; values already present are kept.
        """
        out = dict(content)
        for f in self.fields:
            if f.name not in out and f.default is not NO_DEFAULT:
                out[f.name] = list(f.default) if isinstance(f.default, list) else f.default
        return out


# --- parsing wire schemas ------------------------------------------------------------------------------------


def _get(name: str, prop: Mapping[str, Any], key: str, want: type | tuple[type, ...]) -> Any:
    value = prop.get(key)
    negative = want is int and isinstance(value, int) and value < 0
    if value is not None and (isinstance(value, bool) or not isinstance(value, want) or negative):
        raise _def_error(name, f"{key!r} has an invalid value {_short(value)}")
    return value


def _str_list(name: str, value: object, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _def_error(name, f"{key!r} must be a list of strings")
    return value


def _titled_options(name: str, value: object, key: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise _def_error(name, f"{key!r} must be a list of {{const, title}} objects")
    options = tuple((o.get("const"), o.get("title", o.get("const"))) for o in value)
    if not all(isinstance(v, str) and isinstance(t, str) for v, t in options):
        raise _def_error(name, f"every {key!r} entry needs a string 'const' and 'title'")
    return options


def _parse_property(name: str, prop: object, required: bool) -> FormField:
    if not isinstance(prop, Mapping):
        raise _def_error(name, "a property schema must be an object")
    if "$ref" in prop:
        raise _def_error(name, "$ref is not allowed in elicitation forms; inline the field")
    kind = prop.get("type")
    if kind == "object" or "properties" in prop:
        raise _def_error(name, "nested objects are not allowed in elicitation forms; flatten it into separate fields")
    if kind not in ("string", "array") and ("enum" in prop or "oneOf" in prop):
        raise _def_error(name, "enum options must be strings (type 'string')")
    spec: dict[str, Any] = {
        "name": name, "kind": kind, "required": required, "default": prop.get("default", NO_DEFAULT),
        "title": _get(name, prop, "title", str), "description": _get(name, prop, "description", str),
    }  # fmt: skip
    if kind == "string" and "oneOf" in prop:
        spec.update(kind="select", titled=True, options=_titled_options(name, prop["oneOf"], "oneOf"))
    elif kind == "string" and "enum" in prop:
        values = _str_list(name, prop["enum"], "enum")
        titles = _str_list(name, prop.get("enumNames", values), "enumNames")
        if len(titles) != len(values):
            raise _def_error(name, "'enumNames' must have one title per 'enum' value")
        spec.update(kind="select", titled="enumNames" in prop, options=tuple(zip(values, titles, strict=True)))
    elif kind == "string":
        if (fmt := _get(name, prop, "format", str)) is not None and fmt not in FORMATS:
            raise _def_error(name, f"format {fmt!r} is not allowed; use one of {', '.join(FORMATS)}")
        spec.update(format=fmt, min_length=_get(name, prop, "minLength", int))
        spec.update(max_length=_get(name, prop, "maxLength", int))
    elif kind in ("number", "integer"):
        spec.update(minimum=_get(name, prop, "minimum", (int, float)))
        spec.update(maximum=_get(name, prop, "maximum", (int, float)))
    elif kind == "array":
        items = prop.get("items")
        if isinstance(items, Mapping) and "anyOf" in items:
            spec.update(titled=True, options=_titled_options(name, items["anyOf"], "anyOf"))
        elif isinstance(items, Mapping) and items.get("type") == "string" and "enum" in items:
            spec.update(options=tuple((v, v) for v in _str_list(name, items["enum"], "enum")))
        else:
            raise _def_error(name, "arrays are only allowed as multi-select: items must be "
                                   "{type: string, enum: [...]} or {anyOf: [{const, title}]}")  # fmt: skip
        spec.update(kind="multiselect", min_items=_get(name, prop, "minItems", int))
        spec.update(max_items=_get(name, prop, "maxItems", int))
    elif kind != "boolean":
        raise _def_error(name, f"type {_short(kind)} is not allowed; use string, number, integer, boolean or an enum")
    return _finish(FormField(**spec))


def _parse_fields(schema: object) -> tuple[FormField, ...]:
    if not isinstance(schema, Mapping):
        raise FormDefinitionError(None, "a form schema must be a JSON object")
    if any(key in schema for key in ("$ref", "$defs", "definitions")):
        raise FormDefinitionError(None, "$ref/$defs are not allowed in elicitation forms; inline every field")
    if schema.get("type") != "object":
        raise FormDefinitionError(None, "a form schema must have type 'object'")
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        raise FormDefinitionError(None, _EMPTY_FORM)
    required = _str_list("required", schema.get("required", []), "required")
    for name in required:
        if name not in props:
            raise _def_error(name, "listed in 'required' but not defined in 'properties'")
    return tuple(_parse_property(str(name), prop, name in required) for name, prop in props.items())


def parse_schema(schema: Mapping[str, Any]) -> Form[dict[str, Any]]:
    """Read a ``requestedSchema`` from the wire (client side) into a :class:`Form`.

    Accepts every 2025-06-18 and 2025-11-25 shape, including legacy ``enumNames``. The secret-name guard
    does not apply here (it is the server's duty).

    Args:
        schema: The ``requestedSchema`` of an ``elicitation/create`` request.

    Returns:
        A form whose ``.schema`` is a copy of ``schema`` as given and whose ``build`` returns a dict.

    Raises:
        FormDefinitionError: The schema leaves the restricted schema (``$ref``, nested object, array of
            non-enum, unknown type, unknown format, inconsistent bounds or default).
    """
    return Form(_parse_fields(schema), dict, dict(schema))


# --- compiling Python types ----------------------------------------------------------------------------------

_SKIP: Any = _Sentinel("SKIP")  # _Slot.missing: leave the argument out, the type supplies the default


@dataclass(frozen=True, slots=True)
class _Slot:
    wire: str  # key in the answer
    attr: str  # Python attribute / TypedDict key
    convert: Callable[[Any], Any]
    missing: Any  # value passed when the answer omits the field, or _SKIP


def _ident(value: Any) -> Any:
    return value


def _collect(container: Callable[[Iterable[Any]], Any], item: Callable[[Any], Any], value: list[str]) -> Any:
    return container(map(item, value))


def _unsupported(name: str, tp: Any) -> FormDefinitionError:
    base = get_origin(tp) or tp
    if tp is Any or tp is object:
        why = "type Any is not allowed; give the field a concrete type (str, int, float, bool, Literal[...])"
    elif isinstance(base, type) and (
        issubclass(base, (msgspec.Struct, Mapping)) or dataclasses.is_dataclass(base) or typing.is_typeddict(base)
    ):
        why = "nested objects are not allowed in elicitation forms; flatten it into separate primitive fields"
    elif base is tuple:
        why = "tuples are not allowed; use separate fields, or list[Literal[...]] for a multi-select"
    elif base in (bytes, bytearray, memoryview):
        why = "binary data cannot be entered in a form; use str"
    else:
        why = (f"type {tp!r} is not allowed in elicitation forms; use str, int, float, bool, date, datetime, "
               "Literal[...] / a str Enum, or list[Literal[...]] for a multi-select")  # fmt: skip
    return _def_error(name, why)


def _unwrap(name: str, tp: Any) -> tuple[Any, list[msgspec.Meta], list[object], bool]:
    """Strip Annotated / Optional / NewType layers: (type, Meta list, other markers, optional)."""
    metas: list[msgspec.Meta] = []
    marks: list[object] = []
    optional = False
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            for m in tp.__metadata__:
                (metas if isinstance(m, msgspec.Meta) else marks).append(m)
            tp = tp.__origin__
        elif origin is typing.Union or origin is types.UnionType:
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                raise _def_error(name, "unions of several types are not allowed; use one type "
                                       "(X | None only marks the field optional)")  # fmt: skip
            optional, tp = True, args[0]
        elif isinstance(tp, typing.NewType):
            tp = tp.__supertype__
        else:
            return tp, metas, marks, optional


def _select(name: str, tp: Any, marks: list[object]) -> tuple[dict[str, Any], Callable[[Any], Any]] | None:
    """Field kwargs and value -> Python converter for a Literal or Enum type; None for other types."""
    if get_origin(tp) is Literal:
        values, convert = get_args(tp), _ident
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        values, convert = tuple(m.value for m in tp), tp
    else:
        return None
    if not all(isinstance(v, str) for v in values):
        raise _def_error(name, "select options must be strings; use Literal['a', 'b'] or an Enum with str values")
    titles = {k: v for m in marks if isinstance(m, Titled) for k, v in m.titles.items()}
    if unknown := set(titles) - set(values):
        raise _def_error(name, f"Titled names unknown options {sorted(unknown)}")
    return {"options": tuple((v, titles.get(v, v)) for v in values), "titled": bool(titles)}, convert


def _analyze(name: str, annotation: Any) -> tuple[dict[str, Any], Callable[[Any], Any], bool, bool]:
    """Field kwargs, converter, optional flag and AllowSensitive flag for one field annotation."""
    tp, metas, marks, optional = _unwrap(name, annotation)
    spec: dict[str, Any] = {"name": name}
    convert: Callable[[Any], Any] = _ident
    origin = get_origin(tp)
    if tp in (bool, int, float, str):
        spec["kind"] = {bool: "boolean", int: "integer", float: "number", str: "string"}[tp]
        convert = float if tp is float else _ident
    elif tp is datetime.datetime or tp is datetime.date:
        spec.update(kind="string", format="date-time" if tp is datetime.datetime else "date")
        convert = _parse_datetime if tp is datetime.datetime else _parse_date
    elif select := _select(name, tp, marks):
        spec.update(kind="select", **select[0])
        convert = select[1]
    elif origin in (list, set, frozenset) and get_args(tp):
        item, item_metas, item_marks, item_optional = _unwrap(name, get_args(tp)[0])
        item_select = _select(name, item, marks + item_marks)
        if item_select is None or item_metas or item_optional:
            raise _def_error(name, "multi-select items must be Literal['a', ...] strings or a str Enum (no "
                                   "constraints on the items); free-text lists are not allowed")  # fmt: skip
        spec.update(kind="multiselect", **item_select[0])
        convert = functools.partial(_collect, origin, item_select[1])
    else:
        raise _unsupported(name, tp)
    if any(isinstance(m, Titled) for m in marks) and spec["kind"] not in ("select", "multiselect"):
        raise _def_error(name, "Titled only applies to Literal / Enum selects")
    _apply_metas(spec, metas)
    return spec, convert, optional, any(m is AllowSensitive for m in marks)


def _apply_metas(spec: dict[str, Any], metas: list[msgspec.Meta]) -> None:
    name, kind = spec["name"], spec["kind"]
    for meta in metas:
        if meta.gt is not None or meta.lt is not None:
            raise _def_error(name, "exclusive bounds (gt/lt) are not in the restricted schema; use ge/le")
        if meta.multiple_of is not None or meta.pattern is not None:
            what = "pattern" if meta.pattern is not None else "multiple_of"
            raise _def_error(name, f"{what} is not in the restricted schema; check it in your tool instead")
        extra = meta.extra_json_schema or {}
        for key in ("title", "description"):
            if (text := extra.get(key, getattr(meta, key))) is not None:
                spec[key] = text
        if "format" in extra:
            if kind != "string" or spec.get("format") or extra["format"] not in FORMATS:
                raise _def_error(name, f"format {extra['format']!r} is not allowed here; str fields may use "
                                       f"one of {', '.join(FORMATS)}")  # fmt: skip
            spec["format"] = extra["format"]
        if meta.ge is not None or meta.le is not None:
            if kind not in ("integer", "number"):
                raise _def_error(name, "ge/le only apply to int and float fields")
            spec.update((k, v) for k, v in (("minimum", meta.ge), ("maximum", meta.le)) if v is not None)
        if meta.min_length is not None or meta.max_length is not None:
            if (unit := {"string": "length", "multiselect": "items"}.get(kind)) is None:
                raise _def_error(name, "min_length/max_length only apply to str fields and multi-selects")
            bounds = (("min", meta.min_length), ("max", meta.max_length))
            spec.update((f"{k}_{unit}", v) for k, v in bounds if v is not None)


def _to_json(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return sorted(_to_json(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value.isoformat() if isinstance(value, datetime.date) else value


def _members(form_type: Any) -> tuple[bool, list[tuple[str, str, Any, Any, bool]]]:
    """(is a dict type, fields as (attr, wire name, annotation, default or NO_DEFAULT, dict-required))."""

    def default(value: Any, factory: Any, missing: Any) -> Any:
        return factory() if factory is not missing else NO_DEFAULT if value is missing else value

    try:
        if isinstance(form_type, type) and issubclass(form_type, msgspec.Struct):
            nodefault = msgspec.NODEFAULT
            return False, [(f.name, f.encode_name, f.type, default(f.default, f.default_factory, nodefault), True)
                           for f in msgspec.structs.fields(form_type)]  # fmt: skip
        if isinstance(form_type, type) and dataclasses.is_dataclass(form_type):
            hints, missing = typing.get_type_hints(form_type, include_extras=True), dataclasses.MISSING
            return False, [(f.name, f.name, hints[f.name], default(f.default, f.default_factory, missing), True)
                           for f in dataclasses.fields(form_type) if f.init]  # fmt: skip
        if typing.is_typeddict(form_type):
            out = []
            for key, hint in typing.get_type_hints(form_type, include_extras=True).items():
                origin = get_origin(hint)
                wrapped = origin in (typing.Required, typing.NotRequired)
                required = origin is typing.Required if wrapped else key in form_type.__required_keys__
                out.append((key, key, get_args(hint)[0] if wrapped else hint, NO_DEFAULT, required))
            return True, out
    except NameError as exc:
        raise FormDefinitionError(None, f"cannot resolve the annotations of {form_type!r}: {exc}") from None
    raise FormDefinitionError(None, f"{form_type!r} is not a form type; use a msgspec.Struct, a dataclass, "
                                    "a TypedDict or a dict schema")  # fmt: skip


def _compile_type(form_type: Any, allowed: frozenset[str]) -> Form[Any]:
    is_dict, members = _members(form_type)
    if not members:
        raise FormDefinitionError(None, _EMPTY_FORM)
    fields: list[FormField] = []
    slots: list[_Slot] = []
    exempt = set(allowed)
    for attr, wire, annotation, default, dict_required in members:
        spec, convert, optional, allow = _analyze(wire, annotation)
        default = NO_DEFAULT if default is None and optional else default
        has_default = default is not NO_DEFAULT
        spec.update(required=dict_required and not has_default and not optional, default=_to_json(default))
        fields.append(_finish(FormField(**spec)))
        # Omitted answer: a TypedDict needs None only for a required `X | None` key; a class needs None only
        # for an optional field without a default (otherwise its constructor applies the default).
        needs_none = dict_required if is_dict else not has_default
        slots.append(_Slot(wire, attr, convert, None if needs_none else _SKIP))
        if allow or attr in allowed:
            exempt.add(wire)
    if unknown := allowed - {s.wire for s in slots} - {s.attr for s in slots}:
        raise FormDefinitionError(None, f"allow_sensitive names {sorted(unknown)}, not fields of {form_type!r}")
    _guard(fields, exempt)

    def make(values: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {}
        for s in slots:
            if s.wire in values:
                kwargs[s.attr] = s.convert(values[s.wire])
            elif s.missing is not _SKIP:
                kwargs[s.attr] = s.missing
        if is_dict:
            return kwargs
        try:
            return form_type(**kwargs)
        except ValueError as exc:
            message = f"the answer was refused by {form_type.__name__}: {exc}"
            raise FormValidationError(None, "construct", message) from exc

    return Form(tuple(fields), make)


_CACHE: dict[tuple[Any, frozenset[str]], Form[Any]] = {}
_NO_NAMES: frozenset[str] = frozenset()


@overload
def compile_form(form_type: type[T], *, allow_sensitive: Collection[str] = ()) -> Form[T]: ...
@overload
def compile_form(form_type: Mapping[str, Any], *, allow_sensitive: Collection[str] = ()) -> Form[dict[str, Any]]: ...
def compile_form(form_type: Any, *, allow_sensitive: Collection[str] = ()) -> Form[Any]:
    """Compile a form type (or a raw dict schema) into a :class:`Form`; types are compiled once and cached.

    Args:
        form_type: A msgspec Struct, dataclass or TypedDict of flat primitive fields, or a raw
            ``requestedSchema`` dict (checked like :func:`parse_schema`, plus the secret guard).
        allow_sensitive: Field names (Python or wire names) exempt from the secret-name guard.

    Returns:
        The compiled form; its ``build`` returns an instance of ``form_type`` (a dict for TypedDicts and raw
        schemas).

    Raises:
        FormDefinitionError: A field cannot be expressed in the restricted schema (the error names it).
        SensitiveFieldError: A field looks like a secret and is not opted out.
    """
    if not isinstance(form_type, type) and isinstance(form_type, Mapping):  # a raw schema
        allowed = frozenset(allow_sensitive)
        fields = _parse_fields(form_type)
        if unknown := allowed - {f.name for f in fields}:
            raise FormDefinitionError(None, f"allow_sensitive names {sorted(unknown)}, not fields of the schema")
        _guard(fields, allowed)
        return Form(fields, dict, copy.deepcopy(dict(form_type)))
    key = (form_type, frozenset(allow_sensitive) if allow_sensitive else _NO_NAMES)
    if (form := _CACHE.get(key)) is None:
        form = _CACHE[key] = _compile_type(form_type, key[1])
    return form


def check_form(form_type: Any, *, allow_sensitive: Collection[str] = ()) -> None:
    """Raise like :func:`compile_form` when ``form_type`` is not a valid form; for an app's unit tests.

    Args:
        form_type: A form type or raw dict schema.
        allow_sensitive: Field names exempt from the secret-name guard.

    Raises:
        FormDefinitionError: A field cannot be expressed in the restricted schema.
        SensitiveFieldError: A field looks like a secret and is not opted out.
    """
    compile_form(form_type, allow_sensitive=allow_sensitive)
