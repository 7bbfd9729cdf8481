"""The command-line client (``python -m minimcp``): typed at through a pseudo-terminal, and run with pipes.

The pseudo-terminal tests run the real program on a pty (stdin, stdout and stderr), wait
for each question to appear and type the answer, as a person would. Every read has a
deadline and every process is killed at teardown, so no test can hang. Terminal tests
run on both event loops (``--backend``); the in-process tests of the question handlers
run on both through the anyio plugin.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import select
import shlex
import signal
import subprocess
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Cancelled, Declined
from minimcp.cli.args import CliError, parse_arguments, parse_pairs, parse_target
from minimcp.cli.questions import OMIT, AnswerError, Questions, Scripted, describe_url, parse_field_answer
from minimcp.cli.render import format_progress, format_trace
from minimcp.cli.terminal import Console, LineReader, Style
from minimcp.client.answers import ElicitationRequest, UrlElicitationRequest
from minimcp.forms import parse_schema
from minimcp.wire.types import ProgressParams, Tool
from minimcp.wire.urls import inspect_url
from tests.helpers.cli import PY, READ_TIMEOUT, REPO, RUN_TIMEOUT, Terminal, cli_env, posix_only

BOOKING = f"{shlex.quote(PY)} {shlex.quote(str(REPO / 'examples' / 'booking.py'))}"
HELLO = f"{shlex.quote(PY)} {shlex.quote(str(REPO / 'examples' / 'hello_server.py'))}"
OFFICIAL = f"{shlex.quote(PY)} {shlex.quote(str(REPO / 'tests' / 'peers' / 'official_server.py'))}"


# A server for the tests: progress, logs, every kind of form field, a look-alike URL, a withdrawn question.
PEER_SOURCE = '''
import json
import anyio
from minimcp import Accepted, Context, Declined, Server, ToolError

app = Server("cli-peer", "0.1.0")

SURVEY = {
    "type": "object",
    "properties": {
        "cuisine": {"type": "string", "title": "Cuisine", "default": "fr", "oneOf": [
            {"const": "it", "title": "Italian"}, {"const": "fr", "title": "French"},
            {"const": "jp", "title": "Japanese"}]},
        "extras": {"type": "array", "title": "Extras", "minItems": 1, "maxItems": 2, "default": ["coffee"],
                   "items": {"type": "string", "enum": ["wine", "dessert", "coffee"]}},
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 8},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "outside": {"type": "boolean", "title": "Sit outside?", "default": False},
    },
    "required": ["cuisine", "guests", "email"],
}


@app.tool()
async def slow(ctx: Context, steps: int = 4) -> str:
    """Reports progress and logs each step."""
    for i in range(1, steps + 1):
        await ctx.log("info", f"step {i} of {steps}", logger="peer")
        await anyio.sleep(0.06)
        await ctx.report_progress(i, steps, f"step {i}")
    return "finished"


@app.tool()
async def survey(ctx: Context) -> str:
    """Asks a form with every kind of field."""
    answer = await ctx.elicit("A few questions about your dinner.", SURVEY)
    if isinstance(answer, Accepted):
        return "answers " + json.dumps(answer.value, sort_keys=True)
    return "declined" if isinstance(answer, Declined) else "cancelled"


@app.tool()
async def visit(ctx: Context) -> str:
    """Asks to open a look-alike URL."""
    answer = await ctx.elicit_url("Sign in to continue.", "https://xn--pple-43d.com/login?next=1")
    return "visit " + type(answer).__name__.lower()


@app.tool()
async def hurry(ctx: Context) -> str:
    """Asks a question, then withdraws it after half a second."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit("Quick: yes?", schema, timeout=0.5)
    return "hurry " + type(answer).__name__.lower()


@app.tool()
async def fail() -> str:
    """Always a tool error."""
    raise ToolError("this tool always fails")


