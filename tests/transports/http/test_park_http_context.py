"""A 2026-07-28 call parked through the HTTP app keeps nothing of the POST that started it (issue 19).

The tool's run outlives its first POST (it waits, parked, for the retry). It runs in a task
of the session's own, started from the session's context: the context variables of the POST
(the app's per-client park owner, whatever an ASGI middleware set) are not held by it for as
long as the call waits. Driven at the ASGI level, on asyncio and trio.
"""

from __future__ import annotations

import contextvars
import gc
import json
import tracemalloc
import weakref
from collections.abc import MutableMapping
from typing import Any

import anyio

from minimcp import Accepted, Context, Limits, Server
from minimcp.server.mrtr.parking import Parking
from minimcp.server.mrtr.run import Run
from minimcp.transports._ports import PARK_OWNER
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.http_modern_leg import call_scope
from tests.helpers.parked_footprint import _bench_modern

TIMEOUT = 30
PARKED = 20

#: Set by the test's middleware around each POST (as a tracing or auth middleware would).
REQUEST_MARK: contextvars.ContextVar[Any] = contextvars.ContextVar("REQUEST_MARK")


class Mark:
    """One POST's own object (weakly referenceable: the test sees whether anything still holds it)."""


def ask_server(bound: int = PARKED + 5) -> Server:
    server = Server("parked-http", limits=Limits(max_parked_per_client=bound))

    @server.tool()
    async def ask(ctx: Context) -> str:
        seen = (REQUEST_MARK.get(None), PARK_OWNER.get())
        answer = await ctx.elicit("A number?", {"type": "object", "properties": {"n": {"type": "integer"}}})
        got = answer.value["n"] if isinstance(answer, Accepted) else "?"
        return f"{got} {seen[0] is None} {seen[1] is None}"

    return server


def _body(content: bytes, extra: dict[str, Any] | None) -> bytes:
    """``content`` (a call from a client declaring no capability) from a client that can be asked, with ``extra``."""
    message = json.loads(content)
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {"form": {}}}
    message["params"].update(extra or {})
    return json.dumps(message).encode()


#: Whether the park owner was set in the POST's context when its reply was written, per POST
#: (what an ASGI server schedules while it writes, e.g. uvicorn's keep-alive timer, copies that context).
OWNER_AT_REPLY: list[bool] = []


async def post(app: Any, tool: str, marks: list[weakref.ref[Mark]], extra: dict[str, Any] | None = None) -> Any:
    """One POST through ``app`` under a middleware that sets :data:`REQUEST_MARK`; its JSON reply."""
    scope, content = call_scope(tool)
    content = _body(content, extra)
    scope["headers"] = [(k, str(len(content)).encode() if k == b"content-length" else v) for k, v in scope["headers"]]
    sent: list[bytes] = []
    done = anyio.Event()
    bodies = [{"type": "http.request", "body": content, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop()
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))
            if not message.get("more_body", False):
                OWNER_AT_REPLY.append(PARK_OWNER in contextvars.copy_context())
                done.set()

    mark = Mark()
    marks.append(weakref.ref(mark))
    token = REQUEST_MARK.set(mark)
    try:
        await app(scope, receive, send)
    finally:
        REQUEST_MARK.reset(token)
    del mark
    return json.loads(b"".join(sent))


async def test_a_call_parked_over_http_holds_nothing_of_its_posts_context() -> None:
    server = ask_server()
    app = StreamableHTTPApp(server)
    marks: list[weakref.ref[Mark]] = []
    OWNER_AT_REPLY.clear()
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            states = []
            for _ in range(PARKED):
                reply = await post(app, "ask", marks)
                assert reply["result"]["resultType"] == "input_required", reply
                states.append(reply["result"]["requestState"])
            assert len(server.parking) == PARKED
            gc.collect()
            assert not any(OWNER_AT_REPLY), "the park owner is still set while the reply is written"
            held = sum(ref() is not None for ref in marks)
            assert held == 0, f"{held} of {PARKED} parked calls hold their first POST's context"
            for n, state in enumerate(states):  # every parked call resumes with its own answer
                answer = {"q1": {"action": "accept", "content": {"n": n}}}
                reply = await post(app, "ask", marks, {"inputResponses": answer, "requestState": state})
                # The tool saw neither the POST's variables nor the app's park owner.
                assert reply["result"]["content"][0]["text"] == f"{n} True True", reply
        tg.cancel_scope.cancel()


