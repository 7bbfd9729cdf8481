"""One client's connection to a server: its era, its handshake, and the method table to the handlers.

A :class:`ServerConnection` is the session's dispatcher (see
:class:`~minimcp.core.session.Dispatcher`) and the :class:`~minimcp.server.context.ports.CallHost`
of every call it serves. Its first request decides its era for good: ``initialize``
locks the handshake era (the handlers of :mod:`minimcp.server.handlers`), a request whose
``_meta`` carries a protocol version locks revision 2026-07-28 (:mod:`minimcp.server.mrtr.rounds`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from minimcp.core.config import Limits
from minimcp.core.dispatch import Deferred
from minimcp.core.session import Session
from minimcp.server import handlers
from minimcp.server.handlers import EMPTY
from minimcp.server.metrics import ElicitationMetrics
from minimcp.server.outcome import ready
from minimcp.server.registry import Registry
from minimcp.wire import capabilities, errors, jsonrpc
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import Notification, Request
from minimcp.wire.types import (
    UNSET,
    ClientCapabilities,
    ElicitationCompleteParams,
    Implementation,
    InitializeParams,
    InitializeResult,
    LoggingLevel,
    SetLevelParams,
    UnsetType,
)
from minimcp.wire.versions import LATEST_MODERN, MARKER, Era, Feature, has_envelope, negotiate, supports

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal
    from minimcp.forms.cache import FormCache
    from minimcp.server.context import Context
    from minimcp.server.context.keepalive import Wait, Waits
    from minimcp.server.mrtr.parts import ModernParts
    from minimcp.server.server import Server

__all__ = ["ServerConnection"]

logger = logging.getLogger("minimcp.server")
_marked = MARKER.search


class ServerConnection:
    """Server-side state of one connection: handshake results and dispatch."""

    session: Session
    #: How this connection, once locked to revision 2026-07-28, serves a request
    #: (:func:`minimcp.server.mrtr.rounds.serve`): bound by :meth:`lock_era`, so a handshake-era server never
    #: loads the 2026-07-28 machinery (rounds, the sealed state, parking), and a 2026-07-28 request pays no import.
    _serve_modern: Callable[[ServerConnection, Request], Awaitable[Any]]
    #: The server's 2026-07-28 objects (:meth:`Server.modern_parts`: its sealer, parking, wire, used states and
    #: workers), set by :meth:`lock_era` on a connection locked to 2026-07-28: a round reads them as plain
    #: attributes.
    modern: ModernParts

    def __init__(self, server: Server) -> None:
        self.server = server
        #: What the server offers (the handlers read it).
        self.registry: Registry = server.registry
        #: The server's bounds and metrics, as they were when this connection began (plain
        #: attributes: a context reads them on every question).
        self.limits: Limits = server.limits
        self.metrics: ElicitationMetrics = server.metrics
        self.client_info: Implementation | None = None
        self.client_capabilities = ClientCapabilities()
        #: Form questions to this (handshake-era) client, worked out once by its handshake (plain attributes:
        #: a context reads them on every question): whether they may be asked, the ``mode`` they carry
        #: (``"form"`` from 2025-11-25 on), and whether an author's raw schema goes out as written.
        self.form_allowed = False
        self.form_mode: Literal["form"] | UnsetType = UNSET
        self.raw_forms_as_written = False
        self.protocol_version: str | None = None
        self.initialized = False
        #: URL elicitation ids sent to this connection and not yet completed.
        self.url_elicitations: set[str] = set()
        #: Resource URIs this client subscribed to.
        self.subscriptions: set[str] = set()
        #: The least severe level this client wants log messages for (``logging/setLevel``).
        self.log_level: LoggingLevel = "debug"
        #: ``Era.LEGACY`` (began with initialize), ``Era.MODERN`` (2026-07-28 envelopes), or ``None`` yet.
        self.era: Era | None = None
        #: Questions a person is answering for calls that asked for progress (made on first need).
        self.waits: Waits | None = None
        #: Who this connection's requests come from, when the server checks bearer tokens (set by the
        #: transport from each request's verified token; the connection is bound to that person), else None.
        self.principal: Principal | None = None
        #: Whether the lists leave out what :attr:`principal`'s scopes do not allow (set with it by a transport
        #: whose authorization says ``hide_unpermitted``; without a principal nothing is left out).
        self.hide_unpermitted = False

    # Dispatcher protocol

    def handle_request(self, session: Session, request: Request) -> Awaitable[Any] | Deferred:
        # A plain function returning the handler's coroutine: one frame less per
        # in-flight request (it is alive for as long as a tool waits on a person).
        method = request.method
        era = self.era
        if era is not Era.MODERN:
            # The 2026-07-28 ``_meta`` key: a byte search first (C, no call of ours), a decode only on a hit.
            params = request.params
            if params and _marked(params) is not None and has_envelope(params):
                if era is Era.LEGACY:
                    raise McpError(
                        errors.INVALID_REQUEST,
                        "this connection began with initialize (handshake era); open a new connection for "
                        "requests of protocol 2026-07-28",
                    )
                if method != "initialize":
                    era = self.lock_era(Era.MODERN)
        if era is Era.MODERN:
            return self._serve_modern(self, request)
        if method == "ping":
            return ready(EMPTY)
        if method == "initialize":
            self.lock_era(Era.LEGACY)
            return ready(self._initialize(request))
        if self.protocol_version is None:
            raise McpError(
                errors.INVALID_REQUEST, f"received {method!r} before initialize; send initialize first"
            )
        if method == "tools/call":
            return handlers.call_tool(self, self.registry, request)
        lister = handlers.LISTS.get(method)
        if lister is not None:
            principal = self.principal
            allowed = principal.scopes if principal is not None and self.hide_unpermitted else None
            return lister(self.registry, self.server.limits.page_size, request, allowed)
        handler = _HANDLERS.get(method)
        if handler is None:
            raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler(self, request)

    def handle_notification(self, session: Session, notification: Notification) -> None:
        if notification.method == "notifications/initialized":
            self.initialized = True
        elif notification.method == "notifications/roots/list_changed":
            callback = self.server.on_roots_changed
            if callback is not None:
                callback(self)

    def lock_era(self, era: Era) -> Era:
        """Serve this connection by the rules of ``era`` from now on."""
        self.era = era
        if era is Era.MODERN:
            from minimcp.server.mrtr.rounds import serve
            from minimcp.server.mrtr.takeover import take_call, take_over

            self._serve_modern = serve
            self.modern = self.server.modern_parts()

            # Its tool calls are started (and their retries resumed) by the read loop itself.
            self.session.take_over = functools.partial(take_over, self)
            self.session.take_call = functools.partial(take_call, self)
            self.session.protocol_version = LATEST_MODERN
            self.session.answer_ping = False  # ping does not exist on the modern revision
        return era

    # the handshake, and the handlers that change this connection's state

    def _initialize(self, request: Request) -> InitializeResult:
        if self.protocol_version is not None:
            raise McpError(errors.INVALID_REQUEST, "initialize was already received on this connection")
        params = jsonrpc.decode_params(request.params, InitializeParams)
        version = negotiate(params.protocol_version)
        self.protocol_version = version
        self.session.protocol_version = version
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        self.form_allowed = capabilities.can_elicit_form(version, params.capabilities)
        self.form_mode = "form" if supports(version, Feature.ELICITATION_URL) else UNSET
        self.raw_forms_as_written = supports(version, Feature.ELICITATION_ENUMS)
        server = self.server
        return InitializeResult(
            protocol_version=version,
            capabilities=server.capabilities(),
            server_info=server.info,
            instructions=server.instructions or None,
        )

    async def _set_level(self, request: Request) -> dict[str, Any]:
        self.log_level = jsonrpc.decode_params(request.params, SetLevelParams).level
        return EMPTY

    # CallHost: what a Context uses

    def begin_wait(self, ctx: Context, what: str) -> Wait | None:
        """Keep the call of ``ctx`` alive with progress while a person answers (see
        :mod:`minimcp.server.context.keepalive`)."""
        waits = self.waits
        if waits is None:
            interval = self.server.limits.waiting_progress_interval
            if not interval:
                return None
            from minimcp.server.context.keepalive import (
                Waits,  # once per connection, with its first kept-alive question
            )

            waits = self.waits = Waits(self.session, interval)
        return waits.begin(ctx, what)

    def end_wait(self, wait: Wait) -> None:
        if self.waits is not None:
            self.waits.end(wait)

    @property
    def form_cache(self) -> FormCache:
        """The server's forms, kept compiled (made with its first form question)."""
        return self.server.form_cache

    def can_elicit_form(self) -> bool:
        """Whether this (handshake-era) client declared form elicitation (:attr:`form_allowed`)."""
        return self.form_allowed

    def can_elicit_url(self) -> bool:
        """Whether this (handshake-era) client declared URL-mode elicitation."""
        return capabilities.can_elicit_url(self.protocol_version, self.client_capabilities)

    # URL elicitations: the ids this connection received (their completion notice comes here only)

    def register_url_elicitation(self, elicitation_id: str, person: Principal | None = None) -> None:
        """Bind a URL elicitation id to this connection (completion is sent here only) and to ``person``
        (the call's ``ctx.auth``; a completion by anyone else is refused)."""
        owner = self.server.url_owner(elicitation_id)
        if owner is not None and owner is not self:
            raise ValueError(f"elicitation id {elicitation_id!r} belongs to another session")
        limit = self.server.limits.max_pending_outbound
        if owner is None and len(self.url_elicitations) >= limit:
            raise errors.TooManyPending(limit)
        self.url_elicitations.add(elicitation_id)
        self.server.bind_url(elicitation_id, self, person)

    def forget_url_elicitation(self, elicitation_id: str) -> None:
        """Drop the binding of ``elicitation_id`` (its step was declined, failed or timed out)."""
        self.url_elicitations.discard(elicitation_id)
        self.server.release_url(elicitation_id, self)

    def bind_url_step(self, base: str, person: Principal | None) -> str:
        """``base`` as a URL step id bound to ``person`` (unchanged for ``None``; :mod:`minimcp.server.url_steps`)."""
        if person is None:
            return base
        from minimcp.server.url_steps import bind

        return bind(base, person.key, self.server.url_step_keys[0])

    async def complete_url_elicitation(self, elicitation_id: str, **person: Any) -> bool:
        """Like :meth:`Server.complete_url_elicitation` (``person=`` as there), but only for this
        connection's own ids.

        Raises:
            ValueError: the id belongs to another session.
            WrongPerson: ``person`` is given and is not the one the step was made for.
        """
        owner = self.server.url_owner(elicitation_id)
        if owner is None:
            return False
        if owner is not self:
            raise ValueError(f"elicitation id {elicitation_id!r} belongs to another session")
        return await self.server.complete_url_elicitation(elicitation_id, **person)

    async def send_url_complete(self, elicitation_id: str) -> bool:
        """Send ``notifications/elicitation/complete`` for ``elicitation_id`` (whether it was sent)."""
        self.url_elicitations.discard(elicitation_id)
        if self.session.closed:
            return False
        try:
            await self.session.notify(
                "notifications/elicitation/complete", ElicitationCompleteParams(elicitation_id=elicitation_id)
            )
        except errors.ConnectionClosed:
            return False
        return True


#: The handshake-era methods beyond ``tools/call`` and the lists, with what each handler is given.
_HANDLERS: dict[str, Callable[[ServerConnection, Request], Awaitable[Any]]] = {
    "resources/read": lambda conn, request: handlers.read_resource(conn, conn.registry, request),
    "resources/subscribe": lambda conn, request: handlers.subscribe(
        conn.subscriptions, conn.limits.max_subscriptions, request
    ),
    "resources/unsubscribe": lambda conn, request: handlers.unsubscribe(conn.subscriptions, request),
    "prompts/get": lambda conn, request: handlers.get_prompt(conn, conn.registry, request),
    "completion/complete": lambda conn, request: handlers.complete(conn, conn.registry, request),
    "logging/setLevel": ServerConnection._set_level,
}
