"""The client transport of Streamable HTTP: one POST per message, answers read as JSON or SSE, streams resumed."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

import anyio
import anyio.abc

import minimcp.transports.http._headers as mcp_headers
from minimcp.core.config import Limits
from minimcp.core.transport import CANCELLED, MessageKind, MessageTooLarge, Outgoing, describe
from minimcp.transports.http._sse import SSEDecoder
from minimcp.transports.http._wire import JSON, SSE, initialize_version, media_type, same_id
from minimcp.transports.http.client_stateless import (
    ERROR_BODY_BYTES,
    Exchange,
    StatelessCall,
    StatelessExchanges,
    read_bounded,
    request_params,
)
from minimcp.wire import errors, jsonrpc
from minimcp.wire.errors import ConnectionClosed, MinimcpError
from minimcp.wire.jsonrpc import ErrorResponse, RequestId, Response
from minimcp.wire.versions import LATEST_MODERN, META_VERSION, Era, has_envelope

if TYPE_CHECKING:
    import httpx

__all__ = ["StreamableHTTPClientTransport", "http_client"]

logger = logging.getLogger("minimcp.http")

#: Attempts to resume a stream in a row that bring nothing new before the request fails.
_MAX_RESUME_FAILURES = 5
#: Seconds to let the standalone GET stream open before the first request after initialize.
_STANDALONE_WAIT = 2.0
#: Messages received and not yet read by the session before the readers wait.
_INBOX = 64
#: Bytes of a refused notification's or response's body logged.
_REFUSAL_BODY_BYTES = 2048
#: Seconds ``aclose`` gives the DELETE that ends the session on the server.
_DELETE_TIMEOUT = 2.0
#: Characters of an HTTP error body quoted in the error.
_DETAIL_CHARS = 200
#: The ``_meta`` key every 2026-07-28 request carries (a request without it is not one).
_ENVELOPE_KEY = META_VERSION.encode()


class StreamableHTTPClientTransport(StatelessExchanges):
    """The client side of Streamable HTTP (made by :func:`http_client`).

    Attributes:
        url: The MCP endpoint.
        session_id: ``MCP-Session-Id`` the server issued, once known.
        protocol_version: The negotiated revision, once the initialize result passed through.
        era: :attr:`Era.MODERN <minimcp.wire.versions.Era.MODERN>` once a request with the 2026-07-28
            envelope went out, :attr:`Era.LEGACY <minimcp.wire.versions.Era.LEGACY>` once ``initialize``
            did; ``None`` before either.
        request_headers: The headers of one 2026-07-28 request (see :mod:`minimcp.client.headers`).
    """

    #: A session describes each message it sends (:class:`~minimcp.core.transport.DescribedTransport`),
    #: so :meth:`send` routes without reading it.
    wants_outgoing = True

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        task_group: anyio.abc.TaskGroup,
        *,
        headers: Mapping[str, str] | None,
        limits: Limits,
        standalone_stream: bool,
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._http = http
        self._tg = task_group
        self._extra_headers = dict(headers or {})
        self._max = limits.max_message_bytes
        self._want_standalone = standalone_stream
        self._standalone: anyio.CancelScope | None = None
        self._in_send, self._in_recv = anyio.create_memory_object_stream[bytes | MessageTooLarge](_INBOX)
        self._requests: dict[RequestId, anyio.CancelScope] = {}
        self._initialize_id: RequestId | None = None
        self._fatal: str | None = None
        self._closed = False
        self.era: Era | None = None
        self._sent_request = False
        # In-flight 2026-07-28 requests (cancelled by closing their POST, never by a notification).
        self._modern_calls: set[RequestId] = set()
        self._modern_version = LATEST_MODERN
        #: The headers of one 2026-07-28 request, from its method and raw params: by default what the
        #: body says (version, method, name); a :class:`minimcp.Client` puts its own here, which adds the
        #: ``Mcp-Param-*`` headers of the tools it listed (:mod:`minimcp.client.headers`).
        self.request_headers: Callable[[str, bytes], dict[str, str]] = mcp_headers.request_headers

    # --- Transport protocol --------------------------------------------------------------------

    async def send(
        self, message: bytes, *, related: RequestId | None = None, outgoing: Outgoing | None = None
    ) -> None:
        """Send one message: a request opens an exchange of its own; others are POSTed (answered 202).

        ``outgoing`` says what the message is (a session passes it: this transport declares
        ``wants_outgoing``); without it, the message is read to find out.
        """
        if self._closed or self._fatal is not None:
            raise anyio.ClosedResourceError
        if outgoing is None or (outgoing.method == CANCELLED and outgoing.cancelled is None):
            outgoing = describe(message)  # None: not JSON-RPC (POSTed as it is; the server answers)
        if outgoing is not None and outgoing.kind is MessageKind.REQUEST and outgoing.id is not None:
            id_, method = outgoing.id, outgoing.method
            call: StatelessCall | None = None
            if method == "initialize":
                self._initialize_id = id_
                self.era = Era.LEGACY
            elif _ENVELOPE_KEY in message:  # cheap pre-check: only 2026-07-28 requests carry the key
                params = request_params(message)
                if has_envelope(params):
                    call = self._modern_call(id_, method, params)
            self._sent_request = True
            scope = anyio.CancelScope()
            self._requests[id_] = scope
            self._tg.start_soon(self._request, message, id_, scope, call)
            return
        notification: str | None = None
        cancelled: RequestId | None = None
        if outgoing is not None and outgoing.kind is MessageKind.NOTIFICATION:
            notification = outgoing.method
            cancelled = outgoing.cancelled if notification == CANCELLED else None
        if cancelled is not None and (cancelled in self._modern_calls or self.era == Era.MODERN):
            # 2026-07-28 over HTTP: closing the request's POST is the cancellation; nothing is sent.
            running = self._requests.get(cancelled)
            if running is not None:
                running.cancel()
            return
        extra: dict[str, str] = {}
        if self.era == Era.MODERN and notification is not None:
            extra = {"mcp-protocol-version": self._modern_version, "mcp-method": notification}
        await self._post_one_way(message, extra)
        if notification == CANCELLED:
            if cancelled is not None and cancelled in self._requests:
                self._requests[cancelled].cancel()
        elif notification == "notifications/initialized" and self._want_standalone and self._standalone is None:
            self._standalone = anyio.CancelScope()
            ready = anyio.Event()
            self._tg.start_soon(self._standalone_stream, self._standalone, ready)
            # Some servers route a handler's requests to the GET stream and drop them when
            # none is open: let it open (or be refused) before the first call goes out.
            with anyio.move_on_after(_STANDALONE_WAIT):
                await ready.wait()

    async def receive(self) -> bytes:
        try:
            item = await self._in_recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._fatal is not None:
                raise ConnectionClosed(self._fatal) from None
            raise
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def aclose(self) -> None:
        """Stop every exchange and end the session on the server (DELETE)."""
        if self._closed:
            return
        self._closed = True
        for scope in self._requests.values():
            scope.cancel()
        if self._standalone is not None:
            self._standalone.cancel()
        self._in_send.close()
        self._in_recv.close()
        if self.session_id is not None and self._fatal is None:
            import httpx

            with anyio.move_on_after(_DELETE_TIMEOUT), contextlib.suppress(httpx.HTTPError, MinimcpError):
                response = await self._http.delete(self.url, headers=self._headers(accept=None))
                if response.status_code not in (200, 202, 204, 404, 405):
                    logger.debug("DELETE of the MCP session answered HTTP %d", response.status_code)

    # --- helpers -------------------------------------------------------------------------------

    def _headers(self, *, accept: str | None, content: bool = False, last_event_id: str = "") -> dict[str, str]:
        headers = dict(self._extra_headers)
        if accept is not None:
            headers["accept"] = accept
        if content:
            headers["content-type"] = JSON
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id:
            headers["last-event-id"] = last_event_id
        return headers

    def _note_session(self, response: httpx.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and self.session_id is None:
            self.session_id = sid

    def _session_gone(self, response: httpx.Response) -> bool:
        """A 404 for our session: the server ended it. End the connection."""
        if response.status_code != 404 or self.session_id is None:
            return False
        if self._fatal is None:
            self._fatal = f"the server ended MCP session {self.session_id[:8]}... (HTTP 404); start a new session"
            logger.warning("%s", self._fatal)
            self.session_id = None
            self._in_send.close()
            for scope in self._requests.values():
                scope.cancel()
            if self._standalone is not None:
                self._standalone.cancel()
        return True

    async def _feed(self, data: bytes, request_id: RequestId | None) -> bool:
        """Pass one message to the session; True when it is the response to ``request_id``."""
        answered = False
        try:
            message: jsonrpc.Message | None = jsonrpc.decode(data)
        except jsonrpc.InvalidMessage:
            message = None
        if type(message) is Response or type(message) is ErrorResponse:
            answered = request_id is not None and same_id(message.id, request_id)
            if type(message) is Response and same_id(message.id, self._initialize_id):
                self._initialize_id = None
                version = initialize_version(message.result)
                if version:
                    self.protocol_version = version
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._in_send.send(data)
        return answered

    async def _fail(self, request_id: RequestId, code: int, message: str) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._in_send.send(jsonrpc.encode_error(request_id, code, message))

    async def _fail_http(self, request_id: RequestId, response: httpx.Response) -> None:
        body = await read_bounded(response, ERROR_BODY_BYTES)
        code = errors.INVALID_REQUEST if 400 <= response.status_code < 500 else errors.INTERNAL_ERROR
        detail = ""
        if body:
            try:
                error = jsonrpc.decode(body)
            except jsonrpc.InvalidMessage:
                detail = body[:_DETAIL_CHARS].decode("utf-8", "replace").strip()
            else:
                if type(error) is ErrorResponse:
                    code, detail = error.code, error.message
        reason = response.reason_phrase or "error"
        text = f"HTTP {response.status_code} {reason} from {self.url}" + (f": {detail}" if detail else "")
        await self._fail(request_id, code, text)

    async def _post_one_way(self, message: bytes, extra_headers: Mapping[str, str] | None = None) -> None:
        """POST a notification or a response (answered 202)."""
        import httpx

        headers = self._headers(accept=f"{JSON}, {SSE}", content=True)
        if extra_headers:
            headers.update(extra_headers)
        try:
            async with self._http.stream("POST", self.url, content=message, headers=headers) as response:
                self._note_session(response)
                if self._session_gone(response):
                    raise anyio.BrokenResourceError
                if not 200 <= response.status_code < 300:
                    body = await read_bounded(response, _REFUSAL_BODY_BYTES)
                    logger.warning(
                        "server refused a message with HTTP %d: %s",
                        response.status_code,
                        body.decode("utf-8", "replace").strip(),
                    )
        except (httpx.HTTPError, MinimcpError) as exc:
            raise anyio.BrokenResourceError(f"POST to {self.url} failed: {exc!r}") from exc

    async def _request(
        self, message: bytes, request_id: RequestId, scope: anyio.CancelScope, call: StatelessCall | None = None
    ) -> None:
        try:
            with scope:
                if call is None:
                    await self._exchange(message, request_id)
                else:
                    await self._exchange_modern(message, request_id, call)
        except MinimcpError as exc:  # the request's authorization (an OAuthClient's sign-in) failed
            logger.warning("request %r not sent: %s", request_id, exc)
            await self._fail(request_id, errors.INVALID_REQUEST, f"authorization failed: {exc}")
        except Exception as exc:  # pragma: no cover - a bug here must not hang the caller
            logger.exception("HTTP exchange for request %r failed", request_id)
            await self._fail(request_id, errors.INTERNAL_ERROR, f"HTTP transport failed: {exc!r}")
        finally:
            if self._requests.get(request_id) is scope:
                del self._requests[request_id]
            self._modern_calls.discard(request_id)

    def _end(self, reason: str) -> None:
        """End the connection: the session's receive raises ConnectionClosed(reason)."""
        if self._fatal is None:
            self._fatal = reason
            logger.warning("%s", reason)
            self._in_send.close()
            for scope in self._requests.values():
                scope.cancel()

    async def _exchange(self, message: bytes, request_id: RequestId) -> None:
        """POST a request and read its answer, resuming the stream with GET if it drops."""
        import httpx

        state = Exchange(request_id)
        failures = 0
        first = True
        while True:
            progress = False
            problem = "the stream ended before the response"
            try:
                if first:
                    request = self._http.stream(
                        "POST",
                        self.url,
                        content=message,
                        headers=self._headers(accept=f"{JSON}, {SSE}", content=True),
                    )
                else:
                    request = self._http.stream(
                        "GET", self.url, headers=self._headers(accept=SSE, last_event_id=state.last_event_id)
                    )
                async with request as response:
                    if first:
                        self._note_session(response)
                    if self._session_gone(response):
                        return
                    if not 200 <= response.status_code < 300:
                        await self._fail_http(request_id, response)
                        return
                    media = media_type(response.headers.get("content-type", ""))
                    if first and media == JSON:
                        body = await read_bounded(response, self._max)
                        if len(body) > self._max:
                            await self._fail(request_id, errors.INVALID_REQUEST, f"response exceeds {self._max} bytes")
                        elif not await self._feed(body, request_id):
                            await self._fail(
                                request_id,
                                errors.INTERNAL_ERROR,
                                "the server's JSON answer was not this request's response",
                            )
                        return
                    if media != SSE:
                        await self._fail(
                            request_id, errors.INTERNAL_ERROR, f"unexpected Content-Type {media!r} from {self.url}"
                        )
                        return
                    progress = await self._read_sse(response, state)
            except httpx.HTTPError as exc:
                if first and not state.last_event_id:
                    await self._fail(request_id, errors.CONNECTION_CLOSED, f"POST to {self.url} failed: {exc!r}")
                    return
                logger.debug("SSE stream for request %r dropped: %r", request_id, exc)
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if state.answered:
                return
            if not state.last_event_id:
                await self._fail(
                    request_id,
                    errors.CONNECTION_CLOSED,
                    "the server closed the stream before answering, and it cannot be resumed (no event id)",
                )
                return
            failures = 0 if progress else failures + 1
            if failures >= _MAX_RESUME_FAILURES:
                await self._fail(
                    request_id,
                    errors.CONNECTION_CLOSED,
                    f"the answer stream broke and {failures} attempts to resume it failed (last: {problem})",
                )
                return
            first = False
            await anyio.sleep(state.retry_ms / 1000)

    async def _read_sse(self, response: httpx.Response, state: Exchange) -> bool:
        """Read one SSE connection until the answer or its end; True when anything new came."""
        decoder = SSEDecoder(self._max)
        decoder.last_event_id = state.last_event_id
        progress = False
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                if event.oversized:
                    progress = True
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await self._in_send.send(MessageTooLarge(self._max))
                elif event.event == "message" and event.data:  # empty data: a priming event
                    progress = True
                    if await self._feed(event.data, state.request_id):
                        state.answered = True
            if decoder.last_event_id != state.last_event_id:
                progress = True
                state.last_event_id = decoder.last_event_id
            if decoder.retry is not None:
                state.retry_ms = decoder.retry
            if state.answered:
                break
        return progress

    async def _standalone_stream(self, scope: anyio.CancelScope, ready: anyio.Event) -> None:
        """The optional GET stream for server messages unrelated to our requests.

        ``ready`` is set once the first GET got its response headers, or failed.
        """
        try:
            await self._standalone_loop(scope, ready)
        finally:
            ready.set()

    async def _standalone_loop(self, scope: anyio.CancelScope, ready: anyio.Event) -> None:
        import httpx

        state = Exchange(None)
        failures = 0
        with scope:
            while not self._closed and self._fatal is None:
                progress = False
                try:
                    async with self._http.stream(
                        "GET", self.url, headers=self._headers(accept=SSE, last_event_id=state.last_event_id)
                    ) as response:
                        ready.set()
                        media = media_type(response.headers.get("content-type", ""))
                        if response.status_code != 200 or media != SSE:
                            # 405 (no GET stream), 404/400 from servers without one: fine, do without.
                            logger.debug("no standalone SSE stream (HTTP %d)", response.status_code)
                            return
                        progress = await self._read_sse(response, state)
                except httpx.HTTPError as exc:
                    logger.debug("standalone SSE stream dropped: %r", exc)
                except MinimcpError as exc:  # its authorization failed: do without the stream
                    logger.debug("no standalone SSE stream: %s", exc)
                    return
                failures = 0 if progress else failures + 1
                if failures >= _MAX_RESUME_FAILURES:
                    return
                await anyio.sleep(state.retry_ms / 1000)


