"""What a 2026-07-28 round trip in memory computes per request (issue 19): counted, never timed.

The read loop takes both requests of a round trip over (``minimcp.server.mrtr.takeover.take_call``). The work
counted here is the revision's own per-message work: the arguments' digest a ``requestState``
is bound to, what opening a retry's state decodes, the base64 codings of a state. Each count is
pinned beside a check that the security property it touches holds as before (a retry with other
arguments, tool or client is refused; the same arguments in other bytes still go on), and each reply
or state made a cheaper way is held byte for byte equal to what the old way made.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from minimcp import Accepted, Context, Limits, Server
from minimcp.core._takeover import AdoptedRequests
from minimcp.server.mrtr import rounds
from minimcp.server.mrtr.state import StateSealer
from minimcp.transports.memory import MemoryTransport
from minimcp.wire import errors
from tests.helpers import raw_client
from tests.helpers.modern import NAME_FORM, Modern, accept, complete, error_of, input_required, only, text_of
from tests.helpers.modern_round_work import ROUNDS, ask_server, counting, first_round_trip

TIMEOUT = 30








async def test_a_retry_repeating_its_arguments_digests_them_once(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arguments' digest the state is bound to is made on the call only: a retry that repeats the
    call's arguments byte for byte has that digest (it was made twice per round trip)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await first_round_trip(m)
            # (every way in digests a call's arguments through rounds.arguments_digest)
            with counting(monkeypatch, rounds, "digest") as usual:
                for n in range(ROUNDS):
                    requests, state = input_required(await m.call("greet", {"a": n, "b": 1}))
                    key, _ = only(requests)
                    msg = await m.call("greet", {"a": n, "b": 1}, responses={key: accept(name="Ada")}, state=state)
                    assert text_of(complete(msg)) == f"hello Ada {n + 1}"
            digests = usual[0]
            assert digests == ROUNDS, f"{digests} argument digests for {ROUNDS} round trips"


async def test_a_retry_is_still_bound_to_its_arguments(anyio_backend: str) -> None:
    """The binding holds as before: the same arguments in other bytes (another key order) go on; other
    arguments are refused (-32602), and the call is still parked for its real retry."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("greet", {"a": 1, "b": 2}))
            key, _ = only(requests)
            refused = await m.call("greet", {"a": 1, "b": 3}, responses={key: accept(name="Eve")}, state=state)
            error_of(refused, errors.INVALID_PARAMS)
            assert len(server.parking) == 1
            msg = await m.call("greet", {"b": 2, "a": 1}, responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 3"
            assert len(server.parking) == 0


async def test_a_taken_over_retry_checks_its_state_from_its_header(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v2 state whose call is parked here is not decoded at all when the read loop takes its retry
    over: its MAC, header and expiry are checked (``open_header_id``), the binding is the run's own
    (``retry.check_retry``); the payload's tree is not built per retry (``open``)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await first_round_trip(m)
            with counting(monkeypatch, StateSealer, "open") as opened, \
                    counting(monkeypatch, StateSealer, "open_header_id") as header:
                for n in range(ROUNDS):
                    await round_trip(m, n)
            assert (opened[0], header[0]) == (0, ROUNDS)


async def test_a_taken_over_retry_is_still_bound_to_its_tool_and_client(anyio_backend: str) -> None:
    """Another client's identity, or another tool, with a parked call's state is refused (-32602) and the
    call stays parked for its real retry."""
    server = ask_server()

    @server.tool()
    async def other(ctx: Context) -> str:
        return "other"

    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("greet"))
            key, _ = only(requests)
            error_of(await m.call("greet", responses={key: accept(name="Eve")}, state=state, client="eve"),
                     errors.INVALID_PARAMS)
            error_of(await m.call("other", responses={key: accept(name="Eve")}, state=state), errors.INVALID_PARAMS)
            assert len(server.parking) == 1
            msg = await m.call("greet", responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 0"


async def round_trip(m: Modern, n: int) -> None:
    requests, state = input_required(await m.call("greet", {"a": n}))
    key, _ = only(requests)
    msg = await m.call("greet", {"a": n}, responses={key: accept(name="Ada")}, state=state)
    assert text_of(complete(msg)) == f"hello Ada {n}"


def test_the_input_required_reply_from_prepared_bytes_is_the_encoded_result() -> None:
    """The run's ``input_required`` reply, put together from prepared bytes, is byte for byte the
    response ``jsonrpc.encode_result`` makes of :func:`wire_questions.input_required` (ids, keys needing escapes,
    several questions, another server info)."""
    from minimcp.wire import input_required as wire_questions
    from minimcp.wire import jsonrpc
    from minimcp.wire.types import Implementation

    form = wire_questions.Question.create("elicitation/create", {"message": "Naam \u00e9 \"x\"", "requestedSchema": {
        "type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}})
    roots = wire_questions.Question.create("roots/list", {})
    server = Server("s", "0")
    for server.info in (Implementation(name="one", version="1"), Implementation(name="two", version="2", title="T")):
        for id_, keys, questions in ((7, ("q1",), (form,)), ("id-\u00e9\n", ('k"\\', "q2"), (form, roots))):
            wire = server.modern_wire
            expected = jsonrpc.encode_result(id_, wire_questions.input_required(keys, questions, "v1.abc.def", wire))
            assert wire_questions.input_required_reply(id_, keys, questions, "v1.abc.def", wire) == expected


def _sealed_body(token: str) -> bytes:
    from minimcp.server.mrtr.state import _unb64

    return _unb64(token.split(".")[-2])


def _is_sorted_json(body: bytes) -> bool:
    import msgspec

    return msgspec.json.Encoder(order="sorted").encode(msgspec.json.decode(body)) == body


async def test_every_sealed_state_is_the_sorted_encoding_of_its_payload(anyio_backend: str) -> None:
    """A run's first question is sealed from a payload made in sorted order (no copy, no sort); its
    body is the bytes a sorted encoding gives, as for a later question (answers inside: sorted)."""
    server = Server("work", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def twice(ctx: Context) -> str:
        first = await ctx.elicit("First?", NAME_FORM)
        second = await ctx.elicit("Second?", NAME_FORM)
        return "ok" if isinstance(first, Accepted) and isinstance(second, Accepted) else "no"

    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            for _ in range(2):  # (the first request locks the era; the second is taken over)
                requests, state = input_required(await m.call("twice"))
                assert _is_sorted_json(_sealed_body(state))
                requests, state = input_required(
                    await m.call("twice", responses={only(requests)[0]: accept(name="Ada")}, state=state))
                body = _sealed_body(state)
                assert _is_sorted_json(body) and b'"name":"Ada"' in body
                msg = await m.call("twice", responses={only(requests)[0]: accept(name="Bo")}, state=state)
                assert text_of(complete(msg)) == "ok"


def test_the_complete_reply_is_the_encoded_complete_result() -> None:
    """The run's final reply (``wire_envelope.complete_reply``: the tool result's encoding with ``resultType`` and
    ``_meta`` put after it) is byte for byte ``jsonrpc.encode_result`` of :func:`wire_envelope.complete`, for
    results with and without their own ``_meta`` and results of other shapes."""
    from minimcp.wire import envelope as wire_envelope
    from minimcp.wire import jsonrpc
    from minimcp.wire.types import CallToolResult, Implementation, TextContent

    results: list[Any] = [
        CallToolResult(content=[TextContent(text="hi \u00e9")]),
        CallToolResult(content=[], structured_content={"z": 1, "a": [2]}, is_error=True),
        CallToolResult(content=[TextContent(text="x")], meta={"k": "v"}),
        {"content": [], "_meta": {"k": 1}},
        {"content": [], "resultType": "complete"},
    ]
    server = Server("s", "0")
    for server.info in (Implementation(name="one", version="1"), Implementation(name="two", version="2", title="T")):
        for id_ in (3, "id-\u00e9"):
            for result in results:
                expected = jsonrpc.encode_result(id_, wire_envelope.complete(result, server.modern_wire))
                assert wire_envelope.complete_reply(id_, result, server.modern_wire) == expected


def test_a_state_body_is_checked_canonical_without_coding_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a state codes only its MAC to base64 (to compare it): the body's text is checked
    canonical as it is decoded (it was coded again to compare)."""
    from minimcp.server.mrtr import state as state_module

    sealer = StateSealer(b"k" * 32, version="v1")  # (v2 has no canonical check: its MAC covers the text)
    token = sealer.seal({"m": "tools/call", "h": "handle"}, now=1000.0, ttl=60)
    with counting(monkeypatch, state_module, "_b64") as coded:
        sealer.open(token, now=1000.0, binding={})
    assert coded[0] == 1, f"{coded[0]} base64 codings for one open"


@pytest.mark.parametrize("size", range(0, 13))
def test_the_canonical_check_accepts_exactly_what_codes_back_the_same(size: int) -> None:
    """``_canonical_unb64`` gives the bytes of exactly the texts that decode and code back unchanged
    (the check it replaced), and ``None`` for every other: changed last bits, other alphabets, padding,
    whitespace, a length base64 cannot have, other characters."""
    import os

    from minimcp.server.mrtr.state import _b64, _canonical_unb64, _unb64

    def reference(text: str) -> bytes | None:
        try:
            data = _unb64(text)
        except ValueError:
            return None
        return data if _b64(data) == text else None

    text = _b64(os.urandom(size))
    variants = {text, text + "A", text + "=", text + "==", text + "\n", " " + text, text + ".", text + "\u00e9"}
    for i in range(len(text)):
        for c in ("A", "B", "P", "Q", "g", "w", "-", "_", "+", "/", "=", "!"):
            variants.add(text[:i] + c + text[i + 1 :])
    for variant in variants:
        assert _canonical_unb64(variant) == reference(variant), variant
    assert _canonical_unb64(text) == _unb64(text)


async def test_a_taken_over_round_trip_makes_no_helper_call_of_the_request_side(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request side of the usual round trip runs in ``takeover.take_call`` (issue 19): the retry's
    state id comes with its header (no ``StateSealer.state_id``), its parked run is checked against its
    header (no ``StateSealer.open``: that opens any other state), and the request is entered in flight
    through the table the read loop hands over (no ``adoption``/``adopt`` call); the replay of a used
    state is still refused."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            await first_round_trip(m)
            ids = [0]
            state_id = StateSealer.state_id

            def named(token: str) -> str:
                ids[0] += 1
                return state_id(token)

            monkeypatch.setattr(StateSealer, "state_id", staticmethod(named))  # (a static method)
            with counting(monkeypatch, StateSealer, "open") as opened, \
                    counting(monkeypatch, AdoptedRequests, "adoption") as adoptions, \
                    counting(monkeypatch, AdoptedRequests, "adopt") as adopts:
                for n in range(ROUNDS):
                    await round_trip(m, n)
            assert (ids[0], opened[0], adoptions[0], adopts[0]) == (0, 0, 0, 0)
            requests, state = input_required(await m.call("greet", {"a": 1}))
            key, _ = only(requests)
            await m.call("greet", {"a": 1}, responses={key: accept(name="Ada")}, state=state)
            error_of(await m.call("greet", {"a": 1}, responses={key: accept(name="Eve")}, state=state),
                     errors.INVALID_PARAMS)  # (used: refused the usual way)
            assert not conn.session._inflight


async def test_a_taken_over_round_the_transport_cannot_take_at_once_is_sent_when_it_has_room(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run answers its request without a coroutine when the transport takes the answer at once
    (``ServingRun.answer_asking`` is a plain method); when it cannot, the run's task awaits the send: the
    ``input_required`` and the result still arrive, and nothing stays in flight."""
    monkeypatch.setattr(MemoryTransport, "send_nowait", lambda self, message, *, related=None: False)
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            await first_round_trip(m)  # (the request that locks the era is served the usual way)
            with counting(monkeypatch, AdoptedRequests, "reply_adopted") as awaited:
                for n in range(ROUNDS):
                    await round_trip(m, n)
            assert awaited[0] == 2 * ROUNDS  # (each input_required and each result: sent by an await)
            assert not conn.session._inflight
