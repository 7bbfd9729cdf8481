"""Layering rules: wire/rules modules do no I/O, transports import no role, versions.py answers per revision."""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

import pytest

from minimcp.core.transport import FastTransport
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
    # parking.py (where the runs of revision 2026-07-28 wait) is not pure; logging brings threading.
    assert transitive_imports("minimcp.server.mrtr.parking") == "minimcp.server.mrtr.parking -> logging -> threading"
    assert transitive_imports("minimcp.server.mrtr.run", ("anyio",)) == "minimcp.server.mrtr.run -> anyio"
    # rounds.py reaches anyio through the backend module.
    assert transitive_imports("minimcp.server.mrtr.rounds", ("anyio",)) == "minimcp.server.mrtr.rounds -> minimcp.core._backend -> anyio"  # noqa: E501
    # Reached only through another module: diagram_svg.py imports diagram.py, which imports json.
    assert transitive_imports("minimcp.diagram.svg", ("json",)) == "minimcp.diagram.svg -> minimcp.diagram.layout -> json"  # noqa: E501


# --- one import direction: the package-order table ----------------------------------------------

#: The packages, lowest first. A module may import (at load time, under ``TYPE_CHECKING`` and inside
#: functions alike) only from its own package or from one to its left; packages joined by ``|`` do
#: not import each other. ``diagram`` imports nothing of minimcp, and the command line draws
#: diagrams, so ``diagram`` sits beside ``hosting``, below ``cli``. ``minimcp`` is the public face
#: (``minimcp/__init__.py``): it gathers names from every library package, and the command line is
#: one of its users (``__version__``). ``minimcp/__main__.py`` is the entry point, outside the table.
ORDER = "wire < forms < core < auth < transports < server | client < scaleout | hosting | diagram < minimcp < cli"
RANK = {name.strip(): rank for rank, tier in enumerate(ORDER.split("<")) for name in tier.split("|")}


class Exception_(NamedTuple):
    """An upward import allowed by name: only from ``module``, only lazily, only inside ``functions``."""

    module: str
    target: str  # a module, or a package prefix
    functions: tuple[str, ...]
    reason: str


#: The named exceptions (at most three): each is lazy, and each keeps a part a server may not need unloaded.
EXCEPTIONS = (
    Exception_(
        "minimcp.server.server", "minimcp.hosting.run", ("Server.run",),
        "Server.run makes the process a server's: its event loop, Ctrl-C and SIGTERM are hosting's job",
    ),
    Exception_(
        "minimcp.server.server", "minimcp.scaleout.workers", ("Server.__init__", "Server.workers"),
        "Server(bus=..., worker_id=...) and Server.workers build the worker's side of the bus on first use",
    ),
    Exception_(
        "minimcp.server.connection", "minimcp.server.mrtr", ("ServerConnection.lock_era",),
        "inside server/, named because it keeps revision 2026-07-28's run machinery unloaded until a "
        "2026-07-28 request locks the connection's era",
    ),
)
#: Modules of server/ outside mrtr/ may import server.mrtr under TYPE_CHECKING, and lazily only here:
#: the objects a Server owns for revision 2026-07-28 (sealer, used states, parking), each made on first use.
SERVER_ERA_OBJECTS = (
    "Server.__init__", "Server.modern_parts", "Server.used_states", "Server.warn_if_state_key_random",
)


