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
cached by :func:`minimcp.forms.compile_form` itself. The tables belong to one server's
:class:`FormCache` (nothing here is module-global), which also keeps the form types asked on
revision 2026-07-28 ready.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, cast

import msgspec

from minimcp import forms
from minimcp.wire.types import ElicitRequestParams
from minimcp.wire.versions import Feature, supports

if TYPE_CHECKING:
    from minimcp.wire.input_required import FormQuestion

#: The default bound (``Limits.max_form_shapes``); a tool has a handful of shapes.
MAX_SHAPES = 256

_encode = msgspec.json.Encoder(order="sorted").encode
#: Most form types a :class:`FormCache` keeps compiled by the type alone (types are as few as the code's; past
#: it, a type's form is found through compile_form, whose own cache is keyed by the type and its exemptions).
MAX_TYPES = 1024
#: shape -> (its compiled form, the defaults it was compiled with, one-field checkers for other defaults)
Shapes = dict[bytes, tuple[forms.Form[dict[str, Any]], bytes, dict[str, forms.Form[dict[str, Any]]]]]


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


#: Most form types a :class:`FormCache` keeps ready. Types are as few as a program's code defines (a peer
#: makes none); the bound only stops a program that makes types per call from growing the table. Past it,
#: such a type's questions are made the way that fills the table, as before it.
MAX_READY_TYPES = 1024

#: What follows the message in a form question's params and sorted payload, and its fields' names
#: (:func:`minimcp.wire.input_required.form_parts`).
FormParts = tuple[bytes, bytes, frozenset[str]]


class FormCache:
    """The forms one server's tools ask, as the server keeps them: one per server (``Server.form_cache``, made
    with its first form question, which loads the forms machinery; a call reaches it through its connection).

    :meth:`question_form` compiles a question's form, keeping raw schemas by shape and form types by type. On revision
    2026-07-28 a form type's question is made from prepared bytes (the schema encoded once per form and
    revision, :func:`minimcp.wire.input_required.form_parts`); once made, the type is kept *ready* by (type,
    revision) with its compiled form and those bytes, and its later questions skip the params, the schema
    lookup and the encoding (:meth:`ready_question`; measured at 1.5 % of a 2026-07-28 round trip).
    """

    __slots__ = ("_make", "_parts", "_ready", "shapes", "types")

    def __init__(self) -> None:
        self.shapes: Shapes = {}
        #: form type -> its compiled form without exemptions (bounded by ``MAX_TYPES``)
        self.types: dict[Any, forms.Form[Any]] = {}
        self._ready: dict[tuple[type, str], tuple[forms.Form[Any], FormParts]] = {}
        #: ``ready_question`` and ``form_parts`` of :mod:`minimcp.wire.input_required`: bound with the first
        #: 2026-07-28 form question (a handshake-era server does not load that module).
        self._make: Callable[[str, FormParts, str | None], FormQuestion] | None = None
        self._parts: Callable[..., FormParts] | None = None

    def question_form(
        self, form: Any, allow_sensitive: Collection[str], version: str, max_shapes: int = MAX_SHAPES,
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
            compiled = self.types.get(form)  # (compile_form(form): its own cache, without making its key)
            if compiled is None:
                compiled = forms.compile_form(form)
                if len(self.types) < MAX_TYPES:
                    self.types[form] = compiled
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
        entry = self.shapes.get(key)
        if entry is None:
            compiled = forms.compile_form(form, allow_sensitive=allow_sensitive)  # every check, this call's defaults
            while len(self.shapes) >= max_shapes:
                try:
                    del self.shapes[next(iter(self.shapes))]
                except (KeyError, RuntimeError, StopIteration):  # a server served from several threads at once
                    break
            self.shapes[key] = (compiled, seen, {})
            return compiled, given
        compiled, checked, checkers = entry
        if seen != checked:  # other defaults: each must be a valid answer to its own field
            for name, value in defaults.items():
                _check_default(compiled, checkers, name, value)
        return compiled, given

    def ready_question(
        self, form: type, version: str, message: str, key: str | None
    ) -> tuple[FormQuestion, forms.Form[Any]] | None:
        """The question of a form type kept ready on ``version`` and its compiled form (``None``: not ready)."""
        ready = self._ready.get((form, version))
        if ready is None or self._make is None:
            return None
        return self._make(message, ready[1], key), ready[0]

    def form_question(
        self, form: Any, version: str, params: ElicitRequestParams, compiled: forms.Form[Any],
        encoded: FormParts, key: str | None,
    ) -> FormQuestion:
        """The question of ``params`` made from its form's ``encoded`` schema (``Form.encoded_schema``): the wire
        and digest ``Question.create`` gives. ``form``: a form type asked without exemptions, then kept ready on
        ``version`` (its form and bytes never change; the mode is the version's); else ``None``."""
        make, parts_of = self._make, self._parts
        if make is None or parts_of is None:
            make, parts_of = self._load()
        parts = parts_of(params.mode, encoded)
        if form is not None and len(self._ready) < MAX_READY_TYPES:
            self._ready[form, version] = (compiled, parts)
        return make(params.message, parts, key)

    def _load(self) -> tuple[Callable[[str, FormParts, str | None], FormQuestion], Callable[..., FormParts]]:
        from minimcp.wire.input_required import form_parts, ready_question

        self._make, self._parts = ready_question, form_parts
        return ready_question, form_parts
