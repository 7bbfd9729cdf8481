"""docs/internals.md stays true: run the booking call it traces and compare the messages.

The doc is the source of truth for the expected messages: its fenced blocks
```` ```text trace ```` (the handshake era) and ```` ```text trace-modern ````
(revision 2026-07-28) hold one message per line, ``-->`` for client to server
(what the server reads on stdin) and ``<--`` for server to client (what it
writes on stdout). The test spawns ``examples/booking.py`` over stdio with a
client-side :class:`~minimcp.core.trace.WireTrace`, books 2025-12-25 for two, accepts
the alternative date, and checks against the doc:

* the sequence of (direction, method or ``result``/``error``);
* which response answers which request (by id correlation);
* the id values (each side numbers its own requests from 1);
* every message in full, except volatile values: the sealed
  ``requestState``, the implementations' version strings, and the booking id
  (unguessable, different every run);
* the key facts of the story, on both sides: the question names 2025-12-25
  and offers 2025-12-26, the answer carries that date, the call ends booked.

It also checks that every ``minimcp.…`` name and every file the doc (and the README's
"Layers" map) cites is defined exactly where it says (by ``__module__`` and ``__qualname__``:
a name reached through a re-export or a base class fails, and the failure says where the thing
is really defined), and that the reading order at the top of the page names files that exist,
with their line counts right to within 15 %.

To regenerate the blocks after a deliberate change::

    PYTHONPATH=. python tests/docs/test_internals_doc.py
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import pathlib
import re
import sys
import types
from typing import Any

import anyio

from minimcp import Accepted, ElicitationRequest, connect_stdio
from minimcp.core.trace import WireTrace

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "internals.md"
BOOKING = [sys.executable, str(ROOT / "examples" / "booking.py")]
ARGUMENTS = {"date": "2025-12-25", "party_size": 2}

# The trace is recorded by the client: "send" is client -> server.
ARROWS = {"-->": "send", "<--": "receive"}
ARROW_OF = {v: k for k, v in ARROWS.items()}

VOLATILE = "<volatile>"
INFO_KEYS = {
    "clientInfo",
    "serverInfo",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/serverInfo",
}

Entry = tuple[str, dict[str, Any]]


# --- running the scenario ------------------------------------------------------------------


async def run_scenario(backend: str, era: str = "legacy") -> list[Entry]:
    """The call of docs/internals.md: book 2025-12-25 for 2, accept the alternative date."""
    records: list[str] = []
    questions: list[ElicitationRequest] = []

    async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        questions.append(question)
        return Accepted({"accept_alternative": True})  # no date: the client fills the default

    with anyio.fail_after(60):
        async with connect_stdio(
            [*BOOKING, "--backend", backend],
            elicitation_handler=person,
            era=era,
            trace=WireTrace(records.append),
        ) as client:
            result = await client.call_tool("book_table", ARGUMENTS)
    assert len(questions) == 1
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["status"] == "booked"
    return [(r["dir"], r["msg"]) for r in map(json.loads, records)]


# --- reading the doc -----------------------------------------------------------------------


def doc_trace(tag: str) -> list[Entry]:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"^```text {re.escape(tag)}\n(.*?)^```\s*$", text, re.MULTILINE | re.DOTALL)
    assert found is not None, f"{DOC} has no ```text {tag} block"
    entries: list[Entry] = []
    for number, line in enumerate(found.group(1).splitlines(), 1):
        if not line.strip():
            continue
        arrow, _, body = line.partition(" ")
        assert arrow in ARROWS, f"{tag} line {number}: starts with {arrow!r}, not --> or <--"
        entries.append((ARROWS[arrow], json.loads(body)))
    assert entries, f"the {tag} block is empty"
    return entries


# --- comparing -----------------------------------------------------------------------------


def kind(message: dict[str, Any]) -> str:
    if "method" in message:
        return str(message["method"])
    return "error" if "error" in message else "result"


def sequence(entries: list[Entry]) -> list[str]:
    return [f"{ARROW_OF[direction]} {kind(message)}" for direction, message in entries]


def pairs(entries: list[Entry], where: str) -> list[tuple[int, int]]:
    """(request index, response index) for each request; each side numbers its own ids."""
    found: list[tuple[int, int]] = []
    answered: set[int] = set()
    for i, (direction, message) in enumerate(entries):
        if "method" not in message or "id" not in message:
            continue
        for j in range(i + 1, len(entries)):
            back, reply = entries[j]
            if back != direction and "method" not in reply and reply.get("id") == message["id"] and j not in answered:
                found.append((i, j))
                answered.add(j)
                break
    responses = {j for j, (_, m) in enumerate(entries) if "method" not in m}
    assert responses == answered, f"{where}: a response (line {sorted(responses - answered)}) answers no request"
    return found


BOOKING_ID = re.compile(r"(?<=booking )[A-Za-z0-9_-]{16,}")


def scrub(value: Any) -> Any:
    """The message without its volatile values (the top-level id is removed by the caller)."""
    if isinstance(value, str):
        return BOOKING_ID.sub(VOLATILE, value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "requestState" or (key == "booking_id" and isinstance(item, str)):
            out[key] = VOLATILE
        elif key in INFO_KEYS and isinstance(item, dict) and "version" in item:
            out[key] = {**scrub(item), "version": VOLATILE}
        else:
            out[key] = scrub(item)
    return out


def stable(message: dict[str, Any]) -> Any:
    return scrub({k: v for k, v in message.items() if k != "id"})


def compare(tag: str, live: list[Entry]) -> list[Entry]:
    expected = doc_trace(tag)
    hint = f"\n(if the change is deliberate, regenerate the block:\n{render(tag, live)})"
    assert sequence(live) == sequence(expected), hint
    assert pairs(live, "the live trace") == pairs(expected, f"the doc's {tag} block"), hint
    assert [m.get("id") for _, m in live] == [m.get("id") for _, m in expected], f"{tag}: the ids differ{hint}"
    for n, ((_, got), (_, want)) in enumerate(zip(live, expected, strict=True), 1):
        assert stable(got) == stable(want), f"{tag}: message {n} differs{hint}"
    return expected


def render(tag: str, entries: list[Entry]) -> str:
    lines = [f"```text {tag}"]
    for direction, message in entries:
        lines.append(f"{ARROW_OF[direction]} {json.dumps(shorten(message), separators=(',', ':'), ensure_ascii=False)}")
    lines.append("```")
    return "\n".join(lines)


def shorten(value: Any) -> Any:
    """For the doc: a sealed requestState is long and different every run; keep its head."""
    if isinstance(value, list):
        return [shorten(v) for v in value]
    if isinstance(value, dict):
        return {
            k: (v[:12] + "…" if k == "requestState" and isinstance(v, str) else shorten(v)) for k, v in value.items()
        }
    return value


# --- the story's key facts -----------------------------------------------------------------


def check_question(params: dict[str, Any]) -> None:
    assert params["mode"] == "form"
    assert "2025-12-25 is fully booked for a party of 2" in params["message"]
    assert "2025-12-26" in params["message"]
    schema = params["requestedSchema"]
    assert schema["required"] == ["accept_alternative"]
    assert schema["properties"]["date"]["default"] == "2025-12-26"


ANSWER = {"action": "accept", "content": {"accept_alternative": True, "date": "2025-12-26"}}


def check_booked(result: dict[str, Any]) -> None:
    assert result.get("isError") is not True
    structured = result["structuredContent"]
    assert structured["status"] == "booked"
    assert structured["date"] == "2025-12-26"
    assert structured["party_size"] == 2


def check_story(entries: list[Entry]) -> None:
    messages = [m for _, m in entries]
    call = next(m for m in messages if m.get("method") == "tools/call")
    assert call["params"]["name"] == "book_table"
    assert call["params"]["arguments"] == ARGUMENTS
    (ask,) = [m for m in messages if m.get("method") == "elicitation/create"]
    check_question(ask["params"])
    (reply,) = [m for m in messages if "result" in m and m["id"] == ask["id"] and "action" in m["result"]]
    assert reply["result"] == ANSWER
    final = messages[-1]
    assert final["id"] == call["id"]
    check_booked(final["result"])


def check_modern_story(entries: list[Entry]) -> None:
    first, ask, retry, final = (m for _, m in entries)
    assert first["method"] == retry["method"] == "tools/call"
    assert first["params"]["arguments"] == retry["params"]["arguments"] == ARGUMENTS
    assert ask["result"]["resultType"] == "input_required"
    (key,) = ask["result"]["inputRequests"]
    question = ask["result"]["inputRequests"][key]
    assert question["method"] == "elicitation/create"
    check_question(question["params"])
    assert retry["params"]["inputResponses"] == {key: ANSWER}
    assert "requestState" in retry["params"]
    assert final["result"]["resultType"] == "complete"
    check_booked(final["result"])


# --- the tests -----------------------------------------------------------------------------


async def test_the_traced_booking_call_matches_the_doc(anyio_backend: str) -> None:
    live = await run_scenario(anyio_backend)
    expected = compare("trace", live)
    check_story(expected)
    check_story(live)


async def test_the_modern_round_trip_matches_the_doc(anyio_backend: str) -> None:
    live = await run_scenario(anyio_backend, era="modern")
    expected = compare("trace-modern", live)
    check_modern_story(expected)
    check_modern_story(live)
    assert live[1][1]["result"]["requestState"] == live[2][1]["params"]["requestState"]  # echoed byte for byte


# --- every file and name the doc cites is where it says ------------------------------------
#
# A dotted name must be DEFINED where it is written: ``minimcp.core.session.Session.run`` is
# accepted only when ``Session.run.__module__ == "minimcp.core.session"`` and its ``__qualname__``
# is ``"Session.run"``, each class on the way likewise, and each step found in the very
# namespace written (``vars()``), not through a re-export, an import or a base class. A name
# without ``__qualname__`` (a constant) must be bound by an assignment in that module's or
# class's own source. A failure says where the thing really is defined.

PACKAGE = ROOT / "minimcp"
README = ROOT / "README.md"
NAME = re.compile(r"`(minimcp(?:\.\w+)+)(?:\(\))?`")
# a file (``core/session.py``) or a folder (``server/mrtr/``), relative to minimcp/ unless it
# starts with one of the repository's own top-level folders
PATH = re.compile(r"`((?:[\w.-]+/)*[\w.-]+(?:\.py|/))`")
TOP_FOLDERS = ("minimcp", "examples", "benchmarks", "tests", "docs", "conformance", "fuzz")


def cited_path(path: str) -> pathlib.Path:
    return ROOT / path if path.split("/", 1)[0] in TOP_FOLDERS else PACKAGE / path


def missing_files(text: str) -> list[str]:
    out = []
    for path in sorted(set(PATH.findall(text))):
        where = cited_path(path)
        if not (where.is_dir() if path.endswith("/") else where.is_file()):
            out.append(f"`{path}`: no such {'folder' if path.endswith('/') else 'file'} ({where.relative_to(ROOT)})")
    return out


def _bound_in(body: list[ast.stmt], name: str) -> bool:
    """Whether these statements (a module's or a class's own) define or assign ``name``."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
        if isinstance(node, (ast.If, ast.Try)) and _bound_in(
            [*node.body, *node.orelse, *getattr(node, "finalbody", [])], name
        ):
            return True
    return False


