"""The HTTP servers as minimcp runs them: header deadline, connection cap and head size, per server.

``serve_http`` runs uvicorn with httptools (or h11) on asyncio and minimcp's own server on
trio (hypercorn on request); each must bound a request's head in time (``http_header_timeout``)
and size (``max_http_head_bytes``), and uvicorn and minimcp's server close connections beyond
``max_http_connections`` as soon as they are accepted (minimcp's after a ``503``). uvicorn
runs on asyncio only: when a test runs on trio, a uvicorn server runs on its own asyncio
loop in a thread and the test's clients on trio.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys

import anyio
import anyio.abc
import pytest

from minimcp import Limits, Server
from minimcp.transports.asgi_server import run_asgi
from tests.helpers import http as http_helpers
from tests.helpers.asgi_guard import UVICORN, _port, serving
from tests.helpers.h1 import until_closed as _until_closed

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("hypercorn")
pytest.importorskip("httptools")


SERVERS = [*UVICORN, "hypercorn", "minimcp"]






def _initialize(port: int) -> tuple[bytes, bytes]:
    """A valid ``initialize`` POST: its head and its body."""
    body = json.dumps(http_helpers.initialize_request()).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: {http_helpers.JSON_SSE}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    return head, body


async def _served(port: int) -> bool:
    """A fresh connection's ``initialize`` is answered ``200``."""
    head, body = _initialize(port)
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(head + body)
            got = b""
            while b"\r\n" not in got:
                got += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        return False
    return got.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("asgi_server", SERVERS)
async def test_a_slow_but_whole_request_is_served_and_the_next_head_has_its_own_deadline(asgi_server: str) -> None:
    """A request whose head comes in pieces within ``http_header_timeout`` and whose body trickles
    for longer than it is answered (the deadline is for heads only); then, on the same connection, a
    next head trickled past the deadline counted from that response's end closes the connection."""
    limits = Limits(http_header_timeout=1.0)
    with anyio.fail_after(60):
        async with serving(Server("slow", limits=limits), asgi_server) as (url, _):
            port = _port(url)
            head, body = _initialize(port)
            stream = await anyio.connect_tcp("127.0.0.1", port)
            async with stream:
                await stream.send(head[:20])
                await anyio.sleep(0.05)
                await stream.send(head[20:])
                for n in range(5):  # 5 x 0.3 s: the body takes longer than the header timeout
                    await anyio.sleep(0.3)
                    await stream.send(body[n * len(body) // 5 : (n + 1) * len(body) // 5])
                answer = b""
                while b"\r\n" not in answer:
                    answer += await stream.receive()
                assert answer.startswith(b"HTTP/1.1 200"), answer
                # The next request's head: a line every 0.2 s, never finished.
                await stream.send(b"POST /mcp HTTP/1.1\r\n")

                async def trickle() -> None:
                    with contextlib.suppress(anyio.BrokenResourceError, OSError):
                        while True:
                            await anyio.sleep(0.2)
                            await stream.send(b"x-slow: 1\r\n")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(trickle)
                    await _until_closed(stream)  # the rest of the first response, then the end
                    tg.cancel_scope.cancel()
            assert await _served(port)


@pytest.mark.parametrize("asgi_server", [*UVICORN, "minimcp"])
async def test_connections_beyond_max_http_connections_are_closed_when_accepted(asgi_server: str) -> None:
    """With ``max_http_connections=3`` and three idle connections open (a header timeout of 60 s
    keeps them), a fourth is closed before it sends anything; once one closes, new ones are served."""
    limits = Limits(http_header_timeout=60.0, max_http_connections=3)
    with anyio.fail_after(60):
        async with serving(Server("cap", limits=limits), asgi_server) as (url, _):
            port = _port(url)
            idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(3)]
            try:
                fourth = await anyio.connect_tcp("127.0.0.1", port)
                async with fourth:
                    refused = await _until_closed(fourth)
                    if asgi_server == "minimcp":  # minimcp's server says 503 first
                        assert refused.startswith(b"HTTP/1.1 503 "), refused
                    else:  # uvicorn closes it at once
                        assert refused == b"", refused
                await idle.pop().aclose()
                while not await _served(port):  # noqa: ASYNC110 - the server notices the close on its own
                    await anyio.sleep(0.05)
            finally:
                for stream in idle:
                    await stream.aclose()


@pytest.mark.parametrize("asgi_server", SERVERS)
async def test_a_head_larger_than_max_http_head_bytes_is_refused(asgi_server: str) -> None:
    """A header value sent on and on (1 MiB, never finished) is refused once the head passes
    ``max_http_head_bytes`` (httptools alone would buffer it all); the server goes on serving."""
    limits = Limits(http_header_timeout=60.0, max_http_head_bytes=16 * 1024)
    with anyio.fail_after(60):
        async with serving(Server("big", limits=limits), asgi_server) as (url, _):
            port = _port(url)
            stream = await anyio.connect_tcp("127.0.0.1", port)
            async with stream:
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await stream.send(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ")
                    for _ in range(64):
                        await stream.send(b"a" * 16 * 1024)
                answer = await _until_closed(stream)
            # The answer, unless the client's unread bytes made the close a reset that discarded it.
            assert answer == b"" or answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 431")), answer[:100]
            assert await _served(port)


@pytest.mark.parametrize("httptools", ["installed", "missing"])
async def test_the_default_server_is_uvicorn_with_httptools_on_asyncio_and_minimcps_on_trio(
    anyio_backend: str, httptools: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    if httptools == "missing":
        monkeypatch.setitem(sys.modules, "httptools", None)  # `import httptools` raises ImportError
    caplog.set_level(logging.DEBUG, logger="minimcp.asgi")
    expected = {"asyncio": {"installed": "uvicorn-httptools", "missing": "uvicorn-h11"}, "trio": {}}
    chosen = expected[anyio_backend].get(httptools, "minimcp")
    with anyio.fail_after(30):
        async with serving(Server("default")) as (url, _):
            assert await _served(_port(url))
    assert f"HTTP server: {chosen} on {anyio_backend}" in caplog.messages


async def test_an_unknown_asgi_server_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="asgi_server must be one of minimcp, uvicorn, uvicorn-httptools"):
        await run_asgi(None, None, anyio.Event(), asgi_server="granian")  # type: ignore[arg-type]
