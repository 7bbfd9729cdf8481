"""minimcp.wire.mrtr: the pure half of revision 2026-07-28 (the request envelope, result shape, questions and answers).

The runs and their parking (minimcp.server.mrtr.run) are tested through the wire
in test_modern.py and test_http_modern.py.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from minimcp.wire.era_probe import META_VERSION, has_envelope
from minimcp.wire.errors import INVALID_PARAMS, McpError
from minimcp.wire.mrtr import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    UNSUPPORTED_VERSION,
    Envelope,
    Question,
    clean_answer,
    complete,
    read_envelope,
    required_capability,
    take_answer,
)
from minimcp.wire.types import ClientCapabilities, ElicitResult, Implementation, ListToolsResult

META = {META_VERSION: "2026-07-28", META_CAPABILITIES: {"elicitation": {}}}
FORM = Question.create(
    "elicitation/create",
    {"message": "When?", "requestedSchema": {"type": "object", "properties": {"date": {"type": "string"}}}},
)


def raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(json.dumps(value).encode())


def test_has_envelope() -> None:
    assert has_envelope(raw({"name": "t", "_meta": META}))
    assert not has_envelope(raw({"name": "t"}))
    assert not has_envelope(raw({"name": META_VERSION}))  # the key's text elsewhere is not an envelope
    assert not has_envelope(raw({"_meta": "x", "n": META_VERSION}))
    assert not has_envelope(msgspec.Raw(b""))
    assert not has_envelope(msgspec.Raw(b"[1]"))


def test_read_envelope() -> None:
    meta = {**META, META_CLIENT_INFO: {"name": "c", "version": "1"}, META_LOG_LEVEL: "info"}
    assert read_envelope(raw({"_meta": meta})) == Envelope(
        "2026-07-28", ClientCapabilities(elicitation={}), Implementation(name="c", version="1"), "info"
    )
    bare = read_envelope(raw({"_meta": META}))
    assert (bare.client_info, bare.log_level) == (None, None)


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({}, "params._meta is required"),
        ({"_meta": []}, "params._meta is required"),
        ({"_meta": {META_CAPABILITIES: {}}}, f"missing {META_VERSION!r}"),
        ({"_meta": {META_VERSION: "2026-07-28"}}, f"missing {META_CAPABILITIES!r}"),
        ({"_meta": {**META, META_CAPABILITIES: []}}, "invalid params._meta"),
        ({"_meta": {**META, META_CLIENT_INFO: {"name": 1}}}, "invalid params._meta"),
        ({"_meta": {**META, META_LOG_LEVEL: "loud"}}, "unknown log level 'loud'"),
    ],
)
def test_a_bad_envelope_is_invalid_params(params: dict[str, Any], problem: str) -> None:
    with pytest.raises(McpError) as info:
        read_envelope(raw(params))
    assert info.value.code == INVALID_PARAMS
    assert problem in info.value.message


def test_an_unknown_revision_says_which_are_supported() -> None:
    with pytest.raises(McpError) as info:
        read_envelope(raw({"_meta": {**META, META_VERSION: "2025-11-25"}}))
    assert info.value.code == UNSUPPORTED_VERSION == -32022
    assert info.value.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


def test_complete_adds_the_result_type_and_server_info() -> None:
    info = Implementation(name="s", version="1")
    data = complete(ListToolsResult(tools=[]), info)
    assert data["resultType"] == "complete" and data["tools"] == []
    assert data["_meta"] == {META_SERVER_INFO: {"name": "s", "version": "1"}}
    assert "ttlMs" not in data
    cached = complete({"x": 1, "_meta": {"k": "v"}}, info, cacheable=True)
    assert cached["_meta"]["k"] == "v" and META_SERVER_INFO in cached["_meta"]
    assert (cached["ttlMs"], cached["cacheScope"]) == (0, "private")
    assert complete({"resultType": "incomplete"}, info)["resultType"] == "incomplete"


def test_a_question_is_named_by_its_digest() -> None:
    again = Question.create("elicitation/create", dict(FORM.params))
    other = Question.create("elicitation/create", {**FORM.params, "message": "Where?"})
    assert FORM.digest == again.digest != other.digest
    assert FORM.to_wire() == {"method": "elicitation/create", "params": FORM.params}
    assert Question.create("roots/list", msgspec.UNSET, key="r").params == {}


def test_a_form_answer_keeps_only_the_form_fields() -> None:
    answer = {"action": "accept", "content": {"date": "2025-12-24", "padding": "x" * 100}, "_meta": {"k": 1}}
    assert clean_answer(FORM, answer) == {"action": "accept", "content": {"date": "2025-12-24"}}
    assert clean_answer(FORM, {"action": "decline"}) == {"action": "decline"}
    assert clean_answer(FORM, {"action": "maybe"}) is None
    assert clean_answer(FORM, "yes") is None


def test_sampling_and_roots_answers_lose_their_extras() -> None:
    sampling = Question.create("sampling/createMessage", {"messages": [], "maxTokens": 5})
    answer = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi", "_meta": {}}, "_meta": {}}
    kept = clean_answer(sampling, answer)
    assert kept is not None and "_meta" not in kept and "_meta" not in kept["content"]
    assert kept["content"]["text"] == "hi"
    roots = Question.create("roots/list", msgspec.UNSET)
    given = {"roots": [{"uri": "file:///a", "name": "a", "_meta": {}}, {"uri": "file:///b"}]}
    assert clean_answer(roots, given) == {"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}
    assert clean_answer(Question.create("ping", {}), {}) is None  # a method without answers to keep


def test_take_answer_records_nothing_of_an_unusable_answer() -> None:
    given, recorded = take_answer(FORM, {"action": "decline"})  # (the tool may get it as an ElicitResult)
    assert msgspec.convert(given, ElicitResult) == ElicitResult(action="decline") and recorded == {"action": "decline"}
    given, recorded = take_answer(FORM, 42)
    assert given == 42 and recorded == {}


def test_required_capability() -> None:
    assert required_capability("url") == {"elicitation": {"url": {}}}
    assert required_capability("form") == {"elicitation": {"form": {}}}
    assert required_capability("sampling") == {"sampling": {}}
