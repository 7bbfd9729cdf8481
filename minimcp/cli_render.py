"""Terminal side of the command-line client: questions, consent, progress, logs, the wire trace.

Only the standard library touches the terminal. Streams have fixed roles: results go
to stdout; logs, progress, notes and the trace go to stderr; questions go to the
terminal the person types on (stdout when stdin and stdout are both terminals,
else stderr).

Lines are read on a daemon thread (``input()`` with readline on a terminal, so
defaults can be prefilled and edited; plain ``os.read`` otherwise) and awaited
through :func:`anyio.to_thread.run_sync`. A question the server withdraws is
abandoned without leaving a worker thread blocked, so the program can always exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import textwrap
import threading
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import Any, Final, TextIO

import anyio
import msgspec

from minimcp import forms
from minimcp.client import ElicitationRequest, UrlElicitationRequest, open_in_browser
from minimcp.elicitation import Accepted, Cancelled, Declined
from minimcp.errors import MinimcpError
from minimcp.forms import NO_DEFAULT, FormField, FormValidationError
from minimcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageParams,
    ProgressParams,
    ResourceLink,
    TextContent,
    Tool,
    UnsetType,
)

__all__ = [
    "Answer",
    "Console",
    "LineReader",
    "Progress",
    "Questions",
    "Style",
    "describe_tool",
    "format_progress",
    "format_result",
    "format_trace",
    "parse_field_answer",
]

Answer = Accepted[Any] | Declined | Cancelled

DECLINE_KEYS: Final = ("!d", "!decline")
CANCEL_KEYS: Final = ("!c", "!cancel")


# --- styling -------------------------------------------------------------------------------------------------


class Style:
    """ANSI styling for one stream; plain text when the stream is not a colour terminal."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.enabled = enabled
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "→←✓⚠·".encode(encoding)
            self.unicode = True
        except (UnicodeError, LookupError):
            self.unicode = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)

    def highlight(self, text: str) -> str:
        return self._wrap("1;4;33", text)

    def glyph(self, fancy: str, plain: str) -> str:
        return fancy if self.unicode else plain


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Console:
    """The three output streams, with one progress line on stderr that other output first settles."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, color: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        interactive_out = _isatty(sys.stdin) and _isatty(self.out)
        #: Where questions are shown: the terminal the person types on.
        self.ui = self.out if interactive_out else self.err
        self.out_style = Style(self.out, enabled=None if color is None else color and _isatty(self.out))
        self.err_style = Style(self.err, enabled=None if color is None else color and _isatty(self.err))
        self.ui_style = self.out_style if self.ui is self.out else self.err_style
        self.err_tty = _isatty(self.err)
        self._progress_width = 0  # characters of an unfinished progress line on stderr
        #: A prompt is shown and its line not yet typed: other output first moves to a new line.
        self.prompt_open = False
        #: Ctrl-C was pressed: the run is ending, and says so in one line; nothing else is shown.
        self.interrupted = False

    def settle(self) -> None:
        """End an unfinished progress line or prompt, so the next output starts on a fresh line."""
        if self.prompt_open:
            self.prompt_open = False
            try:
                self.ui.write("\n")
                self.ui.flush()
            except (BrokenPipeError, ValueError):
                pass
        if self._progress_width:
            self._progress_width = 0
            self.err.write("\n")
            self.err.flush()

    def _write(self, stream: TextIO, text: str) -> None:
        self.settle()
        try:
            stream.write(text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def result(self, text: str) -> None:
        """A result, on stdout."""
        self._write(self.out, text)

    def show(self, text: str) -> None:
        """Part of a question, where the person reads questions."""
        self._write(self.ui, text)

    def note(self, text: str) -> None:
        """A note, a log line or a trace line, on stderr."""
        self._write(self.err, text)

    def progress_line(self, text: str) -> None:
        """Draw (on a terminal: redraw in place) the progress line."""
        if not self.err_tty:
            self._write(self.err, text)
            return
        pad = max(0, self._progress_width - len(text))
        try:
            self.err.write("\r" + text + " " * pad + ("\b" * pad))
            self.err.flush()
        except (BrokenPipeError, ValueError):
            return
        self._progress_width = max(1, len(text))


# --- reading lines -------------------------------------------------------------------------------------------


class LineReader:
    """Reads answer lines from stdin on a daemon thread; awaited without blocking the event loop.

    On a terminal (stdin and stdout both TTYs) ``input()`` is used, with readline when
    it is available: the line is editable, and a default can be prefilled. Otherwise the
    prompt is written to ``prompt_stream`` and bytes are read from file descriptor 0.

    A read the caller stops waiting for (the server withdrew the question) stays open;
    the next read shows its own prompt and takes the line typed next. ``None`` means
    end of input: ctrl-D on a terminal ends that one read only (it cancels one question,
    and the next read waits for the person again); a closed pipe ends every read.
    """

    def __init__(
        self, prompt_stream: TextIO | None = None, *, use_input: bool | None = None, console: Console | None = None
    ) -> None:
        self.prompt_stream = prompt_stream or sys.stdout
        self.console = console
        if use_input is None:
            use_input = _isatty(sys.stdin) and _isatty(sys.stdout)
        self.use_input = use_input
        self.readline: ModuleType | None = None
        if use_input:
            try:
                import readline

                self.readline = readline
            except ImportError:  # pragma: no cover - Python built without readline
                self.readline = None
        self._cond = threading.Condition()
        self._busy = False  # the daemon thread is reading a line
        self._ready = False  # a line (or EOF) is waiting to be taken
        self._line: str | None = None
        self._buffer = b""
        self._eof = False  # the input is over for good (not a terminal: ctrl-D there ends one read)
        self._terminal = _isatty(sys.stdin)
        self._lock: anyio.Lock | None = None

    @property
    def can_prefill(self) -> bool:
        return self.readline is not None

    async def read(self, prompt: str, *, prefill: str | None = None, history: bool = False) -> str | None:
        """Show ``prompt`` and return the next line (without its newline), or ``None`` at end of input.

        ``history``: keep the line in readline's history (commands, not answers to questions).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            console = self.console
            if console is not None:
                console.settle()
            with self._cond:
                if self._eof:
                    return None
                if self._busy:
                    # An abandoned read is still waiting for a line: reuse it.
                    self._write_prompt(prompt)
                else:
                    self._busy, self._ready, self._line = True, False, None
                    thread = threading.Thread(
                        target=self._run, args=(prompt, prefill, history), name="minimcp-cli-input", daemon=True
                    )
                    thread.start()
            abandoned = threading.Event()

            def wait() -> str | None:
                with self._cond:
                    while not self._ready and not abandoned.is_set():
                        self._cond.wait()
                    if not self._ready:
                        return None
                    self._ready = False
                    return self._line

            if console is not None:
                console.prompt_open = True
            try:
                line = await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
            except BaseException:
                # Stop waiting; the line typed next goes to the next read. The prompt stays on screen.
                with self._cond:
                    abandoned.set()
                    self._cond.notify_all()
                raise
            if console is not None:
                console.prompt_open = line is None  # ctrl-D leaves the cursor after the prompt
            return line

    def _write_prompt(self, prompt: str) -> None:
        try:
            self.prompt_stream.write(prompt)
            self.prompt_stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _run(self, prompt: str, prefill: str | None, history: bool) -> None:
        try:
            line = self._read_input(prompt, prefill, history) if self.use_input else self._read_fd(prompt)
        except Exception:
            line = None
        with self._cond:
            self._busy = False
            self._ready = True
            self._line = line
            if line is None and not self._terminal:
                self._eof = True
            self._cond.notify_all()

    def _read_input(self, prompt: str, prefill: str | None, history: bool) -> str | None:
        rl = self.readline
        if rl is not None and prefill:
            rl.set_startup_hook(lambda: rl.insert_text(prefill))
        try:
            line = input(prompt)
        except EOFError:
            return None
        else:
            if rl is not None and line.strip() and not history:
                with contextlib.suppress(Exception):  # an answer, not a command: keep it out of the history
                    rl.remove_history_item(rl.get_current_history_length() - 1)
            return line
        finally:
            if rl is not None and prefill:
                rl.set_startup_hook(None)

    def _read_fd(self, prompt: str) -> str | None:
        self._write_prompt(prompt)
        while b"\n" not in self._buffer:
            chunk = os.read(0, 4096)
            if not chunk:
                rest, self._buffer = self._buffer, b""
                return rest.decode(errors="replace").rstrip("\r") if rest else None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").rstrip("\r")


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


