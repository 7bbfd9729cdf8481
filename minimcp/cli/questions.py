"""The question flow of the command-line client: a server's form and URL questions, asked or answered from flags.

:class:`Questions` is the client's ``elicitation_handler`` and ``url_handler``. With a
terminal (a :class:`~minimcp.cli.terminal.LineReader`) the person is asked field by field:
what they type is read into the field's kind (:func:`parse_field_answer`), checked with
the form's own rules, and asked again when it does not fit. Without one, ``--answers``,
``--accept-defaults`` and ``--accept-urls`` (:class:`Scripted`) answer, or the question
is declined with a note on stderr: nothing waits for a person who is not there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import textwrap
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, Final

import anyio

from minimcp.cli.terminal import Console, LineReader, Style
from minimcp.client.answers import ElicitationRequest, UrlElicitationRequest, open_in_browser
from minimcp.forms import NO_DEFAULT, FormField, FormValidationError
from minimcp.forms.check import check_value
from minimcp.wire.elicitation import Accepted, Cancelled, Declined
from minimcp.wire.errors import MinimcpError

__all__ = [
    "CANCEL_KEYS",
    "DECLINE_KEYS",
    "OMIT",
    "Answer",
    "AnswerError",
    "Questions",
    "Scripted",
    "describe_url",
    "parse_field_answer",
]

Answer = Accepted[Any] | Declined | Cancelled

DECLINE_KEYS: Final = ("!d", "!decline")
CANCEL_KEYS: Final = ("!c", "!cancel")

#: Seconds a result waits for a withdrawn question's closing note before it is shown.
SETTLE_WAIT = 1.0
_WRAP = 100  # columns of a question's message and its form summary


# --- form answers --------------------------------------------------------------------------------------------


class AnswerError(MinimcpError, ValueError):
    """A typed answer that cannot be a value of its field (the message says why)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Omit:
    """Leave an optional field out of the answer."""


OMIT: Final = _Omit()

_TRUE = frozenset({"y", "yes", "true", "t", "1", "on"})
_FALSE = frozenset({"n", "no", "false", "f", "0", "off"})


def _default_of(field: FormField) -> Any:
    return None if field.default is NO_DEFAULT else field.default


def _option(field: FormField, token: str) -> str:
    """The option value a typed token names: its number, its value, or its title (case-insensitive)."""
    values = [v for v, _ in field.options]
    if token.isdigit() and 1 <= int(token) <= len(values):
        return values[int(token) - 1]
    if token in values:
        return token
    folded = [(v, t.casefold()) for v, t in field.options]
    for value, title in folded:
        if title == token.casefold() or value.casefold() == token.casefold():
            return value
    raise AnswerError(f"{token!r} is not one of the options: type a number from 1 to {len(values)}")


