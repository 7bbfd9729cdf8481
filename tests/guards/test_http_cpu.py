"""What a Streamable HTTP round trip costs the server in loop work, counted (not timed): timers, writes.

The counts are of work that does not depend on the machine's speed, so these tests hold on a
busy machine: timers made per request on a kept-alive connection, by the ASGI server and
minimcp's guard around it.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from minimcp import Server
from minimcp.transports.http import StreamableHTTPApp
from minimcp.transports.http._pacing import PRIMING_MAX_HOLD, Pacer
from minimcp.transports.http._response import Reader
from minimcp.transports.http._streams import Stream
from tests.helpers.asgi_guard import UVICORN, _port, serving
from tests.helpers.http_lean import Exchange, accept, ask_call, ask_server, initialize

pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

REQUESTS = 40


async def _get_404s(port: int, n: int) -> None:
    """``n`` requests on one kept-alive connection, each read to the end of its response."""
    request = f"GET /elsewhere HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode()
    stream = await anyio.connect_tcp("127.0.0.1", port)
    async with stream:
        got = b""
        for _ in range(n):
            await stream.send(request)
            while True:
                head, sep, rest = got.partition(b"\r\n\r\n")
                if sep:
                    length = next(
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    if len(rest) >= length:
                        assert head.startswith(b"HTTP/1.1 404"), head
                        got = rest[length:]
                        break
                got += await stream.receive()


@pytest.mark.parametrize("asgi_server", UVICORN)
async def test_the_guard_makes_no_timer_per_request_on_a_kept_alive_connection(
    asgi_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header deadline is a number each response end moves, checked by one timer per connection:
    on a kept-alive connection only uvicorn's own keep-alive timer is made per request (before: a
    second one per request, for the guard, made and cancelled every time)."""
    made: collections.Counter[object] = collections.Counter()  # per loop: another test's loop still
    # winding down in a thread of this process makes timers of its own meanwhile
    call_at = asyncio.base_events.BaseEventLoop.call_at

    def counted_call_at(loop: asyncio.base_events.BaseEventLoop, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        # Counted where asyncio makes every timer (call_later comes here too). Not by replacing the
        # TimerHandle class: its own ordering tests isinstance(other, TimerHandle) against the module's
        # name, so timers made before and after could no longer be compared, and the server's loop
        # died of a TypeError in its timer heap (the client then waited for a 404 till the test's bound).
        made[loop] += 1
        return call_at(loop, *args, **kwargs)

    with anyio.fail_after(30):
        async with serving(Server("timers"), asgi_server) as (url, _):
            port = _port(url)
            await _get_404s(port, 2)  # warm: the connection's own timer exists
            monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "call_at", counted_call_at)
            await _get_404s(port, REQUESTS)
            monkeypatch.undo()
    # uvicorn: one keep-alive timer per response; the guard: one for the new connection; a few for the
    # app's own clocks at most
    busiest = max(made.values(), default=0)  # the server's loop: it serves every request
    assert REQUESTS <= busiest <= REQUESTS + 6, made


def primed_reader(send: Any) -> tuple[Stream, Reader, Pacer]:
    """A response whose head is out and whose priming event waits to go (the stream's owner), and a pacer."""
    stream = Stream(1, 1, 8)
    reader = Reader(stream, send, 0, b"prime\n\n", 30.0)
    reader.release()  # the response head is out
    stream.owner = reader
    return stream, reader, Pacer(keepalive_interval=15.0)


async def test_on_a_lagging_loop_a_priming_event_waits_for_the_first_event_up_to_priming_max_hold() -> None:
    """A loop that lags (its priming clock ticks late) is behind on the calls it holds: their first
    events come late too. A priming event held then waits up to ``PRIMING_MAX_HOLD`` and goes out with
    the first event in one write (before: alone at the second tick, one write more per call)."""
    sent: list[bytes] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["body"])

    stream, reader, pacer = primed_reader(send)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            pacer.hold_priming(reader)
            pacer.tick(tg, now=10.0, lagging=True)
            pacer.tick(tg, now=10.1, lagging=True)  # on time, this one would let it go
            pacer.tick(tg, now=10.5, lagging=True)
            await anyio.wait_all_tasks_blocked()
            assert reader.hold and sent == []
            stream.push(b"question")
            await reader.flush()
            assert sent == [b"prime\n\nid: 1-1\ndata: question\n\n"]  # one write for both


