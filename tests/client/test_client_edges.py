"""The client API's edges: ``era`` choices, results without the msgspec sentinel, a refused
answer that names its field, capabilities per negotiated revision, and outbound ids from 1."""

from __future__ import annotations

import contextlib
import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Client, Context, ElicitationRequest, McpError, Server, connect_stdio
from minimcp.client.client import ERAS
from minimcp.transports.memory import memory_pair
from minimcp.wire.types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Implementation,
    InitializeResult,
    Prompt,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolAnnotations,
)
from minimcp.wire.versions import Era
from tests.helpers import RawPeer, connected, raw_client

# --- 1. era ------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["handshake", "Legacy", "", None, 2026])
def test_an_unknown_era_is_refused_naming_the_choices(era: Any) -> None:
    with pytest.raises(ValueError) as caught:
        Client(memory_pair()[0], era=era)
    text = str(caught.value)
    assert repr(era) in text
    for choice in ("'legacy'", "'modern'", "'auto'"):
        assert choice in text
    assert "default 'legacy'" in text


async def test_connect_stdio_refuses_an_unknown_era_before_spawning(tmp_path: Any) -> None:
    marker = tmp_path / "spawned"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    with pytest.raises(ValueError, match="unknown era 'handshake'"):
        async with connect_stdio(command, era="handshake"):
            pass  # pragma: no cover
    assert not marker.exists()


def test_the_readme_names_the_default_era_and_the_choices() -> None:
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert ERAS[0] == "legacy"
    sentence = next(part for part in readme.split(". ") if "`era`" in part)
    for era in ERAS:
        assert f'`"{era}"`' in sentence
    assert '`"legacy"` (the default' in sentence


def test_the_known_eras_are_accepted() -> None:
    for era in ("legacy", "modern", "auto"):
        assert Client(memory_pair()[0], era=era).requested_era == era


def test_the_era_asked_for_is_kept_as_an_era() -> None:
    """A string era is turned into :class:`Era` at once (``"auto"`` stays the probe's marker)."""
    for era in ("legacy", "modern", Era.LEGACY, Era.MODERN):
        requested = Client(memory_pair()[0], era=era).requested_era
        assert type(requested) is Era and requested == era
    assert Client(memory_pair()[0], era="auto").requested_era == "auto"


# --- 2. results say None / False, not UNSET ----------------------------------------------------------