def parse_field_answer(field: FormField, raw: str) -> Any:
    """Turn what the person typed into the field's value.

    An empty line takes the default (or, for an optional field without one, leaves
    it out: :data:`OMIT`). Raises :class:`AnswerError` for text that is not a value
    of the field's kind; the form's own checks (bounds, formats) come after.
    """
    text = raw.strip()
    if not text:
        if field.default is not NO_DEFAULT:
            default = field.default
            return list(default) if isinstance(default, list) else default
        if not field.required:
            return OMIT
        raise AnswerError("an answer is required")
    kind = field.kind
    if kind == "boolean":
        word = text.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise AnswerError("answer y (yes) or n (no)")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise AnswerError("expected a whole number") from None
    if kind == "number":
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            raise AnswerError("expected a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise AnswerError("expected a finite number")
        return number
    if kind == "select":
        return _option(field, text)
    if kind == "multiselect":
        if text == "-":
            return []
        picked: list[str] = []
        for token in re.split(r"[,\s]+", text):
            if token:
                value = _option(field, token)
                if value not in picked:
                    picked.append(value)
        return picked
    return raw if raw.strip() == raw else text


def _kind_hint(field: FormField) -> str:
    parts: list[str] = []
    if field.kind == "boolean":
        parts.append("yes/no")
    elif field.kind == "integer":
        parts.append("whole number")
    elif field.kind == "number":
        parts.append("number")
    elif field.kind == "select":
        parts.append("choose one")
    elif field.kind == "multiselect":
        parts.append("choose any")
    elif field.format:
        parts.append(field.format)
    else:
        parts.append("text")
    lo: float | None = None
    hi: float | None = None
    unit = ""
    if field.kind in ("integer", "number"):
        lo, hi = field.minimum, field.maximum
    elif field.kind == "string":
        lo, hi, unit = field.min_length, field.max_length, " characters"
    elif field.kind == "multiselect":
        lo, hi, unit = field.min_items, field.max_items, " choices"
    if lo is not None and hi is not None:
        parts.append(f"{lo:g}..{hi:g}{unit}")
    elif lo is not None:
        parts.append(f"at least {lo:g}{unit}")
    elif hi is not None:
        parts.append(f"at most {hi:g}{unit}")
    parts.append("required" if field.required else "optional")
    return ", ".join(parts)


def _label(field: FormField) -> str:
    return field.title or field.description or field.name


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- questions -----------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Scripted:
    """How questions are answered without asking (``--answers``, ``--accept-defaults``, ``--accept-urls``).

    ``answers``: one object of field values for every question, or a list of them, one
    per question in the order they are asked.
    """

    answers: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    accept_defaults: bool = False
    accept_urls: bool = False
    #: Questions answered from the flags so far.
    asked: int = 0

    @property
    def answers_forms(self) -> bool:
        return self.answers is not None or self.accept_defaults

    def next_answers(self) -> Mapping[str, Any] | None:
        """The field values for the next question (``None``: the list has run out)."""
        self.asked += 1
        answers = self.answers
        if answers is None or isinstance(answers, Mapping):
            return answers if answers is not None else {}
        return answers[self.asked - 1] if self.asked <= len(answers) else None


class Questions:
    """The elicitation and URL-consent handlers of the command-line client.

    With a :class:`LineReader` (stdin is a terminal) the person is asked; otherwise,
    or for what ``scripted`` covers, questions are answered from the flags, or
    declined with a note on stderr. Never blocks without a terminal.
    """

    def __init__(self, console: Console, reader: LineReader | None, scripted: Scripted | None = None) -> None:
        self.console = console
        self.reader = reader
        self.scripted = scripted or Scripted()
        self._lock: anyio.Lock | None = None
        self._active = 0
        self._idle: anyio.Event | None = None
        #: The server whose question is on screen waiting for the person, if any.
        self.asking: str | None = None
        #: Why the flags could not answer a question (it was cancelled; the run ends with status 2).
        self.failures: list[str] = []

    @contextlib.asynccontextmanager
    async def _asking(self) -> AsyncIterator[None]:
        """One question at a time; counted, so results can wait for a withdrawn question's note."""
        if self._lock is None:
            self._lock = anyio.Lock()
        self._active += 1
        try:
            async with self._lock:
                yield
        finally:
            self._active -= 1
            if self._active == 0 and self._idle is not None:
                self._idle.set()
                self._idle = None

    async def settled(self, timeout: float = SETTLE_WAIT) -> None:
        """Wait (briefly) until no question is being asked or wound down."""
        if self._active:
            if self._idle is None:
                self._idle = anyio.Event()
            with anyio.move_on_after(timeout):
                await self._idle.wait()

    @property
    def interactive(self) -> bool:
        return self.reader is not None

    async def _in_person(self, server: str, what: str, asking: Awaitable[Answer]) -> Answer:
        """Await the person's answer to ``server``'s ``what``; if the server withdraws it first, say so."""
        self.asking = server
        try:
            return await asking
        except anyio.get_cancelled_exc_class():
            if not self.console.interrupted:
                self.console.show(self.console.ui_style.yellow(f"  (the {what} was closed before you answered)"))
            raise
        finally:
            self.asking = None

    # -- form mode ----------------------------------------------------------------

    async def elicit(self, question: ElicitationRequest) -> Answer:
        """The ``elicitation_handler``: answer a form question."""
        async with self._asking():
            if self.scripted.answers_forms:
                return self._answer_from_flags(question)
            if self.reader is None:
                self._note_question(question)
                self.console.note(
                    "  declined: stdin is not a terminal, so nobody can answer "
                    "(answer with --answers '{\"field\": value}' or --accept-defaults)"
                )
                return Declined()
            return await self._in_person(question.server_name, "question", self._ask_form(question, self.reader))

    def _note_question(self, question: ElicitationRequest) -> None:
        style = self.console.err_style
        self.console.note(style.bold(f"? {question.server_name} asks: ") + question.message)
        for field in question.form.fields:
            default = "" if field.default is NO_DEFAULT else f", default {_json(field.default)}"
            self.console.note(style.dim(f"  - {field.name} ({_kind_hint(field)}{default}): {_label(field)}"))
            if field.options:  # the values --answers takes, as JSON
                shown = [_json(value) + ("" if title == value else f" ({title})") for value, title in field.options]
                self.console.note(style.dim(f"      options: {', '.join(shown)}"))

    def _answer_from_flags(self, question: ElicitationRequest) -> Answer:
        self._note_question(question)
        fields = [f.name for f in question.form.fields]
        answers = self.scripted.next_answers()
        if answers is None:
            count = self.scripted.asked - 1
            return self._refuse(question, (
                f"--answers lists {count} object{'s' if count != 1 else ''}, one per question, and this is question "
                f"{count + 1}"
            ))  # fmt: skip
        unknown = [key for key in answers if key not in fields]
        if unknown:
            names = ", ".join(map(repr, unknown))
            return self._refuse(question, (
                f"--answers names {names}, {'which is not a field' if len(unknown) == 1 else 'which are not fields'} "
                f"of this form; its fields: {', '.join(fields)}"
            ))  # fmt: skip
        content = question.form.fill_defaults(dict(answers))
        try:
            content = question.form.validate(content)
        except FormValidationError as exc:
            flags = "--answers" if self.scripted.answers is not None else "--accept-defaults"
            return self._refuse(question, f"the form refuses what {flags} gives: {exc}")
        self.console.note(f"  answered: {_json(content)}")
        return Accepted(content)

    def _refuse(self, question: ElicitationRequest, why: str) -> Cancelled:
        """The flags cannot answer: say why, cancel the question (never guess), and fail the run."""
        self.console.note(self.console.err_style.red(f"  error: {why}; the question is cancelled"))
        self.failures.append(why)
        return Cancelled()

    async def _ask_form(self, question: ElicitationRequest, reader: LineReader) -> Answer:
        console, style = self.console, self.console.ui_style
        console.show("")
        console.show(style.bold(style.cyan(f"? {question.server_name} asks:")))
        for line in question.message.splitlines() or [""]:
            console.show("  " + "\n  ".join(textwrap.wrap(line, _WRAP) or [""]))
        fields = question.form.fields
        summary = "Form: " + "; ".join(f"{_label(f)} ({_kind_hint(f)})" for f in fields)
        console.show(style.dim(textwrap.fill(summary, _WRAP, initial_indent="  ", subsequent_indent="    ")))
        while True:
            choice = await reader.read("  [a]nswer, [d]ecline or [c]ancel? (enter = answer) ")
            if choice is None:
                return self._cancelled()
            word = choice.strip().lower()
            if word in ("", "a", "answer", "y", "yes"):
                break
            if word in ("d", "decline", "n", "no"):
                return self._declined()
            if word in ("c", "cancel"):
                return self._cancelled()
            console.show(style.yellow("  type a, d or c"))
        console.show(style.dim("  (enter keeps the default; !d declines, !c cancels at any prompt)"))
        content: dict[str, Any] = {}
        pending = list(fields)
        while True:
            for field in pending:
                value = await self._ask_field(field, reader)
                if isinstance(value, (Declined, Cancelled)):
                    return value
                if value is OMIT:
                    content.pop(field.name, None)
                else:
                    content[field.name] = value
            ordered = {f.name: content[f.name] for f in fields if f.name in content}
            try:
                final = question.form.validate(question.form.fill_defaults(ordered))
            except FormValidationError as exc:
                console.show(style.red(f"  ! {exc}"))
                again = [f for f in fields if f.name == exc.field]
                pending = again or list(fields)
                continue
            console.show(style.dim(f"  sending: {_json(final)}"))
            return Accepted(final)

    def _declined(self) -> Declined:
        self.console.show(self.console.ui_style.yellow("  declined"))
        return Declined()

    def _cancelled(self) -> Cancelled:
        self.console.show(self.console.ui_style.yellow("  cancelled"))
        return Cancelled()

    async def _ask_field(self, field: FormField, reader: LineReader) -> Any:
        console, style = self.console, self.console.ui_style
        label = _label(field)
        if field.title and field.description and field.description != field.title:
            console.show(style.dim(f"  {field.description}"))
        default = _default_of(field)
        prefill: str | None = None
        if field.kind in ("select", "multiselect"):
            chosen = default if isinstance(default, list) else [default]
            console.show(f"  {label} ({_kind_hint(field)}):")
            for i, (value, title) in enumerate(field.options, 1):
                mark = ("[x] " if value in chosen else "[ ] ") if field.kind == "multiselect" else ""
                star = " *" if field.kind == "select" and value == default else ""
                shown = title if title == value else f"{title} ({value})"
                console.show(f"    {i}) {mark}{shown}{star}")
            if field.kind == "select":
                position = next((i for i, (v, _) in enumerate(field.options, 1) if v == default), None)
                hint = f"number [{position}]" if position is not None else "number"
            else:
                keep = ",".join(str(i) for i, (v, _) in enumerate(field.options, 1) if v in chosen)
                hint = f"numbers, comma-separated, - for none [{keep}]" if keep else "numbers, comma-separated"
            prompt = f"  {hint}: "
        elif field.kind == "boolean":
            hint = "Y/n" if default is True else "y/N" if default is False else "y/n"
            prompt = f"  {label} [{hint}]: "
        else:
            extra = f" ({_kind_hint(field)})"
            if default is not None and reader.can_prefill:
                prefill = str(default)
                prompt = f"  {label}{extra}: "
            elif default is not None:
                prompt = f"  {label}{extra} [{default}]: "
            else:
                prompt = f"  {label}{extra}: "
        while True:
            raw = await reader.read(prompt, prefill=prefill)
            if raw is None:
                return self._cancelled()
            key = raw.strip().lower()
            if key in DECLINE_KEYS:
                return self._declined()
            if key in CANCEL_KEYS:
                return self._cancelled()
            try:
                value = parse_field_answer(field, raw)
                if value is OMIT:
                    return OMIT
                return check_value(field, value)  # the form's own rules (bounds, formats)
            except (AnswerError, FormValidationError) as exc:
                message = str(exc)
                if isinstance(exc, FormValidationError):
                    message = message.removeprefix(f"field {field.name!r}: ")
                console.show(style.red(f"  ! {label}: {message}"))
                prefill = None if prefill is None else raw

    # -- URL mode -----------------------------------------------------------------

    async def consent(self, request: UrlElicitationRequest) -> Answer:
        """The ``url_handler``: show the URL, warn, and open it only with consent."""
        async with self._asking():
            if self.reader is None or self.scripted.accept_urls:
                for line in describe_url(request, self.console.err_style):
                    self.console.note(line)
                if self.scripted.accept_urls:
                    self.console.note("  consent given (--accept-urls); no browser is opened: open the URL yourself")
                    return Accepted(None)
                self.console.note("  declined: stdin is not a terminal (consent without asking with --accept-urls)")
                return Declined()
            return await self._in_person(request.server_name, "request", self._ask_consent(request, self.reader))

    async def _ask_consent(self, request: UrlElicitationRequest, reader: LineReader) -> Answer:
        console, style = self.console, self.console.ui_style
        console.show("")
        for line in describe_url(request, style):
            console.show(line)
        while True:
            choice = await reader.read("  Open it in your browser? [y]es, [n]o (decline), [c]ancel: ")
            if choice is None:
                return self._cancelled()
            word = choice.strip().lower()
            if word in ("y", "yes", "o", "open"):
                opened = await open_in_browser(request.url)
                if opened:
                    console.show(style.green("  opened in your browser; finish there, then come back"))
                else:
                    console.show(style.yellow("  could not start a browser: open the URL above yourself"))
                return Accepted(None)
            if word in ("n", "no", "d", "decline"):
                return self._declined()
            if word in ("c", "cancel"):
                return self._cancelled()
            console.show(style.yellow("  type y, n or c"))


def _host_span(url: str, host: str) -> tuple[int, int] | None:
    """Where the host sits in ``url`` (searched in the authority part only)."""
    if not host:
        return None
    scheme_end = url.find("//")
    start = scheme_end + 2 if scheme_end >= 0 else 0
    authority_end = len(url)
    for sep in "/?#":
        pos = url.find(sep, start)
        if pos != -1:
            authority_end = min(authority_end, pos)
    authority = url[start:authority_end]
    at = authority.rfind("@")
    offset = start + at + 1 if at >= 0 else start
    index = url.lower().find(host.lower(), offset, authority_end)
    return (index, index + len(host)) if index >= 0 else None


def describe_url(request: UrlElicitationRequest, style: Style) -> list[str]:
    """The lines shown before asking consent: the full URL with its host highlighted, and warnings."""
    info = request.info
    warn = style.glyph("⚠", "!")
    lines = [style.bold(style.cyan(f"? {request.server_name} asks you to open a page in your browser:"))]
    lines += ["  " + line for line in request.message.splitlines() or [""]]
    span = _host_span(request.url, info.ascii_host) or _host_span(request.url, info.host)
    if span is not None and style.enabled:
        url_text = request.url[: span[0]] + style.highlight(request.url[span[0] : span[1]]) + request.url[span[1] :]
        lines.append(f"  URL:  {url_text}")
    else:
        lines.append(f"  URL:  {request.url}")
        if span is not None:
            lines.append("        " + " " * span[0] + "^" * (span[1] - span[0]) + " host")
    host_line = f"  host: {style.highlight(info.host) if style.enabled else info.host}"
    if info.ascii_host and info.ascii_host != info.host:
        host_line += f"  (sent as {info.ascii_host})"
    lines.append(host_line)
    if info.punycode:
        lines.append(style.red(
            f"  {warn} WARNING: the host name is punycode (xn--...); decoded it reads {info.host!r}, "
            "which may imitate another site's name"
        ))  # fmt: skip
    if info.mixed_scripts:
        lines.append(style.red(
            f"  {warn} WARNING: the host name mixes alphabets (for example Latin and Cyrillic letters): "
            "a look-alike trick; check it letter by letter"
        ))  # fmt: skip
    if not info.https:
        scheme = urllib.parse.urlsplit(request.url).scheme or "?"
        lines.append(style.yellow(f"  {warn} not https ({scheme}): the page is not encrypted"))
    return lines
