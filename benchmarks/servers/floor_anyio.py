"""The anyio floor: the smallest anyio + msgspec stdio program doing the benchmark exchange.

The embedding comparison (``bench_embed.py``) sets minimcp beside what any anyio program pays:
anyio's asyncio backend, msgspec, and the same messages as ``floor_asyncio.py`` (one task and
one event per call, no validation, no timeouts).

    python benchmarks/servers/floor_anyio.py
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import anyio.abc
from floor_asyncio import INIT, SCHEMA, CallParams, decode_call, decode_message, decode_reply, encode
from instrument import stats_text


class Floor:
    def __init__(self, tg: anyio.abc.TaskGroup) -> None:
        self.tg = tg
        self.next_id = 0
        self.pending: dict[int, list[Any]] = {}  # id -> [event, result]

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message) + b"\n"
        while data:
            data = data[os.write(1, data):]

    def on_message(self, line: bytes) -> None:
        m = decode_message(line)
        if m.method is None:
            slot = self.pending.pop(m.id)  # type: ignore[arg-type]
            slot[1] = m.result
            slot[0].set()
        elif m.id is None:
            return
        elif m.method == "tools/call":
            self.tg.start_soon(self.call, m.id, decode_call(m.params))  # type: ignore[arg-type]
        elif m.method == "initialize":
            self.send({"jsonrpc": "2.0", "id": m.id, "result": INIT})
        else:
            self.send({"jsonrpc": "2.0", "id": m.id, "result": {}})

    async def call(self, id_: int | str, params: CallParams) -> None:
        if params.name == "stats":
            text = stats_text(params.arguments.collect, params.arguments.snapshot)
        else:
            self.next_id += 1
            slot: list[Any] = [anyio.Event(), None]
            self.pending[self.next_id] = slot
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "elicitation/create",
                       "params": {"mode": "form", "message": f"Answer for call {params.arguments.i}",
                                  "requestedSchema": SCHEMA}})
            await slot[0].wait()
            reply = decode_reply(slot[1])
            text = reply.content.answer if reply.content is not None else "no answer"
        self.send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


async def main() -> None:
    os.set_blocking(0, False)
    buf = b""
    async with anyio.create_task_group() as tg:
        floor = Floor(tg)
        while True:
            await anyio.wait_readable(0)
            data = os.read(0, 1 << 16)
            if not data:
                break
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                if line:
                    floor.on_message(line)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    sys.exit(anyio.run(main))