class Import(NamedTuple):
    target: str  # the minimcp module imported
    kind: str  # "load", "type" (under TYPE_CHECKING) or "lazy" (inside a function)
    where: str  # the enclosing function's qualified name ("" at module level)


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package by its ``__init__``)."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def package_imports(module: str, source: str, modules: Collection[str], is_package: bool = False) -> list[Import]:
    """Every import of a ``modules`` member in ``source``: where it stands and how it runs."""
    found: list[Import] = []
    here = module.split(".") if is_package else module.split(".")[:-1]

    def target_of(base: str, name: str | None) -> str | None:
        if name is not None and f"{base}.{name}" in modules:
            return f"{base}.{name}"
        return base if base in modules else None

    def visit(node: ast.AST, kind: str, where: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            child_kind, child_where = kind, where
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for block, block_kind in ((child.body, "type"), (child.orelse, kind)):
                    for statement in block:
                        visit(ast.Module(body=[statement], type_ignores=[]), block_kind, where)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                child_kind = "lazy"
                child_where = (*where, getattr(child, "name", "<lambda>"))
            elif isinstance(child, ast.ClassDef):
                child_where = (*where, child.name)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target = target_of(alias.name, None)
                    if target is not None:
                        found.append(Import(target, kind, ".".join(where) if kind == "lazy" else ""))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(here[: len(here) - child.level + 1] + ([child.module] if child.module else []))
                for alias in child.names:
                    target = target_of(base, alias.name)
                    if target is not None:
                        found.append(Import(target, kind, ".".join(where) if kind == "lazy" else ""))
            visit(child, child_kind, child_where)

    visit(ast.parse(source), "load", ())
    return [i for i in found if i.target != module]


def package_of(module: str) -> str | None:
    """``minimcp.server.mrtr.run`` -> ``server``; ``minimcp`` -> ``minimcp`` (the face); ``__main__`` -> None."""
    parts = module.split(".")
    if module == "minimcp":
        return "minimcp"
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in RANK) else None


def upward_imports(module: str, imports: list[Import]) -> list[str]:
    """The imports of ``module`` that break the package order and are no named exception, described."""
    source = package_of(module)
    if source is None:  # minimcp/__main__.py, the entry point
        return []
    broken = []
    for item in imports:
        target = package_of(item.target)
        if target == source or (target is not None and RANK[target] < RANK[source]):
            continue
        if any(
            item.kind == "lazy" and module == e.module and item.where in e.functions
            and (item.target == e.target or item.target.startswith(e.target + "."))
            for e in EXCEPTIONS
        ):
            continue
        broken.append(f"{module} -> {item.target} ({item.kind}{' in ' + item.where if item.where else ''})")
    return broken


def era_imports(module: str, imports: list[Import]) -> list[str]:
    """The imports by a server/ module outside mrtr/ of server.mrtr that are neither type-only nor named."""
    if not module.startswith("minimcp.server.") or module.startswith("minimcp.server.mrtr"):
        return []
    allowed = {*SERVER_ERA_OBJECTS, *(f for e in EXCEPTIONS if e.target == "minimcp.server.mrtr" for f in e.functions)}
    return [
        f"{module} -> {item.target} ({item.kind}{' in ' + item.where if item.where else ''})"
        for item in imports
        if item.target.startswith("minimcp.server.mrtr") and item.kind != "type" and item.where not in allowed
    ]


def all_imports() -> dict[str, list[Import]]:
    files = module_files()
    return {
        name: package_imports(name, path.read_text(encoding="utf-8"), files, path.name == "__init__.py")
        for name, path in files.items()
    }


def test_every_package_is_in_the_order_table() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages | {"minimcp"} == set(RANK)


def test_imports_follow_the_package_order() -> None:
    """No module imports a package to its right or beside it, apart from the named lazy exceptions."""
    graph = all_imports()
    assert [broken for name, imports in sorted(graph.items()) for broken in upward_imports(name, imports)] == []


def test_the_named_exceptions_exist_and_are_few() -> None:
    """Each exception names a real import in a real function (a stale exception is removed, not kept)."""
    assert len(EXCEPTIONS) <= 3
    graph = all_imports()
    for e in EXCEPTIONS:
        used = {i.where for i in graph[e.module] if i.target == e.target or i.target.startswith(e.target + ".")}
        assert set(e.functions) <= used, e


def test_server_loads_revision_2026_07_28_only_through_named_functions() -> None:
    """Outside mrtr/, the server's modules import server.mrtr for typing, in lock_era, or in the Server's
    lazily made 2026-07-28 objects: never at load time."""
    graph = all_imports()
    assert [broken for name, imports in sorted(graph.items()) for broken in era_imports(name, imports)] == []


