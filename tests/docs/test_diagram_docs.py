"""The diagrams in docs/internals.md stay true to the code.

``docs/diagrams/`` holds two real wire traces of ``examples/booking.py`` over stdio, recorded
by our client (``*.jsonl``), and the pictures drawn from them (``*.svg``):

* ``booking-form``: book 2025-12-25 (full) for two; the tool asks for another date, the
  person accepts the suggested one, the same call ends booked;
* ``booking-deposit``: book 2025-12-24 for eight; the tool asks (URL mode) for a deposit, the
  person agrees and pays on the example's page, the server reports the step complete, and
  ``booking_status`` says booked.

Two checks keep them honest: the committed pictures are exactly what the drawing code makes
of the committed traces (a change to the drawing shows up here), and a fresh run of each
scenario, on both backends, has the committed trace's shape: the same messages in the same
order, the same request/response pairs and nesting (a change to the library shows up here).

To regenerate both after a deliberate change::

    PYTHONPATH=. python tests/docs/test_diagram_docs.py
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Client, ElicitationRequest, UrlElicitationRequest, connect_stdio
from minimcp.core.trace import WireTrace
from minimcp.diagram.layout import Diagram, read_trace
from minimcp.diagram.svg import render_svg

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIAGRAMS = ROOT / "docs" / "diagrams"
BOOKING = [sys.executable, str(ROOT / "examples" / "booking.py")]


async def form_scenario(client: Client) -> None:
    result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert isinstance(result.structured_content, dict) and result.structured_content["status"] == "booked"


async def deposit_scenario(client: Client, urls: list[str]) -> None:
    import httpx

    result = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
    content = result.structured_content
    assert isinstance(content, dict) and content["status"] == "deposit_pending", result.text
    async with httpx.AsyncClient() as browser:  # the person pays on the page
        paid = await browser.post(urls[-1])
    assert paid.status_code == 200, paid.text
    assert await client.wait_elicitation_complete(content["elicitation_id"], timeout=30)
    status = await client.call_tool("booking_status", {"booking_id": content["booking_id"]})
    assert isinstance(status.structured_content, dict) and status.structured_content["status"] == "booked"


SCENARIOS: dict[str, Callable[[Client, list[str]], Awaitable[None]]] = {
    "booking-form": lambda client, urls: form_scenario(client),
    "booking-deposit": deposit_scenario,
}


async def record(name: str, backend: str) -> list[str]:
    """Run one scenario against the real example over stdio; the client's trace, line by line."""
    lines: list[str] = []
    urls: list[str] = []

    async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        return Accepted({"accept_alternative": True})  # the suggested date

    async def consent(request: UrlElicitationRequest) -> Accepted[None]:
        urls.append(request.url)
        return Accepted(None)

    with anyio.fail_after(60):
        async with connect_stdio(
            [*BOOKING, "--backend", backend],
            elicitation_handler=person,
            url_handler=consent,
            trace=WireTrace(lines.append),
        ) as client:
            await SCENARIOS[name](client, urls)
    return lines


def shape(diagram: Diagram) -> list[tuple[Any, ...]]:
    """What must not change: each message's direction, kind and method, what it answers, how deep."""
    out: list[tuple[Any, ...]] = []
    for e in diagram.events:
        method = e.message.get("method") if isinstance(e.message, dict) else None
        answers = e.call.start if e.call is not None and e.kind in ("result", "error") else None
        out.append((e.from_client, e.kind, method, answers, e.depth, e.note.split(" #")[0]))
    return out


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_committed_pictures_are_what_the_code_draws(name: str) -> None:
    trace = (DIAGRAMS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    drawn = render_svg(read_trace(trace))
    committed = (DIAGRAMS / f"{name}.svg").read_text(encoding="utf-8")
    assert drawn == committed, f"docs/diagrams/{name}.svg is stale: run PYTHONPATH=. python {__file__}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_a_fresh_run_has_the_committed_shape(name: str, anyio_backend: str) -> None:
    committed = read_trace((DIAGRAMS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines())
    fresh = read_trace(await record(name, anyio_backend))
    assert not fresh.problems and not committed.problems
    assert shape(fresh) == shape(committed), f"the {name} exchange changed: run PYTHONPATH=. python {__file__}"
    assert any(e.depth == 1 and e.kind == "request" for e in fresh.events), "a question nested in its call"


def regenerate() -> None:
    DIAGRAMS.mkdir(parents=True, exist_ok=True)
    for name in sorted(SCENARIOS):
        lines = anyio.run(record, name, "asyncio")
        (DIAGRAMS / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (DIAGRAMS / f"{name}.svg").write_text(render_svg(read_trace(lines)), encoding="utf-8")
        print(f"wrote docs/diagrams/{name}.jsonl and .svg ({len(lines)} messages)")


if __name__ == "__main__":
    regenerate()