@contextlib.asynccontextmanager
async def http_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    standalone_stream: bool = True,
    timeout: float = 30.0,
    auth: httpx.Auth | None = None,
) -> AsyncIterator[StreamableHTTPClientTransport]:
    """A Streamable HTTP transport to the MCP endpoint ``url``; use with :class:`minimcp.Client`.

    Args:
        url: The MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: Extra headers on every request (``Authorization``, say).
        limits: ``max_message_bytes`` bounds each message read.
        standalone_stream: Open the GET stream for server messages after the
            handshake (servers without one are fine).
        timeout: Seconds to connect and to send a request. Reading an answer has
            no HTTP timeout: the session's request timeouts govern it.
        auth: Authorization for every HTTP request (POST, GET, DELETE), e.g. an
            :class:`~minimcp.auth.oauth_client.OAuthClient`, which signs in when
            the server answers 401. A sign-in that fails fails the request that met
            the 401 (:class:`~minimcp.auth.oauth_client.AuthorizationFailed`'s message).

    On exit the session is ended on the server (DELETE) and every exchange stops.
    """
    import httpx

    limits = limits or Limits()
    error: BaseException | None = None
    async with (
        httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
            follow_redirects=False,
            auth=auth,
        ) as http,
        anyio.create_task_group() as tg,
    ):
        transport = StreamableHTTPClientTransport(
            url, http, tg, headers=headers, limits=limits, standalone_stream=standalone_stream
        )
        try:
            yield transport
        except BaseException as exc:
            # Re-raised below, outside the task group, so it is not wrapped in an exception group.
            error = exc
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