if __name__ == "__main__":
    import sys
    app.run(backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
'''

# Floods stderr when it shuts down; a SIGINT leaves a mark in a file instead of stopping it.
NOISY_SOURCE = '''
import signal, sys
from minimcp import Context, Server

app = Server("noisy", "0.1.0")


@app.tool()
async def ask(ctx: Context) -> str:
    """Asks one yes/no question."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit("Go on?", schema)
    return "ask " + type(answer).__name__.lower()


if __name__ == "__main__":
    marker = sys.argv[2]
    signal.signal(signal.SIGINT, lambda *_: open(marker, "w").write("the server got SIGINT"))
    print("noisy server ready", file=sys.stderr, flush=True)
    app.run(backend=sys.argv[1])
    for i in range(200):
        print(f"shutdown noise {i}", file=sys.stderr)
'''

# Serves the booking server over Streamable HTTP or WebSocket; prints the port.
NETWORK_SOURCE = '''
import sys
import anyio
sys.path.insert(0, sys.argv[2])
import booking


async def main(kind: str) -> None:
    app = booking.build_server()
    async with anyio.create_task_group() as tg:
        if kind == "http":
            from minimcp import serve_http
            port = await tg.start(serve_http, app)
        else:
            from minimcp import serve_websocket
            port = await tg.start(serve_websocket, app)
        print(port, flush=True)

anyio.run(main, sys.argv[1])
'''

# A stand-in browser: submits the page's form (POST), like a person pressing its button.
BROWSER_SOURCE = '''
import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b"", method="POST"), timeout=10).read()
'''




def run_cli(*args: str, stdin: str | None = None, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run ``python -m minimcp ARGS`` with pipes (no terminal)."""
    return subprocess.run(
        [PY, "-m", "minimcp", *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=str(REPO),
        env=cli_env(),
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def peer_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("peer") / "cli_peer.py"
    path.write_text(PEER_SOURCE)
    return str(path)


@pytest.fixture(scope="module")
def peer(peer_file: str) -> str:
    return f"{shlex.quote(PY)} {shlex.quote(peer_file)}"


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A server whose shutdown floods stderr, and which records a SIGINT in the file named by its 2nd argument."""
    path = tmp_path_factory.mktemp("noisy") / "noisy_peer.py"
    path.write_text(NOISY_SOURCE)
    return f"{shlex.quote(PY)} {shlex.quote(str(path))}"


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# --- the pseudo-terminal ------------------------------------------------------------------------------------






@pytest.fixture
def terminal() -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(*args: str, argv: list[str] | None = None, **env: str) -> Terminal:
        term = Terminal(list(args), cli_env(**env), argv)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


MENU = "[a]nswer, [d]ecline or [c]ancel? (enter = answer) "
TRY_ANOTHER = "Try another date? [y/n]: "
ALTERNATIVE = "Alternative date (YYYY-MM-DD) (date, optional)"


@posix_only
def test_pty_accept_takes_the_default_date(terminal: Any, backend: str) -> None:
    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--backend", backend)
    shown = term.expect(MENU)
    assert "2025-12-25 is fully booked" in shown
    term.type("\r")  # enter: answer the form
    term.answer(TRY_ANOTHER, "y\r")
    term.answer(ALTERNATIVE, "\r")  # enter: take the default (prefilled) date
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "Booked a table for 2 on 2025-12-26" in rest


@posix_only
def test_pty_decline_key(terminal: Any, backend: str) -> None:
    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--backend", backend)
    term.answer(MENU, "d\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "declined" in rest
    assert "Not booked: the person declined (2025-12-25)." in rest


@posix_only
def test_pty_cancel_key(terminal: Any, backend: str) -> None:
    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--backend", backend)
    term.answer(MENU, "c\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "Not booked: the question was cancelled" in rest


@posix_only
def test_pty_cancel_key_inside_the_form(terminal: Any) -> None:
    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2")
    term.answer(MENU, "\r")
    term.answer(TRY_ANOTHER, "!c\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "Not booked: the question was cancelled" in rest


@posix_only
def test_pty_invalid_answers_are_asked_again(terminal: Any) -> None:
    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--backend", "trio")
    term.answer(MENU, "\r")
    term.answer(TRY_ANOTHER, "maybe\r")
    assert "answer y (yes) or n (no)" in term.expect(TRY_ANOTHER)
    term.type("y\r")
    term.expect(ALTERNATIVE)
    term.type("\x152025-13-45\r")  # ctrl-U clears the prefilled default, then a date that does not exist
    assert "expected a date YYYY-MM-DD" in term.expect(ALTERNATIVE)
    term.type("\x152025-12-28\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "Booked a table for 2 on 2025-12-28" in rest


@posix_only
def test_pty_every_field_kind(terminal: Any, peer: str) -> None:
    term = terminal("call", peer, "survey")
    term.answer(MENU, "\r")
    shown = term.expect("number [2]: ")  # French is the default
    assert "1) Italian (it)" in shown and "2) French (fr) *" in shown
    term.type("3\r")
    shown = term.expect("[3]: ")
    assert "3) [x] coffee" in shown
    term.type("1,2,3\r")  # at most two
    assert "expected at most 2 selections" in term.expect("[3]: ")
    term.type("wine dessert\r")
    term.answer("Guests (whole number, 1..8, required): ", "9\r")
    assert "expected a value <= 8" in term.expect("Guests (whole number, 1..8, required): ")
    term.type("4\r")
    term.answer("Email (email, required): ", "not-an-email\r")
    assert "expected an email address" in term.expect("Email (email, required): ")
    term.type("ada@example.org\r")
    term.answer("Sit outside? [y/N]: ", "\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    expected = {"cuisine": "jp", "email": "ada@example.org", "extras": ["wine", "dessert"], "guests": 4,
                "outside": False}  # fmt: skip
    assert "answers " + json.dumps(expected, sort_keys=True) in rest


@posix_only
def test_pty_url_consent_shows_the_host_and_warns(terminal: Any, peer: str) -> None:
    term = terminal("call", peer, "visit")
    shown = term.expect("Open it in your browser? [y]es, [n]o (decline), [c]ancel: ")
    assert "https://xn--pple-43d.com/login?next=1" in shown  # the full URL
    assert "^^^^^^^^^^^^^^^^ host" in shown  # the host marked under it
    assert "host: \u0430pple.com  (sent as xn--pple-43d.com)" in shown  # decoded: a Cyrillic a (U+0430)
    assert "punycode" in shown and "mixes alphabets" in shown
    term.type("n\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "visit declined" in rest


@posix_only
def test_pty_url_consent_opens_the_browser(terminal: Any, tmp_path: pathlib.Path) -> None:
    browser = tmp_path / "browser.py"
    browser.write_text(BROWSER_SOURCE)
    fake_browser = f"{shlex.quote(PY)} {shlex.quote(str(browser))} %s"
    term = terminal("call", BOOKING, "book_table", "date=2025-12-24", "party_size=8", BROWSER=fake_browser)
    shown = term.expect("Open it in your browser? [y]es, [n]o (decline), [c]ancel: ")
    assert "/deposit/" in shown and "host: 127.0.0.1" in shown and "not https" in shown
    term.type("y\r")
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "Booked a table for 8 on 2025-12-24" in rest and "the deposit is paid" in rest


@posix_only
def test_pty_withdrawn_question_and_the_terminal_is_restored(terminal: Any, peer: str, backend: str) -> None:
    import termios

    term = terminal("call", peer, "hurry", "--backend", backend)
    before = termios.tcgetattr(term.slave)
    term.answer(MENU, "\r")
    term.expect("ok [y/n]: ")  # nobody answers: the server withdraws the question after 0.5 s
    status, rest = term.finish()
    assert status == 0, term.seen
    assert "closed before you answered" in rest
    assert "hurry cancelled" in rest
    # readline was still reading when the program ended: the terminal modes are back as they were.
    after = termios.tcgetattr(term.master)
    assert after[3] & (termios.ICANON | termios.ECHO) == before[3] & (termios.ICANON | termios.ECHO)


@posix_only
def test_pty_interrupt_restores_the_terminal(terminal: Any) -> None:
    import termios

    term = terminal("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2")
    before = termios.tcgetattr(term.slave)
    term.expect(MENU)
    time.sleep(0.2)  # readline has the terminal now
    term.proc.send_signal(signal.SIGINT)
    status, rest = term.finish()
    assert status == 130, term.seen
    assert "interrupted" in rest
    after = termios.tcgetattr(term.master)
    assert after[3] & (termios.ICANON | termios.ECHO) == before[3] & (termios.ICANON | termios.ECHO)


def _said(text: str) -> list[str]:
    """The non-empty lines of ``text``."""
    return [line for line in text.splitlines() if line.strip()]


@posix_only
def test_pty_ctrl_c_at_a_question_ends_the_client_in_one_line(
    terminal: Any, noisy: str, backend: str, tmp_path: pathlib.Path
) -> None:
    marker = tmp_path / "sigint"
    term = terminal("call", f"{noisy} {backend} {shlex.quote(str(marker))}", "ask", "--backend", backend)
    term.expect(MENU)
    term.ctrl_c()
    status, rest = term.finish()
    assert status == 130, term.seen
    assert "noisy server ready" in term.seen  # the server's stderr is shown while it runs
    # No traceback from either side, no note about the question, none of the server's shutdown noise.
    assert _said(rest) == ["minimcp: interrupted while calling ask on noisy, with noisy's question open"], term.seen
    assert not marker.exists(), "the server got the terminal's SIGINT: the client alone must shut it down"


@posix_only
def test_pty_ctrl_c_at_the_connect_prompt(terminal: Any, backend: str) -> None:
    term = terminal("connect", HELLO, "--backend", backend)
    term.expect("minimcp> ")
    term.ctrl_c()
    status, rest = term.finish()
    assert status == 130, term.seen
    assert _said(rest) == ["minimcp: interrupted while in the connect session with hello"], term.seen


@posix_only
def test_pty_ctrl_c_stops_a_stdio_server_in_one_line(terminal: Any, peer_file: str, backend: str) -> None:
    """``Server.run()`` started in a terminal: one ctrl-C, one line, status 130 (no hang, no exception group)."""
    term = terminal(argv=[PY, peer_file, backend])
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "person", "version": "1"}}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    term.type(json.dumps(initialize) + "\r")
    term.expect('"serverInfo"')  # the server is up and answering on the terminal
    term.expect("\n")
    term.ctrl_c()
    status, rest = term.finish(timeout=READ_TIMEOUT)
    assert status == 130, term.seen
    assert _said(rest.replace("^C", "")) == ["interrupted (ctrl-C): server cli-peer stopped"], term.seen


@posix_only
def test_pty_ctrl_d_at_a_field_cancels_that_question_only(terminal: Any, backend: str) -> None:
    term = terminal("connect", BOOKING, "--backend", backend)
    term.type("call book_table date=2025-12-25 party_size=2\r")
    term.answer(MENU, "\r")
    term.expect(TRY_ANOTHER)
    term.ctrl_d()
    assert "Not booked: the question was cancelled" in term.expect("minimcp> ")
    term.type("ping\r")  # the session goes on: the next read waits for the person again
    assert "pong" in term.expect("minimcp> ")
    term.ctrl_d()  # at the prompt: leave
    status, _ = term.finish()
    assert status == 0, term.seen


@posix_only
def test_pty_connect_session(terminal: Any) -> None:
    term = terminal("connect", BOOKING)
    shown = term.expect("minimcp> ")
    assert "Connected to booking 1.0.0" in shown and "Tools (4):" in shown
    term.type("call book_table date=2025-12-25 party_size=2\r")
    term.answer(MENU, "\r")
    term.answer(TRY_ANOTHER, "y\r")
    term.answer(ALTERNATIVE, "\r")
    booked = re.search(r"Booked a table for 2 on 2025-12-26 \(booking ([A-Za-z0-9_-]{22})\)", term.expect("minimcp> "))
    assert booked is not None, term.seen
    booking_id = booked.group(1)
    term.type(f"booking_status booking_id={booking_id}\r")  # a tool name works without "call"
    assert f"Booking {booking_id}: booked, 2 people on 2025-12-26." in term.expect("minimcp> ")
    term.type("call nope\r")
    assert "Unknown tool: nope" in term.expect("minimcp> ")
    term.type("help\r")
    assert "call TOOL key=value" in term.expect("minimcp> ")
    term.type("quit\r")
    status, _ = term.finish()
    assert status == 0, term.seen


# --- with pipes (no terminal) ----------------------------------------------------------------------------------


def test_tools_lists_the_four_booking_tools() -> None:
    done = run_cli("tools", BOOKING)
    assert done.returncode == 0, done.stderr
    names = [line.split("(", 1)[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert names == ["book_table", "confirm_deposit", "add_to_calendar", "booking_status"]
    assert "book_table(date: string<date>, party_size: integer[1..20])" in done.stdout


def test_call_with_a_bad_argument_exits_1_naming_it() -> None:
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-24", "party_size=99")
    assert done.returncode == 1, done.stderr
    assert "party_size" in done.stdout
    assert "error result" in done.stderr


def test_call_prints_the_result_and_exits_0() -> None:
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-24", "--json", '{"party_size": 2}')
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"Booked a table for 2 on 2025-12-24 \(booking [A-Za-z0-9_-]{22}\)\.", done.stdout.strip())


def test_call_draws_its_session_with_diagram(tmp_path: pathlib.Path) -> None:
    """``call ... --diagram FILE``: the page of the session, the question nested in the call."""
    page = tmp_path / "call.html"
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2",
                   "--answers", '{"accept_alternative": true}', "--diagram", str(page))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"is in {page}" in done.stderr
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "elicitation/create" in html
    assert re.search(r"inside tools/call #\d+", html)  # the question is drawn inside the call that asked it
    text = run_cli("call", BOOKING, "booking_status", "booking_id=nope", "--diagram", "-")
    assert text.returncode == 1  # an unknown booking is a tool error; the diagram is drawn all the same
    assert re.search(r"tools/call #\d+ booking_status", text.stderr) and "tool error" in text.stderr


def test_call_output_json() -> None:
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-24", "party_size=3", "-o", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"]["status"] == "booked"
    assert result["structuredContent"]["party_size"] == 3


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/nonexistent/minimcp-server", "cannot start the server command"),
        (f"{shlex.quote(PY)} -c pass", "the connection closed"),
        ("http://127.0.0.1:1/mcp", "cannot connect to http://127.0.0.1:1/mcp"),
        ("ws://127.0.0.1:1/mcp", "cannot connect to ws://127.0.0.1:1/mcp"),
        ("'unbalanced", "cannot split the server command"),
    ],
)
def test_a_bad_target_exits_2(target: str, message: str) -> None:
    done = run_cli("tools", target)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_help_shows_the_shared_text_once() -> None:
    top = run_cli("--help")
    assert top.returncode == 0
    assert top.stdout.count("examples:") == 1 and "questions from the server" in top.stdout
    assert "--trace-pretty" in top.stdout and "print every wire message" in top.stdout
    for command in ("tools", "call", "connect"):
        done = run_cli(command, "--help")
        assert done.returncode == 0, done.stderr
        # The command's own arguments, and one pointer to the shared text: not a copy of it.
        assert "TARGET" in done.stdout and "-m minimcp --help" in done.stdout
        assert "questions from the server" not in done.stdout and "print every wire message" not in done.stdout
        assert len(done.stdout.splitlines()) < 35, done.stdout
    assert "--json OBJECT" in run_cli("call", "--help").stdout
    done = run_cli("call", HELLO, "add", "a=1", "b=2", "--trace")  # common options still work after the command
    assert done.returncode == 0 and "tools/call" in done.stderr


def test_help_examples_name_the_running_interpreter(tmp_path: pathlib.Path) -> None:
    """A bare ``python`` is another interpreter when the virtual environment is not active."""
    elsewhere = tmp_path / "bin"  # a PATH whose python is not this one
    elsewhere.mkdir()
    (elsewhere / "python").symlink_to("/bin/false")
    env = cli_env(PATH=f"{elsewhere}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([PY, "-m", "minimcp", "--help"], capture_output=True, text=True, cwd=str(REPO), env=env,
                          stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)  # fmt: skip
    relative = os.path.relpath(PY, REPO)
    shown = shlex.quote(PY if relative.startswith("..") else relative)
    assert f'{shown} -m minimcp tools "{shown} examples/booking.py"' in done.stdout, done.stdout
    assert "a bare 'python' here is another one" in done.stdout
    env = cli_env(PATH=f"{os.path.dirname(PY)}{os.pathsep}{os.environ.get('PATH', '')}")  # as when it is active
    done = subprocess.run([PY, "-m", "minimcp", "--help"], capture_output=True, text=True, cwd=str(REPO), env=env,
                          stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)  # fmt: skip
    assert 'python -m minimcp tools "python examples/booking.py"' in done.stdout, done.stdout
    assert "a bare 'python'" not in done.stdout


# What ``pip install -e`` adds: a finder asked only after sys.path, whose first entry is the current directory.
EDITABLE_SOURCE = '''
import importlib.machinery, importlib.util, runpy, sys
PACKAGE = sys.argv[1]
class Editable:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "minimcp":
            return importlib.util.spec_from_file_location(name, PACKAGE + "/__init__.py")
        if name.startswith("minimcp."):
            return importlib.machinery.PathFinder.find_spec(name, [PACKAGE])
        return None
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()] + [Editable]
sys.argv = ["minimcp", "--help"]
runpy.run_module("minimcp", run_name="__main__", alter_sys=True)
'''


def test_a_clone_named_minimcp_in_the_current_directory_is_explained(tmp_path: pathlib.Path) -> None:
    (tmp_path / "minimcp" / "minimcp").mkdir(parents=True)  # a clone: the repository holds the package
    (tmp_path / "minimcp" / "README.md").write_text("# minimcp\n")
    env = cli_env()
    env.pop("PYTHONPATH")
    done = subprocess.run([PY, "-c", EDITABLE_SOURCE, str(REPO / "minimcp")], capture_output=True, text=True,
                          cwd=str(tmp_path), env=env, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT,
                          check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "ImportError" not in done.stderr
    assert f"'import minimcp' found the directory {tmp_path / 'minimcp'}, not the minimcp package" in done.stderr
    assert "Run it from another directory" in done.stderr


def test_usage_errors_exit_2() -> None:
    assert run_cli().returncode == 2
    done = run_cli("call", HELLO, "greet", "name")
    assert done.returncode == 2 and "is not key=value" in done.stderr
    done = run_cli("call", HELLO, "greet", "--json", "[1]")
    assert done.returncode == 2 and "must be a JSON object" in done.stderr
    done = run_cli("call", HELLO, "greet", "--answers", "nope")
    assert done.returncode == 2 and "--answers is not valid JSON" in done.stderr


def test_an_unknown_tool_exits_2_listing_the_tools() -> None:
    done = run_cli("call", HELLO, "nope")
    assert done.returncode == 2
    assert "Unknown tool: nope" in done.stderr and "greet, add" in done.stderr


def test_values_are_json_unless_the_schema_wants_a_string() -> None:
    done = run_cli("call", HELLO, "greet", "name=42")  # greet's name is a string: "42", not 42
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello, 42!"
    done = run_cli("call", HELLO, "add", "a=1.5", "b=2")
    assert done.stdout.strip() == "3.5"


def test_trace_shows_the_nested_question_on_stderr() -> None:
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--trace")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    asks = [line for line in lines if '"method":"elicitation/create"' in line]
    assert len(asks) == 1 and asks[0].startswith(("←", "<-"))
    assert any(line.startswith(("→", "->")) and '"action":"decline"' in line for line in lines)
    assert "elicitation/create" not in done.stdout  # results only on stdout


def test_trace_pretty() -> None:
    done = run_cli("--trace-pretty", "tools", HELLO)
    assert done.returncode == 0, done.stderr
    assert "request 1 initialize" in done.stderr
    assert '    "method": "initialize",' in done.stderr


def test_without_a_terminal_questions_are_declined_with_a_note() -> None:
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2")
    assert done.returncode == 0, done.stderr
    assert "Not booked: the person declined" in done.stdout
    assert "? booking asks: 2025-12-25 is fully booked" in done.stderr
    assert "declined: stdin is not a terminal" in done.stderr and "--answers" in done.stderr


def test_answers_flag() -> None:
    answers = json.dumps({"accept_alternative": True, "date": "2025-12-28"})
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", answers)
    assert done.returncode == 0, done.stderr
    assert "Booked a table for 2 on 2025-12-28" in done.stdout


def test_answers_the_form_refuses_fail_the_run() -> None:
    """Never a decline and status 0: the question is cancelled, the reason named, the status 2."""
    answers = json.dumps({"accept_alternative": True, "date": "someday"})
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", answers)
    assert done.returncode == 2, done.stderr
    assert "Not booked: the question was cancelled" in done.stdout
    assert "error: the form refuses what --answers gives: field 'date': expected a date" in done.stderr
    assert done.stderr.rstrip().endswith("minimcp: error: the flags could not answer 1 question (see above): cancelled")


def test_answers_with_a_key_that_is_not_a_field_fail_the_run() -> None:
    """A misspelled key is not dropped (the field would silently take its default): it names the fields."""
    answers = json.dumps({"accept_alternative": True, "dat": "2025-12-28"})
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", answers)
    assert done.returncode == 2, done.stderr
    assert "Booked" not in done.stdout
    assert "--answers names 'dat', which is not a field of this form; its fields: accept_alternative, date" in (
        done.stderr
    )


def test_answers_one_object_per_question(peer: str) -> None:
    answers = json.dumps([{"accept_alternative": True, "date": "2025-12-28"}])
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", answers)
    assert done.returncode == 0, done.stderr
    assert "Booked a table for 2 on 2025-12-28" in done.stdout
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", "[]")
    assert done.returncode == 2 and "--answers lists 0 objects, one per question, and this is question 1" in done.stderr
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--answers", "[1]")
    assert done.returncode == 2 and "or a list of them, one per question" in done.stderr


def test_question_summaries_list_the_options(peer: str) -> None:
    """Without a terminal, the summary gives what --answers needs: each field, and a select's values."""
    done = run_cli("call", peer, "survey")
    assert done.returncode == 0, done.stderr
    assert '  - cuisine (choose one, required, default "fr"): Cuisine' in done.stderr
    assert '      options: "it" (Italian), "fr" (French), "jp" (Japanese)' in done.stderr
    assert '      options: "wine", "dessert", "coffee"' in done.stderr


def test_the_servers_shutdown_output_is_bounded(noisy: str, tmp_path: pathlib.Path) -> None:
    from minimcp.cli.server_stderr import SHUTDOWN_LINES

    target = f"{noisy} asyncio {shlex.quote(str(tmp_path / 'sigint'))}"
    done = run_cli("call", target, "ask", "--answers", '{"ok": true}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ask accepted"
    assert "noisy server ready" in done.stderr  # while the session runs, everything is passed on
    shown = [line for line in done.stderr.splitlines() if line.startswith("shutdown noise")]
    assert shown == [f"shutdown noise {i}" for i in range(SHUTDOWN_LINES)]
    assert f"(the server wrote {200 - SHUTDOWN_LINES} more lines to stderr while shutting down; -v shows them)" in (
        done.stderr
    )
    done = run_cli("call", target, "ask", "--answers", '{"ok": true}', "-v")
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.startswith("shutdown noise")]) == 200


def test_accept_defaults(peer: str) -> None:
    # booking's accept_alternative has no default: defaults alone cannot answer; cancelled, and the run fails
    done = run_cli("call", BOOKING, "book_table", "date=2025-12-25", "party_size=2", "--accept-defaults")
    assert done.returncode == 2
    assert "Not booked: the question was cancelled" in done.stdout
    assert "the form refuses what --accept-defaults gives: field 'accept_alternative': a value is required" in (
        done.stderr
    )
    done = run_cli("call", peer, "survey", "--accept-defaults", "--answers", '{"guests": 2, "email": "a@b.co"}')
    assert done.returncode == 0, done.stderr
    expected = {"cuisine": "fr", "email": "a@b.co", "extras": ["coffee"], "guests": 2, "outside": False}
    assert done.stdout.strip() == "answers " + json.dumps(expected, sort_keys=True)


def test_url_requests_without_a_terminal(peer: str) -> None:
    done = run_cli("call", peer, "visit")
    assert done.stdout.strip() == "visit declined"
    assert "https://xn--pple-43d.com/login?next=1" in done.stderr and "WARNING" in done.stderr
    done = run_cli("call", peer, "visit", "--accept-urls")
    assert done.stdout.strip() == "visit accepted"


def test_progress_and_logs_go_to_stderr(peer: str) -> None:
    done = run_cli("call", peer, "slow")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "finished"
    assert "[##########..........]  50% step 2" in done.stderr
    assert "[####################] 100% step 4" in done.stderr
    assert "[server info peer] step 3 of 4" in done.stderr
    done = run_cli("call", peer, "slow", "steps=2", "--log-level", "warning")  # logging/setLevel: no info logs
    assert done.returncode == 0, done.stderr
    assert "[####################] 100% step 2" in done.stderr and "[server info" not in done.stderr


def test_the_entry_point() -> None:
    """``minimcp.__main__:main`` (the installed ``minimcp`` command) returns the exit status."""
    code = f"import sys; from minimcp.__main__ import main; sys.exit(main(['call', {HELLO!r}, 'nope']))"
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=str(REPO), env=cli_env(),
                          stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)  # fmt: skip
    assert done.returncode == 2 and "Unknown tool: nope" in done.stderr
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("minimcp ")


def test_a_tool_error_result_exits_1(peer: str) -> None:
    done = run_cli("call", peer, "fail")
    assert done.returncode == 1
    assert done.stdout.strip() == "this tool always fails"


def test_connect_reads_commands_from_a_pipe() -> None:
    script = "tools\ncall add a=2 b=3\nadd a=1.5 b=1\ngreet name=Ada\nbogus\nquit\ngreet name=never\n"
    done = run_cli("connect", HELLO, stdin=script)
    assert done.returncode == 0, done.stderr
    assert "Connected to hello 1.0.0 over stdio" in done.stdout
    lines = done.stdout.splitlines()
    assert "5" in lines and "2.5" in lines and "Hello, Ada!" in lines
    assert "Hello, never!" not in done.stdout
    assert "unknown command 'bogus'" in done.stderr


def test_connect_ends_with_2_when_the_server_goes_away() -> None:
    # The server dies once the handshake is over (not after a fixed time: on a busy machine a timer
    # could fire during initialize, which the CLI reports differently).
    dying_script = (
        "import os, runpy, threading\n"
        "import minimcp.server.server as s\n"
        "plain = s.ServerConnection.handle_notification\n"
        "def handle(self, session, note):\n"
        "    plain(self, session, note)\n"
        "    if note.method == 'notifications/initialized':\n"
        "        threading.Timer(0.3, lambda: os._exit(0)).start()\n"
        "s.ServerConnection.handle_notification = handle\n"
        f"runpy.run_path({str(REPO / 'examples' / 'hello_server.py')!r}, run_name='__main__')\n"
    )
    dying = f"{shlex.quote(PY)} -c {shlex.quote(dying_script)}"
    proc = subprocess.Popen(
        [PY, "-m", "minimcp", "connect", dying],
        stdin=subprocess.PIPE,  # kept open: the session waits for a command when the server exits
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(REPO),
        env=cli_env(),
        text=True,
    )
    try:
        status = proc.wait(RUN_TIMEOUT)  # stdin stays open: no EOF ends the session
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert status == 2
    assert "the server closed the connection" in err


def test_against_the_official_sdk_server() -> None:
    pytest.importorskip("mcp.server.mcpserver")
    done = run_cli("tools", OFFICIAL)
    assert done.returncode == 0, done.stderr
    assert "add(a: integer, b: integer)" in done.stdout and "ask_name()" in done.stdout
    done = run_cli("call", OFFICIAL, "add", "a=2", "b=3", "--backend", "trio")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    done = run_cli("call", OFFICIAL, "ask_name", "--answers", '{"name": "Ada"}')
    assert done.stdout.strip() == "hello Ada"


@pytest.mark.parametrize("kind", ["http", "ws"])
def test_network_targets(kind: str, tmp_path: pathlib.Path) -> None:
    pytest.importorskip("httpx" if kind == "http" else "websockets")
    script = tmp_path / "serve.py"
    script.write_text(NETWORK_SOURCE)
    log = tmp_path / "server.log"
    server = subprocess.Popen(
        [PY, str(script), kind, str(REPO / "examples")],
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
        cwd=str(REPO),
        env=cli_env(),
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], READ_TIMEOUT)
        line = server.stdout.readline() if ready else b""
        assert line.strip().isdigit(), f"the server did not start:\n{log.read_text(errors='replace')}"
        port = int(line)
        url = f"{kind}://127.0.0.1:{port}/mcp"
        done = run_cli("tools", url)
        assert done.returncode == 0, done.stderr
        assert "book_table(" in done.stdout
        answers = json.dumps({"accept_alternative": True})
        done = run_cli("call", url, "book_table", "date=2025-12-25", "party_size=2", "--answers", answers,
                       "--backend", "trio")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Booked a table for 2 on 2025-12-26" in done.stdout
    finally:
        server.kill()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()


