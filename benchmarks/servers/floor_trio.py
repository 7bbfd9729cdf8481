"""The floor on trio: the smallest raw trio + msgspec program doing the same exchange over stdio.

One task and one event per call (trio has no futures), no validation, no timeouts. The
same messages as ``floor_asyncio.py``; writes go through one writer task (trio streams
refuse concurrent ``send_all``).

    python benchmarks/servers/floor_trio.py [--tracemalloc]
"""

from __future__ import annotations

import gc
import os
import sys
import tracemalloc
from typing import Any

import trio
import trio.lowlevel
from floor_asyncio import INIT, SCHEMA, CallParams, decode_call, decode_message, decode_reply, encode
from instrument import stats_text


class Floor:
    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.out: list[bytes] = []
        self.wake = trio.Event()
        self.next_id = 0
        self.pending: dict[int, list[Any]] = {}  # id -> [event, result]

    def send(self, message: dict[str, Any]) -> None:
        self.out.append(encode(message) + b"\n")
        self.wake.set()

    async def writer(self, stream: trio.lowlevel.FdStream) -> None:
        while True:
            await self.wake.wait()
            self.wake = trio.Event()
            data, self.out = b"".join(self.out), []
            await stream.send_all(data)

    async def reader(self, stream: trio.lowlevel.FdStream) -> None:
        buf = b""
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                if line:
                    self.on_message(line)

    def on_message(self, line: bytes) -> None:
        m = decode_message(line)
        if m.method is None:
            cell = self.pending.pop(m.id)  # type: ignore[arg-type]
            cell[1] = m.result
            cell[0].set()
        elif m.id is None:
            return
        elif m.method == "tools/call":
            self.nursery.start_soon(self.call, m.id, decode_call(m.params))  # type: ignore[arg-type]
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
            cell: list[Any] = [trio.Event(), None]
            self.pending[eid] = cell
            self.send({
                "jsonrpc": "2.0",
                "id": eid,
                "method": "elicitation/create",
                "params": {"mode": "form", "message": f"Answer for call {params.arguments.i}",
                           "requestedSchema": SCHEMA},
            })
            await cell[0].wait()
            reply = decode_reply(cell[1])
            text = reply.content.answer if reply.content is not None else "no answer"
        self.send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


async def main() -> None:
    async with trio.open_nursery() as nursery:
        floor = Floor(nursery)
        nursery.start_soon(floor.writer, trio.lowlevel.FdStream(sys.stdout.fileno()))
        await floor.reader(trio.lowlevel.FdStream(sys.stdin.fileno()))
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    if "--tracemalloc" in sys.argv:
        tracemalloc.start()
    trio.run(main)
