"""What a tool's :class:`~minimcp.server.context.Context` needs from the connection serving its call.

The context is the tool's side; the connection
(:class:`~minimcp.server.connection.ServerConnection`) and, on revision 2026-07-28, the
run the call executes in (:class:`~minimcp.server.mrtr.run.Run`) are the server's side.
These two protocols are the whole of what the first uses of the second: a way to
ask the client (the connection's session, or the run), the bounds and counters, what
the client declared (with what its handshake allows, worked out once), keep-alive
waits, and the registry of URL elicitations. Neither side imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from minimcp.core.config import Limits
from minimcp.server.metrics import ElicitationMetrics
from minimcp.wire.types import ClientCapabilities, Implementation, LoggingLevel, UnsetType

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal
    from minimcp.core.session import Session
    from minimcp.forms.cache import FormCache
    from minimcp.server.context import Context
    from minimcp.server.context.keepalive import Wait
    from minimcp.wire.input_required import Question

__all__ = ["CallHost", "RunHandle"]


class CallHost(Protocol):
    """What a :class:`Context` needs from the connection serving its call (a
    :class:`~minimcp.server.connection.ServerConnection` is one): its session (to notify and ask the client),
    the bounds and counters, what the client declared, and the registry of URL elicitations."""

    @property
    def session(self) -> Session:
        """The session to the client: its clock, notifications, and on the handshake era the questions
        (requests nested in the call, :meth:`Session.start_request <minimcp.core.session.Session.start_request>`)."""
        ...

    @property
    def limits(self) -> Limits: ...

    @property
    def metrics(self) -> ElicitationMetrics: ...

    # what the client declared in its handshake (a 2026-07-28 call has its own, in its envelope)

    @property
    def client_info(self) -> Implementation | None: ...

    @property
    def client_capabilities(self) -> ClientCapabilities: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def log_level(self) -> LoggingLevel: ...

    @property
    def principal(self) -> Principal | None:
        """Who the connection's requests come from (a verified bearer token's), or None without authorization."""
        ...

    @property
    def form_allowed(self) -> bool:
        """Whether form questions may be asked of this client (worked out by its handshake)."""
        ...

    @property
    def form_mode(self) -> Literal["form"] | UnsetType:
        """The ``mode`` a form question to this client carries."""
        ...

    @property
    def raw_forms_as_written(self) -> bool:
        """Whether an author's raw form schema goes out to this client as written."""
        ...

    @property
    def form_cache(self) -> FormCache:
        """The server's forms, kept compiled (:class:`minimcp.forms.cache.FormCache`: made with the first form
        question, which loads the forms machinery)."""
        ...

    def can_elicit_url(self) -> bool: ...

    def begin_wait(self, ctx: Context, what: str) -> Wait | None:
        """Keep the call of ``ctx`` alive with progress while a person answers (``None``: not kept)."""
        ...

    def end_wait(self, wait: Wait) -> None: ...

    # the URL elicitations sent on this connection (their completion notice goes here only)

    def register_url_elicitation(self, elicitation_id: str, person: Principal | None = None) -> None: ...

    def bind_url_step(self, base: str, person: Principal | None) -> str:
        """``base`` bound to ``person`` (see :mod:`minimcp.server.url_steps`)."""
        ...

    def forget_url_elicitation(self, elicitation_id: str) -> None: ...


class RunHandle(Protocol):
    """What a :class:`Context` needs of the 2026-07-28 run its call executes in (a
    :class:`~minimcp.server.mrtr.run.Run`)."""

    @property
    def call_id(self) -> str: ...

    @property
    def continued_elsewhere(self) -> bool: ...

    def replays(self, question_digest: str | None = None) -> bool: ...

    def question(self, method: str, params: Any, key: str | None = None) -> Question:
        """``method`` with ``params`` as a question of this run (its wire form and digest)."""
        ...

    async def ask(self, question: Question, ttl: float | None) -> dict[str, Any]: ...

    async def ask_many(self, questions: list[Question], ttl: float | None) -> list[dict[str, Any] | None]: ...
