"""Several workers of one service (issue 18): session ids that name their worker, and the bus between workers.

Two :class:`~minimcp.Server` objects in one process stand for two workers; they share an
:class:`~minimcp.scaleout.bus.InMemoryBus` (and, in the last tests, a :class:`~minimcp.scaleout.bus.RedisBus` on a
real ``redis-server``, see ``tests/helpers/redis_server.py``). Each checks one thing the bus carries:
a URL completion reaching the worker that holds the client's session (once; a forged or repeated
notice does nothing), list and resource notices reaching every worker's sessions (once each), and
a parked 2026-07-28 call dropped at once on its worker when its retry replays on another, with
the tool able to tell that from an abandoned call; that a failing bus never holds up local
delivery; and that every host of a server (the HTTP app, the WebSocket server, stdio) listens on it.
"""

from __future__ import annotations

import contextlib
import pathlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from minimcp import Context, Server, UrlElicitationRequired
from minimcp.scaleout.bus import InMemoryBus, RedisBus
from minimcp.server.bus import Bus, Notice
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers import RawPeer, raw_client, redis_server
from tests.helpers.http import SSE, raw_session, req, serving
from tests.helpers.modern import KEY, NAME_FORM, accept, complete, describe, input_required, modern_peer, only, text_of
from tests.helpers.redis_server import RedisProcess, free_port

redis = redis_server.redis  # the fixture
ROOT = pathlib.Path(__file__).resolve().parents[2]

WAIT = 30  # seconds: generous bounds for a busy machine


async def eventually(condition: Callable[[], bool], what: str) -> None:
    with anyio.fail_after(WAIT):
        while not condition():  # noqa: ASYNC110 - the condition is other tasks' doing
            await anyio.sleep(0.01)
    assert condition(), what


# --- session ids that name their worker -------------------------------------------------------------


def plain_server(**options: Any) -> Server:
    server = Server("worker", **options)

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


async def test_session_ids_start_with_the_prefix_and_stay_visible_ascii() -> None:
    server = plain_server()
    async with serving(server, session_id_prefix="w1") as (url, app), raw_session(url) as raw:
        sid = raw.session_id
        assert sid is not None and sid.startswith("w1.")
        assert re.fullmatch(r"[\x21-\x7e]+", sid), sid  # visible ASCII, as MCP-Session-Id must be
        assert len(sid) > len("w1.") + 30  # the random part is all there
        reply = await raw.call({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "echo", "arguments": {"text": "hi"}}})
        assert reply["result"]["content"][0]["text"] == "hi"  # the id is accepted on later requests
        assert app.session_ids() == [sid]
    assert server.worker_id == "w1"  # the prefix names the worker on the bus too


async def test_without_a_prefix_ids_are_plain_random() -> None:
    async with serving(plain_server()) as (url, _), raw_session(url) as raw:
        assert raw.session_id is not None and "." not in raw.session_id


@pytest.mark.parametrize("prefix", ["", "w.1", "w 1", "w/1", "wé", "a" * 33, "w1\n"])
def test_a_bad_prefix_is_refused_naming_the_problem(prefix: str) -> None:
    with pytest.raises(ValueError, match=r"session_id_prefix must be 1 to 32 ASCII letters, digits, '_' or '-'"):
        StreamableHTTPApp(plain_server(), session_id_prefix=prefix)


def test_good_prefixes_are_taken() -> None:
    for prefix in ("w1", "a" * 32, "eu-west_3", "W-9"):
        StreamableHTTPApp(plain_server(), session_id_prefix=prefix)


def test_an_explicit_worker_id_wins_over_the_prefix_and_is_checked() -> None:
    server = plain_server(worker_id="alpha")
    StreamableHTTPApp(server, session_id_prefix="w1")
    assert server.worker_id == "alpha"
    with pytest.raises(ValueError, match="worker_id must be 1 to 32"):
        plain_server(worker_id="no spaces")
    a, b = plain_server(), plain_server()
    assert a.worker_id != b.worker_id and re.fullmatch(r"[A-Za-z0-9_-]{1,32}", a.worker_id)


async def test_serve_http_takes_the_prefix_and_checks_it() -> None:
    from minimcp import serve_http

    with pytest.raises(ValueError, match="session_id_prefix must be"):
        await serve_http(plain_server(), session_id_prefix="w.1")
    server = plain_server()
    async with anyio.create_task_group() as tg:
        port = await tg.start(lambda task_status: serve_http(server, session_id_prefix="w2", task_status=task_status))
        async with raw_session(f"http://127.0.0.1:{port}/mcp") as raw:
            assert raw.session_id is not None and raw.session_id.startswith("w2.")
        tg.cancel_scope.cancel()


