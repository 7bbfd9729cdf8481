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

The answers and :class:`UrlElicitation` are frozen :class:`msgspec.Struct` values (cheap
to define at import, unlike dataclasses): compared and hashed by value, matched by position.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeAlias, TypeVar

import msgspec

from minimcp.wire import errors

__all__ = [
    "Accepted",
    "Answer",
    "Cancelled",
    "Declined",
    "ElicitationUnsupported",
    "QuestionFailed",
    "UrlElicitation",
    "UrlElicitationRequired",
]

T = TypeVar("T")


class Accepted(msgspec.Struct, Generic[T], frozen=True):
    """The person submitted the form (``value`` is validated and typed).

    In URL mode, accepted means only that the person agreed to open the page,
    not that they finished what it asks; ``value`` is then ``None``.
    """

    value: T


class Declined(msgspec.Struct, frozen=True):
    """The person explicitly said no."""


class Cancelled(msgspec.Struct, frozen=True):
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


class ElicitationUnsupported(errors.MinimcpError):
    """The client cannot be asked this way (capability or revision missing).

    Raised by ``ctx.elicit`` / ``ctx.elicit_url`` (and ``ctx.sample``,
    ``ctx.list_roots``) before anything is sent. Uncaught in a tool, the call
    ends with a tool error result carrying this message -- or, on the modern
    revision, with error ``-32021`` listing ``required`` capabilities.
    """

    def __init__(self, message: str, *, required: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        #: The capabilities that would have allowed it (``data.requiredCapabilities``).
        self.required = required


class QuestionFailed(errors.McpError):
    """The client answered a question (``elicitation/create``, ``sampling/createMessage``,
    ``roots/list``) with a JSON-RPC error instead of a result.

    It keeps the client's ``code``, ``message`` and ``data``. Uncaught in a tool, the call
    ends with a tool error result saying the client could not answer (with the client's
    message shortened), not with the client's error as the ``tools/call`` error.
    """

    #: Characters of the client's message kept in the tool error's text.
    SHOWN = 200

    def __init__(self, method: str, error: errors.McpError) -> None:
        super().__init__(error.code, error.message, error.data)
        self.method = method

    def describe(self) -> str:
        """One line for the tool error: what failed, and the client's message shortened."""
        text = " ".join(self.message.split())
        if len(text) > self.SHOWN:
            text = text[: self.SHOWN - 1].rstrip() + "\u2026"
        what = "the question" if self.method == "elicitation/create" else f"the server's {self.method} request"
        return f"the client could not answer {what} (error {self.code}: {text or 'no message'})"


class UrlElicitation(msgspec.Struct, frozen=True):
    """One URL-mode step: open ``url`` in a browser (after consent) to do what ``message`` says."""

    message: str
    url: str
    elicitation_id: str

    def to_wire(self) -> dict[str, str]:
        return {"mode": "url", "elicitationId": self.elicitation_id, "url": self.url, "message": self.message}


class UrlElicitationRequired(errors.McpError):
    """The request cannot go on until the person completes these URL steps (``-32042``).

    A server tool raises it (build the entries with ``ctx.url_elicitation``); a
    client receives it from ``call_tool`` with :attr:`elicitations` parsed.
    """

    def __init__(self, elicitations: list[UrlElicitation], message: str | None = None) -> None:
        text = message or (
            "this request needs the person to complete "
            + ("a step" if len(elicitations) == 1 else f"{len(elicitations)} steps")
            + " in their browser first"
        )
        super().__init__(errors.URL_ELICITATION_REQUIRED, text, {"elicitations": [e.to_wire() for e in elicitations]})
        self.elicitations = elicitations

    @classmethod
    def from_error(cls, error: errors.McpError) -> UrlElicitationRequired:
        """Parse a ``-32042`` error from the wire (entries that are not URL mode are skipped)."""
        items: list[UrlElicitation] = []
        data = error.data
        raw = data.get("elicitations") if isinstance(data, dict) else None
        for item in raw if isinstance(raw, list) else []:
            if (
                isinstance(item, dict)
                and item.get("mode") == "url"
                and isinstance(item.get("url"), str)
                and isinstance(item.get("elicitationId"), str)
            ):
                items.append(UrlElicitation(str(item.get("message", "")), item["url"], item["elicitationId"]))
        return cls(items, error.message)
