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

ROOT = pathlib.Path(__file__).resolve().parents[2]

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

#: The public namespace, exactly: adding or removing a name is an API change, made here on purpose.
PUBLIC_API = (
    "__version__",
    # serving and calling
    "Server", "Context", "Client", "Limits", "ToolError", "tool_result", "state_keys_from_env",
    # transports
    "connect_stdio", "connect_http", "serve_http", "connect_websocket", "serve_websocket", "memory_pair",
    # asking the person (server side: Context's questions and their outcomes)
    "Elicit", "ListRoots", "Sample", "Accepted", "Declined", "Cancelled", "UrlElicitation",
    # asking the person (client side)
    "ElicitationRequest", "UrlElicitationRequest", "open_in_browser",
    # forms
    "check_form", "compile_form", "Titled", "AllowSensitive",
    # errors
    "MinimcpError", "McpError", "ConnectionClosed", "RequestTimeout", "TooManyPending", "UnsupportedVersion",
    "QuestionFailed", "ElicitationUnsupported", "UrlElicitationRequired", "FormDefinitionError",
    "FormValidationError", "InvalidElicitationUrl",
    # observing
    "WireTrace",
)

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
    from minimcp.core.trace import WireTrace
    from minimcp.forms import AllowSensitive, Titled
    from minimcp.hosting import http, websocket

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



def test_all_is_the_public_api() -> None:
    assert len(PUBLIC_API) == len(set(PUBLIC_API))
    assert sorted(minimcp.__all__) == sorted(PUBLIC_API)


def test_every_public_name_is_ours() -> None:
    """Each exported object is defined in minimcp (no third-party object passes as part of the API)."""
    for name in PUBLIC_API:
        if name == "__version__":
            assert isinstance(minimcp.__version__, str) and re.fullmatch(r"\d+\.\d+\.\d+\S*", minimcp.__version__)
            continue
        module = getattr(getattr(minimcp, name), "__module__", "")
        assert module.split(".")[0] == "minimcp", f"{name} comes from {module}"


def test_star_import_gives_exactly_all_in_a_fresh_interpreter() -> None:
    """``from minimcp import *`` binds every name of ``__all__`` (the lazy ones too), and nothing else."""
    code = (
        "before = set(globals())\n"
        "from minimcp import *\n"
        "import minimcp\n"
        "got = set(globals()) - before - {'before', 'minimcp'}\n"
        "assert got == set(minimcp.__all__), sorted(got ^ set(minimcp.__all__))\n"
        "assert all(globals()[name] is getattr(minimcp, name) for name in minimcp.__all__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