LAZY_RUN = "        from minimcp.hosting.run import run_network\n"


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # upward at load time, for typing only, and inside a function: all three are caught
        ("minimcp.transports.memory", "from minimcp.server.server import Server\n",
         ["minimcp.transports.memory -> minimcp.server.server (load)"]),
        ("minimcp.transports.memory", "if TYPE_CHECKING:\n    from minimcp.server import server\n",
         ["minimcp.transports.memory -> minimcp.server.server (type)"]),
        ("minimcp.transports.memory", "def f():\n    import minimcp.client.client\n",
         ["minimcp.transports.memory -> minimcp.client.client (lazy in f)"]),
        # beside: server and client do not import each other
        ("minimcp.server.server", "if TYPE_CHECKING:\n    from minimcp.client.client import Client\n",
         ["minimcp.server.server -> minimcp.client.client (type)"]),
        # the public face is above every package
        ("minimcp.client.client", "from minimcp import Server\n", ["minimcp.client.client -> minimcp (load)"]),
        # an exception holds only lazily, only in its function
        ("minimcp.server.server", f"class Server:\n    def run(self):\n{LAZY_RUN}", []),
        ("minimcp.server.server", f"class Server:\n    def other(self):\n{LAZY_RUN}",
         ["minimcp.server.server -> minimcp.hosting.run (lazy in Server.other)"]),
        ("minimcp.server.server", "from minimcp.hosting.run import run_network\n",
         ["minimcp.server.server -> minimcp.hosting.run (load)"]),
        # downward and within a package: fine, relative imports resolved
        ("minimcp.hosting.run", "from minimcp.server.server import Server\nfrom . import http\n", []),
        ("minimcp.server.mrtr.rounds", "from ..connection import ServerConnection\nfrom ...wire import errors\n", []),
    ],
)
def test_the_order_checker_catches_a_violation(module: str, source: str, expected: list[str]) -> None:
    modules = set(module_files())
    assert upward_imports(module, package_imports(module, source, modules)) == expected


def test_the_era_checker_catches_a_load_time_import() -> None:
    modules = set(module_files())
    module = "minimcp.server.handlers"
    found = package_imports(module, "from minimcp.server.mrtr import rounds\n", modules)
    assert era_imports(module, found) == ["minimcp.server.handlers -> minimcp.server.mrtr.rounds (load)"]
    typed = package_imports(module, "if TYPE_CHECKING:\n    from minimcp.server.mrtr import rounds\n", modules)
    assert era_imports(module, typed) == []
    # a module of mrtr/ itself is not held to it
    assert era_imports("minimcp.server.mrtr.run", found) == []


