"""Revision 2026-07-28 ("modern" era) on stdio and memory: the checks of the spec digest §6.

``shared/reference/spec-2026-07-28.md`` §6 lists the testable checks; each test
names the ones it stands for (``#n``). HTTP-only checks (4, 5, 9, 10, 15, 32,
45, 46-HTTP) are out of scope here.

- Server: era routing and the per-request envelope, ``server/discover``, result
  shapes, multi round-trip requests (``input_required`` / ``inputResponses`` /
  sealed ``requestState``), park vs replay, per-request capabilities, the
  booking scenario on this revision (``shared/scenarios/booking.md``, "On
  revision 2026-07-28"), stdio cancellation.
- Client: ``era="modern"`` / ``"auto"`` against our server (memory and stdio)
  and against hand-written fake servers that check the retries byte for byte.
- Interop: the official SDK client pinned to ``2026-07-28``.

"""

from __future__ import annotations

import contextlib
import itertools
import os
import pathlib
import sys
import types
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import msgspec
import pytest

import minimcp.server.mrtr.rounds
import minimcp.server.mrtr.takeover
import minimcp.server.server
from minimcp import (
    Accepted,
    Client,
    Context,
    ElicitationRequest,
    Limits,
    McpError,
    Server,
    connect_stdio,
    memory_pair,
)
from minimcp.server.mrtr.state import StateSealer
from minimcp.transports.memory import MemoryTransport
from minimcp.transports.trace import TracedTransport
from minimcp.wire.types import CreateMessageParams, CreateMessageResult, Root, TextContent
from tests.helpers import RawPeer, connected, raw_client
from tests.helpers.replay_mode import booking_retries  # noqa: F401 - a fixture
from tests.helpers.url_mode import asgi_call

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))


from tests.helpers.modern import (  # noqa: E402
    FORM,
    FORM_URL,
    INVALID_STATE,
    K_CAPS,
    K_INFO,
    K_SERVER,
    K_VERSION,
    KEY,
    NAME_FORM,
    NONE,
    PAGES,
    VALUE_FORM,
    Modern,
    Probe,
    V,
    accept,
    booking_app,
    complete,
    describe,
    error_of,
    input_required,
    make_server,
    meta,
    modern_peer,
    only,
    result_of,
    text_of,
    wait_until,
)

BARE: dict[str, Any] = {"elicitation": {}}
OTHER_KEY = b"o" * 32


# --- helpers -----------------------------------------------------------------------------------


































# === Server: era routing and the envelope ======================================================


async def test_first_request_initialize_is_legacy_with_ping_and_nested_elicitation() -> None:
    """#1: initialize first -> legacy session: ping works, questions are nested requests, 2025 shapes."""
    probe = Probe()
    async with raw_client(make_server(probe)) as (peer, conn):
        init = await peer.initialize(capabilities=FORM)
        assert init["result"]["protocolVersion"] == "2025-11-25"
        assert conn.era == "legacy"
        assert await peer.request("p", "ping") == {"jsonrpc": "2.0", "id": "p", "result": {}}
        listed = result_of(await peer.request(2, "tools/list", {}))
        assert "resultType" not in listed and "ttlMs" not in listed and "cacheScope" not in listed
        assert "_meta" not in listed
        await peer.send(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask_once", "arguments": {}}}
        )
        nested = await peer.recv()
        assert nested["method"] == "elicitation/create" and "id" in nested
        assert nested["params"]["requestedSchema"] == NAME_FORM
        await peer.send({"jsonrpc": "2.0", "id": nested["id"], "result": accept(name="Ada")})
        done = await peer.recv()
        assert done["id"] == 3
        assert "resultType" not in done["result"]
        assert text_of(done["result"]) == "hello Ada"


async def test_first_request_with_envelope_is_modern_and_later_initialize_is_refused() -> None:
    """#2: an enveloped first request locks the connection modern; plain initialize -> -32022 {supported}."""
    async with modern_peer(make_server(Probe())) as (m, conn):
        listed = complete(await m.request("tools/list"))
        assert conn.era == "modern"
        assert "ask_once" in {t["name"] for t in listed["tools"]}
        msg = await m.peer.request(
            "init",
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}},
        )
        assert msg["id"] == "init"
        err = error_of(msg, -32022)
        assert V in err["data"]["supported"]
        assert err["data"]["requested"] == "2025-11-25"
        # The connection stays modern and keeps working.
        complete(await m.request("tools/list"))


async def test_enveloped_request_on_a_legacy_connection_is_refused() -> None:
    """#3: enveloped request on a legacy-locked connection -> -32600 (and the session goes on)."""
    async with raw_client(make_server(Probe())) as (peer, _):
        await peer.initialize()
        msg = await peer.request(7, "tools/list", {"_meta": meta()})
        assert msg["id"] == 7
        error_of(msg, -32600)
        assert "tools" in result_of(await peer.request(8, "tools/list", {}))


@pytest.mark.parametrize("missing", ["_meta", "protocolVersion", "clientCapabilities"])
async def test_missing_envelope_keys_are_invalid_params_keeping_the_id(missing: str) -> None:
    """#6: on a modern connection, a request without _meta / version / capabilities -> -32602, same id."""
    async with modern_peer(make_server(Probe())) as (m, _):
        complete(await m.request("tools/list"))  # lock the era
        params: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta()}
        if missing == "_meta":
            del params["_meta"]
        else:
            del params["_meta"][K_VERSION if missing == "protocolVersion" else K_CAPS]
        msg = await m.peer.request("req-42", "tools/call", params)
        assert msg["id"] == "req-42"
        err = error_of(msg, -32602)
        if missing != "_meta":
            assert missing in err["message"]


async def test_first_request_missing_capabilities_routes_modern_and_is_invalid_params() -> None:
    """#6: the version key alone routes modern; the half-built envelope is -32602 naming the missing key."""
    async with raw_client(make_server(Probe())) as (peer, conn):
        msg = await peer.request(11, "tools/list", {"_meta": {K_VERSION: V}})
        assert msg["id"] == 11
        assert "clientCapabilities" in error_of(msg, -32602)["message"]
        assert conn.era == "modern"


async def test_unsupported_version_is_32022_with_supported_and_requested() -> None:
    """#8: protocolVersion 1900-01-01 -> -32022 {supported:[...2026-07-28...], requested}."""
    async with modern_peer(make_server(Probe())) as (m, _):
        msg = await m.request("tools/list", version="1900-01-01")
        err = error_of(msg, -32022)
        assert err["data"]["requested"] == "1900-01-01"
        assert V in err["data"]["supported"]
        assert msg["id"] == m.ids


async def test_client_info_is_optional() -> None:
    """#7: _meta without clientInfo is served normally."""
    async with modern_peer(make_server(Probe())) as (m, _):
        result = complete(await m.call("add", {"a": 2, "b": 3}, client=None))
        assert text_of(result) == "5"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("ping", {}),
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "mem://greeting"}),
        ("resources/unsubscribe", {"uri": "mem://greeting"}),
        ("initialize", {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
        ("no/such/method", {}),
    ],
)
async def test_removed_and_unknown_methods_are_method_not_found(method: str, params: dict[str, Any]) -> None:
    """#11: modern ping, logging/setLevel, resources/(un)subscribe, enveloped initialize, unknown -> -32601."""
    async with modern_peer(make_server(Probe())) as (m, _):
        complete(await m.request("tools/list"))
        msg = await m.request(method, params)
        assert msg["id"] == m.ids
        error_of(msg, -32601)


async def test_enveloped_ping_as_first_request_is_method_not_found() -> None:
    """#11 + §1.5: the first request carries the version key -> modern -> ping does not exist."""
    async with raw_client(make_server(Probe())) as (peer, _):
        msg = await peer.request(1, "ping", {"_meta": meta()})
        error_of(msg, -32601)