# --- two workers on one bus -------------------------------------------------------------------------


def worker(name: str | None, bus: Bus | None, seen: list[str] | None = None, **options: Any) -> Server:
    """One worker: a URL step, a question, a resource; ``seen`` records how a dropped copy of ``greet`` ended.

    ``name`` is its ``worker_id`` (``None``: the HTTP app's session id prefix names it).
    """
    server = Server("worker", bus=bus, worker_id=name, state_key=KEY, **options)
    ended = seen if seen is not None else []

    @server.tool()
    async def needs_step(ctx: Context) -> str:
        raise UrlElicitationRequired([ctx.url_elicitation("Pay the deposit", "https://pay.example.com/d")])

    @server.tool()
    async def greet(ctx: Context) -> str:
        try:
            return describe(await ctx.elicit("Your name?", NAME_FORM))
        except anyio.get_cancelled_exc_class():
            # What a tool's clean-up would look at: undo nothing when the call goes on elsewhere.
            ended.append(f"{name}: " + ("continued elsewhere" if ctx.continued_elsewhere else "abandoned"))
            raise

    @server.resource("test://r")
    async def r() -> str:
        return "r"

    return server


@contextlib.asynccontextmanager
async def running(*servers: Server) -> AsyncIterator[None]:
    """What each worker's host starts beside its connections (the HTTP app does this)."""
    async with anyio.create_task_group() as tg:
        for server in servers:
            await tg.start(server.run_background)
        yield
        tg.cancel_scope.cancel()


async def url_step(peer: RawPeer) -> str:
    """A 2025-11-25 client that can open links is sent a URL step (-32042); its elicitation id."""
    await peer.initialize(capabilities={"elicitation": {"url": {}}})
    step = await peer.request(1, "tools/call", {"name": "needs_step"})
    eid: str = step["error"]["data"]["elicitations"][0]["elicitationId"]
    return eid


