"""The shape of every module of the package: one job each, one class when large, mixins only beside their class.

The rule (issue 28, item 3; it replaces the 600-line cap): a module's first docstring line states its one
job; a module over 600 lines is one class doing that job (that class holds most of its lines); a class
is built from another module's class only as a private mixin beside it (``core/_requests.py`` beside
``core/session.py``), where composition would cost a measured amount, said in the mixin's docstring,
or as one of the named subclasses below. And no module reaches into another object's private members,
bar the few named with their reason.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib

import pytest

import minimcp

PACKAGE = pathlib.Path(minimcp.__file__).resolve().parent
ALL_MODULES = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py"))

#: Past this a module is one class (the job itself), never a bundle of helpers cut to fit.
LARGE = 600


def _source(filename: str) -> str:
    return (PACKAGE / filename).read_text()


@pytest.mark.parametrize("filename", [m for m in ALL_MODULES if m.endswith("__init__.py")])
def test_every_package_says_what_a_first_reading_may_skip(filename: str) -> None:
    """Each package's docstring says what it is (its first line) and how it stands on a first reading."""
    doc = ast.get_docstring(ast.parse(_source(filename))) or ""
    assert "first reading" in " ".join(doc.split()), f"{filename}: say whether a first reading may skip it"


@pytest.mark.parametrize("filename", ALL_MODULES)
def test_every_module_opens_with_its_job(filename: str) -> None:
    doc = ast.get_docstring(ast.parse(_source(filename)))
    assert doc, f"{filename} has no module docstring"
    first = doc.splitlines()[0]
    assert first.endswith(".") and len(first) <= 120, f"{filename}: the first docstring line states its job: {first!r}"


def largest_class_share(source: str) -> tuple[str, float]:
    """The top-level class with the most lines, and its share of the module's lines."""
    tree = ast.parse(source)
    total = len(source.splitlines())
    spans = [
        (node.end_lineno - node.lineno + 1, node.name)
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None
    ]
    if not spans:
        return "", 0.0
    lines, name = max(spans)
    return name, lines / total


def test_the_shape_checker_measures_the_largest_class() -> None:
    source = "x = 1\nclass A:\n    a = 1\n    b = 2\nclass B:\n    pass\n"
    assert largest_class_share(source) == ("A", 0.5)
    assert largest_class_share("def f():\n    pass\n") == ("", 0.0)


@pytest.mark.parametrize("filename", ALL_MODULES)
def test_a_large_module_is_one_class(filename: str) -> None:
    source = _source(filename)
    lines = len(source.splitlines())
    if lines <= LARGE:
        return
    name, share = largest_class_share(source)
    assert share > 0.5, f"{filename} has {lines} lines, but its largest class {name!r} holds only {share:.0%} of them"


#: Classes built on another module's class that are not mixins: a specialisation that stands alone
#: (the base is a whole class that works by itself), or a split along a seam (an era).
SUBCLASSES = {
    # The outcome of a tool call is a Deferred reply that the dispatcher already knows how to await.
    ("minimcp.server.outcome", "ToolRun"): "minimcp.core.dispatch.Deferred",
    # A parked run that serves the rounds of one tools/call (the retry's side of a Run).
    ("minimcp.server.mrtr.rounds", "ServingRun"): "minimcp.server.mrtr.run.Run",
    # A 2026-07-28 request with the person its token names: a Request to every handler on its way (dispatch,
    # the connection), its principal read where the person matters (no wrapper to unwrap without authorization).
    ("minimcp.auth.request", "AuthenticatedRequest"): "minimcp.wire.jsonrpc.Request",
    # The machine clients: the whole OAuth client (discovery, the resource check, scopes, tokens, DPoP) with
    # another grant in place of the browser's authorization code.
    ("minimcp.auth.machine", "_MachineClient"): "minimcp.auth.oauth_client.OAuthClient",
    # A port: the core's Dispatcher protocol and the one flag an HTTP app sets on its 2026-07-28 connection.
    ("minimcp.transports._ports", "StatelessConnection"): "minimcp.core.dispatch.Dispatcher",
    # The client transport's 2026-07-28 exchanges: an era seam, loaded with the transport.
    (
        "minimcp.transports.http.client",
        "StreamableHTTPClientTransport",
    ): "minimcp.transports.http.client_stateless.StatelessExchanges",
}