def test_against_the_npm_reference_server() -> None:
    """The npm reference server (installed from its lock file on first use, like tests/peers/test_url_interop.py)."""
    from tests.helpers import npm_peer

    target = " ".join(shlex.quote(part) for part in npm_peer.everything_command())
    done = run_cli("call", target, "echo", "message=hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Echo: hi"
    done = run_cli("call", target, "get-sum", "a=2", "b=3")
    assert "5" in done.stdout


# --- the pieces, in process -----------------------------------------------------------------------------------


def test_parse_target() -> None:
    assert parse_target("python examples/booking.py").command == ("python", "examples/booking.py")
    assert parse_target("'my python' -u 'a b.py'").command == ("my python", "-u", "a b.py")
    assert parse_target("HTTPS://example.com/mcp").kind == "http"
    assert parse_target("wss://example.com/mcp").kind == "ws"
    with pytest.raises(CliError):
        parse_target("  ")


def test_parse_arguments() -> None:
    pairs = parse_pairs(["n=2", "f=true", "o={\"a\": 1}", "s=hello", "d=2025-12-25", "q=\"7\"", "e=", "x=null"])
    args = parse_arguments(pairs, {"base": 1, "n": 0})
    assert args == {"base": 1, "n": 2, "f": True, "o": {"a": 1}, "s": "hello", "d": "2025-12-25", "q": "7", "e": "",
                    "x": None}  # fmt: skip
    schema = {"type": "object", "properties": {
        "n": {"type": "string"}, "f": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "x": {"type": ["string", "null"]}, "o": {"type": "object"}}}  # fmt: skip
    tool = Tool(name="t", input_schema=schema)
    typed = parse_arguments(pairs, {}, tool)
    assert typed["n"] == "2" and typed["f"] == "true" and typed["x"] is None and typed["o"] == {"a": 1}
    with pytest.raises(CliError, match="not key=value"):
        parse_pairs(["=1"])


FORM = parse_schema(
    {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "default": True},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "x": {"type": "number"},
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]},
            "many": {"type": "array", "items": {"type": "string", "enum": ["r", "g", "b"]}},
            "note": {"type": "string"},
        },
        "required": ["n", "pick"],
    }
)
FIELDS = {f.name: f for f in FORM.fields}