def _definitions() -> dict[str, list[str]]:
    """Every definition in minimcp/, read from the source: last name -> ["module:Qual.name", ...]."""
    found: dict[str, list[str]] = {}

    def walk(body: list[ast.stmt], module: str, prefix: str) -> None:
        for node in body:
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                found.setdefault(name, []).append(f"{module}:{prefix}{name}")
            if isinstance(node, ast.ClassDef):
                walk(node.body, module, f"{prefix}{node.name}.")

    for file in sorted(PACKAGE.rglob("*.py")):
        parts = file.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        walk(ast.parse(file.read_text(encoding="utf-8")).body, module, "")
    return found


DEFINITIONS: dict[str, list[str]] = {}


def defined_at(qualname: str) -> str:
    """Where minimcp/'s source defines ``qualname`` (or, failing that, its last part)."""
    if not DEFINITIONS:
        DEFINITIONS.update(_definitions())
    last = qualname.rsplit(".", 1)[-1]
    sites = DEFINITIONS.get(last, [])
    exact = [s for s in sites if (s.split(":", 1)[1] + ".").endswith(qualname + ".")]
    if exact:
        return "defined at " + ", ".join(map(_dotted, exact))
    if sites:
        return f"no {qualname} anywhere; {last} is defined at " + ", ".join(map(_dotted, sites))
    return f"nothing named {last} is defined in minimcp/"


