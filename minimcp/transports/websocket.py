"""WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``.

WebSocket is not an MCP transport in any released revision of the spec; this
is the de-facto form other SDKs used (a "custom transport" in spec terms).
The connection behaviour, documented as the spec asks:

* Handshake: an HTTP/1.1 upgrade on ``path`` (default ``/mcp``). The client
  offers subprotocol ``mcp``. The server selects ``mcp`` when offered, accepts a
  client that offers no subprotocol at all (plain tools such as ``websocat``),
  and refuses (400) a client that offers only other subprotocols. A request
  with an ``Origin`` header is accepted only from an allowed origin (by
  default a loopback one), else 403. No ``Origin`` header (a non-browser
  client) is accepted. No extensions are negotiated (no compression).
* Messages: each text frame (or fragmented text message) is one JSON-RPC
  message in UTF-8. A binary frame closes the connection with 1003, a text
  message that is not valid UTF-8 with 1007 (RFC 6455 8.1); a message over
  ``limits.max_message_bytes`` closes it with 1009 as soon as the frame header
  announces it, so its payload is never buffered.
* Output not yet taken by the socket (pongs the protocol core queues, close
  frames, messages) is bounded by ``limits.stream_buffer_bytes``: above it
  senders wait for room, and a server stops reading (so a client that floods
  pings and never reads stalls itself). A client keeps reading (were both ends
  to stop, large uploads and downloads at once would deadlock); it fails the
  connection (1008) once another bound's worth of answers to the server's own
  frames piles up.
* Liveness (all in :class:`~minimcp.core.config.Limits`): both sides send a keepalive
  ping every ``ping_interval`` and drop the connection (1011) when it is not
  answered within ``ping_timeout``. A server closes a connection that sends no
  request within ``initialize_timeout`` (1008), and one that stays idle for
  ``idle_timeout`` (1000): nothing received and no work pending -- a tool
  waiting on a person's answer keeps its connection however long it takes.
* Slots and authorization (the server, :func:`minimcp.serve_websocket`): connections are
  bounded in total (``max_connections``, from the TCP accept), per client address and, with
  authorization, per person (``limits.max_sessions_per_client``); a new connection beyond a
  bound ends another one with 1008 and a reason, or is refused (``429``/``503``); the rules are
  in :mod:`minimcp.transports._ws_slots`. With ``auth``, the upgrade request's bearer token is
  checked before the upgrade (``401`` with ``WWW-Authenticate`` when refused).
* Closing is the normal closing handshake (code 1000); losing the TCP
  connection ends the session like a close does: pending requests fail with
  ConnectionClosed and running handlers (tools waiting on a question) are
  cancelled.

The WebSocket protocol itself comes from the ``websockets`` package's sans-I/O
core (``ServerProtocol`` / ``ClientProtocol``), driven here over anyio TCP
streams, so one code path runs on asyncio and on trio. Install it with
``pip install 'minimcp[ws]'``.

This module is the transport and imports no role; :func:`serve_websocket` and
:func:`connect_websocket` (a ``Server`` served, a ``Client`` connected) live in
:mod:`minimcp.hosting.websocket`, a layer above (public as ``minimcp.serve_websocket``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import struct
import typing
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence

import anyio
import anyio.abc

from minimcp.core.config import Limits
from minimcp.transports._backend_io import NativeEvent, native_event_class
from minimcp.transports._ports import is_utf8
from minimcp.wire.errors import MinimcpError
from minimcp.wire.jsonrpc import RequestId

try:
    from websockets.client import ClientProtocol
    from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI
    from websockets.frames import CloseCode, Frame, Opcode
    from websockets.http11 import Response
    from websockets.protocol import CLOSED, OPEN, SERVER, Protocol
    from websockets.typing import Subprotocol
    from websockets.uri import parse_uri
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the WebSocket transport needs the 'websockets' package: pip install 'minimcp[ws]'") from exc

__all__ = [
    "SUBPROTOCOL",
    "WebSocketHandshakeError",
    "WebSocketTransport",
    "websocket_client",
]

logger = logging.getLogger("minimcp.websocket")

#: The WebSocket subprotocol name for MCP.
SUBPROTOCOL = "mcp"

_MCP = Subprotocol(SUBPROTOCOL)
_CHUNK = 65536
_HEAD16 = struct.Struct("!BBH")
_HEAD64 = struct.Struct("!BBQ")
#: Handshake headers whose values never reach a log line (websockets logs every header at DEBUG).
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


class RedactedLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The websockets core's logger (same name), with the values of credential headers left out."""

    def log(self, level: int, msg: object, *args: object, **kwargs: typing.Any) -> None:
        if len(args) == 2 and isinstance(args[0], str) and args[0].lower() in _SECRET_HEADERS:
            args = (args[0], "[redacted]")
        super().log(level, msg, *args, **kwargs)


