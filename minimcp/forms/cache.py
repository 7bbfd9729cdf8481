"""Raw form schemas compiled once per shape: one shared validator for every question of that shape.

A tool that writes its form as a raw ``requestedSchema`` dict usually builds that dict per
call, often with a default that changes from call to call (a date, a suggestion). Compiling
it per call costs a parse, the secret-name guard and two deep copies, and every waiting call
would hold its own compiled form. Here the schema is keyed by its shape with the defaults set
aside: the first question of a shape is compiled in full (every check of
:func:`minimcp.forms.compile_form`), later ones reuse that form to validate the answer (a
default never changes how an answer is checked) and only have their own defaults checked.
The schema that goes out is the tool's own dict, as written, encoded at once.

Bounded: at most ``Limits.max_form_shapes`` shapes are kept (the oldest dropped first; the
bound of the server whose tool asks). Form *types* (Structs, dataclasses, TypedDicts) are
cached by :func:`minimcp.forms.compile_form` itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, cast

import msgspec

from minimcp import forms
from minimcp.wire.versions import Feature, supports

#: The default bound (``Limits.max_form_shapes``); a tool has a handful of shapes.
MAX_SHAPES = 256

#: shape -> (its compiled form, the defaults it was compiled with, one-field checkers for other defaults)
_shapes: dict[bytes, tuple[forms.Form[dict[str, Any]], bytes, dict[str, forms.Form[dict[str, Any]]]]] = {}
_encode = msgspec.json.Encoder(order="sorted").encode
#: form type -> its compiled form without exemptions (as compile_form caches it; types are as few as the code's)
_types: dict[Any, forms.Form[Any]] = {}
MAX_TYPES = 1024  # (past it, a type's form is found through compile_form, as before this table)


def _split(schema: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the schema without its properties' defaults, the defaults by property), or None: not a plain shape."""
    props = schema.get("properties")
    if type(schema) is not dict or type(props) is not dict:
        return None
    bare: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for name, prop in props.items():
        if type(prop) is dict and "default" in prop:
            defaults[name] = prop["default"]
            prop = {k: v for k, v in prop.items() if k != "default"}
        bare[name] = prop
    return {**schema, "properties": bare}, defaults


def question_form(
    form: Any, allow_sensitive: Collection[str], version: str, max_shapes: int = MAX_SHAPES,
    *, as_written: bool | None = None,
) -> tuple[forms.Form[Any], dict[str, Any] | None]:
    """The compiled form of a question and the raw schema to send as written (None: ``schema_for(version)``).

    ``form`` is a form type or a raw schema dict; raises like :func:`minimcp.forms.compile_form`.
    ``as_written``: whether ``version`` sends a raw schema as written (``Feature.ELICITATION_ENUMS``),
    if the caller knows already (a connection works it out once).
    """
    if isinstance(form, type) or (type(form) is not dict and not isinstance(form, Mapping)):  # a form type
        if allow_sensitive:
            return forms.compile_form(form, allow_sensitive=allow_sensitive), None
        compiled = _types.get(form)  # (compile_form(form): its own cache, without making its key)
        if compiled is None:
            compiled = forms.compile_form(form)
            if len(_types) < MAX_TYPES:
                _types[form] = compiled
        return compiled, None
    split = _split(form)
    if as_written is None:
        as_written = supports(version, Feature.ELICITATION_ENUMS)
    if split is None or not as_written or max_shapes <= 0:  # unusual, rendered for its revision, or no cache
        return forms.compile_form(form, allow_sensitive=allow_sensitive), None
    bare, defaults = split
    given = cast("dict[str, Any]", form)  # (a dict: _split checked it)
    try:
        key = _encode([bare, sorted(allow_sensitive)])
        seen = _encode(defaults)
    except (TypeError, msgspec.EncodeError):  # not JSON: compile_form says what is wrong
        return forms.compile_form(form, allow_sensitive=allow_sensitive), None
    entry = _shapes.get(key)
    if entry is None:
        compiled = forms.compile_form(form, allow_sensitive=allow_sensitive)  # every check, this call's defaults
        while len(_shapes) >= max_shapes:
            try:
                del _shapes[next(iter(_shapes))]
            except (KeyError, RuntimeError, StopIteration):  # servers in other threads share the cache
                break
        _shapes[key] = (compiled, seen, {})
        return compiled, given
    compiled, checked, checkers = entry
    if seen != checked:  # other defaults: each must be a valid answer to its own field
        for name, value in defaults.items():
            _check_default(compiled, checkers, name, value)
    return compiled, given


def _check_default(
    compiled: forms.Form[dict[str, Any]], checkers: dict[str, forms.Form[dict[str, Any]]], name: str, value: Any
) -> None:
    """Raise FormDefinitionError unless ``value`` is a valid answer to field ``name`` (as compile_form would)."""
    checker = checkers.get(name)
    if checker is None:
        field = next(f for f in compiled.fields if f.name == name)
        checker = checkers[name] = forms.Form((dataclasses.replace(field, required=False),), dict)
    try:
        checker.validate({name: value})
    except forms.FormValidationError as exc:
        raise forms.FormDefinitionError(name, f"the default {value!r} is not a valid answer ({exc})") from None
