"""The booking scenario end to end, in the terminal.

A minimcp client spawns ``examples/booking.py`` over stdio and walks through
the story: a free date books at once; a full date makes the tool stop mid-call
and ask the person for another date (a nested ``elicitation/create``), and the
same call finishes with the answer.

On a terminal you answer each question yourself; without one (CI, a pipe) the
answers come from a script and every step is printed. ``--trace`` shows every
wire message as one short line in the story (direction, id, method, the gist),
so you can see the nested request and its answer; the messages in full go to a
file, named at the end; ``--diagram FILE`` draws the run as a sequence diagram
(``.html``, ``.svg``, or ``-`` for text).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
from collections import deque
from typing import Any, TextIO

import anyio

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    Declined,
    ElicitationRequest,
    UrlElicitationRequest,
    UrlElicitationRequired,
    open_in_browser,
)
from minimcp.cli.diagram import write_diagram
from minimcp.core.trace import WireTrace
from minimcp.forms import NO_DEFAULT, FormField, FormValidationError
from minimcp.transports.stdio import stdio_client
from minimcp.transports.trace import TracedTransport

BOOKING = pathlib.Path(__file__).with_name("booking.py")

Answer = Accepted[dict[str, Any]] | Declined | Cancelled


def show(title: str, result: Any) -> None:
    flag = " (tool error)" if result.is_error else ""
    print(f"\n<- {title}{flag}: {result.text}")
    if result.structured_content:
        print(f"   structured: {json.dumps(result.structured_content)}")


TRACE_WIDTH = 100  # characters of one trace line on screen


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def gist(message: Any) -> str:
    """One wire message in a few words: its id, method (or result / error) and the part that tells the story."""
    if not isinstance(message, dict):
        return "(a batch)" if isinstance(message, list) else "(not an object)"
    ident = f"#{message['id']} " if "id" in message else ""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if "method" in message:
        method = message["method"]
        if method == "tools/call":
            detail = f"{params.get('name')} {json.dumps(params.get('arguments', {}), separators=(',', ':'))}"
        elif method == "elicitation/create":
            detail = f"{params.get('mode', 'form')}: {params.get('message', '')!r}"
        elif method == "initialize":
            detail = f"protocol {params.get('protocolVersion')}"
        else:
            detail = json.dumps(params, separators=(",", ":")) if params else ""
        return f"{ident}{method} {detail}".rstrip()
    if isinstance(message.get("error"), dict):
        error = message["error"]
        return f"{ident}error {error.get('code')}: {error.get('message', '')}"
    result = message.get("result")
    if isinstance(result, dict):
        if isinstance(result.get("serverInfo"), dict):
            info = result["serverInfo"]
            return f"{ident}result: {info.get('name')} {info.get('version')}, protocol {result.get('protocolVersion')}"
        if isinstance(result.get("tools"), list):
            return f"{ident}result: tools " + ", ".join(str(t.get("name")) for t in result["tools"])
        if "action" in result:
            content = json.dumps(result["content"], separators=(",", ":")) if "content" in result else ""
            return f"{ident}result: {result['action']} {content}".rstrip()
        texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict) and "text" in c]
        if texts:
            return f"{ident}result{' (tool error)' if result.get('isError') else ''}: {texts[0]!r}"
    return f"{ident}result: {json.dumps(result, separators=(',', ':'))}"


class Trace:
    """``--trace``: one short line per message in the story, every message in full in a file."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.file: TextIO = path.open("w", encoding="utf-8")
        self.count = 0

    def __call__(self, direction: str, data: bytes) -> None:
        sending = direction == "send"
        self.count += 1
        self.file.write(("--> " if sending else "<-- ") + data.decode(errors="replace") + "\n")
        try:
            message = json.loads(data)
        except ValueError:
            message = None
        arrow = "client -> server" if sending else "server -> client"
        print(_clip(f"   [{arrow}] {gist(message)}", TRACE_WIDTH))

    def close(self) -> None:
        self.file.close()


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
        if await open_in_browser(request.url):
            print("   (opened; complete the page in your browser)")
        else:
            print("   (could not start a browser: open the URL above yourself and complete the page)")
        return Accepted(None)
    return Cancelled() if choice.lower().startswith("c") else Declined()


async def scripted_consent(request: UrlElicitationRequest) -> Answer:
    show_url(request)
    print("   (scripted answer) consent given; the person will use the page in their browser")
    return Accepted(None)


async def press_the_button(url: str) -> None:
    """What the person does in their browser, done here by a script: submit the page's form."""
    import httpx

    print(f"   [browser] the person submits the page: POST {url}")
    async with httpx.AsyncClient() as http:
        response = await http.post(url)
    if response.status_code != 200:
        print(f"   [browser] the page answered {response.status_code}")


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


async def run(interactive: bool, trace: Trace | None, backend_args: list[str], diagram: str | None = None) -> None:
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
        wire = TracedTransport(transport, trace) if trace is not None else transport
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
                print("   waiting for the server to report the payment complete ...")
                if not interactive:
                    await press_the_button(opened[-1])
                done = await client.wait_elicitation_complete(eid, timeout=None if interactive else 10)
                print("   the payment is complete" if done else "   the server did not report the payment in time")
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
                try:
                    added = await client.call_tool_with_consent(
                        "add_to_calendar", {"booking_id": first.structured_content["booking_id"]}, completion_timeout=60
                    )
                except UrlElicitationRequired as still:  # declined, cancelled, or not completed in time
                    print(f"\n<- add_to_calendar: not added; the server still needs: {still.message}")
                else:
                    show("add_to_calendar", added)
    print("\nDone: the server was shut down and nothing is left pending.")
    if diagram:
        drawn = write_diagram(recorded, diagram, title="minimcp demo: the booking scenario")
        if diagram != "-":
            print(f"The sequence diagram of this run ({len(drawn.events)} messages) is in {diagram}: "
                  "open it in a browser.")


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the booking scenario end to end.")
    parser.add_argument("--trace", action="store_true",
                        help="show each wire message as one line; every message in full goes to --trace-file")
    parser.add_argument("--trace-file", type=pathlib.Path, metavar="PATH",
                        default=pathlib.Path(tempfile.gettempdir()) / "minimcp-demo-trace.txt",
                        help="where --trace writes the messages in full (default: %(default)s)")
    parser.add_argument("--script", action="store_true", help="use scripted answers even on a terminal")
    parser.add_argument("--diagram", metavar="FILE",
                        help="draw this run as a sequence diagram: FILE.html, FILE.svg or -")  # fmt: skip
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio",
                        help="the event loop of the client and of the server")  # fmt: skip
    args = parser.parse_args()
    interactive = sys.stdin.isatty() and not args.script
    trace = Trace(args.trace_file) if args.trace else None
    try:
        anyio.run(run, interactive, trace, ["--backend", args.backend], args.diagram, backend=args.backend)
    finally:
        if trace is not None:
            trace.close()
            print(f"The {trace.count} wire messages in full (--> sent, <-- received): {trace.path}")


if __name__ == "__main__":
    main()