async def test_discover_shape() -> None:
    """#12: server/discover -> complete, versions, capabilities (no logging, no subscribe), cache hints, serverInfo."""
    async with modern_peer(make_server(Probe(), instructions="Be nice.")) as (m, _):
        found = complete(await m.request("server/discover"))
        assert V in found["supportedVersions"]
        caps = found["capabilities"]
        assert "tools" in caps and "prompts" in caps and "resources" in caps
        assert "logging" not in caps
        assert "subscribe" not in caps["resources"]
        assert isinstance(found["ttlMs"], int) and found["ttlMs"] >= 0
        assert found["cacheScope"] in ("public", "private")
        assert found["_meta"][K_SERVER] == {"name": "modern-test", "version": "1.2.3"}
        assert found["instructions"] == "Be nice."
        assert "serverInfo" not in found


async def test_discover_advertises_list_changed_only_when_listen_is_served() -> None:
    """§1.8: listChanged on the modern revision means subscriptions/listen delivers it."""
    async with modern_peer(make_server(Probe())) as (m, _):
        caps = complete(await m.request("server/discover"))["capabilities"]
        advertised = any(isinstance(v, dict) and v.get("listChanged") for v in caps.values())
        msg = await m.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        assert not (advertised and "error" in msg and msg["error"]["code"] == -32601), (caps, msg)


async def test_every_modern_result_has_result_type_server_info_and_cache_hints() -> None:
    """#13, #19: resultType + serverInfo everywhere; ttlMs/cacheScope on lists and resources/read."""
    cacheable: dict[str, dict[str, Any]] = {
        "tools/list": {},
        "resources/list": {},
        "resources/templates/list": {},
        "prompts/list": {},
        "resources/read": {"uri": "mem://items/7"},
        "server/discover": {},
    }
    plain: dict[str, dict[str, Any]] = {
        "prompts/get": {"name": "topic", "arguments": {"subject": "tea"}},
        "completion/complete": {
            "ref": {"type": "ref/prompt", "name": "topic"},
            "argument": {"name": "subject", "value": "a"},
        },
        "tools/call": {"name": "add", "arguments": {"a": 1, "b": 1}},
    }
    async with modern_peer(make_server(Probe())) as (m, _):
        for method, params in {**cacheable, **plain}.items():
            result = complete(await m.request(method, params))
            assert result["_meta"][K_SERVER] == {"name": "modern-test", "version": "1.2.3"}, method
            if method in cacheable:
                assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private"), method
        assert complete(await m.request("resources/read", {"uri": "mem://items/7"}))["contents"][0]["text"] == "item 7"
        assert complete(await m.request("prompts/get", plain["prompts/get"]))["messages"]
        assert complete(await m.request("completion/complete", plain["completion/complete"]))["completion"][
            "values"
        ] == ["alpha"]


async def test_unknown_resource_is_32602_on_modern_and_32002_on_legacy() -> None:
    """§1.3: 2026 implementations must not emit -32002 (resource not found -> -32602)."""
    async with modern_peer(make_server(Probe())) as (m, _):
        error_of(await m.request("resources/read", {"uri": "mem://nope"}), -32602)
    async with raw_client(make_server(Probe())) as (peer, _):
        await peer.initialize()
        error_of(await peer.request(2, "resources/read", {"uri": "mem://nope"}), -32002)


async def test_unknown_tool_is_invalid_params() -> None:
    async with modern_peer(make_server(Probe())) as (m, _):
        error_of(await m.call("nope"), -32602)


async def test_log_messages_only_with_a_log_level_in_the_request() -> None:
    """#14: no notifications/message without _meta logLevel; with it, sent before that request's response."""
    async with modern_peer(make_server(Probe())) as (m, _):
        msg = await m.call("chatty")  # the very next message is the response: no log notification
        assert text_of(complete(msg)) == "logged=False"
        await m.peer.send(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "tools/call",
                "params": {"name": "chatty", "arguments": {}, "_meta": meta(log_level="info")},
            }
        )
        note = await m.peer.recv()
        assert note["method"] == "notifications/message"
        assert note["params"]["level"] == "info" and note["params"]["data"] == "working"
        assert text_of(complete(await m.peer.recv())) == "logged=True"
        msg = await m.call("chatty", log_level="error")
        assert text_of(complete(msg)) == "logged=False"
        error_of(await m.call("chatty", log_level="loud"), -32602)


# === Server: multi round-trip requests =========================================================


def check_date_question(entry: dict[str, Any], *, day: str, party_size: int, default: str) -> None:
    assert entry["method"] == "elicitation/create"
    params = entry["params"]
    assert params.get("mode", "form") == "form"
    assert day in params["message"] and str(party_size) in params["message"]
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["accept_alternative"]
    assert schema["properties"]["accept_alternative"]["type"] == "boolean"
    assert schema["properties"]["date"]["format"] == "date"
    assert schema["properties"]["date"]["default"] == default
    assert "elicitationId" not in params and "url" not in params


@pytest.mark.usefixtures("booking_retries")
async def test_booking_full_date_multi_round_to_booked() -> None:
    """#16, #17, #21: input_required, no nested request; round 2 with a new state; round 3 books 12-28."""
    app = booking_app()
    args = {"date": "2025-12-25", "party_size": 2}
    async with modern_peer(app.server) as (m, _):
        requests, state1 = input_required(await m.call("book_table", args))
        assert await m.peer.nothing_for(0.2)  # no nested elicitation/create on the stream
        key1, entry = only(requests)
        check_date_question(entry, day="2025-12-25", party_size=2, default="2025-12-26")

        requests, state2 = input_required(
            await m.call(
                "book_table", args, responses={key1: accept(accept_alternative=True, date="2025-12-27")}, state=state1
            )
        )
        assert state2 != state1
        key2, entry = only(requests)
        check_date_question(entry, day="2025-12-27", party_size=2, default="2025-12-28")

        # Round 3 carries only round 2's answer and round 2's state.
        result = complete(
            await m.call("book_table", args, responses={key2: accept(accept_alternative=True)}, state=state2)
        )
        assert not result.get("isError")
        sc = result["structuredContent"]
        assert sc["status"] == "booked" and sc["date"] == "2025-12-28" and sc["party_size"] == 2
        assert sc["booking_id"] in app.bookings
        assert "2025-12-28" in text_of(result)


async def test_missing_key_asks_the_same_question_again() -> None:
    """#22: the needed key missing from inputResponses -> a new input_required with the same question."""
    probe = Probe()
    async with modern_peer(make_server(probe)) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        again, state2 = input_required(await m.call("ask_once", responses={"other": accept(name="x")}, state=state))
        assert again == requests
        again, state3 = input_required(await m.call("ask_once", responses={}, state=state2))
        assert again == requests
        result = complete(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state3))
        assert text_of(result) == "hello Ada"


async def test_missing_key_keeps_the_call_parked() -> None:
    """Park, not replay, after a re-ask: the pre-question code runs once."""
    probe = Probe()
    server = make_server(probe)
    async with modern_peer(server) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        _, state2 = input_required(await m.call("ask_once", responses={"other": accept(name="x")}, state=state))
        assert len(server.parking) == 1
        assert text_of(complete(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state2))) == (
            "hello Ada"
        )
        assert probe.pre["ask_once:"] == 1


async def test_extra_unknown_keys_are_ignored() -> None:
    """#23: extra keys alongside the right one -> complete."""
    async with modern_peer(make_server(Probe())) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        responses = {key: accept(name="Ada"), "zz_extra": accept(name="Eve"), "q99": {"action": "decline"}}
        assert text_of(complete(await m.call("ask_once", responses=responses, state=state))) == "hello Ada"


@pytest.mark.parametrize("responses", [None, "yes", ["q1"], {"q1": "yes"}, {"q1": None}, {"q1": {"action": "maybe"}}])
async def test_structurally_invalid_input_responses_are_invalid_params(responses: Any) -> None:
    """#24: inputResponses null / not an object / a non-object value -> -32602, never complete."""
    probe = Probe()
    async with modern_peer(make_server(probe)) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        if isinstance(responses, dict):
            responses = {key: next(iter(responses.values()))}
        error_of(await m.call("ask_once", responses=responses, state=state), -32602)
        retry = await m.call("ask_once", responses={key: accept(name="Ada")}, state=state)
        if isinstance(responses, dict) and isinstance(responses[key], dict):
            # An answer object of the wrong shape reached the call and ended it: its state is used up.
            assert error_of(retry, -32602)["data"] == {"reason": "request_state_used"}
        else:
            # Refused before the state was looked at: a proper retry with it still completes the call.
            assert text_of(complete(retry)) == "hello Ada"