def _unset_paths(value: Any, path: str = "result") -> list[str]:
    """Every place in ``value`` that holds the msgspec sentinel."""
    if value is msgspec.UNSET:
        return [path]
    found: list[str] = []
    if isinstance(value, msgspec.Struct):
        for field in value.__struct_fields__:
            found += _unset_paths(getattr(value, field), f"{path}.{field}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += _unset_paths(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _unset_paths(item, f"{path}[{key!r}]")
    return found


def feature_server() -> Server:
    app = Server("edges", "1.0.0")

    @app.tool()
    async def plain(x: int) -> str:
        return str(x)

    @app.tool()
    async def linked() -> list[Any]:
        return [TextContent(text="see"), ResourceLink(uri="test://r", name="r")]

    @app.resource("test://r", name="r")
    async def read_r() -> str:
        return "r"

    @app.resource_template("test://t/{id}", name="t")
    async def read_t(id: str) -> str:
        return id

    @app.prompt()
    async def hello() -> str:
        return "hello"

    @app.completion
    async def complete(ref: dict[str, Any], name: str, value: str, context: dict[str, str]) -> list[str]:
        return ["a"]

    return app


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_results_hold_none_and_false_where_the_wire_has_nothing(era: str) -> None:
    async with connected(feature_server(), era=era) as (client, _):
        result = await client.call_tool("plain", {"x": 1})
        assert result.structured_content is None
        assert result.is_error is False
        assert result.meta is None or era == "modern"
        assert "UNSET" not in repr(result)
        bad = await client.call_tool("plain", {"x": "not a number"})
        assert bad.is_error is True and bad.structured_content is None
        linked = await client.call_tool("linked")
        tools = await client.list_tools()
        assert all(t.title is None and t.annotations is None and t.output_schema is None for t in tools)
        resources = await client.list_resources()
        assert resources[0].mime_type is None and resources[0].title is None
        templates = await client.list_resource_templates()
        (contents,) = await client.read_resource("test://r")
        assert contents.blob is None and contents.mime_type is None
        prompts = await client.list_prompts()
        assert prompts[0].arguments is None
        prompt = await client.get_prompt("hello")
        completion = await client.complete({"type": "ref/prompt", "name": "hello"}, "x", "")
        assert completion.has_more is False and completion.total == 1
        for name, value in {
            "call_tool": result,
            "call_tool error": bad,
            "call_tool link": linked,
            "list_tools": tools,
            "list_resources": resources,
            "list_resource_templates": templates,
            "read_resource": contents,
            "list_prompts": prompts,
            "get_prompt": prompt,
            "complete": completion,
            "server_info": client.server_info,
        }.items():
            assert _unset_paths(value, name) == []


def test_the_wire_still_omits_what_is_absent() -> None:
    encode = msgspec.json.encode
    assert encode(CallToolResult(content=[TextContent(text="x")])) == b'{"content":[{"type":"text","text":"x"}]}'
    assert encode(CallToolResult(content=[], is_error=True)) == b'{"content":[],"isError":true}'
    assert encode(CallToolResult(content=[], structured_content={})) == b'{"content":[],"structuredContent":{}}'
    assert encode(Tool(name="t", input_schema={})) == b'{"name":"t","inputSchema":{}}'
    assert encode(ToolAnnotations(read_only_hint=False)) == b'{"readOnlyHint":false}'
    assert encode(Resource(uri="u", name="n")) == b'{"uri":"u","name":"n"}'
    assert encode(ResourceTemplate(uri_template="u", name="n")) == b'{"uriTemplate":"u","name":"n"}'
    assert encode(ResourceContents(uri="u", text="")) == b'{"uri":"u","text":""}'
    assert encode(ResourceLink(uri="u", name="n")) == b'{"type":"resource_link","uri":"u","name":"n"}'
    assert encode(Prompt(name="p")) == b'{"name":"p"}'
    assert encode(GetPromptResult(messages=[])) == b'{"messages":[]}'
    assert encode(Completion(values=[], has_more=False)) == b'{"values":[],"hasMore":false}'
    assert encode(Implementation(name="n", version="1")) == b'{"name":"n","version":"1"}'
    init = InitializeResult(protocol_version="v", capabilities=ServerCapabilities(), server_info=Implementation(
        name="n", version="1"
    ))
    assert encode(init) == b'{"protocolVersion":"v","capabilities":{},"serverInfo":{"name":"n","version":"1"}}'
    decoded_init = msgspec.json.decode(encode(init), type=InitializeResult)
    assert decoded_init.instructions is None and decoded_init.server_info.title is None
    assert _unset_paths(decoded_init.server_info) == []
    # A peer's explicit false decodes to False; absent decodes to None / False.
    decoded = msgspec.json.decode(b'{"content":[],"isError":false}', type=CallToolResult)
    assert decoded.is_error is False and decoded.structured_content is None and decoded.meta is None


async def test_a_tool_result_on_the_wire_carries_no_absent_fields() -> None:
    async with raw_client(feature_server()) as (peer, _):
        await peer.initialize()
        reply = await peer.request(1, "tools/call", {"name": "plain", "arguments": {"x": 2}})
        assert reply["result"] == {"content": [{"type": "text", "text": "2"}]}
        listed = await peer.request(2, "tools/list")
        plain = next(t for t in listed["result"]["tools"] if t["name"] == "plain")
        assert set(plain) == {"name", "inputSchema"}


# --- 4. a refused answer names its field ------------------------------------------------------------


class Party(msgspec.Struct):
    party_size: Annotated[int, msgspec.Meta(ge=1, le=20)]


def party_server() -> Server:
    app = Server("party", "1.0.0")

    @app.tool()
    async def ask_party(ctx: Context) -> str:
        answer = await ctx.elicit("How many?", Party)
        return repr(answer)

    return app


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_handler_answer_the_client_refuses_names_the_field(era: str) -> None:
    async def handler(question: ElicitationRequest) -> Accepted[dict[str, Any]]:
        return Accepted({"party_size": 0})

    async with connected(party_server(), elicitation_handler=handler, era=era) as (client, _):
        with anyio.fail_after(30):
            try:
                result = await client.call_tool("ask_party")
            except McpError as exc:  # the client's error passed on as the call's error
                assert "party_size" in exc.message and ">= 1" in exc.message
                assert exc.data == {"field": "party_size", "constraint": "minimum"}
            else:  # or a tool error quoting the client's (perhaps shortened) message
                assert result.is_error, result
                assert "party_size" in result.text


# --- 5. capabilities and answers follow the negotiated revision -----------------------------------


async def _ask(_: ElicitationRequest) -> Accepted[dict[str, Any]]:
    raise AssertionError("the handler must not be asked")  # pragma: no cover


async def _consent(_: Any) -> Accepted[Any]:
    raise AssertionError("the URL handler must not be asked")  # pragma: no cover


@contextlib.asynccontextmanager
async def raw_server(negotiated: str, **options: Any) -> AsyncIterator[tuple[RawPeer, Client, dict[str, Any]]]:
    """A client connected to a hand-driven server that answers ``initialize`` with ``negotiated``."""
    ours, theirs = memory_pair()
    peer = RawPeer(theirs)
    seen: dict[str, Any] = {}
    done = anyio.Event()

    async def handshake() -> None:
        init = await peer.recv(30)
        seen["initialize"] = init
        result = {"protocolVersion": negotiated, "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": result})
        seen["initialized"] = await peer.recv(30)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(handshake)
        with anyio.fail_after(30):
            async with Client(ours, **options) as client:
                await done.wait()
                yield peer, client, seen
        tg.cancel_scope.cancel()


