"""The HTTP floor: the smallest raw ASGI 3 + msgspec program doing the benchmark's Streamable HTTP exchange.

POST ``initialize`` -> JSON result and an ``mcp-session-id``; POST ``tools/call`` of
``ask`` -> an SSE stream carrying one ``elicitation/create``; POST of the answer ->
``202``; the result on the first POST's stream, which then ends. No validation, no
header checks, no resumability (no event ids), no timeouts, no limits: one dict
lookup for the session, one future (trio: event) per call, the request's own
coroutine waits for the answer. Served by the same ASGI servers as minimcp
(``asgi_run.py``).

With ``BENCH_FLOOR_OBLIGED=1`` ("floor+" in ``http_backends.py``) the call carries the two obligations
minimcp has and the plain floor skips: the call runs in a task of its own (it outlives its response: a
dropped connection is not a cancellation), cancellable alone (on trio under a cancel scope of its own,
as minimcp's handlers; on asyncio a bare task), and the request's coroutine waits in ``receive()`` for
the client to leave or the response to end. Nothing else changes.

    python benchmarks/servers/floor_http.py [--asgi uvicorn-h11|uvicorn-httptools|hypercorn|minimcp-h1|granian]
        [--backend asyncio|uvloop|trio] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import gc
import os
import secrets
import sys
import tracemalloc
from typing import Any

import anyio
from asgi_run import ASGI_SERVERS, serve
from floor_asyncio import INIT, SCHEMA, Message, decode_call, decode_message, decode_reply, encode
from instrument import COUNTS, analysis_hooks, stats_text

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
JSON = [(b"content-type", b"application/json")]
OBLIGED = bool(os.environ.get("BENCH_FLOOR_OBLIGED"))


class Session:
    __slots__ = ("next_id", "pending")

    def __init__(self) -> None:
        self.next_id = 0
        self.pending: dict[int, Any] = {}  # elicitation id -> future (asyncio) / [event, result] (trio)


class FloorHttp:
    def __init__(self, trio_mode: bool) -> None:
        self.sessions: dict[bytes, Session] = {}
        self.trio_mode = trio_mode
        self.tasks: set[Any] = set()  # floor+ on asyncio: the calls' tasks (asyncio keeps only weak references)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":  # hypercorn sends it (and on trio insists on an answer)
                while (await receive())["type"] != "lifespan.shutdown":
                    await send({"type": "lifespan.startup.complete"})
                await send({"type": "lifespan.shutdown.complete"})
            return
        sid = b""
        for k, v in scope["headers"]:
            if k == b"mcp-session-id":
                sid = v
                break
        if scope["method"] == "DELETE":
            self.sessions.pop(sid, None)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        m = decode_message(body)
        if m.method == "initialize":
            sid = secrets.token_urlsafe(24).encode()
            self.sessions[sid] = Session()
            answer = encode({"jsonrpc": "2.0", "id": m.id, "result": INIT})
            await send({"type": "http.response.start", "status": 200,
                        "headers": [*JSON, (b"mcp-session-id", sid), (b"content-length", str(len(answer)).encode())]})
            await send({"type": "http.response.body", "body": answer})
            return
        session = self.sessions[sid]
        if m.method is None or m.id is None:  # an answer to our question, or a notification
            if m.method is None:
                self.answer(session, m)
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        if OBLIGED:
            self.spawn(self.call(session, m, send))
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        if m.method == "tools/call":
            params = decode_call(m.params)
            if params.name == "stats":
                text = stats_text(params.arguments.collect, params.arguments.snapshot)
            else:
                COUNTS["asks"] += 1
                session.next_id += 1
                eid = session.next_id
                wait = self.waiter(session, eid)
                await send({"type": "http.response.body", "more_body": True, "body": b"data: " + encode({
                    "jsonrpc": "2.0", "id": eid, "method": "elicitation/create",
                    "params": {"mode": "form", "message": f"Answer for call {params.arguments.i}",
                               "requestedSchema": SCHEMA},
                }) + b"\n\n"})
                reply = decode_reply(await wait)
                text = reply.content.answer if reply.content is not None else "no answer"
            result: Any = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        data = b"data: " + encode({"jsonrpc": "2.0", "id": m.id, "result": result}) + b"\n\n"
        await send({"type": "http.response.body", "body": data})

    async def call(self, session: Session, m: Message, send: Any) -> None:
        """floor+: the steps of ``__call__`` after the response's head, in a task of its own (written out twice:
        a shared helper would add a frame, or change what the plain floor holds while it waits)."""
        if m.method == "tools/call":
            params = decode_call(m.params)
            if params.name == "stats":
                text = stats_text(params.arguments.collect, params.arguments.snapshot)
            else:
                COUNTS["asks"] += 1
                session.next_id += 1
                eid = session.next_id
                wait = self.waiter(session, eid)
                await send({"type": "http.response.body", "more_body": True, "body": b"data: " + encode({
                    "jsonrpc": "2.0", "id": eid, "method": "elicitation/create",
                    "params": {"mode": "form", "message": f"Answer for call {params.arguments.i}",
                               "requestedSchema": SCHEMA},
                }) + b"\n\n"})
                reply = decode_reply(await wait)
                text = reply.content.answer if reply.content is not None else "no answer"
            result: Any = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        data = b"data: " + encode({"jsonrpc": "2.0", "id": m.id, "result": result}) + b"\n\n"
        await send({"type": "http.response.body", "body": data})

    def spawn(self, body: Any) -> None:
        """Run ``body`` in a task of its own (floor+): on trio under a cancel scope of its own."""
        if self.trio_mode:
            import trio

            trio.lowlevel.spawn_system_task(self._under, trio.CancelScope(), body)
        else:
            import asyncio

            task = asyncio.get_running_loop().create_task(body)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    @staticmethod
    async def _under(scope: Any, body: Any) -> None:
        with scope:
            await body

    def waiter(self, session: Session, eid: int) -> Any:
        """What the call awaits for its answer: the future itself (asyncio), or a wait on an event (trio)."""
        if self.trio_mode:
            import trio

            cell: list[Any] = [trio.Event(), None]
            session.pending[eid] = cell
            return self._wait_trio(cell)
        import asyncio

        fut = asyncio.get_running_loop().create_future()
        session.pending[eid] = fut
        return fut

    @staticmethod
    async def _wait_trio(cell: list[Any]) -> Any:
        await cell[0].wait()
        return cell[1]

    def answer(self, session: Session, m: Message) -> None:
        waiting = session.pending.pop(m.id)  # type: ignore[arg-type]
        if self.trio_mode:
            waiting[1] = m.result
            waiting[0].set()
        else:
            waiting.set_result(m.result)


if __name__ == "__main__":
    analysis_hooks()
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    parser = argparse.ArgumentParser()
    parser.add_argument("--asgi", choices=ASGI_SERVERS, default="uvicorn-h11")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    app = FloorHttp(args.backend == "trio")
    options = {"use_uvloop": True} if args.backend == "uvloop" else {}
    try:
        anyio.run(serve, app, args.asgi, args.backend, backend="trio" if args.backend == "trio" else "asyncio",
                  backend_options=options)
    except KeyboardInterrupt:
        sys.exit(0)
