"""The restricted ``requestedSchema`` JSON <-> form fields: rendered per protocol revision, parsed from the wire.

Rendering asks :mod:`minimcp.wire.versions` what the negotiated revision can carry (2025-06-18
loses non-boolean defaults, writes titled selects as ``enum`` + ``enumNames`` and has no
multi-select). Parsing accepts every 2025-06-18 and 2025-11-25 shape and refuses what
leaves the restricted schema, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minimcp.forms.check import checked_field, short
from minimcp.forms.fields import EMPTY_FORM, FORMATS, NO_DEFAULT, FormField, def_error
from minimcp.wire.errors import FormDefinitionError
from minimcp.wire.versions import Feature, supports

__all__ = ["CANONICAL", "parse_fields", "render_schema"]

CANONICAL = "2025-11-25"  # the revision whose shape Form.schema has


def _render(f: FormField, *, defaults: bool, enums: bool, version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string" if f.kind == "select" else f.kind}
    out.update((k, v) for k, v in (("title", f.title), ("description", f.description)) if v is not None)
    values = [v for v, _ in f.options]
    titled = [{"const": v, "title": t} for v, t in f.options]
    if f.kind == "multiselect":
        if not enums:
            raise def_error(f.name, f"multi-select fields cannot be sent to a client on revision {version}; "
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


def render_schema(fields: tuple[FormField, ...], version: str) -> dict[str, Any]:
    if not supports(version, Feature.ELICITATION):
        raise FormDefinitionError(None, f"protocol revision {version!r} has no elicitation; "
                                        "check the client's elicitation capability before asking")  # fmt: skip
    defaults, enums = supports(version, Feature.ELICITATION_DEFAULTS), supports(version, Feature.ELICITATION_ENUMS)
    props = {f.name: _render(f, defaults=defaults, enums=enums, version=version) for f in fields}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required := [f.name for f in fields if f.required]:
        schema["required"] = required
    return schema


# --- parsing wire schemas ------------------------------------------------------------------------------------


def _get(name: str, prop: Mapping[str, Any], key: str, want: type | tuple[type, ...]) -> Any:
    value = prop.get(key)
    negative = want is int and isinstance(value, int) and value < 0
    if value is not None and (isinstance(value, bool) or not isinstance(value, want) or negative):
        raise def_error(name, f"{key!r} has an invalid value {short(value)}")
    return value


def _str_list(name: str, value: object, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise def_error(name, f"{key!r} must be a list of strings")
    return value


def _titled_options(name: str, value: object, key: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise def_error(name, f"{key!r} must be a list of {{const, title}} objects")
    options = tuple((o.get("const"), o.get("title", o.get("const"))) for o in value)
    if not all(isinstance(v, str) and isinstance(t, str) for v, t in options):
        raise def_error(name, f"every {key!r} entry needs a string 'const' and 'title'")
    return options


def _parse_property(name: str, prop: object, required: bool) -> FormField:
    if not isinstance(prop, Mapping):
        raise def_error(name, "a property schema must be an object")
    if "$ref" in prop:
        raise def_error(name, "$ref is not allowed in elicitation forms; inline the field")
    kind = prop.get("type")
    if kind == "object" or "properties" in prop:
        raise def_error(name, "nested objects are not allowed in elicitation forms; flatten it into separate fields")
    if kind not in ("string", "array") and ("enum" in prop or "oneOf" in prop):
        raise def_error(name, "enum options must be strings (type 'string')")
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
            raise def_error(name, "'enumNames' must have one title per 'enum' value")
        spec.update(kind="select", titled="enumNames" in prop, options=tuple(zip(values, titles, strict=True)))
    elif kind == "string":
        if (fmt := _get(name, prop, "format", str)) is not None and fmt not in FORMATS:
            raise def_error(name, f"format {fmt!r} is not allowed; use one of {', '.join(FORMATS)}")
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
            raise def_error(name, "arrays are only allowed as multi-select: items must be "
                                  "{type: string, enum: [...]} or {anyOf: [{const, title}]}")  # fmt: skip
        spec.update(kind="multiselect", min_items=_get(name, prop, "minItems", int))
        spec.update(max_items=_get(name, prop, "maxItems", int))
    elif kind != "boolean":
        raise def_error(name, f"type {short(kind)} is not allowed; use string, number, integer, boolean or an enum")
    return checked_field(FormField(**spec))


def parse_fields(schema: object) -> tuple[FormField, ...]:
    if not isinstance(schema, Mapping):
        raise FormDefinitionError(None, "a form schema must be a JSON object")
    if any(key in schema for key in ("$ref", "$defs", "definitions")):
        raise FormDefinitionError(None, "$ref/$defs are not allowed in elicitation forms; inline every field")
    if schema.get("type") != "object":
        raise FormDefinitionError(None, "a form schema must have type 'object'")
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        raise FormDefinitionError(None, EMPTY_FORM)
    required = _str_list("required", schema.get("required", []), "required")
    for name in required:
        if name not in props:
            raise def_error(name, "listed in 'required' but not defined in 'properties'")
    return tuple(_parse_property(str(name), prop, name in required) for name, prop in props.items())