def _flip(text: str, index: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    c = text[index]
    replacement = alphabet[(alphabet.index(c) + 17) % 64] if c in alphabet else "A"
    return text[:index] + replacement + text[index + 1 :]


TAMPERINGS: dict[str, Callable[[str], str]] = {
    "suffix": lambda s: s + "x",
    "suffix-block": lambda s: s + "AAAA",
    "body-char-flipped": lambda s: _flip(s, 10),
    "mac-char-flipped": lambda s: _flip(s, len(s) - 10),
    "truncated": lambda s: s[:-5],
    "dot-removed": lambda s: s.replace(".", "", 1),
    "other-version": lambda s: "v3" + s[2:],
    "garbage": lambda s: "not a state",
    "empty": lambda s: "",
}


@pytest.mark.parametrize("how", list(TAMPERINGS))
async def test_tampered_state_is_refused_with_the_frozen_error(how: str) -> None:
    """#25: a tampered requestState -> -32602 "Invalid or expired requestState" with data.reason; no re-ask."""
    probe = Probe()
    async with modern_peer(make_server(probe)) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        err = error_of(
            await m.call("ask_once", responses={key: accept(name="Ada")}, state=TAMPERINGS[how](state)), -32602
        )
        assert err["message"] == INVALID_STATE
        assert err["data"] == {"reason": "invalid_request_state"}
        # The untampered state still works: the refusal touched nothing.
        assert text_of(complete(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state))) == (
            "hello Ada"
        )
        assert probe.pre["ask_once:"] == 1


@pytest.mark.parametrize("suffix", ["==", "~~~~"])
async def test_state_with_junk_suffix_is_refused(suffix: str) -> None:
    """#25 ("e.g. suffix appended"): clients must echo byte-exact; any other string is tampered."""
    async with modern_peer(make_server(Probe())) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        msg = await m.call("ask_once", responses={key: accept(name="Ada")}, state=state + suffix)
        assert error_of(msg, -32602)["message"] == INVALID_STATE


async def test_state_is_bound_to_tool_arguments_and_client() -> None:
    """#26: state replayed onto another tool, other arguments, or another client identity -> frozen -32602."""
    async with modern_peer(make_server(Probe())) as (m, _):
        requests, state = input_required(await m.call("ask_once", {"tag": "a"}, client="alice"))
        key, _ = only(requests)
        answer = {key: accept(name="Ada")}
        for name, args, client in [
            ("charge_card", {}, "alice"),
            ("ask_once", {"tag": "b"}, "alice"),
            ("ask_once", {"tag": "a"}, "mallory"),
            ("ask_once", {"tag": "a"}, None),
        ]:
            err = error_of(await m.call(name, args, responses=answer, state=state, client=client), -32602)
            assert err["message"] == INVALID_STATE, (name, args, client)
        result = complete(await m.call("ask_once", {"tag": "a"}, responses=answer, state=state, client="alice"))
        assert text_of(result) == "hello Ada"


async def test_expired_state_is_refused() -> None:
    """#26: a requestState past its TTL -> frozen -32602."""
    async with modern_peer(make_server(Probe(), state_ttl=0.3)) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        await anyio.sleep(0.45)
        err = error_of(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state), -32602)
        assert err["message"] == INVALID_STATE


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


async def test_sub_second_ttl_state_is_valid_right_away(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock(1_000_000_000.1)
    monkeypatch.setattr(minimcp.server.mrtr.rounds, "time", types.SimpleNamespace(time=clock.time))
    # (retries taken over)
    monkeypatch.setattr(minimcp.server.mrtr.takeover, "time", types.SimpleNamespace(time=clock.time))
    async with modern_peer(make_server(Probe(), state_ttl=0.5)) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        clock.now += 0.05
        assert text_of(complete(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state))) == (
            "hello Ada"
        )


async def test_state_sealed_by_another_key_is_refused() -> None:
    """#26, #34: another server key (another deployment) -> frozen -32602, no crash, no hang."""
    first = make_server(Probe(), state_key=KEY)
    async with modern_peer(first) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
    async with modern_peer(make_server(Probe(), state_key=OTHER_KEY)) as (m, _):
        with anyio.fail_after(5):
            err = error_of(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state), -32602)
        assert err["message"] == INVALID_STATE


# --- park vs replay -----------------------------------------------------------------------------


async def test_one_server_resumes_the_parked_call() -> None:
    """Park: the second round resumes the same coroutine; code before the question ran once."""
    probe = Probe()
    server = make_server(probe)
    async with modern_peer(server) as (m, _):
        requests, state = input_required(await m.call("ask_three"))
        assert len(server.parking) == 1
        for n, value in enumerate(["a", "b"], start=1):
            key, entry = only(requests)
            assert entry["params"]["message"] == f"Question {n}?"
            requests, state = input_required(
                await m.call("ask_three", responses={key: accept(value=value)}, state=state)
            )
        key, entry = only(requests)
        assert entry["params"]["message"] == "Question 3?"
        result = complete(await m.call("ask_three", responses={key: accept(value="c")}, state=state))
        assert text_of(result) == "a,b,c"
        assert probe.pre["ask_three"] == 1
        assert len(server.parking) == 0


async def test_after_restart_the_retry_replays_with_recorded_answers_in_order() -> None:
    """#34: a new server with the same state_key replays: pre-question code reruns, answers come back in order."""
    probe = Probe()
    async with modern_peer(make_server(probe, state_key=KEY)) as (m, _):
        requests, state = input_required(await m.call("ask_three"))
        for value in ["a", "b"]:
            key, _ = only(requests)
            requests, state = input_required(
                await m.call("ask_three", responses={key: accept(value=value)}, state=state)
            )
        key, entry = only(requests)
        assert entry["params"]["message"] == "Question 3?"
        assert probe.pre["ask_three"] == 1
    restarted = make_server(probe, state_key=KEY)
    async with modern_peer(restarted) as (m, _):
        result = complete(await m.call("ask_three", responses={key: accept(value="c")}, state=state))
        assert text_of(result) == "a,b,c"
        assert probe.pre["ask_three"] == 2  # replayed from the top once
        assert len(restarted.parking) == 0


async def test_replay_with_a_changed_question_asks_again() -> None:
    """Replay hands back a recorded answer only for the same question; a changed one is asked again."""
    probe = Probe()
    async with modern_peer(make_server(probe, state_key=KEY)) as (m, _):
        requests, state = input_required(await m.call("ask_once", {"tag": "x"}))
        key, _ = only(requests)
    other = Server("modern-test", "1.2.3", state_key=KEY)

    @other.tool()
    async def ask_once(ctx: Context, tag: str = "") -> str:
        return describe(await ctx.elicit(f"A different question {tag}", NAME_FORM))

    async with modern_peer(other) as (m, _):
        again, _ = input_required(
            await m.call("ask_once", {"tag": "x"}, responses={key: accept(name="Ada")}, state=state)
        )
        _, entry = only(again)
        assert entry["params"]["message"] == "A different question x"


async def test_booking_restart_replays_to_the_same_outcome() -> None:
    """The booking tool replays after a restart: the recorded date answer is reused, the new one applied."""
    args = {"date": "2025-12-25", "party_size": 2}
    first = booking_app()
    first.server.sealer = StateSealer(KEY)
    async with modern_peer(first.server) as (m, _):
        requests, state = input_required(await m.call("book_table", args))
        key, _ = only(requests)
        requests, state = input_required(
            await m.call(
                "book_table", args, responses={key: accept(accept_alternative=True, date="2025-12-27")}, state=state
            )
        )
        key, _ = only(requests)
    second = booking_app()
    second.server.sealer = StateSealer(KEY)
    async with modern_peer(second.server) as (m, _):
        result = complete(
            await m.call("book_table", args, responses={key: accept(accept_alternative=True)}, state=state)
        )
        assert result["structuredContent"]["status"] == "booked"
        assert result["structuredContent"]["date"] == "2025-12-28"
        assert list(second.bookings) == [result["structuredContent"]["booking_id"]]
        assert not first.bookings