def check_field(field: FormField, value: Any) -> Any:
    """Check one value with the form's own rules (forms.Form.validate); return it normalized."""
    single: forms.Form[dict[str, Any]] = forms.Form((field,), dict, schema={})
    return single.validate({field.name: value})[field.name]


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

    async def settled(self, timeout: float = 1.0) -> None:
        """Wait (briefly) until no question is being asked or wound down."""
        if self._active:
            if self._idle is None:
                self._idle = anyio.Event()
            with anyio.move_on_after(timeout):
                await self._idle.wait()

    @property
    def interactive(self) -> bool:
        return self.reader is not None

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
            self.asking = question.server_name
            try:
                return await self._ask_form(question, self.reader)
            except anyio.get_cancelled_exc_class():
                if not self.console.interrupted:
                    self.console.show(self.console.ui_style.yellow("  (the question was closed before you answered)"))
                raise
            finally:
                self.asking = None

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
            console.show("  " + "\n  ".join(textwrap.wrap(line, 100) or [""]))
        fields = question.form.fields
        summary = "Form: " + "; ".join(f"{_label(f)} ({_kind_hint(f)})" for f in fields)
        console.show(style.dim(textwrap.fill(summary, 100, initial_indent="  ", subsequent_indent="    ")))
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
                return check_field(field, value)
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
            self.asking = request.server_name
            try:
                return await self._ask_consent(request, self.reader)
            except anyio.get_cancelled_exc_class():
                if not self.console.interrupted:
                    self.console.show(self.console.ui_style.yellow("  (the request was closed before you answered)"))
                raise
            finally:
                self.asking = None

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


