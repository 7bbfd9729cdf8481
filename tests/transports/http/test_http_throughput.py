"""The Streamable HTTP app's hot path under many callers (issue 19).

* the server's session transport is told what each message is (``wants_outgoing``): it reads
  none of the messages it sends back to find which ones end their stream;
* a session's inbox holds ``Limits.max_http_inbox`` messages; beyond, a POST waits in line,
  and each message the session reads lets the first one in;
* a priming event held for its stream's first event waits at least one tick of the priming
  clock: one held just before a tick is not let go at that tick; those let go at one tick are
  written by one task, not a task each.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

import minimcp.transports.http._streams as streams_module
from minimcp.core.config import Limits
from minimcp.transports.http import StreamableHTTPApp
from minimcp.transports.http._pacing import Pacer
from minimcp.transports.http._response import Reader
from minimcp.transports.http._streams import SessionTransport, Stream
from minimcp.transports.http._wire import is_response as wire_is_response
from tests.helpers.http_lean import accept, ask_call, ask_server, initialize

TIMEOUT = 30


async def test_the_server_transport_reads_no_outgoing_message_back(monkeypatch: pytest.MonkeyPatch) -> None:
    read_back: list[bytes] = []
    real = wire_is_response

    def is_response(message: bytes) -> bool:
        read_back.append(message)
        return real(message)

    monkeypatch.setattr(streams_module, "is_response", is_response)
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            call = ask_call(sid)
            tg.start_soon(call.run, app)
            question = await call.wait_for("elicitation/create")
            await accept(question, sid, "ok").run(app)
            result = await call.wait_for("result")
            assert result["result"]["content"][0]["text"] == "ok"
            tg.cancel_scope.cancel()
    assert read_back == []
    # Bytes alone (no description) are still read to route them.
    transport = SessionTransport(max_events=8, max_retained=2)
    stream = transport.open_request_stream(7)
    assert stream is not None
    await transport.send(b'{"jsonrpc":"2.0","id":7,"result":{}}', related=7)
    assert stream.done and len(read_back) == 1


async def test_a_full_inbox_makes_posts_wait_in_line() -> None:
    limits = Limits().replace(max_http_inbox=4)
    transport = SessionTransport(max_events=8, max_retained=2, max_inbox=limits.max_http_inbox)
    delivered: list[bytes] = []

    async def post(body: bytes) -> None:
        assert await transport.deliver(body)
        delivered.append(body)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for i in range(4):
                await post(b"%d" % i)  # room for these: no waiting
            for i in range(4, 7):
                tg.start_soon(post, b"%d" % i)
                await anyio.wait_all_tasks_blocked()  # in line in this order
            assert len(delivered) == 4  # the other three wait
            # A POST whose client leaves while it waits leaves the line.
            leaving = anyio.CancelScope()

            async def post_and_leave() -> None:
                with leaving:
                    await post(b"never")

            tg.start_soon(post_and_leave)
            await anyio.wait_all_tasks_blocked()
            leaving.cancel()
            await anyio.wait_all_tasks_blocked()
            assert transport.receive_nowait() == b"0"  # a place: the first in line comes in
            await anyio.wait_all_tasks_blocked()
            assert delivered == [b"0", b"1", b"2", b"3", b"4"]
            got = [await transport.receive() for _ in range(6)]
            assert got == [b"1", b"2", b"3", b"4", b"5", b"6"]  # first come, first in
            await anyio.wait_all_tasks_blocked()
            assert sorted(delivered[5:]) == [b"5", b"6"]  # (trio resumes woken tasks in any order)
            # The session waits for the next one.
            tg.start_soon(post, b"7")
            assert await transport.receive() == b"7"
    # Once the session has ended, a POST is refused (the app answers 404) and the reader sees the end.
    await transport.deliver(b"8")
    transport.close()
    assert not await transport.deliver(b"9")
    assert await transport.receive() == b"8"  # what came before the end is still read
    with pytest.raises(anyio.EndOfStream):
        await transport.receive()


async def test_posts_waiting_for_room_are_refused_when_the_session_ends() -> None:
    transport = SessionTransport(max_events=8, max_retained=2, max_inbox=1)
    results: list[bool] = []

    async def post(body: bytes) -> None:
        results.append(await transport.deliver(body))

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await post(b"0")
            tg.start_soon(post, b"1")
            tg.start_soon(post, b"2")
            await anyio.wait_all_tasks_blocked()
            await transport.aclose()
    assert results == [True, False, False]
    with pytest.raises(anyio.ClosedResourceError):
        transport.receive_nowait()


async def test_the_app_gives_each_session_the_inbox_bound_of_its_limits() -> None:
    app = StreamableHTTPApp(ask_server(), limits=Limits().replace(max_http_inbox=5))
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            connection = app.connection(sid)
            assert connection is not None
            transport = connection.session.transport
            assert isinstance(transport, SessionTransport)
            assert transport._max_inbox == 5
            tg.cancel_scope.cancel()


async def test_a_priming_event_waits_at_least_one_tick() -> None:
    sent: list[bytes] = []
    wrote = anyio.Event()

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["body"])
        wrote.set()

    def held_reader(key: int) -> Reader:
        reader = Reader(Stream(key, key, 8), send, 0, b"prime %d\n\n" % key, 30.0)
        reader.release()  # the response head is out
        return reader

    pacer = Pacer(keepalive_interval=15.0)
    first, second = held_reader(1), held_reader(2)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            first.stream.owner = first
            pacer.hold_priming(first)
            pacer.tick(tg)  # held just before this tick: it waits for the next
            await anyio.wait_all_tasks_blocked()
            assert first.hold and sent == []
            second.stream.owner = second
            pacer.hold_priming(second)
            pacer.tick(tg)
            await wrote.wait()
            assert sent == [b"prime 1\n\n"] and not first.hold and second.hold
            wrote = anyio.Event()
            pacer.tick(tg)
            await wrote.wait()
            assert sent == [b"prime 1\n\n", b"prime 2\n\n"]


async def test_the_priming_events_let_go_at_one_tick_are_written_by_one_task() -> None:
    sent: list[bytes] = []
    go_on = anyio.Event()

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["body"])
        await go_on.wait()  # the writes stay under way while the tasks are counted

    readers = []
    for key in range(1, 4):
        reader = Reader(Stream(key, key, 8), send, 0, b"prime %d\n\n" % key, 30.0)
        reader.release()
        reader.stream.owner = reader
        readers.append(reader)
    pacer = Pacer(keepalive_interval=15.0)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for reader in readers:
                pacer.hold_priming(reader)
            pacer.tick(tg)
            before = len(anyio.get_running_tasks())
            pacer.tick(tg)  # all three are due
            await anyio.wait_all_tasks_blocked()
            assert len(anyio.get_running_tasks()) - before == 1  # one writer for the three, not one each
            assert sent == [b"prime 1\n\n"]  # it writes them in turn
            go_on.set()
            while len(sent) < 3:
                await anyio.wait_all_tasks_blocked()
            assert sorted(sent) == [b"prime 1\n\n", b"prime 2\n\n", b"prime 3\n\n"]


async def test_the_session_reads_what_comes_in_during_the_same_turn_without_waiting() -> None:
    """An empty inbox: the session's read lets the loop turn once before it waits, so the POSTs made
    ready in that turn are read without an event and a wake-up each."""
    transport = SessionTransport(max_events=8, max_retained=2)
    made: list[object] = []
    make = transport._event

    def counted() -> Any:
        event = make()
        made.append(event)
        return event

    transport._event = counted
    got: list[bytes] = []

    async def read() -> None:
        got.append(await transport.receive())

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)  # it finds the inbox empty
            tg.start_soon(transport.deliver, b"a")  # made ready in the same turn
    assert got == [b"a"]
    assert made == []
