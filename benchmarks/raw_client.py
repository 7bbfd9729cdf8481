"""A raw in-memory client for ``bench_modern.py``: bytes only, nothing of minimcp's client.

It lives in a file of its own so that tracemalloc can leave out every byte it
allocates (any frame in this file): what remains is the server's share.

Both eras: on 2025-11-25 it does the handshake and answers each nested
``elicitation/create``; on 2026-07-28 it answers each ``input_required`` by
calling again with ``inputResponses`` and the ``requestState``.

Like for like: in :meth:`RawClient.call` the reader answers the question itself in both eras
(the nested ``elicitation/create``, or the ``input_required`` result by sending the retry), and
the calling task wakes once per call, for the final result.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from minimcp.transports.memory import MemoryTransport

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
#: The envelope as every request carries it, encoded once (a client's envelope does not change
#: between its requests; the handshake-era client sends its equivalent once, in ``initialize``).
ENVELOPE_JSON = msgspec.Raw(msgspec.json.encode(ENVELOPE))



class _Message(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: Any = None


_decode = msgspec.json.Decoder(_Message).decode
_encode = msgspec.json.Encoder().encode


def answer_of(message: str) -> dict[str, Any]:
    """The answer to the benchmark tool's question ``q <i>``."""
    return {"action": "accept", "content": {"n": int(message.split()[1])}}


def retry_params(i: int, first: _Message) -> dict[str, Any]:
    """A 2026-07-28 retry of call ``i``: the answer to its one question and its ``requestState`` echoed."""
    result = first.result
    question = result["inputRequests"]["q1"]["params"]
    return {
        "name": "ask",
        "arguments": {"i": i},
        "_meta": ENVELOPE_JSON,
        "inputResponses": {"q1": answer_of(question["message"])},
        "requestState": result["requestState"],
    }


class RawClient:
    """One connection; ``call`` returns the tool's text, answering its one question on the way."""

    def __init__(self, transport: MemoryTransport, era: str) -> None:
        self.t = transport
        self.era = era
        self.ids = itertools.count(1)
        self.waiting: dict[int, Callable[[_Message], None]] = {}
        #: 2026-07-28 calls whose ``input_required`` the reader answers itself: id -> (call, final callback).
        self.retrying: dict[int, tuple[int, Callable[[_Message], None]]] = {}
        #: Parking mode (:meth:`fill`): questions held unanswered, first results kept, by call.
        self.holding = False
        self.held: list[tuple[Any, str]] = []
        self.firsts: dict[int, _Message] = {}
        self.done = 0
        self.texts: dict[int, str] = {}
        self._all = anyio.Event()
        self._target = 0

    async def reader(self) -> None:
        while True:
            try:
                data = await self.t.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            m = _decode(data)
            if m.method is not None:
                if m.method == "elicitation/create" and m.id is not None:
                    if self.holding:
                        self.held.append((m.id, m.params["message"]))
                        self._count()
                    else:
                        await self._send({"jsonrpc": "2.0", "id": m.id, "result": answer_of(m.params["message"])})
                continue
            if self.retrying:
                retry = self.retrying.pop(m.id, None)  # type: ignore[arg-type]
                if retry is not None and m.result is not None and m.result.get("resultType") == "input_required":
                    # Answered here, as the handshake era's question is above: the caller wakes once.
                    i, cb = retry
                    self.waiting.pop(m.id, None)  # type: ignore[arg-type]
                    id_ = next(self.ids)
                    self.waiting[id_] = cb
                    await self._send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                                      "params": retry_params(i, m)})
                    continue
            cb = self.waiting.pop(m.id, None)  # type: ignore[arg-type]
            if cb is not None:
                cb(m)

    def _count(self) -> None:
        self.done += 1
        if self.done == self._target:
            self._all.set()

    def _expect(self, n: int) -> anyio.Event:
        self.done, self._target, self._all = 0, n, anyio.Event()
        return self._all

    async def fill(self, n: int) -> None:
        """Start ``n`` calls and leave each waiting for its answer (held here, or parked there)."""
        self.holding = True
        all_in = self._expect(n)
        for i in range(n):
            params: dict[str, Any] = {"name": "ask", "arguments": {"i": i}}
            if self.era == "modern":
                params["_meta"] = ENVELOPE_JSON
            self._fire("tools/call", params, self._first_of(i))
        await all_in.wait()

    async def drain(self, n: int) -> None:
        """Answer every waiting call and check each result carries its own answer."""
        self.holding = False
        all_in = self._expect(n)
        if self.era == "modern":
            firsts, self.firsts = self.firsts, {}
            for i, first in firsts.items():
                await self._fire_retry(i, first)
        else:
            held, self.held = self.held, []
            for id_, message in held:
                await self._send({"jsonrpc": "2.0", "id": id_, "result": answer_of(message)})
        await all_in.wait()
        assert all(text == str(i) for i, text in self.texts.items()), "an answer reached the wrong call"
        self.texts.clear()

    def _first_of(self, i: int) -> Callable[[_Message], None]:
        def done(m: _Message) -> None:
            if self.holding and self.era == "modern":
                assert m.result["resultType"] == "input_required", m
                self.firsts[i] = m
            else:
                self.texts[i] = str(m.result["content"][0]["text"])
            self._count()

        return done

    def _fire(self, method: str, params: dict[str, Any], cb: Callable[[_Message], None]) -> None:
        id_ = next(self.ids)
        self.waiting[id_] = cb
        if not self.t.send_nowait(_encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})):
            raise RuntimeError("the memory transport's buffer is too small for this fill")

    async def _fire_retry(self, i: int, first: _Message) -> None:
        self._fire("tools/call", retry_params(i, first), self._first_of(i))

    async def _send(self, message: dict[str, Any]) -> None:
        await self.t.send(_encode(message))

    async def request(self, method: str, params: dict[str, Any], *, retry_of: int | None = None) -> _Message:
        """Send a request and wait for its response (``retry_of``: a 2026-07-28 call of ``ask`` whose
        ``input_required`` the reader answers with the retry; the response is then the retry's)."""
        id_ = next(self.ids)
        box: list[_Message] = []
        event = anyio.Event()

        def done(m: _Message) -> None:
            box.append(m)
            event.set()

        self.waiting[id_] = done
        if retry_of is not None:
            self.retrying[id_] = (retry_of, done)
        await self._send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        await event.wait()
        if box[0].error is not None:
            raise RuntimeError(f"{method}: {box[0].error}")
        return box[0]

    async def handshake(self) -> None:
        if self.era == "legacy":
            await self.request("initialize", {
                "protocolVersion": LEGACY,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "raw", "version": "1"},
            })
            await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def first(self, i: int) -> _Message:
        params: dict[str, Any] = {"name": "ask", "arguments": {"i": i}}
        if self.era == "modern":
            params["_meta"] = ENVELOPE_JSON
        return await self.request("tools/call", params)

    async def retry(self, i: int, first: _Message) -> _Message:
        return await self.request("tools/call", retry_params(i, first))

    async def call(self, i: int) -> str:
        """One call of ``ask``, its question answered by the reader (either era); the tool's text."""
        params: dict[str, Any] = {"name": "ask", "arguments": {"i": i}}
        if self.era == "modern":
            params["_meta"] = ENVELOPE_JSON
            m = await self.request("tools/call", params, retry_of=i)
        else:
            m = await self.request("tools/call", params)
        return str(m.result["content"][0]["text"])