async def test_not_replayable_tool_fails_cleanly_after_restart() -> None:
    """replayable=False: parks fine on one server; after a restart the retry -> -32602 naming the tool."""
    probe = Probe()
    async with modern_peer(make_server(probe, state_key=KEY)) as (m, _):
        requests, state = input_required(await m.call("charge_card"))
        key, _ = only(requests)
        assert text_of(complete(await m.call("charge_card", responses={key: accept(name="Ada")}, state=state))) == (
            "hello Ada"
        )
        requests, state = input_required(await m.call("charge_card"))
    async with modern_peer(make_server(probe, state_key=KEY)) as (m, _):
        err = error_of(await m.call("charge_card", responses={key: accept(name="Ada")}, state=state), -32602)
        assert "charge_card" in err["message"]
        assert probe.pre["charge_card"] == 2  # never run again by the refused retry


async def test_parked_call_expires_after_its_question_timeout() -> None:
    """#34: parked continuations are collected (ctx.elicit timeout) and Server.parking empties;
    the answer that comes after the timeout is a timeout (``Cancelled("timeout")``), not an answer."""
    probe = Probe()
    server = make_server(probe)
    async with modern_peer(server) as (m, _):
        requests, state = input_required(await m.call("quick"))
        key, _ = only(requests)
        assert len(server.parking) == 1
        await wait_until(lambda: not server.parking and probe.cleaned["quick"] > 0)
        assert probe.cleaned["quick"] == 1  # the suspended tool was really stopped
        assert await m.peer.nothing_for(0.1)  # nothing is sent for an abandoned call
        # The late retry replays the tool, whose question now ends as timed out.
        assert text_of(complete(await m.call("quick", responses={key: accept(name="Ada")}, state=state))) == (
            "cancelled timeout"
        )
        assert probe.pre["quick"] == 2


async def test_parking_is_bounded_and_the_dropped_call_replays() -> None:
    """Limits(max_pending_outbound=2): a third parked call drops the oldest; its retry replays."""
    probe = Probe()
    server = make_server(probe, limits=Limits(max_pending_outbound=2))
    async with modern_peer(server) as (m, _):
        flows = {}
        for tag in ("one", "two", "three"):
            requests, state = input_required(await m.call("ask_once", {"tag": tag}))
            flows[tag] = (only(requests)[0], state)
        assert len(server.parking) == 2
        await wait_until(lambda: probe.cleaned["ask_once:one"] > 0)  # the dropped run was cancelled
        for tag in ("one", "two", "three"):
            key, state = flows[tag]
            result = complete(await m.call("ask_once", {"tag": tag}, responses={key: accept(name=tag)}, state=state))
            assert text_of(result) == f"hello {tag}"
        assert probe.pre == Counter({"ask_once:one": 2, "ask_once:two": 1, "ask_once:three": 1})
        assert len(server.parking) == 0


# --- capabilities per request -------------------------------------------------------------------


async def test_no_elicitation_declared_booking_gives_the_tool_error() -> None:
    """#27 / booking: full date, client not asked -> tool error naming the next free date; nothing asked."""
    async with modern_peer(booking_app().server) as (m, _):
        result = complete(await m.call("book_table", {"date": "2025-12-25", "party_size": 2}, caps=NONE))
        assert result["isError"] is True
        assert "2025-12-25" in text_of(result) and "2025-12-26" in text_of(result)


@pytest.mark.parametrize(
    ("tool", "caps", "required"),
    [
        ("ask_once", NONE, {"elicitation": {"form": {}}}),
        ("ask_once", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
        ("open_link", FORM, {"elicitation": {"url": {}}}),
        ("open_link", BARE, {"elicitation": {"url": {}}}),
        ("think", FORM, {"sampling": {}}),
    ],
)
async def test_missing_capability_is_32021_with_required_capabilities(
    tool: str, caps: dict[str, Any], required: dict[str, Any]
) -> None:
    """#27, #28: a tool that cannot proceed without the capability -> -32021 {requiredCapabilities}."""
    async with modern_peer(make_server(Probe())) as (m, _):
        err = error_of(await m.call(tool, caps=caps), -32021)
        assert err["data"] == {"requiredCapabilities": required}


async def test_capabilities_come_from_each_request_not_the_connection() -> None:
    """§1.1: never inferred from earlier requests: a form-capable request, then one declaring nothing."""
    async with modern_peer(make_server(Probe())) as (m, _):
        input_required(await m.call("ask_once", caps=FORM_URL))
        error_of(await m.call("ask_once", caps=NONE), -32021)


@pytest.mark.usefixtures("booking_retries")
async def test_retry_without_elicitation_is_not_asked_again() -> None:
    """#27 + §1.1: booking 12-25 -> answer 12-27 (full) in a retry that declares no elicitation."""
    args = {"date": "2025-12-25", "party_size": 2}
    async with modern_peer(booking_app().server) as (m, _):
        requests, state = input_required(await m.call("book_table", args, caps=FORM))
        key, _ = only(requests)
        msg = await m.call(
            "book_table",
            args,
            caps=NONE,
            state=state,
            responses={key: accept(accept_alternative=True, date="2025-12-27")},
        )
        result = complete(msg)  # the booking contract: a tool error naming the next free date
        assert result["isError"] is True and "2025-12-28" in text_of(result)


@pytest.mark.usefixtures("booking_retries")
async def test_form_only_client_never_gets_a_url_entry() -> None:
    """#28 / booking: elicitation {} is form only -> party of 8 is a tool error about payment links."""
    app = booking_app()
    async with modern_peer(app.server) as (m, _):
        for caps in (BARE, FORM):
            result = complete(await m.call("book_table", {"date": "2025-12-26", "party_size": 8}, caps=caps))
            assert result["isError"] is True
            assert "deposit" in text_of(result) and "payment links" in text_of(result)
        # Full date + party of 8 with form only: the date question (form) first, then the same tool error.
        requests, state = input_required(await m.call("book_table", {"date": "2025-12-25", "party_size": 8}, caps=BARE))
        key, entry = only(requests)
        assert entry["params"].get("mode", "form") == "form"
        result = complete(
            await m.call(
                "book_table",
                {"date": "2025-12-25", "party_size": 8},
                caps=BARE,
                responses={key: accept(accept_alternative=True)},
                state=state,
            )
        )
        assert result["isError"] is True and "payment links" in text_of(result)
        assert not app.bookings


@pytest.mark.usefixtures("booking_retries")
@pytest.mark.parametrize(("action", "status"), [("decline", "declined"), ("cancel", "cancelled")])
async def test_decline_and_cancel_reach_the_tool_as_answers(action: str, status: str) -> None:
    """#31 / booking: decline -> declined, cancel -> cancelled (text suggests later); nothing booked."""
    app = booking_app()
    args = {"date": "2025-12-25", "party_size": 2}
    async with modern_peer(app.server) as (m, _):
        requests, state = input_required(await m.call("book_table", args))
        key, _ = only(requests)
        result = complete(await m.call("book_table", args, responses={key: {"action": action}}, state=state))
        assert not result.get("isError")
        assert result["structuredContent"]["status"] == status
        assert result["structuredContent"]["date"] == "2025-12-25"
        if action == "cancel":
            assert "later" in text_of(result)
        assert not app.bookings
    async with modern_peer(make_server(Probe())) as (m, _):
        requests, state = input_required(await m.call("ask_once"))
        key, _ = only(requests)
        expected = "declined" if action == "decline" else "cancelled user"
        assert text_of(complete(await m.call("ask_once", responses={key: {"action": action}}, state=state))) == expected


@pytest.mark.usefixtures("booking_retries")
async def test_booking_answer_breaking_the_schema_is_a_tool_error() -> None:
    """Booking: accept_alternative "maybe" -> tool error naming the field and the type; nothing booked."""
    app = booking_app()
    args = {"date": "2025-12-25", "party_size": 2}
    async with modern_peer(app.server) as (m, _):
        requests, state = input_required(await m.call("book_table", args))
        key, _ = only(requests)
        result = complete(
            await m.call("book_table", args, responses={key: accept(accept_alternative="maybe")}, state=state)
        )
        assert result["isError"] is True
        assert "accept_alternative" in text_of(result) and "bool" in text_of(result).lower()
        assert not app.bookings


@pytest.mark.usefixtures("booking_retries")
async def test_booking_three_questions_then_not_booked() -> None:
    """Booking: at most three questions; a full date given to the third -> not_booked."""
    args = {"date": "2025-12-25", "party_size": 3}
    async with modern_peer(booking_app().server) as (m, _):
        msg = await m.call("book_table", args)
        for answer in ("2025-12-27", "2025-12-25", "2025-12-27"):
            requests, state = input_required(msg)
            key, _ = only(requests)
            msg = await m.call(
                "book_table", args, responses={key: accept(accept_alternative=True, date=answer)}, state=state
            )
        result = complete(msg)
        assert result["structuredContent"]["status"] == "not_booked"
        assert result["structuredContent"]["date"] == "2025-12-27"


SAMPLING_ROOTS: dict[str, Any] = {"sampling": {}, "roots": {"listChanged": True}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


async def drive_sampling(m: Modern, tool: str) -> dict[str, Any]:
    requests, state = input_required(await m.call(tool, caps=SAMPLING_ROOTS))
    key, entry = only(requests)
    assert entry["method"] == "sampling/createMessage"
    assert entry["params"]["maxTokens"] == 5
    assert entry["params"]["messages"][0]["content"]["text"] == "Say hi"
    return complete(await m.call(tool, caps=SAMPLING_ROOTS, responses={key: SAMPLED}, state=state))


async def test_sampling_is_an_input_request_on_modern() -> None:
    """#16-style for sampling/createMessage: an input request, answered by the retry."""
    async with modern_peer(make_server(Probe())) as (m, _):
        assert text_of(await drive_sampling(m, "think")) == "hi"


async def test_sampling_with_the_default_timeout_on_modern() -> None:
    async with modern_peer(make_server(Probe())) as (m, _):
        assert text_of(await drive_sampling(m, "think_default")) == "hi"


async def test_list_roots_is_an_input_request_on_modern() -> None:
    async with modern_peer(make_server(Probe())) as (m, _):
        requests, state = input_required(await m.call("roots", caps=SAMPLING_ROOTS))
        key, entry = only(requests)
        assert entry["method"] == "roots/list"
        result = complete(
            await m.call(
                "roots", caps=SAMPLING_ROOTS, state=state, responses={key: {"roots": [{"uri": "file:///work"}]}}
            )
        )
        assert text_of(result) == "file:///work"


# --- cancellation on stdio-style transports -----------------------------------------------------


async def test_cancelled_retry_stops_the_parked_tool_and_its_state_is_used_up() -> None:
    """#33: notifications/cancelled for a retry's id stops the tool, no response; the state it
    carried was used (the call may have done things after its question), so it is refused again."""
    probe = Probe()
    async with modern_peer(make_server(probe)) as (m, _):
        requests, state = input_required(await m.call("slow_after"))
        key, _ = only(requests)
        await m.peer.send(
            {
                "jsonrpc": "2.0",
                "id": "r2",
                "method": "tools/call",
                "params": {
                    "name": "slow_after",
                    "arguments": {},
                    "inputResponses": {key: accept(name="Ada")},
                    "requestState": state,
                    "_meta": meta(),
                },
            }
        )
        await wait_until(lambda: not probe.slow)  # the resumed tool is now sleeping after its question
        await m.peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "r2", "reason": "user pressed stop"},
            }
        )
        await wait_until(lambda: probe.cleaned["slow_after"] > 0)
        assert await m.peer.nothing_for(0.3)  # no response for the cancelled request
        again = error_of(await m.call("slow_after", responses={key: accept(name="Ada")}, state=state), -32602)
        assert again["data"] == {"reason": "request_state_used"} and "already used" in again["message"]
        assert probe.pre["slow_after"] == 1  # never replayed


