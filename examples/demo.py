"""The booking scenario end to end, in the terminal.

A minimcp client spawns ``examples/booking.py`` over stdio and walks through
the story: a free date books at once; a full date makes the tool stop mid-call
and ask the person for another date (a nested ``elicitation/create``), and the
same call finishes with the answer.

On a terminal you answer each question yourself; without one (CI, a pipe) the
answers come from a script and every step is printed. ``--trace`` prints every
wire message, so you can see the nested request and its answer; ``--diagram FILE``
draws the run as a sequence diagram (``.html``, ``.svg``, or ``-`` for text).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import deque
from typing import Any

import anyio

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    Declined,
    ElicitationRequest,
    UrlElicitationRequest,
    open_in_browser,
)
from minimcp.diagram_cmd import write_diagram
from minimcp.forms import NO_DEFAULT, FormField, FormValidationError
from minimcp.trace import WireTrace
from minimcp.transports.stdio import stdio_client
from minimcp.transports.trace import TracedTransport

BOOKING = pathlib.Path(__file__).with_name("booking.py")

Answer = Accepted[dict[str, Any]] | Declined | Cancelled


def show(title: str, result: Any) -> None:
    flag = " (tool error)" if result.is_error else ""
    print(f"\n<- {title}{flag}: {result.text}")
    if result.structured_content:
        print(f"   structured: {json.dumps(result.structured_content)}")


def trace(direction: str, data: bytes) -> None:
    arrow = "client -> server" if direction == "send" else "server -> client"
    print(f"   [wire {arrow}] {data.decode()}")


# --- answering in the terminal ---------------------------------------------------------------


def ask_field(field: FormField) -> Any:
    default = None if field.default is NO_DEFAULT else field.default
    label = field.description or field.title or field.name
    while True:
        if field.kind == "boolean":
            hint = "Y/n" if default is True else "y/N" if default is False else "y/n"
            raw = input(f"   {label} [{hint}]: ").strip().lower()
            if not raw and default is not None:
                return default
            if raw in ("y", "yes", "n", "no"):
                return raw.startswith("y")
        elif field.kind == "select":
            for i, (_, title) in enumerate(field.options, 1):
                print(f"     {i}. {title}")
            raw = input(f"   {label} [number{', enter for ' + str(default) if default else ''}]: ").strip()
            if not raw and default is not None:
                return default
            if raw.isdigit() and 1 <= int(raw) <= len(field.options):
                return field.options[int(raw) - 1][0]
        else:
            suffix = f" [{default}]" if default is not None else ""
            raw = input(f"   {label}{suffix}: ").strip()
            if not raw:
                if default is not None:
                    return default
                if not field.required:
                    return None
            else:
                try:
                    return int(raw) if field.kind == "integer" else float(raw) if field.kind == "number" else raw
                except ValueError:
                    pass
        print("   (not a valid answer, try again)")


async def answer_in_terminal(question: ElicitationRequest) -> Answer:
    print(f"\n?? {question.server_name} asks: {question.message}")
    choice = (await anyio.to_thread.run_sync(input, "   [a]nswer, [d]ecline, [c]ancel? ")).strip().lower()
    if choice.startswith("d"):
        return Declined()
    if choice.startswith("c"):
        return Cancelled()
    while True:
        content: dict[str, Any] = {}
        for field in question.form.fields:
            value = await anyio.to_thread.run_sync(ask_field, field)
            if value is not None:
                content[field.name] = value
        try:
            question.form.validate(content)
            return Accepted(content)
        except FormValidationError as exc:
            print(f"   {exc}; please answer again")


# --- URL mode: consent, then the browser ------------------------------------------------------


def show_url(request: UrlElicitationRequest) -> None:
    info = request.info
    print(f"\n?? {request.server_name} asks you to open a page: {request.message}")
    print(f"   full URL: {request.url}")
    print(f"   host:     {info.host}" + ("   (WARNING: look-alike host)" if info.warning else ""))


async def consent_in_terminal(request: UrlElicitationRequest) -> Answer:
    show_url(request)
    choice = (await anyio.to_thread.run_sync(input, "   open it in your browser? [y]es, [n]o, [c]ancel: ")).strip()
    if choice.lower().startswith("y"):
        await open_in_browser(request.url)
        print("   (opened; complete the page in your browser)")
        return Accepted(None)
    return Cancelled() if choice.lower().startswith("c") else Declined()


async def scripted_consent(request: UrlElicitationRequest) -> Answer:
    show_url(request)
    print("   (scripted answer) consent given; the person will use the page in their browser")
    return Accepted(None)


async def press_the_button(url: str) -> None:
    """What the person does in their browser, done here by a script: submit the page's form."""
    import httpx

    async with httpx.AsyncClient() as http:
        response = await http.post(url)
    print(f"   [browser] POST {url} -> {response.status_code}")


