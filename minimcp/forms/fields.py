"""What an elicitation form is made of: FormField, its markers (NO_DEFAULT, AllowSensitive, Titled), the form errors.

The vocabulary the other form modules share (:mod:`minimcp.forms` re-exports every public
name): a :class:`FormField` is the typed description of one field, the same whether it was
compiled from a Python type or parsed from a schema on the wire.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from minimcp.wire.errors import FormDefinitionError

__all__ = [
    "EMPTY_FORM",
    "FORMATS",
    "NO_DEFAULT",
    "AllowSensitive",
    "FormField",
    "Kind",
    "Sentinel",
    "Titled",
    "def_error",
]

Kind = Literal["string", "number", "integer", "boolean", "select", "multiselect"]
#: The string formats the restricted schema allows.
FORMATS = ("email", "uri", "date", "date-time")
EMPTY_FORM = "a form needs at least one field; for a yes/no question use a single bool field"


def def_error(field: str | None, detail: str) -> FormDefinitionError:
    """A :class:`FormDefinitionError` about ``field`` (``None``: the whole form), its name leading the message."""
    return FormDefinitionError(field, f"field {field!r}: {detail}" if field else detail)


class Sentinel:
    """A named marker value (its repr is its name)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``FormField.default`` when the field has no default.
NO_DEFAULT: Any = Sentinel("NO_DEFAULT")
#: ``Annotated[str, AllowSensitive]`` exempts one field from the secret-name guard.
AllowSensitive: Any = Sentinel("AllowSensitive")


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
