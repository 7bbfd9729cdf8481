"""The client's 2026-07-28 exchange: one POST per request with mirrored headers, no session, no resumption."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectSendStream

from minimcp.core.transport import MessageTooLarge
from minimcp.transports.http._wire import JSON, SSE, media_type
from minimcp.wire import errors, jsonrpc
from minimcp.wire.jsonrpc import ErrorResponse, RequestId
from minimcp.wire.versions import Era

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

__all__ = ["Exchange", "StatelessCall", "StatelessExchanges", "read_bounded", "request_params"]

logger = logging.getLogger("minimcp.http")

#: Bytes of an HTTP error's body read to explain it.
ERROR_BODY_BYTES = 65536


class Exchange:
    """Where one request's answer stands: the stream to resume, and whether it came."""

    __slots__ = ("answered", "last_event_id", "request_id", "retry_ms")

    def __init__(self, request_id: RequestId | None) -> None:
        self.request_id = request_id
        self.last_event_id = ""
        self.retry_ms = 1000
        self.answered = False


class StatelessCall:
    """What the transport knows about one 2026-07-28 request it sends."""

    __slots__ = ("headers", "method", "probe")

    def __init__(self, headers: dict[str, str], method: str, probe: bool) -> None:
        self.headers = headers
        self.method = method
        #: The era probe (the first request, a server/discover): 401/403/5xx end the connection.
        self.probe = probe


class _Client(Protocol):
    """What the stateless exchange uses of :class:`~minimcp.transports.http.client.StreamableHTTPClientTransport`."""

    url: str
    era: Era | None
    _http: httpx.AsyncClient
    _extra_headers: dict[str, str]
    _max: int
    _in_send: MemoryObjectSendStream[bytes | MessageTooLarge]
    _sent_request: bool
    _modern_calls: set[RequestId]
    _modern_version: str
    request_headers: Callable[[str, bytes], dict[str, str]]

    async def _feed(self, data: bytes, request_id: RequestId | None) -> bool: ...

    async def _fail(self, request_id: RequestId, code: int, message: str) -> None: ...

    async def _read_sse(self, response: httpx.Response, state: Exchange) -> bool: ...

    def _end(self, reason: str) -> None: ...

    async def _fail_modern_http(self, request_id: RequestId, response: httpx.Response, call: StatelessCall) -> None: ...


class StatelessExchanges:
    """The 2026-07-28 half of the client transport (a mixin of it)."""

    era: Era | None
    _modern_version: str

    def _modern_call(self: _Client, id_: RequestId, method: str, params: msgspec.Raw) -> StatelessCall:
        """Headers and flags for a request carrying the 2026-07-28 envelope (``params``: raw JSON)."""
        headers = self.request_headers(method, params)
        version = headers.get("mcp-protocol-version")
        if version is not None:
            self._modern_version = version
        if self.era is None:
            self.era = Era.MODERN
        probe = not self._sent_request and method == "server/discover"
        self._modern_calls.add(id_)
        return StatelessCall(headers, method, probe)

    async def _exchange_modern(self: _Client, message: bytes, request_id: RequestId, call: StatelessCall) -> None:
        """POST one 2026-07-28 request and read its answer (JSON or SSE); no session, no resumption."""
        import httpx

        headers = {**self._extra_headers, "accept": f"{JSON}, {SSE}", "content-type": JSON, **call.headers}
        try:
            async with self._http.stream("POST", self.url, content=message, headers=headers) as response:
                if not 200 <= response.status_code < 300:
                    await self._fail_modern_http(request_id, response, call)
                    return
                media = media_type(response.headers.get("content-type", ""))
                if media == JSON:
                    body = await read_bounded(response, self._max)
                    if len(body) > self._max:
                        await self._fail(request_id, errors.INVALID_REQUEST, f"response exceeds {self._max} bytes")
                    elif not await self._feed(body, request_id):
                        problem = "the server's JSON answer was not this request's response"
                        await self._fail(request_id, errors.INTERNAL_ERROR, problem)
                    return
                if media != SSE:
                    await self._fail(
                        request_id, errors.INTERNAL_ERROR, f"unexpected Content-Type {media!r} from {self.url}"
                    )
                    return
                state = Exchange(request_id)
                await self._read_sse(response, state)
                if state.answered:
                    return
                problem = "the server closed the stream before answering"
        except httpx.HTTPError as exc:
            if call.probe:
                self._end(f"the era probe (server/discover) to {self.url} failed: {exc!r}")
                return
            problem = f"POST to {self.url} failed: {exc!r}"
        # Streams of this revision cannot be resumed: the request is lost (call again).
        await self._fail(request_id, errors.CONNECTION_CLOSED, problem)

    async def _fail_modern_http(
        self: _Client, request_id: RequestId, response: httpx.Response, call: StatelessCall
    ) -> None:
        """A modern request answered with an HTTP error: the server's JSON-RPC error, kept whole."""
        status = response.status_code
        body = await read_bounded(response, ERROR_BODY_BYTES)
        error: ErrorResponse | None = None
        with contextlib.suppress(jsonrpc.InvalidMessage):
            decoded = jsonrpc.decode(body) if body else None
            if type(decoded) is ErrorResponse:
                error = decoded
        if call.probe and (status in (401, 403) or status >= 500) and error is None:
            # Not evidence of the protocol era (authorization, an outage): do not fall back to initialize.
            reason = response.reason_phrase or "error"
            self._end(f"the era probe (server/discover) to {self.url} was answered HTTP {status} {reason}")
            return
        if error is not None:
            data = msgspec.UNSET if error.data is None else error.data
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._in_send.send(jsonrpc.encode_error(request_id, error.code, error.message, data))
            return
        detail = body[:200].decode("utf-8", "replace").strip()
        code = errors.INVALID_REQUEST if 400 <= status < 500 else errors.INTERNAL_ERROR
        text = f"HTTP {status} {response.reason_phrase or 'error'} from {self.url}" + (f": {detail}" if detail else "")
        await self._fail(request_id, code, text)


class _ParamsOnly(msgspec.Struct):
    params: msgspec.Raw = msgspec.Raw(b"")


def request_params(message: bytes) -> msgspec.Raw:
    """A request's ``params`` as raw JSON (empty when it has none), for the headers mirroring them.

    Reads only the ``params`` member (a 2026-07-28 request's headers repeat parts of it); the
    rest of the message was described by the session that sent it.
    """
    try:
        return msgspec.json.decode(message, type=_ParamsOnly).params
    except msgspec.DecodeError:
        return msgspec.Raw(b"")


async def read_bounded(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a body (one more than allowed tells it was too long)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            break
    return bytes(body[: limit + 1])
