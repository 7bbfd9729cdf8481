"""The tests mirror the package: one folder per package, a few cross-cutting folders, shared code in helpers."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "minimcp"

#: Folders that cut across the packages: what each holds.
CROSS_CUTTING = {
    "scenarios": "a whole flow through several packages (the booking example, 2026-07-28, hostile peers, soak)",
    "peers": "tests against real peers (the official SDK, the npm servers, Chromium) and the peer programs",
    "guards": "counted work (objects, bytes, bytecodes, timers per call): what the optimisations bought",
    "docs": "the documents and the structure (internals walk, diagrams, layers, exports, module shape)",
    "helpers": "code several test files share (no tests)",
}


def all_test_files() -> list[pathlib.Path]:
    """The suite's test files (not those of packages installed under tests/, e.g. a peer's own venv)."""
    return sorted(p for p in TESTS.rglob("test_*.py") if not any(part.startswith(".") for part in p.parts))


def test_every_test_folder_is_a_package_or_a_named_cross_cutting_one() -> None:
    folders = {p.parent.relative_to(TESTS).as_posix() for p in all_test_files()}
    assert "." not in folders, "a test file at the top of tests/: put it in the folder of the package it tests"
    for folder in sorted(folders):
        top = folder.split("/")[0]
        if top in CROSS_CUTTING:
            continue
        assert (PACKAGE / folder).is_dir(), f"tests/{folder}/ mirrors no package: minimcp/{folder}/ does not exist"


def imported_test_modules(source: str) -> set[str]:
    """The test modules (``tests.<...>.test_x`` or ``tests.test_x``) that ``source`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found.update(m for m in modules if m.startswith("tests.") and m.rsplit(".", 1)[-1].startswith("test_"))
    return found


def test_the_checker_sees_an_import_of_a_test_module() -> None:
    assert imported_test_modules("from tests.test_modern import accept") == {"tests.test_modern"}
    assert imported_test_modules("from tests.scenarios import test_modern") == {"tests.scenarios.test_modern"}
    assert imported_test_modules("def f():\n    import tests.server.test_tools\n") == {"tests.server.test_tools"}
    assert imported_test_modules("from tests.helpers.modern import accept") == set()


@pytest.mark.parametrize("path", all_test_files(), ids=lambda p: p.relative_to(TESTS).as_posix())
def test_no_test_file_imports_another(path: pathlib.Path) -> None:
    """What two test files share lives in ``tests/helpers/``, not in one of them."""
    found = imported_test_modules(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(TESTS)} imports {sorted(found)}: move what it needs to tests/helpers/"


def test_helpers_hold_no_tests() -> None:
    for path in sorted((TESTS / "helpers").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.name.startswith("test_")]
        assert not tests, f"tests/helpers/{path.name} defines tests {tests}: they would run in no file"


#: The documents that cite tests by ``test_file.py::test_name`` (a name ending in ``_`` is a prefix).
CITING = ("README.md", "docs/guarantees.md", "docs/internals.md", "docs/booking.md", "docs/deploy.md",
          "benchmarks/README.md")


def test_every_test_a_document_cites_exists() -> None:
    names: dict[str, set[str]] = {}
    for path in all_test_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names[path.name] = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    stale = []
    for doc in CITING:
        text = (TESTS.parent / doc).read_text(encoding="utf-8")
        for match in re.finditer(r"(test_\w+\.py)(?:::(\w+))?", text):
            file, name = match.groups()
            if file not in names:
                stale.append(f"{doc}: {match[0]} (no such test file)")
            elif name and not any(n == name or (name.endswith("_") and n.startswith(name)) for n in names[file]):
                stale.append(f"{doc}: {match[0]} (no such test in {file})")
    assert not stale, "\n".join(stale)


def test_every_test_path_the_library_names_exists() -> None:
    """A docstring that points at the test keeping a rule names a file that is there."""
    stale = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for match in re.finditer(r"(?<![\w/])tests/[\w/]+\.py", path.read_text(encoding="utf-8")):
            if not (TESTS.parent / match[0]).is_file():
                stale.append(f"{path.relative_to(TESTS.parent)}: {match[0]}")
    assert not stale, "\n".join(stale)
