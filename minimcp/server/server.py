"""The server facade: register tools, resources and prompts, notify clients, and serve connections.

A :class:`Server` holds no per-connection state. Its decorators fill a
:class:`~minimcp.server.registry.Registry` (what it offers); each connection
(:meth:`Server.serve`) gets a :class:`~minimcp.server.connection.ServerConnection`, which
answers the handshake and dispatches to the handlers (:mod:`minimcp.server.handlers`,
:mod:`minimcp.server.mrtr.rounds` for revision 2026-07-28), and runs each tool with an
explicit :class:`~minimcp.server.context.Context` -- the handle through which a tool
asks the person a question mid-call.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import anyio

from minimcp.core.config import Limits
from minimcp.core.pending import PendingBudget
from minimcp.core.session import Session
from minimcp.core.trace import WireTrace
from minimcp.core.transport import Transport
from minimcp.server.connection import ServerConnection
from minimcp.server.context import Context
from minimcp.server.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from minimcp.server.metrics import ElicitationMetrics, server_metrics_text
from minimcp.server.registry import Registry, described
from minimcp.server.tools import build_tool, context_parameter
from minimcp.wire import errors
from minimcp.wire.types import Implementation, ResourceUpdatedParams, ServerCapabilities, Tool, ToolAnnotations
from minimcp.wire.versions import Era

if TYPE_CHECKING:
    # What revision 2026-07-28, shared states and the bus need loads on first use (see Server.__init__).
    from minimcp.auth.principal import Principal
    from minimcp.forms.cache import FormCache
    from minimcp.server.bus import Bus, WorkerSide
    from minimcp.server.mrtr.parking import Parking
    from minimcp.server.mrtr.parts import ModernParts
    from minimcp.server.mrtr.state import StateKey, StateSealer
    from minimcp.server.mrtr.used_states import UsedStates
    from minimcp.server.url_steps import PersonKey
    from minimcp.wire.envelope import ServerWire

__all__ = ["Server"]

logger = logging.getLogger("minimcp.server")


class _Unchecked:
    """``complete_url_elicitation(id)`` without ``person=``: the application completes the step itself."""


UNCHECKED = _Unchecked()

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
#: A completion handler: :data:`~minimcp.server.registry.CompletionHandler`, with a Context parameter or not.
C = TypeVar("C", bound=Callable[..., Awaitable[list[str]]])
#: The environment variable of the sealing keys (``minimcp.server.mrtr.state.ENV_STATE_KEYS``: checked here without
#: loading it).
_ENV_STATE_KEYS = "MINIMCP_STATE_KEYS"
#: Logged once by a host that may be one of several workers (:meth:`Server.warn_if_state_key_random`).
RANDOM_KEY_WARNING = (
    "server %s seals 2026-07-28 requestState with a key random to this process: with several workers, a retry "
    "that reaches another worker is refused (-32602 Invalid or expired requestState) and the call has to start "
    f"over. Give every worker the same keys: set {_ENV_STATE_KEYS} (comma-separated hex, 32+ bytes each, e.g. from: "
    "python -c \"import secrets; print(secrets.token_hex(32))\") or pass Server(state_key=...). "
    "One worker only: nothing to do."
)
_ENV_STATE_FORMAT = "MINIMCP_STATE_FORMAT"


# --- the server ------------------------------------------------------------------------------


class _MadeOnce:
    """A server's attribute made on its first read, then kept as an ordinary attribute of the server
    (:data:`_made_once`).

    As ``functools.cached_property`` (without its lock, as on Python 3.12), but kept with ``setattr``, not in
    the instance's ``__dict__``: on Python 3.11 reading ``__dict__`` turns the server's attributes into a
    dict that the interpreter's attribute caches do not serve, and every read of any attribute of the
    server then costs about 300 machine instructions instead of about 50 (measured: about 2k instructions of
    a 2026-07-28 in-memory round trip). Not generic (``typing.Generic``): that cost as much again, measured.
    """

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self.make = make
        self.name = make.__name__
        self.__doc__ = make.__doc__

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.make(instance)
        setattr(instance, self.name, value)  # (an attribute of the instance now: read before this descriptor)
        return value


# (typed as what it behaves like: the type checker sees each attribute's type)
_made_once = functools.cached_property if TYPE_CHECKING else _MadeOnce


class Server:
    """An MCP server: register tools, then serve connections.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional display name.
        instructions: Hint text for the client's model.
        limits: Bounds and timeouts for every connection.
        state_key: Key sealing ``requestState`` on the modern revision: bytes (32 or
            more) or hex text, or a sequence of them (the first seals, all open: put a new
            key first to rotate). When omitted: the keys in ``MINIMCP_STATE_KEYS`` (comma-
            separated hex) if that is set, else a key random to this process (then a retry
            that reaches another worker is refused; the HTTP app warns at start).
        state_ttl: Seconds a ``requestState`` stays valid.
        state_format: The ``requestState`` format sealed: ``"v2"`` (the default) or ``"v1"``, which
            workers of releases before v2 open too (for a rolling upgrade; every format always
            opens). When omitted: ``MINIMCP_STATE_FORMAT`` if set, else ``"v2"``.
        used_states: Where used ``requestState`` tokens are recorded (each is good for
            one retry); in memory by default (``limits.max_used_states``). Workers that
            share a ``state_key`` share this store too:
            :class:`~minimcp.scaleout.redis_used_states.RedisUsedStates` (started by
            :meth:`run_background`).
        trace: Record every message of every connection (see :mod:`minimcp.core.trace`).
        replay_every_retry: A test mode for the modern revision: never park a call. When a
            tool asks, the ``input_required`` answer goes out and the call is dropped at
            once (as when the park table is full), so every retry replays it from the
            sealed state, in this one process -- as if it had reached another worker.
            Tools that are not safe to replay (work before a question done twice, clean-up
            on cancellation that undoes what the retry needs) fail in ordinary tests;
            ``replayable=False`` tools are refused on every retry.
        bus: The bus between the workers of one service (:mod:`minimcp.scaleout.bus`:
            :class:`~minimcp.scaleout.bus.InMemoryBus`, :class:`~minimcp.scaleout.bus.RedisBus`), listened to
            by :meth:`run_background`. URL completions reach the worker holding the
            client's session, list and resource notices reach every worker's sessions, and
            a parked 2026-07-28 call whose retry replays on another worker is dropped here
            at once (see :mod:`minimcp.scaleout.workers`). ``None``: this process alone.
        worker_id: Names this worker on the bus and in the states it seals (1 to 32 ASCII
            letters, digits, ``_`` or ``-``). Default: the HTTP app's ``session_id_prefix``
            when one is given, else random.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        limits: Limits | None = None,
        state_key: StateKey | Sequence[StateKey] | None = None,
        state_ttl: float = 600.0,
        state_format: str | None = None,
        used_states: UsedStates | None = None,
        trace: WireTrace | None = None,
        replay_every_retry: bool = False,
        bus: Bus | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.info = Implementation(name=name, version=version, title=title or None)
        self.instructions = instructions
        self.limits = limits or Limits()
        self.trace = trace
        #: Pending requests to clients, across all connections (``limits.max_pending_total``).
        self.budget = PendingBudget(self.limits.max_pending_total)
        # What only revision 2026-07-28, shared states or the bus use is made here when configured
        # (a key, a store, a bus, a worker id), else on first use (sealer, parking and the wire with the first
        # 2026-07-28 request, modern_parts; workers by _made_once; used_states by its property): a
        # handshake-era server never loads their modules.
        keys: tuple[bytes, ...] | None = None
        given_sealer: StateSealer | None = None
        self._state_format = "v2"
        if state_key is not None or state_format is not None or _ENV_STATE_KEYS in os.environ or (
            _ENV_STATE_FORMAT in os.environ
        ):
            from minimcp.server.mrtr.state import StateSealer, parse_state_keys, state_keys_from_env
            from minimcp.server.mrtr.state import state_format as format_of

            keys = parse_state_keys(state_key) if state_key is not None else state_keys_from_env()
            self._state_format = format_of(state_format)
            if keys:
                given_sealer = StateSealer(keys[0], old_keys=keys[1:], version=self._state_format)
        #: Where the sealing keys came from: ``"argument"``, ``"environment"``, or ``"random"``
        #: (to this process: other workers cannot open its states).
        self.state_key_source = "argument" if state_key is not None else "environment" if keys else "random"
        self._state_keys = keys
        self._warned_random_key = False
        self.state_ttl = state_ttl
        # (given, set, or made on first use: read by run_background without making the default one)
        self._used_states = used_states
        # The sealer made from the given keys, until the 2026-07-28 objects are made (modern_parts).
        self._given_sealer = given_sealer
        self._modern_parts: ModernParts | None = None
        #: Never park: every modern retry replays (a test mode, see the class docs).
        self.replay_every_retry = replay_every_retry
        #: Elicitation counters per tool (see :mod:`minimcp.server.metrics`).
        self.metrics = ElicitationMetrics()
        #: What this server offers: tools, resources, templates, prompts, completion.
        self.registry = Registry()
        #: Called with the connection whenever a client reports its roots changed.
        self.on_roots_changed: Callable[[ServerConnection], None] | None = None
        #: Called with the connection when it has ended (drop what the application keeps for it).
        self.on_connection_closed: Callable[[ServerConnection], None] | None = None
        #: Live connections (added at connect, removed when they end).
        self.connections: set[ServerConnection] = set()
        # URL elicitation id -> the connection that received it (completion goes there only;
        # see url_owner, bind_url, release_url).
        self._url_owners: dict[str, ServerConnection] = {}
        # URL elicitation id -> the person it was made for, for ids held here made with authorization on.
        self._url_people: dict[str, PersonKey] = {}
        self._bus = bus
        if bus is not None or worker_id is not None:
            from minimcp.scaleout.workers import Workers

            self.workers = Workers(self, bus, worker_id)

    def modern_parts(self) -> ModernParts:
        """This server's 2026-07-28 objects (sealer, parking, wire, used states, workers), made with its first
        2026-07-28 request (a handshake-era server never loads their modules); every connection locked to
        2026-07-28 holds them (``ServerConnection.modern``) and reads them as plain attributes."""
        parts = self._modern_parts
        if parts is None:
            from minimcp.server.mrtr.parking import Parking
            from minimcp.server.mrtr.parts import ModernParts
            from minimcp.server.mrtr.state import StateSealer
            from minimcp.wire.envelope import ServerWire

            sealer = self._given_sealer or StateSealer(version=self._state_format)
            parts = self._modern_parts = ModernParts(
                sealer, Parking(self.limits.max_pending_outbound), ServerWire(self), self.used_states, self.workers
            )
            self._given_sealer = None
        return parts

    @property
    def sealer(self) -> StateSealer:
        """Seals ``requestState`` on the modern revision (a key random to this process unless given:
        give every worker behind a load balancer the same ``state_key`` so a retry can replay anywhere)."""
        return self.modern_parts().sealer

    @sealer.setter
    def sealer(self, sealer: StateSealer) -> None:
        self.modern_parts().sealer = sealer

    @_made_once
    def url_step_keys(self) -> tuple[bytes, ...]:
        """The keys binding URL steps to their person (:mod:`minimcp.server.url_steps`): the state keys, else random."""
        return self._state_keys or (os.urandom(32),)

    @property
    def used_states(self) -> UsedStates:
        """Where used ``requestState`` tokens are recorded (in memory unless ``used_states`` was given or set)."""
        store = self._used_states
        if store is None:
            from minimcp.server.mrtr.used_states import MemoryUsedStates

            store = self._used_states = MemoryUsedStates(self.limits.max_used_states)
        return store

    @used_states.setter
    def used_states(self, store: UsedStates) -> None:
        self._used_states = store
        if self._modern_parts is not None:  # (the connections read it there)
            self._modern_parts.used_states = store

    @_made_once
    def form_cache(self) -> FormCache:
        """The forms this server's tools ask, kept compiled (made with the first form question: the forms
        machinery, about 5 ms of import, loads only for a server whose tools ask one)."""
        from minimcp.forms.cache import FormCache

        return FormCache()

    @property
    def modern_wire(self) -> ServerWire:
        """What this server prepares of the modern revision's wire once: its info as results carry it, and the
        envelope its clients send."""
        return self.modern_parts().wire

    @property
    def parking(self) -> Parking:
        """Tool calls suspended between rounds of the modern revision."""
        return self.modern_parts().parking

    @_made_once
    def workers(self) -> WorkerSide:
        """This worker on the bus between workers (``workers.worker_id`` names it)."""
        from minimcp.scaleout.workers import Workers

        return Workers(self, self._bus, None)

    @property
    def name(self) -> str:
        return self.info.name

    # registration

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured: bool | None = None,
        replayable: bool = True,
        forms: Iterable[Any] = (),
        scopes: Collection[str] = (),
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Awaitable[Any]] | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured: bool | None = None,
        replayable: bool = True,
        forms: Iterable[Any] = (),
        scopes: Collection[str] = (),
    ) -> Any:
        """Register an async function as a tool.

        The input schema comes from the parameters' type hints (``Annotated``
        constraints and defaults included) unless ``input_schema`` is given. A
        parameter annotated :class:`Context` receives the call's context.
        A return annotation that is a Struct, dataclass or TypedDict makes the
        tool structured: ``outputSchema`` is declared and results carry
        ``structuredContent`` plus a JSON text copy.

        ``replayable=False``: on the modern revision, never run this tool again
        from the top to rebuild a call whose suspended state is gone (a
        restart, another worker); such a retry fails cleanly instead.

        ``forms``: the forms the tool asks with ``ctx.elicit`` (Struct, dataclass or
        TypedDict types, raw schema dicts, or :class:`~minimcp.server.context.Elicit` items
        when ``allow_sensitive`` applies), checked here: one that cannot be sent raises
        :class:`~minimcp.forms.FormDefinitionError` naming the tool and the field. A form
        not named here is compiled when the tool asks; if it cannot be sent, the call
        ends with a tool error and the server logs the reason. Parameters without a type
        annotation accept any JSON value and draw a warning here.

        ``scopes``: with authorization on (``auth=`` of the HTTP app), the scopes a bearer token
        must grant to call this tool; a call without them is refused (``403 insufficient_scope``)
        before it runs, and ``tools/list`` leaves the tool out for such a caller when the
        authorization's ``hide_unpermitted`` says so. Without authorization it is not checked.
        """

        def register(f: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            t = build_tool(
                f,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                input_schema=input_schema,
                output_schema=output_schema,
                structured=structured,
                context_type=Context,
            )
            self.registry.add_tool(t, replayable=replayable, forms=forms, scopes=scopes)
            return f

        return register(fn) if fn is not None else register

    @property
    def tools(self) -> list[Tool]:
        """The registered tool definitions, in registration order."""
        return list(self.registry.tool_list)

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        """The scopes a request needs (the tool's, prompt's or resource's ``scopes=``); empty: none beyond the
        server's ``required_scopes``. ``params``: the request's params as :class:`~minimcp.wire.jsonrpc.Request`
        holds them (raw JSON; only the name or URI is decoded, and only when something has scopes)."""
        return self.registry.scopes_needed(method, params)

    def tool_definition(self, name: str) -> Tool | None:
        """The definition of tool ``name``, or ``None``."""
        registered = self.registry.tools.get(name)
        return registered.definition if registered is not None else None

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (then call :meth:`notify_list_changed` with ``"tools"``)."""
        self.registry.remove_tool(name)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        scopes: Collection[str] = (),
    ) -> Callable[[F], F]:
        """Register an async reader for a fixed resource URI (returns str, bytes or contents); ``scopes``: what
        a bearer token must grant to read it (as :meth:`tool`'s). A parameter annotated :class:`Context` receives
        the read's context: :attr:`Context.auth` says who reads, and it may report progress and log, but it
        cannot ask anything (``ctx.elicit``, ``ctx.sample``, ... raise ``RuntimeError``: ask from a tool)."""
        return self._reader(uri, False, name, title, description, mime_type, scopes)

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        scopes: Collection[str] = (),
    ) -> Callable[[F], F]:
        """Register a reader for a URI template; its variables are passed as keyword arguments. ``scopes``: what
        a bearer token must grant to read a URI it matches (as :meth:`tool`'s). A :class:`Context` parameter: as
        :meth:`resource`'s."""
        return self._reader(uri_template, True, name, title, description, mime_type, scopes)

    def _reader(
        self,
        uri: str,
        template: bool,
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        scopes: Collection[str],
    ) -> Callable[[F], F]:
        def register(fn: F) -> F:
            fields = described(fn, name, title, description, mime_type)
            context_param = context_parameter(fn, Context)
            self.registry.add_reader(uri, fn, fields, template=template, scopes=scopes, context_param=context_param)
            return fn

        return register

    def prompt(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        scopes: Collection[str] = (),
    ) -> Callable[[F], F]:
        """Register an async prompt; its ``str`` parameters are the prompt's arguments. ``scopes``: what a bearer
        token must grant to get it (as :meth:`tool`'s)."""

        from minimcp.server.prompts import build_prompt  # a server without prompts never loads them

        def register(fn: F) -> F:
            p = build_prompt(fn, name=name, title=title, description=description, context_type=Context)
            self.registry.add_prompt(p, scopes=scopes)
            return fn

        return register

    def completion(self, fn: C) -> C:
        """Register the ``completion/complete`` handler (prompt arguments and template variables), called as
        :data:`~minimcp.server.registry.CompletionHandler` says. A parameter annotated :class:`Context` besides
        receives the request's context, by keyword (as a resource reader's: it says who asks, and asks nothing)."""
        self.registry.completion = fn
        self.registry.completion_context = context_parameter(fn, Context)
        return fn

    def capabilities(self) -> ServerCapabilities:
        """What this server declares, from what is registered."""
        return self.registry.capabilities()

    # notifications to every client

    async def notify_list_changed(self, kind: str) -> None:
        """Tell every initialized client that the ``kind`` list changed (tools, resources, prompts)."""
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"unknown list kind {kind!r}")
        if self._bus is not None:
            self.workers.publish("list_changed", kind)  # every other worker's clients too
        await self.list_changed_here(kind)

    async def list_changed_here(self, kind: str) -> None:
        """Tell this worker's initialized clients only (the bus calls it for another worker's notice)."""
        for conn in list(self.connections):
            if conn.initialized and not conn.session.closed:
                with contextlib.suppress(errors.ConnectionClosed):
                    await conn.session.notify(f"notifications/{kind}/list_changed")

    async def notify_resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to the clients subscribed to ``uri``; returns how many.

        With a bus, the other workers send it to their subscribed clients too (not counted here).
        """
        if self._bus is not None:
            self.workers.publish("resource_updated", uri)
        return await self.resource_updated_here(uri)

    async def resource_updated_here(self, uri: str) -> int:
        """Tell this worker's subscribed clients only (the bus calls it for another worker's notice)."""
        sent = 0
        for conn in list(self.connections):
            if uri in conn.subscriptions and not conn.session.closed:
                with contextlib.suppress(errors.ConnectionClosed):
                    await conn.session.notify("notifications/resources/updated", ResourceUpdatedParams(uri=uri))
                    sent += 1
        return sent

    # URL-mode completion: which connection received which URL elicitation

    def url_owner(self, elicitation_id: str) -> ServerConnection | None:
        """The connection that received URL elicitation ``elicitation_id`` (``None``: none here)."""
        return self._url_owners.get(elicitation_id)

    def bind_url(self, elicitation_id: str, conn: ServerConnection, person: Principal | None = None) -> None:
        """Record that ``conn`` received ``elicitation_id``, made for ``person`` (``None``: nobody)."""
        self._url_owners[elicitation_id] = conn
        if person is not None:
            self._url_people[elicitation_id] = person.key

    def release_url(self, elicitation_id: str, conn: ServerConnection) -> None:
        """Forget ``elicitation_id``, if ``conn`` holds it."""
        if self._url_owners.get(elicitation_id) is conn:
            del self._url_owners[elicitation_id]
            self._url_people.pop(elicitation_id, None)

    def take_url_owner(self, elicitation_id: str) -> ServerConnection | None:
        """Forget ``elicitation_id`` and return the connection that held it (its completion is sent once)."""
        self._url_people.pop(elicitation_id, None)
        return self._url_owners.pop(elicitation_id, None)

    def url_person(self, elicitation_id: str) -> PersonKey | None:
        """Who a URL elicitation held here was made for (``None``: nobody, or not held here)."""
        return self._url_people.get(elicitation_id)

    def url_step_is_for(self, step_id: str, person: Principal | PersonKey | None) -> bool:
        """Whether URL step ``step_id`` (an elicitation id or :meth:`Context.url_step_id`) was made for ``person``
        (who signed in on its page; ``None``: nobody): ask before showing or accepting anything. See
        :func:`minimcp.server.url_steps.made_for` (bound ids: on any worker sharing the state keys)."""
        from minimcp.server.url_steps import made_for

        return made_for(step_id, person, self.url_step_keys, self._url_owners, self._url_people)

    async def complete_url_elicitation(
        self, elicitation_id: str, *, person: Principal | PersonKey | _Unchecked | None = UNCHECKED
    ) -> bool:
        """Signal that URL elicitation ``elicitation_id`` finished (call from anywhere in the server).

        Sends ``notifications/elicitation/complete`` to the one connection that
        received that elicitation, and to no other. Returns whether a notice was
        sent from this worker: repeating it, an unknown id, or a connection that is
        gone send nothing.

        ``person``: who completed it on its page (a Principal, its key, ``None``: nobody). A step made
        for someone else raises :class:`~minimcp.server.url_steps.WrongPerson`: nothing is sent, the
        step stays open. Omitted: the application vouches for it (a provider's callback).

        With a ``bus``, an id that no session of this worker holds is published for the other workers
        (with ``person``), and returns False (not sent *here*): the worker whose session holds it
        checks the person again and sends the notice, once; if none does, nothing is sent.
        """
        checked: tuple[str, ...] | None = None
        if not isinstance(person, _Unchecked):
            from minimcp.server.url_steps import WrongPerson, person_key

            if not self.url_step_is_for(elicitation_id, person):
                raise WrongPerson(elicitation_id)
            checked = person_key(person) or ()
        conn = self.take_url_owner(elicitation_id)
        if conn is None:
            if self._bus is not None:
                self.workers.publish("url_complete", elicitation_id, checked)
            return False
        return await conn.send_url_complete(elicitation_id)

    def stateless_connection(self, transport: Transport) -> tuple[ServerConnection, Session]:
        """The one connection serving every 2026-07-28 POST of an HTTP app, over ``transport`` (the app
        starts its session; its task group hosts parked calls)."""
        conn = ServerConnection(self)
        session = Session(transport, conn, limits=self.limits, name=f"server {self.name} (HTTP 2026-07-28)")
        session.trace = self.trace
        conn.session = session
        # Locked to the modern revision from the start (what a first enveloped request would do), so
        # that an enveloped initialize is -32601 and a request without the envelope -32602.
        conn.lock_era(Era.MODERN)
        return conn, session

    def metrics_page(self) -> tuple[str, bytes]:
        """What a ``/metrics`` route answers: the content type, and the Prometheus text of this server's
        elicitation metrics and its live sessions' counters (the HTTP app asks; see ``metrics_path``)."""
        return METRICS_CONTENT_TYPE, server_metrics_text(self)

    def warn_if_state_key_random(self) -> None:
        """Log once per server, when its sealing key is random to this process, what that breaks.

        Hosts that may run as one of several workers (the Streamable HTTP app) call it at start.
        """
        if self.state_key_source != "random" or self._warned_random_key:
            return
        self._warned_random_key = True
        logger.warning(RANDOM_KEY_WARNING, self.name)

    @property
    def worker_id(self) -> str:
        """Names this worker on the bus (``Server(worker_id=...)``, the HTTP app's session id prefix, or random)."""
        return self.workers.worker_id

    async def run_background(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run what the server keeps beside its connections until cancelled: the client of a shared
        ``used_states`` store (one with a ``run`` method, as
        :class:`~minimcp.scaleout.redis_used_states.RedisUsedStates`), and the listener on the ``bus``.

        The Streamable HTTP app, :meth:`serve_stdio` and the WebSocket server start it; when you
        call :meth:`serve` yourself, start it beside (running it twice at once is harmless).
        """
        # (a store given to the server, read without making the default one: that loads the 2026-07-28 machinery)
        run = getattr(self._used_states, "run", None)
        async with anyio.create_task_group() as tg:
            if run is not None:
                await tg.start(run)
            if self._bus is not None:
                await tg.start(self.workers.run)
            task_status.started()
            await anyio.sleep_forever()

    # serving

    def serve(
        self,
        transport: Transport,
        *,
        task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> Coroutine[Any, Any, None]:
        """Serve one connection until it ends: ``await server.serve(transport)``.

        With ``await task_group.start(server.serve, transport)`` the caller gets
        the :class:`ServerConnection` once the session is running. What runs is the
        session's own ``run`` (no frame, task or task group of the server's around it);
        the connection is listed in :attr:`connections` from its start to its end.
        """
        conn = ServerConnection(self)
        session = Session(transport, conn, limits=self.limits, name=f"server {self.name}", budget=self.budget)
        session.trace = self.trace
        conn.session = session
        return session.run(task_status=_Started(task_status, conn, self.connections), on_end=functools.partial(
            self._connection_ended, conn
        ))

    def _connection_ended(self, conn: ServerConnection) -> None:
        """Forget a connection whose session has ended: its URL steps, then the user's hook."""
        self.connections.discard(conn)
        for eid in conn.url_elicitations:
            self.take_url_owner(eid)
        conn.url_elicitations.clear()
        if self.on_connection_closed is not None:
            try:
                self.on_connection_closed(conn)
            except Exception:
                logger.exception("on_connection_closed failed")

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout (logs belong on stderr)."""
        from minimcp.transports.stdio import stdio_server

        async with stdio_server(limits=self.limits) as transport, anyio.create_task_group() as tg:
            if self._bus is not None or hasattr(self._used_states, "run"):  # else nothing to run
                await tg.start(self.run_background)
            conn = await tg.start(self.serve, transport)  # (the session's run is its task's own coroutine)
            await conn.session.wait_closed()
            tg.cancel_scope.cancel()

    def run(
        self,
        transport: Literal["stdio", "http", "ws"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        backend: str = "asyncio",
        **options: Any,
    ) -> None:
        """Serve in a new event loop (``backend``: ``"asyncio"`` or ``"trio"``) until stopped.

        ``transport``: ``"stdio"`` (one client on stdin/stdout), ``"http"`` (Streamable
        HTTP at ``http://HOST:PORT/mcp``; the ``http`` extra) or ``"ws"`` (WebSocket at
        ``ws://HOST:PORT/mcp``; the ``ws`` extra). A network transport logs its endpoint
        URL on stderr at start; ``options`` go to :func:`~minimcp.hosting.http.serve_http`
        or :func:`~minimcp.hosting.websocket.serve_websocket` (``path``, ``allowed_hosts``,
        ``auth=Authorization(...)`` to check bearer tokens on every request, ...).

        ``"http"`` tunes the cyclic GC for serving unless ``tune_gc=False`` is passed (see
        :func:`~minimcp.hosting.http.serve_http`: this call runs its own event loop until the
        server stops, so the process is the server's; the settings are undone at the end).

        Ctrl-C stops it quietly: one line on stderr, then ``SystemExit(130)``. SIGTERM (on POSIX,
        when called from the main thread) stops it as a cancellation does, logs one line, and this
        returns: an HTTP server stops accepting and gives open connections ``graceful_timeout``.

        Raises:
            ImportError: the transport's extra is not installed (the message names it).
        """
        # hosting sits above the server: loaded here, when the process becomes this server's.
        from minimcp.hosting.run import run_network, run_until_stopped

        if transport != "stdio":
            run_network(self, transport, host=host, port=port, backend=backend, **options)
            return
        if options:
            raise TypeError(f"options {sorted(options)} apply to the http and ws transports only")
        run_until_stopped(self.serve_stdio, backend=backend, what=f"server {self.name}", logger=logger)


class _Started:
    """Reports a session's start to the opener of :meth:`Server.serve` as its connection's (and lists it)."""

    __slots__ = ("conn", "listed", "status")

    def __init__(
        self, status: anyio.abc.TaskStatus[ServerConnection], conn: ServerConnection, listed: set[ServerConnection]
    ) -> None:
        self.status = status
        self.conn = conn
        self.listed = listed

    def started(self, value: None = None) -> None:
        self.listed.add(self.conn)
        self.status.started(self.conn)
