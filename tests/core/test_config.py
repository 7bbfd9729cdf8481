"""minimcp.core.config: Limits is one immutable bag of bounds with a documented default for each."""

from __future__ import annotations

import inspect

import msgspec
import pytest

from minimcp.core.config import Limits


def test_defaults() -> None:
    limits = Limits()
    assert limits.max_message_bytes == 4 * 1024 * 1024
    assert limits.request_timeout == 60.0
    assert limits.elicitation_timeout == 300.0
    assert limits.page_size == 100
    assert limits.stream_buffer_bytes == 1024 * 1024
    assert limits.notice_timeout == 10.0


def test_limits_are_immutable() -> None:
    limits = Limits()
    with pytest.raises(AttributeError):
        limits.page_size = 5  # type: ignore[misc]
    assert limits.page_size == 100
    with pytest.raises((AttributeError, TypeError)):
        limits.not_a_limit = 1  # type: ignore[attr-defined]  # (slots: no stray attributes)


def test_replace_makes_a_changed_copy() -> None:
    limits = Limits()
    smaller = limits.replace(page_size=5, request_timeout=None)
    assert (smaller.page_size, smaller.request_timeout) == (5, None)
    assert (limits.page_size, limits.request_timeout) == (100, 60.0)
    assert smaller.max_message_bytes == limits.max_message_bytes
    assert smaller == Limits(page_size=5, request_timeout=None)


def test_replace_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="page_sise"):
        Limits().replace(page_sise=5)


def test_limits_compare_and_hash_by_value() -> None:
    assert Limits(page_size=7) == Limits(page_size=7) != Limits()
    assert hash(Limits(page_size=7)) == hash(Limits(page_size=7))


def test_every_limit_is_documented() -> None:
    """Each field has an entry in the class docstring's Attributes section."""
    # cleandoc: Python 3.13 strips a docstring's common indentation at compile time, 3.11 keeps it.
    doc = inspect.cleandoc(Limits.__doc__ or "")
    missing = [f.name for f in msgspec.structs.fields(Limits) if f"\n    {f.name}: " not in doc]
    assert missing == []


def test_every_limit_has_a_default_and_a_bound_type() -> None:
    """Limits() needs no argument, and each default is a number (or None: no bound, documented so)."""
    for field in msgspec.structs.fields(Limits):
        value = getattr(Limits(), field.name)
        assert value is None or (isinstance(value, int | float) and not isinstance(value, bool)), field.name
        if value is not None:
            assert value > 0, field.name