# --- progress, logs, trace -----------------------------------------------------------------------------------


def format_progress(params: ProgressParams, *, width: int = 20) -> str:
    """``[#####.....] 50% message`` (or ``[...] 3 message`` without a total)."""
    message = "" if isinstance(params.message, UnsetType) else f" {params.message}"
    total = None if isinstance(params.total, UnsetType) else params.total
    if total is not None and total > 0:
        fraction = min(1.0, max(0.0, params.progress / total))
        filled = round(fraction * width)
        return f"[{'#' * filled}{'.' * (width - filled)}] {round(fraction * 100):3d}%{message}"
    return f"[{'.' * width}] {params.progress:g}{message}"


class Progress:
    """Shows the progress notifications of one call on stderr."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.seen = False

    def update(self, params: ProgressParams) -> None:
        self.seen = True
        self.console.progress_line(format_progress(params))

    def finish(self) -> None:
        self.console.settle()


def format_log(params: LoggingMessageParams, style: Style) -> str:
    """One server log message, for stderr."""
    data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
    source = "" if isinstance(params.logger, UnsetType) else f" {params.logger}"
    level = params.level
    tag = f"[server {level}{source}]"
    if level in ("error", "critical", "alert", "emergency"):
        tag = style.red(tag)
    elif level == "warning":
        tag = style.yellow(tag)
    else:
        tag = style.dim(tag)
    return f"{tag} {data}"


def _summary(message: Any) -> str:
    if not isinstance(message, dict):
        return "batch" if isinstance(message, list) else "message"
    if "method" in message:
        kind = "request" if "id" in message else "notification"
        ident = f" {json.dumps(message['id'])}" if "id" in message else ""
        return f"{kind}{ident} {message['method']}"
    if "error" in message:
        return f"error response {json.dumps(message.get('id'))}"
    return f"response {json.dumps(message.get('id'))}"


def format_trace(direction: str, data: bytes, style: Style, *, pretty: bool = False) -> str:
    """One wire message: an arrow (``→`` we send, ``←`` we receive) and its JSON."""
    sending = direction == "send"
    arrow = style.glyph("→", "->") if sending else style.glyph("←", "<-")
    arrow = style.cyan(arrow) if sending else style.magenta(arrow)
    try:
        decoded = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return f"{arrow} {style.red('(not JSON)')} {data[:2000]!r}"
    if pretty:
        body = msgspec.json.format(data, indent=2).decode(errors="replace")
        return f"{arrow} {style.bold(_summary(decoded))}\n" + textwrap.indent(body, "    ")
    return f"{arrow} {data.decode(errors='replace')}"


# --- tools and results ---------------------------------------------------------------------------------------


def _schema_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_schema_type(s) for s in schema[key])
    if isinstance(schema.get("$ref"), str):
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    text = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
    if text == "array" and isinstance(schema.get("items"), dict):
        text = f"{_schema_type(schema['items'])}[]"
    if isinstance(schema.get("format"), str):
        text += f"<{schema['format']}>"
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None or hi is not None:
        text += f"[{'' if lo is None else lo}..{'' if hi is None else hi}]"
    return text


def describe_tool(tool: Tool, *, full: bool = False) -> list[str]:
    """A tool as ``name(arg: type, opt?: type = default)`` and its description, indented."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    params: list[str] = []
    for name, prop in (props or {}).items():
        text = f"{name}{'' if name in required else '?'}: {_schema_type(prop)}"
        if isinstance(prop, dict) and "default" in prop:
            text += f" = {json.dumps(prop['default'])}"
        params.append(text)
    lines = [f"{tool.name}({', '.join(params)})"]
    title = None if isinstance(tool.title, UnsetType) else tool.title
    description = None if isinstance(tool.description, UnsetType) else tool.description
    if title:
        lines.append(f"    {title}")
    if description:
        text = description.strip()
        if not full:
            text = text.split("\n\n", 1)[0]
        lines += ["    " + line for line in text.splitlines()]
    if full:
        lines += ["    input schema:", textwrap.indent(json.dumps(tool.input_schema, indent=2), "      ")]
    return lines


def format_result(result: CallToolResult) -> str:
    """The content of a tool result as text (structured content as JSON when there is no text)."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, (ImageContent, AudioContent)):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} {block.mime_type}, about {size} bytes]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.name}: {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res.text, str):
                parts.append(res.text)
            else:
                parts.append(f"[resource {res.uri}]")
    structured = result.structured_content
    if not parts and structured is not None:
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return "\n".join(parts)


def result_json(result: CallToolResult) -> str:
    """The whole result as JSON, as it came on the wire."""
    return msgspec.json.format(msgspec.json.encode(result), indent=2).decode()


def server_banner(name: str, version: str, title: str | None, transport: str, protocol: str | None) -> str:
    shown = f"{name} {version}" + (f" ({title})" if title else "")
    return f"Connected to {shown} over {transport}, protocol {protocol or '?'}"

