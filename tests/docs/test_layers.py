"""Layering rules: wire/rules modules do no I/O, transports import no role, versions.py answers per revision."""

from __future__ import annotations

import ast

import pytest

from minimcp.wire.versions import LATEST, SUPPORTED, Feature, is_supported, negotiate, supports
from tests.helpers.layers import PACKAGE, forbidden_imports, imported_modules, transitive_imports

#: Sans-I/O modules: bytes and values in, bytes and values out.
PURE_MODULES = [
    "wire/jsonrpc.py",
    "wire/types.py",
    "wire/errors.py",
    "wire/versions.py",
    "wire/framing.py",
    "forms/__init__.py",
    "forms/fields.py",
    "forms/check.py",
    "forms/schema.py",
    "forms/types.py",
    "forms/cache.py",
    "core/pending.py",
    "wire/envelope.py",
    "core/config.py",
    "wire/elicitation.py",
    "wire/capabilities.py",
    "server/mrtr/state.py",
    "wire/urls.py",
    "server/tools.py",
    "server/resources.py",
    "server/prompts.py",
    "core/deadlines.py",
    "diagram/layout.py",
    "diagram/svg.py",
    "server/metrics.py",
    "wire/input_required.py",
    "server/registry.py",
    "transports/http/_sse.py",
    "transports/http/_headers.py",
]






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
    existing = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    assert set(PURE_MODULES) <= existing


# --- transitive purity: what a pure module pulls in, not only what it names ---------------------






def _dotted(filename: str) -> str:
    return "minimcp." + filename.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("filename", PURE_MODULES)
def test_pure_module_pulls_in_no_io_transitively(filename: str) -> None:
    """A pure module imports no event loop, socket, thread or process module through anything it imports."""
    verdict = transitive_imports(_dotted(filename))
    assert verdict == "clean", f"{filename} pulls in a blocked module: {verdict}"


def test_transitive_probe_names_the_chain() -> None:
    """The probe catches an indirect import and names each module on the way to it."""
    assert transitive_imports("minimcp.wire.errors") == "clean"
    # modern.py (parking, and the old names of revision 2026-07-28) is not pure; logging brings threading.
    assert transitive_imports("minimcp.server.mrtr.modern") == "minimcp.server.mrtr.modern -> logging -> threading"
    # It re-exports the parking of runs, whose loop helpers (core/_backend.py) use anyio.
    assert transitive_imports("minimcp.server.mrtr.modern", ("anyio",)) == "minimcp.server.mrtr.modern -> minimcp.server.mrtr.parking -> minimcp.core._backend -> anyio"  # noqa: E501
    assert transitive_imports("minimcp.server.mrtr.run", ("anyio",)) == "minimcp.server.mrtr.run -> anyio"
    # Reached only through another module: diagram_svg.py imports diagram.py, which imports json.
    assert transitive_imports("minimcp.diagram.svg", ("json",)) == "minimcp.diagram.svg -> minimcp.diagram.layout -> json"  # noqa: E501


# --- layers point one way: the transports import no role ------------------------------------

#: The roles: a transport module must not import them, not even for typing.
ROLES = (
    "minimcp.server.server", "minimcp.server.connection", "minimcp.server.handlers", "minimcp.server.mrtr.rounds", "minimcp.server.outcome",  # noqa: E501
    "minimcp.server.context", "minimcp.client.client", "minimcp.client.answers", "minimcp.client.headers",
)
#: The role-level modules under ``transports/``: where a Server or a Client meets a transport.
ROLE_LEVEL = {"hosting/http.py", "hosting/websocket.py"}
#: Transport modules that re-export the role-level names under their historical paths.
REEXPORTS = {
    "transports/http/__init__.py": "minimcp.hosting.http",
    "transports/websocket.py": "minimcp.hosting.websocket",
}
TRANSPORT_MODULES = sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "transports").rglob("*.py"))


