"""v2 ``requestState`` through a server: the read loop's fast path for a retry whose call is parked here.

That path decodes no body: it checks the token's MAC over its text and its header (handle, expiry,
arguments' digest) and takes the binding from the parked run's own record. Every refusal is the
frozen -32602 "Invalid or expired requestState" (or "already used"), the call stays parked for its
real retry, and v1 tokens of an older release still resume. The sealer alone: test_state_v2.py.
"""

from __future__ import annotations

import time
import types
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Context, Limits, Server
from minimcp.server.mrtr import rounds
from minimcp.server.mrtr import takeover as taken_calls
from minimcp.server.mrtr.state import StateSealer
from minimcp.server.mrtr.used_states import MemoryUsedStates
from minimcp.wire import errors
from tests.helpers import raw_client
from tests.helpers.modern import (
    INVALID_STATE,
    NAME_FORM,
    Modern,
    accept,
    complete,
    error_of,
    input_required,
    only,
    text_of,
)
from tests.helpers.modern_round_work import counting
from tests.helpers.state_v2 import TAMPERED

TIMEOUT = 30
KEY = b"k" * 32
OLD = b"o" * 32
OTHER = b"x" * 32


def ask_server(**options: Any) -> tuple[Server, list[int]]:
    """A server whose ``greet`` asks twice (the second only when ``twice``), and the count of its bodies run."""
    server = Server("v2", limits=Limits(elicitation_timeout=600), state_key=KEY, **options)
    started = [0]

    @server.tool()
    async def greet(ctx: Context, a: int = 0, twice: bool = False) -> str:
        started[0] += 1
        answer = await ctx.elicit("Your name?", NAME_FORM)
        if twice:
            answer = await ctx.elicit("Again?", NAME_FORM)
        return f"hello {answer.value['name']} {a}" if isinstance(answer, Accepted) else "no"

    @server.tool()
    async def other(ctx: Context) -> str:
        return "other"

    return server, started


async def warm_up(m: Modern) -> None:
    """The first request locks the connection's era (served the usual way); later calls are taken over."""
    requests, state = input_required(await m.call("greet"))
    complete(await m.call("greet", responses={only(requests)[0]: accept(name="Ada")}, state=state))


def refused(msg: dict[str, Any]) -> str:
    error = error_of(msg, errors.INVALID_PARAMS)
    reason: str = error["data"]["reason"]
    if reason == "invalid_request_state":
        assert error["message"] == INVALID_STATE
    return reason


