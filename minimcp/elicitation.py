"""The three answers to a question, shared by the server and client sides.

A tool author gets one of these from ``await ctx.elicit(...)``; a client's
elicitation handler returns one. Decline and cancel are answers, not errors::

    match await ctx.elicit("Try another date?", Alternative):
        case Accepted(value):
            ...
        case Declined():
            ...
        case Cancelled(reason):
            ...
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, Literal, TypeAlias, TypeVar

__all__ = [
    "Accepted",
    "Answer",
    "Cancelled",
    "Declined",
    "ElicitationUnsupported",
]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Accepted(Generic[T]):
    """The person submitted the form (``value`` is validated and typed).

    In URL mode, accepted means only that the person agreed to open the page,
    not that they finished what it asks; ``value`` is then ``None``.
    """

    value: T


@dataclasses.dataclass(frozen=True, slots=True)
class Declined:
    """The person explicitly said no."""


@dataclasses.dataclass(frozen=True, slots=True)
class Cancelled:
    """No choice was made.

    ``reason`` is ``"user"`` (the person dismissed the question), ``"timeout"``
    (nobody answered in time; the client was told to close the question), or
    free text from the side that cancelled.
    """

    reason: str = "user"


Answer: TypeAlias = "Accepted[T] | Declined | Cancelled"
Action: TypeAlias = Literal["accept", "decline", "cancel"]


def action_of(answer: Accepted[Any] | Declined | Cancelled) -> Action:
    """The wire ``action`` of an answer."""
    if isinstance(answer, Accepted):
        return "accept"
    return "decline" if isinstance(answer, Declined) else "cancel"


class ElicitationUnsupported(Exception):
    """The client cannot be asked this way (capability or revision missing).

    Raised by ``ctx.elicit`` / ``ctx.elicit_url`` before anything is sent.
    Uncaught in a tool, the call ends with a tool error result carrying this
    message.
    """
