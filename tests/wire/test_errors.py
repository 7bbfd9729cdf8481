"""One error tree: every exception class of minimcp derives from MinimcpError, and errors.py draws them all.

The tree in ``minimcp.wire.errors``'s docstring is checked against the classes: each
class defined in any minimcp module appears in it once, under its real parent,
with the module it lives in; the errors that carry a JSON-RPC code (``McpError``
and below) stand apart from the local ones.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import minimcp
from minimcp.wire import errors
from minimcp.wire.errors import McpError, MinimcpError

PACKAGE = Path(minimcp.__file__).resolve().parent
LOCAL = "local errors"
_NODE = re.compile(r"^(?P<indent>[ |]*)\+-- (?P<name>\w+(?: \w+)*?)(?:\s{2,}(?P<note>.*))?$")


def defined_exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at module level in minimcp (all modules, optional ones too)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(minimcp.__path__, "minimcp."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                assert value.__name__ not in found, f"two exception classes named {value.__name__}"
                found[value.__name__] = value
    return found


def drawn_tree() -> dict[str, tuple[str, str]]:
    """The docstring's tree: name -> (parent name, note). The root is ``MinimcpError``."""
    doc = errors.__doc__ or ""
    lines = doc.split("    MinimcpError\n", 1)[1].split("\n\n", 1)[0].splitlines()
    tree: dict[str, tuple[str, str]] = {}
    stack: list[str] = ["MinimcpError"]
    for line in lines:
        match = _NODE.match(line[4:])
        assert match, f"not a tree line: {line!r}"
        depth = len(match["indent"]) // 4 + 1
        del stack[depth:]
        name = match["name"]
        assert name not in tree, f"{name} is drawn twice"
        tree[name] = (stack[-1], match["note"] or "")
        stack.append(name)
    return tree


def test_the_walk_finds_the_known_classes() -> None:
    classes = defined_exception_classes()
    assert {"McpError", "ToolError", "FormDefinitionError", "InvalidState", "WebSocketHandshakeError"} <= set(classes)
    assert len(classes) >= 23


@pytest.mark.parametrize("name", sorted(defined_exception_classes()))
def test_every_exception_class_derives_from_minimcp_error(name: str) -> None:
    cls = defined_exception_classes()[name]
    assert issubclass(cls, MinimcpError), f"{cls.__module__}.{name} does not derive from MinimcpError"


def test_no_exception_class_hides_in_a_function_or_class() -> None:
    """The walk sees module-level classes only, so none may be defined deeper."""
    nested: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and id(node) not in top:
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                if any(base.endswith(("Error", "Exception")) or base == "MinimcpError" for base in bases):
                    nested.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert nested == []


def test_the_docstring_draws_every_class_under_its_real_parent() -> None:
    classes = defined_exception_classes()
    tree = drawn_tree()
    assert set(tree) - {LOCAL} == set(classes) - {"MinimcpError"}, "the tree and the classes differ"
    for name, (parent, note) in tree.items():
        if name == LOCAL:
            assert parent == "MinimcpError"
            continue
        cls = classes[name]
        if parent == LOCAL:
            assert MinimcpError in cls.__bases__, f"{name} is drawn as a direct local error"
            assert not issubclass(cls, McpError), f"{name} carries a wire code but is drawn as local"
        else:
            assert classes[parent] in cls.__bases__, f"{name} is drawn under {parent}"
        module = re.match(r"\[([\w.]+)\]", note)
        expected = f"minimcp.{module[1]}" if module else "minimcp.wire.errors"
        assert cls.__module__ == expected, f"{name} is drawn as living in {expected}"
    for name in ("TooManyPending", "RequestTimeout", "ConnectionClosed", "QuestionFailed", "UrlElicitationRequired"):
        assert tree[name][0] == "McpError"


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("FormDefinitionError", TypeError),
        ("SensitiveFieldError", TypeError),
        ("FormValidationError", ValueError),
        ("InvalidElicitationUrl", ValueError),
        ("StateTooLarge", ValueError),
        ("AnswerError", ValueError),
    ],
)
def test_builtin_bases_are_kept(name: str, builtin: type[Exception]) -> None:
    """``except ValueError`` / ``except TypeError`` still catch the classes that were those."""
    cls = defined_exception_classes()[name]
    assert issubclass(cls, builtin)
    assert issubclass(cls, MinimcpError)
    if builtin in cls.__bases__:
        assert f"also {builtin.__name__}" in drawn_tree()[name][1]


def test_the_root_is_public_and_catches_a_raised_error() -> None:
    from minimcp import FormDefinitionError, MinimcpError, ToolError, compile_form

    assert minimcp.MinimcpError is errors.MinimcpError
    assert "MinimcpError" in minimcp.__all__
    with pytest.raises(MinimcpError):
        compile_form(int)
    with pytest.raises(FormDefinitionError):
        compile_form(int)
    with pytest.raises(MinimcpError, match="try again"):
        raise ToolError("try again")
