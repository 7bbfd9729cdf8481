"""Elicitation forms: the Form, compile_form and parse_schema; Python types <-> the restricted MCP form schema.

Layer 2, pure. A first reading needs only :func:`compile_form` and :class:`Form` (how ``ctx.elicit``
turns a type into a schema and checks the answer); the field, schema and cache modules may be skipped.

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
  :mod:`minimcp.wire.versions`: 2025-06-18 loses non-boolean defaults, writes titled selects as legacy
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

Modules
-------
This module is the public face: every name above imports from here. The work is done by
:mod:`minimcp.forms.fields` (``FormField``, the markers and the errors), :mod:`minimcp.forms.check`
(checking one answer value, the formats, a field's own consistency), :mod:`minimcp.forms.schema`
(fields <-> the ``requestedSchema`` JSON, per revision) and :mod:`minimcp.forms.types` (Python
types -> fields and the builder of typed values). Each is pure: no I/O, no clock, no event loop.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Generic, TypeVar, overload

import msgspec

from minimcp.forms.check import answer_checks, validate_checked
from minimcp.forms.fields import NO_DEFAULT, AllowSensitive, FormField, Titled
from minimcp.forms.schema import CANONICAL, parse_fields, render_schema
from minimcp.forms.types import read_type
from minimcp.wire.errors import FormDefinitionError, FormValidationError, SensitiveFieldError
from minimcp.wire.versions import Feature, supports

_sorted_encode = msgspec.json.Encoder(order="sorted").encode
#: ``Form._encoded`` of a form asked once: nothing made yet (shared, never written to).
_ASKED_ONCE: dict[str, tuple[bytes, bytes, frozenset[str]]] = {}

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


# --- the Form ------------------------------------------------------------------------------------------------


class Form(Generic[T]):
    """A compiled elicitation form: field descriptions, schema, answer validation and building.

    Attributes:
        fields: The fields, in schema order.
        make: Turns a validated answer (:meth:`validate`) into the typed value (what :meth:`build` returns).
        schema: The canonical 2025-11-25 ``requestedSchema`` (for :func:`parse_schema`: the schema as given).
    """

    __slots__ = ("_encoded", "_given", "_rendered", "checks", "fields", "make", "schema")

    def __init__(
        self, fields: tuple[FormField, ...], make: Callable[[dict[str, Any]], T], schema: dict[str, Any] | None = None
    ) -> None:
        """Wrap ``fields``; ``make`` turns a validated answer into the typed value.

        A ``schema`` given here (a raw schema the author wrote, already checked) is what
        :meth:`schema_for` sends to 2025-11-25 and later clients, word for word.
        """
        self.fields = fields
        #: What checks an answer (:func:`minimcp.forms.check.validate_checked`), worked out once from the fields.
        self.checks = answer_checks(fields)
        self.make = make
        self._given = schema is not None
        self.schema = schema if schema is not None else render_schema(fields, CANONICAL)
        self._rendered: dict[str, dict[str, Any]] = {}
        self._encoded: dict[str, tuple[bytes, bytes, frozenset[str]]] | None = None

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
                rendered = render_schema(self.fields, version)
            self._rendered[version] = rendered
        return rendered

    def encoded_schema(self, version: str, schema: object) -> tuple[bytes, bytes, frozenset[str]] | None:
        """``schema`` as JSON (its own key order, and sorted) and its properties' names, made once per
        revision -- if ``schema`` is this form's own rendering (:meth:`schema_for`); else ``None``.

        Also ``None`` for the form's first question: a form compiled for one question (a raw schema
        the caches do not keep) is held by its waiting call, which then holds no bytes it never reuses.
        """
        rendered = self._rendered.get(version)
        if schema is not rendered or rendered is None:
            return None
        encoded = self._encoded
        if encoded is None:
            self._encoded = _ASKED_ONCE
            return None
        found = encoded.get(version)
        if found is None:
            if encoded is _ASKED_ONCE:
                encoded = self._encoded = {}
            props = rendered.get("properties")
            found = encoded[version] = (
                msgspec.json.encode(rendered), _sorted_encode(rendered), frozenset(props if type(props) is dict else ())
            )
        return found

    def validate(self, content: object) -> dict[str, Any]:
        """Validate the ``content`` of an accepted answer (server side).

        Args:
            content: The decoded JSON ``content`` object of an ``accept`` result.

        Returns:
            The named fields' normalized values; unknown fields are dropped, omitted optional fields stay absent.

        Raises:
            FormValidationError: The first problem found, in schema order.
        """
        return validate_checked(self.checks, content)

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
        return self.make(validate_checked(self.checks, content))

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
    return Form(parse_fields(schema), dict, dict(schema))


# --- compiling ------------------------------------------------------------------------------------------------

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
        fields = parse_fields(form_type)
        if unknown := allowed - {f.name for f in fields}:
            raise FormDefinitionError(None, f"allow_sensitive names {sorted(unknown)}, not fields of the schema")
        _guard(fields, allowed)
        return Form(fields, dict, copy.deepcopy(dict(form_type)))
    key = (form_type, frozenset(allow_sensitive) if allow_sensitive else _NO_NAMES)
    if (form := _CACHE.get(key)) is None:
        fields, make, exempt = read_type(form_type, key[1])
        _guard(fields, exempt)
        form = _CACHE[key] = Form(fields, make)
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