def role_imports(source: str) -> set[str]:
    """The role modules (and the role-level serve modules) that ``source`` imports."""
    upward = (*ROLES, *(_dotted(name) for name in ROLE_LEVEL))
    return {
        name for name in imported_modules(source) if name in upward or name.startswith(tuple(u + "." for u in upward))
    }


@pytest.mark.parametrize("filename", [f for f in TRANSPORT_MODULES if f not in ROLE_LEVEL])
def test_transport_module_imports_no_role(filename: str) -> None:
    """Transports sit below the roles: no transport module imports minimcp.server.server, .context or .client.

    The role-level serve modules (``ROLE_LEVEL``) are imported only where a historical
    path re-exports their names (``REEXPORTS``).
    """
    found = role_imports((PACKAGE / filename).read_text(encoding="utf-8"))
    reexported = REEXPORTS.get(filename)
    if reexported is not None:
        found = {name for name in found if name != reexported and not name.startswith(reexported + ".")}
    assert not found, f"{filename} imports {sorted(found)}"


def test_role_level_transport_modules_exist() -> None:
    """The role-level list names real files, and the checker sees a typing-only role import."""
    assert all((PACKAGE / name).is_file() for name in ROLE_LEVEL)
    assert role_imports("if TYPE_CHECKING:\n    from minimcp.server.server import Server\n") == {
        "minimcp.server.server",
        "minimcp.server.server.Server",
    }
    assert role_imports("from minimcp.client import client") == {"minimcp.client.client"}


# --- no import cycles among the package's modules ------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def load_time_imports(source: str) -> set[str]:
    """The absolute module names ``source`` imports when it is loaded: its top-level statements (also
    inside ``if``/``try``), not function bodies (imported when called) nor ``if TYPE_CHECKING:`` blocks
    (never run; a type-only reference back to an owner, as connection.py -> server.py, is allowed)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(block)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)  # from minimcp import x

    visit(ast.parse(source).body)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports at load time (the package ``__init__`` left out: it only
    gathers the public names, and every submodule import runs it first)."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in files.items():
        imported = load_time_imports(path.read_text(encoding="utf-8"))
        graph[name] = {m for m in imported if m in files and m not in ("minimcp", name)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each a cycle or several), sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_sees_cycles_and_skips_type_only_imports() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    source = (
        "import minimcp.a\nfrom minimcp import b\ntry:\n    from minimcp.c import X\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from minimcp.d import Y\ndef f():\n    import minimcp.e\n"
    )
    found = load_time_imports(source)
    assert {"minimcp.a", "minimcp.b", "minimcp.c"} <= found
    assert not {"minimcp.d", "minimcp.e"} & found


def test_no_import_cycles_among_the_modules() -> None:
    """No module of the package imports, at load time, a module that imports it back (directly or not):
    the server's modules (server -> connection -> rounds -> handlers -> outcome -> context) point one way."""
    graph = import_graph()
    assert {"minimcp.server.server", "minimcp.server.context", "minimcp.server.connection", "minimcp.server.handlers"} <= set(graph)  # noqa: E501
    assert "minimcp.server.server" not in graph["minimcp.server.context"]
    assert cycles(graph) == []


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
    Feature.ELICITATION: (False, False, True, True),
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


# --- backend specifics in one place ---------------------------------------------------------------

#: The only modules that import asyncio or trio directly: the session layer's backend module, and two
#: transport adapters that are asyncio by nature (the loop's own pipe transports, uvicorn's protocol).
BACKEND_MODULES = {"core/_backend.py", "transports/_stdio_asyncio.py", "transports/_uvicorn_guard.py"}


def test_only_the_backend_module_imports_asyncio_or_trio() -> None:
    """Everything else is anyio code: the one-shot cells, handler spawning and "which backend am I on"
    live in ``core/_backend.py``."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        direct = {m for m in imported_modules(source) if m.split(".")[0] in ("asyncio", "trio")}
        if direct and name not in BACKEND_MODULES:
            found[name] = sorted(direct)
    assert found == {}, f"asyncio/trio imported outside the backend module: {found}"
    assert imported_modules("import asyncio\nfrom trio import lowlevel\n") >= {"asyncio", "trio"}
