"""Shared by several test files: what tests/scenarios/test_booking.py sets up and others reuse."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

from tests.helpers import RawPeer
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture

ROOT = pathlib.Path(__file__).resolve().parents[2]


BOOKING = [sys.executable, str(ROOT / "examples" / "booking.py")]


V = "2026-07-28"


URL_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


DEPOSIT_ARGS = {"date": "2025-12-26", "party_size": 8}


KEY = b"k" * 32


def modern_call(
    id_: int, name: str, arguments: dict[str, Any], *, answers: dict[str, Any] | None = None, state: str | None = None
) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` (the envelope in ``_meta``), optionally a retry with answers and state."""
    params: dict[str, Any] = {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": URL_CAPS,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        },
    }
    if answers is not None:
        params["inputResponses"] = answers
    if state is not None:
        params["requestState"] = state
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


async def ask_deposit(peer: RawPeer) -> tuple[str, str, str]:
    """The first round of a deposit booking: (inputRequests key, the page URL, requestState)."""
    first = await peer.request(1, "tools/call", modern_call(1, "book_table", DEPOSIT_ARGS)["params"])
    result = first["result"]
    assert result["resultType"] == "input_required", result
    [(key, entry)] = result["inputRequests"].items()
    assert entry["params"]["mode"] == "url" and "/deposit/" in entry["params"]["url"]
    return key, entry["params"]["url"], result["requestState"]


async def retry(peer: RawPeer, id_: int, answers: dict[str, Any], state: str) -> dict[str, Any]:
    """Send a deposit round's retry (answers and state) and return the reply."""
    return await peer.request(id_, "tools/call", modern_call(id_, "book_table", DEPOSIT_ARGS, answers=answers,
                                                             state=state)["params"])


def booked_or_refused(message: dict[str, Any]) -> str | None:
    """A retry's outcome: the booking id it reports, or None when the state was refused as already used."""
    if "error" in message:
        assert message["error"]["code"] == -32602, message  # a single-use requestState, used again
        return None
    result = message["result"]
    assert result["resultType"] == "complete" and not result.get("isError"), result
    assert result["structuredContent"]["status"] == "deposit_pending"
    booking_id: str = result["structuredContent"]["booking_id"]
    return booking_id


URL_SESSION: dict[str, Any] = {"elicitation": {"url": {}}}

