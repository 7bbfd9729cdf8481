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

It also checks that every ``minimcp.…`` name the doc points at still exists.

To regenerate the blocks after a deliberate change::

    PYTHONPATH=. python tests/test_internals_doc.py
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import sys
from typing import Any

import anyio

from minimcp import Accepted, ElicitationRequest, connect_stdio
from minimcp.core.trace import WireTrace

ROOT = pathlib.Path(__file__).resolve().parent.parent
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


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_doc_points_at_code_that_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = set(re.findall(r"`(minimcp(?:\.\w+)+)(?:\(\))?`", text))
    assert len(names) >= 40, "the walk-through should name the functions that handle each step"
    assert sorted(n for n in names if not _resolves(n)) == []
    files = set(re.findall(r"`((?:minimcp|examples)/[\w/]+\.py)`", text))
    assert files, "the doc should name the example and the modules"
    assert sorted(f for f in files if not (ROOT / f).is_file()) == []


def walk_table_files(text: str) -> set[str]:
    """The library files named in the doc's table of the walk (section "The walk in numbers")."""
    section = text.split("## The walk in numbers", 1)[1].split("\n## ", 1)[0]
    table = section.split("| steps | files, in order |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([\w/]+\.py)`", table))


def test_the_walk_table_names_the_files_the_call_really_passes_through() -> None:
    """benchmarks/tools/walk.py records, with a profiler in the server, the library files one booking
    call enters (asyncio): the doc's table of the walk names exactly those."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tools" / "walk.py"), "--tree", str(ROOT)],
        capture_output=True, text=True, timeout=300, check=True,
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
