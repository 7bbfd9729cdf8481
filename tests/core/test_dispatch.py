"""One request to its reply bytes: results, McpError and other exceptions mapped once."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from minimcp.core.dispatch import Deferred, answer, error_reply
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import Request


def request(method: str = "m", id_: int = 3) -> Request:
    return Request(id=id_, method=method)


async def test_a_result_becomes_a_response_under_the_request_id() -> None:
    async def handle(req: Request) -> Any:
        return {"ok": req.method}

    reply, code = await answer(handle, request())
    assert code is None
    assert msgspec.json.decode(reply) == {"jsonrpc": "2.0", "id": 3, "result": {"ok": "m"}}


async def test_an_mcp_error_keeps_its_code_message_and_data_and_may_answer_under_another_id() -> None:
    def handle(req: Request) -> Any:
        raise McpError(-32602, "bad params", {"field": "x"})

    reply, code = await answer(handle, request(), reply_id="client-1")
    assert code == -32602
    assert msgspec.json.decode(reply) == {
        "jsonrpc": "2.0", "id": "client-1", "error": {"code": -32602, "message": "bad params", "data": {"field": "x"}},
    }


async def test_another_exception_is_logged_and_answered_internal_error_without_detail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handle(req: Request) -> Any:
        raise RuntimeError("secret /etc/passwd")

    with caplog.at_level(logging.ERROR, logger="minimcp"):
        reply, code = await answer(handle, request("tools/call"))
    assert code == -32603
    assert msgspec.json.decode(reply)["error"] == {"code": -32603, "message": "internal error"}
    assert b"secret" not in reply
    assert any("handler for tools/call failed" in r.getMessage() for r in caplog.records)


class Shaped(Deferred):
    def finish(self, value: Any, error: BaseException | None) -> Any:
        if isinstance(error, ValueError):
            raise McpError(-32000, f"shaped: {error}")
        return super().finish({"shaped": value}, error)


async def test_a_deferred_is_finished_in_both_outcomes() -> None:
    async def ok() -> int:
        return 1

    async def bad() -> int:
        raise ValueError("no")

    reply, code = await answer(lambda req: Shaped(ok()), request())
    assert code is None and msgspec.json.decode(reply)["result"] == {"shaped": 1}
    reply, code = await answer(lambda req: Shaped(bad()), request())
    assert code == -32000 and msgspec.json.decode(reply)["error"]["message"] == "shaped: no"
    assert await Shaped(ok()) == {"shaped": 1}  # awaiting a Deferred does both steps too


def test_an_error_without_an_id_says_null_only_when_asked() -> None:
    exc = McpError(-32700, "parse error")
    assert b'"id"' not in error_reply(None, exc, method="?")
    assert b'"id":null' in error_reply(None, exc, method="?", null_id=True)


async def test_the_sessions_handler_task_answers_as_answer_does(caplog: pytest.LogCaptureFixture) -> None:
    """``Session._serve_bare`` writes out :func:`answer`'s steps (no frame of its own while a handler waits on a
    person): for each kind of handler outcome, the reply it sends is the one ``answer`` gives, byte for byte."""
    import anyio

    from minimcp.core.session import Session
    from minimcp.transports.memory import memory_pair

    async def value() -> Any:
        return {"n": 1}

    async def fails() -> Any:
        raise ValueError("no")

    def mcp_error(req: Request) -> Any:
        raise McpError(-32602, "bad params", {"field": "x"})

    async def crashes() -> Any:
        raise RuntimeError("secret")

    outcomes: dict[str, Any] = {
        "coroutine": lambda req: value(),
        "deferred": lambda req: Shaped(value()),
        "deferred-error": lambda req: Shaped(fails()),
        "mcp-error": mcp_error,
        "crash": lambda req: crashes(),
    }

    class Dispatcher:
        def handle_request(self, session: Session, req: Request) -> Any:
            return outcomes[req.method](req)

        def handle_notification(self, session: Session, notification: Any) -> None:
            pass

    ours, theirs = memory_pair()
    session = Session(ours, Dispatcher())
    caplog.set_level(logging.CRITICAL, logger="minimcp")
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            for id_, method in enumerate(outcomes, 1):
                await theirs.send(msgspec.json.encode({"jsonrpc": "2.0", "id": id_, "method": method}))
                sent = await theirs.receive()
                expected, _code = await answer(lambda req: outcomes[req.method](req), request(method, id_))
                assert sent == expected, method
            session.close()