def completion(eid: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": eid}}


def list_changed(kind: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"}


async def test_a_url_completion_on_b_reaches_the_client_on_a_exactly_once() -> None:
    bus = InMemoryBus()
    a, b = worker("a", bus), worker("b", bus)
    async with running(a, b), raw_client(a) as (alice, alice_conn):
        eid = await url_step(alice)
        await eventually(lambda: alice_conn.initialized, "initialized")
        # Not held on B: False (nothing was sent from B), and published for the other workers.
        assert await b.complete_url_elicitation(eid) is False
        assert bus.stats.published == 1
        assert await alice.recv(WAIT) == completion(eid)  # A holds the session: it tells its client
        assert eid not in alice_conn.url_elicitations
        # Again from B, a forged notice for the same id, one for an id nobody holds: hints A re-checks
        # against its own table, where the id is gone: nothing more.
        assert await b.complete_url_elicitation(eid) is False
        bus.publish(Notice("url_complete", eid, "forger"))
        bus.publish(Notice("url_complete", "never-minted", "forger"))
        await b.notify_list_changed("tools")  # behind them on the bus: what A's client hears next
        assert await alice.recv(WAIT) == list_changed("tools")
        assert await alice.nothing_for(0.2)


async def test_a_url_completion_on_the_owning_worker_is_sent_there_and_not_published() -> None:
    bus = InMemoryBus()
    a, b = worker("a", bus), worker("b", bus)
    async with running(a, b), raw_client(a) as (alice, _):
        eid = await url_step(alice)
        assert await a.complete_url_elicitation(eid) is True
        assert await alice.recv(WAIT) == completion(eid)
        assert bus.stats.published == 0
        assert await alice.nothing_for(0.2)


async def test_list_and_resource_notices_reach_every_workers_sessions_once() -> None:
    bus = InMemoryBus()
    a, b = worker("a", bus), worker("b", bus)
    async with running(a, b), raw_client(a) as (on_a, conn_a), raw_client(b) as (on_b, conn_b):
        for peer in (on_a, on_b):
            await peer.initialize()
            assert "result" in await peer.request(2, "resources/subscribe", {"uri": "test://r"})
        await eventually(lambda: conn_a.initialized and conn_b.initialized, "initialized")
        await a.notify_list_changed("tools")
        assert await a.notify_resource_updated("test://r") == 1  # A's own subscriber; B tells its own
        updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://r"}}
        await b.notify_list_changed("prompts")
        expected = sorted(map(repr, [list_changed("tools"), updated, list_changed("prompts")]))
        for peer in (on_a, on_b):  # local ones at once, the others' through the bus: in either order
            assert sorted([repr(await peer.recv(WAIT)) for _ in range(3)]) == expected
        # A resource nobody here subscribed to, a list that does not exist: nothing. Then a notice from
        # a third worker, behind them (and behind any echo of A's or B's own) on the bus: next, and once.
        bus.publish(Notice("resource_updated", "test://other", "c"))
        bus.publish(Notice("list_changed", "secrets", "c"))
        bus.publish(Notice("list_changed", "resources", "c"))
        for peer in (on_a, on_b):
            assert await peer.recv(WAIT) == list_changed("resources")
            assert await peer.nothing_for(0.2)


async def test_a_replay_on_b_drops_the_copy_parked_on_a_which_sees_continued_elsewhere() -> None:
    bus = InMemoryBus()
    seen: list[str] = []
    a, b = worker("a", bus, seen), worker("b", bus, seen)
    async with running(a, b), modern_peer(a) as (on_a, _):
        requests, state = input_required(await on_a.call("greet"))
        key, _ = only(requests)
        assert len(a.parking) == 1
        async with modern_peer(b) as (on_b, _):
            result = complete(await on_b.call("greet", responses={key: accept(name="Ada")}, state=state))
        assert text_of(result) == "hello Ada"  # B replayed the call and finished it
        await eventually(lambda: len(a.parking) == 0 and bool(seen), "A dropped its parked copy")
        assert seen == ["a: continued elsewhere"]
        # An abandoned copy (its connection gone) still says so.
        input_required(await on_a.call("greet", {}, client="other"))
        assert len(a.parking) == 1
    await eventually(lambda: len(seen) == 2, "the abandoned copy ended")
    assert seen[1] == "a: abandoned"


async def test_a_replay_of_a_call_parked_on_the_same_worker_publishes_nothing() -> None:
    bus = InMemoryBus()
    a = worker("a", bus, replay_every_retry=True)  # never parks: every retry replays, here
    async with running(a), modern_peer(a) as (peer, _):
        requests, state = input_required(await peer.call("greet"))
        key, _ = only(requests)
        complete(await peer.call("greet", responses={key: accept(name="Ada")}, state=state))
    assert bus.stats.published == 0


# --- the bus fails: serving goes on -----------------------------------------------------------------


class BrokenBus:
    """A bus whose every publish raises and whose subscriber dies at once."""

    def __init__(self) -> None:
        from minimcp.server.bus import BusStats

        self.stats = BusStats()
        self.runs = 0

    def publish(self, notice: Notice) -> None:
        raise RuntimeError("the bus is broken")

    async def run(self, deliver: Callable[[Notice], None], *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        self.runs += 1
        raise RuntimeError("the bus is broken")


@pytest.mark.parametrize("kind", ["broken", "redis down"])
async def test_a_failing_bus_never_blocks_local_delivery(kind: str) -> None:
    bus: Any = BrokenBus() if kind == "broken" else RedisBus(f"redis://127.0.0.1:{free_port()}/0", backoff=(0.05, 0.2))
    a = worker("a", bus)
    with anyio.fail_after(WAIT):
        async with running(a), raw_client(a) as (alice, conn):
            eid = await url_step(alice)
            await eventually(lambda: conn.initialized, "initialized")
            assert await a.complete_url_elicitation("elsewhere") is False  # published nowhere: no harm
            await a.notify_list_changed("tools")
            assert await alice.recv(WAIT) == list_changed("tools")
            assert await a.complete_url_elicitation(eid) is True
            assert await alice.recv(WAIT) == completion(eid)
            if kind == "broken":
                await eventually(lambda: bus.runs >= 2, "the subscriber is started again")


# --- a real Redis -----------------------------------------------------------------------------------


async def test_two_workers_on_a_real_redis(redis: RedisProcess) -> None:
    seen: list[str] = []
    bus_a, bus_b = RedisBus(redis.url, channel="test:workers"), RedisBus(redis.url, channel="test:workers")
    a, b = worker("a", bus_a, seen), worker("b", bus_b, seen)
    async with running(a, b), raw_client(a) as (alice, conn):
        await eventually(lambda: bus_a.connected and bus_b.connected, "both subscribed")
        eid = await url_step(alice)
        await eventually(lambda: conn.initialized, "initialized")
        # a URL completion on B reaches A's client, once
        assert await b.complete_url_elicitation(eid) is False
        assert await alice.recv(WAIT) == completion(eid)
        assert await b.complete_url_elicitation(eid) is False
        # a list change on B reaches A's client (after the repeated completion, which sends nothing)
        await b.notify_list_changed("tools")
        assert await alice.recv(WAIT) == list_changed("tools")
        # a 2026-07-28 call parked on A and replayed on B: A drops its copy, which sees "continued elsewhere"
        async with modern_peer(a) as (on_a, _):
            requests, state = input_required(await on_a.call("greet"))
            key, _ = only(requests)
            async with modern_peer(b) as (on_b, _):
                complete(await on_b.call("greet", responses={key: accept(name="Ada")}, state=state))
            await eventually(lambda: len(a.parking) == 0 and bool(seen), "A dropped its parked copy")
        assert seen == ["a: continued elsewhere"]
        assert await alice.nothing_for(0.2)


# --- every host of a server listens on its bus ------------------------------------------------------


async def test_the_websocket_server_listens_on_the_bus() -> None:
    pytest.importorskip("websockets")
    from minimcp import connect_websocket, serve_websocket

    bus = InMemoryBus()
    a, b = worker("a", bus), worker("b", bus)
    heard: list[str] = []
    async with anyio.create_task_group() as tg:
        port = await tg.start(lambda task_status: serve_websocket(a, task_status=task_status))
        async with connect_websocket(f"ws://127.0.0.1:{port}/mcp", on_notification=lambda m, p: heard.append(m)):
            await eventually(lambda: any(conn.initialized for conn in a.connections), "initialized")
            await b.notify_list_changed("tools")  # B has no clients: A's WebSocket client hears it
            await eventually(lambda: heard == ["notifications/tools/list_changed"], "heard through the bus")
        tg.cancel_scope.cancel()


async def test_a_stdio_server_listens_on_its_bus(redis: RedisProcess, tmp_path: Any) -> None:
    import sys
    import textwrap

    from minimcp import connect_stdio

    root = ROOT
    path = tmp_path / "stdio_worker.py"
    path.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(root)!r})
        from minimcp import Server
        from minimcp.scaleout.bus import RedisBus
        app = Server("stdio-worker", bus=RedisBus({redis.url!r}, channel="test:stdio"), worker_id="s1")

        @app.tool()
        async def echo(text: str) -> str:
            return text

        app.run()
    """))
    heard: list[str] = []
    other = RedisBus(redis.url, channel="test:stdio")
    async with anyio.create_task_group() as tg:
        await tg.start(other.run, lambda notice: None)
        async with connect_stdio([sys.executable, str(path)], on_notification=lambda m, p: heard.append(m)) as client:
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            with anyio.fail_after(WAIT):  # until the worker has subscribed (Redis drops what nobody hears)
                while not heard:
                    await eventually(lambda: other.connected, "connected")
                    other.publish(Notice("list_changed", "tools", "s2"))
                    await anyio.sleep(0.1)
            assert heard[0] == "notifications/tools/list_changed"
        tg.cancel_scope.cancel()


async def test_two_http_apps_on_one_bus_a_completion_on_w2_reaches_the_session_on_w1() -> None:
    bus = InMemoryBus()
    a, b = worker(None, bus), worker(None, bus)
    async with (
        serving(a, session_id_prefix="w1") as (url_a, _),
        serving(b, session_id_prefix="w2") as _,
        raw_session(url_a, capabilities={"elicitation": {"url": {}}}) as raw,
    ):
        assert (a.worker_id, b.worker_id) == ("w1", "w2")  # the prefixes name the workers on the bus
        assert raw.session_id is not None and raw.session_id.startswith("w1.")
        reply = await raw.call(req(1, "tools/call", {"name": "needs_step"}))
        eid = reply["error"]["data"]["elicitations"][0]["elicitationId"]
        async with raw.get() as response:  # the session's stream for messages related to no request
            sse = SSE(response)
            assert await b.complete_url_elicitation(eid) is False  # the page was paid on w2
            item = await sse.message(WAIT)
            assert item is not None and item[1] == completion(eid)
            assert await b.complete_url_elicitation(eid) is False
            with anyio.move_on_after(0.3):
                extra = await sse.message()
                raise AssertionError(f"sent twice: {extra}")
