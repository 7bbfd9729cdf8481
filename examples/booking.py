"""The reference scenario: a restaurant booking that hits a full day.

The behaviour is fixed by ``docs/booking.md`` (its contract): a booking tool that,
on a full date, pauses mid-call to ask the person for another date (form
mode), and finishes the same call with the answer; a deposit for large parties
and a calendar authorization happen in the person's browser (URL mode), on two
small pages this example serves itself on 127.0.0.1.

Run: ``python examples/booking.py`` (stdio), or ``--transport http|ws`` with ``--host``
(default 127.0.0.1) and ``--port`` (its address is announced on stderr as ``mcp: URL``).
Several workers behind a load balancer (docs/booking.md, "Several workers"): ``--redis URL``
(bookings, deposits and authorizations in Redis, see ``booking_store.py``), ``--worker-id ID``
(session ids start with ``ID.``), ``--public-url URL`` (the pages at ``URL/pages/``, served by
the MCP app), ``--allowed-host HOST``, and the same ``MINIMCP_STATE_KEYS`` on every worker.
``--elicitation-timeout SECONDS``
sets how long one question waits for the person (default 300). The pages need
the ``http`` extra (``pip install minimcp[http]``); their address is announced
on stderr as ``pages: http://127.0.0.1:PORT/``; like the MCP endpoint, they
answer only loopback ``Host`` names and same-site (loopback) ``Origin`` values.

``confirm_deposit`` stands for the payment provider's report that a deposit
was paid; a real deployment puts that entry behind the provider's own
authentication instead of offering it as a tool.

Authorization (docs/booking.md, "Authorization"; HTTP and WebSocket): ``--auth-issuer URL`` makes
every request carry an access token of that authorization server for this MCP endpoint (the
resource: ``--auth-audience URL``, else ``--public-url`` + ``/mcp``, else ``http://HOST:PORT/mcp``);
each tool needs its scopes, bookings belong to the person who made them, and the two pages sign
the person in at the same server (``--page-client-id`` / ``--page-client-secret``, else the example
registers itself) and serve only the person each step was made for. Needs ``minimcp[auth]``.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import functools
import hashlib
import hmac
import html
import json
import logging
import pathlib
import re
import socket
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import anyio.abc
import msgspec

from minimcp import (
    Accepted,
    Cancelled,
    Context,
    Declined,
    Limits,
    McpError,
    Server,
    ToolError,
    UrlElicitationRequired,
    tool_result,
)
from minimcp.hosting.run import run_until_stopped
from minimcp.server.connection import ServerConnection
from minimcp.server.mrtr.state import ENV_STATE_KEYS, state_keys_from_env
from minimcp.transports.http import DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS, StreamableHTTPApp
from minimcp.transports.http._headers import host_origin_problem
from minimcp.wire.types import CallToolResult

if TYPE_CHECKING:
    from minimcp.auth.config import Authorization
    from minimcp.auth.signin import PageSignIn

if str(pathlib.Path(__file__).resolve().parent) not in sys.path:  # also when loaded by file path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # booking_store.py sits beside this file

from booking_store import (  # the example's state: in this process, or in Redis (several workers)
    MAX_PENDING_AUTHORIZATIONS,
    Booking,
    BookingStore,
    MemoryStore,
    RedisStore,
)
from booking_store import Deposit as Deposit
from booking_store import new_booking_id as new_booking_id

FULL_DATES = frozenset({datetime.date(2025, 12, 25), datetime.date(2025, 12, 27)})
DEPOSIT_PARTY = 8
MAX_QUESTIONS = 3

log = logging.getLogger("booking")

#: The scopes of the tools (checked only with ``--auth-issuer``): reading, booking, and the payment
#: provider's report (its own client's scope, not a person's).
READ, WRITE, CONFIRM = "bookings:read", "bookings:write", "deposits:confirm"
SCOPES = (READ, WRITE, CONFIRM)
#: What a ``401`` asks a person's client to get.
PERSON_SCOPES = (READ, WRITE)
#: A person: ``(iss, sub)`` of their token (:attr:`minimcp.auth.principal.Principal.key`).
PersonKey = tuple[str, str]
#: The pages' cookies: the ``state`` of a sign-in under way, and who signed in (signed, short-lived).
SIGN_IN_COOKIE, PERSON_COOKIE = "booking_sign_in", "booking_person"
SIGN_IN_SECONDS, PERSON_SECONDS = 600, 1800


class BookingServer(Server):
    """The example's MCP server: listing its tools needs ``bookings:read`` (with authorization on)."""

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        if method == "tools/list":
            return frozenset({READ})
        return super().scopes_needed(method, params)


def is_full(day: datetime.date) -> bool:
    return day in FULL_DATES


def next_free(day: datetime.date) -> datetime.date:
    """The first later date that is not full."""
    candidate = day + datetime.timedelta(days=1)
    while is_full(candidate):
        candidate += datetime.timedelta(days=1)
    return candidate