def test_parse_field_answer() -> None:
    assert parse_field_answer(FIELDS["ok"], "") is True  # the default
    assert parse_field_answer(FIELDS["ok"], "No") is False
    with pytest.raises(AnswerError, match="y \\(yes\\) or n"):
        parse_field_answer(FIELDS["ok"], "perhaps")
    assert parse_field_answer(FIELDS["n"], " 3 ") == 3
    with pytest.raises(AnswerError, match="required"):
        parse_field_answer(FIELDS["n"], "")
    with pytest.raises(AnswerError, match="whole number"):
        parse_field_answer(FIELDS["n"], "2.5")
    assert parse_field_answer(FIELDS["x"], "2.5") == 2.5
    assert parse_field_answer(FIELDS["x"], "") is OMIT
    assert parse_field_answer(FIELDS["pick"], "2") == "b"
    assert parse_field_answer(FIELDS["pick"], "alpha") == "a"
    with pytest.raises(AnswerError, match="number from 1 to 2"):
        parse_field_answer(FIELDS["pick"], "3")
    assert parse_field_answer(FIELDS["many"], "3, r g") == ["b", "r", "g"]
    assert parse_field_answer(FIELDS["many"], "-") == []
    assert parse_field_answer(FIELDS["note"], "  spaced  ") == "spaced"


