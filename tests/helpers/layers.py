"""Shared by several test files: what tests/docs/test_layers.py sets up and others reuse."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "minimcp"


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


#: Blocked while a pure module is imported in a fresh interpreter. ``time`` is left out: the
#: interpreter has it loaded before any user code runs (the per-file check above still forbids it).
TRANSITIVE_FORBIDDEN = ("anyio", "asyncio", "trio", "socket", "threading", "subprocess")


# Run with ``python -c PROBE <package dir> <module> <blocked,...>``. The package ``__init__`` files
# are bypassed (an empty package object stands in for each), so only what the module itself pulls
# in is loaded. A finder placed first on ``sys.meta_path`` refuses the blocked names and records
# the chain of modules being imported at that moment, so a ``try: import x except ImportError``
# somewhere on the way cannot hide the attempt. The verdict is one line on stdout.
PROBE = r"""
import importlib, sys, types
package_dir, target, blocked = sys.argv[1], sys.argv[2], frozenset(sys.argv[3].split(","))
already = sorted(m for m in sys.modules if m.split(".")[0] in blocked)
if already:
    print("loaded before the probe started: " + ", ".join(already))
    raise SystemExit(2)
attempts = []

def importing_chain():
    chain, frame = [], sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            name = frame.f_globals.get("__name__")
            if name and name != "__main__" and (not chain or chain[-1] != name):
                chain.append(name)
        frame = frame.f_back
    return list(reversed(chain))

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            attempts.append(" -> ".join([*importing_chain(), name]))
            raise ImportError(f"{name} is blocked while importing a pure module")
        return None

for package in ("minimcp", "minimcp.core.transport", "minimcp.transports.http"):
    stand_in = types.ModuleType(package)
    stand_in.__path__ = [package_dir + package[len("minimcp"):].replace(".", "/")]
    sys.modules[package] = stand_in
sys.meta_path.insert(0, Refuse())
try:
    importlib.import_module(target)
except ImportError as exc:
    if not attempts:
        attempts.append(f"import failed: {exc!r}")
print("; ".join(dict.fromkeys(attempts)) or "clean")
"""


def transitive_imports(module: str, blocked: tuple[str, ...] = TRANSITIVE_FORBIDDEN) -> str:
    """Import ``module`` in a fresh interpreter with ``blocked`` refused: ``"clean"``, or the chains."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(PACKAGE), module, ",".join(blocked)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr or done.stdout
    return done.stdout.strip()