async def test_unknown_or_late_cancellation_is_ignored() -> None:
    """#33: a cancel for an unknown or finished request id is ignored silently."""
    async with modern_peer(make_server(Probe())) as (m, _):
        complete(await m.call("add", {"a": 1, "b": 1}))
        for rid in (m.ids, "never-sent"):
            await m.peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
        assert await m.peer.nothing_for(0.2)
        assert text_of(complete(await m.call("add", {"a": 2, "b": 2}))) == "4"


# --- booking with the pages (URL mode) ----------------------------------------------------------


def check_url_entry(entry: dict[str, Any], kind: str) -> str:
    assert entry["method"] == "elicitation/create"
    params = entry["params"]
    assert set(params) == {"mode", "message", "url"}  # no elicitationId on 2026-07-28
    assert params["mode"] == "url" and params["message"]
    assert params["url"].startswith(f"{PAGES}/{kind}/")
    url: str = params["url"]
    return url


@pytest.mark.usefixtures("booking_retries")
@pytest.mark.parametrize("pay_first", [False, True])
async def test_booking_deposit_on_modern(pay_first: bool) -> None:
    """#28, #29 / booking: url entry without elicitationId; deposit_pending without elicitation_id; page -> booked."""
    app = booking_app()
    args = {"date": "2025-12-26", "party_size": 8}
    async with modern_peer(app.server) as (m, _):
        requests, state = input_required(await m.call("book_table", args, caps=FORM_URL))
        key, entry = only(requests)
        url = check_url_entry(entry, "deposit")
        assert "8" in entry["params"]["message"] and "2025-12-26" in entry["params"]["message"]
        if pay_first:
            assert (await asgi_call(app.pages, "POST", url))[0] == 200
        result = complete(
            await m.call("book_table", args, caps=FORM_URL, responses={key: {"action": "accept"}}, state=state)
        )
        sc = result["structuredContent"]
        assert sc["status"] == ("booked" if pay_first else "deposit_pending")
        assert "elicitation_id" not in sc
        booking_id = sc["booking_id"]
        if not pay_first:
            status, page = await asgi_call(app.pages, "POST", url)
            assert status == 200 and "paid" in page
        status_result = complete(await m.call("booking_status", {"booking_id": booking_id}, caps=FORM_URL))
        assert status_result["structuredContent"]["status"] == "booked"
        confirmed = complete(await m.call("confirm_deposit", {"booking_id": booking_id}, caps=FORM_URL))
        assert confirmed["structuredContent"]["status"] == "booked"
        assert await m.peer.nothing_for(0.2)  # no notifications/elicitation/complete on the modern leg


@pytest.mark.usefixtures("booking_retries")
@pytest.mark.parametrize(("action", "status"), [("decline", "declined"), ("cancel", "cancelled")])
async def test_booking_deposit_decline_or_cancel_books_nothing(action: str, status: str) -> None:
    app = booking_app()
    args = {"date": "2025-12-26", "party_size": 9}
    async with modern_peer(app.server) as (m, _):
        requests, state = input_required(await m.call("book_table", args, caps=FORM_URL))
        key, _ = only(requests)
        result = complete(
            await m.call("book_table", args, caps=FORM_URL, responses={key: {"action": action}}, state=state)
        )
        assert result["structuredContent"]["status"] == status
        assert not app.bookings


