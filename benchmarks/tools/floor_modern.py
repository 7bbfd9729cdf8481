"""The in-memory floor of both eras' round trip: the smallest raw server, beside minimcp.

``bench_modern.py`` and ``instr_modern.py`` set minimcp's 2026-07-28 round trip beside its
handshake-era one. This gives the same ratio for a server that does nothing but the exchange
(no validation, no limits, no timeouts, asyncio tasks and futures, msgspec), with the same raw
client (``raw_client.py``) on the same transport (``memory_pair``), so the revision's OWN cost
shows apart from minimcp's:

* handshake era: ``tools/call`` in, a task runs the tool, ``elicitation/create`` out, its response
  in (the future set), the result out;
* 2026-07-28: ``tools/call`` in, a task runs the tool, which parks on a future; the
  ``input_required`` result out with a ``requestState`` that is really sealed (a JSON payload
  binding the method, the tool, a digest of the arguments' bytes, a handle and an expiry;
  HMAC-SHA256; base64url); the retry in with ``inputResponses`` and the state, the state opened
  (MAC checked, payload decoded, binding and expiry checked), the parked tool handed its answer,
  the result out (``resultType`` and ``_meta.serverInfo``, as the revision says results carry).

    python benchmarks/tools/floor_modern.py              # CPU per round trip, floor and minimcp, eras alternated
    python benchmarks/tools/floor_modern.py --instr      # instructions per round trip (valgrind), floor and minimcp

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import hashlib
import hmac
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # tools/, benchmarks/
import bench_modern
import instr_modern
from raw_client import RawClient

from minimcp import memory_pair
from minimcp.transports.memory import MemoryTransport

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
SERVER_INFO = {"name": "floor", "version": "0"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
KEY = secrets.token_bytes(32)
TTL = 600.0


class Answer(msgspec.Struct):
    action: str
    content: dict[str, Any] | None = None


class Message(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()
    result: Answer | None = None


class Args(msgspec.Struct):
    i: int


class CallParams(msgspec.Struct):
    name: str
    arguments: msgspec.Raw
    inputResponses: dict[str, Answer] | None = None
    requestState: str | None = None


class Payload(msgspec.Struct):
    m: str
    t: str
    a: str
    h: int
    x: float


decode_message = msgspec.json.Decoder(Message).decode
decode_call = msgspec.json.Decoder(CallParams).decode
decode_args = msgspec.json.Decoder(Args).decode
decode_payload = msgspec.json.Decoder(Payload).decode
encode = msgspec.json.Encoder().encode
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64url(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=")


def unb64url(text: bytes) -> bytes:
    return binascii.a2b_base64(text.translate(_FROM_URLSAFE) + b"=" * (-len(text) % 4))


def args_digest(raw: bytes) -> str:
    return b64url(hashlib.sha256(raw).digest()[:12]).decode()


def seal(payload: Payload) -> str:
    body = b64url(encode(payload))
    return (body + b"." + b64url(hmac.digest(KEY, body, "sha256"))).decode()


def open_state(token: str) -> Payload:
    """The payload of a state this floor sealed; ValueError if it does not verify."""
    body, _, mac = token.encode().partition(b".")
    if not hmac.compare_digest(unb64url(mac), hmac.digest(KEY, body, "sha256")):
        raise ValueError("bad MAC")
    payload = decode_payload(unb64url(body))
    if payload.x < time.time():
        raise ValueError("expired")
    return payload


class Floor:
    """One connection of the floor server, either era (the client picks by what it sends)."""

    def __init__(self, t: MemoryTransport) -> None:
        self.t = t
        self.ids = 0
        self.pending: dict[int | str, asyncio.Future[Any]] = {}  # handshake era: our request id -> future
        self.parked: dict[int, tuple[asyncio.Future[Any], str, str]] = {}  # 2026-07-28: handle -> (future, tool, args)
        self.loop = asyncio.get_running_loop()
        self.modern = True  # until an ``initialize``: the handshake era


    async def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        if not self.t.send_nowait(data):
            await self.t.send(data)

    async def serve(self) -> None:
        while True:
            try:
                data = await self.t.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            m = decode_message(data)
            if m.method is None:  # a response: the handshake era's answer
                self.pending.pop(m.id).set_result(m.result)  # type: ignore[arg-type]
            elif m.method == "tools/call":
                params = decode_call(m.params)
                if params.requestState is None:
                    self.loop.create_task(self.call(m.id, params))  # type: ignore[arg-type]
                else:
                    self.retry(m.id, params)  # type: ignore[arg-type]
            elif m.method == "initialize":
                self.modern = False
                await self.send({"jsonrpc": "2.0", "id": m.id, "result": INIT})

    def retry(self, id_: int | str, params: CallParams) -> None:
        payload = open_state(params.requestState)  # type: ignore[arg-type]
        fut, tool, digest = self.parked.pop(payload.h)
        if payload.m != "tools/call" or payload.t != tool or payload.t != params.name or payload.a != digest \
                or args_digest(params.arguments) != digest:
            raise ValueError("state bound to another call")
        fut.set_result((params.inputResponses["q1"], id_))  # type: ignore[index]

    async def call(self, id_: int | str, params: CallParams) -> None:
        i = decode_args(params.arguments).i
        self.ids += 1
        fut = self.loop.create_future()
        question = {"message": f"q {i}", "mode": "form", "requestedSchema": SCHEMA}
        if self.modern:
            digest = args_digest(params.arguments)
            self.parked[self.ids] = (fut, params.name, digest)
            state = seal(Payload("tools/call", params.name, digest, self.ids, time.time() + TTL))
            await self.send({"jsonrpc": "2.0", "id": id_, "result": {
                "resultType": "input_required",
                "inputRequests": {"q1": {"method": "elicitation/create", "params": question}},
                "requestState": state, "_meta": META}})
            answer, id_ = await fut
            text = str(answer.content["n"]) if answer.action == "accept" else "?"
            await self.send({"jsonrpc": "2.0", "id": id_, "result": {
                "content": [{"type": "text", "text": text}], "resultType": "complete", "_meta": META}})
        else:
            self.pending[self.ids] = fut
            await self.send({"jsonrpc": "2.0", "id": self.ids, "method": "elicitation/create", "params": question})
            answer = await fut
            text = str(answer.content["n"]) if answer.action == "accept" else "?"
            await self.send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


async def floor_round_trips(era: str, calls: int, concurrency: int) -> float:
    """Round trips/s (``CLOCK``) the floor serves at ``concurrency`` callers (raw client, as ``bench_modern``)."""
    a, b = memory_pair(buffer=4096)
    async with anyio.create_task_group() as tg:
        tg.start_soon(Floor(a).serve)
        client = RawClient(b, era)
        tg.start_soon(client.reader)
        await client.handshake()
        rate = await bench_modern._timed_calls(client.call, calls, concurrency)
        tg.cancel_scope.cancel()
    return rate


def count(tree: str, fn: str, era: str, calls: int) -> int:
    """Instructions valgrind counts for ``calls`` round trips (``fn``: ``floor_round_trips`` of this file or
    ``server_round_trips`` of ``bench_modern``, with minimcp from ``tree``)."""
    return instr_modern.count(tree, era, calls, fn=fn, here=str(Path(__file__).resolve().parent))


SERVERS = {"floor": "floor_modern.floor_round_trips", "minimcp": "bench_modern.server_round_trips"}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--instr", action="store_true", help="instructions per round trip (valgrind) instead of CPU")
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[2]), help="minimcp's checkout")
    parser.add_argument("--runs", type=int, default=5, help="CPU: runs per server and era (alternated)")
    parser.add_argument("--calls", type=int, default=3000, help="CPU: calls per run")
    parser.add_argument("--only", choices=list(SERVERS), help="one server only")
    args = parser.parse_args()
    names = [args.only] if args.only else list(SERVERS)
    if args.instr:
        for name in names:
            per = {era: (count(args.tree, SERVERS[name], era, 1200) - count(args.tree, SERVERS[name], era, 200)) / 1000
                   for era in ("modern", "legacy")}
            print(f"{name}: 2026-07-28 {per['modern']:,.0f}, handshake era {per['legacy']:,.0f} instructions "
                  f"per round trip; ratio {per['legacy'] / per['modern']:.3f}")
        return
    bench_modern.CLOCK = time.process_time
    fns = {"floor": floor_round_trips, "minimcp": bench_modern.server_round_trips}
    figures: dict[tuple[str, str], list[float]] = {(n, e): [] for n in names for e in ("legacy", "modern")}
    for _ in range(args.runs):  # servers and eras alternate: a noisy machine hits all alike
        for name in names:
            for era in ("legacy", "modern"):
                figures[name, era].append(asyncio.run(fns[name](era, args.calls, 100)))
    for name in names:
        legacy, modern = (statistics.median(figures[name, e]) for e in ("legacy", "modern"))
        ratios = [m / lg for lg, m in zip(figures[name, "legacy"], figures[name, "modern"], strict=True)]
        print(f"{name}: CPU µs per round trip, handshake era {1e6 / legacy:.1f}, 2026-07-28 {1e6 / modern:.1f} "
              f"(medians of {args.runs} x {args.calls}); ratio {statistics.median(ratios):.3f} "
              f"(runs: {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
