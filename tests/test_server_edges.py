"""The server API's edges: how it is run, what it says at registration, and how a client's refusal ends a call."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Context, ElicitationRequest, McpError, Server
from tests.helpers import connected, raw_client

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import booking  # noqa: E402

HANDSHAKE_FORM_ERAS = ["2025-06-18", "2025-11-25"]  # the handshake revisions that have form elicitation


# --- a client that answers a question with a JSON-RPC error (booking contract) -------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_FORM_ERAS)
async def test_client_error_answer_is_a_tool_error_saying_the_client_could_not_answer(version: str) -> None:
    """Like FastMCP, which checks the form itself and answers -32603: the call ends with a tool error."""
    app = booking.build()
    long_reason = "the form was refused by the client's own check:\n" + "field 'date' is not valid " * 40

    async def refuse(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        raise McpError(-32603, long_reason)

    with anyio.fail_after(30):
        async with connected(app.server, elicitation_handler=refuse, protocol_version=version) as (client, _):
            assert client.protocol_version == version
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4})
            assert result.is_error is True
            assert "could not answer the question" in result.text
            assert "-32603" in result.text
            assert "the form was refused by the client's own check: field 'date'" in result.text  # one line
            assert len(result.text) < 400 and long_reason not in result.text  # shortened
            assert app.bookings == {}  # nothing is booked
            # the session goes on
            free = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert free.is_error is not True


@pytest.mark.parametrize("version", HANDSHAKE_FORM_ERAS)
async def test_raw_error_response_to_the_question_is_not_passed_on_as_the_call_error(version: str) -> None:
    app = booking.build()
    async with raw_client(app.server) as (peer, _):
        await peer.initialize(version, {"elicitation": {}})
        await peer.send(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 4}}}
        )
        question = await peer.recv()
        assert question["method"] == "elicitation/create"
        await peer.send({"jsonrpc": "2.0", "id": question["id"], "error": {"code": -32603, "message": "Internal error"}})
        reply = await peer.recv()
        assert reply["id"] == 1
        assert "error" not in reply, reply
        assert reply["result"]["isError"] is True
        text = reply["result"]["content"][0]["text"]
        assert "could not answer the question" in text and "Internal error" in text
        assert "structuredContent" not in reply["result"]
        assert app.bookings == {}


async def test_a_tool_may_catch_the_clients_refusal() -> None:
    """What the tool sees: QuestionFailed, an McpError keeping the client's code and message."""

    app = Server("t")
    seen: list[BaseException] = []


    @app.tool()
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        except McpError as exc:
            seen.append(exc)
            return "handled"
        return "answered"

    async def refuse(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        raise McpError(-32000, "user closed the dialog")

    async with connected(app, elicitation_handler=refuse) as (client, _):
        result = await client.call_tool("ask", {})
        assert result.text == "handled"
    from minimcp.elicitation import QuestionFailed

    (exc,) = seen
    assert isinstance(exc, QuestionFailed)
    assert (exc.code, exc.message, exc.method) == (-32000, "user closed the dialog", "elicitation/create")
