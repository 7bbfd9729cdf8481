"""The reference scenario: a restaurant booking that hits a full day.

The behaviour is fixed by ``shared/scenarios/booking.md``: a booking tool that,
on a full date, pauses mid-call to ask the person for another date, and
finishes the same call with the answer.

Run: ``python examples/booking.py`` (stdio). ``--elicitation-timeout SECONDS``
sets how long one question waits for the person (default 300).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import logging
import sys
from typing import Annotated, Any

import msgspec

from minimcp import Accepted, Cancelled, Context, Declined, Limits, Server, ToolError, tool_result
from minimcp.types import CallToolResult

FULL_DATES = frozenset({datetime.date(2025, 12, 25), datetime.date(2025, 12, 27)})
DEPOSIT_PARTY = 8
MAX_QUESTIONS = 3

log = logging.getLogger("booking")


@dataclasses.dataclass
class Booking:
    booking_id: str
    date: datetime.date
    party_size: int
    status: str  # "booked" | "deposit_pending"
    deposit_elicitation_id: str | None = None


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


def deposit_unavailable(ctx: Context, party_size: int) -> str:
    why = (
        "deposit payment pages are not served by this version of the example yet"
        if ctx.connection.can_elicit_url()
        else "this client cannot open payment links (it did not declare URL-mode elicitation)"
    )
    return f"A deposit is required for a party of {party_size} (8 or more), and {why}. No booking was made."


def build_server(*, elicitation_timeout: float = 300.0) -> Server:
    """The booking server (fresh in-memory state per call of this function)."""
    app = Server(
        "booking",
        "1.0.0",
        title="Restaurant booking",
        instructions="Book tables. Dates are ISO YYYY-MM-DD. If a day is full the tool asks the person.",
        limits=Limits(elicitation_timeout=elicitation_timeout),
    )
    bookings: dict[str, Booking] = {}
    ids = itertools.count(1)

    def create(day: datetime.date, party_size: int, status: str) -> Booking:
        booking = Booking(f"B{next(ids):04d}", day, party_size, status)
        bookings[booking.booking_id] = booking
        return booking

    def find(booking_id: str) -> Booking:
        booking = bookings.get(booking_id)
        if booking is None:
            raise ToolError(f"Unknown booking_id {booking_id!r}; use the id returned by book_table.")
        return booking

    @app.tool(annotations=None)
    async def book_table(
        ctx: Context,
        date: Annotated[datetime.date, msgspec.Meta(description="Date of the booking (YYYY-MM-DD)")],
        party_size: Annotated[int, msgspec.Meta(ge=1, le=20, description="Number of guests, 1 to 20")],
    ) -> CallToolResult:
        """Book a table for a date and party size. If the date is full, the person is asked for another."""
        day = date
        questions = 0
        while is_full(day):
            if not ctx.connection.can_elicit_form():
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
                    return outcome(
                        "declined", day, party_size,
                        f"Not booked: the person declined to choose another date than {day.isoformat()}.",
                    )
                case Cancelled():
                    return outcome(
                        "cancelled", day, party_size,
                        "Not booked: the question about another date was cancelled. Try again later.",
                    )
        if party_size >= DEPOSIT_PARTY:
            raise ToolError(deposit_unavailable(ctx, party_size))
        booking = create(day, party_size, "booked")
        return outcome(
            "booked", day, party_size,
            f"Booked a table for {party_size} on {day.isoformat()} (booking {booking.booking_id}).",
            booking_id=booking.booking_id,
        )

    @app.tool()
    async def confirm_deposit(booking_id: str) -> CallToolResult:
        """Record that the deposit of a booking was paid (what the payment page's Pay button does)."""
        booking = find(booking_id)
        if booking.status == "deposit_pending":
            booking.status = "booked"
        return outcome(
            booking.status, booking.date, booking.party_size,
            f"Booking {booking.booking_id} is {booking.status.replace('_', ' ')}.",
            booking_id=booking.booking_id,
        )

    @app.tool()
    async def add_to_calendar(ctx: Context, booking_id: str) -> CallToolResult:
        """Add a booking to the person's calendar (needs a one-time authorization in the browser)."""
        booking = find(booking_id)
        why = (
            "calendar authorization pages are not served by this version of the example yet"
            if ctx.connection.can_elicit_url()
            else "this client cannot open such links (it did not declare URL-mode elicitation)"
        )
        raise ToolError(
            f"Adding booking {booking.booking_id} to a calendar needs the person to authorize a calendar "
            f"provider in their browser, and {why}."
        )

    @app.tool()
    async def booking_status(booking_id: str) -> CallToolResult:
        """The current status of a booking."""
        booking = find(booking_id)
        return outcome(
            booking.status, booking.date, booking.party_size,
            f"Booking {booking.booking_id}: {booking.status.replace('_', ' ')}, "
            f"{booking.party_size} people on {booking.date.isoformat()}.",
            booking_id=booking.booking_id,
        )

    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--elicitation-timeout", type=float, default=300.0, metavar="SECONDS")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    build_server(elicitation_timeout=args.elicitation_timeout).run(backend=args.backend)


if __name__ == "__main__":
    main()