class ScriptedReader(LineReader):
    """Lines typed in advance; ``None`` is ctrl-D."""

    def __init__(self, lines: Sequence[str | None]) -> None:
        super().__init__(io.StringIO(), use_input=False)
        self.lines = deque(lines)
        self.prompts: list[str] = []

    async def read(self, prompt: str, *, prefill: str | None = None, history: bool = False) -> str | None:
        await anyio.lowlevel.checkpoint()
        self.prompts.append(prompt)
        return self.lines.popleft() if self.lines else None


def ask(lines: Sequence[str | None]) -> tuple[Questions, ScriptedReader, io.StringIO]:
    out = io.StringIO()
    reader = ScriptedReader(lines)
    return Questions(Console(out, out, color=False), reader), reader, out


QUESTION = ElicitationRequest(message="Pick things.", form=FORM, server_name="test", protocol_version="2025-11-25")


async def test_form_in_the_terminal() -> None:
    questions, reader, out = ask(["", "", "0", "9", "4", "abc", "1e3", "Beta", "r,b", "", "!d"])
    answer = await questions.elicit(QUESTION)
    assert answer == Accepted({"ok": True, "n": 4, "x": 1000.0, "pick": "b", "many": ["r", "b"]})
    text = out.getvalue()
    assert "expected a value >= 1, got 0" in text and "expected a value <= 5, got 9" in text
    assert "expected a number" in text
    assert reader.lines == deque(["!d"])  # the note was left empty: omitted