ELICIT = {"message": "m", "requestedSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2024-11-05", None),
        ("2025-03-26", None),
        ("2025-06-18", {"form": {}}),
        ("2025-11-25", {"form": {}, "url": {}}),
    ],
)
async def test_elicitation_is_declared_only_where_the_offered_revision_has_it(
    version: str, expected: dict[str, Any] | None
) -> None:
    async with raw_server(version, protocol_version=version, elicitation_handler=_ask, url_handler=_consent) as (
        _,
        client,
        seen,
    ):
        declared = seen["initialize"]["params"]["capabilities"]
        assert declared.get("elicitation") == expected
        assert msgspec.to_builtins(client.capabilities()).get("elicitation") == expected


async def test_a_url_handler_alone_declares_nothing_on_2025_06_18() -> None:
    async with raw_server("2025-06-18", protocol_version="2025-06-18", url_handler=_consent) as (_, _client, seen):
        assert "elicitation" not in seen["initialize"]["params"]["capabilities"]


@pytest.mark.parametrize("offered", ["2025-03-26", "2025-11-25"])
async def test_elicitation_create_on_a_revision_without_it_is_method_not_found(offered: str) -> None:
    # Offered 2025-11-25 (declared) but negotiated down to 2025-03-26: still not answered.
    async with raw_server("2025-03-26", protocol_version=offered, elicitation_handler=_ask) as (peer, _, _seen):
        reply = await peer.request(5, "elicitation/create", ELICIT)
        assert reply["id"] == 5
        assert reply["error"]["code"] == -32601
        assert "2025-03-26" in reply["error"]["message"]
        # The session keeps working.
        pong = await peer.request(6, "ping", {})
        assert pong == {"jsonrpc": "2.0", "id": 6, "result": {}}


