"""The prose names modules that exist: no path or dotted name of a module that moved or went.

In ``README.md``, ``docs/*.md`` (but ``docs/perf-notes.md``, a historical log that keeps the names
of its day, and ``docs/internals.md``, whose names ``test_internals_doc.py`` checks more strictly)
and ``fuzz/README.md``:

* every ``minimcp/….py`` path names a file of the package, and every other ``dir/….py`` path a file
  of the repository or of the package (``server/context/ports.py`` is ``minimcp/server/context/ports.py``);
* every dotted ``minimcp.x.y`` name is a module, or an attribute of the longest module it starts
  with (``minimcp.wire.versions.Era``: the module ``minimcp.wire.versions``, its attribute ``Era``),
  unless it is one of the library's logger names (``logging.getLogger("minimcp.session")``: user
  configuration that kept the names of the flat layout, and that the README lists);
* no bare ``name.py`` names a module of the flat layout (before the package was split by layer)
  that no file of the package is called any more (``callhost.py``: now ``server/context/ports.py``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import re
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minimcp"

DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "fuzz" / "README.md", *(ROOT / "docs").glob("*.md")],
)
#: docs/internals.md is held to more by test_internals_doc (each name defined where it says).
DOCUMENTS = [d for d in DOCUMENTS if d.name not in ("perf-notes.md", "internals.md")]

#: The modules of the flat layout, by file name (``minimcp/NAME.py``, and the transports' own).
OLD_FLAT_MODULES = frozenset({
    "_activity", "_backend", "_hosting", "_reader", "adopted", "asking", "bus", "call", "callhost",
    "capabilities", "client", "client_answers", "client_headers", "client_rounds", "config", "connection",
    "context", "deadline_timer", "deadlines", "diagram", "diagram_svg", "dispatch", "elicitation",
    "era_probe", "errors", "form_cache", "form_check", "form_fields", "form_schema", "form_types", "forms",
    "framing", "handlers", "interrupt", "jsonrpc", "metrics", "modern", "mrtr", "outcome", "outgoing",
    "pending", "prompts", "redis_client", "registry", "resources", "retry_state", "rounds", "run_names",
    "run_sweep", "runs", "serve", "server", "session", "session_stats", "state", "taken_calls", "tools",
    "trace", "transports", "types", "urls", "used_states", "versions", "waiting", "websocket_serve",
    "workers",
})

PACKAGE_PATH = re.compile(r"(?<![\w/.-])minimcp/((?:\w+/)*\w+\.py)\b")
OTHER_PATH = re.compile(r"(?<![\w/.-])((?:\w+/)+\w+\.py)\b")
DOTTED = re.compile(r"(?<![\w./-])minimcp((?:\.\w+)+)")
BARE = re.compile(r"(?<![\w/.-])(\w+)\.py\b")


def logger_names() -> frozenset[str]:
    """Every ``logging.getLogger("…")`` name the library uses."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return frozenset(names)


LOGGERS = logger_names()
FILE_NAMES = frozenset(path.stem for path in PACKAGE.rglob("*.py"))


def resolve(dotted: str) -> str | None:
    """None when ``dotted`` is a module or an attribute reached from its longest module prefix; else why not."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a parent that is a module, not a package
            found = False
        if not found:
            continue
        value: Any = importlib.import_module(name)
        for i, attr in enumerate(parts[n:], n):
            if not hasattr(value, attr):
                return f"{'.'.join(parts[:i])} has no attribute {attr!r}"
            value = getattr(value, attr)
        return None
    return "no such module"


def problems(text: str) -> list[str]:
    """What in ``text`` names no existing module, file or attribute (one line each)."""
    found = []
    for match in PACKAGE_PATH.finditer(text):
        if not (PACKAGE / match.group(1)).is_file():
            found.append(f"{match.group(0)}: no such file")
    for match in OTHER_PATH.finditer(text):
        path = match.group(1)
        if path.startswith("minimcp/"):
            continue
        if not ((ROOT / path).is_file() or (PACKAGE / path).is_file()):
            found.append(f"{path}: no such file in the repository or in minimcp/")
    for match in DOTTED.finditer(text):
        name = match.group(0)
        if name in LOGGERS:
            continue
        why = resolve(name)
        if why is not None:
            found.append(f"{name}: {why}")
    for match in BARE.finditer(text):
        stem = match.group(1)
        if stem in OLD_FLAT_MODULES and stem not in FILE_NAMES:
            found.append(f"{stem}.py: a module of the flat layout that no file of the package is called now")
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_module_path_and_dotted_name_a_document_cites_exists(document: pathlib.Path) -> None:
    assert problems(document.read_text(encoding="utf-8")) == []


def test_the_checker_catches_stale_paths_and_names() -> None:
    assert problems("`minimcp/callhost.py`, `minimcp/server/mrtr/modern.py`") == [
        "minimcp/callhost.py: no such file",
        "minimcp/server/mrtr/modern.py: no such file",
    ]
    assert problems("the `transports/_hosting.py` module") == [
        "transports/_hosting.py: no such file in the repository or in minimcp/"
    ]
    assert problems("`minimcp.taken_calls.take_call`, `minimcp.server.mrtr.modern`") == [
        "minimcp.taken_calls.take_call: minimcp has no attribute 'taken_calls'",
        "minimcp.server.mrtr.modern: minimcp.server.mrtr has no attribute 'modern'",
    ]
    assert problems("`minimcp.wire.versions.NoSuchEra`") == [
        "minimcp.wire.versions.NoSuchEra: minimcp.wire.versions has no attribute 'NoSuchEra'"
    ]
    assert problems("the facade `context.py`, `waiting.py`") == [
        "context.py: a module of the flat layout that no file of the package is called now",
        "waiting.py: a module of the flat layout that no file of the package is called now",
    ]


def test_the_checker_takes_what_exists_and_logger_names() -> None:
    assert problems(
        "`minimcp/wire/versions.py`, `server/context/ports.py`, `examples/booking.py`, `tests/conftest.py`, "
        "`minimcp.wire.versions.Era`, `minimcp.Limits.replace`, `minimcp.server.mrtr.retry.check_retry`, "
        "`session.py` (core/session.py), `test_soak.py`, logged on `minimcp.modern` and `minimcp.http`."
    ) == []
    assert {"minimcp.session", "minimcp.modern", "minimcp.http", "minimcp.server"} <= LOGGERS
    # a logger name is no module path: a name under it is checked as one
    assert problems("`minimcp.modern.Run`") == ["minimcp.modern.Run: minimcp has no attribute 'modern'"]


def test_the_readme_lists_every_logger_name() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert sorted(name for name in LOGGERS if f"`{name}`" not in readme) == []