# --- the scripted run ------------------------------------------------------------------------


def scripted(answers: deque[Answer]) -> Any:
    async def handler(question: ElicitationRequest) -> Answer:
        print(f"\n?? {question.server_name} asks: {question.message}")
        for field in question.form.fields:
            default = "" if field.default is NO_DEFAULT else f", default {field.default!r}"
            print(f"   field {field.name} ({field.kind}{default}): {field.description or ''}")
        answer = answers.popleft()
        print(f"   (scripted answer) {answer}")
        return answer

    return handler


async def run(interactive: bool, show_trace: bool, backend_args: list[str], diagram: str | None = None) -> None:
    answers: deque[Answer] = deque(
        [
            Accepted({"accept_alternative": True}),  # take the suggested date (filled from the default)
            Declined(),
        ]
    )
    handler = answer_in_terminal if interactive else scripted(answers)
    url_handler = consent_in_terminal if interactive else scripted_consent
    opened: list[str] = []
    recorded: list[str] = []  # the wire trace, for --diagram

    async def remember(request: UrlElicitationRequest) -> Answer:
        opened.append(request.url)
        return await url_handler(request)

    async with stdio_client([sys.executable, str(BOOKING), *backend_args]) as transport:
        wire = TracedTransport(transport, trace) if show_trace else transport
        async with Client(
            wire,
            name="minimcp-demo",
            elicitation_handler=handler,
            url_handler=remember,
            on_elicitation_complete=lambda eid: print(f"\n** the server reports step {eid[:8]}... complete"),
            trace=WireTrace(recorded.append) if diagram else None,
        ) as client:
            assert client.server_info is not None
            print(f"Connected to {client.server_info.name} {client.server_info.version} "
                  f"over stdio, protocol {client.protocol_version}")
            print("Tools: " + ", ".join(t.name for t in await client.list_tools()))

            print("\n-> book_table 2025-12-24 for 2 (a free date)")
            first = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            show("book_table", first)

            print("\n-> book_table 2025-12-25 for 4 (a full date: the tool will ask)")
            show("book_table", await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4}))

            print("\n-> book_table 2025-12-27 for 2 (full again)")
            show("book_table", await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2}))

            print("\n-> book_table 2025-12-24 for 25 (party too large)")
            show("book_table", await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 25}))

            if first.structured_content:
                booking_id = first.structured_content["booking_id"]
                print(f"\n-> booking_status {booking_id}")
                show("booking_status", await client.call_tool("booking_status", {"booking_id": booking_id}))

            print("\n-> book_table 2025-12-24 for 8 (a deposit is needed: URL mode, the payment happens in a browser)")
            big = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
            show("book_table", big)
            if big.structured_content and big.structured_content.get("status") == "deposit_pending":
                eid = big.structured_content["elicitation_id"]
                if not interactive:
                    await press_the_button(opened[-1])
                print("   waiting for the server to report the payment complete ...")
                done = await client.wait_elicitation_complete(eid, timeout=None if interactive else 10)
                print(f"   complete: {done}")
                status = await client.call_tool("booking_status", {"booking_id": big.structured_content["booking_id"]})
                show("booking_status", status)

            if first.structured_content:
                print("\n-> add_to_calendar (needs a one-time authorization: the server answers -32042)")

                async def authorize_then_wait(request: UrlElicitationRequest) -> Answer:
                    answer = await remember(request)
                    if not interactive and isinstance(answer, Accepted):
                        await press_the_button(request.url)
                    return answer

                client.url_handler = authorize_then_wait
                added = await client.call_tool_with_consent(
                    "add_to_calendar", {"booking_id": first.structured_content["booking_id"]}, completion_timeout=60
                )
                show("add_to_calendar", added)
    print("\nDone: the server was shut down and nothing is left pending.")
    if diagram:
        drawn = write_diagram(recorded, diagram, title="minimcp demo: the booking scenario")
        if diagram != "-":
            print(f"The sequence diagram of this run ({len(drawn.events)} messages) is in {diagram}: open it in a browser.")


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the booking scenario end to end.")
    parser.add_argument("--trace", action="store_true", help="print every wire message")
    parser.add_argument("--script", action="store_true", help="use scripted answers even on a terminal")
    parser.add_argument("--diagram", metavar="FILE", help="draw this run as a sequence diagram: FILE.html, FILE.svg or -")
    args = parser.parse_args()
    interactive = sys.stdin.isatty() and not args.script
    anyio.run(run, interactive, args.trace, [], args.diagram)


if __name__ == "__main__":
    main()
