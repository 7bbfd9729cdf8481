"""minimcp.on_demand: the forms machinery loads at the first read, every read sees the loaded module."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import pytest

from minimcp import on_demand

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_a_name_stands_for_the_loaded_module() -> None:
    import minimcp.form_cache
    import minimcp.forms

    assert on_demand.forms.compile_form is minimcp.forms.compile_form
    assert on_demand.forms.FormValidationError is minimcp.forms.FormValidationError
    assert on_demand.form_cache.question_form is minimcp.form_cache.question_form
    with pytest.raises(AttributeError, match="no_such_name"):
        on_demand.forms.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_a_replaced_attribute_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    import minimcp.forms

    def fake(*args: object, **kwargs: object) -> str:
        return "fake"

    monkeypatch.setattr(minimcp.forms, "compile_form", fake)
    assert on_demand.forms.compile_form is fake  # type: ignore[comparison-overlap]


def test_nothing_loads_until_the_first_read_and_a_form_error_class_loads_nothing() -> None:
    """In a fresh interpreter: a form error's class read before any form matches no exception and loads
    nothing; the first other read loads the machinery, and from then on the real classes are given."""
    code = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(
        """
        from minimcp.on_demand import forms

        def loaded():
            return sorted(m for m in sys.modules if m.startswith("minimcp.form"))

        assert loaded() == [], loaded()
        try:
            raise ValueError("not a form error")
        except forms.FormValidationError:
            raise AssertionError("caught by a form error class")
        except ValueError:
            pass
        assert not isinstance(ValueError(), forms.FormDefinitionError)
        assert loaded() == [], loaded()
        compiled = forms.compile_form({"type": "object", "properties": {"n": {"type": "integer"}}})
        assert "minimcp.forms" in loaded() and "minimcp.form_fields" in loaded(), loaded()
        assert forms is sys.modules["minimcp.forms"]  # the reader's name now is the module itself
        try:
            compiled.build({"n": "two"})
        except forms.FormValidationError as exc:
            assert exc.field == "n"
        else:
            raise AssertionError("an invalid answer was accepted")
        print("ok")
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
