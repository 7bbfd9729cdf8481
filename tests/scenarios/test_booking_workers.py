"""The booking example as several workers (issue 18, docs/booking.md "Several workers").

Two :class:`booking.BookingApp` objects, each with its own :class:`booking_store.RedisStore` on one
real ``redis-server``, stand for two worker processes behind a load balancer: a booking made on
one is found and confirmed on the other, a deposit page paid on the other completes it, ids never
collide, and a replayed 2026-07-28 round finds the booking its call made on the first. Then the
command line: ``--public-url`` (the pages under ``/pages/`` on the MCP app, with the Host checks),
the checks of every new option, and two real worker processes sharing Redis.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import pathlib
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import pytest

from minimcp import Accepted, connect_http
from tests.helpers import RawPeer, raw_client, redis_server
from tests.helpers.booking import (
    BOOKING,
    DEPOSIT_ARGS,
    KEY,
    URL_SESSION,
    ask_deposit,
    booked_or_refused,
    modern_call,
    retry,
)
from tests.helpers.redis_server import RedisProcess, free_port
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture
from tests.helpers.url_mode import asgi_call

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import booking
from booking_store import RedisStore

redis = redis_server.redis  # the fixture
WAIT = 30
PAGES = "http://127.0.0.1:9"


@contextlib.asynccontextmanager
async def workers(url: str, count: int = 2) -> AsyncIterator[list[booking.BookingApp]]:
    """``count`` booking apps, each with its own client of one Redis (as separate processes have)."""
    async with contextlib.AsyncExitStack() as stack:
        apps = []
        for _ in range(count):
            store = await stack.enter_async_context(RedisStore(url, prefix="test:booking:"))
            app = booking.build(state_key=KEY, store=store)
            app.pages_url = PAGES
            apps.append(app)
        yield apps


async def deposit_booking(peer: RawPeer, id_: int) -> tuple[str, str]:
    """A 2025-11-25 deposit booking, the URL question accepted: (booking id, deposit page URL)."""
    await peer.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                     "params": {"name": "book_table", "arguments": DEPOSIT_ARGS}})  # fmt: skip
    ask = await peer.recv()
    assert ask["method"] == "elicitation/create" and ask["params"]["mode"] == "url", ask
    await peer.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
    result = (await peer.recv())["result"]
    assert result["structuredContent"]["status"] == "deposit_pending", result
    return result["structuredContent"]["booking_id"], ask["params"]["url"]


async def status(peer: RawPeer, id_: int | str, booking_id: str, tool: str = "booking_status") -> dict[str, Any]:
    reply = await peer.request(id_, "tools/call", {"name": tool, "arguments": {"booking_id": booking_id}})
    result: dict[str, Any] = reply["result"]
    return result


async def test_a_booking_made_on_one_worker_is_found_and_confirmed_on_another(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b), raw_client(a.server) as (on_a, _), raw_client(b.server) as (on_b, _):
            await on_a.initialize("2025-11-25", URL_SESSION)
            await on_b.initialize("2025-11-25", URL_SESSION)
            booking_id, _ = await deposit_booking(on_a, 1)
            seen = await status(on_b, 1, booking_id)
            assert seen["structuredContent"] == {"status": "deposit_pending", "date": "2025-12-26", "party_size": 8,
                                                 "booking_id": booking_id}  # fmt: skip
            confirmed = await status(on_b, 2, booking_id, "confirm_deposit")
            assert confirmed["structuredContent"]["status"] == "booked"
            assert (await status(on_a, 2, booking_id))["structuredContent"]["status"] == "booked"
            again = await status(on_b, 3, booking_id, "confirm_deposit")  # confirming again changes nothing
            assert again["structuredContent"]["status"] == "booked"
            # An id neither worker made is unknown on both.
            for peer in (on_a, on_b):
                assert (await status(peer, 4, "B0001"))["isError"] is True


async def test_a_deposit_page_paid_on_another_worker_completes_the_booking(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b), raw_client(a.server) as (on_a, _):
            await on_a.initialize("2025-11-25", URL_SESSION)
            booking_id, url = await deposit_booking(on_a, 1)
            page = await asgi_call(b.pages, "GET", url)  # worker B shows the page of A's deposit
            assert page[0] == 200 and "a party of 8 on 2025-12-26" in page[1]
            assert (await asgi_call(b.pages, "POST", url))[0] == 200
            assert (await status(on_a, 2, booking_id))["structuredContent"]["status"] == "booked"
            assert "is paid" in (await asgi_call(a.pages, "GET", url))[1]  # and A's copy of the page says so
            # A page paid before the person's answer reaches the worker: the answer books it at once.
            await on_a.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "book_table", "arguments": DEPOSIT_ARGS}})  # fmt: skip
            ask = await on_a.recv()
            assert (await asgi_call(b.pages, "POST", ask["params"]["url"]))[0] == 200
            await on_a.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
            reply = await on_a.recv()
            while reply.get("id") != 3:  # a completion notice of A's own, once the bus carries B's
                reply = await on_a.recv()
            assert reply["result"]["structuredContent"]["status"] == "booked"


async def test_a_calendar_authorization_completed_on_another_worker_authorizes_the_session(
    redis: RedisProcess,
) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b), raw_client(a.server) as (on_a, _):
            await on_a.initialize("2025-11-25", URL_SESSION)
            booking_id = (await on_a.request(1, "tools/call", {"name": "book_table", "arguments": {
                "date": "2025-12-24", "party_size": 2}}))["result"]["structuredContent"]["booking_id"]  # fmt: skip
            needs = await on_a.request(
                2, "tools/call", {"name": "add_to_calendar", "arguments": {"booking_id": booking_id}}
            )
            [step] = needs["error"]["data"]["elicitations"]
            again = await on_a.request(
                3, "tools/call", {"name": "add_to_calendar", "arguments": {"booking_id": booking_id}}
            )
            assert again["error"]["data"]["elicitations"][0]["elicitationId"] == step["elicitationId"]  # one page
            assert (await asgi_call(b.pages, "GET", step["url"]))[0] == 200  # worker B shows A's session's page
            assert (await asgi_call(b.pages, "POST", step["url"]))[0] == 200
            assert (await asgi_call(b.pages, "POST", step["url"]))[0] == 404  # used
            added = await status(on_a, 4, booking_id, "add_to_calendar")
            assert added["structuredContent"]["status"] == "added"


async def test_a_deposit_paid_on_another_worker_reaches_the_asked_client_once(redis: RedisProcess) -> None:
    """With the server's bus (a RedisBus on the same Redis, as ``--redis`` sets up): the completion
    notice for a page paid on B goes to the client on A that was asked, once."""
    from minimcp.scaleout.bus import RedisBus

    with anyio.fail_after(WAIT):
        async with contextlib.AsyncExitStack() as stack:
            apps = []
            for name in ("wa", "wb"):
                store = await stack.enter_async_context(RedisStore(redis.url, prefix="test:booking:"))
                app = booking.build(state_key=KEY, store=store, bus=RedisBus(redis.url), worker_id=name)
                app.pages_url = PAGES
                apps.append(app)
            a, b = apps
            tg = await stack.enter_async_context(anyio.create_task_group())
            for app in apps:
                await tg.start(app.server.run_background)
            while not all(cast(RedisBus, app.server.workers.bus).connected for app in apps):  # noqa: ASYNC110 - both listening
                await anyio.sleep(0.02)
            on_a, _ = await stack.enter_async_context(raw_client(a.server))
            await on_a.initialize("2025-11-25", URL_SESSION)
            booking_id, url = await deposit_booking(on_a, 1)
            eid = url.rsplit("/", 1)[1]
            assert (await asgi_call(b.pages, "POST", url))[0] == 200
            note = await on_a.recv()
            assert note == {"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                            "params": {"elicitationId": eid}}  # fmt: skip
            confirmed = await status(on_a, 2, booking_id, "confirm_deposit")  # paid already: nothing sent again
            assert confirmed["structuredContent"]["status"] == "booked"
            assert (await asgi_call(b.pages, "POST", url))[0] == 200
            assert await on_a.nothing_for(0.5)
            tg.cancel_scope.cancel()


async def test_booking_ids_are_unique_across_workers(redis: RedisProcess) -> None:
    made: list[tuple[int, str]] = []
    with anyio.fail_after(60):
        async with workers(redis.url) as apps, contextlib.AsyncExitStack() as stack:
            peers = [(await stack.enter_async_context(raw_client(app.server)))[0] for app in apps]
            for peer in peers:
                await peer.initialize("2025-11-25")

            async def book_on(n: int) -> None:
                for i in range(50):
                    reply = await peers[n].request(f"{n}-{i}", "tools/call", {"name": "book_table", "arguments":
                                                   {"date": "2025-12-24", "party_size": 2}})  # fmt: skip
                    made.append((n, reply["result"]["structuredContent"]["booking_id"]))

            async with anyio.create_task_group() as tg:
                for n in range(2):
                    tg.start_soon(book_on, n)
            assert len({booking_id for _, booking_id in made}) == len(made) == 100
            for n, booking_id in made[::7]:  # each one is found from the other worker
                found = await status(peers[1 - n], f"s-{booking_id}", booking_id)
                assert found["structuredContent"]["booking_id"] == booking_id


@pytest.mark.usefixtures("booking_retries")
async def test_a_deposit_round_replayed_on_another_worker_finds_the_calls_booking(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url) as (a, b), raw_client(a.server) as (on_a, _), raw_client(b.server) as (on_b, _):
            key, url, state = await ask_deposit(on_a)
            accept = {key: {"action": "accept"}}
            made = booked_or_refused(await retry(on_a, 2, accept, state))
            assert made is not None
            # The same round reaches B (no shared record of used states here: B replays it from the top).
            assert booked_or_refused(await retry(on_b, 3, accept, state)) == made
            late = await retry(on_b, 4, {key: {"action": "decline"}}, state)  # a decline does not undo it
            assert "error" in late or late["result"]["structuredContent"]["booking_id"] == made
            # The one page (served by either worker) pays the one booking.
            assert (await asgi_call(b.pages, "POST", url))[0] == 200
            paid = await on_a.request(5, "tools/call", modern_call(5, "booking_status", {"booking_id": made})["params"])
            assert paid["result"]["structuredContent"]["status"] == "booked"
            # The first round reaching B first: B books, and A's replay finds B's booking.
            key, _, state = await ask_deposit(on_a)
            accept = {key: {"action": "accept"}}
            first = booked_or_refused(await retry(on_b, 6, accept, state))
            assert first is not None and first != made
            assert booked_or_refused(await retry(on_a, 7, accept, state)) in (first, None)


async def test_redis_down_is_a_tool_error_and_a_503_page(redis: RedisProcess) -> None:
    with anyio.fail_after(WAIT):
        async with workers(redis.url, 1) as (a,), raw_client(a.server) as (peer, _):
            await peer.initialize("2025-11-25")
            booking_id = (await peer.request(1, "tools/call", {"name": "book_table", "arguments": {
                "date": "2025-12-24", "party_size": 2}}))["result"]["structuredContent"]["booking_id"]  # fmt: skip
            redis.stop()
            try:
                down = await status(peer, 2, booking_id)
                assert down["isError"] is True and "try again later" in down["content"][0]["text"].lower()
                assert (await asgi_call(a.pages, "GET", f"{PAGES}/deposit/x"))[0] == 503
                assert (await peer.request(3, "ping"))["result"] == {}  # the session goes on
            finally:
                redis.start()
            while True:  # Redis is back (empty: no persistence); the worker answers again
                again = await status(peer, 4, booking_id)
                if "not available" not in again["content"][0]["text"] and "did not answer" not in again[
                        "content"][0]["text"]:  # fmt: skip
                    break
                await anyio.sleep(0.1)
            assert again["isError"] is True and "Unknown booking_id" in again["content"][0]["text"]


# --- --public-url: the pages on the MCP app, under /pages/ --------------------------------------------------


async def test_public_url_serves_the_pages_under_pages_with_the_host_checks() -> None:
    hosts, origins = booking.allow_lists(["booking.example"])
    app = booking.build(allowed_hosts=hosts, allowed_origins=origins)
    app.pages_url = "https://booking.example/pages"
    http_app = booking.BookingHTTPApp(app, allowed_hosts=hosts, allowed_origins=origins)
    assert http_app.allowed_hosts == hosts
    with anyio.fail_after(WAIT):
        async with raw_client(app.server) as (peer, _):
            await peer.initialize("2025-11-25", URL_SESSION)
            booking_id, url = await deposit_booking(peer, 1)
            assert url.startswith("https://booking.example/pages/deposit/")
            authorize = (await peer.request(2, "tools/call", {"name": "add_to_calendar",
                                                              "arguments": {"booking_id": booking_id}}))  # fmt: skip
            [step] = authorize["error"]["data"]["elicitations"]
            assert step["url"].startswith("https://booking.example/pages/authorize/")
            # Refused for a foreign Host or Origin, before anything changes.
            for headers in ({"host": "evil.example"}, {"origin": "https://evil.example"}):
                assert (await asgi_call(http_app, "POST", url, headers))[0] == 403
            assert app.bookings[booking_id].status == "deposit_pending"
            # The public name (any port), and loopback, are served; the MCP endpoint is still /mcp.
            page = await asgi_call(http_app, "GET", url.replace("booking.example", "booking.example:8443"))
            assert page[0] == 200 and '<form method="post">' in page[1]
            same_site = {"origin": "https://booking.example"}
            assert (await asgi_call(http_app, "POST", url, same_site))[0] == 200
            assert app.bookings[booking_id].status == "booked"
            assert (
                await asgi_call(http_app, "POST", step["url"].replace("https://booking.example", "http://127.0.0.1:9"))
            )[0] == 200
            assert (await asgi_call(http_app, "GET", "https://booking.example/pages/nothing"))[0] == 404
            mcp = await asgi_call(http_app, "GET", "https://booking.example/mcp")
            assert mcp[0] == 406 and '"jsonrpc"' in mcp[1]  # the MCP app answered (a GET without its Accept)
            assert (await asgi_call(http_app, "GET", "https://booking.example/deposit/x"))[0] == 404  # not at the root


# --- the command line ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--transport", "http", "--worker-id", "w.1"], "is not a worker id"),
        (["--transport", "http", "--worker-id", "w" * 33], "is not a worker id"),
        (["--transport", "http", "--worker-id", ""], "is not a worker id"),
        (["--worker-id", "w1"], "--worker-id needs --transport http"),
        (["--transport", "http", "--public-url", "booking.example"], "is not an http:// or https:// URL"),
        (["--transport", "http", "--public-url", "ftp://booking.example"], "is not an http:// or https:// URL"),
        (["--transport", "http", "--public-url", "https://booking.example/?x=1"], "no query or fragment"),
        (["--public-url", "https://booking.example"], "--public-url needs --transport http"),
        (["--allowed-host", "https://booking.example"], "is not a host name"),
        (["--allowed-host", "booking.example:443"], "is not a host name"),
        (["--redis", "http://:pw-s3cr3t@127.0.0.1:6379"], "needs a redis://, rediss:// or unix:// URL"),
        (["--redis", "redis://:pw-s3cr3t@127.0.0.1:1/0", "--allowed-host", "a b"], "is not a host name"),
    ],
)
def test_bad_options_exit_with_a_message_naming_the_problem(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        booking.parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert problem in err and "s3cr3t" not in err  # (the usage names --page-client-secret: another word)


@pytest.mark.parametrize("value", ["nothex", "ab" * 16, "ab" * 32 + ",zz"])
def test_bad_state_keys_in_the_environment_exit_with_a_message(
    value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINIMCP_STATE_KEYS", value)
    with pytest.raises(SystemExit):
        booking.parse_args(["--transport", "http"])
    assert "MINIMCP_STATE_KEYS" in capsys.readouterr().err


def test_good_options_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIMCP_STATE_KEYS", "ab" * 32 + "," + "cd" * 32)
    args = booking.parse_args(["--transport", "http", "--worker-id", "w_1-A", "--public-url", "https://Booking.example/",
                               "--allowed-host", "Booking.Example", "--allowed-host", "[::2]",
                               "--redis", "redis://127.0.0.1:6379/0"])  # fmt: skip
    assert (args.worker_id, args.public_url, args.allowed_host) == ("w_1-A", "https://Booking.example",
                                                                    ["booking.example", "[::2]"])  # fmt: skip
    assert booking.allowed_names(args) == ["booking.example", "[::2]"]  # the public URL's name is accepted too
    ipv6 = booking.parse_args(["--transport", "http", "--public-url", "http://[::3]:8080"])
    assert booking.allowed_names(ipv6) == ["[::3]"]
    hosts, origins = booking.allow_lists(["[::3]"])
    assert "[::3]:*" in hosts and "http://[::3]:*" in origins
    app = booking.build()
    assert app.server.state_key_source == "environment"  # the library's Server reads MINIMCP_STATE_KEYS itself


def start_worker(worker: str, port: int, public_port: int, redis_url: str) -> subprocess.Popen[str]:
    """``examples/booking.py`` as one worker of a service, on ``port``, sharing Redis and the sealing key."""
    argv = [*BOOKING, "--transport", "http", "--port", str(port), "--redis", redis_url, "--worker-id", worker,
            "--public-url", f"http://127.0.0.1:{public_port}", "--elicitation-timeout", "20"]  # fmt: skip
    env = {**os.environ, "MINIMCP_STATE_KEYS": "ab" * 32}
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip


async def test_two_worker_processes_share_bookings_and_pages_through_redis(redis: RedisProcess) -> None:
    """Real processes: a deposit booked on worker A, its page (at the public URL) paid on worker B."""
    ports = [free_port(), free_port()]
    procs = [start_worker(f"w{n}", port, ports[0], redis.url) for n, port in enumerate(ports)]
    try:
        for proc in procs:  # up: its endpoint announced
            assert proc.stderr is not None
            with anyio.fail_after(60):
                while "mcp: http://" not in (line := await anyio.to_thread.run_sync(proc.stderr.readline)):
                    assert line, "the worker exited"

        async def paid_elsewhere(request: Any) -> Any:
            assert request.url.startswith(f"http://127.0.0.1:{ports[0]}/pages/deposit/")
            on_b = request.url.replace(str(ports[0]), str(ports[1]))  # the balancer sent the browser to B
            import httpx

            async with httpx.AsyncClient() as http:
                assert (await http.post(on_b)).status_code == 200
            return Accepted(None)

        with anyio.fail_after(60):
            async with (
                connect_http(f"http://127.0.0.1:{ports[0]}/mcp", url_handler=paid_elsewhere) as a,
                connect_http(f"http://127.0.0.1:{ports[1]}/mcp") as b,
            ):
                made = await a.call_tool("book_table", DEPOSIT_ARGS)
                assert made.structured_content is not None
                assert made.structured_content["status"] == "booked"  # paid (on B) before the answer came
                booking_id = made.structured_content["booking_id"]
                ids = [client.session.transport.session_id for client in (a, b)]  # type: ignore[attr-defined]
                assert [sid.split(".", 1)[0] for sid in ids] == ["w0", "w1"], ids
                seen = await b.call_tool("booking_status", {"booking_id": booking_id})
                assert seen.structured_content == {"status": "booked", "date": str(datetime.date(2025, 12, 26)),
                                                   "party_size": 8, "booking_id": booking_id}  # fmt: skip
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
