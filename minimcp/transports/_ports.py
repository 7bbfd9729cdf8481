"""What the network transports need of the server they serve: small protocols, so that they import no role.

:class:`minimcp.Server` satisfies :class:`Servable` and its
:class:`~minimcp.server.server.ServerConnection` satisfies :class:`Connection`;
the transports name only these, and ``tests/docs/test_layers.py`` checks that no
transport module imports ``minimcp.server.server``, ``minimcp.server.context`` or
``minimcp.client.client``. What needs the roles themselves (building a
``ServerConnection``, a ``Client``) lives in the role-level serve modules
(:mod:`minimcp.hosting.http`, :mod:`minimcp.hosting.websocket`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import anyio.abc

    from minimcp.core.config import Limits
    from minimcp.core.session import Session
    from minimcp.core.trace import WireTrace
    from minimcp.core.transport import Transport
    from minimcp.wire.types import Tool

__all__ = ["Connection", "Servable"]


class Connection(Protocol):
    """One served connection, as a transport's bookkeeping reads it."""

    @property
    def session(self) -> Session: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def url_elicitations(self) -> Collection[str]: ...

    @property
    def subscriptions(self) -> Collection[str]: ...


class _Workers(Protocol):
    def adopt_id(self, worker_id: str) -> None: ...


class Servable(Protocol):
    """A server a network transport can serve: it serves one connection per call of :meth:`serve`."""

    @property
    def name(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def trace(self) -> WireTrace | None: ...

    @property
    def workers(self) -> _Workers: ...

    def warn_if_state_key_random(self) -> None: ...

    def tool_definition(self, name: str) -> Tool | None: ...

    async def run_background(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...

    async def serve(self, transport: Transport, *, task_status: anyio.abc.TaskStatus[Connection] = ...) -> None: ...
