"""The reference scenario: a restaurant booking that hits a full day.

The behaviour is fixed by ``docs/booking.md`` (its contract): a booking tool that,
on a full date, pauses mid-call to ask the person for another date (form
mode), and finishes the same call with the answer; a deposit for large parties
and a calendar authorization happen in the person's browser (URL mode), on two
small pages this example serves itself on 127.0.0.1.

Run: ``python examples/booking.py`` (stdio), or ``--transport http|ws`` with ``--host``
(default 127.0.0.1) and ``--port`` (its address is announced on stderr as ``mcp: URL``).
``--elicitation-timeout SECONDS``
sets how long one question waits for the person (default 300). The pages need
the ``http`` extra (``pip install minimcp[http]``); their address is announced
on stderr as ``pages: http://127.0.0.1:PORT/``; like the MCP endpoint, they
answer only loopback ``Host`` names and same-site (loopback) ``Origin`` values.

``confirm_deposit`` stands for the payment provider's report that a deposit
was paid; a real deployment puts that entry behind the provider's own
authentication instead of offering it as a tool.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import html
import logging
import secrets
import sys
import time
import urllib.parse
import weakref
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
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
from minimcp.interrupt import run_until_interrupted
from minimcp.server import ServerConnection
from minimcp.transports._headers import host_origin_problem
from minimcp.transports.http import DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS
from minimcp.types import CallToolResult

FULL_DATES = frozenset({datetime.date(2025, 12, 25), datetime.date(2025, 12, 27)})
DEPOSIT_PARTY = 8
MAX_QUESTIONS = 3
#: Calendar authorizations waiting for their page, at most (the oldest is dropped beyond).
MAX_PENDING_AUTHORIZATIONS = 10_000

log = logging.getLogger("booking")


@dataclasses.dataclass
class Booking:
    booking_id: str
    date: datetime.date
    party_size: int
    status: str  # "booked" | "deposit_pending"
    deposit_elicitation_id: str | None = None


@dataclasses.dataclass
class Deposit:
    """A deposit page that exists from the moment its URL is sent."""

    date: datetime.date
    party_size: int
    paid: bool = False
    booking: Booking | None = None


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
    """The MCP server, its in-memory state, and the two browser pages (an ASGI app)."""

    def __init__(
        self,
        *,
        elicitation_timeout: float = 300.0,
        state_key: bytes | None = None,
        allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: tuple[str, ...] = DEFAULT_ALLOWED_ORIGINS,
        max_pending_authorizations: int = MAX_PENDING_AUTHORIZATIONS,
    ) -> None:
        self.server = Server(
            "booking",
            "1.0.0",
            title="Restaurant booking",
            instructions="Book tables. Dates are ISO YYYY-MM-DD. If a day is full the tool asks the person.",
            limits=Limits(elicitation_timeout=elicitation_timeout),
            state_key=state_key,
        )
        self.server.on_connection_closed = self._connection_closed
        #: Base URL of the pages (``http://127.0.0.1:PORT``), once they are served.
        self.pages_url: str | None = None
        #: ``Host`` / ``Origin`` values the pages accept (patterns as for the MCP endpoint).
        self.allowed_hosts = tuple(h.lower() for h in allowed_hosts)
        self.allowed_origins = tuple(o.lower() for o in allowed_origins)
        self.bookings: dict[str, Booking] = {}
        #: The booking each tool call made (by ``ctx.call_id``): a replayed call finds it again.
        self.by_call: dict[str, Booking] = {}
        self.deposits: dict[str, Deposit] = {}
        # deposit page id -> when no retry of its 2026-07-28 call can come back (oldest first)
        self._deposit_expiry: dict[str, float] = {}
        # authorization page id -> the session to authorize (None: a modern-revision call waiting on it);
        # oldest first, at most max_pending_authorizations
        self.authorizations: dict[str, ServerConnection | None] = {}
        self.max_pending_authorizations = max(1, max_pending_authorizations)
        # the one pending authorization page of each live session
        self._pending_authorization: dict[ServerConnection, str] = {}
        self.authorized: weakref.WeakSet[ServerConnection] = weakref.WeakSet()
        #: Authorization pages completed whose call has not ended yet (oldest first, bounded).
        self.completed_authorizations: dict[str, None] = {}
        self._register_tools()

    # --- state -----------------------------------------------------------------------------

    def create(self, day: datetime.date, party_size: int, status: str, call_id: str) -> Booking:
        """A new booking with an unguessable id, made by the tool call ``call_id`` (once per call)."""
        booking = Booking(new_booking_id(), day, party_size, status)
        while booking.booking_id in self.bookings:  # pragma: no cover - 128 random bits
            booking.booking_id = new_booking_id()
        self.bookings[booking.booking_id] = booking
        self.by_call[call_id] = booking
        return booking

    def find(self, booking_id: str) -> Booking:
        booking = self.bookings.get(booking_id)
        if booking is None:
            raise ToolError(f"Unknown booking_id {booking_id!r}; use the id returned by book_table.")
        return booking

    async def pay(self, elicitation_id: str) -> bool:
        """The deposit page was paid (or the provider reported it): book, and tell the client."""
        deposit = self.deposits.get(elicitation_id)
        if deposit is None:
            return False
        if not deposit.paid:
            deposit.paid = True
            if deposit.booking is not None and deposit.booking.status == "deposit_pending":
                deposit.booking.status = "booked"
            await self.server.complete_url_elicitation(elicitation_id)
        return True

    async def authorize(self, elicitation_id: str) -> bool:
        if elicitation_id not in self.authorizations:
            return False
        conn = self._forget_authorization(elicitation_id)
        self.completed_authorizations[elicitation_id] = None
        while len(self.completed_authorizations) > self.max_pending_authorizations:
            del self.completed_authorizations[next(iter(self.completed_authorizations))]
        if conn is not None:
            self.authorized.add(conn)
            await self.server.complete_url_elicitation(elicitation_id)
        return True

    def _authorization_for(self, conn: ServerConnection) -> str:
        """The pending authorization page of a session: one per session, reused by every retry."""
        eid = self._pending_authorization.get(conn)
        if eid is None:
            eid = self._pending_authorization[conn] = secrets.token_urlsafe(18)
            self._remember_authorization(eid, conn)
        return eid

    def _remember_authorization(self, eid: str, conn: ServerConnection | None) -> None:
        if eid in self.authorizations:
            return
        self.authorizations[eid] = conn
        while len(self.authorizations) > self.max_pending_authorizations:
            oldest = next(iter(self.authorizations))
            log.info("dropping the oldest pending calendar authorization (limit %d)", self.max_pending_authorizations)
            self._forget_authorization(oldest)

    def _forget_authorization(self, eid: str) -> ServerConnection | None:
        conn = self.authorizations.pop(eid, None)
        if conn is not None and self._pending_authorization.get(conn) == eid:
            del self._pending_authorization[conn]
        return conn

    def _connection_closed(self, conn: ServerConnection) -> None:
        """A session ended: its pending authorization page goes, and so does its authorization."""
        eid = self._pending_authorization.pop(conn, None)
        if eid is not None:
            self.authorizations.pop(eid, None)
        self.authorized.discard(conn)

    def page_url(self, kind: str, elicitation_id: str) -> str | None:
        if self.pages_url is None:
            return None
        return f"{self.pages_url}/{kind}/{urllib.parse.quote(elicitation_id, safe='')}"

    # --- tools -----------------------------------------------------------------------------

    def _register_tools(self) -> None:
        app = self.server

        @app.tool()
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
            booking = self.by_call.get(ctx.call_id)  # a replay of a call that already booked
            if booking is None:
                booking = self.create(day, party_size, "booked", ctx.call_id)
            return outcome(
                "booked", booking.date, booking.party_size,
                f"Booked a table for {booking.party_size} on {booking.date.isoformat()} "
                f"(booking {booking.booking_id}).",
                booking_id=booking.booking_id,
            )

        @app.tool()
        async def confirm_deposit(booking_id: str) -> CallToolResult:
            """Record that the deposit of a booking was paid (what the payment page's Pay button does)."""
            booking = self.find(booking_id)
            if booking.status == "deposit_pending" and booking.deposit_elicitation_id is not None:
                await self.pay(booking.deposit_elicitation_id)
            return status_of(booking)

        @app.tool()
        async def add_to_calendar(ctx: Context, booking_id: str) -> CallToolResult:
            """Add a booking to the person's calendar (needs a one-time authorization in the browser)."""
            booking = self.find(booking_id)
            conn = ctx.connection
            if ctx.modern:
                await self._authorize_modern(ctx)
            elif conn not in self.authorized:
                if not ctx.can_elicit_url():
                    raise ToolError(
                        "Adding to a calendar needs the person to authorize a calendar provider in their browser, "
                        "and this client cannot open such links (it did not declare URL-mode elicitation)."
                    )
                if self.pages_url is None:
                    raise ToolError("Calendar authorization pages are not available (install minimcp[http]).")
                eid = self._authorization_for(conn)
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

        @app.tool()
        async def booking_status(booking_id: str) -> CallToolResult:
            """The current status of a booking."""
            return status_of(self.find(booking_id))

    async def _authorize_modern(self, ctx: Context) -> None:
        """2026-07-28 has no -32042: ask with a URL input request until the page was completed."""
        if not ctx.can_elicit_url():
            raise ToolError(
                "Adding to a calendar needs the person to authorize a calendar provider in their browser, "
                "and this client cannot open such links (it did not declare URL-mode elicitation)."
            )
        # The same id in every round and replay of this call, so the page stays the same one.
        eid = f"{ctx.call_id}-auth"
        url = self.page_url("authorize", eid)
        if url is None:
            raise ToolError("Calendar authorization pages are not available (install minimcp[http]).")
        try:
            while eid not in self.completed_authorizations:
                self._remember_authorization(eid, None)
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
            self._end_authorization(eid)
            raise
        self._end_authorization(eid)

    def _end_authorization(self, eid: str) -> None:
        self._forget_authorization(eid)
        self.completed_authorizations.pop(eid, None)

    async def _deposit(self, ctx: Context, day: datetime.date, party_size: int) -> CallToolResult:
        if not ctx.can_elicit_url():
            raise ToolError(
                f"A deposit is required for a party of {party_size} (8 or more), and this client cannot open "
                "payment links (it did not declare URL-mode elicitation). No booking was made."
            )
        if self.pages_url is None:
            raise ToolError("A deposit is required, but the payment pages are not available (install minimcp[http]).")
        call_id = ctx.call_id  # the same in every round and replay of this call
        eid = f"{call_id}-deposit"
        made = self.by_call.get(call_id)
        if made is not None:  # a replay of a call that already booked: that booking, not a second one
            return self._deposit_result(ctx, made, eid)
        url = self.page_url("deposit", eid)
        assert url is not None
        self._drop_expired_deposits()
        deposit = self.deposits.get(eid)  # a replay finds its page again
        if deposit is None:
            deposit = self.deposits[eid] = Deposit(day, party_size)
            if ctx.modern:  # kept past a cancelled copy, until no retry of the call can come back
                self._deposit_expiry[eid] = time.time() + self.server.state_ttl
        try:
            answer = await ctx.elicit_url(
                f"A deposit is required for a party of {party_size} on {day.isoformat()}. "
                "Open the payment page to pay it; nothing about the payment goes through this chat.",
                url,
                elicitation_id=eid,
            )
        except McpError:  # QuestionFailed (the client answered with an error) included: no booking
            self._drop_unbooked_deposit(eid, deposit)
            raise
        except BaseException as exc:
            # On 2026-07-28 a cancelled copy is not the end of the call: its retry replays it (here
            # or on another worker) and needs the page, paid or not. Kept until no retry can come.
            if not (ctx.modern and isinstance(exc, anyio.get_cancelled_exc_class())):
                self._drop_unbooked_deposit(eid, deposit)
            raise
        made = self.by_call.get(call_id)
        if made is not None:  # another round of this call booked while this one waited
            return self._deposit_result(ctx, made, eid)
        match answer:
            case Accepted():
                status = "booked" if deposit.paid else "deposit_pending"
                booking = deposit.booking = self.create(day, party_size, status, call_id)
                booking.deposit_elicitation_id = eid
                return self._deposit_result(ctx, booking, eid)
            case Declined():
                self._drop_unbooked_deposit(eid, deposit)
                return declined(day, party_size)
            case _:
                self._drop_unbooked_deposit(eid, deposit)
                return cancelled(day, party_size)

    def _drop_expired_deposits(self) -> None:
        """Drop the unbooked deposit pages of 2026-07-28 calls that no retry can continue any more."""
        now, expiry = time.time(), self._deposit_expiry
        while expiry and next(iter(expiry.values())) <= now:
            eid = next(iter(expiry))
            del expiry[eid]
            deposit = self.deposits.get(eid)
            if deposit is not None and deposit.booking is None:
                del self.deposits[eid]

    def _drop_unbooked_deposit(self, eid: str, deposit: Deposit) -> None:
        if deposit.booking is None and self.deposits.get(eid) is deposit:
            del self.deposits[eid]

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
        if len(parts) != 2 or parts[0] not in ("deposit", "authorize") or method not in ("GET", "POST"):
            await _html(send, 404, "Not found", "<p>There is nothing here.</p>")
            return
        kind, eid = parts[0], urllib.parse.unquote(parts[1])
        if kind == "deposit":
            deposit = self.deposits.get(eid)
            if deposit is None:
                await _html(send, 404, "Unknown payment", "<p>This payment link is unknown or has expired.</p>")
                return
            what = f"a deposit for a party of {deposit.party_size} on {deposit.date.isoformat()}"
            if method == "POST":
                await self.pay(eid)
            if deposit.paid:
                await _html(send, 200, "Deposit paid", f"<p>Thank you: {html.escape(what)} is paid.</p>"
                            "<p>You can close this page and return to your assistant.</p>")
            else:
                await _html(send, 200, "Pay the deposit", f"<p>You are paying {html.escape(what)}.</p>"
                            '<form method="post"><button type="submit">Pay deposit</button></form>')
            return
        if method == "POST":
            if await self.authorize(eid):
                await _html(send, 200, "Calendar authorized",
                            "<p>Calendar access is authorized. You can close this page.</p>")
            else:
                await _html(send, 404, "Unknown request", "<p>This authorization link is unknown or was used.</p>")
            return
        if eid not in self.authorizations:
            await _html(send, 404, "Unknown request", "<p>This authorization link is unknown or was used.</p>")
            return
        await _html(send, 200, "Authorize calendar access",
                    "<p>Allow the booking assistant to add bookings to your calendar?</p>"
                    '<form method="post"><button type="submit">Authorize</button></form>')


def new_booking_id() -> str:
    """An unguessable booking id: 128 random bits as URL-safe text (22 characters), never sequential.

    A client learns a booking id only from its own results, so it cannot look
    at (or confirm) another client's booking by counting.
    """
    return secrets.token_urlsafe(16)


def _header_map(scope: dict[str, Any]) -> dict[str, str]:
    """An ASGI request's headers, names in lower case (repeated ones joined)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name, value = bytes(raw_name).decode("latin-1").lower(), bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


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


async def serve(args: argparse.Namespace) -> None:
    booking = build(elicitation_timeout=args.elicitation_timeout)
    async with anyio.create_task_group() as tg:
        try:
            from minimcp.transports.asgi_server import serve_asgi

            port = await tg.start(serve_asgi, booking.pages, args.host, 0)
        except ImportError:
            log.warning("pages are not served: install the http extra (pip install minimcp[http])")
        else:
            booking.pages_url = f"http://{args.host}:{port}"
            print(f"pages: {booking.pages_url}/", file=sys.stderr, flush=True)
        if args.transport == "stdio":
            await booking.server.serve_stdio()
        elif args.transport == "http":
            from minimcp.transports.http import serve_http

            mcp_port = await tg.start(serve_http, booking.server, args.host, args.port)
            print(f"mcp: http://{args.host}:{mcp_port}/mcp", file=sys.stderr, flush=True)
            await anyio.sleep_forever()
        else:
            from minimcp.transports.websocket import serve_websocket

            mcp_port = await tg.start(serve_websocket, booking.server, args.host, args.port)
            print(f"mcp: ws://{args.host}:{mcp_port}/mcp", file=sys.stderr, flush=True)
            await anyio.sleep_forever()
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http", "ws"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--elicitation-timeout", type=float, default=300.0, metavar="SECONDS")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    run_until_interrupted(serve, args, backend=args.backend, what="the booking server", logger=log)


if __name__ == "__main__":
    main()
