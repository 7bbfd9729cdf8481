"""The Streamable HTTP app's response streams are lean (issue 19).

The app is driven directly, as an ASGI server would drive it (no socket), so
that what it sends and the tasks it holds can be counted exactly:

* the last event of a response stream goes out with the end of the response,
  in one ``send`` (``more_body=False``), not as an event and then an empty end;
* a call waiting for an answer holds no task of its own in the app (no
  watcher per response stream): the ASGI server's request task and the tool's
  handler, nothing more;
* a response whose ASGI server does not wake a pending ``receive()`` once the
  response is complete still returns (the app wakes itself).
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Context, Server
from minimcp.transports.http import StreamableHTTPApp

TIMEOUT = 30
V = "2025-11-25"


class Answer(msgspec.Struct):
    answer: str


def ask_server() -> Server:
    server = Server("lean", "1.0.0")

    @server.tool()
    async def ask(ctx: Context, i: int) -> str:
        """Ask one question and return the answer."""
        reply = await ctx.elicit(f"question {i}", Answer)
        return reply.value.answer if isinstance(reply, Accepted) else "no answer"

    return server


class Exchange:
    """One request driven into the app: its body comes in, then ``receive()`` waits until :attr:`gone` is set
    (a server that never says ``http.disconnect`` after the response, unless the client leaves)."""

    def __init__(self, body: dict[str, Any], session_id: str | None) -> None:
        self.body = json.dumps(body).encode()
        self.sent: list[MutableMapping[str, Any]] = []
        self.gone = anyio.Event()
        self.got_body = False
        self.changed = anyio.Event()
        headers = [
            (b"host", b"localhost"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]
        if session_id is not None:
            headers += [(b"mcp-session-id", session_id.encode()), (b"mcp-protocol-version", V.encode())]
        self.scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
        }

    async def receive(self) -> dict[str, Any]:
        if not self.got_body:
            self.got_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    async def run(self, app: StreamableHTTPApp) -> None:
        await app(self.scope, self.receive, self.send)

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages sent so far (SSE data lines)."""
        out = []
        for m in self.sent:
            for line in m.get("body", b"").split(b"\n"):
                if line.startswith(b"data: ") and len(line) > 6:
                    out.append(json.loads(line[6:]))
        return out

    async def wait_for(self, method_or_result: str) -> dict[str, Any]:
        while True:
            for m in self.messages():
                if m.get("method") == method_or_result or (method_or_result == "result" and "result" in m):
                    return m
            await self.changed.wait()


def ask_call(sid: str, i: int = 1) -> Exchange:
    """A ``tools/call`` of the ``ask`` tool (request id ``i``), on session ``sid``."""
    return Exchange(
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "ask", "arguments": {"i": i}}}, sid
    )


def accept(question: dict[str, Any], sid: str, answer: str) -> Exchange:
    """The client's answer to ``question`` (an ``elicitation/create``): accepted with ``answer``."""
    return Exchange(
        {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"answer": answer}}}, sid
    )


async def initialize(app: StreamableHTTPApp) -> tuple[str, Exchange]:
    init = Exchange(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": V,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        None,
    )
    await init.run(app)
    sid = dict(init.sent[0]["headers"])[b"mcp-session-id"].decode()
    done = Exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    await done.run(app)
    assert done.sent[0]["status"] == 202
    return sid, init


async def test_last_event_goes_with_the_end_of_the_response() -> None:
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            # This "server" never wakes receive() after the response: the app returns all the same.
            sid, init = await initialize(app)
            assert init.sent[0]["type"] == "http.response.start"
            bodies = init.sent[1:]
            assert bodies[-1]["more_body"] is False
            assert b'"protocolVersion"' in bodies[-1]["body"]  # the result, with the end
            assert all(m["more_body"] for m in bodies[:-1])
            # A call with a question: the question on the stream, then the result with the end.
            call = ask_call(sid)
            tg.start_soon(call.run, app)
            question = await call.wait_for("elicitation/create")
            answer = accept(question, sid, "yes")
            await answer.run(app)
            assert answer.sent[0]["status"] == 202
            result = await call.wait_for("result")
            assert result["result"]["content"][0]["text"] == "yes"
            last = call.sent[-1]
            assert last["more_body"] is False and b'"yes"' in last["body"]
            assert not any(m.get("body") == b"" for m in call.sent)  # no empty end-of-response write
            tg.cancel_scope.cancel()


async def test_a_waiting_call_holds_no_task_of_its_own_in_the_app() -> None:
    app = StreamableHTTPApp(ask_server())
    n = 10
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            before = len(anyio.get_running_tasks())
            calls = [ask_call(sid, i) for i in range(n)]
            for call in calls:
                tg.start_soon(call.run, app)  # the ASGI server's task for the request
            questions = [await call.wait_for("elicitation/create") for call in calls]
            grown = len(anyio.get_running_tasks()) - before
            # Per waiting call: the request's own task and the tool's handler; no watcher per stream.
            # (Plus, on trio, the session's deadline timer: a task from its first deadline on.)
            assert grown <= 2 * n + 1, f"{grown} tasks for {n} waiting calls"
            # The client of one call leaves: its call goes on (a dropped connection is not a cancel).
            calls[0].gone.set()
            for i, question in enumerate(questions):
                await accept(question, sid, f"a{i}").run(app)
            for i, call in enumerate(calls[1:], 1):
                assert (await call.wait_for("result"))["result"]["content"][0]["text"] == f"a{i}"
            tg.cancel_scope.cancel()