async def test_a_lagging_loop_lets_a_held_priming_event_go_at_priming_max_hold() -> None:
    sent: list[bytes] = []
    wrote = anyio.Event()

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["body"])
        wrote.set()

    _stream, reader, pacer = primed_reader(send)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            pacer.hold_priming(reader)
            pacer.tick(tg, now=10.0, lagging=True)
            pacer.tick(tg, now=10.0 + PRIMING_MAX_HOLD / 2, lagging=True)
            await anyio.wait_all_tasks_blocked()
            assert sent == []
            pacer.tick(tg, now=10.0 + PRIMING_MAX_HOLD, lagging=True)
            await wrote.wait()
            assert sent == [b"prime\n\n"] and not reader.hold


def test_scope_headers_takes_the_one_pass_only_for_lower_case_names_without_repeats() -> None:
    from minimcp.transports.http._asgi import scope_headers

    assert scope_headers({"headers": [(b"host", b"a"), (b"accept", b"x")]}) == {"host": "a", "accept": "x"}
    assert scope_headers({"headers": [(b"Host", b"a"), (b"X-A", b"1"), (b"x-a", b"2")]}) == {"host": "a", "x-a": "1, 2"}
    assert scope_headers({"headers": [(b"host", b"a"), (b"x", memoryview(b"1"))]}) == {"host": "a", "x": "1"}
    assert scope_headers({"headers": ((b"host", b"a"),)}) == {"host": "a"}
    assert scope_headers({}) == {}


async def test_serve_http_tunes_the_gc_only_when_asked_and_undoes_it_when_it_ends() -> None:
    """``tune_gc=True``: the start-up heap frozen and a higher first threshold while serving; off by
    default (the GC is the whole process's), and both undone when ``serve_http`` ends."""
    import gc

    from minimcp import serve_http
    from minimcp.hosting.http import TUNED_GC_THRESHOLD

    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with anyio.fail_after(30):
        for tune in (False, True):
            async with anyio.create_task_group() as tg:
                await tg.start(lambda task_status, tune=tune: serve_http(
                    Server("gc"), tune_gc=tune, task_status=task_status))
                if tune:
                    assert gc.get_threshold()[0] == max(before[0], TUNED_GC_THRESHOLD)
                    assert gc.get_freeze_count() > 0
                else:
                    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
                tg.cancel_scope.cancel()
            assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_server_run_http_tunes_the_gc_unless_told_not_to(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Server.run("http")`` runs its own loop until the server stops: it passes ``tune_gc=True`` to
    ``serve_http`` unless told ``tune_gc=False``; WebSocket gets no such option."""
    import minimcp.hosting.run as serving

    seen: list[tuple[str, object]] = []

    async def recorded(server: Server, transport: str, host: str, port: int, **options: Any) -> None:
        seen.append((transport, options.get("tune_gc", "not passed")))

    monkeypatch.setattr(serving, "serve_network", recorded)
    monkeypatch.setattr(serving, "_announce", lambda: None)
    server = Server("gc")
    server.run("http", port=0, backend=backend)
    server.run("http", port=0, backend=backend, tune_gc=False)
    server.run("ws", port=0, backend=backend)
    assert seen == [("http", True), ("http", False), ("ws", "not passed")]


async def test_a_lagging_loop_does_not_hold_on_to_a_reader_whose_first_event_went_out() -> None:
    """Kept on a lagging loop, the held priming events are sifted (every 0.1 s of ticks): a reader whose
    first event took its priming event along is let go, not kept up to ``PRIMING_MAX_HOLD``."""
    sent: list[bytes] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["body"])

    readers = []
    for key in (1, 2, 3):
        stream = Stream(key, key, 8)
        reader = Reader(stream, send, 0, b"prime\n\n", 30.0)
        reader.release()
        stream.owner = reader
        readers.append(reader)
    pacer = Pacer(keepalive_interval=15.0)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            pacer.hold_priming(readers[0])
            pacer.hold_priming(readers[1])
            pacer.tick(tg, now=10.0, lagging=True)
            pacer.hold_priming(readers[2])  # a later batch
            pacer.tick(tg, now=10.05, lagging=True)
            readers[0].stream.push(b"question")
            await readers[0].flush()  # its first event, with the priming event
            for now in (10.2, 10.25, 10.3):
                pacer.tick(tg, now=now, lagging=True)
            kept = [r for _, batch in pacer._older for r in batch]
            assert readers[1] in kept and readers[2] in kept and readers[0] not in kept
            assert not readers[0].hold and readers[1].hold


@asynccontextmanager
async def app_with_session() -> AsyncIterator[tuple[StreamableHTTPApp, TaskGroup, str]]:
    """The ``ask`` server's app running, one session initialized on it; everything stopped after (30 s bound)."""
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            yield app, tg, sid
            tg.cancel_scope.cancel()


async def answered_calls(app: StreamableHTTPApp, tg: TaskGroup, sid: str, n: int) -> list[Exchange]:
    """``n`` calls of the ``ask`` tool one after the other, each question answered and its result
    checked, each client then gone; the calls' exchanges, in order."""
    calls = []
    for i in range(1, n + 1):
        call = ask_call(sid, i)
        tg.start_soon(call.run, app)
        question = await call.wait_for("elicitation/create")
        await accept(question, sid, f"a{i}").run(app)
        assert (await call.wait_for("result"))["result"]["content"][0]["text"] == f"a{i}"
        call.gone.set()
        calls.append(call)
    return calls


def _ask_body(i: int) -> dict[str, Any]:
    """A ``tools/call`` of the ``ask`` tool with request id ``i`` (as :func:`ask_call` sends)."""
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "ask", "arguments": {"i": i}}}


