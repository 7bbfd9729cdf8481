"""The elicitation results are small frozen values: built by keyword or position, compared by value, matched
by position."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from minimcp import Accepted, Cancelled, Declined, UrlElicitation


def describe(answer: Accepted[Any] | Declined | Cancelled) -> str:
    match answer:
        case Accepted(value):
            return f"accepted {value!r}"
        case Declined():
            return "declined"
        case Cancelled(reason):
            return f"cancelled ({reason})"
    raise AssertionError(answer)


def test_answers_match_by_position() -> None:
    assert describe(Accepted({"n": 2})) == "accepted {'n': 2}"
    assert describe(Declined()) == "declined"
    assert describe(Cancelled()) == "cancelled (user)"
    assert describe(Cancelled("timeout")) == "cancelled (timeout)"


def test_answers_compare_hash_and_print_by_value() -> None:
    assert Accepted(3) == Accepted(value=3) != Accepted(4)
    assert Declined() == Declined()
    assert Declined() != Cancelled()  # type: ignore[comparison-overlap]
    assert Cancelled() == Cancelled("user") != Cancelled("timeout")
    assert hash(Accepted(3)) == hash(Accepted(3)) and hash(Cancelled()) == hash(Cancelled(reason="user"))
    assert repr(Accepted(3)) == "Accepted(value=3)" and repr(Declined()) == "Declined()"
    assert repr(Cancelled("timeout")) == "Cancelled(reason='timeout')"
    step = UrlElicitation("Sign in", "https://example.com/a", "e1")
    assert step == UrlElicitation(message="Sign in", url="https://example.com/a", elicitation_id="e1")
    wire = {"mode": "url", "elicitationId": "e1", "url": "https://example.com/a", "message": "Sign in"}
    assert step.to_wire() == wire
    for value in (Accepted([1]), Declined(), Cancelled("timeout"), step):
        assert pickle.loads(pickle.dumps(value)) == value


def test_answers_are_frozen() -> None:
    accepted, cancelled = Accepted(3), Cancelled()
    with pytest.raises(AttributeError):
        accepted.value = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        cancelled.reason = "timeout"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        accepted.extra = 1  # type: ignore[attr-defined]
    assert (accepted.value, cancelled.reason) == (3, "user")


def test_accepted_is_generic() -> None:
    alias = Accepted[int]
    assert alias(5) == Accepted(5)
