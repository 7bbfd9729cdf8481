"""minimcp.wire.types: MCP messages as Structs, and their exact wire shape (camelCase, ``_meta``, absent vs null)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from minimcp.wire.types import (
    UNSET,
    AudioContent,
    CallToolParams,
    CallToolResult,
    ClientCapabilities,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    Implementation,
    InitializeResult,
    ResourceContents,
    ResourceLink,
    ServerCapabilities,
    TextContent,
    Tool,
)


def wire(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


def test_names_are_camel_case_and_meta_is_spelled_as_the_spec_does() -> None:
    params = CallToolParams(name="t", arguments={"a": 1}, meta={"progressToken": 1}, request_state="s")
    assert wire(params) == {"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 1}, "requestState": "s"}
    tool = Tool(name="t", input_schema={"type": "object"}, output_schema={"type": "object"})
    assert wire(tool) == {"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}


def test_fields_left_unset_or_at_their_default_are_not_sent() -> None:
    assert wire(CallToolParams(name="t")) == {"name": "t"}
    assert wire(CallToolResult(content=[])) == {"content": []}  # isError false is the default: omitted
    assert wire(CallToolResult(content=[], is_error=True)) == {"content": [], "isError": True}
    assert wire(Implementation(name="n", version="1")) == {"name": "n", "version": "1"}


def test_absent_and_empty_capabilities_differ() -> None:
    """``elicitation: {}`` declares support; no ``elicitation`` key does not."""
    absent = msgspec.json.decode(b"{}", type=ClientCapabilities)
    empty = msgspec.json.decode(b'{"elicitation":{}}', type=ClientCapabilities)
    assert absent.elicitation is UNSET and empty.elicitation == {}
    assert wire(empty) == {"elicitation": {}}
    assert wire(ServerCapabilities()) == {}


def test_content_blocks_are_told_apart_by_their_type() -> None:
    blocks = [
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "x://1", "name": "one"},
        {"type": "resource", "resource": {"uri": "x://2", "text": "t"}},
    ]
    result = msgspec.json.decode(msgspec.json.encode({"content": blocks}), type=CallToolResult)
    kinds = [TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]
    assert [type(b) for b in result.content] == kinds
    assert result.content[4] == EmbeddedResource(resource=ResourceContents(uri="x://2", text="t"))
    assert wire(result) == {"content": blocks}
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"content":[{"type":"video","data":""}]}', type=CallToolResult)


def test_unknown_fields_from_a_newer_peer_are_ignored() -> None:
    data = b'{"protocolVersion":"2025-11-25","capabilities":{"future":{}},"serverInfo":{"name":"s","version":"1"}'
    data += b',"x":1}'
    result = msgspec.json.decode(data, type=InitializeResult)
    assert result.protocol_version == "2025-11-25" and result.server_info.name == "s"


def test_required_fields_and_literal_values_are_checked() -> None:
    with pytest.raises(msgspec.ValidationError, match="name"):
        msgspec.json.decode(b'{"arguments":{}}', type=CallToolParams)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"action":"maybe"}', type=ElicitResult)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"message":"m","mode":"voice"}', type=ElicitRequestParams)


def test_a_tool_result_text_joins_its_text_blocks() -> None:
    result = CallToolResult(
        content=[TextContent(text="a"), ImageContent(data="", mime_type="image/png"), TextContent(text="b")]
    )
    assert result.text == "a\nb"
    assert CallToolResult(content=[]).text == ""


def test_url_mode_elicitation_params() -> None:
    params = ElicitRequestParams(message="Pay", mode="url", elicitation_id="e1", url="https://pay.example/x")
    assert wire(params) == {"message": "Pay", "mode": "url", "elicitationId": "e1", "url": "https://pay.example/x"}
