"""A Context in resource readers and the completion handler (issue 29): ``ctx.auth`` says who asks, on both eras.

A reader (fixed or templated) or the completion handler declares a ``Context`` parameter as a tool
does; it gets an :class:`~minimcp.server.context.AnswerContext`: who is calling, what they declared,
progress and logs, but no questions (every way of asking raises ``RuntimeError``: the client gets
``-32603``). Without such a parameter no context is made. Here the connection's principal stands for
what a transport that checks tokens sets (over HTTP: ``tests/transports/http/test_auth_context.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from minimcp import Context, Server
from minimcp.auth.principal import Principal
from minimcp.server import handlers
from minimcp.server.context import AnswerContext
from minimcp.wire import errors
from tests.helpers import RawPeer, raw_client
from tests.helpers.auth_tokens import person
from tests.helpers.modern import complete, error_of, modern_peer

ALICE = person("alice", "bookings:read")
BOB = person("bob", "bookings:read", "bookings:write")
ASKS = ["elicit", "elicit_url", "url_elicitation", "sample", "list_roots", "gather"]


def who(ctx: Context) -> str:
    principal = ctx.auth
    return "nobody" if principal is None else f"{principal.subject} {' '.join(sorted(principal.scopes))}"


async def ask(ctx: Context, how: str) -> Any:
    """Ask the client something, ``how`` (one of :data:`ASKS`)."""
    if how == "elicit":
        return await ctx.elicit("Your name?", {"type": "object", "properties": {"n": {"type": "string"}}})
    if how == "elicit_url":
        return await ctx.elicit_url("Pay", "https://pay.example/d")
    if how == "url_elicitation":
        return ctx.url_elicitation("Pay", "https://pay.example/d")
    if how == "sample":
        return await ctx.sample("hi", max_tokens=5)
    if how == "list_roots":
        return await ctx.list_roots()
    return await ctx.gather()


def make_server(refused: list[str]) -> Server:
    """Readers and a completion handler that say who asks; ``ask://{how}`` asks the client ``how`` (and records
    the refusal's message in ``refused``)."""
    server = Server("answers")

    @server.resource("who://me")
    async def me(ctx: Context) -> str:
        return f"{who(ctx)} | {ctx.tool} | {'modern' if ctx.modern else 'handshake'}"

    @server.resource_template("who://{name}/card", mime_type="text/plain")
    async def card(name: str, ctx: Context) -> str:
        return f"{name}: {who(ctx)}"

    @server.resource_template("ask://{how}")
    async def asking(how: str, ctx: Context) -> str:
        assert not ctx.can_elicit_form() and not ctx.can_elicit_url()
        try:
            await ask(ctx, how)
        except RuntimeError as exc:
            refused.append(str(exc))
            raise
        return "asked"

    @server.resource("plain://r")
    async def plain() -> str:
        return "plain"

    @server.prompt()
    async def greet(ctx: Context) -> str:
        return f"hello {who(ctx)}"

    @server.completion
    async def suggest(ref: dict[str, Any], name: str, value: str, other: dict[str, str], *, ctx: Context) -> list[str]:
        if value.startswith("ask:"):
            try:
                await ask(ctx, value[4:])
            except RuntimeError as exc:
                refused.append(str(exc))
                raise
        return [who(ctx), ref.get("name", ""), name, value]

    return server


def read(uri: str) -> dict[str, Any]:
    return {"uri": uri}


def completion(value: str = "a") -> dict[str, Any]:
    return {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "x", "value": value}}


def text(result: dict[str, Any]) -> str:
    return str(result["contents"][0]["text"])