def _dotted(site: str) -> str:
    module, qualname = site.split(":", 1)
    return f"{module}.{qualname}"


def _module_of(dotted: str) -> tuple[types.ModuleType, list[str]]:
    """The longest importable module prefix of ``dotted``, and the rest of the name."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            return importlib.import_module(name), parts[cut:]
        except ModuleNotFoundError as exc:
            if exc.name is None or not (name + ".").startswith(exc.name + "."):
                raise  # an import inside the module failed: not a question of the doc
    raise AssertionError(f"{dotted}: minimcp itself does not import")


def _unwrapped(obj: Any) -> Any:
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__
    if isinstance(obj, property) and obj.fget is not None:
        return obj.fget
    if isinstance(obj, functools.cached_property):
        return obj.func
    return obj


def _is_definition(obj: Any) -> bool:
    """A class or function (it knows its own module and qualname); a bound method or a constant
    assigned to a name is checked by its assignment instead."""
    if isinstance(obj, types.MethodType) or (
        isinstance(obj, types.BuiltinMethodType) and not isinstance(obj.__self__, (types.ModuleType, type(None)))
    ):
        return False
    return isinstance(getattr(obj, "__module__", None), str) and hasattr(obj, "__qualname__")


def misplaced(dotted: str) -> str | None:
    """None when ``dotted`` is defined exactly where it says; otherwise what is wrong, and where it is."""
    module, rest = _module_of(dotted)
    modname = module.__name__
    obj: Any = module
    source: list[ast.stmt] = ast.parse(inspect.getsource(module)).body
    for depth, attr in enumerate(rest):
        qualname = ".".join(rest[: depth + 1])
        here = ".".join([modname, *rest[:depth]])
        if attr not in vars(obj):
            if obj is module and hasattr(module, "__path__"):
                return f"{dotted}: no module {modname}.{attr}; {defined_at('.'.join(rest[1:]) or attr)}"
            owner = next((c for c in getattr(obj, "__mro__", ()) if attr in vars(c)), None)
            if owner is not None:
                origin = f"{owner.__module__}.{owner.__qualname__}.{attr}"
                return f"{dotted}: {attr} is inherited by {here}, defined at {origin}"
            return f"{dotted}: {attr} is not defined in {here}; {defined_at(qualname)}"
        obj = _unwrapped(vars(obj)[attr])
        if isinstance(obj, types.ModuleType):
            return f"{dotted}: {here}.{attr} is the module {obj.__name__}, imported there; cite it by that name"
        if _is_definition(obj):
            if (obj.__module__, obj.__qualname__) != (modname, qualname):
                how = "imported into" if depth == 0 else "an alias in"
                return f"{dotted}: {attr} is {how} {here}, defined at {obj.__module__}.{obj.__qualname__}"
            if isinstance(obj, type):
                source = next(
                    (
                        n.body
                        for n in ast.walk(ast.Module(body=source, type_ignores=[]))
                        if isinstance(n, ast.ClassDef) and n.name == attr
                    ),
                    [],
                )
        elif not _bound_in(source, attr):
            return f"{dotted}: {attr} is imported into {here}, not assigned there; {defined_at(qualname)}"
    return None


def misplaced_names(text: str) -> list[str]:
    return [problem for name in sorted(set(NAME.findall(text))) if (problem := misplaced(name))]


# --- the reading order: its files exist and their sizes are told truly ------------------------

TOLERANCE = 0.15  # a count may be off by 15 % (or 25 lines) before the doc must say it anew
SIZED = re.compile(r"`((?:[\w.-]+/)*[\w.-]+(?:\.py|/))` \(([\d,]+) lines\)")
ITEM = re.compile(r"^\d+\. `([\w/.-]+\.py)` \(", re.MULTILINE)
TOTAL = re.compile(r"(\d+) (?:more )?files, about ([\d,]+) lines")
IN_ALL = re.compile(r"(\d+) files in all, about ([\d,]+) lines")


def lines_of(path: str) -> int:
    where = cited_path(path)
    files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)


def near(said: int, real: int) -> bool:
    return abs(said - real) <= max(25, TOLERANCE * real)


def reading_order(text: str) -> dict[str, str]:
    """The doc's "Reading order" section, by subsection title."""
    section = text.split("\n## Reading order\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### (.+)$", section, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def size_problems(text: str) -> list[str]:
    """Every "`path` (N lines)" on the page, and each reading step's total, against the tree."""
    out = []
    for path, said in SIZED.findall(text):
        if cited_path(path).exists() and not near(int(said.replace(",", "")), real := lines_of(path)):
            out.append(f"`{path}` ({said} lines): it has {real} lines")
    steps = [ITEM.findall(body) for body in reading_order(text).values()]
    cumulative: list[str] = []
    for body, files in zip(reading_order(text).values(), steps, strict=True):
        cumulative += files
        for pattern, counted in ((TOTAL, files), (IN_ALL, cumulative)):
            for number, said in pattern.findall(body):
                real = sum(lines_of(f) for f in counted if cited_path(f).is_file())
                if int(number) != len(counted) or not near(int(said.replace(",", "")), real):
                    out.append(f"'{number} files, about {said} lines': the list has {len(counted)} files, {real} lines")
    return out


def test_the_reading_order_names_the_core_then_the_call_then_what_to_skip() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.index("## Reading order") < text.index("## One booking call"), "the page opens with the reading order"
    steps = reading_order(text)
    titles = list(steps)
    assert len(titles) == 3 and "core" in titles[0] and "elicitation" in titles[1] and "Skip" in titles[2], titles
    core, call, skip = steps.values()
    core_files = ITEM.findall(core)
    assert core_files == [
        "wire/jsonrpc.py",
        "core/transport.py",
        "transports/memory.py",
        "core/pending.py",
        "core/session.py",
        "core/_requests.py",
        "core/dispatch.py",
    ]
    call_files = ITEM.findall(call)
    assert 12 <= len(core_files) + len(call_files) <= 18, "about 15 files for one nested elicitation"
    for needed in ("server/server.py", "server/connection.py", "server/context/__init__.py", "client/answers.py"):
        assert needed in call_files, needed
    skipped = re.findall(r"^\* `([\w/.-]+)` \(", skip, flags=re.MULTILINE)
    assert skipped == [
        "core/_takeover.py",
        "server/mrtr/",
        "transports/http/",
        "transports/h1_server.py",
        "scaleout/",
        "hosting/",
        "cli/",
        "diagram/",
    ]
    assert TOTAL.search(core) and TOTAL.search(call) and IN_ALL.search(call), "each step says its files and lines"
    problems = missing_files(text.split("## One booking call", 1)[0]) + size_problems(text)
    assert problems == [], "docs/internals.md's reading order is stale:\n" + "\n".join(problems)


def layers_section() -> str:
    text = README.read_text(encoding="utf-8")
    assert "\n## Layers\n" in text, "README.md has no Layers section"
    return text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_layers_map_names_every_package_where_it_is() -> None:
    section = layers_section()
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    mapped = set(re.findall(r"^- `minimcp/(\w+)/`:", section, flags=re.MULTILINE))
    assert mapped == packages, f"the map names {sorted(mapped)}, minimcp/ holds {sorted(packages)}"
    assert "docs/internals.md" in section, "the map points at the reading order"
    problems = misplaced_names(section) + missing_files(section)
    assert problems == [], "README.md's Layers section cites what is not there:\n" + "\n".join(problems)


def test_the_size_check_can_fail() -> None:
    real = lines_of("core/pending.py")
    assert size_problems(f"`core/pending.py` ({real} lines)" + SECTION_STUB) == []
    assert size_problems(f"`core/pending.py` ({real * 2} lines)" + SECTION_STUB) == [
        f"`core/pending.py` ({real * 2} lines): it has {real} lines"
    ]
    listed = f"### A\n1. `core/pending.py` (x\n\n1 files, about {real * 3} lines.\n"
    wrong_total = SECTION_STUB.replace("### A\n", listed)
    assert size_problems(wrong_total) == [f"'1 files, about {real * 3} lines': the list has 1 files, {real} lines"]


SECTION_STUB = "\n## Reading order\n\n### A\n\n## Next\n"


def test_the_doc_points_at_code_that_exists_where_it_says() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = set(NAME.findall(text))
    assert len(names) >= 40, "the walk-through should name the functions that handle each step"
    problems = misplaced_names(text) + missing_files(text)
    assert problems == [], "docs/internals.md cites what is not there:\n" + "\n".join(problems)


def test_the_checker_refuses_a_re_export_an_inherited_method_and_a_missing_name() -> None:
    """What the doc test relies on: it fails for each kind of stale citation."""
    assert misplaced("minimcp.core.session.Session.run") is None
    assert misplaced("minimcp.core.pending.PendingTable.resolve") is None
    assert misplaced("minimcp.wire.jsonrpc.decode") is None
    # a name imported into a module that does not define it
    assert misplaced("minimcp.server.handlers.Registry") == (
        "minimcp.server.handlers.Registry: Registry is imported into minimcp.server.handlers, "
        "defined at minimcp.server.registry.Registry"
    )
    # a method a class inherits from a base written in another module
    assert misplaced("minimcp.server.outcome.ToolRun.__await__") == (
        "minimcp.server.outcome.ToolRun.__await__: __await__ is inherited by minimcp.server.outcome.ToolRun, "
        "defined at minimcp.core.dispatch.Deferred.__await__"
    )
    # a module that does not exist
    gone = misplaced("minimcp.wire.no_such_module.decode")
    assert gone is not None and "no module minimcp.wire.no_such_module" in gone
    assert "minimcp.wire.jsonrpc.decode" in gone
    # a file that does not exist
    assert missing_files("`core/no_such.py` and `core/session.py`") == [
        "`core/no_such.py`: no such file (minimcp/core/no_such.py)"
    ]


def walk_table_files(text: str) -> set[str]:
    """The library files named in the doc's table of the walk (section "The walk in numbers")."""
    section = text.split("### The walk in numbers", 1)[1].split("\n#", 1)[0]
    table = section.split("| steps | files, in order |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([\w/]+\.py)`", table))


def test_the_walk_table_names_the_files_the_call_really_passes_through() -> None:
    """benchmarks/tools/walk.py records, with a profiler in the server, the library files one booking
    call enters (asyncio): the doc's table of the walk names exactly those."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tools" / "walk.py"), "--tree", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    documented = walk_table_files(DOC.read_text(encoding="utf-8"))
    assert documented == set(measured["file_list"]), (
        f"the doc's walk table names {sorted(documented)}, the call entered {sorted(measured['file_list'])}"
    )


if __name__ == "__main__":
    for era, tag in (("legacy", "trace"), ("modern", "trace-modern")):
        print(render(tag, anyio.run(run_scenario, "asyncio", era)))
        print()