async def test_url_mode_on_2025_06_18_is_refused_without_asking() -> None:
    params = {"mode": "url", "message": "pay", "url": "https://example.com/pay", "elicitationId": "e1"}
    async with raw_server(
        "2025-06-18", protocol_version="2025-11-25", elicitation_handler=_ask, url_handler=_consent
    ) as (peer, _, _seen):
        reply = await peer.request(5, "elicitation/create", params)
        assert reply["error"]["code"] == -32602
        assert "URL-mode" in reply["error"]["message"]


# --- 6. outbound ids start at 1 -----------------------------------------------------------------------


async def test_the_first_server_to_client_request_has_id_1_and_so_does_its_cancellation() -> None:
    app = Server("ids", "1.0.0")

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, timeout=0.5)
        return repr(answer)

    async with raw_client(app) as (peer, _):
        await peer.initialize(capabilities={"elicitation": {}})
        await peer.send({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": "ask"}})
        question = await peer.recv(30)
        assert question["method"] == "elicitation/create"
        assert question["id"] == 1
        # Left unanswered: the server gives up and says so, naming id 1 (truthy for every host).
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(30):
            while not any(m.get("id") == 0 for m in seen):
                seen.append(await peer.recv(30))
        (cancelled,) = [m for m in seen if m.get("method") == "notifications/cancelled"]
        assert cancelled["params"]["requestId"] == 1


async def test_the_first_client_request_has_id_1() -> None:
    async with raw_server("2025-11-25") as (peer, client, seen):
        assert seen["initialize"]["method"] == "initialize"
        assert seen["initialize"]["id"] == 1
        assert seen["initialized"]["method"] == "notifications/initialized"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.ping)
            ping = await peer.recv(30)
            assert ping["method"] == "ping" and ping["id"] == 2
            await peer.send({"jsonrpc": "2.0", "id": 2, "result": {}})


async def test_the_first_modern_request_has_id_1() -> None:
    ours, theirs = memory_pair()
    peer = RawPeer(theirs)
    async with Client(ours, era="modern") as client, anyio.create_task_group() as tg:
        tg.start_soon(client.list_tools)
        call = await peer.recv(30)
        assert call["method"] == "tools/list" and call["id"] == 1
        await peer.send({"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "resultType": "complete"}})


def test_the_readme_client_snippet_prints_no_sentinel() -> None:
    import subprocess

    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in readme.split("```python\n")[1:] if "connect_stdio(" in b.split("```")[0]]
    assert blocks, "the README has no client snippet"
    snippet = blocks[0].split("```")[0]
    assert "structured_content" in snippet
    done = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=root, check=True
    )
    assert "booked" in done.stdout
    assert "UNSET" not in done.stdout


TS_HOST = pathlib.Path(__file__).resolve().parents[1] / "peers" / "npm" / "ts_cancelled_question.mjs"
ASKING_SERVER = """
import sys, anyio
from minimcp import Context, Server

app = Server("ids", "1.0.0")

@app.tool()
async def ask(ctx: Context) -> str:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    return repr(await ctx.elicit("ok?", schema, timeout=1.0))

anyio.run(app.serve_stdio, backend=sys.argv[1])
"""


def test_a_typescript_host_hears_the_cancellation_of_the_first_question(anyio_backend: str, tmp_path: Any) -> None:
    # The TypeScript SDK ignores notifications/cancelled for a falsy requestId: with ids from 0, the
    # host of the session's first question would keep showing it after the server gave up.
    import json
    import os
    import subprocess

    from tests.helpers.npm_peer import everything_command, node_and_npm

    everything_command()  # installs the pinned npm peers (the SDK comes with them) on first use
    node, _ = node_and_npm()
    server = tmp_path / "asking_server.py"
    server.write_text(ASKING_SERVER, encoding="utf-8")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [str(node), str(TS_HOST), sys.executable, str(server), anyio_backend],
        capture_output=True, text=True, timeout=120, cwd=root, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["aborted"] == report["asked"], f"the host did not hear that the server gave up: {report}"
    assert report["asked"] == [1]
    assert "Cancelled" in report["result"]["content"][0]["text"]