@pytest.mark.parametrize("how", sorted(TAMPERED))
async def test_a_tampered_v2_state_of_a_call_parked_here_is_refused(anyio_backend: str, how: str) -> None:
    server, started = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            requests, state = input_required(await m.call("greet", {"a": 7}))
            assert state.startswith("v2.")
            key = only(requests)[0]
            bad = await m.call("greet", {"a": 7}, responses={key: accept(name="Eve")}, state=TAMPERED[how](state))
            assert refused(bad) == "invalid_request_state"
            assert len(server.parking) == 1  # still parked for its real retry
            msg = await m.call("greet", {"a": 7}, responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 7"
            assert started[0] == 2  # (the warm-up and this call: resumed, never replayed)


async def test_a_v2_state_past_its_expiry_is_refused_though_its_call_is_parked_here(anyio_backend: str) -> None:
    server, _started = ask_server(state_ttl=0.2)
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            requests, state = input_required(await m.call("greet"))
            expiry = int(state.split(".")[3]) / 1000
            while time.time() <= expiry:  # noqa: ASYNC110 - the wall clock the state's expiry is on has no event
                await anyio.sleep(0.05)
            late = await m.call("greet", responses={only(requests)[0]: accept(name="Eve")}, state=state)
            assert refused(late) == "invalid_request_state"
            assert len(server.parking) == 1


@pytest.mark.parametrize("change", ["client", "tool", "arguments", "no-client"])
async def test_a_v2_state_is_bound_to_its_call_on_the_fast_path(anyio_backend: str, change: str) -> None:
    server, _started = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            requests, state = input_required(await m.call("greet", {"a": 1}))
            key = only(requests)[0]
            responses = {key: accept(name="Eve")}
            if change == "client":
                bad = await m.call("greet", {"a": 1}, responses=responses, state=state, client="eve")
            elif change == "no-client":
                bad = await m.call("greet", {"a": 1}, responses=responses, state=state, client=None)
            elif change == "tool":
                bad = await m.call("other", {"a": 1}, responses=responses, state=state)
            else:
                bad = await m.call("greet", {"a": 2}, responses=responses, state=state)
            assert refused(bad) == "invalid_request_state"
            assert len(server.parking) == 1
            msg = await m.call("greet", {"a": 1}, responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 1"


async def test_an_older_state_of_a_parked_call_is_refused_used_then_expired(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call parked for its second question: the state of its first round was used (refused as used);
    once that state expired (its record of use forgotten with it) it is still refused, though the call
    it names is parked here under a later state that has not expired."""
    clock = [time.time()]
    monkeypatch.setattr(rounds, "time", types.SimpleNamespace(time=lambda: clock[0]))
    monkeypatch.setattr(taken_calls, "time", types.SimpleNamespace(time=lambda: clock[0]))  # (retries taken over)
    server, started = ask_server(state_ttl=60.0, used_states=MemoryUsedStates(1000, clock=lambda: clock[0]))
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            requests, first = input_required(await m.call("greet", {"twice": True}))
            key = only(requests)[0]
            clock[0] += 1.0
            requests, second = input_required(
                await m.call("greet", {"twice": True}, responses={key: accept(name="Ada")}, state=first))
            key = only(requests)[0]
            assert first.split(".")[1] == second.split(".")[1]  # (one parked call, one handle)
            again = await m.call("greet", {"twice": True}, responses={key: accept(name="Eve")}, state=first)
            assert refused(again) == "request_state_used"
            clock[0] += 59.5  # the first state expired (and its record of use with it); the second has not
            late = await m.call("greet", {"twice": True}, responses={key: accept(name="Eve")}, state=first)
            assert refused(late) == "invalid_request_state"
            assert len(server.parking) == 1
            msg = await m.call("greet", {"twice": True}, responses={key: accept(name="Bo")}, state=second)
            assert text_of(complete(msg)) == "hello Bo 0"
            assert started[0] == 2


async def test_a_v1_state_of_an_older_release_still_resumes_its_parked_call(anyio_backend: str) -> None:
    """A rolling deploy: the state was sealed in v1; the sealer now seals v2 and opens both. A tampered
    v1 state is refused as before."""
    server, started = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            server.sealer = StateSealer(KEY, version="v1")
            requests, state = input_required(await m.call("greet", {"a": 3}))
            assert state.startswith("v1.")
            server.sealer = StateSealer(KEY)
            key = only(requests)[0]
            version, body, mac = state.split(".")
            for bad in (f"{version}.{body}=.{mac}", f"{version}.{body[:-3]}AAA.{mac}", state + "x"):
                msg = await m.call("greet", {"a": 3}, responses={key: accept(name="Eve")}, state=bad)
                assert refused(msg) == "invalid_request_state"
            assert len(server.parking) == 1
            msg = await m.call("greet", {"a": 3}, responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 3"
            assert started[0] == 2  # resumed, not replayed
            again = await m.call("greet", {"a": 3}, responses={key: accept(name="Ada")}, state=state)
            assert refused(again) == "request_state_used"


async def test_a_v1_state_of_an_older_worker_replays_on_a_new_one(anyio_backend: str) -> None:
    old_worker, _ = ask_server()
    old_worker.sealer = StateSealer(KEY, version="v1")
    new_worker, started = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(old_worker) as (peer, _conn):
            requests, state = input_required(await Modern(peer).call("greet", {"a": 4}))
        assert state.startswith("v1.")
        async with raw_client(new_worker) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            msg = await m.call("greet", {"a": 4}, responses={only(requests)[0]: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 4"
            assert started[0] == 2  # (the warm-up, and the replay)


@pytest.mark.parametrize("version", ["v1", "v2"])
async def test_key_rotation_through_the_server(
    anyio_backend: str, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state sealed under the old key: refused once that key is dropped (or under another key), resumed
    while the old key is still listed after the new one."""
    server, started = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            await warm_up(m)
            server.sealer = StateSealer(OLD, version=version)
            requests, state = input_required(await m.call("greet", {"a": 5}))
            key = only(requests)[0]
            for sealer in (StateSealer(KEY), StateSealer(OTHER, old_keys=(KEY,))):
                server.sealer = sealer
                msg = await m.call("greet", {"a": 5}, responses={key: accept(name="Eve")}, state=state)
                assert refused(msg) == "invalid_request_state"
            assert len(server.parking) == 1
            server.sealer = StateSealer(KEY, old_keys=(OLD,))
            with counting(monkeypatch, StateSealer, "open_header_id") as header:
                msg = await m.call("greet", {"a": 5}, responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada 5"
            assert started[0] == 2  # resumed
            assert header[0] == (1 if version == "v2" else 0)  # (v2: on the fast path, no body decoded)
