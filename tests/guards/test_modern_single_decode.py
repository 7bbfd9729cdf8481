"""A 2026-07-28 ``tools/call`` is decoded once by the read loop (issue 19): counted, never timed.

The read loop hands a message naming ``tools/call`` to ``minimcp.server.mrtr.takeover.take_call``, which
decodes its envelope and typed params in one pass and takes the request over. What it does not
take goes the usual way (decoded again, raw params), which answers it as before: the same
errors for the same bad requests, a request id in use refused, the same counts.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from minimcp.core._takeover import AdoptedRequests
from minimcp.server.mrtr import rounds
from minimcp.server.mrtr import takeover as taken_calls
from minimcp.wire import errors, jsonrpc
from tests.helpers import raw_client
from tests.helpers.modern import Modern, accept, complete, error_of, input_required, meta, only, text_of
from tests.helpers.modern_round_work import ROUNDS, ask_server, counting, first_round_trip

TIMEOUT = 30


async def test_a_round_trip_decodes_each_request_once(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither request of a round trip is decoded the usual way (envelope, then params again): the read
    loop decodes each once (before: two ``jsonrpc.decode`` and two params decodings per round trip)."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            await first_round_trip(m)
            received = conn.session.stats.requests_received
            with counting(monkeypatch, jsonrpc, "decode") as envelopes, \
                    counting(monkeypatch, rounds, "_decode_call_params") as params:
                for n in range(ROUNDS):
                    requests, state = input_required(await m.call("greet", {"a": n}))
                    key, _ = only(requests)
                    msg = await m.call("greet", {"a": n}, responses={key: accept(name="Ada")}, state=state)
                    assert text_of(complete(msg)) == f"hello Ada {n}"
            assert (envelopes[0], params[0]) == (0, 0)
            assert conn.session.stats.requests_received == received + 2 * ROUNDS  # (each counted once)


async def test_what_is_not_taken_is_answered_the_usual_way(anyio_backend: str) -> None:
    """A request id in use, a message that is not a valid request, params of the wrong shape: the same
    answers as before, and the session goes on."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("greet"))  # (locks the era; the call stays parked)
            bad: list[tuple[Any, int]] = [
                ({"jsonrpc": "1.0", "id": 9, "method": "tools/call", "params": {"name": "greet"}},
                 errors.INVALID_REQUEST),
                ({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "greet"}},
                 errors.INVALID_REQUEST),
                ({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": None}, errors.INVALID_PARAMS),
                ({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 3, "_meta": meta()}},
                 errors.INVALID_PARAMS),
                ({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                  "params": {"name": "greet", "inputResponses": {"x": 1}, "_meta": meta()}}, errors.INVALID_PARAMS),
                ({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "nope", "_meta": meta()}},
                 errors.INVALID_PARAMS),
            ]
            for message, code in bad:
                await peer.send(message)
                error_of(await peer.recv(), code)
            await peer.send(b'{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":')  # (not JSON)
            error_of(await peer.recv(), errors.PARSE_ERROR)
            msg = await m.call("greet", responses={only(requests)[0]: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 0"


async def test_an_id_in_flight_is_refused_as_before(anyio_backend: str) -> None:
    """A ``tools/call`` reusing the id of a request still in flight is refused (-32600), not taken."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            input_required(await m.call("greet"))  # (locks the era)
            conn.session._inflight[99] = anyio.CancelScope()  # (a request 99 in flight, as a handler's would be)
            try:
                await peer.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                 "params": {"name": "greet", "arguments": {}, "_meta": meta()}})
                refused = error_of(await peer.recv(), errors.INVALID_REQUEST)
                assert "already in use" in refused["message"]
                assert len(server.parking) == 1  # (only the first call's run: none started for 99)
            finally:
                del conn.session._inflight[99]


async def test_a_reply_sent_at_once_makes_no_coroutine(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A taken-over request's reply that the transport takes at once is sent by ``reply_adopted_now``:
    no ``reply_adopted`` coroutine per reply (before: two per round trip); each request ends in flight."""
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            await first_round_trip(m)
            with counting(monkeypatch, AdoptedRequests, "reply_adopted") as waits:
                for n in range(ROUNDS):
                    requests, state = input_required(await m.call("greet", {"a": n}))
                    key, _ = only(requests)
                    msg = await m.call("greet", {"a": n}, responses={key: accept(name="Ada")}, state=state)
                    assert text_of(complete(msg)) == f"hello Ada {n}"
            assert waits[0] == 0
            assert not conn.session._inflight


async def test_a_call_decoded_the_usual_way_is_still_taken_over(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``tools/call`` whose method name is escaped (no literal ``"tools/call"`` in its bytes) is decoded
    the usual way and still taken over (``takeover.take_over``, the same ``take_call`` as the read loop's): its run
    answers it, and its retry resumes that run; each request counted once."""
    server = ask_server()
    escaped = msgspec.json.encode  # (the method written "tools\/call": the same text once decoded)

    def request(id_: int, params: dict[str, Any]) -> bytes:
        body = escaped({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})
        return body.replace(b'"tools/call"', b'"tools\\/call"')

    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            m = Modern(peer)
            await first_round_trip(m)
            received = conn.session.stats.requests_received
            with counting(monkeypatch, taken_calls, "take_call") as taken:
                await peer.send(request(50, {"name": "greet", "arguments": {"a": 7}, "_meta": meta()}))
                requests, state = input_required(await peer.recv())
                key, _ = only(requests)
                await peer.send(request(51, {"name": "greet", "arguments": {"a": 7}, "_meta": meta(),
                                             "inputResponses": {key: accept(name="Ada")}, "requestState": state}))
                msg = await peer.recv()
            assert msg["id"] == 51 and text_of(complete(msg)) == "hello Ada 7"
            assert taken[0] == 2 and len(server.parking) == 0
            assert conn.session.stats.requests_received == received + 2
            assert not conn.session._inflight
