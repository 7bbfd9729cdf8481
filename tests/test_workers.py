"""Several workers of one service (issue 18): session ids that name their worker, and the bus between workers.

Two :class:`~minimcp.Server` objects in one process stand for two workers; they share an
:class:`~minimcp.bus.InMemoryBus` (and, in the last tests, a :class:`~minimcp.bus.RedisBus` on a
real ``redis-server``, see ``tests/redis_server.py``). Each checks one thing the bus carries:
a URL completion reaching the worker that holds the client's session (once; a forged or repeated
notice does nothing), list and resource notices reaching every worker's sessions (once each), and
a parked 2026-07-28 call dropped at once on its worker when its retry replays on another, with
the tool able to tell that from an abandoned call.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from minimcp import Server
from minimcp.transports.http import StreamableHTTPApp
from tests.test_http import raw_session, serving

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
    from minimcp.transports.http import serve_http

    with pytest.raises(ValueError, match="session_id_prefix must be"):
        await serve_http(plain_server(), session_id_prefix="w.1")
    server = plain_server()
    async with anyio.create_task_group() as tg:
        port = await tg.start(lambda task_status: serve_http(server, session_id_prefix="w2", task_status=task_status))
        async with raw_session(f"http://127.0.0.1:{port}/mcp") as raw:
            assert raw.session_id is not None and raw.session_id.startswith("w2.")
        tg.cancel_scope.cancel()
