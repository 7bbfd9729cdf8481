"""The ASGI side of the HTTP app: type aliases, headers, Accept/Host/Origin matching, bodies and replies."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Collection, Mapping, MutableMapping
from typing import Any

from minimcp.transports.http._wire import JSON, SSE, is_uint
from minimcp.wire import errors, jsonrpc
from minimcp.wire.jsonrpc import RequestId
from minimcp.wire.versions import Feature, supports

__all__ = [
    "ASSUMED_VERSION",
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "END_RECEIVE",
    "PARK",
    "SEND_NOW",
    "SSE_HEADERS",
    "ASGIApp",
    "ASGIMessage",
    "EndReceive",
    "Park",
    "Receive",
    "Scope",
    "Send",
    "SendNow",
    "accepts",
    "read_body",
    "respond",
    "respond_error",
    "scope_headers",
    "end_receive_of",
    "park_of",
    "send_now_of",
]

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: A server's synchronous send of an ``http.response.body`` (never suspends; raises OSError once the client is gone).
SendNow = Callable[[ASGIMessage], None]
#: A server's way to end a ``receive()`` that waits for the end of the response (it then returns, no cancellation).
EndReceive = Callable[[], None]
#: A server's way to take an open response over (the app's call then returns, no task waits): True if it did;
#: it calls ``on_end(disconnected)`` once the response is complete or its client has left.
Park = Callable[[Callable[[bool], object]], bool]

#: The scope extension minimcp's own HTTP server offers it under (``minimcp.transports.h1_server``).
SEND_NOW = "minimcp.send_now"
#: ... and the one it offers :data:`EndReceive` under.
END_RECEIVE = "minimcp.end_receive"
#: ... and the one it offers :data:`Park` under (trio on Linux).
PARK = "minimcp.park"


def send_now_of(scope: Scope, send: Send) -> SendNow | None:
    """The server's :data:`SendNow` for this request's response, if it offers one (minimcp's own server) and
    ``send`` is that server's own: under a middleware that wraps ``send`` (compressing, say) but passes the
    scope on, writing past it would bypass it, so the response then writes through ``send`` only."""
    send_now: SendNow | None = _servers_own(scope, SEND_NOW, send)
    return send_now


def end_receive_of(scope: Scope, receive: Receive) -> EndReceive | None:
    """The server's :data:`EndReceive` for this request, if it offers one (minimcp's own server) and ``receive``
    is that server's own (under a middleware that wraps ``receive``, ending the server's wait would not end
    the middleware's)."""
    end_receive: EndReceive | None = _servers_own(scope, END_RECEIVE, receive)
    return end_receive


def park_of(scope: Scope, receive: Receive, send: Send) -> Park | None:
    """The server's :data:`Park` for this request, if it offers one (minimcp's own server, trio on Linux) and
    both ``receive`` and ``send`` are that server's own (a middleware that wraps either would be bypassed
    while the response is parked)."""
    if _servers_own(scope, SEND_NOW, send) is None:
        return None
    park: Park | None = _servers_own(scope, PARK, receive)
    return park


def _servers_own(scope: Scope, name: str, given: Any) -> Any:
    """The scope's extension ``name`` if it belongs to the object ``given`` belongs to (the ASGI ``send`` or
    ``receive`` the app was handed: with minimcp's server, methods of one connection); else None."""
    extensions = scope.get("extensions")
    found = extensions.get(name) if extensions else None
    if found is None or getattr(found, "__self__", None) is not getattr(given, "__self__", given):
        return None
    return found


#: The revision a server assumes when ``MCP-Protocol-Version`` is absent (spec).
ASSUMED_VERSION = "2025-03-26"

#: Host names a server bound to loopback answers to (any port).
DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("localhost:*", "127.0.0.1:*", "[::1]:*")
#: Browser origins allowed by default: pages served from loopback (any port).
DEFAULT_ALLOWED_ORIGINS: tuple[str, ...] = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in DEFAULT_ALLOWED_HOSTS
)

#: Response headers of every SSE answer (no caching, no proxy buffering).
SSE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", SSE.encode()),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
)


def scope_headers(scope: Scope) -> dict[str, str]:
    """The request headers by lower-case name; repeated headers joined with ``", "``."""
    raw = scope.get("headers", ())
    if type(raw) is list:
        # The common case in one pass (2 per round trip): names already lower case (ASGI asks servers for
        # that) and none repeated; anything else takes the general path below.
        try:
            fast = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
        except (AttributeError, TypeError, ValueError):
            pass
        else:
            if len(fast) == len(raw) and "".join(fast).islower():
                return fast
    out: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name = bytes(raw_name).decode("latin-1").lower()
        value = bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


@functools.lru_cache(maxsize=256)  # clients send the same few Accept headers over and over
def accepts(accept: str, media: str) -> bool:
    """Whether an ``Accept`` header lists ``media`` (wildcards count)."""
    family = media.split("/", 1)[0] + "/*"
    for part in accept.split(","):
        media_range, *params = (p.strip().lower() for p in part.split(";"))
        if media_range in (media, family, "*/*") and "q=0" not in params:
            return True
    return False


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: str | None = None,
    headers: Collection[tuple[bytes, bytes]] = (),
) -> None:
    """A whole response in one go."""
    out = list(headers)
    if content_type is not None:
        out.append((b"content-type", content_type.encode()))
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def respond_error(
    send: Send,
    status: int,
    message: str,
    *,
    code: int = errors.INVALID_REQUEST,
    id: RequestId | None = None,
    version: str | None = None,
    headers: Collection[tuple[bytes, bytes]] = (),
) -> None:
    """An HTTP error status with a JSON-RPC error body (``id`` null or absent as ``version`` wants)."""
    null_id = not supports(version or ASSUMED_VERSION, Feature.ERROR_WITHOUT_ID)
    body = jsonrpc.encode_error(id, code, message, null_id=null_id)
    await respond(send, status, body, content_type=JSON, headers=headers)


def _too_large(limit: int) -> str:
    return f"message body exceeds the {limit}-byte limit"


async def read_body(
    headers: Mapping[str, str], receive: Receive, send: Send, limit: int, version: str | None
) -> bytes | None:
    """The request body, or None after answering ``413`` (over ``limit``) or on a disconnect."""
    length = headers.get("content-length", "")
    if is_uint(length) and int(length) > limit:
        await respond_error(send, 413, _too_large(limit), version=version)
        return None
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        whole = message.get("body", b"")  # the common case: the body in one piece, taken as is
        if len(whole) <= limit:
            return bytes(whole)
        await respond_error(send, 413, _too_large(limit), version=version)
        return None
    body = bytearray()
    while True:
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            await respond_error(send, 413, _too_large(limit), version=version)
            return None
        if not message.get("more_body", False):
            return bytes(body)
        message = await receive()
