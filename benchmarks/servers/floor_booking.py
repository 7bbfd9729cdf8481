"""The booking floor: the smallest raw asyncio + msgspec program doing the booking example's exchange.

``book_table(date, party_size)`` on a full date asks the same question as ``examples/booking.py``
(the same message, the same two-field schema with the next free date as its default), books the
answered date and returns the same text and structured content. No validation, no limits, no
timeouts, no deposit or calendar flows: one task and one future per call, like ``floor_asyncio.py``.

The full dates of the benchmark (``FULL_DATES`` here, used by ``booking_server.py`` too): every
other day from ``BASE``, so each call of the driver books a date of its own and the driver can tell
from a question which call asks it.

    python benchmarks/servers/floor_booking.py [--tracemalloc]
"""

from __future__ import annotations

import asyncio
import datetime
import gc
import os
import secrets
import sys
import tracemalloc
from typing import Any

import msgspec
from floor_asyncio import INIT, Message, decode_message, encode
from instrument import stats_text

BASE = datetime.date(2030, 1, 1)
SPAN = 100_000  # calls i and i + SPAN book the same date
FULL_DATES = frozenset(BASE + datetime.timedelta(days=2 * k) for k in range(SPAN))


class Args(msgspec.Struct):
    date: str = ""
    party_size: int = 0
    collect: bool = False
    snapshot: str = ""


class CallParams(msgspec.Struct):
    name: str
    arguments: Args


class Content(msgspec.Struct):
    accept_alternative: bool = False
    date: str | None = None


class Reply(msgspec.Struct):
    action: str
    content: Content | None = None


decode_call = msgspec.json.Decoder(CallParams).decode
decode_reply = msgspec.json.Decoder(Reply).decode
ONE_DAY = datetime.timedelta(days=1)


def schema(default: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "accept_alternative": {"type": "boolean", "description": "Try another date?"},
            "date": {"type": "string", "format": "date", "description": "Alternative date (YYYY-MM-DD)",
                     "default": default},
        },
        "required": ["accept_alternative"],
    }


def result(status: str, day: str, party: int, text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}],
            "structuredContent": {"status": status, "date": day, "party_size": party, **extra}}


class Floor(asyncio.Protocol):
    def __init__(self, out: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.out = out
        self.done = done
        self.buf = b""
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[msgspec.Raw]] = {}
        self.bookings: dict[str, tuple[str, int]] = {}
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
        if m.method is None:
            self.pending.pop(m.id).set_result(m.result)  # type: ignore[arg-type]
        elif m.id is None:
            return
        elif m.method == "tools/call":
            self.loop.create_task(self.call(m.id, decode_call(m.params)))  # type: ignore[arg-type]
        elif m.method == "initialize":
            self.send({"jsonrpc": "2.0", "id": m.id, "result": INIT})
        else:
            self.send({"jsonrpc": "2.0", "id": m.id, "result": {}})

    async def call(self, id_: int | str, params: CallParams) -> None:
        a = params.arguments
        if params.name == "stats":
            out = {"content": [{"type": "text", "text": stats_text(a.collect, a.snapshot)}]}
        else:
            out = await self.book(a.date, a.party_size)
        self.send({"jsonrpc": "2.0", "id": id_, "result": out})

    async def book(self, day_text: str, party: int) -> dict[str, Any]:
        day = datetime.date.fromisoformat(day_text)
        if day in FULL_DATES:
            free = day + ONE_DAY
            while free in FULL_DATES:
                free += ONE_DAY
            default = free.isoformat()
            self.next_id += 1
            fut = self.loop.create_future()
            self.pending[self.next_id] = fut
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "elicitation/create", "params": {
                "mode": "form",
                "message": f"{day_text} is fully booked for a party of {party}. "
                           f"Would you like to try another date? The next free date is {default}.",
                "requestedSchema": schema(default)}})
            reply = decode_reply(await fut)
            if reply.action != "accept" or reply.content is None or not reply.content.accept_alternative:
                return result("not_booked", day_text, party, "Not booked.")
            day_text = reply.content.date or default
        booking_id = secrets.token_urlsafe(16)
        self.bookings[booking_id] = (day_text, party)
        return result("booked", day_text, party,
                      f"Booked a table for {party} on {day_text} (booking {booking_id}).", booking_id=booking_id)


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
    asyncio.run(main())