@pytest.mark.usefixtures("booking_retries")
async def test_booking_add_to_calendar_on_modern() -> None:
    """Booking: input_required with one url entry; retry before the page -> asked again; after it -> added."""
    app = booking_app()
    async with modern_peer(app.server) as (m, _):
        booked = complete(await m.call("book_table", {"date": "2025-12-26", "party_size": 2}, caps=FORM_URL))
        booking_id = booked["structuredContent"]["booking_id"]
        args = {"booking_id": booking_id}
        requests, state = input_required(await m.call("add_to_calendar", args, caps=FORM_URL))
        key, entry = only(requests)
        url = check_url_entry(entry, "authorize")
        # Consent, but the page was not completed yet: asked again.
        requests, state = input_required(
            await m.call("add_to_calendar", args, caps=FORM_URL, responses={key: {"action": "accept"}}, state=state)
        )
        key, entry = only(requests)
        assert check_url_entry(entry, "authorize") == url
        status, _ = await asgi_call(app.pages, "POST", url)
        assert status == 200
        result = complete(
            await m.call("add_to_calendar", args, caps=FORM_URL, responses={key: {"action": "accept"}}, state=state)
        )
        assert result["structuredContent"]["status"] == "added"
        assert result["structuredContent"]["booking_id"] == booking_id
        assert await m.peer.nothing_for(0.2)  # no completion notice, no -32042
        # A form-only client gets the tool error explaining why.
        result = complete(await m.call("add_to_calendar", args, caps=FORM))
        assert result["isError"] is True and "URL-mode" in text_of(result)
        # Unknown booking id is checked first.
        result = complete(await m.call("add_to_calendar", {"booking_id": "B9999"}, caps=FORM_URL))
        assert result["isError"] is True and "B9999" in text_of(result)


# === Client ====================================================================================


class Answers:
    """An elicitation handler giving fixed answers in order and recording the questions."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.questions: list[ElicitationRequest] = []

    async def __call__(self, request: ElicitationRequest) -> Any:
        self.questions.append(request)
        return self.answers.pop(0)


def booking_answers() -> Answers:
    return Answers(Accepted({"accept_alternative": True, "date": "2025-12-27"}), Accepted({"accept_alternative": True}))


def check_booked_2812(result: Any, answers: Answers) -> None:
    assert not result.is_error, result.text
    assert result.structured_content["status"] == "booked"
    assert result.structured_content["date"] == "2025-12-28"
    assert [q.message.split(" ")[0] for q in answers.questions] == ["2025-12-25", "2025-12-27"]


@pytest.mark.usefixtures("booking_retries")
@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_client_books_through_input_required_over_memory(era: str) -> None:
    """#38/#44: our client picks modern (auto probes server/discover) and answers rounds with the same handler."""
    answers = booking_answers()
    async with connected(booking_app().server, era=era, elicitation_handler=answers) as (client, conn):
        assert client.era == "modern"
        assert client.protocol_version == V
        if era == "auto":
            assert client.server_info is not None and client.server_info.name == "booking"
        result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        check_booked_2812(result, answers)
        assert conn.era == "modern"
        assert conn.protocol_version is None  # no handshake ever happened


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.mark.parametrize("era", ["auto", "modern"])
async def test_client_books_through_input_required_over_stdio(era: str) -> None:
    answers = booking_answers()
    with anyio.fail_after(30):
        async with connect_stdio(
            [sys.executable, "examples/booking.py"],
            env=child_env(),
            cwd=str(ROOT),
            era=era,
            elicitation_handler=answers,
        ) as client:
            assert client.era == "modern"
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            check_booked_2812(result, answers)
            assert isinstance(result.structured_content, dict)
            status = await client.call_tool("booking_status", {"booking_id": result.structured_content["booking_id"]})
            assert isinstance(status.structured_content, dict)
            assert status.structured_content["status"] == "booked"


async def test_client_retries_are_new_requests_with_the_servers_keys_and_exact_state() -> None:
    """#38, #43: new id, same name/arguments, exactly the server's keys, byte-exact state, full envelope."""
    a, b = memory_pair()
    trace: list[tuple[str, dict[str, Any]]] = []
    traced = TracedTransport(b, lambda direction, data: trace.append((direction, msgspec.json.decode(data))))
    answers = booking_answers()
    args = {"date": "2025-12-25", "party_size": 2}
    async with anyio.create_task_group() as tg:
        await tg.start(booking_app().server.serve, a)
        async with Client(traced, era="modern", elicitation_handler=answers) as client:
            result = await client.call_tool("book_table", args)
        tg.cancel_scope.cancel()
    check_booked_2812(result, answers)
    sent = [m for d, m in trace if d == "send"]
    received = {m["id"]: m for d, m in trace if d == "receive" and "id" in m}
    calls = [m for m in sent if m.get("method") == "tools/call"]
    assert len(calls) == 3
    assert len({c["id"] for c in calls}) == 3
    for message in sent:  # every request carries the three envelope keys
        if "id" in message:
            envelope = message["params"]["_meta"]
            assert envelope[K_VERSION] == V and envelope[K_CAPS] == {"elicitation": {"form": {}}}
            assert envelope[K_INFO]["name"]
    assert "inputResponses" not in calls[0]["params"] and "requestState" not in calls[0]["params"]
    for before, retry in itertools.pairwise(calls):
        previous = received[before["id"]]["result"]
        assert retry["params"]["name"] == "book_table" and retry["params"]["arguments"] == args
        assert set(retry["params"]["inputResponses"]) == set(previous["inputRequests"])
        assert retry["params"]["requestState"] == previous["requestState"]


# --- fake servers for the client ----------------------------------------------------------------

Respond = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


class FakeServer:
    """A hand-written server: records every message, answers requests with ``respond`` (None: silence)."""

    def __init__(self, transport: MemoryTransport, respond: Respond) -> None:
        self.peer = RawPeer(transport)
        self.respond = respond
        self.received: list[dict[str, Any]] = []

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [m for m in self.received if "id" in m and "method" in m and method in (None, m["method"])]

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    data = await self.peer.transport.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                message = msgspec.json.decode(data)
                self.received.append(message)
                if "id" in message and "method" in message:
                    tg.start_soon(self._answer, message)

    async def _answer(self, message: dict[str, Any]) -> None:
        reply = await self.respond(message)
        if reply is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.peer.send({"jsonrpc": "2.0", "id": message["id"], **reply})


@contextlib.asynccontextmanager
async def fake_server(respond: Respond) -> AsyncIterator[tuple[FakeServer, MemoryTransport]]:
    a, b = memory_pair()
    fake = FakeServer(a, respond)
    async with anyio.create_task_group() as tg:
        tg.start_soon(fake.run)
        yield fake, b
        tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def modern_client(respond: Respond, **options: Any) -> AsyncIterator[tuple[Client, FakeServer]]:
    async with fake_server(respond) as (fake, transport):
        options.setdefault("era", "modern")
        async with Client(transport, **options) as client:
            yield client, fake


def text_result(text: str, **extra: Any) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": text}], **extra}}


def form_request(message: str) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": VALUE_FORM},
    }


ODD_STATE = 'state with "quotes", \\back\\slashes, ünïcødé, \u2028 and == / + .'


async def test_client_echoes_an_odd_state_exactly_and_omits_absent_state() -> None:
    """#38: byte-exact requestState (any string); no requestState sent -> none in the retry."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        if params["name"] == "with_state":
            if "requestState" not in params:
                return {
                    "result": {
                        "resultType": "input_required",
                        "inputRequests": {"a b/ü": form_request("v?")},
                        "requestState": ODD_STATE,
                    }
                }
            ok = params["requestState"] == ODD_STATE and params["inputResponses"] == {
                "a b/ü": {"action": "accept", "content": {"value": "v"}}
            }
            return text_result(f"ok={ok}", resultType="complete")
        if "inputResponses" not in params:
            return {"result": {"resultType": "input_required", "inputRequests": {"k": form_request("w?")}}}
        return text_result(f"state sent={'requestState' in params}", resultType="complete")

    async with modern_client(
        respond, elicitation_handler=Answers(Accepted({"value": "v"}), Accepted({"value": "w"}))
    ) as (client, fake):
        assert (await client.call_tool("with_state", {"x": 1})).text == "ok=True"
        assert (await client.call_tool("without_state")).text == "state sent=False"
    calls = fake.requests("tools/call")
    assert calls[1]["params"]["arguments"] == {"x": 1}
    assert len({c["id"] for c in calls}) == len(calls) == 4


async def test_client_state_only_round_retries_without_input_responses() -> None:
    """#40: state-only input_required -> retry (after a pause) without inputResponses, with the state."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        if "requestState" not in params:
            return {"result": {"resultType": "input_required", "requestState": "come-back"}}
        return text_result(f"responses={'inputResponses' in params} state={params['requestState']}")

    async with modern_client(respond) as (client, fake):
        result = await client.call_tool("busy")
    assert result.text == "responses=False state=come-back"  # absent resultType -> complete
    assert len(fake.requests("tools/call")) == 2