def redacted_log(name: str) -> RedactedLog:
    """The logger ``name`` (``websockets.client`` / ``websockets.server``), redacting credentials."""
    return RedactedLog(logging.getLogger(name), {})


def text_frame_head(length: int) -> bytes:
    """The head of a final, unmasked text frame with a ``length``-byte payload (RFC 6455 5.2).

    What the websockets core writes before a server's text message (``Frame.serialize``, no mask,
    no extension): the server writes it by hand, one call per message instead of the core's four.
    """
    if length < 126:
        return bytes((0x81, length))
    if length < 65536:
        return _HEAD16.pack(0x81, 126, length)
    return _HEAD64.pack(0x81, 127, length)


class Watched(typing.Protocol):
    """What a server's watchdog reads of the session it guards (a
    :class:`~minimcp.transports._ports.SessionActivity`, or what holds one); read at its ticks only."""

    def has_requested(self) -> bool: ...

    def activity(self) -> tuple[int, bool]: ...


class WebSocketHandshakeError(MinimcpError):
    """The server refused the WebSocket upgrade, or answered with something else.

    Attributes:
        status: The HTTP status of the refusal (403 for a refused origin), or
            ``None`` when there was no valid HTTP response.
        www_authenticate: The refusal's ``WWW-Authenticate`` header (a ``401``'s
            or ``403``'s challenge), if it had one.
    """

    def __init__(self, message: str, status: int | None = None, www_authenticate: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.www_authenticate = www_authenticate


class WebSocketTransport:
    """One open WebSocket connection as a minimcp transport.

    Made by :func:`websocket_client` and :func:`minimcp.serve_websocket`; not
    constructed directly. ``receive`` reads the socket itself (the session's
    read loop is its only caller); a writer task owned by the opener writes,
    so a cancelled sender can never leave half a frame on the wire, and
    answering a ping never waits behind a slow send. A send queues the frame
    for that writer and returns (it waits only for room, as the stdio transport
    does): a sender does not park until its frame is written, and the writer
    sends every frame queued meanwhile in one write.
    """

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        protocol: Protocol,
        *,
        close_timeout: float,
        early_events: Sequence[object] = (),
        limits: Limits | None = None,
    ) -> None:
        self._stream = stream
        self._protocol = protocol
        self._close_timeout = close_timeout
        self._limits = limits = limits or Limits()
        self._room = limits.stream_buffer_bytes
        # A server stops reading while its output is over the bound; a client never does (were
        # both to stop, large uploads and downloads at once would deadlock). A client fails the
        # connection instead when the peer's own frames (pings) pile up a bound's worth of replies.
        self._pause_reading = protocol.side is SERVER
        # A server's text frames are framed here (:func:`text_frame_head`); the core frames the rest (its own
        # control frames, a client's masked frames, and every frame while it logs each one at DEBUG).
        self._frames_by_hand = protocol.side is SERVER and not protocol.extensions and not protocol.debug
        self._owed = 0
        self._inbox: deque[bytes] = deque()
        self._partial: bytearray | None = None
        self._ended = False  # no more messages will come (close frame, failure or EOF)
        self._tcp_eof = False
        self._reading = False  # a read of the socket is under way (the read loop's, or the closing handshake's)
        # The backend's own events (no anyio wrapper per wake-up); made once the loop runs.
        self._event: typing.Callable[[], NativeEvent] = native_event_class()
        # Writer bookkeeping: sends are numbered; the writer reports how far it got.
        self._queued = 0
        self._written = 0
        # What the core gave us to send, and its size plus what the writer is sending now.
        self._out: list[bytes] = []
        self._unsent = 0
        self._eof_wanted = False
        # Keepalive: the payload of the ping awaiting its pong, and how many were answered.
        self._ping_payload: bytes | None = None
        self._pongs = 0
        self._wake = self._event()
        # Made by the first who waits for the writer (or a read) to get on; set and dropped at the next step.
        self._progress: NativeEvent | None = None
        self._writer_dead = False
        # The writer outlives the cancellation of its task group, so that the close
        # frame still goes out when the session is torn down; aclose() stops it.
        self._writer_scope = anyio.CancelScope(shield=True)
        self._closing = False
        self._closed = anyio.Event()
        self._take_events(early_events)
        self._pull()  # anything the handshake left queued (a pong, a close)

    # --- what the connection negotiated and how it ended -------------------------------------

    @property
    def subprotocol(self) -> str | None:
        """The negotiated subprotocol (``"mcp"``, or ``None`` with a lenient peer)."""
        sub = self._protocol.subprotocol
        return str(sub) if sub is not None else None

    @property
    def close_code(self) -> int | None:
        """The close code the peer sent (1006 if the TCP connection ended without one); ``None`` until closed."""
        code = self._protocol.close_code
        return int(code) if code is not None else None

    @property
    def close_reason(self) -> str | None:
        """The close reason the peer sent; ``None`` until closed."""
        return self._protocol.close_reason

    # --- Transport protocol ------------------------------------------------------------------

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        """Queue ``message`` as one text frame for the writer; wait first while more than
        ``limits.stream_buffer_bytes`` is unsent (a sender cancelled while it waits leaves nothing behind)."""
        while self._unsent > self._room and not self._writer_dead and not self._closing:
            await self._wait_progress()  # wait for room before queueing (stream_buffer_bytes)
        if self._closing:
            raise anyio.ClosedResourceError
        if self._protocol.state is not OPEN or self._writer_dead:
            raise anyio.BrokenResourceError
        self._queue_text(message)

    def send_nowait(self, message: bytes, *, related: RequestId | None = None) -> bool:
        """Queue ``message`` if that needs no waiting; ``False`` (nothing sent): call :meth:`send`."""
        if self._unsent > self._room or self._closing or self._writer_dead or self._protocol.state is not OPEN:
            return False
        self._queue_text(message)
        return True

    def _queue_text(self, message: bytes) -> None:
        """Queue ``message`` as one text frame (the connection is open) and wake the writer."""
        if not self._frames_by_hand:
            self._protocol.send_text(message)
            self._pull()
            return
        # The core's own frames were taken as it made them (every call into it is followed by _pull),
        # so this frame goes out after them, as it would from the core.
        head = text_frame_head(len(message))
        out = self._out
        out.append(head)
        out.append(message)
        self._unsent += len(head) + len(message)
        self._wake.set()

    def receive_nowait(self) -> bytes | None:
        """A message already read (``None``: call :meth:`receive`, which reads or says why it cannot)."""
        inbox = self._inbox
        return inbox.popleft() if inbox else None

    async def receive(self) -> bytes:
        while True:
            if self._inbox:
                return self._inbox.popleft()
            if self._ended:
                raise anyio.EndOfStream
            if self._closing:
                raise anyio.ClosedResourceError
            await self._read_some()

    async def aclose(self) -> None:
        """Close with code 1000 and finish the closing handshake (at most ``close_timeout`` seconds)."""
        await self._close_with(CloseCode.NORMAL_CLOSURE, "")

    async def fail(self, code: int, reason: str) -> None:
        """Close now with ``code`` and ``reason``: the close frame is sent, then the TCP connection is
        closed without waiting for the peer's answer (RFC 6455 7.1.7; at most ``close_timeout``
        seconds for the frame to go out). The server ends a connection so to make room for another."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        try:
            with anyio.move_on_after(self._close_timeout):
                if self._protocol.state is OPEN:
                    self._protocol.fail(code, reason)
                    self._pull()
                await self._flush()
        finally:
            with anyio.CancelScope(shield=True):
                await self._drop()

    async def _close_with(self, code: int, reason: str) -> None:
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        proto = self._protocol
        try:
            with anyio.move_on_after(self._close_timeout):
                if proto.state is OPEN:
                    proto.send_close(code, reason)
                    self._pull()
                await self._flush()
                # Wait for the peer's close frame and the end of the TCP stream,
                # discarding anything else it still sends.
                while proto.state is not CLOSED and not self._tcp_eof:
                    await self._read_some()
                    self._inbox.clear()
                await self._flush()
        finally:
            with anyio.CancelScope(shield=True):
                await self._drop()

    async def _drop(self) -> None:
        """Close the TCP stream now: a blocked reader or writer fails and the session ends."""
        self._closing = True
        with contextlib.suppress(Exception):
            await self._stream.aclose()
        self._writer_dead = True
        self._writer_scope.cancel()
        self._notify_progress()
        self._closed.set()

    async def _wait_progress(self) -> None:
        """Wait for the writer's next step (or the end of a read of the socket)."""
        progress = self._progress
        if progress is None:
            self._progress = progress = self._event()
        await progress.wait()

    # --- reading -----------------------------------------------------------------------------

    async def _read_some(self) -> None:
        proto = self._protocol
        # One reader at a time (the closing handshake reads while the read loop may): a flag, not
        # a lock, since taking an anyio lock is a checkpoint of its own on every read.
        while self._reading:
            await self._wait_progress()
        self._reading = True
        try:
            # Stop reading while too much output waits (the peer reads slower than it
            # makes us answer, e.g. a ping flood): the backlog is then its own.
            while self._pause_reading and self._unsent > self._room and not self._writer_dead:
                await self._wait_progress()
            if self._tcp_eof:
                self._ended = True
                return
            try:
                chunk = await self._stream.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._tcp_eof = True
                proto.receive_eof()
            else:
                proto.receive_data(chunk)
            self._take_events(proto.events_received())
            before = self._unsent
            self._pull()  # pongs, close frames, EOF
            if not self._pause_reading and self._unsent > self._room:
                self._owed += self._unsent - before
                if self._owed > self._room and proto.state is OPEN:
                    logger.debug("the peer makes us answer but does not read; closing with 1008")
                    proto.fail(CloseCode.POLICY_VIOLATION, "peer does not read")
                    self._pull()
                    self._ended = True
        finally:
            self._reading = False
            self._notify_progress()

    def _take_events(self, events: Sequence[object]) -> None:
        proto = self._protocol
        for event in events:
            if not isinstance(event, Frame):
                continue
            opcode = event.opcode
            if opcode is Opcode.TEXT:
                if event.fin:
                    data = bytes(event.data)
                    if not (data.isascii() or is_utf8(data)):
                        self._invalid_utf8()
                        break
                    self._inbox.append(data)
                else:
                    self._partial = bytearray(event.data)
            elif opcode is Opcode.CONT:
                # The core rejects stray continuations and counts the whole message
                # against max_size; a binary message never gets here (failed below).
                if self._partial is not None:
                    self._partial += event.data
                    if event.fin:
                        data = bytes(self._partial)
                        self._partial = None
                        if not (data.isascii() or is_utf8(data)):
                            self._invalid_utf8()
                            break
                        self._inbox.append(data)
            elif opcode is Opcode.PONG:
                if event.data == self._ping_payload:
                    self._ping_payload = None
                    self._pongs += 1
            elif opcode is Opcode.BINARY:
                logger.debug("binary frame received; closing with 1003")
                if proto.state is OPEN:
                    proto.fail(CloseCode.UNSUPPORTED_DATA, "MCP messages must be text frames")
                break
        if proto.state is not OPEN:
            self._ended = True
            self._partial = None

    def _invalid_utf8(self) -> None:
        # RFC 6455 8.1: text that is not UTF-8 fails the connection (1007); it is
        # not handed on to be answered as a JSON-RPC parse error.
        logger.debug("text message with invalid UTF-8; closing with 1007")
        if self._protocol.state is OPEN:
            self._protocol.fail(CloseCode.INVALID_DATA, "text message is not valid UTF-8")

    # --- writing -----------------------------------------------------------------------------

    def _pull(self) -> None:
        """Take what the core queued (it counts toward ``_unsent`` until written) and wake the writer."""
        chunks = self._protocol.data_to_send()
        if not chunks:
            return  # most reads queue nothing: the writer sleeps on
        for chunk in chunks:
            if chunk:
                self._out.append(chunk)
                self._unsent += len(chunk)
            else:  # the core asks to half-close the TCP connection
                self._eof_wanted = True
        self._wake.set()

    async def _flush(self) -> bool:
        """Have the writer send all the core has queued; False if the connection is gone."""
        self._queued += 1
        target = self._queued
        self._wake.set()
        while self._written < target:
            if self._writer_dead:
                return False
            await self._wait_progress()
        return True

    def _notify_progress(self) -> None:
        progress = self._progress
        if progress is not None:  # (nobody waits: nothing to make or set)
            self._progress = None
            progress.set()

    async def _write_loop(self) -> None:
        try:
            with self._writer_scope:
                await self._write_forever()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            logger.debug("websocket write failed; the connection is gone")
        finally:
            self._writer_dead = True
            self._notify_progress()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = self._event()
            target = self._queued
            chunks, self._out = self._out, []
            eof, self._eof_wanted = self._eof_wanted, False
            if chunks:
                data = b"".join(chunks)
                await self._stream.send(data)
                self._unsent -= len(data)
                if self._unsent <= self._room:
                    self._owed = 0
            if eof:
                with contextlib.suppress(NotImplementedError):  # TLS streams cannot half-close
                    await self._stream.send_eof()
            self._written = target
            self._notify_progress()

    # --- liveness ----------------------------------------------------------------------------

    async def _keep_watch(self, peer: Watched | None) -> None:
        """Keepalive pings; on a server (``peer``) also the initialize and idle deadlines.

        One task per connection that sleeps until its next deadline: nothing on the
        message path reads a clock. Activity is the session's own message counters,
        compared at each wake-up, so a connection is closed for idleness between
        ``idle_timeout`` and ``idle_timeout`` plus one ``ping_interval`` after it fell
        silent (twice ``idle_timeout`` with pings off).
        """
        limits = self._limits
        interval, answer_within = limits.ping_interval, limits.ping_timeout
        idle = limits.idle_timeout if peer is not None else None
        now = anyio.current_time()
        first_by = now + limits.initialize_timeout if peer is not None and limits.initialize_timeout else math.inf
        next_ping = now + interval if interval else math.inf
        pong_by = math.inf
        seen, quiet_since = -1, now
        while True:
            wake = min(first_by, next_ping, quiet_since + idle if idle else math.inf)
            if self._ping_payload is not None:
                wake = min(wake, pong_by)
            await anyio.sleep_until(wake)
            now = anyio.current_time()
            if first_by != math.inf:
                if peer is not None and peer.has_requested():
                    first_by = math.inf
                elif now >= first_by:
                    logger.info("websocket: no request within %s s; closing", limits.initialize_timeout)
                    await self._close_with(CloseCode.POLICY_VIOLATION, "no request in time")
                    return
            if idle and peer is not None:
                count, busy = peer.activity()
                if busy or count != seen:
                    seen, quiet_since = count, now
                elif now >= quiet_since + idle:
                    logger.info("websocket: idle for %s s; closing", idle)
                    await self._close_with(CloseCode.NORMAL_CLOSURE, "idle timeout")
                    return
            if self._ping_payload is not None and now >= pong_by:
                logger.info("websocket: keepalive ping not answered within %s s; dropping", answer_within)
                if self._protocol.state is OPEN:
                    self._protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
                    self._pull()
                with anyio.CancelScope(shield=True):
                    await self._drop()
                return
            if now >= next_ping:
                next_ping = now + interval  # type: ignore[operator]  # finite only with an interval
                if self._ping_payload is None and self._protocol.state is OPEN:
                    self._ping_payload = os.urandom(4)
                    self._protocol.send_ping(self._ping_payload)
                    self._pull()
                    pong_by = now + answer_within if answer_within else math.inf


