"""What a Streamable HTTP round trip costs the server in loop work, counted (not timed): timers per request.

The counts are of work that does not depend on the machine's speed, so these tests hold on a
busy machine: timers made per request on a kept-alive connection, by the ASGI server and
minimcp's guard around it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from minimcp import Server
from tests.test_asgi_guard import UVICORN, _port, serving

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
    made = [0]

    class CountedTimerHandle(asyncio.TimerHandle):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made[0] += 1
            super().__init__(*args, **kwargs)

    with anyio.fail_after(30):
        async with serving(Server("timers"), asgi_server) as (url, _):
            port = _port(url)
            await _get_404s(port, 2)  # warm: the connection's own timer exists
            monkeypatch.setattr(asyncio.events, "TimerHandle", CountedTimerHandle)
            await _get_404s(port, REQUESTS)
            monkeypatch.undo()
    # uvicorn: one keep-alive timer per response; the guard: one for the new connection; a few for the
    # app's own clocks at most
    assert made[0] <= REQUESTS + 6, made[0]