async def test_client_round_cap_raises_and_sends_nothing_more() -> None:
    """#41: max_rounds reached -> a clear local error, no further request."""
    counter = iter(range(100))

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "result": {
                "resultType": "input_required",
                "inputRequests": {"k": form_request("again?")},
                "requestState": f"s{next(counter)}",
            }
        }

    answers = Answers(*[Accepted({"value": "v"})] * 10)
    async with modern_client(respond, max_rounds=2, elicitation_handler=answers) as (client, fake):
        with pytest.raises(McpError) as caught:
            await client.call_tool("forever")
        assert "2 rounds" in caught.value.message
        await anyio.sleep(0.2)
        assert len(fake.requests("tools/call")) == 2


@pytest.mark.parametrize("result_type", ["task", "INPUT_REQUIRED", "", "weird"])
async def test_client_rejects_an_unknown_result_type(result_type: str) -> None:
    """#37: an unrecognised resultType is invalid (error, no retry)."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        return text_result("x", resultType=result_type)

    async with modern_client(respond) as (client, fake):
        with pytest.raises(McpError):
            await client.call_tool("t")
        with pytest.raises(McpError):
            await client.list_tools()
        assert len(fake.requests("tools/call")) == 1


async def test_client_absent_result_type_is_complete() -> None:
    """#37: absent resultType -> complete (old servers), no retry."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        if message["method"] == "tools/list":
            return {"result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}
        return text_result("plain")

    async with modern_client(respond) as (client, fake):
        assert (await client.call_tool("t")).text == "plain"
        assert [t.name for t in await client.list_tools()] == ["t"]
        assert len(fake.requests("tools/call")) == 1


@pytest.mark.parametrize(
    ("entry", "options"),
    [
        ({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}, {}),
        ({"method": "roots/list"}, {}),
        (form_request("q?"), {}),
        (
            {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.example/"}},
            {"elicitation_handler": Answers(Accepted({"value": "v"}))},
        ),
        ({"method": "no/such/kind", "params": {}}, {"elicitation_handler": Answers(Accepted({"value": "v"}))}),
    ],
)
async def test_client_refuses_undeclared_input_kinds(entry: dict[str, Any], options: dict[str, Any]) -> None:
    """#42: an undeclared kind or mode in inputRequests -> local error; no retry is sent."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"resultType": "input_required", "inputRequests": {"k": entry}, "requestState": "s"}}

    async with modern_client(respond, **options) as (client, fake):
        with pytest.raises(McpError):
            await client.call_tool("t")
        await anyio.sleep(0.1)
        assert len(fake.requests("tools/call")) == 1


async def test_client_answers_sampling_and_roots_entries_when_declared() -> None:
    """#42: declared kinds are answered with the handlers used on the handshake era."""

    async def sample(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    async with connected(
        make_server(Probe()), era="modern", sampling_handler=sample, roots=[Root(uri="file:///work")]
    ) as (client, _):
        assert (await client.call_tool("think")).text == "hi"

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        if "requestState" not in params:
            return {
                "result": {
                    "resultType": "input_required",
                    "requestState": "s",
                    "inputRequests": {"r": {"method": "roots/list"}},
                }
            }
        return text_result(msgspec.json.encode(params["inputResponses"]).decode())

    async with modern_client(respond, roots=[Root(uri="file:///work", name="work")]) as (client, fake):
        answer = msgspec.json.decode((await client.call_tool("t")).text)
        assert answer == {"r": {"roots": [{"uri": "file:///work", "name": "work"}]}}
        caps = fake.requests("tools/call")[0]["params"]["_meta"][K_CAPS]
        assert caps == {"roots": {"listChanged": True}}


async def test_client_parallel_calls_never_mix_state() -> None:
    """#39: two concurrent flows; each retry carries only its own keys and state."""
    both_started = anyio.Event()
    first_rounds: list[str] = []
    problems: list[str] = []

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        name = params["name"]
        if "requestState" not in params:
            first_rounds.append(name)
            if len(first_rounds) == 2:
                both_started.set()
            await both_started.wait()  # both flows are open at once
            if name == "b":
                await anyio.sleep(0.05)
            return {
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {f"key_{name}": form_request(name)},
                    "requestState": f"state-of-{name}",
                }
            }
        if params["requestState"] != f"state-of-{name}":
            problems.append(f"{name} got {params['requestState']}")
        if set(params["inputResponses"]) != {f"key_{name}"}:
            problems.append(f"{name} got keys {set(params['inputResponses'])}")
        value = params["inputResponses"].get(f"key_{name}", {}).get("content", {}).get("value")
        return text_result(f"{name}:{value}", resultType="complete")

    async def echo(request: ElicitationRequest) -> Any:
        if request.message == "a":
            await anyio.sleep(0.1)  # a's answer comes later than b's question
        return Accepted({"value": request.message})

    results: dict[str, str] = {}
    async with modern_client(respond, elicitation_handler=echo) as (client, fake):

        async def call(name: str) -> None:
            results[name] = (await client.call_tool(name, {"n": name})).text

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "a")
                tg.start_soon(call, "b")
    assert results == {"a": "a:a", "b": "b:b"}
    assert problems == []
    calls = fake.requests("tools/call")
    assert len(calls) == 4 and len({c["id"] for c in calls}) == 4


async def test_client_url_handler_answers_modern_url_entries() -> None:
    """#28/#29 client side: booking deposit through our client's url_handler on the modern era."""
    seen: list[Any] = []

    async def consent(request: Any) -> Any:
        seen.append(request)
        return Accepted(None)

    async with connected(booking_app().server, era="modern", url_handler=consent, elicitation_handler=Answers()) as (
        client,
        _,
    ):
        result = await client.call_tool("book_table", {"date": "2025-12-26", "party_size": 8})
    assert len(seen) == 1 and seen[0].url.startswith(f"{PAGES}/deposit/")
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["status"] == "deposit_pending"


# --- era auto against other servers -------------------------------------------------------------

LEGACY_INIT = {
    "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "old", "version": "1"},
    }
}


def legacy_server(discover: dict[str, Any] | None) -> Respond:
    async def respond(message: dict[str, Any]) -> dict[str, Any] | None:
        method = message["method"]
        if method == "server/discover":
            return discover
        if method == "initialize":
            return LEGACY_INIT
        if method == "tools/list":
            return {"result": {"tools": []}}
        return {"error": {"code": -32601, "message": "no"}}

    return respond


@pytest.mark.parametrize(
    "discover",
    [
        {"error": {"code": -32601, "message": "Method not found"}},
        {"error": {"code": -32602, "message": "Invalid params"}},
        {"error": {"code": -32600, "message": "not initialized"}},
        {"error": {"code": -32000, "message": "whatever"}},
        {"result": {"supportedVersions": ["2025-11-25"], "capabilities": {}}},
        {"result": {"supportedVersions": 5, "capabilities": {}}},  # not a list: not evidence of an era
        {"result": {"supportedVersions": "2026-07-28", "capabilities": {}}},
        None,  # never answers: the probe times out
    ],
    ids=["32601", "32602", "32600", "32000", "no-modern-version", "versions-not-a-list", "versions-a-string",
         "silence"],
)
async def test_auto_falls_back_to_initialize_on_a_legacy_server(discover: dict[str, Any] | None) -> None:
    """#44: any other error, a discover without a modern version, or no answer -> initialize; never one code."""
    async with fake_server(legacy_server(discover)) as (fake, transport):
        with anyio.fail_after(5):
            async with Client(transport, era="auto", probe_timeout=0.2) as client:
                assert client.era == "legacy"
                assert client.protocol_version == "2025-11-25"
                assert client.server_info is not None and client.server_info.name == "old"
                await client.list_tools()
    methods = [m.get("method") for m in fake.received if "method" in m]
    assert methods[0] == "server/discover"
    assert methods.count("server/discover") == 1
    assert "initialize" in methods
    listed = fake.requests("tools/list")[0]
    assert K_VERSION not in (listed.get("params") or {}).get("_meta", {})  # legacy: no envelope any more


