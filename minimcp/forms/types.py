"""Python form types (msgspec Struct, dataclass, TypedDict) -> form fields, and the builder of typed answers.

Each annotation is unwrapped (``Annotated``, ``X | None``, ``NewType``) and mapped to one
field kind; constraints come from ``msgspec.Meta``. Anything the restricted schema cannot
express is refused here, naming the field and suggesting a fix. The builder turns a
validated answer into the type (``Literal`` values stay ``str``, Enum fields get members,
sets get sets, ``date``/``datetime`` fields get parsed values).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec

from minimcp.forms.check import checked_field, parse_date, parse_datetime
from minimcp.forms.fields import EMPTY_FORM, FORMATS, NO_DEFAULT, AllowSensitive, FormField, Sentinel, Titled, def_error
from minimcp.wire.errors import FormDefinitionError, FormValidationError

__all__ = ["read_type"]

_SKIP: Any = Sentinel("SKIP")  # _Slot.missing: leave the argument out, the type supplies the default


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
    return def_error(name, why)


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
                raise def_error(name, "unions of several types are not allowed; use one type "
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
        raise def_error(name, "select options must be strings; use Literal['a', 'b'] or an Enum with str values")
    titles = {k: v for m in marks if isinstance(m, Titled) for k, v in m.titles.items()}
    if unknown := set(titles) - set(values):
        raise def_error(name, f"Titled names unknown options {sorted(unknown)}")
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
        convert = parse_datetime if tp is datetime.datetime else parse_date
    elif select := _select(name, tp, marks):
        spec.update(kind="select", **select[0])
        convert = select[1]
    elif origin in (list, set, frozenset) and get_args(tp):
        item, item_metas, item_marks, item_optional = _unwrap(name, get_args(tp)[0])
        item_select = _select(name, item, marks + item_marks)
        if item_select is None or item_metas or item_optional:
            raise def_error(name, "multi-select items must be Literal['a', ...] strings or a str Enum (no "
                                  "constraints on the items); free-text lists are not allowed")  # fmt: skip
        spec.update(kind="multiselect", **item_select[0])
        convert = functools.partial(_collect, origin, item_select[1])
    else:
        raise _unsupported(name, tp)
    if any(isinstance(m, Titled) for m in marks) and spec["kind"] not in ("select", "multiselect"):
        raise def_error(name, "Titled only applies to Literal / Enum selects")
    _apply_metas(spec, metas)
    return spec, convert, optional, any(m is AllowSensitive for m in marks)


def _apply_metas(spec: dict[str, Any], metas: list[msgspec.Meta]) -> None:
    name, kind = spec["name"], spec["kind"]
    for meta in metas:
        if meta.gt is not None or meta.lt is not None:
            raise def_error(name, "exclusive bounds (gt/lt) are not in the restricted schema; use ge/le")
        if meta.multiple_of is not None or meta.pattern is not None:
            what = "pattern" if meta.pattern is not None else "multiple_of"
            raise def_error(name, f"{what} is not in the restricted schema; check it in your tool instead")
        extra = meta.extra_json_schema or {}
        for key in ("title", "description"):
            if (text := extra.get(key, getattr(meta, key))) is not None:
                spec[key] = text
        if "format" in extra:
            if kind != "string" or spec.get("format") or extra["format"] not in FORMATS:
                raise def_error(name, f"format {extra['format']!r} is not allowed here; str fields may use "
                                      f"one of {', '.join(FORMATS)}")  # fmt: skip
            spec["format"] = extra["format"]
        if meta.ge is not None or meta.le is not None:
            if kind not in ("integer", "number"):
                raise def_error(name, "ge/le only apply to int and float fields")
            spec.update((k, v) for k, v in (("minimum", meta.ge), ("maximum", meta.le)) if v is not None)
        if meta.min_length is not None or meta.max_length is not None:
            if (unit := {"string": "length", "multiselect": "items"}.get(kind)) is None:
                raise def_error(name, "min_length/max_length only apply to str fields and multi-selects")
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


def read_type(
    form_type: Any, allowed: frozenset[str]
) -> tuple[tuple[FormField, ...], Callable[[dict[str, Any]], Any], set[str]]:
    """The fields of ``form_type``, the builder of its values, and the wire names exempt from the secret guard.

    ``allowed``: names (Python or wire) the author exempted; one that is no field is an error.
    """
    is_dict, members = _members(form_type)
    if not members:
        raise FormDefinitionError(None, EMPTY_FORM)
    fields: list[FormField] = []
    slots: list[_Slot] = []
    exempt = set(allowed)
    for attr, wire, annotation, default, dict_required in members:
        spec, convert, optional, allow = _analyze(wire, annotation)
        default = NO_DEFAULT if default is None and optional else default
        has_default = default is not NO_DEFAULT
        spec.update(required=dict_required and not has_default and not optional, default=_to_json(default))
        fields.append(checked_field(FormField(**spec)))
        # Omitted answer: a TypedDict needs None only for a required `X | None` key; a class needs None only
        # for an optional field without a default (otherwise its constructor applies the default).
        needs_none = dict_required if is_dict else not has_default
        slots.append(_Slot(wire, attr, convert, None if needs_none else _SKIP))
        if allow or attr in allowed:
            exempt.add(wire)
    if unknown := allowed - {s.wire for s in slots} - {s.attr for s in slots}:
        raise FormDefinitionError(None, f"allow_sensitive names {sorted(unknown)}, not fields of {form_type!r}")

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

    if is_dict or not all(
        s.convert is _ident and s.attr == s.wire and (f.required or s.missing is _SKIP)
        for s, f in zip(slots, fields, strict=True)
    ):
        return tuple(fields), make, exempt

    def make_plain(values: dict[str, Any]) -> Any:
        """``make(values)`` for a class whose fields take their answers as they are, under their own names,
        and need no ``None`` when omitted (a required field is never omitted from a validated answer)."""
        try:
            return form_type(**values)
        except ValueError as exc:
            message = f"the answer was refused by {form_type.__name__}: {exc}"
            raise FormValidationError(None, "construct", message) from exc
        except TypeError:  # a key that is no field (not from validate): make leaves it out
            return make(values)

    return tuple(fields), make_plain, exempt