def date_question_schema(default: datetime.date) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "accept_alternative": {"type": "boolean", "description": "Try another date?"},
            "date": {
                "type": "string",
                "format": "date",
                "description": "Alternative date (YYYY-MM-DD)",
                "default": default.isoformat(),
            },
        },
        "required": ["accept_alternative"],
    }


def outcome(status: str, day: datetime.date, party_size: int, text: str, **extra: Any) -> CallToolResult:
    structured: dict[str, Any] = {"status": status, "date": day.isoformat(), "party_size": party_size, **extra}
    return tool_result(text, structured)


class BookingApp:
    """The MCP server, its state (a :class:`~booking_store.BookingStore`), and the two browser pages (an ASGI app)."""

    def __init__(
        self,
        *,
        elicitation_timeout: float = 300.0,
        state_key: bytes | None = None,
        allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: tuple[str, ...] = DEFAULT_ALLOWED_ORIGINS,
        max_pending_authorizations: int = MAX_PENDING_AUTHORIZATIONS,
        store: BookingStore | None = None,
        **server_options: Any,
    ) -> None:
        self.server = BookingServer(
            "booking",
            "1.0.0",
            title="Restaurant booking",
            instructions="Book tables. Dates are ISO YYYY-MM-DD. If a day is full the tool asks the person.",
            limits=Limits(elicitation_timeout=elicitation_timeout),
            state_key=state_key,
            **server_options,
        )
        self.server.on_connection_closed = self._connection_closed
        #: Base URL of the pages (``http://127.0.0.1:PORT``, or ``PUBLIC_URL/pages``), once they are served.
        self.pages_url: str | None = None
        #: ``Host`` / ``Origin`` values the pages accept (patterns as for the MCP endpoint).
        self.allowed_hosts = tuple(h.lower() for h in allowed_hosts)
        self.allowed_origins = tuple(o.lower() for o in allowed_origins)
        #: Bookings, deposits and authorizations: this process's memory, or Redis (``--redis``).
        self.store: BookingStore = store or MemoryStore(max_pending_authorizations=max_pending_authorizations)
        #: With authorization on: the pages' own sign-in at the authorization server (who opened a page).
        self.sign_in: PageSignIn | None = None
        self._register_tools()

    # --- state -----------------------------------------------------------------------------
    # (the in-memory store's tables, for tests and inspection; a shared store has no such view)

    @property
    def memory(self) -> MemoryStore:
        if not isinstance(self.store, MemoryStore):
            raise TypeError("this booking app keeps its state in a shared store, not in this process")
        return self.store

    bookings = property(lambda self: self.memory.bookings, lambda self, v: setattr(self.memory, "bookings", v))
    by_call = property(lambda self: self.memory.by_call, lambda self, v: setattr(self.memory, "by_call", v))
    deposits = property(lambda self: self.memory.deposits, lambda self, v: setattr(self.memory, "deposits", v))
    authorizations = property(lambda self: self.memory.authorizations)
    completed_authorizations = property(lambda self: self.memory.completed_authorizations)
    authorized = property(lambda self: self.memory.authorized_sessions)
    _pending_authorization = property(lambda self: self.memory._pending_authorization)

    def _remember_authorization(self, eid: str, conn: ServerConnection | None) -> None:
        self.memory.remember_authorization(eid, conn)

    async def find(self, booking_id: str, ctx: Context | None = None) -> Booking:
        """The booking ``booking_id``; with ``ctx`` of a caller with a token, only if it is that person's
        (another person's booking answers as an unknown id would)."""
        booking = await self.store.find(booking_id)
        auth = ctx.auth if ctx is not None else None
        if booking is None or (auth is not None and booking.owner != auth.key):
            raise ToolError(f"Unknown booking_id {booking_id!r}; use the id returned by book_table.")
        return booking

    async def pay(self, elicitation_id: str, **person: Any) -> bool:
        """The deposit page was paid (or the provider reported it): book, and tell the client (once).
        ``person``: who paid on the page (``person=key``), checked again; the provider's report has none."""
        paid_now = await self.store.pay(elicitation_id)
        if paid_now:
            # The worker holding the client's session tells it (through the bus when it is another one).
            await self.server.complete_url_elicitation(elicitation_id, **person)
        return paid_now is not None

    async def authorize(self, elicitation_id: str, **person: Any) -> bool:
        session = await self.store.complete_authorization(elicitation_id)
        if session:
            await self.server.complete_url_elicitation(elicitation_id, **person)
        return session is not None

    def _connection_closed(self, conn: ServerConnection) -> None:
        """A session ended: its pending authorization page goes, and so does its authorization."""
        self.store.connection_closed(conn)

    def page_url(self, kind: str, elicitation_id: str) -> str | None:
        if self.pages_url is None:
            return None
        return f"{self.pages_url}/{kind}/{urllib.parse.quote(elicitation_id, safe='')}"

    # --- tools -----------------------------------------------------------------------------

    def _register_tools(self) -> None:
        app = self.server

        @app.tool(scopes=[WRITE])
        async def book_table(
            ctx: Context,
            date: Annotated[datetime.date, msgspec.Meta(description="Date of the booking (YYYY-MM-DD)")],
            party_size: Annotated[int, msgspec.Meta(ge=1, le=20, description="Number of guests, 1 to 20")],
        ) -> CallToolResult:
            """Book a table for a date and party size. If the date is full, the person is asked for another."""
            day = date
            questions = 0
            while is_full(day):
                if not ctx.can_elicit_form():
                    raise ToolError(
                        f"{day.isoformat()} is fully booked. The next free date is {next_free(day).isoformat()}."
                    )
                if questions == MAX_QUESTIONS:
                    return outcome(
                        "not_booked", day, party_size,
                        f"Not booked: {day.isoformat()} is full too and no more alternatives will be asked for.",
                    )
                questions += 1
                default = next_free(day)
                # A client answering with a JSON-RPC error raises QuestionFailed: uncaught, the call
                # ends with a tool error saying the client could not answer (nothing booked).
                answer = await ctx.elicit(
                    f"{day.isoformat()} is fully booked for a party of {party_size}. "
                    f"Would you like to try another date? The next free date is {default.isoformat()}.",
                    date_question_schema(default),
                )
                match answer:
                    case Accepted(value):
                        if not value["accept_alternative"]:
                            return outcome(
                                "not_booked", day, party_size,
                                f"Not booked: {day.isoformat()} is full and no other date was wanted.",
                            )
                        picked = value.get("date")
                        day = datetime.date.fromisoformat(picked) if picked else default
                    case Declined():
                        return declined(day, party_size)
                    case Cancelled():
                        return cancelled(day, party_size)
            if party_size >= DEPOSIT_PARTY:
                return await self._deposit(ctx, day, party_size)
            # One booking per call: a replay of a call that already booked finds that booking.
            booking = await self.store.create(ctx.call_id, day, party_size, "booked", owner=owner_of(ctx))
            return outcome(
                "booked", booking.date, booking.party_size,
                f"Booked a table for {booking.party_size} on {booking.date.isoformat()} "
                f"(booking {booking.booking_id}).",
                booking_id=booking.booking_id,
            )

        @app.tool(scopes=[CONFIRM])
        async def confirm_deposit(booking_id: str) -> CallToolResult:
            """Record that the deposit of a booking was paid (what the payment page's Pay button does)."""
            booking = await self.find(booking_id)
            if booking.status == "deposit_pending" and booking.deposit_elicitation_id is not None:
                await self.pay(booking.deposit_elicitation_id)
                booking = await self.find(booking_id)
            return status_of(booking)

        @app.tool(scopes=[WRITE])
        async def add_to_calendar(ctx: Context, booking_id: str) -> CallToolResult:
            """Add a booking to the person's calendar (needs a one-time authorization in the browser)."""
            booking = await self.find(booking_id, ctx)
            conn = ctx.connection
            if ctx.modern:
                await self._authorize_modern(ctx)
            elif not await self.store.authorized(conn):
                if not ctx.can_elicit_url():
                    raise ToolError(
                        "Adding to a calendar needs the person to authorize a calendar provider in their browser, "
                        "and this client cannot open such links (it did not declare URL-mode elicitation)."
                    )
                if self.pages_url is None:
                    raise ToolError("Calendar authorization pages are not available (install minimcp[http]).")
                # With authorization on, the session's page is bound to its person (ctx.url_step_id: any
                # worker sharing the state keys can check who may complete it); without, a random id.
                bound = ctx.url_step_id("auth") if ctx.auth is not None else None
                eid = await self.store.pending_authorization(conn, bound)
                url = self.page_url("authorize", eid)
                assert url is not None
                step = ctx.url_elicitation(
                    "Authorize access to your calendar so the booking can be added.", url, elicitation_id=eid
                )
                raise UrlElicitationRequired([step])
            return outcome(
                "added", booking.date, booking.party_size,
                f"Added booking {booking.booking_id} on {booking.date.isoformat()} to the calendar.",
                booking_id=booking.booking_id,
            )

        @app.tool(scopes=[READ])
        async def booking_status(ctx: Context, booking_id: str) -> CallToolResult:
            """The current status of a booking."""
            return status_of(await self.find(booking_id, ctx))

    async def _authorize_modern(self, ctx: Context) -> None:
        """2026-07-28 has no -32042: ask with a URL input request until the page was completed."""
        if not ctx.can_elicit_url():
            raise ToolError(
                "Adding to a calendar needs the person to authorize a calendar provider in their browser, "
                "and this client cannot open such links (it did not declare URL-mode elicitation)."
            )
        # The same id in every round and replay of this call, so the page stays the same one (bound
        # to the caller with authorization on: only they may complete it).
        eid = ctx.url_step_id("auth")
        url = self.page_url("authorize", eid)
        if url is None:
            raise ToolError("Calendar authorization pages are not available (install minimcp[http]).")
        try:
            while not await self.store.authorization_done(eid):
                await self.store.wait_authorization(eid)
                answer = await ctx.elicit_url(
                    "Authorize access to your calendar so the booking can be added.", url, elicitation_id=eid
                )
                if not isinstance(answer, Accepted):
                    raise ToolError("The calendar was not authorized, so the booking was not added.")
        except anyio.get_cancelled_exc_class():
            # A cancelled copy is not the end of the call: its retry replays it (here or on another
            # worker) and needs the page and what it recorded (both bounded, oldest dropped first).
            raise
        except BaseException:
            await self.store.end_authorization(eid)
            raise
        await self.store.end_authorization(eid)

    async def _deposit(self, ctx: Context, day: datetime.date, party_size: int) -> CallToolResult:
        if not ctx.can_elicit_url():
            raise ToolError(
                f"A deposit is required for a party of {party_size} (8 or more), and this client cannot open "
                "payment links (it did not declare URL-mode elicitation). No booking was made."
            )
        if self.pages_url is None:
            raise ToolError("A deposit is required, but the payment pages are not available (install minimcp[http]).")
        call_id = ctx.call_id  # the same in every round and replay of this call
        eid = ctx.url_step_id("deposit")  # call_id-deposit (bound to the caller with authorization on)
        made = await self.store.of_call(call_id)
        if made is not None:  # a replay of a call that already booked: that booking, not a second one
            return self._deposit_result(ctx, made, eid)
        url = self.page_url("deposit", eid)
        assert url is not None
        # A replay finds its page again. On 2026-07-28 the page is kept past a cancelled copy, until no
        # retry of the call can come back (then it expires, unbooked); the store never drops it on cancel.
        expires_at = time.time() + self.server.state_ttl if ctx.modern else None
        await self.store.open_deposit(eid, day, party_size, expires_at)
        try:
            answer = await ctx.elicit_url(
                f"A deposit is required for a party of {party_size} on {day.isoformat()}. "
                "Open the payment page to pay it; nothing about the payment goes through this chat.",
                url,
                elicitation_id=eid,
            )
        except McpError:  # QuestionFailed (the client answered with an error) included: no booking
            await self.store.drop_unbooked_deposit(eid)
            raise
        except BaseException as exc:
            # On 2026-07-28 a cancelled copy is not the end of the call: its retry replays it (here
            # or on another worker) and needs the page, paid or not. Kept until no retry can come.
            if not (ctx.modern and isinstance(exc, anyio.get_cancelled_exc_class())):
                await self.store.drop_unbooked_deposit(eid)
            raise
        match answer:
            case Accepted():
                # Booked at once if the page was paid already; another round of this call that
                # booked while this one waited (here or elsewhere) keeps its booking.
                booking = await self.store.create(
                    call_id, day, party_size, "deposit_pending", deposit_id=eid, owner=owner_of(ctx)
                )
                return self._deposit_result(ctx, booking, eid)
        made = await self.store.of_call(call_id)
        if made is not None:  # another round of this call booked while this one waited
            return self._deposit_result(ctx, made, eid)
        await self.store.drop_unbooked_deposit(eid)
        return declined(day, party_size) if isinstance(answer, Declined) else cancelled(day, party_size)

    @staticmethod
    def _deposit_result(ctx: Context, booking: Booking, eid: str) -> CallToolResult:
        paid = booking.status == "booked"
        text = (
            f"Booked a table for {booking.party_size} on {booking.date.isoformat()} (booking {booking.booking_id}); "
            + ("the deposit is paid." if paid else "waiting for the deposit to be paid.")
        )
        extra = {} if ctx.modern else {"elicitation_id": eid}  # 2026-07-28 has no elicitationId
        return outcome(booking.status, booking.date, booking.party_size, text, booking_id=booking.booking_id, **extra)

    # --- the pages (ASGI) ----------------------------------------------------------------

    async def pages(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                    send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Two pages: ``/deposit/<id>`` and ``/authorize/<id>``; a plain form POST completes each.

        Like the MCP endpoint, the pages answer only allowed ``Host`` names and
        ``Origin`` values (403 otherwise, before anything is read or changed):
        a page reached through DNS rebinding, or a form on another site posting
        here, does nothing.

        With authorization on (:attr:`sign_in`), a visitor who has not signed in is sent to the
        authorization server first (``/callback`` brings them back), and a page answers only the
        person its step was made for: anyone else gets 403, and nothing changes.
        """
        if scope["type"] == "lifespan":  # nothing to set up, but the ASGI server waits for the answers
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        refused = host_origin_problem(_header_map(scope), self.allowed_hosts, self.allowed_origins)
        if refused is not None:
            log.warning("refused a page request: %s", refused)
            await _html(send, 403, "Forbidden", f"<p>{html.escape(refused)}.</p>")
            return
        method = scope["method"]
        parts = scope["path"].strip("/").split("/")
        if method == "POST":  # drain the (tiny) form body
            more = True
            while more:
                message = await receive()
                more = bool(message.get("more_body"))
        if parts == ["callback"] and method == "GET" and self.sign_in is not None:
            await self._signed_in(scope, send)
            return
        if len(parts) != 2 or parts[0] not in ("deposit", "authorize") or method not in ("GET", "POST"):
            await _html(send, 404, "Not found", "<p>There is nothing here.</p>")
            return
        eid = urllib.parse.unquote(parts[1])
        person: dict[str, PersonKey] = {}  # without authorization: nobody is checked (a local demo)
        if self.sign_in is not None:
            key = self._person(scope)
            if key is None:
                await self._send_to_sign_in(scope, send)
                return
            if not self.server.url_step_is_for(eid, key):
                log.warning("refused a %s page to a person it was not made for", parts[0])
                await _html(send, 403, "Not yours", "<p>This page belongs to someone else. Nothing was done.</p>")
                return
            person = {"person": key}
        try:
            await self._page(parts[0], eid, method, send, **person)
        except ToolError as exc:  # the shared store does not answer (Redis away): nothing was done
            await _html(send, 503, "Try again later", f"<p>{html.escape(str(exc))}</p>")

    # --- the pages' sign-in (with authorization on) --------------------------------------------

    def _person(self, scope: dict[str, Any]) -> PersonKey | None:
        """Who signed in on the pages, from this browser's signed cookie (``None``: nobody, or expired)."""
        value = _cookies(scope).get(PERSON_COOKIE, "")
        payload, _, tag = value.partition(".")
        if not any(hmac.compare_digest(tag, _cookie_tag(key, payload)) for key in self.server.url_step_keys):
            return None
        try:
            issuer, subject, expires = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except ValueError:  # pragma: no cover - signed by us
            return None
        return (str(issuer), str(subject)) if float(expires) > time.time() else None

    async def _send_to_sign_in(self, scope: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """303 to the authorization server; the sign-in's ``state`` in a cookie ties the callback to this browser."""
        assert self.sign_in is not None
        back = urllib.parse.quote(str(scope.get("root_path", "")) + scope["path"])
        url, state = self.sign_in.begin(back)
        cookie = self._cookie(scope, SIGN_IN_COOKIE, state, SIGN_IN_SECONDS)
        await _redirect(send, url, cookie)

    async def _signed_in(self, scope: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """``/callback``: the authorization server sent the browser back; learn who signed in, then go back."""
        from minimcp.auth.signin import SignInRefused

        assert self.sign_in is not None
        query = dict(urllib.parse.parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1")))
        state = _cookies(scope).get(SIGN_IN_COOKIE)
        if not state or not hmac.compare_digest(query.get("state", ""), state):
            await _html(send, 403, "Sign-in refused", "<p>This sign-in was not started in this browser.</p>")
            return
        try:
            principal, back = await self.sign_in.finish(query)
        except SignInRefused as exc:
            log.warning("a page sign-in was refused: %s", exc.reason)
            await _html(send, 403, "Sign-in refused", f"<p>{html.escape(exc.description)}.</p>")
            return
        if not back.startswith("/") or back.startswith("//"):  # pragma: no cover - begin() was given our own path
            back = "/"
        issuer, subject = principal.key
        payload = base64.urlsafe_b64encode(json.dumps([issuer, subject, time.time() + PERSON_SECONDS]).encode())
        text = payload.decode("ascii").rstrip("=")
        signed = f"{text}.{_cookie_tag(self.server.url_step_keys[0], text)}"
        await _redirect(send, back, self._cookie(scope, PERSON_COOKIE, signed, PERSON_SECONDS),
                        self._cookie(scope, SIGN_IN_COOKIE, "", 0))  # fmt: skip

    def _cookie(self, scope: dict[str, Any], name: str, value: str, seconds: int) -> str:
        """A ``Set-Cookie`` value for the pages' path: HttpOnly, SameSite=Lax (the callback is a top-level GET)."""
        path = str(scope.get("root_path", "")) or "/"
        secure = "; Secure" if (self.pages_url or "").startswith("https:") else ""
        return f"{name}={value}; Path={path}; Max-Age={seconds}; HttpOnly; SameSite=Lax{secure}"

    async def _page(
        self,
        kind: str,
        eid: str,
        method: str,
        send: Callable[[dict[str, Any]], Awaitable[None]],
        **person: PersonKey,
    ) -> None:
        if kind == "deposit":
            deposit = await self.store.deposit(eid)
            if deposit is None:
                await _html(send, 404, "Unknown payment", "<p>This payment link is unknown or has expired.</p>")
                return
            what = f"a deposit for a party of {deposit.party_size} on {deposit.date.isoformat()}"
            paid = deposit.paid
            if method == "POST":
                paid = await self.pay(eid, **person)
            if paid:
                await _html(send, 200, "Deposit paid", f"<p>Thank you: {html.escape(what)} is paid.</p>"
                            "<p>You can close this page and return to your assistant.</p>")
            else:
                await _html(send, 200, "Pay the deposit", f"<p>You are paying {html.escape(what)}.</p>"
                            '<form method="post"><button type="submit">Pay deposit</button></form>')
            return
        if method == "POST":
            if await self.authorize(eid, **person):
                await _html(send, 200, "Calendar authorized",
                            "<p>Calendar access is authorized. You can close this page.</p>")
            else:
                await _html(send, 404, "Unknown request", "<p>This authorization link is unknown or was used.</p>")
            return
        if not await self.store.authorization_pending(eid):
            await _html(send, 404, "Unknown request", "<p>This authorization link is unknown or was used.</p>")
            return
        await _html(send, 200, "Authorize calendar access",
                    "<p>Allow the booking assistant to add bookings to your calendar?</p>"
                    '<form method="post"><button type="submit">Authorize</button></form>')


def _header_map(scope: dict[str, Any]) -> dict[str, str]:
    """An ASGI request's headers, names in lower case (repeated ones joined)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name, value = bytes(raw_name).decode("latin-1").lower(), bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _cookies(scope: dict[str, Any]) -> dict[str, str]:
    """The request's cookies (the first of a repeated name)."""
    found: dict[str, str] = {}
    for part in _header_map(scope).get("cookie", "").replace(",", ";").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name not in found:
            found[name] = value
    return found


def _cookie_tag(key: bytes, payload: str) -> str:
    digest = hmac.new(key, b"booking page person\x00" + payload.encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode("ascii")


def owner_of(ctx: Context) -> PersonKey | None:
    """Whose booking a call makes: the caller's ``(iss, sub)``, ``None`` without authorization."""
    auth = ctx.auth
    return None if auth is None else auth.key


def declined(day: datetime.date, party_size: int) -> CallToolResult:
    return outcome("declined", day, party_size, f"Not booked: the person declined ({day.isoformat()}).")


def cancelled(day: datetime.date, party_size: int) -> CallToolResult:
    return outcome(
        "cancelled", day, party_size,
        "Not booked: the question was cancelled or not answered in time. Try again later.",
    )


def status_of(booking: Booking) -> CallToolResult:
    return outcome(
        booking.status, booking.date, booking.party_size,
        f"Booking {booking.booking_id}: {booking.status.replace('_', ' ')}, "
        f"{booking.party_size} people on {booking.date.isoformat()}.",
        booking_id=booking.booking_id,
    )


async def _redirect(send: Callable[[dict[str, Any]], Awaitable[None]], location: str, *cookies: str) -> None:
    headers = [(b"location", location.encode("latin-1")), (b"content-length", b"0"), (b"cache-control", b"no-store")]
    headers += [(b"set-cookie", cookie.encode("latin-1")) for cookie in cookies]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _html(send: Callable[[dict[str, Any]], Awaitable[None]], status: int, title: str, body: str) -> None:
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    ).encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(page)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": page})


def build(*, elicitation_timeout: float = 300.0, **options: Any) -> BookingApp:
    """A fresh booking app (server, state and pages); ``options`` go to :class:`BookingApp`."""
    return BookingApp(elicitation_timeout=elicitation_timeout, **options)


def build_server(*, elicitation_timeout: float = 300.0) -> Server:
    """Just the MCP server (its pages are not served, so URL-mode steps report they are unavailable)."""
    return build(elicitation_timeout=elicitation_timeout).server


class BookingHTTPApp(StreamableHTTPApp):
    """The MCP endpoint and, under ``/pages/``, the example's pages, on one port (``--public-url``).

    Every worker behind a load balancer serves the same pages at the same public URLs; the pages
    apply the app's ``Host`` / ``Origin`` allow-list (``BookingApp.allowed_hosts``) as before.
    """

    def __init__(self, booking: BookingApp, **options: Any) -> None:
        super().__init__(booking.server, **options)
        self.booking = booking

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the app and, beside it in one task group, the client of a shared store (``--redis``)."""
        run_store = getattr(self.booking.store, "run", None)
        if run_store is None:
            await super().run(task_status=task_status)
            return
        async with anyio.create_task_group() as tg:
            await tg.start(run_store)
            await super().run(task_status=task_status)  # until cancelled

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
            if root and path.startswith(root):
                path = path[len(root) :]
            if path.startswith(PAGES_PATH + "/"):
                inner = {**scope, "path": path[len(PAGES_PATH) :], "root_path": root + PAGES_PATH}
                await self.booking.pages(inner, receive, send)
                return
        await super().__call__(scope, receive, send)


#: Where the pages are, under ``--public-url``, on every worker.
PAGES_PATH = "/pages"
WORKER_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\]")  # a DNS name, an IPv4 or a [IPv6]


def worker_id(value: str) -> str:
    if not WORKER_ID.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a worker id: use 1 to 32 letters, digits, '_' or '-' (it starts every session id)"
        )
    return value


def public_url(value: str) -> str:
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"{value!r} is not an http:// or https:// URL with a host name")
    if parsed.query or parsed.fragment:
        raise argparse.ArgumentTypeError(f"{value!r}: the public URL takes no query or fragment")
    return value.rstrip("/")


def issuer_url(value: str) -> str:
    """An authorization server's issuer: an http(s) URL with a host, kept exactly (``iss`` is compared as is)."""
    public_url(value)
    return value


def allowed_host(value: str) -> str:
    if not HOST_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a host name (give the name only, as in booking.example: no scheme, port or path)"
        )
    return value.lower()


def allow_lists(hosts: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``Host`` and ``Origin`` patterns the app and the pages accept: loopback, plus ``hosts`` (any port)."""
    extra_hosts = tuple(f"{h}:*" for h in hosts)
    extra_origins = tuple(f"{scheme}://{h}:*" for h in hosts for scheme in ("http", "https"))
    return (*DEFAULT_ALLOWED_HOSTS, *extra_hosts), (*DEFAULT_ALLOWED_ORIGINS, *extra_origins)


def allowed_names(args: argparse.Namespace) -> list[str]:
    """Host names accepted besides loopback: the public URL's (where clients reach us), then ``--allowed-host``."""
    names = []
    if args.public_url is not None:
        name = str(urllib.parse.urlsplit(args.public_url).hostname)
        names.append(f"[{name}]" if ":" in name else name)
    return [*names, *(name for name in args.allowed_host if name not in names)]


def shared_options(redis_url: str | None) -> dict[str, Any]:
    """The store and the server options for ``--redis``: shared bookings, used states and bus."""
    if redis_url is None:
        return {}
    from minimcp.scaleout.redis_used_states import RedisUsedStates

    options: dict[str, Any] = {"store": RedisStore(redis_url), "used_states": RedisUsedStates(redis_url)}
    from minimcp.scaleout.bus import RedisBus

    options["bus"] = RedisBus(redis_url)  # URL completions reach the worker holding the client's session
    return options


def http_options(args: argparse.Namespace, hosts: tuple[str, ...], origins: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {"allowed_hosts": hosts, "allowed_origins": origins}
    if args.worker_id is not None:
        options["session_id_prefix"] = args.worker_id  # a load balancer routes a session by this prefix
    return options


def resource_of(args: argparse.Namespace) -> str:
    """The resource a token must name: ``--auth-audience``, else ``--public-url`` + ``/mcp``, else the
    endpoint as served (``http``, for WebSocket too; ``--port`` is set by then)."""
    if args.auth_audience is not None:
        return str(args.auth_audience)
    if args.public_url is not None:
        return f"{args.public_url}/mcp"
    host = f"[{args.host}]" if ":" in args.host else args.host
    return f"http://{host}:{args.port}/mcp"


def authorization(args: argparse.Namespace) -> Authorization:
    """``--auth-issuer``: JWT access tokens of that issuer (keys from its metadata) for :func:`resource_of`."""
    from minimcp.auth.config import Authorization
    from minimcp.auth.jwt import JWTVerifier

    return Authorization(
        JWTVerifier(args.auth_issuer),
        resource=resource_of(args),
        authorization_servers=[args.auth_issuer],
        scopes_supported=SCOPES,
        challenge_scopes=PERSON_SCOPES,
        resource_name="Restaurant booking",
    )


async def start_sign_in(booking: BookingApp, args: argparse.Namespace) -> None:
    """The pages' sign-in at ``--auth-issuer``, as its own client (registered now unless ``--page-client-id``).

    A sign-in travels sealed in its ``state`` under the server's state keys and is used up in the server's
    used-state store (Redis with ``--redis``), so whichever worker the callback reaches finishes it.
    """
    from minimcp.auth.signin import PageSignIn

    assert booking.pages_url is not None
    server = booking.server
    sign_in = PageSignIn(
        args.auth_issuer,
        redirect_uri=f"{booking.pages_url}/callback",
        client_id=args.page_client_id,
        client_secret=args.page_client_secret,
        keys=server.url_step_keys,
        used_states=server.used_states,
    )
    await sign_in.start()
    booking.sign_in = sign_in


def free_port(host: str) -> int:
    """A port free right now on ``host`` (for a resource URL that must be known before serving)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


async def serve(
    args: argparse.Namespace, *, task_status: anyio.abc.TaskStatus[tuple[BookingApp, str]] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Serve as ``args`` say; over ``http`` and ``ws``, ``task_status`` gets the app and the MCP endpoint's URL."""
    hosts, origins = allow_lists(allowed_names(args))
    shared = shared_options(args.redis)
    booking = build(elicitation_timeout=args.elicitation_timeout, allowed_hosts=hosts, allowed_origins=origins,
                    **shared)  # fmt: skip
    async with anyio.create_task_group() as tg:
        if isinstance(booking.store, RedisStore) and args.transport != "http":  # the HTTP app does it itself
            await tg.start(booking.store.run)  # the store's Redis client, for as long as the server runs
            booking.server.warn_if_state_key_random()  # several workers need one key
            await tg.start(booking.server.run_background)  # the used states' (and bus's) client
        if args.public_url is not None:  # the MCP app serves the pages (below), the same on every worker
            booking.pages_url = args.public_url + PAGES_PATH
            print(f"pages: {booking.pages_url}/", file=sys.stderr, flush=True)
        else:
            try:
                from minimcp.transports.asgi_server import serve_asgi

                port = await tg.start(serve_asgi, booking.pages, args.host, 0)
            except ImportError:
                log.warning("pages are not served: install the http extra (pip install minimcp[http])")
            else:
                booking.pages_url = f"http://{args.host}:{port}"
                print(f"pages: {booking.pages_url}/", file=sys.stderr, flush=True)
        auth: Authorization | None = None
        if args.auth_issuer is not None:
            if booking.pages_url is None:
                raise SystemExit("--auth-issuer: the pages (which sign the person in) need minimcp[http]")
            if args.port == 0 and args.auth_audience is None and args.public_url is None:
                args.port = free_port(args.host)  # the resource names the port: choose it before serving
            auth = authorization(args)
            await start_sign_in(booking, args)
            log.info("authorization on: tokens of %s for %s", args.auth_issuer, auth.resource)
        try:
            if args.transport == "stdio":
                await booking.server.serve_stdio()
            elif args.transport == "http":
                from minimcp import serve_http

                app = BookingHTTPApp(booking, auth=auth, **http_options(args, hosts, origins))
                mcp_port = await tg.start(serve_http, app, args.host, args.port)
                print(f"mcp: http://{args.host}:{mcp_port}/mcp", file=sys.stderr, flush=True)
                task_status.started((booking, f"http://{args.host}:{mcp_port}/mcp"))
                await anyio.sleep_forever()
            else:
                from minimcp import serve_websocket

                mcp_port = await tg.start(functools.partial(serve_websocket, auth=auth), booking.server, args.host, args.port)
                print(f"mcp: ws://{args.host}:{mcp_port}/mcp", file=sys.stderr, flush=True)
                task_status.started((booking, f"ws://{args.host}:{mcp_port}/mcp"))
                await anyio.sleep_forever()
        finally:
            if booking.sign_in is not None:
                with anyio.CancelScope(shield=True):
                    await booking.sign_in.aclose()
        tg.cancel_scope.cancel()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (and ``MINIMCP_STATE_KEYS``), checked: a bad value exits with a message naming it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http", "ws"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--elicitation-timeout", type=float, default=300.0, metavar="SECONDS")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--redis", metavar="URL", help="share bookings, states and notices with the other workers")
    parser.add_argument("--worker-id", type=worker_id, metavar="ID", help="every HTTP session id starts with ID.")
    parser.add_argument("--public-url", type=public_url, metavar="URL",
                        help="where clients reach the service; the pages are then served at URL/pages/ (http)")
    parser.add_argument("--allowed-host", type=allowed_host, action="append", default=[], metavar="HOST",
                        help="also accept this Host / Origin name (repeatable)")  # fmt: skip
    parser.add_argument("--auth-issuer", type=issuer_url, metavar="URL",
                        help="take access tokens of this authorization server (http, ws); the pages sign in there")
    parser.add_argument("--auth-audience", type=public_url, metavar="URL",
                        help="the resource a token must name (default: the MCP endpoint's URL)")
    parser.add_argument("--page-client-id", metavar="ID", help="the pages' own OAuth client (else registered at start)")
    parser.add_argument("--page-client-secret", metavar="SECRET", help="that client's secret, if it has one")
    args = parser.parse_args(argv)
    if args.auth_issuer is None and (args.auth_audience or args.page_client_id or args.page_client_secret):
        parser.error("--auth-audience, --page-client-id and --page-client-secret need --auth-issuer")
    if args.auth_issuer is not None and args.transport == "stdio":
        parser.error("--auth-issuer needs --transport http or ws (stdio never uses authorization)")
    if args.page_client_secret is not None and args.page_client_id is None:
        parser.error("--page-client-secret needs --page-client-id")
    if args.public_url is not None and args.transport != "http":
        parser.error("--public-url needs --transport http (the MCP app serves the pages under /pages/)")
    if args.worker_id is not None and args.transport != "http":
        parser.error("--worker-id needs --transport http (it starts the HTTP session ids)")
    if args.redis is not None:
        try:
            RedisStore(args.redis)
        except (ValueError, ImportError) as exc:
            parser.error(f"--redis: {exc}")
    try:
        state_keys_from_env()  # what Server() reads when it is given no key
    except ValueError as exc:
        parser.error(f"{ENV_STATE_KEYS}: {exc}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its request lines name sign-in URLs (codes)
    run_until_stopped(serve, args, backend=args.backend, what="the booking server", logger=log)


if __name__ == "__main__":
    main()
