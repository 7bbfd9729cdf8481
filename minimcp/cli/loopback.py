"""The browser step's two ends: the authorization URL checked and opened, the redirect back caught on loopback.

:func:`check_browser_url` lets only ``http`` and ``https`` URLs through (``http`` only to a loopback
host: an authorization server on ``127.0.0.1``, as in tests), with no user info, spaces or control
characters. :func:`open_browser` opens one with Python's :mod:`webbrowser` (``BROWSER`` picks the
program, which gets the URL as one argument: no shell ever sees it).

:class:`LoopbackRedirect` listens on ``127.0.0.1`` and a free port (RFC 8252 §7.3: the authorization
server accepts any port on a loopback redirect) from before the sign-in starts, and
:meth:`LoopbackRedirect.wait` takes the redirect back: a small HTTP/1.1 exchange (request head
bounded by ``Limits.max_http_head_bytes`` and ``Limits.http_header_timeout``), answered with a short
page saying the window can be closed. Only a ``GET`` of the callback path carrying the ``state`` the
authorization request sent ends the wait; anything else (a favicon, a stray or forged request) is
answered ``404``/``400`` and the wait goes on.
"""

from __future__ import annotations

import html
import ipaddress
import urllib.parse
import webbrowser
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.stapled import MultiListener

from minimcp.core.config import Limits

__all__ = ["CALLBACK_PATH", "LoopbackRedirect", "check_browser_url", "is_loopback", "open_browser"]

#: The path of the redirect URI (``http://127.0.0.1:PORT/callback``).
CALLBACK_PATH = "/callback"

_SIGNED_IN = "Signed in. You can close this window and go back to the terminal."
_REFUSED = "The sign-in did not complete ({error}). You can close this window; the terminal says more."


def is_loopback(host: str) -> bool:
    """``localhost``, or an address of 127.0.0.0/8 or ``::1``."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_browser_url(url: str) -> None:
    """Refuse a URL the terminal must not open.

    Raises:
        ValueError: Not ``http``/``https``, ``http`` to a host that is not loopback, no host, user info
            in it, or spaces or control characters (the message says which).
    """
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError("it has spaces or control characters")
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are opened, not {scheme or 'a relative'!r} ones")
    if not parts.hostname:
        raise ValueError("it names no host")
    if "@" in parts.netloc:
        raise ValueError("it has user info before the host")
    if scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(f"http (not https) is only for loopback hosts, not {parts.hostname}")


async def open_browser(url: str) -> bool:
    """Open ``url`` with :mod:`webbrowser` (off the event loop); False when no browser could be started."""
    try:
        opened = await anyio.to_thread.run_sync(webbrowser.open, url, abandon_on_cancel=True)
    except webbrowser.Error:
        return False
    return bool(opened)


class LoopbackRedirect:
    """A listener on ``127.0.0.1`` and a free port for the authorization server's redirect (use :meth:`open`)."""

    def __init__(self, listener: MultiListener[anyio.abc.SocketStream], limits: Limits | None = None) -> None:
        self._listener = listener
        self._limits = limits or Limits()
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        #: Where the authorization server sends the browser back.
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"

    @classmethod
    @asynccontextmanager
    async def open(cls, limits: Limits | None = None) -> AsyncIterator[LoopbackRedirect]:
        """Listen on ``127.0.0.1`` and a free port while the block runs."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        try:
            yield cls(listener, limits)
        finally:
            await listener.aclose()

    async def wait(self, state: str | None) -> dict[str, str]:
        """The query parameters of the first callback carrying ``state`` (any, when ``None``), once its browser
        has been answered. Unbounded: the caller bounds it (``anyio.fail_after``)."""
        found: list[dict[str, str]] = []
        async with anyio.create_task_group() as tg:

            async def handle(stream: anyio.abc.SocketStream) -> None:
                query = await self._exchange(stream, state)
                if query is not None and not found:
                    found.append(query)
                    tg.cancel_scope.cancel()

            await self._listener.serve(handle, tg)
        return found[0]

    async def _exchange(self, stream: anyio.abc.SocketStream, state: str | None) -> dict[str, str] | None:
        """Read one request, answer it; its query when it is the callback awaited."""
        async with stream:
            try:
                with anyio.fail_after(self._limits.http_header_timeout):
                    target = await self._request_target(stream)
                    status, page, query = self._outcome(target, state)
                    await stream.send(_response(status, page))
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None
        return query

    async def _request_target(self, stream: anyio.abc.SocketStream) -> str | None:
        """The target of a ``GET`` request (``None``: not a GET, or its head is over the limit)."""
        head = b""
        limit = self._limits.max_http_head_bytes
        while b"\r\n\r\n" not in head and b"\n\n" not in head:
            if len(head) > limit:
                return None
            head += await stream.receive()
        words = head.split(b"\n", 1)[0].decode("latin-1").split()
        if len(words) != 3 or words[0] != "GET" or not words[2].startswith("HTTP/"):
            return None
        return words[1]

    @staticmethod
    def _outcome(target: str | None, state: str | None) -> tuple[int, str, dict[str, str] | None]:
        if target is None:
            return 400, "Bad request.", None
        parts = urllib.parse.urlsplit(target)
        if parts.path != CALLBACK_PATH:
            return 404, "Not found.", None
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        query = dict(pairs)
        if len(query) != len(pairs) or (state is not None and query.get("state") != state):
            return 400, "This is not the sign-in the terminal is waiting for.", None
        if "error" in query:
            return 200, _REFUSED.format(error=query["error"]), query
        return 200, _SIGNED_IN, query


def _response(status: int, text: str) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    body = (
        '<!doctype html><html><head><meta charset="utf-8"><title>minimcp</title></head>'
        f"<body><p>{html.escape(text)}</p></body></html>\n"
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Referrer-Policy: no-referrer\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
