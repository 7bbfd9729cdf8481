"""Scopes per tool, prompt and resource: ``scopes=`` on the decorators, ``Server.scopes_needed``, list hiding.

The HTTP side (403 before anything runs, hiding per caller) is tests/transports/http/test_auth.py.
"""

from __future__ import annotations

import msgspec
import pytest

from minimcp import Server
from minimcp.server import handlers
from minimcp.wire.jsonrpc import Request


def raw(params: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(params))


def build() -> Server:
    server = Server("scoped")

    @server.tool(scopes=["write", "pay"])
    async def book() -> str:
        return "ok"

    @server.tool
    async def look() -> str:
        return "ok"

    @server.prompt(scopes=["admin"])
    async def audit() -> str:
        return "audit"

    @server.resource("res://fixed/private", scopes=["fixed"])
    async def fixed() -> str:
        return "fixed"

    @server.resource_template("res://{id}/private", scopes=["template"])
    async def private(id: str) -> str:
        return id

    @server.resource_template("res://{+rest}")
    async def anything(rest: str) -> str:
        return rest

    return server


def test_scopes_needed_names_the_scopes_of_what_a_request_names() -> None:
    server = build()
    assert server.scopes_needed("tools/call", raw({"name": "book", "arguments": {}})) == {"write", "pay"}
    assert server.scopes_needed("tools/call", raw({"name": "look"})) == frozenset()
    assert server.scopes_needed("tools/call", raw({"name": "missing"})) == frozenset()
    assert server.scopes_needed("prompts/get", raw({"name": "audit"})) == {"admin"}
    # a fixed resource wins over a template that also matches (as the read does); else the first template
    assert server.scopes_needed("resources/read", raw({"uri": "res://fixed/private"})) == {"fixed"}
    assert server.scopes_needed("resources/read", raw({"uri": "res://7/private"})) == {"template"}
    assert server.scopes_needed("resources/read", raw({"uri": "res://7/public"})) == frozenset()
    # other methods, absent or undecodable params: no scope (the handler refuses bad params itself)
    assert server.scopes_needed("tools/list", raw({})) == frozenset()
    assert server.scopes_needed("tools/call", msgspec.Raw()) == frozenset()
    assert server.scopes_needed("tools/call", raw({"name": 3})) == frozenset()
    assert server.scopes_needed("tools/call", raw([1])) == frozenset()


def test_a_server_without_scopes_reads_no_params() -> None:
    server = Server("open")

    @server.tool
    async def look() -> str:
        return "ok"

    assert not server.registry.scoped
    assert server.scopes_needed("tools/call", msgspec.Raw(b"not json at all")) == frozenset()


def test_scopes_must_be_a_collection_of_names_not_one_string() -> None:
    server = Server("typo")
    with pytest.raises(TypeError, match="not the string 'write'"):

        @server.tool(scopes="write")
        async def book() -> str:
            return "ok"


async def test_the_lists_leave_out_what_the_allowed_scopes_do_not_cover_and_page_what_is_left() -> None:
    server = build()
    registry = server.registry

    async def names(method: str, allowed: frozenset[str] | None, cursor: str | None = None) -> tuple[list[str], object]:
        params = {} if cursor is None else {"cursor": cursor}
        result = await handlers.LISTS[method](registry, 1, Request(id=1, method=method, params=raw(params)), allowed)
        data = msgspec.to_builtins(result)
        items = next(v for v in data.values() if isinstance(v, list))
        return [item["name"] for item in items], data.get("nextCursor")

    assert await names("tools/list", None) == (["book"], "1")
    assert await names("tools/list", frozenset()) == (["look"], None)
    assert await names("tools/list", frozenset({"write", "pay", "x"})) == (["book"], "1")
    assert await names("prompts/list", frozenset()) == ([], None)
    assert await names("prompts/list", frozenset({"admin"})) == (["audit"], None)
    assert await names("resources/list", frozenset()) == ([], None)
    assert await names("resources/list", frozenset({"fixed"})) == (["fixed"], None)
    assert await names("resources/templates/list", frozenset()) == (["anything"], None)
    assert await names("resources/templates/list", frozenset({"template"})) == (["private"], "1")
    assert await names("resources/templates/list", frozenset({"template"}), "1") == (["anything"], None)
