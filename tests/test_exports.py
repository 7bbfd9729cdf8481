"""The public namespace matches the docs: every ``from minimcp import X`` the README, the docs,
the examples and the error messages show works, ``__all__`` lists exactly what is exported,
and ``import minimcp`` pulls in none of the optional HTTP / WebSocket stacks."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys
import types

import pytest

import minimcp

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Named by the README's transport table and by error texts (forms.py points at AllowSensitive),
# as names of the package rather than of a submodule.
NAMED_IN_DOCS = (
    "connect_http",
    "connect_websocket",
    "serve_http",
    "serve_websocket",
    "WireTrace",
    "Titled",
    "AllowSensitive",
)
OPTIONAL_STACKS = ("httpx", "uvicorn", "hypercorn", "websockets")

_FROM_IMPORT = re.compile(r"^[ \t]*from minimcp import (\([^)]*\)|[^\n]*)", re.MULTILINE)


def _documents() -> list[pathlib.Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]
    found += sorted(ROOT.glob("*/README.md"))
    return [p for p in found if p.is_file()]


def _imported_names(text: str) -> set[str]:
    names: set[str] = set()
    for match in _FROM_IMPORT.finditer(text):
        names_text = "\n".join(line.split("#")[0] for line in match.group(1).splitlines())
        tree = ast.parse("from minimcp import " + names_text.strip())
        node = tree.body[0]
        assert isinstance(node, ast.ImportFrom)
        names.update(alias.name for alias in node.names)
    return names


def documented_names() -> dict[str, set[str]]:
    """Every name a document imports from ``minimcp``, with the documents that import it."""
    where: dict[str, set[str]] = {name: {"the README / error messages"} for name in NAMED_IN_DOCS}
    for path in _documents():
        for name in _imported_names(path.read_text(encoding="utf-8")):
            where.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return where


def test_the_scan_finds_the_readme_imports() -> None:
    names = documented_names()
    assert {"Accepted", "Server", "connect_stdio", "Context"} <= set(names)
    assert _imported_names("from minimcp import (\n    A,\n    B as C,  # note\n)\n") == {"A", "B"}


@pytest.mark.parametrize("name", sorted(documented_names()))
def test_every_documented_name_imports_from_minimcp(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from minimcp import {name}", namespace)
    assert namespace[name] is not None
    assert name in minimcp.__all__, f"{name} is documented but not in minimcp.__all__"


def test_the_lazy_names_are_the_objects_of_their_modules() -> None:
    from minimcp.forms import AllowSensitive, Titled
    from minimcp.trace import WireTrace
    from minimcp.transports import http, websocket

    assert minimcp.AllowSensitive is AllowSensitive
    assert minimcp.Titled is Titled
    assert minimcp.WireTrace is WireTrace
    assert minimcp.connect_http is http.connect_http
    assert minimcp.serve_http is http.serve_http
    assert minimcp.connect_websocket is websocket.connect_websocket
    assert minimcp.serve_websocket is websocket.serve_websocket


def test_all_lists_exactly_the_public_names() -> None:
    exported = minimcp.__all__
    assert len(exported) == len(set(exported)), "a name is listed twice"
    for name in exported:
        assert getattr(minimcp, name) is not None
    public = {
        name
        for name in dir(minimcp)
        if not name.startswith("_") and not isinstance(getattr(minimcp, name), types.ModuleType)
    }
    public.discard("annotations")  # `from __future__ import annotations`
    public.discard("importlib")
    public.discard("TYPE_CHECKING")
    public.discard("Any")
    assert public == set(exported) - {"__version__"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'connect_carrier_pigeon'"):
        minimcp.connect_carrier_pigeon  # noqa: B018
    with pytest.raises(ImportError):
        exec("from minimcp import connect_carrier_pigeon", {})


def test_import_minimcp_loads_no_optional_stack() -> None:
    code = (
        "import sys, minimcp\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in " + repr(OPTIONAL_STACKS) + "\n"
        " or m in ('minimcp.transports.http', 'minimcp.transports.websocket', 'minimcp.transports.asgi_server')]\n"
        "print(','.join(sorted(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "", f"import minimcp imported {out.stdout.strip()}"

