"""The booking example over stdio with the minimcp client (its contract: docs/booking.md)."""

from __future__ import annotations

import pathlib
import sys
from collections import deque
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Cancelled, Declined, ElicitationRequest, check_form, connect_stdio
from minimcp.forms import FormDefinitionError, compile_form

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOKING = [sys.executable, str(ROOT / "examples" / "booking.py")]
sys.path.insert(0, str(ROOT / "examples"))

import booking  # noqa: E402

Answer = Accepted[dict[str, Any]] | Declined | Cancelled


def scripted(answers: list[Answer], seen: list[ElicitationRequest]) -> Any:
    queue = deque(answers)

    async def handler(question: ElicitationRequest) -> Answer:
        seen.append(question)
        if not queue:
            await anyio.sleep_forever()
        return queue.popleft()

    return handler


def test_every_form_of_the_example_compiles() -> None:
    """How an app asserts that its forms are valid: check_form on each."""
    import datetime

    check_form(booking.date_question_schema(datetime.date(2025, 12, 26)))
    form = compile_form(booking.date_question_schema(datetime.date(2025, 12, 26)))
    assert [f.name for f in form.fields] == ["accept_alternative", "date"]
    with pytest.raises(FormDefinitionError, match="date"):
        check_form({"type": "object", "properties": {"date": {"type": "object"}}})


async def test_booking_flows_over_stdio() -> None:
    seen: list[ElicitationRequest] = []
    handler = scripted(
        [
            Accepted({"accept_alternative": True}),  # 12-25 full -> default 12-26
            Accepted({"accept_alternative": True, "date": "2025-12-27"}),  # 12-25 -> 12-27 full again
            Accepted({"accept_alternative": True, "date": "2025-12-25"}),  # -> the same full date again
            Accepted({"accept_alternative": True, "date": "2025-12-27"}),  # third answer full too
            Accepted({"accept_alternative": False}),
            Declined(),
            Cancelled(),
        ],
        seen,
    )
    with anyio.fail_after(60):
        async with connect_stdio(BOOKING, elicitation_handler=handler) as client:
            names = {t.name for t in await client.list_tools()}
            assert names == {"book_table", "confirm_deposit", "add_to_calendar", "booking_status"}

            free = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert free.structured_content is not msgspec_unset()
            assert free.structured_content["status"] == "booked"  # type: ignore[index]
            booking_id = free.structured_content["booking_id"]  # type: ignore[index]

            alt = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4})
            assert alt.structured_content is not None
            alt_id = alt.structured_content["booking_id"]  # type: ignore[index]
            assert alt.structured_content == {
                "status": "booked", "date": "2025-12-26", "party_size": 4, "booking_id": alt_id
            }
            assert alt_id != booking_id and f"(booking {alt_id})" in alt.text
            assert "2025-12-25" in seen[0].message and "4" in seen[0].message
            date_field = {f.name: f for f in seen[0].form.fields}["date"]
            assert date_field.default == "2025-12-26"

            three = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert three.structured_content is not None
            assert three.structured_content["status"] == "not_booked"  # type: ignore[index]
            assert len(seen) == 4  # at most three questions in that call

            no = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert no.structured_content["status"] == "not_booked"  # type: ignore[index]
            dec = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert dec.structured_content["status"] == "declined"  # type: ignore[index]
            can = await client.call_tool("book_table", {"date": "2025-12-27", "party_size": 2})
            assert can.structured_content["status"] == "cancelled"  # type: ignore[index]
            assert "later" in can.text

            status = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert status.structured_content["status"] == "booked"  # type: ignore[index]
            unknown = await client.call_tool("booking_status", {"booking_id": "nope"})
            assert unknown.is_error is True and "nope" in unknown.text
            confirm = await client.call_tool("confirm_deposit", {"booking_id": booking_id})
            assert confirm.structured_content["status"] == "booked"  # type: ignore[index]

            bad_date = await client.call_tool("book_table", {"date": "2025-13-45", "party_size": 2})
            assert bad_date.is_error is True and "'date'" in bad_date.text
            bad_size = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2.5})
            assert bad_size.is_error is True and "'party_size'" in bad_size.text


async def test_timeout_over_stdio_is_a_cancel() -> None:
    seen: list[ElicitationRequest] = []
    command = [*BOOKING, "--elicitation-timeout", "0.3"]
    with anyio.fail_after(60):
        async with connect_stdio(command, elicitation_handler=scripted([], seen)) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert result.structured_content["status"] == "cancelled"  # type: ignore[index]
            assert "later" in result.text
            assert len(seen) == 1
            with anyio.fail_after(5):  # our handler is cancelled by the server's notifications/cancelled
                while client.session.inflight_count:
                    await anyio.sleep(0.01)


async def test_client_without_elicitation_is_not_asked() -> None:
    with anyio.fail_after(60):
        async with connect_stdio(BOOKING) as client:
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert result.is_error is True
            assert "2025-12-25" in result.text and "2025-12-26" in result.text
            deposit = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 8})
            assert deposit.is_error is True and "deposit" in deposit.text


def msgspec_unset() -> object:
    import msgspec

    return msgspec.UNSET
