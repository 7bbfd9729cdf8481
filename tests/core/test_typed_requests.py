"""Typed requests: a params object names its method and result type, so ``session.request(params)``
sends that method and is typed by the params alone (``assert_type`` lines are checked by mypy)."""

from __future__ import annotations

import pathlib
import textwrap
from typing import Any, ClassVar, assert_type

import anyio
import msgspec
import pytest

import minimcp
from minimcp import McpError, Server
from minimcp.core.session import Session
from minimcp.transports.memory import memory_pair
from minimcp.wire import errors
from minimcp.wire.jsonrpc import Notification, Request
from minimcp.wire.types import (
    CallToolParams,
    CallToolResult,
    CompleteParams,
    CompleteResult,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    EmptyResult,
    GetPromptParams,
    GetPromptResult,
    InitializeParams,
    InitializeResult,
    ListPromptsParams,
    ListPromptsResult,
    ListResourcesParams,
    ListResourcesResult,
    ListResourceTemplatesParams,
    ListResourceTemplatesResult,
    ListRootsParams,
    ListRootsResult,
    ListToolsParams,
    ListToolsResult,
    PaginatedParams,
    PingParams,
    ReadResourceParams,
    ReadResourceResult,
    SetLevelParams,
    SubscribeParams,
    UnsubscribeParams,
)
from tests.helpers import RawPeer, connected

#: Each params class that belongs to one method: the method and result type it must name.
NAMED: dict[type[Any], tuple[str, type[Any]]] = {
    InitializeParams: ("initialize", InitializeResult),
    PingParams: ("ping", EmptyResult),
    ListToolsParams: ("tools/list", ListToolsResult),
    CallToolParams: ("tools/call", CallToolResult),
    ListResourcesParams: ("resources/list", ListResourcesResult),
    ListResourceTemplatesParams: ("resources/templates/list", ListResourceTemplatesResult),
    ReadResourceParams: ("resources/read", ReadResourceResult),
    SubscribeParams: ("resources/subscribe", EmptyResult),
    UnsubscribeParams: ("resources/unsubscribe", EmptyResult),
    ListPromptsParams: ("prompts/list", ListPromptsResult),
    GetPromptParams: ("prompts/get", GetPromptResult),
    CompleteParams: ("completion/complete", CompleteResult),
    SetLevelParams: ("logging/setLevel", EmptyResult),
    CreateMessageParams: ("sampling/createMessage", CreateMessageResult),
    ElicitRequestParams: ("elicitation/create", ElicitResult),
    ListRootsParams: ("roots/list", ListRootsResult),
}


class _ProbeParams(PaginatedParams, kw_only=True):
    """A method no table knows: only its class variables can have named it."""

    method: ClassVar[str] = "probe/list"
    result: ClassVar[type[ListToolsResult]] = ListToolsResult


class _NoHandlers:
    def handle_request(self, session: Session, request: Request) -> Any:
        raise McpError(errors.METHOD_NOT_FOUND, f"Method not found: {request.method}")

    def handle_notification(self, session: Session, notification: Notification) -> None:
        pass


def test_each_params_class_names_its_method_and_result_type() -> None:
    for cls, (method, result) in NAMED.items():
        assert (cls.method, cls.result) == (method, result), cls.__name__


def test_the_class_variables_are_not_fields_and_the_wire_shape_is_unchanged() -> None:
    for cls in NAMED:
        assert "method" not in cls.__struct_fields__ and "result" not in cls.__struct_fields__, cls.__name__
    # The per-method subclasses encode and decode exactly like the shared params they extend.
    assert msgspec.json.encode(ListToolsParams(cursor="c")) == msgspec.json.encode(PaginatedParams(cursor="c"))
    assert msgspec.json.encode(ListToolsParams()) == b"{}"
    assert msgspec.json.encode(ReadResourceParams(uri="u")) == b'{"uri":"u"}'
    assert msgspec.json.decode(b'{"cursor":"c"}', type=ListPromptsParams) == ListPromptsParams(cursor="c")


async def test_the_method_on_the_wire_comes_from_the_params_class() -> None:
    a, b = memory_pair()
    peer = RawPeer(b)
    session = Session(a, _NoHandlers())
    got: list[ListToolsResult] = []
    answered = anyio.Event()

    async def ask() -> None:
        result = await session.request(_ProbeParams(cursor="page-2"))
        got.append(assert_type(result, ListToolsResult))
        answered.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            tg.start_soon(ask)
            sent = await peer.recv(timeout=30)
            assert sent["method"] == "probe/list"
            assert sent["params"] == {"cursor": "page-2"}
            tool = {"name": "t", "inputSchema": {"type": "object"}}
            await peer.send({"jsonrpc": "2.0", "id": sent["id"], "result": {"tools": [tool], "nextCursor": "3"}})
            await answered.wait()
            tg.cancel_scope.cancel()
    assert type(got[0]) is ListToolsResult
    assert [t.name for t in got[0].tools] == ["t"] and got[0].next_cursor == "3"


async def test_typed_requests_round_trip_against_a_real_server() -> None:
    server = Server("typed")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.resource("mem://greeting")
    async def greeting() -> str:
        return "hello"

    with anyio.fail_after(30):
        async with connected(server) as (client, _conn):
            session = client.session
            tools = assert_type(await session.request(ListToolsParams()), ListToolsResult)
            assert [t.name for t in tools.tools] == ["add"]
            called = assert_type(
                await session.request(CallToolParams(name="add", arguments={"a": 2, "b": 3})), CallToolResult
            )
            assert called.text == "5" and not called.is_error
            read = assert_type(await session.request(ReadResourceParams(uri="mem://greeting")), ReadResourceResult)
            assert [c.text for c in read.contents] == ["hello"]
            assert_type(await session.request(PingParams()), EmptyResult)
            # The string forms keep working beside the typed one.
            listed = assert_type(await session.request("tools/list", result_type=ListToolsResult), ListToolsResult)
            assert listed == tools
            assert_type(await session.request("ping"), msgspec.Raw)


async def test_a_params_object_with_a_method_string_or_result_type_is_refused() -> None:
    a, _b = memory_pair()
    session = Session(a, _NoHandlers())
    with anyio.fail_after(30), pytest.raises(TypeError, match="pass it alone"):
        await session.request(ListToolsParams(), result_type=ListToolsResult)  # type: ignore[call-overload]


def test_mypy_infers_the_result_type_from_the_params(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The static half: mypy --strict infers each result, and flags a wrong expectation."""
    from mypy import api

    snippet = tmp_path / "typed_snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from typing import assert_type

            from minimcp.core.session import Session
            from minimcp.wire.types import CallToolParams, CallToolResult, ListToolsParams, ListToolsResult


            async def typed(session: Session) -> None:
                assert_type(await session.request(ListToolsParams()), ListToolsResult)
                assert_type(await session.request(CallToolParams(name="x")), CallToolResult)
                assert_type(await session.request("tools/list", result_type=ListToolsResult), ListToolsResult)
                assert_type(await session.request(ListToolsParams()), CallToolResult)  # the one error
            """
        )
    )
    root = pathlib.Path(minimcp.__file__).resolve().parent.parent
    monkeypatch.setenv("MYPYPATH", str(root))
    out, err, status = api.run(["--strict", "--cache-dir", str(root / ".mypy_cache"), str(snippet)])
    errors_found = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, (out, err)
    assert len(errors_found) == 1, out
    assert "typed_snippet.py:12:" in errors_found[0] and "assert-type" in errors_found[0], out
