"""Instructions per in-memory round trip, 2026-07-28 beside the handshake era (valgrind, noise-free).

Counts the whole process (raw client + server, asyncio, C = 100) running
``bench_modern.server_round_trips`` once with 200 calls and once with 1,200; the
difference over 1,000 is one round trip. Needs valgrind (``apt-get install valgrind``).

    python benchmarks/tools/instr_modern.py [TREE ...]   # default: this checkout

Figures are printed, never asserted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile


def count(tree: str, era: str, calls: int, fn: str = "bench_modern.server_round_trips", here: str = "") -> int:
    """Instructions valgrind counts for ``calls`` round trips of ``era`` on the code in ``tree`` (``fn``: the
    benchmark's function, module.name, found in ``tree``'s benchmarks or in ``here``)."""
    module = fn.split(".")[0]
    code = (
        f"import sys; sys.path[:0] = [{tree!r}, {tree + '/benchmarks'!r}, {here!r}]; import asyncio, {module}; "
        f"asyncio.run({fn}({era!r}, {calls}, 100))"
    )
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
             f"--log-file={log.name}", sys.executable, "-c", code],
            check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=tree),
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", log.read().decode())
    assert found, "valgrind printed no instruction count"
    return int(found.group(1).replace(",", ""))


def main() -> None:
    for tree in sys.argv[1:] or [os.getcwd()]:
        per = {era: (count(tree, era, 1200) - count(tree, era, 200)) / 1000 for era in ("modern", "legacy")}
        print(f"{tree}: 2026-07-28 {per['modern']:,.0f}, handshake era {per['legacy']:,.0f} instructions "
              f"per round trip; ratio {per['legacy'] / per['modern']:.3f}")


if __name__ == "__main__":
    main()
