"""The canned-bytes ceiling: the benchmark's Streamable HTTP exchange as one asyncio Protocol writing prebuilt bytes.

A ceiling to measure against, not a server: no ASGI, no HTTP library, no JSON parsing. It serves exactly
what ``driver.py`` sends and nothing else (issue 31): ``POST initialize`` -> a JSON result and an
``mcp-session-id``; ``notifications/initialized`` -> ``202``; ``tools/call`` of ``ask`` -> a chunked SSE
response whose first event is ``elicitation/create`` (held open); the ``POST`` of the answer -> ``202``,
and the result carrying the answer's token on the held stream, which then ends; ``DELETE`` -> ``204``.
``tools/call`` of ``stats`` answers with ``instrument.stats_text`` (RSS, tracemalloc) for the memory runs.

Requests are cut by ``bytes.find`` and slicing (the head's ``content-length`` and ``mcp-session-id``,
the body's ``"method"``, ``"id"``, ``"i"`` and ``"answer"``); responses are byte templates with the ids
and the token spliced in. No validation, no limits, no timeouts, no back-pressure, no pipelining beyond
requests queued on one connection, one process on the stock asyncio loop. A message that is not the
driver's gets a wrong answer or none: never point anything but the benchmark driver at it.

    python benchmarks/servers/canned_http.py [--tracemalloc]    # prints ``PORT <n>`` once it listens

The driver has no ``--server canned``: ``http_backends.py`` runs it as a server prefix of the HTTP floor
(``BENCH_SERVER_PREFIX="python benchmarks/servers/canned_http.py" driver.py ... --server floor --wire http
--asgi canned``); the floor's own command, which the driver appends, is ignored but for ``--tracemalloc``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import sys
import tracemalloc
from typing import Any

from floor_asyncio import INIT, SCHEMA
from instrument import analysis_hooks, stats_text


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# --- the canned responses (``%b``: a spliced id, call number, token or session id) -------------------

INIT_BODY = b'{"jsonrpc":"2.0","id":%b,"result":' + _json(INIT) + b"}"
INIT_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: %b\r\n"
             b"content-length: %d\r\n\r\n")
ACCEPTED = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
NO_CONTENT = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
SSE_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\n\r\n")
ELICIT = (b'data: {"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":{"mode":"form",'
          b'"message":"Answer for call %b","requestedSchema":' + _json(SCHEMA) + b"}}\n\n")
RESULT = b'data: {"jsonrpc":"2.0","id":%b,"result":{"content":[{"type":"text","text":"%b"}]}}\n\n'
RESULT_JSON = b'data: {"jsonrpc":"2.0","id":%b,"result":{"content":[{"type":"text","text":%b}]}}\n\n'
EMPTY_RESULT = b'{"jsonrpc":"2.0","id":%b,"result":{}}'
JSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
LAST_CHUNK = b"\r\n0\r\n\r\n"  # the end of the event's chunk, then the last chunk


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


def last_chunk(data: bytes) -> bytes:
    return b"%x\r\n%b" % (len(data), data) + LAST_CHUNK


def value(body: bytes, key: bytes, end: bytes = b",}") -> bytes:
    """The raw JSON value after ``key`` (``b'"id":'``), up to the first byte of ``end``; empty when absent."""
    start = body.find(key)
    if start < 0:
        return b""
    start += len(key)
    stop = start
    n = len(body)
    while stop < n and body[stop] not in end:
        stop += 1
    return body[start:stop]


def string(body: bytes, key: bytes) -> bytes:
    """The raw contents of the JSON string after ``key`` (``b'"answer":"'``): no escape is undone."""
    start = body.find(key)
    if start < 0:
        return b""
    start += len(key)
    return body[start:body.find(b'"', start)]


class Session:
    __slots__ = ("next_id", "pending")

    def __init__(self) -> None:
        self.next_id = 0
        #: elicitation id -> (the held stream's transport, the call's raw JSON id)
        self.pending: dict[int, tuple[asyncio.Transport, bytes]] = {}


SESSIONS: dict[bytes, Session] = {}


class CannedHttp(asyncio.Protocol):
    """One connection: requests cut from the buffer as they complete, each answered at once."""

    __slots__ = ("buf", "transport")

    def __init__(self) -> None:
        self.buf = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end]
            lower = head.lower()
            length = value(lower, b"\r\ncontent-length:", b"\r")
            start = end + 4
            stop = start + (int(length) if length else 0)
            if len(buf) < stop:
                break
            self.request(head, lower, buf[start:stop])
            buf = buf[stop:]
        self.buf = buf

    def request(self, head: bytes, lower: bytes, body: bytes) -> None:
        write = self.transport.write
        at = lower.find(b"\r\nmcp-session-id:")  # (the value keeps its case)
        sid = value(head[at:], b":", b"\r").strip() if at >= 0 else b""
        if head.startswith(b"DELETE"):
            SESSIONS.pop(sid, None)
            write(NO_CONTENT)
            return
        method = string(body, b'"method":"')
        if method == b"initialize":
            sid = secrets.token_urlsafe(24).encode()
            SESSIONS[sid] = Session()
            answer = INIT_BODY % value(body, b'"id":')
            write(INIT_HEAD % (sid, len(answer)) + answer)
            return
        session = SESSIONS.get(sid)
        if session is None:
            write(NOT_FOUND)
            return
        if not method:  # the answer to a question: its call's result on the held stream
            held = session.pending.pop(int(value(body, b'"id":')), None)
            write(ACCEPTED)
            if held is not None:
                stream, call_id = held
                token = string(body, b'"answer":"') or b"no answer"
                stream.write(last_chunk(RESULT % (call_id, token)))
            return
        call_id = value(body, b'"id":')
        if not call_id:  # a notification
            write(ACCEPTED)
        elif method != b"tools/call":  # ping and the like
            answer = EMPTY_RESULT % call_id
            write(JSON_HEAD % len(answer) + answer)
        elif string(body, b'"name":"') == b"ask":
            session.next_id += 1
            eid = session.next_id
            session.pending[eid] = (self.transport, call_id)
            write(SSE_HEAD + chunk(ELICIT % (eid, value(body, b'"i":'))))
        else:  # stats (the memory runs' probe)
            text = stats_text(b'"collect":true' in body, string(body, b'"snapshot":"').decode())
            write(SSE_HEAD + last_chunk(RESULT_JSON % (call_id, _json(text))))


async def main(trace: bool) -> None:
    if trace:
        tracemalloc.start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = await asyncio.get_running_loop().create_server(CannedHttp, sock=sock, backlog=2048)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    analysis_hooks()
    argv = sys.argv[1:]  # as a server prefix: the floor's command (interpreter, script, its options) follows
    if "trio" in argv:
        raise SystemExit("canned_http.py: asyncio only")
    try:
        asyncio.run(main("--tracemalloc" in argv))
    except KeyboardInterrupt:
        sys.exit(0)