async def test_the_park_owner_still_bounds_the_calls_a_client_has_parked() -> None:
    """The per-client bound is counted at park time, in the POST's own task: still enforced."""
    server = ask_server(3)
    app = StreamableHTTPApp(server)
    marks: list[weakref.ref[Mark]] = []
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            for _ in range(3):
                reply = await post(app, "ask", marks)
                assert reply["result"]["resultType"] == "input_required", reply
            reply = await post(app, "ask", marks)
            assert reply["error"]["code"] == -32003, reply
            assert len(server.parking) == 3
        tg.cancel_scope.cancel()


def contexts() -> int:
    gc.collect()
    return sum(type(o) is contextvars.Context for o in gc.get_objects())


async def test_a_call_parked_over_http_holds_one_context_its_tasks() -> None:
    """Its task's own context, nothing more: the question's timer (asyncio) shares one context."""
    app = StreamableHTTPApp(ask_server())
    marks: list[weakref.ref[Mark]] = []
    async with anyio.create_task_group() as tg:
        await tg.start(app.run)
        with anyio.fail_after(TIMEOUT):
            states = [(await post(app, "ask", marks))["result"]["requestState"] for _ in range(2)]  # warm up
            before = contexts()
            for _ in range(PARKED):
                states.append((await post(app, "ask", marks))["result"]["requestState"])
            held = contexts() - before
            assert held <= PARKED, f"{held} contexts for {PARKED} parked calls"
            for n, state in enumerate(states):
                answer = {"q1": {"action": "accept", "content": {"n": n}}}
                reply = await post(app, "ask", marks, {"inputResponses": answer, "requestState": state})
                assert reply["result"]["content"][0]["text"].startswith(f"{n} "), reply
        tg.cancel_scope.cancel()


#: Bytes a call parked through the HTTP app may hold beyond the same call parked in memory
#: (``bench_modern.py --http`` against its in-memory figure): the POST leaves nothing but the
#: client's entry in the per-client park count (about 60 B on asyncio, give or take 80 B from run to
#: run). 320 B (asyncio) and 270 B (trio) before the run left the POST's context.
HTTP_EXTRA_BYTES = 200


async def test_a_call_parked_over_http_costs_little_more_than_in_memory(anyio_backend: str) -> None:
    bench = _bench_modern()
    with anyio.fail_after(180):
        over_http = await bench.http_waiting(500)
        in_memory = await bench.server_waiting("modern", 500)
    assert over_http - in_memory <= HTTP_EXTRA_BYTES, f"{over_http:.0f} B over HTTP, {in_memory:.0f} B in memory"


def test_counting_parked_calls_per_client_costs_one_table_entry_per_call() -> None:
    """The per-client bound (HTTP) keeps, per parked call, its owner by handle and a count per client:
    no set of handles per client beside it. 25 B per call with 4,096 parked (the owner dict's table);
    57 B with a set of handles per client."""
    parking = Parking(100_000)
    runs = [Run("ask", [], None, None, parking) for _ in range(4096)]
    tracemalloc.start()
    try:
        base = tracemalloc.take_snapshot()
        token = PARK_OWNER.set(("client", 100_000, None))
        try:
            for run in runs:
                parking.park(run)
        finally:
            PARK_OWNER.reset(token)
        owned = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    unowned = Parking(100_000)
    others = [Run("ask", [], None, None, unowned) for _ in range(4096)]
    tracemalloc.start()
    try:
        base_unowned = tracemalloc.take_snapshot()
        for run in others:
            unowned.park(run)
        plain = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()

    def grown(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot) -> int:
        return sum(d.size_diff for d in after.compare_to(before, "filename"))

    per_call = (grown(owned, base) - grown(plain, base_unowned)) / len(runs)
    assert per_call <= 40, f"{per_call:.0f} B per parked call for the per-client count"
    for run in runs:
        assert parking.take(run.handle) is run
    assert not parking._owned and not parking._owner_of