async def test_auto_stays_modern_on_a_discover_result() -> None:
    """#44: a DiscoverResult naming 2026-07-28 -> modern, no initialize."""
    discover = {
        "result": {
            "resultType": "complete",
            "supportedVersions": [V],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {K_SERVER: {"name": "new", "version": "2"}},
        }
    }
    async with (
        fake_server(legacy_server(discover)) as (fake, transport),
        Client(transport, era="auto", probe_timeout=1) as client,
    ):
        assert client.era == "modern"
        assert client.server_info is not None and client.server_info.name == "new"
    assert [m["method"] for m in fake.requests()] == ["server/discover"]
    assert fake.requests()[0]["params"]["_meta"][K_VERSION] == V


async def test_auto_raises_on_32022_with_only_unknown_modern_versions() -> None:
    """§1.6: -32022 with a modern-only, disjoint supported list -> raise; no fallback to initialize."""

    async def respond(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "error": {"code": -32022, "message": "unsupported", "data": {"supported": ["2027-03-01"], "requested": V}}
        }

    async with fake_server(respond) as (fake, transport):
        with pytest.raises(McpError) as caught:
            async with Client(transport, era="auto", probe_timeout=1):
                pass  # pragma: no cover
    assert caught.value.code == -32022
    assert [m["method"] for m in fake.requests()] == ["server/discover"]


# === Interop: the official SDK client pinned to 2026-07-28 =====================================


async def test_official_client_modern_books_not_booked_after_three_questions() -> None:
    """The official client (mode "2026-07-28") over stdio: three input_required rounds, then not_booked."""
    pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
    from tests.helpers.interop import BOOKING_SERVER, Recorder, check_date_question, mcp_types, official_client

    answers = Recorder(
        *(
            mcp_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": day})
            for day in ("2025-12-27", "2025-12-25", "2025-12-27")
        )
    )
    with anyio.fail_after(30):
        async with official_client(BOOKING_SERVER, mode=V, elicitation_callback=answers) as client:
            assert client.protocol_version == V
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 4})
    assert len(answers.questions) == 3
    check_date_question(answers.questions[0], day="2025-12-25", party_size=4, default="2025-12-26")
    check_date_question(answers.questions[1], day="2025-12-27", party_size=4, default="2025-12-28")
    check_date_question(answers.questions[2], day="2025-12-25", party_size=4, default="2025-12-26")
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == "not_booked"
    assert result.structured_content["date"] == "2025-12-27"


# --- named questions, first-round answers, -32022 retries ----------------------------------------


async def test_named_question_key_and_first_round_answer() -> None:
    """``ctx.elicit(..., key=...)`` names the input request; a first call may answer it by that key."""
    app = minimcp.server.server.Server("named")

    @app.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}},
                                  key="user_name")
        return f"hello {answer.value['name']}" if isinstance(answer, Accepted) else "no"

    @app.tool()
    async def twice(ctx: Context) -> str:
        schema = {"type": "object", "properties": {"x": {"type": "string"}}}
        await ctx.elicit("a", schema, key="same")
        await ctx.elicit("b", schema, key="same")
        return "unreachable"

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    async with raw_client(app) as (peer, _):
        first = await peer.request(1, "tools/call", {"name": "greet", "_meta": meta})
        assert list(first["result"]["inputRequests"]) == ["user_name"]
        answered = await peer.request(2, "tools/call", {
            "name": "greet", "_meta": meta,
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}})
        assert answered["result"]["resultType"] == "complete"
        assert answered["result"]["content"][0]["text"] == "hello Ada"
        dup_first = await peer.request(3, "tools/call", {"name": "twice", "_meta": meta})
        state = dup_first["result"]["requestState"]
        dup = await peer.request(4, "tools/call", {
            "name": "twice", "_meta": meta, "requestState": state,
            "inputResponses": {"same": {"action": "accept", "content": {"x": "1"}}}})
        assert dup["result"]["isError"] is True  # the same key for two questions is the author's bug


async def test_modern_client_retries_once_with_a_shared_revision_on_32022() -> None:
    """-32022 listing a modern revision we speak: the request is sent once more with it."""
    from minimcp import Client, memory_pair

    a, b = memory_pair()
    peer = RawPeer(b)
    seen: list[dict[str, Any]] = []

    async def fake_server() -> None:
        first = await peer.recv()
        seen.append(first)
        await peer.send({"jsonrpc": "2.0", "id": first["id"], "error": {
            "code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"], "requested": "x"}}})
        second = await peer.recv()
        seen.append(second)
        await peer.send({"jsonrpc": "2.0", "id": second["id"], "result": {"resultType": "complete", "tools": []}})

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_server)
        async with Client(a, era="modern") as client:
            assert await client.list_tools() == []
        tg.cancel_scope.cancel()
    assert len(seen) == 2 and seen[0]["id"] != seen[1]["id"]
    assert seen[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


async def test_a_prompt_can_ask_on_both_eras() -> None:
    """A prompt taking a Context asks with the same ctx.elicit: nested on legacy, input_required on modern."""
    app = minimcp.server.server.Server("prompts")
    schema = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}

    @app.prompt()
    async def essay(ctx: Context, tone: str = "plain") -> str:
        answer = await ctx.elicit("Which topic?", schema)
        topic = answer.value["topic"] if isinstance(answer, Accepted) else "nothing"
        return f"Write a {tone} essay about {topic}."

    assert [a.name for a in app.registry.prompts["essay"].definition.arguments] == ["tone"]  # type: ignore[union-attr]

    async def answer(question: ElicitationRequest) -> Any:
        return Accepted({"topic": "tides"})

    for era in ("legacy", "modern"):
        async with connected(app, era=era, elicitation_handler=answer) as (client, _):
            result = await client.get_prompt("essay", {"tone": "calm"})
            assert result.messages[0].content.text == "Write a calm essay about tides."  # type: ignore[union-attr]
            assert client.era == era


async def test_gather_asks_several_things_in_one_round_on_both_eras() -> None:
    """``ctx.gather``: one input_required round with every question (modern); concurrent nested requests (legacy)."""
    from minimcp import Elicit, ListRoots, Sample
    from minimcp.wire.types import Root

    app = minimcp.server.server.Server("gather")
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    starts: list[int] = []

    @app.tool()
    async def welcome(ctx: Context) -> str:
        starts.append(1)
        got = await ctx.gather(
            user_name=Elicit("Name?", form), greeting=Sample("Greet", max_tokens=5), where=ListRoots()
        )
        name = got["user_name"].value["name"] if isinstance(got["user_name"], Accepted) else "?"
        return f"{got['greeting'].content.text} {name} at {got['where'][0].uri}"

    async def answer(question: ElicitationRequest) -> Any:
        return Accepted({"name": "Ada"})

    async def model(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="Hi"), model="m")

    roots = [Root(uri="file:///home")]
    for era in ("legacy", "modern"):
        starts.clear()
        async with connected(app, era=era, elicitation_handler=answer, sampling_handler=model, roots=roots) as (
            client,
            _,
        ):
            result = await client.call_tool("welcome")
            assert result.text == "Hi Ada at file:///home"
        assert starts == [1]  # parked, not replayed: the body ran once

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}}}
    async with raw_client(app) as (peer, _):
        first = await peer.request(1, "tools/call", {"name": "welcome", "_meta": meta})
        assert sorted(first["result"]["inputRequests"]) == ["greeting", "user_name", "where"]
        partial = await peer.request(2, "tools/call", {
            "name": "welcome", "_meta": meta, "requestState": first["result"]["requestState"],
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Bo"}}}})
        # one answer missing: the same three questions again
        assert sorted(partial["result"]["inputRequests"]) == ["greeting", "user_name", "where"]
