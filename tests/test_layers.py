"""Layering rules: the wire/rules modules do no I/O, and versions.py answers per-revision questions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from minimcp.versions import LATEST, SUPPORTED, Feature, is_supported, negotiate, supports

PACKAGE = Path(__file__).resolve().parent.parent / "minimcp"

#: Sans-I/O modules: bytes and values in, bytes and values out.
PURE_MODULES = [
    "jsonrpc.py",
    "types.py",
    "errors.py",
    "versions.py",
    "framing.py",
    "forms.py",
    "config.py",
    "elicitation.py",
    "capabilities.py",
    "state.py",
    "urls.py",
    "tools.py",
    "resources.py",
    "prompts.py",
    "deadlines.py",
    "diagram.py",
    "diagram_svg.py",
]
#: Event loops, sockets, clocks, threads and processes.
FORBIDDEN = {"anyio", "trio", "asyncio", "socket", "time", "threading", "subprocess"}


def imported_modules(source: str) -> set[str]:
    """Every absolute module name imported anywhere in ``source`` (top level, functions, TYPE_CHECKING)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            # ``from anyio import abc`` imports the submodule anyio.abc too.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def forbidden_imports(source: str) -> set[str]:
    """The imported names whose top-level package is forbidden."""
    return {name for name in imported_modules(source) if name.split(".")[0] in FORBIDDEN}


@pytest.mark.parametrize("filename", PURE_MODULES)
def test_pure_module_imports_no_io(filename: str) -> None:
    """The wire and rules modules import no event loop, socket, clock, thread or process module."""
    path = PACKAGE / filename
    assert path.is_file(), f"{path} is missing"
    assert forbidden_imports(path.read_text(encoding="utf-8")) == set()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import anyio", {"anyio"}),
        ("import anyio.abc", {"anyio.abc"}),
        ("import trio as t, json", {"trio"}),
        ("from anyio.abc import TaskGroup", {"anyio.abc", "anyio.abc.TaskGroup"}),
        ("from time import monotonic", {"time", "time.monotonic"}),
        ("def f():\n    import socket\n", {"socket"}),
        ("if TYPE_CHECKING:\n    from asyncio import Event\n", {"asyncio", "asyncio.Event"}),
        ("try:\n    import threading\nexcept ImportError:\n    pass\n", {"threading"}),
        ("from subprocess import run", {"subprocess", "subprocess.run"}),
        ("import timeit, anyiox, datetime", set()),
        ("from . import time", set()),
        ("from minimcp import errors", set()),
    ],
)
def test_import_checker_finds_forbidden_imports(source: str, expected: set[str]) -> None:
    """The checker itself sees plain, dotted, from-, nested and guarded imports, and no false hits."""
    assert forbidden_imports(source) == expected


def test_pure_modules_list_covers_existing_files() -> None:
    """Every module named as pure exists, so a rename cannot silently drop it from the check."""
    existing = {p.name for p in PACKAGE.glob("*.py")}
    assert set(PURE_MODULES) <= existing


# --- versions.py -------------------------------------------------------------------------------

REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def test_supported_revisions_and_latest() -> None:
    """The four handshake-era revisions are supported, oldest first; LATEST is the newest."""
    assert list(SUPPORTED) == REVISIONS
    assert LATEST == "2025-11-25"


@pytest.mark.parametrize("revision", REVISIONS)
def test_negotiate_echoes_supported_revision(revision: str) -> None:
    """A server answers a supported revision with that same revision."""
    assert is_supported(revision)
    assert negotiate(revision) == revision


@pytest.mark.parametrize("revision", ["2099-01-01", "", "2026-07-28", "2024-10-07", "2025-11-25 ", "latest"])
def test_negotiate_answers_latest_for_unknown(revision: str) -> None:
    """An unknown revision (future, empty, older draft, near-miss) is answered with LATEST."""
    assert not is_supported(revision)
    assert negotiate(revision) == LATEST


# For each feature: the expected answer on 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25.
FEATURE_TABLE: dict[Feature, tuple[bool, bool, bool, bool]] = {
    Feature.BATCHES: (False, True, False, False),
    Feature.AUDIO_CONTENT: (False, True, True, True),
    Feature.ELICITATION: (False, False, True, True),
    Feature.STRUCTURED_OUTPUT: (False, False, True, True),
    Feature.PROTOCOL_VERSION_HEADER: (False, False, True, True),
    Feature.ELICITATION_URL: (False, False, False, True),
    Feature.ELICITATION_DEFAULTS: (False, False, False, True),
    Feature.ELICITATION_ENUMS: (False, False, False, True),
    Feature.ERROR_WITHOUT_ID: (False, False, False, True),
    Feature.SSE_PRIMING: (False, False, False, True),
}


@pytest.mark.parametrize(
    ("feature", "revision", "expected"),
    [
        (feature, revision, answer)
        for feature, answers in FEATURE_TABLE.items()
        for revision, answer in zip(REVISIONS, answers, strict=True)
    ],
    ids=lambda v: v.name if isinstance(v, Feature) else str(v),
)
def test_supports_per_revision(feature: Feature, revision: str, expected: bool) -> None:
    """Each feature exists exactly on the revisions the spec introduced it in (batches only on 2025-03-26)."""
    assert supports(revision, feature) is expected


def test_every_feature_is_answerable_on_every_revision() -> None:
    """No Feature is missing from the rules table (supports() never raises for a supported revision)."""
    assert set(FEATURE_TABLE) == set(Feature)
    for feature in Feature:
        for revision in SUPPORTED:
            assert isinstance(supports(revision, feature), bool)
