"""One tool call as its tool sees it: who is calling, under which rules, and what it tells the client unasked.

:class:`Call` is the lower half of :class:`~minimcp.server.context.Context`: the call's
identity (request id, ``_meta``, the 2026-07-28 envelope and run), what the client
declared, and the notifications a call sends without waiting for an answer --
progress, log messages, and the keep-alive progress the connection's timer sends
while a person answers (:meth:`Call.keep_alive`, see :mod:`minimcp.server.context.keepalive`).
Asking the client things is the upper half (:mod:`minimcp.server.context.asking`), built on the
public members here only.
"""

from __future__ import annotations

import typing
from typing import Any

from minimcp.core.session import Session
from minimcp.wire.jsonrpc import CALL_ID_BYTES, RequestId
from minimcp.wire.types import (
    LOG_LEVELS,
    UNSET,
    ClientCapabilities,
    Implementation,
    LoggingLevel,
    LoggingMessageParams,
    ProgressParams,
    UnsetType,
)

if typing.TYPE_CHECKING:  # interfaces for the type checker only: nothing of them runs
    from minimcp.server.context.ports import CallHost, RunHandle
    from minimcp.wire.envelope import Envelope

__all__ = ["Call"]

#: How much a keep-alive progress notification raises the call's progress value (relative, at least this).
_NUDGE = 2.0**-20
#: "Long ago" on the session clock: the first progress notification is never held back.
_NEVER = -1e9
#: No progress sent yet (and never held back): a call's progress record until its first report.
_NO_PROGRESS: tuple[float | None, float] = (None, _NEVER)

_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


class Call:
    """A tool call: who is calling, under which rules, and its progress and log notifications.

    Tools get it as (part of) their :class:`~minimcp.server.context.Context`; one exists per call.
    """

    __slots__ = (
        "_call_id",
        "_progress",
        "client_info",
        "connection",
        "envelope",
        "finished",
        "meta",
        "protocol_version",
        "request_id",
        "run",
        "tool",
    )

    # What the caller declared, read once in __init__ (plain attributes: asked for on every question):
    # the request's own envelope on the modern revision, the handshake's otherwise.
    protocol_version: str
    client_info: Implementation | None

    def __init__(
        self,
        connection: CallHost,
        request_id: RequestId,
        meta: dict[str, Any] | UnsetType,
        envelope: Envelope | None = None,
        run: RunHandle | None = None,
        *,
        tool: str = "",
    ) -> None:
        #: The connection serving this call (through the narrow :class:`~minimcp.server.context.ports.CallHost`
        #: interface).
        self.connection = connection
        #: The name of the tool being called.
        self.tool = tool
        self.request_id = request_id
        self.meta = meta
        #: The request's own envelope on the modern revision (``None`` on the handshake era).
        self.envelope = envelope
        #: The multi round-trip run this call executes in (modern revision only).
        self.run = run
        if envelope is not None:
            self.protocol_version = envelope.version
            self.client_info = envelope.client_info
        else:
            version = connection.protocol_version
            assert version is not None, "a handshake-era call comes after initialize"
            self.protocol_version = version
            self.client_info = connection.client_info
        self.finished = False
        self._call_id: str | None = None
        # The last progress value sent (None: none yet) and when, on the session clock: one shared
        # tuple until the first report (one slot and one store per call, not two).
        self._progress: tuple[float | None, float] = _NO_PROGRESS

    @property
    def session(self) -> Session:
        return self.connection.session

    @property
    def modern(self) -> bool:
        """Whether this call is served by the modern (2026-07-28) rules."""
        return self.envelope is not None

    @property
    def call_id(self) -> str:
        """An unguessable id of this tool call, the same in every round and replay of it.

        Derive ids of things the call creates from it (a payment page, say), so
        that a replayed call finds them again instead of making new ones.
        """
        if self.run is not None:
            return self.run.call_id
        if self._call_id is None:
            import secrets  # only for a call that asks for its id (a stdio server need not load it)

            self._call_id = secrets.token_urlsafe(CALL_ID_BYTES)
        return self._call_id

    @property
    def continued_elsewhere(self) -> bool:
        """True once this copy of a 2026-07-28 call was dropped because its retry continued it on another
        worker (``Server(bus=...)``): the copy is cancelled as an abandoned one would be, but the call goes
        on there, so clean-up must not undo what it made. False on the handshake era."""
        return self.run is not None and self.run.continued_elsewhere

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """The capabilities that apply to this call (this request's, on the modern revision)."""
        if self.envelope is not None:
            return self.envelope.capabilities
        return self.connection.client_capabilities

    @property
    def progress_token(self) -> int | str | None:
        if isinstance(self.meta, dict):
            token = self.meta.get("progressToken")
            if type(token) in (int, str):
                return typing.cast("int | str", token)
        return None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send ``notifications/progress`` if the caller asked for it; returns whether it was sent.

        Dropped (not an error): when the caller sent no progress token, when
        ``progress`` does not increase (the spec wants strictly increasing
        values), after the call finished, and when it comes sooner than
        ``limits.progress_interval`` after the previous one -- unless it is the
        final one (``progress == total``).
        """
        token = self.progress_token
        if token is None or self.finished:
            return False
        last, last_at = self._progress
        if last is not None and progress <= last:
            return False
        now = self.session.now()
        final = total is not None and progress >= total
        if not final and now - last_at < self.connection.limits.progress_interval:
            return False
        self._progress = (progress, now)
        await self.session.notify(
            "notifications/progress",
            ProgressParams(
                progress_token=token,
                progress=progress,
                total=total if total is not None else UNSET,
                message=message if message is not None else UNSET,
            ),
            related=self.request_id,
        )
        return True

    async def log(self, level: LoggingLevel, data: Any, *, logger: str | None = None) -> bool:
        """Send ``notifications/message`` to the client if ``level`` passes its ``logging/setLevel``.

        Returns whether it was sent.
        """
        wanted = self.envelope.log_level if self.envelope is not None else self.connection.log_level
        if wanted is None or _LEVEL_RANK[level] < _LEVEL_RANK[wanted]:
            return False  # on the modern revision, no log level in the request means no logs
        await self.session.notify(
            "notifications/message",
            LoggingMessageParams(level=level, data=data, logger=logger if logger is not None else UNSET),
            related=self.request_id,
        )
        return True

    async def keep_alive(self, what: str, interval: float) -> None:
        """One keep-alive progress notification, unless one went out lately: the connection's timer
        (:mod:`minimcp.server.context.keepalive`) calls it every ``interval`` seconds while a person answers.

        Its ``progress`` is the call's last value nudged up by a hair (the spec wants each value
        higher than the last; nothing advances while the person thinks), so the tool's own later
        reports still count; its ``message`` says what the call waits for.
        """
        token = self.progress_token
        if token is None or self.finished:
            return
        now = self.session.now()
        last, last_at = self._progress
        if now - last_at < interval / 2:
            return  # another question of this call (ctx.gather) just sent one
        if last is None:
            last = 0.0
        progress = last + max(abs(last), 1.0) * _NUDGE
        self._progress = (progress, now)
        await self.session.notify(
            "notifications/progress",
            ProgressParams(progress_token=token, progress=progress, message=f"waiting for {what}"),
            related=self.request_id,
        )