@contextlib.asynccontextmanager
async def running(
    stream: anyio.abc.ByteStream,
    protocol: Protocol,
    close_timeout: float,
    early_events: Sequence[object],
    limits: Limits,
    peer: Watched | None = None,
) -> AsyncIterator[WebSocketTransport]:
    """The transport over an upgraded connection, its writer (and watchdog) running until the block ends."""
    transport = WebSocketTransport(
        stream, protocol, close_timeout=close_timeout, early_events=early_events, limits=limits
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(transport._write_loop)
        if limits.ping_interval or (peer is not None and (limits.initialize_timeout or limits.idle_timeout)):
            tg.start_soon(transport._keep_watch, peer)
        try:
            yield transport
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            tg.cancel_scope.cancel()


async def read_handshake(stream: anyio.abc.ByteStream, protocol: Protocol) -> list[object]:
    """Feed the core until the handshake request/response arrives; return the events so far."""
    while True:
        try:
            chunk = await stream.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            protocol.receive_eof()
        else:
            protocol.receive_data(chunk)
        events: list[object] = list(protocol.events_received())
        if events or protocol.handshake_exc is not None:
            return events


async def write_now(stream: anyio.abc.ByteStream, protocol: Protocol) -> None:
    """Write what the protocol core has queued (and half-close when it asks to)."""
    chunks = protocol.data_to_send()
    data = b"".join(chunks)
    if data:
        await stream.send(data)
    if b"" in chunks:
        with contextlib.suppress(NotImplementedError):
            await stream.send_eof()


# --- client ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def websocket_client(
    url: str,
    *,
    limits: Limits | None = None,
    headers: Mapping[str, str] | None = None,
    open_timeout: float = 10.0,
    close_timeout: float = 5.0,
) -> AsyncIterator[WebSocketTransport]:
    """Open a WebSocket to ``url`` (``ws://`` or ``wss://``) offering subprotocol ``mcp``.

    Args:
        url: The server's WebSocket URL, e.g. ``ws://127.0.0.1:8000/mcp``.
        limits: ``max_message_bytes`` for incoming messages, ``stream_buffer_bytes``
            of unsent output, ``ping_interval`` / ``ping_timeout`` for keepalive.
        headers: Extra handshake headers (``Authorization``, ``Origin``, ...).
        open_timeout: Seconds for the TCP connection and the upgrade together.
        close_timeout: Seconds to spend on the closing handshake at exit.

    Raises:
        WebSocketHandshakeError: the server refused the upgrade (``status``
            holds the HTTP status) or did not answer with a valid one.
        OSError: the TCP connection failed.
    """
    limits = limits or Limits()
    try:
        uri = parse_uri(url)
    except InvalidURI as exc:
        raise ValueError(str(exc)) from None
    with anyio.fail_after(open_timeout):
        stream: anyio.abc.ByteStream
        if uri.secure:
            stream = await anyio.connect_tcp(uri.host, uri.port, tls=True)
        else:
            stream = await anyio.connect_tcp(uri.host, uri.port)
        try:
            protocol = ClientProtocol(
                uri, subprotocols=[_MCP], max_size=limits.max_message_bytes, logger=redacted_log("websockets.client")
            )
            request = protocol.connect()
            for name, value in (headers or {}).items():
                request.headers[name] = value
            protocol.send_request(request)
            await write_now(stream, protocol)
            events = await read_handshake(stream, protocol)
            failure = protocol.handshake_exc
            if failure is not None:
                status = challenge = None
                if isinstance(failure, InvalidStatus):
                    status = failure.response.status_code
                    challenge = ", ".join(failure.response.headers.get_all("WWW-Authenticate")) or None
                message = str(failure)
                if isinstance(failure, InvalidHandshake) and failure.__cause__ is not None:
                    message = f"{message}: {failure.__cause__}"
                raise WebSocketHandshakeError(message, status, challenge) from failure
            if events and isinstance(events[0], Response):
                events.pop(0)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
    async with stream, running(stream, protocol, close_timeout, events, limits) as transport:
        yield transport

