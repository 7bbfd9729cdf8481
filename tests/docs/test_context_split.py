"""The tool context and the server's modules: one job per module, and no reach into another's private state.

``Context`` is built in two layers, one module each (:mod:`minimcp.server.context.call`: identity, progress, logging;
:mod:`minimcp.server.context.asking`: the questions), under the facade :mod:`minimcp.server.context`.
The server's modules use
one another through public members only: the keep-alive timer of :mod:`minimcp.server.context.keepalive` calls
``Call.keep_alive``, not a private method of the context.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import minimcp
from minimcp.server.context import Context
from minimcp.server.context.asking import AskingCall, Elicit, ListRoots, Sample
from minimcp.server.context.call import Call
from minimcp.wire.jsonrpc import CALL_ID_BYTES
from minimcp.wire.types import LOG_LEVELS

PACKAGE = pathlib.Path(minimcp.__file__).resolve().parent

#: The context's layers and the server-side modules around them.
MODULES = [
    "server/context/__init__.py",
    "server/context/call.py",
    "server/context/asking.py",
    "server/context/keepalive.py",
    "server/context/ports.py",
    "server/connection.py",
    "server/server.py",
    "server/handlers.py",
    "server/mrtr/rounds.py",
    "server/outcome.py",
    "server/registry.py",
    "scaleout/workers.py",
    "wire/envelope.py",
    "wire/input_required.py",
]


@pytest.mark.parametrize("filename", MODULES)
def test_each_module_is_small_and_opens_with_its_job(filename: str) -> None:
    source = (PACKAGE / filename).read_text()
    assert len(source.splitlines()) <= 600, f"{filename} has {len(source.splitlines())} lines"
    doc = ast.get_docstring(ast.parse(source))
    assert doc, f"{filename} has no module docstring"
    first = doc.splitlines()[0]
    assert first.endswith(".") and len(first) <= 120, f"{filename}: the first docstring line states its job: {first!r}"


ALL_MODULES = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("filename", ALL_MODULES)
def test_every_module_of_the_package_is_small_and_opens_with_its_job(filename: str) -> None:
    """Issue 17's rule for the whole package, so a module that grows past it fails here."""
    test_each_module_is_small_and_opens_with_its_job(filename)


def private_reaches(source: str) -> list[str]:
    """``x._name`` where ``x`` is neither ``self``/``cls`` nor a class defined in the same module."""
    tree = ast.parse(source)
    own_classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in own_classes):
            continue
        found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_checker_sees_reach_throughs() -> None:
    assert private_reaches("ctx._still_waiting()\nself._x\nclass A: pass\nA._y\n") == ["line 1: ctx._still_waiting"]


@pytest.mark.parametrize("filename", MODULES)
def test_no_module_reaches_into_another_objects_private_members(filename: str) -> None:
    assert private_reaches((PACKAGE / filename).read_text()) == []


def test_context_is_the_two_layers_and_adds_no_state() -> None:
    assert Context.__mro__[1:3] == (AskingCall, Call)
    assert Context.__slots__ == ()
    assert not hasattr(Context, "_still_waiting") and callable(Call.keep_alive)
    # the old import paths keep working
    assert minimcp.Context is Context and minimcp.Elicit is Elicit and (ListRoots, Sample)
    assert CALL_ID_BYTES == 12 and LOG_LEVELS[0] == "debug"
