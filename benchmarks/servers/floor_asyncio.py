"""The floor: the smallest raw asyncio + msgspec program doing the same exchange over stdio.

One task and one future per call, no validation, no timeouts, no limits. It answers
``initialize`` (2025-11-25), ignores notifications, and serves ``tools/call`` of
``ask`` (one ``elicitation/create`` per call) and ``stats``.

    python benchmarks/servers/floor_asyncio.py [--uvloop] [--tracemalloc]
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tracemalloc
from typing import Any

import msgspec
from instrument import stats_text


class Message(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()


class Args(msgspec.Struct):
    i: int = 0
    collect: bool = False
    snapshot: str = ""


class CallParams(msgspec.Struct):
    name: str
    arguments: Args


class Text(msgspec.Struct):
    answer: str


class Reply(msgspec.Struct):
    action: str
    content: Text | None = None


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "bench-floor", "version": "1.0.0"},
}

encode = msgspec.json.Encoder().encode
decode_message = msgspec.json.Decoder(Message).decode
decode_call = msgspec.json.Decoder(CallParams).decode
decode_reply = msgspec.json.Decoder(Reply).decode


class Floor(asyncio.Protocol):
    def __init__(self, out: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.out = out
        self.done = done
        self.buf = b""
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[msgspec.Raw]] = {}
        self.loop = asyncio.get_running_loop()

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(encode(message) + b"\n")

    def data_received(self, data: bytes) -> None:
        lines = (self.buf + data).split(b"\n")
        self.buf = lines.pop()
        for line in lines:
            if line:
                self.on_message(decode_message(line))

    def eof_received(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof_received()

    def on_message(self, m: Message) -> None:
        if m.method is None:  # a response to one of our questions
            fut = self.pending.pop(m.id)  # type: ignore[arg-type]
            fut.set_result(m.result)  # type: ignore[arg-type]
        elif m.id is None:
            return  # a notification
        elif m.method == "tools/call":
            self.loop.create_task(self.call(m.id, decode_call(m.params)))  # type: ignore[arg-type]
        elif m.method == "initialize":
            self.send({"jsonrpc": "2.0", "id": m.id, "result": INIT})
        else:
            self.send({"jsonrpc": "2.0", "id": m.id, "result": {}})

    async def call(self, id_: int | str, params: CallParams) -> None:
        if params.name == "stats":
            text = stats_text(params.arguments.collect, params.arguments.snapshot)
        else:
            self.next_id += 1
            eid = self.next_id
            fut = self.loop.create_future()
            self.pending[eid] = fut
            self.send({
                "jsonrpc": "2.0",
                "id": eid,
                "method": "elicitation/create",
                "params": {"mode": "form", "message": f"Answer for call {params.arguments.i}",
                           "requestedSchema": SCHEMA},
            })
            reply = decode_reply(await fut)
            text = reply.content.answer if reply.content is not None else "no answer"
        self.send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


async def main() -> None:
    loop = asyncio.get_running_loop()
    stdout = open(sys.stdout.fileno(), "wb", buffering=0, closefd=False)  # noqa: SIM115, ASYNC230
    stdin = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115, ASYNC230
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout)
    done: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(lambda: Floor(out, done), stdin)
    await done


if __name__ == "__main__":
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    if "--tracemalloc" in sys.argv:
        tracemalloc.start()
    if "--uvloop" in sys.argv:
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())