class _WakingExchange(Exchange):
    """An exchange whose server ends a pending ``receive()`` once the response is complete (as uvicorn does)."""

    async def send(self, message: MutableMapping[str, Any]) -> None:
        await super().send(message)
        if message.get("type") == "http.response.body" and not message.get("more_body", False):
            self.gone.set()


@pytest.mark.parametrize("wakes", [False, True], ids=["server-never-wakes", "server-wakes"])
async def test_a_finished_response_ends_its_wait_without_a_checkpoint_on_asyncio(
    wakes: bool, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last write of a response ends the response's wait in ``receive()`` at once on asyncio (completing
    the wait's own future: no cancellation, so no race to wait out): the handler that wrote it takes no
    extra turn of the loop (before: one ``checkpoint`` per finished response). On trio, whose wait ends by a
    cancellation, the handler still lets the ASGI server's own wake come first (at most one per response)."""
    from minimcp.transports._backend_io import checkpoint as real

    turns = [0]

    async def counted() -> None:
        turns[0] += 1
        await real()

    monkeypatch.setattr("minimcp.transports.http._response.checkpoint", counted)
    n = 10
    async with app_with_session() as (app, tg, sid):
        turns[0] = 0
        for i in range(1, n + 1):
            call = _WakingExchange(_ask_body(i), sid) if wakes else ask_call(sid, i)
            done = anyio.Event()

            async def run(call: Exchange = call, done: anyio.Event = done) -> None:
                await call.run(app)
                done.set()

            tg.start_soon(run)
            question = await call.wait_for("elicitation/create")
            await accept(question, sid, f"a{i}").run(app)
            assert (await call.wait_for("result"))["result"]["content"][0]["text"] == f"a{i}"
            await done.wait()  # the response returned: its wait ended
        if anyio_backend == "asyncio":
            assert turns[0] == 0, f"{turns[0]} checkpoints for {n} finished responses"
        else:
            assert turns[0] <= n


async def test_a_call_hands_its_result_to_the_response_without_a_write_coroutine(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On asyncio the result (the last event of a call's stream) is written the way the question is
    (``Reader.flush_nowait``): no ``flush`` / ``write_all`` / ``_write`` coroutines per call (before: one
    each). On trio the app's task writes it, as before."""
    flushes = [0]
    real = Reader.flush

    async def counted(self: Reader) -> None:
        flushes[0] += 1
        await real(self)

    monkeypatch.setattr(Reader, "flush", counted)
    n = 10
    async with app_with_session() as (app, tg, sid):
        flushes[0] = 0
        for call in await answered_calls(app, tg, sid, n):
            assert call.sent[-1]["more_body"] is False  # with the end of the response, in one write
        if anyio_backend == "asyncio":
            assert flushes[0] == 0, f"{flushes[0]} flush coroutines for {n} results"
        else:
            assert flushes[0] <= 2 * n


class _SlowEndExchange(Exchange):
    """An exchange whose server takes the end of the response only when :attr:`release` is set (a client
    that reads its result late)."""

    def __init__(self, body: dict[str, Any], session_id: str | None) -> None:
        super().__init__(body, session_id)
        self.release = anyio.Event()
        self.blocked = anyio.Event()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message.get("type") == "http.response.body" and not message.get("more_body", False):
            self.blocked.set()
            await self.release.wait()
        await super().send(message)


async def test_a_result_the_client_takes_late_frees_the_handler_and_still_arrives(anyio_backend: str) -> None:
    """The handler is not held while the end of its response waits for the client: its in-flight slot is
    free at once, and the response's own coroutine writes the result when the client reads."""
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            conn = app.connection(sid)
            assert conn is not None
            call = _SlowEndExchange(_ask_body(1), sid)
            finished = anyio.Event()

            async def run() -> None:
                await call.run(app)
                finished.set()

            tg.start_soon(run)
            question = await call.wait_for("elicitation/create")
            await accept(question, sid, "late").run(app)
            await call.blocked.wait()
            with anyio.fail_after(10):
                while conn.session.inflight_count:  # noqa: ASYNC110 - polls a state the test does not own
                    await anyio.sleep(0.01)
            assert not finished.is_set()
            call.release.set()
            await finished.wait()
            assert call.messages()[-1]["result"]["content"][0]["text"] == "late"
            assert call.sent[-1]["more_body"] is False
            tg.cancel_scope.cancel()


async def test_a_round_trip_looks_up_neither_the_backend_clock_nor_its_session_in_a_coroutine(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per round trip the app reads the backend's clock directly (``anyio.current_time`` looks the backend
    up at each call: before, 3 per round trip, to mark the session used) and finds a POST's session
    without a coroutine (``_session_of`` answers only the refusals: before, one per POST)."""
    clock_reads = [0]
    lookups = [0]
    real_clock = anyio.current_time
    real_lookup = StreamableHTTPApp._session_of

    def counted_clock() -> float:
        clock_reads[0] += 1
        return real_clock()

    async def counted_lookup(self: Any, headers: Any, send: Any) -> Any:
        lookups[0] += 1
        return await real_lookup(self, headers, send)

    n = 10
    async with app_with_session() as (app, tg, sid):
        monkeypatch.setattr(anyio, "current_time", counted_clock)
        monkeypatch.setattr(StreamableHTTPApp, "_session_of", counted_lookup)
        await answered_calls(app, tg, sid, n)
        seen = clock_reads[0], lookups[0]
        monkeypatch.undo()
        assert seen == (0, 0), f"{seen[0]} anyio.current_time calls, {seen[1]} _session_of calls for {n} calls"
        # A refusal still comes from the lookup: an unknown session gets 404.
        unknown = ask_call("no-such-session", 99)
        await unknown.run(app)
        assert unknown.sent[0]["status"] == 404


async def test_a_post_hands_its_message_to_a_session_with_room_without_a_coroutine(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the session's inbox has room, a POST's message goes in without a coroutine
    (``SessionTransport.deliver_nowait``; before: a ``deliver`` coroutine per POST, two per round trip)."""
    from minimcp.transports.http._streams import SessionTransport

    waits = [0]
    real = SessionTransport.deliver

    async def counted(self: SessionTransport, body: bytes) -> bool:
        waits[0] += 1
        return await real(self, body)

    n = 10
    async with app_with_session() as (app, tg, sid):
        monkeypatch.setattr(SessionTransport, "deliver", counted)
        await answered_calls(app, tg, sid, n)
        assert waits[0] == 0, f"{waits[0]} deliver coroutines for {2 * n} POSTs"


async def test_a_finished_call_drops_its_stream_without_an_exception(anyio_backend: str) -> None:
    """A call's stream, read to the end, is dropped without raising and catching a ``ValueError`` (before:
    ``list.remove`` of a key that is not among the retained streams, under ``contextlib.suppress``, once
    per call); a stream its client has not read to the end is still retained."""
    import sys

    raised = [0]

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "c_exception" and getattr(arg, "__name__", "") == "remove":
            raised[0] += 1

    n = 10
    async with app_with_session() as (app, tg, sid):
        sess = app._sessions.get(sid)
        assert sess is not None
        before = set(sess.transport.streams)
        sys.setprofile(hook)
        try:
            await answered_calls(app, tg, sid, n)
        finally:
            sys.setprofile(None)
        assert raised[0] == 0, f"{raised[0]} list.remove exceptions for {n} calls"
        with anyio.fail_after(10):
            while set(sess.transport.streams) - before:  # noqa: ASYNC110 - every call's stream dropped
                await anyio.sleep(0.01)
