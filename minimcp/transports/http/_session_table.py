"""The HTTP app's sessions: each one (:class:`HTTPSession`, kept in a shared :class:`SessionTable`) and their tasks."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from minimcp.core._backend import BareTaskCancelled, Cell, Handlers, cell_here
from minimcp.transports.http._asgi import ASSUMED_VERSION
from minimcp.wire.jsonrpc import RequestId

if TYPE_CHECKING:
    from minimcp.transports._client_bounds import SessionTable
    from minimcp.transports._ports import Connection
    from minimcp.transports.http._streams import SessionTransport

__all__ = ["HTTPSession", "SessionTasks"]

logger = logging.getLogger("minimcp.http")


class HTTPSession:
    """One Streamable HTTP session: its transport, its server connection, and what the table needs."""

    __slots__ = (
        "_finished",
        "_version",
        "client",
        "connection",
        "ended",
        "id",
        "initialized",
        "last_active",
        "live",
        "owner",
        "transport",
    )

    def __init__(self, session_id: str, transport: SessionTransport, client: str) -> None:
        self.id = session_id
        self.transport = transport
        self.client = client  # whom it counts against (client_key)
        self.connection: Connection | None = None
        self.last_active = anyio.current_time()
        self.live = 0  # open SSE connections
        self.initialized = False  # a request after initialize came (else it expires after initialize_timeout)
        self.ended = False  # its server connection has finished
        self._finished: anyio.Event | None = None  # made only when someone waits for the end (DELETE)
        self._version: str | None = None  # once negotiated, it stays
        #: The key (``Principal.key``) of the person who opened it, with authorization on: only they may use it.
        self.owner: tuple[str, str] | None = None

    def busy(self) -> bool:
        """Whether it has work pending: a request being answered, a question asked, or an open stream."""
        conn = self.connection
        return bool(self.live or self.transport.by_request or (conn is not None and conn.session.pending_count))

    def finish(self) -> None:
        """Its server connection has finished."""
        self.ended = True
        if self._finished is not None:
            self._finished.set()

    async def wait_finished(self) -> None:
        if not self.ended:
            if self._finished is None:
                self._finished = anyio.Event()
            await self._finished.wait()

    def touch(self, table: SessionTable[HTTPSession]) -> None:
        self.last_active = self.transport.clock()  # anyio.current_time's clock, without its lookup (3 per call)
        table.touch(self)

    @property
    def version(self) -> str:
        version = self._version
        if version is None:
            conn = self.connection
            version = conn.protocol_version if conn is not None else None
            if not version:
                return ASSUMED_VERSION
            self._version = version
        return version


class SessionTasks:
    """The task of each session (its server connection's), owned by whoever enters this (the app's ``run``).

    One bare task per session (:class:`minimcp.core._backend.Handlers`): an idle session keeps its
    task for as long as it lives, and an anyio task costs about 4.5 KB (its ``TaskHandle``,
    cancel scope and event; tracemalloc, anyio 4.16) against 1 KB for a bare one. On exit
    every session task still running is cancelled and awaited.
    """

    __slots__ = ("_handlers", "_keys", "_live")

    def __init__(self) -> None:
        self._live: dict[RequestId, Any] = {}  # (keys: a count)
        self._handlers = Handlers(self._live, self._cancel_all)
        self._keys = itertools.count()

    async def __aenter__(self) -> SessionTasks:
        await self._handlers.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._handlers.__aexit__(exc_type, exc, tb)

    def __len__(self) -> int:
        return len(self._live)

    def _cancel_all(self) -> None:
        for handle in list(self._live.values()):
            handle.cancel()

    async def start(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> Any:
        """Run ``fn(*args, task_status=...)`` in a task of its own; return what it reports started.

        As ``TaskGroup.start``: what ``fn`` raises before it reports is raised here, and the
        task is cancelled if the caller is cancelled first.
        """
        key = next(self._keys)
        status = _Status()
        self._live[key] = self._handlers.start(self._run(key, status, fn, args))
        try:
            await status.cell.wait()
        except BaseException:
            handle = self._live.get(key)
            if handle is not None and not status.reported:
                handle.cancel()
            raise
        if status.error is not None:
            raise status.error
        return status.value

    async def _run(
        self, key: int, status: _Status, fn: Callable[..., Coroutine[Any, Any, None]], args: tuple[Any, ...]
    ) -> None:
        try:
            await fn(*args, task_status=status)
        except BareTaskCancelled:
            pass  # cancelled (asyncio; on trio the task's own scope catches it)
        except Exception as exc:
            if status.reported:
                logger.exception("an MCP session's task failed")
            status.fail(exc)
        finally:
            self._live.pop(key, None)
            status.fail(RuntimeError("the session ended before it started"))


_STARTED = msgspec.Raw(b"1")


class _Status:
    """What :meth:`SessionTasks.start` waits for: the value its task reports started, or the error it ended with."""

    __slots__ = ("cell", "error", "reported", "value")

    def __init__(self) -> None:
        self.cell: Cell = cell_here()
        self.value: Any = None
        self.error: BaseException | None = None
        self.reported = False

    def started(self, value: Any = None) -> None:
        if self.reported:
            raise RuntimeError("called started() twice")
        self.reported = True
        self.value = value
        self.cell.settle(_STARTED, None)

    def fail(self, error: BaseException) -> None:
        """The task ended before it reported (nothing happens after it did)."""
        if not self.reported:
            self.reported = True
            self.error = error
            self.cell.settle(_STARTED, None)
