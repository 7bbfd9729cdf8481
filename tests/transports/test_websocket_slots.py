"""The WebSocket server's slots: one client address cannot keep others out; bounds per address (real sockets).

Issue 29 ("Per-client bounds on WebSocket too"): the attack was one client opening every slot of a
capped server (50 of 50) so that a new client could not connect until a timeout reaped a slot.
Loopback has a whole ``127.0.0.0/8``: other client addresses are other source addresses.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest
from websockets.protocol import CLOSED

from minimcp import Context, Limits, Server
from minimcp.transports._ws_slots import NoSlot, SlotTable
from tests.helpers.websocket import INIT, RawWs, serving

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
HOG, NEWCOMER, THIRD = "127.0.0.1", "127.0.0.2", "127.0.0.3"


def make_server(**limits: Any) -> Server:
    server = Server("slots", limits=Limits(**limits))

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the caller a question (work pending until it answers)."""
        answer = await ctx.elicit("Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return type(answer).__name__

    return server


async def opened(stack: contextlib.AsyncExitStack, url: str, local_host: str) -> RawWs:
    """A connection from ``local_host`` that has initialized."""
    raw = await stack.enter_async_context(RawWs.connect(url, subprotocols=["mcp"], local_host=local_host))
    assert raw.response is not None and raw.response.status_code == 101
    await raw.send(INIT)
    assert (await raw.recv())["id"] == "init"
    await raw.send(INITIALIZED)
    return raw


async def pinged(raw: RawWs, n: int) -> bool:
    """Whether the connection still answers a ping."""
    if raw.protocol.state is CLOSED:
        return False
    await raw.send({"jsonrpc": "2.0", "id": f"p{n}", "method": "ping"})
    return bool((await raw.recv())["id"] == f"p{n}")


async def kept_busy(raw: RawWs, call_id: str) -> None:
    """Call ``ask`` and leave its question unanswered: the connection has work pending from now on."""
    call = {"name": "ask", "arguments": {}}
    await raw.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": call})
    assert (await raw.recv())["method"] == "elicitation/create"


def close_reason(raw: RawWs) -> tuple[int, str] | None:
    rcvd = raw.protocol.close_rcvd
    return (int(rcvd.code), rcvd.reason) if rcvd is not None else None


async def test_one_address_holding_every_slot_cannot_keep_a_new_address_out(anyio_backend: str) -> None:
    server = make_server(max_sessions_per_client=None)  # no per-address bound: only the full-server rule
    with anyio.fail_after(30):
        async with serving(server, max_connections=5) as url, contextlib.AsyncExitStack() as stack:
            hog = [await opened(stack, url, HOG) for _ in range(5)]
            newcomer = await opened(stack, url, NEWCOMER)
            assert await pinged(newcomer, 2)
            assert await hog[0].close_code() == 1008  # the least recently used (none used since it opened)
            code_reason = close_reason(hog[0])
            assert code_reason is not None and "holds the most connections" in code_reason[1]
            for n, raw in enumerate(hog[1:], 3):
                assert await pinged(raw, n)
            assert len(server.connections) == 5


async def test_a_silent_socket_flood_from_one_address_does_not_keep_a_new_address_out(anyio_backend: str) -> None:
    """TCP connections that never send the upgrade hold slots too (so they are bounded), and give way."""
    server = make_server(max_sessions_per_client=None)
    with anyio.fail_after(30):
        async with serving(server, max_connections=4, handshake_timeout=25) as url:
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            silent = [await anyio.connect_tcp("127.0.0.1", port, local_host=HOG) for _ in range(4)]
            try:
                async with contextlib.AsyncExitStack() as stack:
                    newcomer = await opened(stack, url, NEWCOMER)
                    assert await pinged(newcomer, 1)
                with anyio.fail_after(5):
                    with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                        await silent[0].receive()  # the oldest silent socket was closed for it
            finally:
                for stream in silent:
                    await stream.aclose()


async def test_a_hog_whose_connections_all_have_work_pending_still_gives_way(anyio_backend: str) -> None:
    """Every hog connection waits on a question it never answers: the new address still gets in, and
    the hog's least recently used connection is the one ended."""
    server = make_server(max_sessions_per_client=None)
    with anyio.fail_after(30):
        async with serving(server, max_connections=3) as url, contextlib.AsyncExitStack() as stack:
            hog = [await opened(stack, url, HOG) for _ in range(3)]
            for n, raw in enumerate(hog):
                await kept_busy(raw, f"c{n}")
            newcomer = await opened(stack, url, NEWCOMER)
            assert await pinged(newcomer, 9)
            assert await hog[0].close_code() == 1008
            for n, raw in enumerate(hog[1:], 10):
                assert await pinged(raw, n)


async def test_per_address_bound_ends_that_address_s_least_recently_used_idle_connection(anyio_backend: str) -> None:
    server = make_server(max_sessions_per_client=2)
    with anyio.fail_after(30):
        async with serving(server, max_connections=10) as url, contextlib.AsyncExitStack() as stack:
            other = await opened(stack, url, THIRD)
            first, second = await opened(stack, url, HOG), await opened(stack, url, HOG)
            third = await opened(stack, url, HOG)
            assert await first.close_code() == 1008
            assert close_reason(first) == (1008, "too many connections from your address (limit 2)")
            for n, raw in enumerate((second, third, other)):
                assert await pinged(raw, n)


async def test_per_address_bound_with_every_connection_busy_refuses_the_new_one(anyio_backend: str) -> None:
    server = make_server(max_sessions_per_client=1)
    with anyio.fail_after(30):
        async with serving(server, max_connections=10) as url, contextlib.AsyncExitStack() as stack:
            busy = await opened(stack, url, HOG)
            await kept_busy(busy, "c")
            async with RawWs.connect(url, subprotocols=["mcp"], local_host=HOG) as refused:
                assert refused.response is not None and refused.response.status_code == 429
                assert b"too many connections from your address" in refused.response.body
            assert await pinged(busy, 1)
            assert await pinged(await opened(stack, url, NEWCOMER), 2)  # another address is not bound by it


async def test_a_full_server_whose_only_address_is_busy_refuses_with_503(anyio_backend: str) -> None:
    server = make_server(max_sessions_per_client=None)
    with anyio.fail_after(30):
        async with serving(server, max_connections=1) as url, contextlib.AsyncExitStack() as stack:
            busy = await opened(stack, url, HOG)
            await kept_busy(busy, "c")
            async with RawWs.connect(url, subprotocols=["mcp"], local_host=HOG) as refused:
                assert refused.response is not None and refused.response.status_code == 503
            assert await pinged(busy, 1)


class Entry:
    """A table entry for the rules alone (no sockets)."""

    live = 0
    initialized = True

    def __init__(self, n: int, client: str, busy: bool = False, person: str | None = None) -> None:
        self.id = str(n)
        self.client = client
        self.last_active = float(n)
        self.person = person
        self.pending = busy

    def busy(self) -> bool:
        return self.pending


def test_the_full_table_takes_from_the_biggest_holder_with_an_idle_connection() -> None:
    table: SlotTable[Entry] = SlotTable(6, None)
    entries = [Entry(0, "a", busy=True), Entry(1, "b"), Entry(2, "a", busy=True), Entry(3, "a", busy=True),
               Entry(4, "b"), Entry(5, "c")]
    for entry in entries:
        table.add(entry)
    # "a" holds the most but everything of it is busy: "b" (more than the newcomer's none) gives its oldest idle
    room = table.make_room("new")
    assert room is not None and room[0] is entries[1]
    # an address holding as many as the biggest makes room from its own idle ones, never from a smaller one
    assert table.make_room("c") == (entries[1], "server full: your address holds the most connections")
    table.touch(entries[1])  # used: the young end
    room = table.make_room("new")
    assert room is not None and room[0] is entries[4]


def test_the_full_table_ends_pending_work_only_of_a_bigger_holder() -> None:
    table: SlotTable[Entry] = SlotTable(3, None)
    entries = [Entry(0, "a", busy=True), Entry(1, "a", busy=True), Entry(2, "b", busy=True)]
    for entry in entries:
        table.add(entry)
    room = table.make_room("new")
    assert room is not None and room[0] is entries[0]
    with pytest.raises(NoSlot) as info:
        table.make_room("a")  # no bigger holder, none of its own idle
    assert info.value.status == 503


def test_per_person_counts_follow_the_connections() -> None:
    table: SlotTable[Entry] = SlotTable(10, 2)
    alice = [Entry(n, f"10.0.0.{n}", person="alice") for n in range(2)]
    for entry in alice:
        table.add(entry)
        assert table.make_room_for_person("alice") is None or entry is alice[1]
        table.add_person(entry)
    assert table.count_person("alice") == 2
    room = table.make_room_for_person("alice")
    assert room == (alice[0], "too many connections for your account (limit 2)")
    assert table.make_room_for_person("bob") is None
    alice[1].pending = True
    assert table.remove(alice[0]) and not table.remove(alice[0])
    assert table.count_person("alice") == 1
    table.add(alice[0])
    table.add_person(alice[0])
    alice[0].pending = True
    with pytest.raises(NoSlot) as info:
        table.make_room_for_person("alice")
    assert info.value.status == 429
