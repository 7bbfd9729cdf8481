"""Shared by several test files: what tests/scenarios/test_url_mode.py sets up and others reuse."""

from __future__ import annotations

from typing import Any


async def asgi_call(app: Any, method: str, url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """Send one request to an ASGI app in process (no server needed), with ``Host`` as a browser sends it."""
    authority, path = url.split("://", 1)[-1].split("/", 1)
    fields = {"host": authority, **(headers or {})}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in fields.items()]
    await app({"type": "http", "method": method, "path": "/" + path, "headers": raw}, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]).decode()

