"""Interoperability with the official MCP Python SDK (``mcp`` 2.x), over real stdio processes.

- The official client (``mcp.Client``) against our example servers
  (``examples/hello_server.py``, ``examples/booking.py``).
- Our client (``minimcp.connect_stdio``) against a server written with the
  official SDK (``tests/peers/official_server.py``).

Both directions run on asyncio and on trio (see ``conftest.py``): the official
SDK's client is built on anyio and works on trio as well, and the servers are
separate processes either way.

The whole module is skipped when the official SDK is not installed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

import minimcp
from tests.helpers.interop import (
    BOOKING_SERVER,
    REPO,
    Recorder,
    check_date_question,
    child_env,
    mcp_types,
    official_client,
)

HELLO_SERVER = REPO / "examples" / "hello_server.py"
OFFICIAL_SERVER = REPO / "tests" / "peers" / "official_server.py"

TIMEOUT = 60  # seconds per test: process start-up of two Python interpreters plus a few round trips






def texts(result: Any) -> str:
    """The text blocks of an official-SDK CallToolResult, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


# --- official client -> our hello server -----------------------------------------------------


async def test_official_client_legacy_against_hello_server() -> None:
    with anyio.fail_after(TIMEOUT):
        async with official_client(HELLO_SERVER, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None
            assert client.server_info.name == "hello"
            assert client.server_info.version == "1.0.0"
            assert client.server_capabilities.tools is not None

            listed = await client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert set(tools) == {"greet", "add"}
            assert tools["greet"].input_schema["required"] == ["name"]
            assert tools["greet"].input_schema["properties"]["name"]["type"] == "string"
            assert set(tools["add"].input_schema["required"]) == {"a", "b"}

            result = await client.call_tool("greet", {"name": "world"})
            assert not result.is_error
            assert texts(result) == "Hello, world!"

            result = await client.call_tool("add", {"a": 2, "b": 3.5})
            assert not result.is_error
            assert texts(result) == "5.5"

            # A wrong argument type is a tool error (isError), not a protocol error, and says which one.
            result = await client.call_tool("add", {"a": "two", "b": 3})
            assert result.is_error is True
            assert "'a'" in texts(result)
            assert "'b'" not in texts(result)

            # A missing argument: same, naming it.
            result = await client.call_tool("greet", {})
            assert result.is_error is True
            assert "name" in texts(result)


async def test_official_client_auto_mode_picks_the_modern_revision() -> None:
    # mode="auto" first probes server/discover (2026-07-28); our server is dual-era and answers
    # it, so the client stays on the modern revision (no handshake).
    with anyio.fail_after(TIMEOUT):
        async with official_client(HELLO_SERVER, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"

            listed = await client.list_tools()
            assert {tool.name for tool in listed.tools} == {"greet", "add"}

            result = await client.call_tool("greet", {"name": "world"})
            assert not result.is_error
            assert texts(result) == "Hello, world!"


# --- official client -> our booking server (form elicitation) ---------------------------------






async def test_official_client_booking_accepts_alternative() -> None:
    answer = mcp_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-26"})
    recorder = Recorder(answer)
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, elicitation_callback=recorder) as client:
            assert client.server_info is not None and client.server_info.name == "booking"
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert len(recorder.questions) == 1
    check_date_question(recorder.questions[0], day="2025-12-25", party_size=2, default="2025-12-26")
    assert not result.is_error, texts(result)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "booked"
    assert result.structured_content["date"] == "2025-12-26"
    assert result.structured_content["party_size"] == 2
    assert result.structured_content["booking_id"]
    assert "2025-12-26" in texts(result)


async def test_official_client_booking_decline() -> None:
    recorder = Recorder(mcp_types.ElicitResult(action="decline"))
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, elicitation_callback=recorder) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert len(recorder.questions) == 1
    check_date_question(recorder.questions[0], day="2025-12-25", party_size=2, default="2025-12-26")
    assert not result.is_error, texts(result)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "declined"
    assert result.structured_content["date"] == "2025-12-25"
    assert "booking_id" not in result.structured_content


async def test_official_client_booking_invalid_answer_is_tool_error() -> None:
    recorder = Recorder(mcp_types.ElicitResult(action="accept", content={"accept_alternative": "maybe"}))
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, elicitation_callback=recorder) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert len(recorder.questions) == 1
    assert result.is_error is True
    assert "accept_alternative" in texts(result)
    assert "bool" in texts(result).lower()  # the expected type is named (booking.md)
    assert result.structured_content is None