async def test_decline_and_cancel_keys() -> None:
    for lines, expected in (
        (["d"], Declined()),
        (["c"], Cancelled()),
        (["x", "decline"], Declined()),
        (["", "!d"], Declined()),
        (["", "", "!c"], Cancelled()),
        ([None], Cancelled()),  # ctrl-D
        (["", "y", None], Cancelled()),
    ):
        questions, _, _ = ask(lines)
        assert await questions.elicit(QUESTION) == expected, lines


async def test_flags_answer_without_asking() -> None:
    out = io.StringIO()
    questions = Questions(Console(out, out, color=False), None, Scripted(answers={"n": 2, "pick": "a"}))
    assert await questions.elicit(QUESTION) == Accepted({"ok": True, "n": 2, "pick": "a"})
    assert not questions.failures
    questions = Questions(Console(out, out, color=False), None, Scripted(answers={"n": 2, "pick": "a", "zz": 1}))
    assert await questions.elicit(QUESTION) == Cancelled()  # never answered with a key dropped
    assert questions.failures == ["--answers names 'zz', which is not a field of this form; its fields: "
                                  "ok, n, x, pick, many, note"]  # fmt: skip
    questions = Questions(Console(out, out, color=False), None, Scripted(accept_defaults=True))
    assert await questions.elicit(QUESTION) == Cancelled()  # n and pick have no defaults
    assert "a value is required" in out.getvalue() and len(questions.failures) == 1
    questions = Questions(Console(out, out, color=False), None)
    assert await questions.elicit(QUESTION) == Declined()


