"""The backend rule: only the backend modules import asyncio or trio, ask for the running loop or touch it.

Everything else is anyio code. A session and the parked runs of revision 2026-07-28 use the loop
through ``core/_backend.py``'s helpers (``running_backend``, ``call_at``, ``loop_clock``, ``loop_closed``,
``loop_of``, ``one_shot``, and a cell's ``resolve_raw`` and ``is_future``), so what depends on
asyncio's or trio's internals can be read, and changed, in one place.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import minimcp

PACKAGE = pathlib.Path(minimcp.__file__).resolve().parent
ALL_MODULES = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py"))

#: The modules that may: the backend itself, the asyncio-only stdio transport, and the uvicorn guard.
BACKEND_MODULES = {
    "core/_backend.py", "transports/_backend_io.py", "transports/_stdio_asyncio.py", "transports/_uvicorn_guard.py"
}

#: Others that still do, with what they do. Each is to go behind ``core/_backend.py``.
LISTED = {
    # The "wire" engineer's: the HTTP response's wait picks its backend's way (asyncio: a future of its
    # own, relayed by core/_backend.relayed_wait; trio: a native cancel scope), once per response.
    "transports/http/_response.py": ["running_loop"],
}

#: Methods only an event loop has, wherever they are called (bar ``_backend``'s helpers of the same name) ...
LOOP_METHODS = {"call_at", "call_later", "call_soon", "call_soon_threadsafe", "create_future", "run_in_executor"}
#: ... and methods that are the loop's when called on a name that says ``loop``.
ON_A_LOOP = {"add_reader", "add_writer", "create_task", "is_closed", "is_running", "remove_reader", "time"}
BACKENDS = {"asyncio", "trio", "sniffio"}


def backend_uses(source: str) -> list[str]:
    """What in ``source`` imports a backend, asks for the running loop, or calls the loop's methods."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(source)):
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.Import):
            found += [(*where, f"import {a.name}") for a in node.names if a.name.split(".")[0] in BACKENDS]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in BACKENDS:
            found.append((*where, f"from {node.module}"))
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("running_loop", "get_running_loop", "get_event_loop", "_get_running_loop"):
                found.append((*where, name))
        elif isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if (node.attr in LOOP_METHODS and owner != "_backend") or (
                node.attr in ON_A_LOOP and "loop" in owner.lower()
            ):
                found.append((*where, f"{owner}.{node.attr}"))
    return [text for _, _, text in sorted(found)]


def test_the_checker_sees_each_kind_of_use() -> None:
    source = (
        "import asyncio\nfrom trio import lowlevel\nimport anyio\n"
        "loop = running_loop()\nf = loop.create_future()\nh = self._loop.call_at(1, g)\n"
        "t = self.loop.time()\nnow = time.time()\nx.is_closed()\n_backend.call_at(loop, 1, g)\n"
    )
    assert backend_uses(source) == [
        "import asyncio",
        "from trio",
        "running_loop",
        "loop.create_future",
        "self._loop.call_at",
        "self.loop.time",
    ]


@pytest.mark.parametrize("filename", sorted(set(ALL_MODULES) - BACKEND_MODULES))
def test_only_the_backend_modules_touch_the_event_loop(filename: str) -> None:
    assert backend_uses((PACKAGE / filename).read_text()) == LISTED.get(filename, [])


def test_the_backend_modules_are_where_the_rule_says() -> None:
    assert BACKEND_MODULES | set(LISTED) <= set(ALL_MODULES)
    assert "import asyncio" in backend_uses((PACKAGE / "core/_backend.py").read_text())