def package_graph(graph: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Package -> the packages its modules import (any kind), the named exceptions left out."""
    packages: dict[str, set[str]] = {}
    for module, imports in graph.items():
        source = package_of(module)
        if source is None:
            continue
        for item in imports:
            target = package_of(item.target)
            named = any(
                module == e.module and item.target.startswith(e.target) and item.where in e.functions
                for e in EXCEPTIONS
            )
            if target is not None and target != source and not named:
                packages.setdefault(source, set()).add(target)
    return packages


def test_no_import_cycle_between_packages() -> None:
    """Counting type-only and lazy imports: no package reaches back to itself through others."""
    packages = package_graph(all_imports())
    assert {"server", "transports", "core", "forms"} <= set(packages)
    assert cycles(packages) == []
    # the finder sees a cycle closed by a type-only import between packages
    extra = package_imports("minimcp.core.stats", "if TYPE_CHECKING:\n    from minimcp.server.server import Server\n",
                            set(module_files()))
    assert cycles(package_graph({**all_imports(), "minimcp.core.stats": extra})) != []


# --- the transport's optional members are declared --------------------------------------------


def transport_lookups(source: str) -> set[str]:
    """The names ``source`` looks up on a transport with ``getattr(..transport, "name", ...)``."""
    return {
        node.args[1].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
        and len(node.args) >= 2 and ast.unparse(node.args[0]).endswith("transport")
        and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
    }


def test_the_sessions_optional_transport_members_are_declared() -> None:
    """What the session looks up on its transport with getattr is exactly what FastTransport declares."""
    core = sorted((PACKAGE / "core").glob("*.py"))
    looked_up = set().union(*(transport_lookups(p.read_text(encoding="utf-8")) for p in core))
    declared = {*FastTransport.__annotations__, *(n for n in vars(FastTransport) if not n.startswith("_"))}
    assert looked_up == declared
    source = 'x = getattr(self.transport, "send_nowait", None)\ny = getattr(o, "z")\n'
    assert transport_lookups(source) == {"send_nowait"}


# --- no re-exports: a name is imported from where it is defined ---------------------------------

#: Modules that gather public names on purpose, each with its reason.
PACKAGE_FACES = {
    "__init__.py": "the public names of minimcp (lazily where they load a stack)",
    "forms/__init__.py": "users import the form names from minimcp.forms (README, examples/demo.py)",
    "transports/http/__init__.py": "the HTTP transport's names (StreamableHTTPApp lazily: it is this package's own)",
    "auth/__init__.py": "users import the authorization names from minimcp.auth (lazily: verifiers load pyjwt, httpx)",
}


def reexported_names(source: str) -> set[str]:
    """Names ``source`` imports from minimcp at module level only to hand them on: imported as themselves
    (``from m import x as x``), listed in ``__all__``, or never used in the module."""
    tree = ast.parse(source)
    imported: dict[str, bool] = {}  # bound name -> written as ``x as x``

    def top(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                top(node.body)
                top(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    top(block)
            elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("minimcp")):
                for alias in node.names:
                    imported[alias.asname or alias.name] = alias.asname == alias.name

    top(tree.body)
    listed: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets
        ):
            assert isinstance(statement.value, (ast.List, ast.Tuple))
            listed = {e.value for e in statement.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            try:  # a quoted annotation
                expression = ast.parse(node.value, mode="eval")
            except SyntaxError:
                continue
            used.update(n.id for n in ast.walk(expression) if isinstance(n, ast.Name))
    return {name for name, as_itself in imported.items() if as_itself or name in listed or name not in used}


def test_no_module_imports_a_name_only_to_reexport_it() -> None:
    """Internal code and tests import a name from where it is defined; only the listed faces gather names."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name not in PACKAGE_FACES:
            names = reexported_names(path.read_text(encoding="utf-8"))
            if names:
                found[name] = sorted(names)
    assert found == {}
    assert all((PACKAGE / name).is_file() for name in PACKAGE_FACES)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from minimcp.wire.errors import McpError as McpError\n", {"McpError"}),
        ('from minimcp.wire.errors import McpError\n__all__ = ["McpError"]\n', {"McpError"}),
        ("if TYPE_CHECKING:\n    from minimcp.wire.errors import McpError\n", {"McpError"}),
        ("from .errors import McpError\n", {"McpError"}),
        ("from minimcp.wire.errors import McpError\nraise McpError(1, 'x')\n", set()),
        ("if TYPE_CHECKING:\n    from minimcp.core.session import Session\ndef f(s: 'Session') -> None: ...\n", set()),
        ("from json import dumps\n", set()),
        ("def f():\n    from minimcp.wire.errors import McpError\n", set()),
    ],
)
def test_the_reexport_checker(source: str, expected: set[str]) -> None:
    assert reexported_names(source) == expected


def gathers_only(source: str) -> bool:
    """Whether ``source`` defines no function and no class (it only gathers names, or documents a package)."""
    return not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in ast.parse(source).body)


def test_package_inits_load_no_other_package() -> None:
    """A package ``__init__`` that only gathers names (not ``forms``, which is the forms API, nor ``cli``, the
    command line's ``main``) loads, at load time, nothing of another package: importing one submodule never
    loads a second package."""
    graph = all_imports()
    found = {
        name: sorted(i.target for i in graph[name] if i.kind == "load" and package_of(i.target) != package_of(name))
        for name, path in module_files().items()
        if path.name == "__init__.py" and name != "minimcp" and gathers_only(path.read_text(encoding="utf-8"))
    }
    assert {name: targets for name, targets in found.items() if targets} == {}
    assert gathers_only("from minimcp.wire import errors\n__all__ = []\n")
    assert not gathers_only("def main() -> int:\n    return 0\n")


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

#: The only modules that import asyncio or trio directly: the session layer's backend module, the
#: transports' (their I/O paths' events, clock, socket waits and HTTP response wait), and two transport
#: adapters that are asyncio by nature (the loop's own pipe transports, uvicorn's protocol).
BACKEND_MODULES = {
    "core/_backend.py", "transports/_backend_io.py", "transports/_stdio_asyncio.py", "transports/_uvicorn_guard.py"
}


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