async def test_official_client_answering_with_an_error_gets_a_tool_error() -> None:
    """A client that checks the form itself and refuses with -32603 (FastMCP does): the booking call ends
    with a tool error saying the client could not answer, not with the client's error (booking.md)."""
    refusal = mcp_types.ErrorData(code=-32603, message="Elicitation response content does not match requested schema")
    recorder = Recorder(refusal)
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, elicitation_callback=recorder) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            status = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
    assert len(recorder.questions) == 1
    assert result.is_error is True
    assert "could not answer the question" in texts(result)
    assert "does not match requested schema" in texts(result)
    assert result.structured_content is None  # nothing booked
    assert not status.is_error and status.structured_content is not None
    assert status.structured_content["booking_id"]  # the session goes on


async def test_official_client_without_elicitation_gets_full_date_error() -> None:
    # No elicitation callback: the official client does not declare the capability, so the
    # booking server must not ask; it answers with a tool error naming the next free date.
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert result.is_error is True
    assert "2025-12-25" in texts(result)
    assert "2025-12-26" in texts(result)


# --- our client -> official server -----------------------------------------------------------


@contextlib.asynccontextmanager
async def our_client(**options: Any) -> AsyncIterator[minimcp.Client]:
    async with minimcp.connect_stdio(
        [sys.executable, str(OFFICIAL_SERVER)], env=child_env(), cwd=str(REPO), **options
    ) as client:
        yield client


async def test_our_client_against_official_server() -> None:
    with anyio.fail_after(TIMEOUT):
        async with our_client() as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None
            assert client.server_info.name == "official-peer"

            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) == {"add", "ask_name"}
            assert tools["add"].input_schema["properties"]["a"]["type"] == "integer"
            assert set(tools["add"].input_schema["required"]) == {"a", "b"}

            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert not result.is_error
            assert result.text == "5"
            assert result.structured_content == {"result": 5}


async def test_our_client_answers_official_elicitation_accept() -> None:
    questions: list[minimcp.ElicitationRequest] = []

    async def handler(request: minimcp.ElicitationRequest) -> Any:
        questions.append(request)
        return minimcp.Accepted({"name": "Ada"})

    with anyio.fail_after(TIMEOUT):
        async with our_client(elicitation_handler=handler) as client:
            result = await client.call_tool("ask_name", {})
    assert len(questions) == 1
    assert questions[0].message == "What is your name?"
    assert questions[0].server_name == "official-peer"
    assert not result.is_error
    assert result.text == "hello Ada"


async def test_our_client_answers_official_elicitation_decline() -> None:
    async def handler(request: minimcp.ElicitationRequest) -> Any:
        return minimcp.Declined()

    with anyio.fail_after(TIMEOUT):
        async with our_client(elicitation_handler=handler) as client:
            result = await client.call_tool("ask_name", {})
    assert not result.is_error
    assert result.text == "declined"


async def test_our_client_answers_official_elicitation_cancel() -> None:
    async def handler(request: minimcp.ElicitationRequest) -> Any:
        return minimcp.Cancelled()

    with anyio.fail_after(TIMEOUT):
        async with our_client(elicitation_handler=handler) as client:
            result = await client.call_tool("ask_name", {})
    assert not result.is_error
    assert result.text == "cancelled"


# --- the official client in its default mode: revision 2026-07-28 (multi round-trip) ------------


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
async def test_official_client_default_mode_books_through_input_required(mode: str) -> None:
    """The same ``await ctx.elicit`` answers the modern client with ``input_required`` rounds."""
    answers = Recorder(
        mcp_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"}),
        mcp_types.ElicitResult(action="accept", content={"accept_alternative": True}),
    )
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, mode=mode, elicitation_callback=answers) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert len(answers.questions) == 2  # 12-25 full -> 12-27 full too -> default 12-28
    check_date_question(answers.questions[0], day="2025-12-25", party_size=2, default="2025-12-26")
    check_date_question(answers.questions[1], day="2025-12-27", party_size=2, default="2025-12-28")
    assert not result.is_error, texts(result)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "booked"
    assert result.structured_content["date"] == "2025-12-28"


async def test_official_client_default_mode_decline_reaches_the_tool() -> None:
    answers = Recorder(mcp_types.ElicitResult(action="decline"))
    with anyio.fail_after(TIMEOUT):
        async with official_client(BOOKING_SERVER, mode="auto", elicitation_callback=answers) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert result.structured_content is not None
    assert result.structured_content["status"] == "declined"
