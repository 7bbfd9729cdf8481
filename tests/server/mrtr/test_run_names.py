"""A run's names (handle, call id) come from batches drawn at once: unique, unguessable, never shared across a fork."""

from __future__ import annotations

import os

import pytest

from minimcp.server.mrtr import run as run_names
from minimcp.server.mrtr.parking import Parking
from minimcp.server.mrtr.run import Run
from tests.helpers import counted_urandom


def test_runs_draw_their_names_in_batches_and_never_share_one(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = counted_urandom(monkeypatch)
    parking = Parking(10)
    runs = [Run("t", [], None, None, parking) for _ in range(1000)]
    runs += [Run("t", [], "given", None, parking) for _ in range(1000)]
    names = [r.handle for r in runs] + [r.call_id for r in runs[:1000]]
    assert len(set(names)) == 3000 and all(len(n) == 16 and "=" not in n for n in names)
    assert {r.call_id for r in runs[1000:]} == {"given"}
    assert drawn[0] <= 3000 // run_names.NAMES_PER_DRAW + 1  # one read per batch, not one per run


# Python 3.12+ warns on any fork() while this process runs other tests' leftover threads; the child
# below takes no lock such a thread could hold (os.urandom, a list, a pipe, os._exit).
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_worker_draws_its_own_names() -> None:
    if not run_names.NAMES:
        run_names.NAMES.append(run_names.more_names())
    parents_next = run_names.NAMES[-1]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(write, Run("t", [], None, None, Parking(1)).handle.encode())
        finally:
            os._exit(0)
    os.close(write)
    childs = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(childs) == 16 and childs != parents_next and run_names.NAMES[-1] == parents_next