async def handshake(peer: RawPeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = await peer.request(7, method, params)
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


@pytest.mark.parametrize("principal", [ALICE, None], ids=["alice", "no-auth"])
async def test_readers_and_the_completion_handler_see_the_connections_principal(principal: Principal | None) -> None:
    expected = "alice bookings:read" if principal is not None else "nobody"
    async with raw_client(make_server([])) as (peer, conn):
        conn.principal = principal
        await peer.initialize()
        assert text(await handshake(peer, "resources/read", read("who://me"))) == f"{expected} | me | handshake"
        card = await handshake(peer, "resources/read", read("who://ann/card"))
        assert card["contents"] == [{"uri": "who://ann/card", "mimeType": "text/plain", "text": f"ann: {expected}"}]
        values = (await handshake(peer, "completion/complete", completion("b")))["completion"]["values"]
        assert values == [expected, "greet", "x", "b"]
        prompt = await handshake(peer, "prompts/get", {"name": "greet"})
        assert prompt["messages"][0]["content"]["text"] == f"hello {expected}"


@pytest.mark.parametrize("principal", [BOB, None], ids=["bob", "no-auth"])
async def test_on_2026_07_28_they_see_the_requests_principal(principal: Principal | None) -> None:
    expected = "bob bookings:read bookings:write" if principal is not None else "nobody"
    async with modern_peer(make_server([])) as (client, conn):
        conn.principal = principal  # (over HTTP, each request's own: see test_auth_context.py)
        assert text(complete(await client.request("resources/read", read("who://me")))) == f"{expected} | me | modern"
        card = complete(await client.request("resources/read", read("who://bo/card")))
        assert text(card) == f"bo: {expected}"
        values = complete(await client.request("completion/complete", completion()))["completion"]["values"]
        assert values == [expected, "greet", "x", "a"]
        prompt = complete(await client.request("prompts/get", {"name": "greet"}))
        assert prompt["messages"][0]["content"]["text"] == f"hello {expected}"


@pytest.mark.parametrize("how", ASKS)
async def test_asking_from_a_reader_or_a_completion_is_a_clear_error_on_the_handshake_era(how: str) -> None:
    refused: list[str] = []
    async with raw_client(make_server(refused)) as (peer, conn):
        conn.principal = ALICE
        caps: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
        await peer.initialize(capabilities=caps)  # the client could answer: the reader still may not ask
        reply = await peer.request(1, "resources/read", read(f"ask://{how}"))
        assert reply["error"] == {"code": errors.INTERNAL_ERROR, "message": "internal error"}
        reply = await peer.request(2, "completion/complete", completion(f"ask:{how}"))
        assert reply["error"]["code"] == errors.INTERNAL_ERROR
        assert await peer.nothing_for(0.1)  # nothing was sent to the client: no question, no notice
        assert conn.url_elicitations == set()
    assert len(refused) == 2
    for message in refused:
        assert message.startswith(f"ctx.{how}(): a resource reader or a completion handler cannot ask")
        assert "ask from a tool" in message


@pytest.mark.parametrize("how", ["elicit", "sample", "gather"])
async def test_asking_from_a_reader_or_a_completion_is_a_clear_error_on_2026_07_28(how: str) -> None:
    refused: list[str] = []
    async with modern_peer(make_server(refused)) as (client, _conn):
        reply = await client.request("resources/read", read(f"ask://{how}"))
        error_of(reply, errors.INTERNAL_ERROR)  # not an input_required round: a read has none
        error_of(await client.request("completion/complete", completion(f"ask:{how}")), errors.INTERNAL_ERROR)
    assert [m.split("(")[0] for m in refused] == [f"ctx.{how}", f"ctx.{how}"]


async def test_without_a_context_parameter_no_context_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[AnswerContext] = []

    class Counted(AnswerContext):
        __slots__ = ()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(handlers, "AnswerContext", Counted)
    server = Server("plain")

    @server.resource("plain://r")
    async def plain() -> str:
        return "plain"

    @server.resource_template("plain://{x}/t")
    async def templated(x: str) -> str:
        return x

    @server.completion
    async def suggest(ref: dict[str, Any], name: str, value: str, other: dict[str, str]) -> list[str]:
        return [value]

    @server.resource("who://me")
    async def me(ctx: Context) -> str:
        return who(ctx)

    async with raw_client(server) as (peer, _conn):
        await peer.initialize()
        assert text(await handshake(peer, "resources/read", read("plain://r"))) == "plain"
        assert text(await handshake(peer, "resources/read", read("plain://y/t"))) == "y"
        assert (await handshake(peer, "completion/complete", completion("v")))["completion"]["values"] == ["v"]
        assert made == []
        assert text(await handshake(peer, "resources/read", read("who://me"))) == "nobody"
        assert len(made) == 1 and made[0].finished  # made for the reader that takes one, finished after it


def test_a_context_parameter_is_found_by_its_annotation_and_is_no_template_variable() -> None:
    server = Server("shapes")

    @server.resource_template("t://{a}/{b}")
    async def both(b: str, context: Context, a: str) -> str:
        return a + b

    @server.completion
    async def suggest(ref: dict[str, Any], name: str, value: str, other: dict[str, str], c: Context) -> list[str]:
        return []

    template = server.registry.templates[0]
    assert template.context_param == "context" and template.template.names == ("a", "b")
    assert server.registry.completion_context == "c"
    assert server.registry.resources == {}

    @server.resource("r://plain")
    async def plain(context: str = "") -> str:  # named like one, not annotated as one: an ordinary parameter
        return context

    assert server.registry.resources["r://plain"].context_param is None
    with pytest.raises(TypeError, match=r"'twice' declares more than one Context parameter: 'c1', 'c2'"):

        @server.resource("r://twice")
        async def twice(c1: Context, c2: Context) -> str:
            return ""

    with pytest.raises(TypeError, match=r"'lacking' lacks parameters \['b'\]"):

        @server.resource_template("t://{a}/{b}/more")
        async def lacking(a: str, b: Context) -> str:  # the context is no variable, even named like one
            return a

