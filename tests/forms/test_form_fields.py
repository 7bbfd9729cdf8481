"""minimcp/forms/fields.py: the vocabulary of forms (FormField, markers, errors), pure and shared by the form
modules."""

from __future__ import annotations

import enum

import pytest

from minimcp.forms.fields import FORMATS, NO_DEFAULT, AllowSensitive, FormField, Sentinel, Titled, def_error
from minimcp.wire import errors
from minimcp.wire.errors import FormDefinitionError, FormValidationError, SensitiveFieldError
from tests.helpers.layers import PACKAGE, forbidden_imports, transitive_imports


def test_the_module_is_pure() -> None:
    assert forbidden_imports((PACKAGE / "forms/fields.py").read_text(encoding="utf-8")) == set()
    assert transitive_imports("minimcp.forms.fields") == "clean"


def test_forms_reexports_the_same_objects() -> None:
    from minimcp import forms

    for name in ("NO_DEFAULT", "AllowSensitive", "Titled", "FormField", "FormDefinitionError",
                 "FormValidationError", "SensitiveFieldError"):  # fmt: skip
        assert getattr(forms, name) is globals()[name], name


def test_errors_sit_in_the_one_tree_and_keep_their_builtin_bases() -> None:
    assert issubclass(FormDefinitionError, errors.MinimcpError) and issubclass(FormDefinitionError, TypeError)
    assert issubclass(SensitiveFieldError, FormDefinitionError)
    assert issubclass(FormValidationError, errors.MinimcpError) and issubclass(FormValidationError, ValueError)
    assert not issubclass(FormValidationError, errors.McpError)
    problem = FormValidationError("age", "minimum", "field 'age': too small")
    assert (problem.field, problem.constraint, str(problem)) == ("age", "minimum", "field 'age': too small")


def test_def_error_names_the_field_first() -> None:
    named = def_error("date", "is wrong")
    assert isinstance(named, FormDefinitionError)
    assert (named.field, str(named)) == ("date", "field 'date': is wrong")
    whole = def_error(None, "the form is wrong")
    assert (whole.field, str(whole)) == (None, "the form is wrong")


def test_markers_are_distinct_and_named() -> None:
    assert repr(NO_DEFAULT) == "NO_DEFAULT" and repr(AllowSensitive) == "AllowSensitive"
    assert NO_DEFAULT is not AllowSensitive
    assert repr(Sentinel("X")) == "X"


def test_titled_keys_enum_members_by_value() -> None:
    class Size(enum.Enum):
        S = "s"
        L = "l"

    assert Titled({Size.S: "Small", "l": "Large"}).titles == {"s": "Small", "l": "Large"}


def test_a_field_defaults_to_required_without_default() -> None:
    field = FormField("name", "string")
    assert field.required and field.default is NO_DEFAULT and field.options == ()
    with pytest.raises(AttributeError):
        field.name = "other"  # type: ignore[misc]
    assert set(FORMATS) == {"email", "uri", "date", "date-time"}
