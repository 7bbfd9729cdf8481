"""examples/demo.py, the Quick start's first command: scripted in a pipe, and answered by a person on a pty.

Both runs spawn the real booking server and use its real payment pages; each runs on
asyncio and on trio (``--backend`` sets the client's and the server's event loop).
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

from tests.helpers.cli import READ_TIMEOUT, REPO, RUN_TIMEOUT, Terminal, cli_env, posix_only

PY = sys.executable
DEMO = str(REPO / "examples" / "demo.py")


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_first_screen_tells_the_story(backend: str, tmp_path: pathlib.Path) -> None:
    """``--trace`` is one short line per message in the story; the messages in full go to a named file."""
    pytest.importorskip("httpx")  # the scripted "browser" submits the payment page
    trace_file = tmp_path / "trace.txt"
    done = subprocess.run(
        [PY, DEMO, "--trace", "--trace-file", str(trace_file), "--backend", backend],
        capture_output=True, text=True, encoding="utf-8", cwd=str(REPO), env=cli_env(),
        stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    traced = [line for line in lines if line.startswith(("   [client -> server]", "   [server -> client]"))]
    assert len(traced) > 20
    assert all(len(line) <= 100 for line in traced), max(traced, key=len)
    assert any("#1 elicitation/create form: '2025-12-25 is fully booked" in line for line in traced)
    # The first screen: the connection and the first booking, not a wall of JSON.
    first_screen = "\n".join(lines[:24])
    assert "Connected to booking 1.0.0" in first_screen and "Booked a table for 2 on 2025-12-24" in first_screen
    assert '"jsonrpc"' not in done.stdout
    # The deposit reads in order: waiting, the person pays, the server reports it, done.
    story = done.stdout
    order = [
        story.index("waiting for the server to report the payment complete"),
        story.index("[browser] the person submits the page: POST http://127.0.0.1:"),
        story.index("** the server reports step"),
        story.index("the payment is complete"),
    ]
    assert order == sorted(order), story
    assert re.search(r"Added booking [A-Za-z0-9_-]{22} on 2025-12-24 to the calendar\.", story), story
    assert lines[-1] == f"The {len(traced)} wire messages in full (--> sent, <-- received): {trace_file}"
    full = trace_file.read_text(encoding="utf-8").splitlines()
    assert len(full) == len(traced)
    assert all(line[:4] in ("--> ", "<-- ") for line in full)
    assert any(json.loads(line[4:]).get("method") == "elicitation/create" for line in full)


@posix_only
def test_a_person_declines_the_calendar_and_has_no_browser(backend: str, tmp_path: pathlib.Path) -> None:
    """Declining the calendar step ends the story cleanly; "opened" is said only when a browser was."""
    empty = tmp_path / "no-browsers"  # nothing on PATH: no console browser, no xdg-open
    empty.mkdir()
    env = cli_env(BROWSER=str(tmp_path / "no-such-browser"), PATH=str(empty))
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(name, None)
    term = Terminal([], env, argv=[PY, DEMO, "--backend", backend])
    try:
        term.answer("[a]nswer, [d]ecline, [c]ancel? ", "a\r")
        term.answer("Try another date? [y/n]: ", "y\r")
        term.answer("Alternative date (YYYY-MM-DD) [2025-12-26]: ", "\r")
        term.answer("[a]nswer, [d]ecline, [c]ancel? ", "d\r")  # 2025-12-27, full again
        shown = term.expect("open it in your browser? [y]es, [n]o, [c]ancel: ")
        deposit = re.findall(r"full URL: (\S+/deposit/\S+)", shown)[-1]
        term.type("y\r")
        shown = term.expect("waiting for the server to report the payment complete")
        assert "could not start a browser: open the URL above yourself" in shown and "(opened" not in shown
        pay(deposit)  # the person opens the URL by hand and pays
        assert "the payment is complete" in term.expect("booking_status")
        term.answer("open it in your browser? [y]es, [n]o, [c]ancel: ", "n\r")  # the calendar step
        status, rest = term.finish()
    finally:
        term.close()
    assert status == 0, term.seen
    assert "Traceback" not in term.seen
    assert "<- add_to_calendar: not added; the server still needs:" in rest
    assert "Done: the server was shut down and nothing is left pending." in rest


def pay(url: str) -> Any:
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=READ_TIMEOUT) as response:
        return response.read()