def _module_name(filename: str) -> str:
    parts = ["minimcp", *pathlib.PurePosixPath(filename).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def built_on_other_modules() -> list[tuple[str, str, type]]:
    """(module, class, base) for each base that is a minimcp class, not an error, defined in another module."""
    found = []
    for filename in ALL_MODULES:
        name = _module_name(filename)
        module = importlib.import_module(name)
        for class_name, cls in vars(module).items():
            if not inspect.isclass(cls) or cls.__module__ != name:
                continue
            for base in cls.__bases__:
                if (
                    base.__module__.startswith("minimcp")
                    and base.__module__ != name
                    and not issubclass(base, Exception)
                ):
                    found.append((name, class_name, base))
    return found


def test_a_mixin_is_private_and_beside_its_class() -> None:
    wrong = []
    for module, class_name, base in built_on_other_modules():
        where = f"{base.__module__}.{base.__qualname__}"
        if SUBCLASSES.get((module, class_name)) == where:
            continue
        package, _, leaf = base.__module__.rpartition(".")
        beside = package == module.rpartition(".")[0]
        if not (leaf.startswith("_") and beside):
            wrong.append(f"{module}.{class_name} <- {where}")
        elif "composition" not in (inspect.getdoc(importlib.import_module(base.__module__)) or ""):
            wrong.append(f"{base.__module__}: its docstring says what composition would cost")
    assert wrong == []


def test_each_named_subclass_is_still_built_so() -> None:
    seen = {
        (module, class_name, f"{base.__module__}.{base.__qualname__}")
        for module, class_name, base in built_on_other_modules()
    }
    assert [(*key, base) for key, base in SUBCLASSES.items() if (*key, base) not in seen] == []


def private_reaches(source: str) -> list[str]:
    """``x._name`` where ``x`` is neither ``self``/``cls`` nor a class defined in the same module."""
    tree = ast.parse(source)
    own_classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in own_classes):
            continue
        found.append((node.lineno, node.col_offset, ast.unparse(node)))
    return [text for _, _, text in sorted(found)]


def test_the_checker_sees_reach_throughs() -> None:
    assert private_reaches("ctx._still_waiting()\nself._x\nclass A: pass\nA._y\nself.other._z\n") == [
        "ctx._still_waiting",
        "self.other._z",
    ]


#: The private reaches that stay, each with its reason.
ALLOWED_REACHES = {
    # The backend module is where asyncio's loop lookup may be read (the fast, non-raising one), and
    # where a relayed wait sets the future protocol's flag (relayed_wait, for the HTTP response).
    "core/_backend.py": ["asyncio._get_running_loop", "wake._asyncio_future_blocking"],
    # The write side's protocol belongs to the same module's LoopStdio: one object split for asyncio's API.
    "transports/_stdio_asyncio.py": ["self.owner._write_lost"],
    # The module's own context manager starts the transport's writer and watchdog.
    "transports/websocket.py": ["transport._write_loop", "transport._keep_watch"],
}


@pytest.mark.parametrize("filename", ALL_MODULES)
def test_no_module_reaches_into_another_objects_private_members(filename: str) -> None:
    assert private_reaches(_source(filename)) == ALLOWED_REACHES.get(filename, [])


def test_each_allowed_reach_is_a_module_of_the_package() -> None:
    assert set(ALLOWED_REACHES) <= set(ALL_MODULES)


def test_the_context_is_one_class_in_one_module() -> None:
    """``Context`` is one class (no base class of the package, no mixin), defined with the question specs
    in the package's main module: a reader finds all of what a tool's ``ctx`` does in one place."""
    import minimcp.server.context as module
    from minimcp.server.context import Context

    assert Context.__mro__ == (Context, object)
    for name in ("Context", "Elicit", "ListRoots", "Sample"):
        assert getattr(minimcp, name) is getattr(module, name), name
        assert getattr(module, name).__module__ == "minimcp.server.context", name
    assert sorted(path.name for path in (PACKAGE / "server" / "context").glob("*.py")) == [
        "__init__.py",
        "keepalive.py",
        "ports.py",
    ]
