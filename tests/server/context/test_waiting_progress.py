"""Keep-alive progress while a tool waits on a person (minimcp/server/context/keepalive.py), in memory and against the
TypeScript SDK."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
from typing import Any

import anyio

from minimcp import Accepted, Context, ElicitationRequest, Limits, Server, UrlElicitationRequest
from minimcp.wire.types import CreateMessageParams, CreateMessageResult, ProgressParams, TextContent
from tests.helpers import connected, raw_client
from tests.helpers.npm_peer import NPM_PEERS, sdk_node

ROOT = pathlib.Path(__file__).resolve().parents[3]
FAST = Limits(waiting_progress_interval=0.05)
YES_NO = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def asking_server(limits: Limits = FAST) -> Server:
    app = Server("waiting", limits=limits)

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Go on?", YES_NO)
        await ctx.report_progress(2, 2, "answered")  # the tool's own (final) progress still counts afterwards
        return repr(answer)

    @app.tool()
    async def pay(ctx: Context) -> str:
        return repr(await ctx.elicit_url("Pay the deposit", "https://pay.example/d/1"))

    @app.tool()
    async def write(ctx: Context) -> str:
        result = await ctx.sample("Say hi", max_tokens=5)
        assert isinstance(result.content, TextContent)
        return result.content.text

    return app


async def wait_for(condition: Any, what: str) -> None:
    """Wait (generously) until ``condition()`` holds; ``what`` names it in the failure."""
    with anyio.fail_after(30):
        while not condition():  # noqa: ASYNC110 - counters and flags have no event to wait on
            await anyio.sleep(0.01)


async def test_progress_flows_while_the_person_answers_and_stops_with_the_answer() -> None:
    app = asking_server()
    seen: list[ProgressParams] = []

    async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        await wait_for(lambda: len(seen) >= 3, "three keep-alives")
        return Accepted({"ok": True})

    async with connected(app, elicitation_handler=person) as (client, conn):
        result = await client.call_tool("ask", {}, on_progress=seen.append)
        assert result.text == "Accepted(value={'ok': True})"
        keepalives, own = seen[:-1], seen[-1]
        assert len(keepalives) >= 3
        assert all(p.message == "waiting for the person to answer a question" for p in keepalives)
        values = [p.progress for p in seen]
        assert values == sorted(values) and len(set(values)) == len(values)  # strictly increasing
        assert (own.progress, own.total, own.message) == (2, 2, "answered")
        # the answer ended them: the timer stops, and nothing more is sent
        assert conn.waits is not None
        await wait_for(lambda: not conn.waits.running, "the timer to end")
        count = len(seen)
        assert len(conn.waits) == 0
        await client.ping()  # a round trip: a stray notification would have arrived before its answer
        assert len(seen) == count


async def test_url_steps_and_sampling_keep_the_call_alive_too() -> None:
    app = asking_server()
    seen: list[ProgressParams] = []

    async def person(request: UrlElicitationRequest) -> Accepted[None]:
        await wait_for(lambda: len(seen) >= 2, "two keep-alives")
        return Accepted(None)

    async def model(params: CreateMessageParams) -> CreateMessageResult:
        await wait_for(lambda: len(seen) >= 2, "two keep-alives")
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    async with connected(app, url_handler=person, sampling_handler=model) as (client, _):
        await client.call_tool("pay", {}, on_progress=seen.append)
        assert {p.message for p in seen} == {"waiting for the person to finish a step in their browser"}
        seen.clear()
        assert (await client.call_tool("write", {}, on_progress=seen.append)).text == "hi"
        assert {p.message for p in seen} == {"waiting for the client to answer a sampling request"}


async def test_a_call_without_progress_token_gets_no_progress_and_costs_nothing() -> None:
    app = asking_server()
    async with raw_client(app) as (peer, conn):
        await peer.initialize("2025-11-25", {"elicitation": {}})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {}}})
        question = await peer.recv()
        assert question["method"] == "elicitation/create"
        assert await peer.nothing_for(0.3)  # six intervals: not one progress notification
        assert conn.waits is None  # no entry, no timer was ever made
        accept = {"action": "accept", "content": {"ok": True}}
        await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": accept})
        reply = await peer.recv()
        assert reply["id"] == 1 and "Accepted" in reply["result"]["content"][0]["text"]


async def test_raw_progress_carries_the_callers_token_and_none_when_disabled() -> None:
    app = asking_server()
    async with raw_client(app) as (peer, _):
        await peer.initialize("2025-06-18", {"elicitation": {}})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "ask", "arguments": {}, "_meta": {"progressToken": 0}}})
        question = await peer.recv()
        assert question["method"] == "elicitation/create"
        first = await peer.recv()
        assert first["method"] == "notifications/progress"
        assert first["params"]["progressToken"] == 0 and first["params"]["progress"] > 0
    off = asking_server(Limits(waiting_progress_interval=None))
    async with raw_client(off) as (peer, conn):
        await peer.initialize("2025-06-18", {"elicitation": {}})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "ask", "arguments": {}, "_meta": {"progressToken": "t"}}})
        assert (await peer.recv())["method"] == "elicitation/create"
        assert await peer.nothing_for(0.3)
        assert conn.waits is None


async def test_many_waiting_questions_share_one_timer(anyio_backend: str) -> None:
    """1,000 open questions with progress tokens: every call is kept alive, by one timer, one entry each."""
    n = 1000
    app = asking_server(Limits(waiting_progress_interval=0.2))
    async with raw_client(app) as (peer, conn):
        await peer.initialize("2025-11-25", {"elicitation": {}})
        for i in range(n):
            await peer.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "ask", "arguments": {}, "_meta": {"progressToken": f"t{i}"}}})
        questions: list[Any] = []
        kept: set[str] = set()
        with anyio.fail_after(60):
            while len(questions) < n or len(kept) < n:
                message = await peer.recv(timeout=60)
                if message.get("method") == "elicitation/create":
                    questions.append(message["id"])
                elif message.get("method") == "notifications/progress":
                    kept.add(message["params"]["progressToken"])
        assert conn.waits is not None and conn.waits.running
        assert len(conn.waits) <= n  # one entry per waiting question (the timer may hold one being sent)
        if anyio_backend == "asyncio":  # no task per waiting question: the n handlers, and a few of the session's
            assert len(asyncio.all_tasks()) < n + 20
        for qid in questions:
            await peer.send({"jsonrpc": "2.0", "id": qid, "result": {"action": "decline"}})
        done = 0
        with anyio.fail_after(60):
            while done < n:
                if "result" in await peer.recv(timeout=60):
                    done += 1
        await wait_for(lambda: not conn.waits.running, "the timer to end")
        assert len(conn.waits) == 0


# --- a real host: the TypeScript SDK client with resetTimeoutOnProgress ----------------------------------------

BOOKING_WITH_QUICK_KEEPALIVES = """
import sys
sys.path.insert(0, sys.argv[1])
import booking
app = booking.build()
app.server.limits = app.server.limits.replace(waiting_progress_interval=float(sys.argv[3]))
app.server.run(backend=sys.argv[2])
"""


async def test_typescript_host_with_reset_on_progress_keeps_a_call_the_person_answers_slowly(
    anyio_backend: str,
) -> None:
    """The SDK's request clock (here 3 s) restarts on each progress; the person answers after 9 s."""
    node = sdk_node()  # installs the pinned npm peers on first use
    timeout_ms, interval = 3000, 0.3  # ten keep-alives per timeout: margin for a busy machine
    command = [
        str(node), str(NPM_PEERS / "slow_person_host.mjs"), str(timeout_ms),
        sys.executable, "-c", BOOKING_WITH_QUICK_KEEPALIVES, str(ROOT / "examples"), anyio_backend, str(interval),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with anyio.fail_after(120):
        done = await anyio.run_process(command, cwd=str(ROOT), env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert "error" not in out, out  # before: -32001 "Request timed out" after 3 s
    assert out["asked"] == 1
    assert out["result"]["structuredContent"]["status"] == "booked"
    assert out["result"]["structuredContent"]["date"] == "2025-12-26"
    progress = out["progress"]
    assert len(progress) >= 3  # 9 s of waiting, one every 0.3 s: well over the three it needs
    assert all(p["message"] == "waiting for the person to answer a question" for p in progress)
    values = [p["progress"] for p in progress]
    assert values == sorted(values) and len(set(values)) == len(values)


async def test_keepalives_reach_the_call_over_streamable_http() -> None:
    """On HTTP the keep-alives travel on the tools/call POST's own stream (they name that request)."""
    from minimcp import connect_http, serve_http

    app = asking_server()
    seen: list[ProgressParams] = []

    async def person(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        await wait_for(lambda: len(seen) >= 3, "three keep-alives")
        return Accepted({"ok": True})

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_http, app)
            async with connect_http(f"http://127.0.0.1:{port}/mcp", elicitation_handler=person) as client:
                result = await client.call_tool("ask", {}, on_progress=seen.append)
                assert result.text == "Accepted(value={'ok': True})"
            tg.cancel_scope.cancel()
    assert {p.message for p in seen[:-1]} == {"waiting for the person to answer a question"}