async def test_url_consent_in_the_terminal() -> None:
    request = UrlElicitationRequest(
        message="Pay here.",
        url="https://user@xn--pple-43d.com:8443/pay",
        info=inspect_url("https://user@xn--pple-43d.com:8443/pay"),
        elicitation_id="e1",
        server_name="test",
    )
    questions, _, out = ask(["maybe", "n"])
    assert await questions.consent(request) == Declined()
    assert "type y, n or c" in out.getvalue()
    questions, _, _ = ask(["c"])
    assert await questions.consent(request) == Cancelled()


def test_describe_url_marks_the_host() -> None:
    url = "https://user@xn--pple-43d.com:8443/pay?to=apple.com"
    request = UrlElicitationRequest("Pay.", url, inspect_url(url), "e1", "shop")
    lines = describe_url(request, Style(io.StringIO(), enabled=False))
    url_line = next(line for line in lines if line.startswith("  URL:  "))
    marks = lines[lines.index(url_line) + 1]
    start = marks.index("^")
    assert url_line[start : start + len("xn--pple-43d.com")] == "xn--pple-43d.com"
    assert marks.count("^") == len("xn--pple-43d.com")
    assert any("punycode" in line for line in lines) and any("mixes alphabets" in line for line in lines)
    plain = "http://127.0.0.1:8000/pay"
    lines = describe_url(UrlElicitationRequest("Pay.", plain, inspect_url(plain), "e2", "shop"),
                         Style(io.StringIO(), enabled=False))  # fmt: skip
    assert not any("WARNING" in line for line in lines) and any("not https" in line for line in lines)
    coloured = describe_url(request, Style(io.StringIO(), enabled=True))
    assert any("\x1b[1;4;33mxn--pple-43d.com\x1b[0m" in line for line in coloured)


def test_format_progress() -> None:
    assert format_progress(ProgressParams(progress_token=1, progress=5, total=10, message="half")) == (
        "[##########..........]  50% half"
    )
    assert format_progress(ProgressParams(progress_token=1, progress=3)) == "[....................] 3"
    assert format_progress(ProgressParams(progress_token=1, progress=12, total=10)).startswith(
        "[####################] 100%"
    )


def test_format_trace() -> None:
    style = Style(io.StringIO(), enabled=False)
    style.unicode = True
    sent = format_trace("send", b'{"jsonrpc":"2.0","id":3,"method":"tools/call"}', style)
    assert sent == '→ {"jsonrpc":"2.0","id":3,"method":"tools/call"}'
    got = format_trace("receive", b'{"jsonrpc":"2.0","id":3,"result":{}}', style, pretty=True)
    assert got.startswith("← response 3\n") and '    "result": {}' in got
    assert "not JSON" in format_trace("receive", b"\xff", style)
