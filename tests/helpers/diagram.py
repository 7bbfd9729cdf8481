"""Shared by several test files: what tests/diagram/test_diagram.py sets up and others reuse."""

from __future__ import annotations

import json
from typing import Any


def rec(t: float, direction: str, msg: Any, *, session: str = "server demo", conn: int = 1, rel: Any = None) -> str:
    record: dict[str, Any] = {"t": t, "session": session, "conn": conn, "dir": direction, "msg": msg}
    if rel is not None:
        record["rel"] = rel
    return json.dumps(record)


def req(i: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def res(i: Any, **result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def err(i: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}}


ASK = {"message": "2025-12-25 is full. Try another date?", "requestedSchema": {"type": "object", "properties": {}}}


def nested_trace() -> list[str]:
    """A server-side trace: a call asks a question, gets the answer, finishes."""
    return [
        rec(10.0, "receive", req(1, "tools/call", name="book_table", arguments={"date": "2025-12-25"})),
        rec(10.1, "send", req(1, "elicitation/create", **ASK), rel=1),
        rec(12.5, "receive", res(1, action="accept", content={"accept_alternative": True})),
        rec(12.6, "send", res(1, content=[{"type": "text", "text": "booked 2025-12-26"}])),
    ]

