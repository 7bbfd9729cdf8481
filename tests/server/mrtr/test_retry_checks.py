"""Each check of a 2026-07-28 retry (``minimcp.server.mrtr.retry``), through each way a retry comes in.

The ways: the read loop taking the message over (``takeover.take_call``), a request decoded the usual
way and taken over (``takeover.take_over``: its method name escaped), and a handler task
(``rounds.serve``: the session's take-over hooks off). Whichever way a retry comes, it gets the same
answer: the same refusal (code, message and data, as before the checks were written once), or the same
result; and each way calls the one checker.
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Context, Limits, Server
from minimcp.server.connection import ServerConnection
from minimcp.server.mrtr import retry, rounds, takeover
from minimcp.wire import errors
from tests.helpers import RawPeer, raw_client
from tests.helpers.modern import NAME_FORM, accept, complete, input_required, meta, only, text_of

TIMEOUT = 30
WAYS = ["read loop", "decoded", "handler"]

INVALID = {"code": errors.INVALID_PARAMS, "message": "Invalid or expired requestState",
           "data": {"reason": "invalid_request_state"}}
USED = {"code": errors.INVALID_PARAMS,
        "message": "requestState already used: each one is good for one retry (call again without it to start over)",
        "data": {"reason": "request_state_used"}}


def make_server(**options: Any) -> Server:
    limits = options.pop("limits", Limits(elicitation_timeout=600))
    server = Server("checks", limits=limits, **options)

    @server.tool()
    async def greet(ctx: Context, a: int = 0) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)
        return f"hello {answer.value['name']} {a}" if isinstance(answer, Accepted) else f"no {a}"

    @server.tool()
    async def other(ctx: Context, a: int = 0) -> str:
        return "other"

    return server


class Way:
    """Calls ``tools/call`` on 2026-07-28 the way named, counting the calls of the one checker."""

    def __init__(self, way: str, peer: RawPeer, conn: ServerConnection) -> None:
        self.way, self.peer, self.conn = way, peer, conn
        self.ids = 0
        #: The checker's calls by the take-over (the first two ways) and by the handler task's way.
        self.checked = {"takeover": 0, "rounds": 0}

    async def call(self, name: str, arguments: dict[str, Any], *, client: str = "raw", **params: Any) -> dict[str, Any]:
        self.ids += 1
        body = {"name": name, "arguments": arguments, "_meta": meta(client=client), **params}
        message = msgspec.json.encode({"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": body})
        if self.way == "decoded":  # (no literal "tools/call": the read loop leaves it to the usual decoding)
            message = message.replace(b'"tools/call"', b'"tools\\/call"')
        await self.peer.send(message)
        reply = await self.peer.recv()
        assert reply["id"] == self.ids, reply
        return reply

    async def retry(self, state: str, key: str, name: str = "greet", arguments: dict[str, Any] | None = None,
                    **options: Any) -> dict[str, Any]:
        return await self.call(name, {"a": 1} if arguments is None else arguments,
                               inputResponses={key: accept(name="Ada")}, requestState=state, **options)


    def refused_by_the_checker(self) -> None:
        """The one checker was called by this way, and the refusal came from the handler task's call of it
        (the take-over leaves what the checker refuses to the handler task)."""
        assert self.checked["rounds"] == 1, self.checked
        assert (self.checked["takeover"] >= 1) is (self.way != "handler"), self.checked
        self.checked = {"takeover": 0, "rounds": 0}


@contextmanager
def counting_checks(monkeypatch: pytest.MonkeyPatch, way: Way) -> Iterator[None]:
    original = retry.check_retry
    for module in (rounds, takeover):

        def counted(*args: Any, _name: str = module.__name__.rsplit(".", 1)[1], **kwargs: Any) -> Any:
            way.checked[_name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, "check_retry", counted)
    yield


@asynccontextmanager
async def ways(server: Server, way: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Way, str, str]]:
    """A connection locked to 2026-07-28 by a first call of ``greet`` (parked: its state and question's key)."""
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, conn):
            caller = Way(way, peer, conn)
            requests, state = input_required(await caller.call("greet", {"a": 1}))
            if way == "handler":  # (the read loop takes nothing over: a handler task serves every request)
                conn.session.take_call = conn.session.take_over = None
            with counting_checks(monkeypatch, caller):
                yield caller, state, only(requests)[0]
            assert not conn.session._inflight


def refusal_of(msg: dict[str, Any]) -> dict[str, Any]:
    assert "error" in msg, msg
    error: dict[str, Any] = msg["error"]
    return error


async def goes_on(caller: Way, state: str, key: str) -> None:
    """The call refused is still parked: its real retry completes it."""
    assert text_of(complete(await caller.retry(state, key))) == "hello Ada 1"


def _flip(text: str, index: int) -> str:
    return text[:index] + ("A" if text[index] != "A" else "B") + text[index + 1:]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("how", ["mac", "header", "body", "other key", "not a state"])
async def test_a_state_that_does_not_verify_is_refused_the_same_every_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str, how: str
) -> None:
    server = make_server()
    async with ways(server, way, monkeypatch) as (caller, state, key):
        parts = state.split(".")
        tampered: dict[str, Callable[[], str]] = {
            "mac": lambda: ".".join([*parts[:5], _flip(parts[5], 3)]),
            "header": lambda: ".".join([parts[0], parts[1], parts[2], str(int(parts[3]) + 1), *parts[4:]]),
            "body": lambda: ".".join([*parts[:4], _flip(parts[4], 6), parts[5]]),
            "other key": lambda: Server("x", state_key=b"o" * 32).sealer.seal(
                {"m": "tools/call", "t": "greet", "h": parts[1], "a": parts[2], "p": "raw"}, now=0.0, ttl=1e12),
            "not a state": lambda: "v2.nothing",
        }
        bad = tampered[how]()
        assert refusal_of(await caller.retry(bad, key)) == INVALID
        caller.refused_by_the_checker()
        await goes_on(caller, state, key)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("change", ["tool", "client", "arguments"])
async def test_a_state_is_bound_to_its_call_and_client_the_same_every_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str, change: str
) -> None:
    server = make_server()
    async with ways(server, way, monkeypatch) as (caller, state, key):
        changes: dict[str, dict[str, Any]] = {"tool": {"name": "other"}, "client": {"client": "eve"},
                                              "arguments": {"arguments": {"a": 2}}}
        options = changes[change]
        assert refusal_of(await caller.retry(state, key, **options)) == INVALID
        caller.refused_by_the_checker()
        await goes_on(caller, state, key)


def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The wall clock of the rounds and of the take-over, moved by the list's one item (seconds)."""
    import time

    ahead = [0.0]
    moved = types.SimpleNamespace(time=lambda: time.time() + ahead[0])
    monkeypatch.setattr(rounds, "time", moved)
    monkeypatch.setattr(takeover, "time", moved)
    return ahead


@pytest.mark.parametrize("way", WAYS)
async def test_an_expired_state_is_refused_the_same_every_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    ahead = clock(monkeypatch)
    server = make_server(state_ttl=100.0)  # (the question waits 600 s: only the state expires)
    async with ways(server, way, monkeypatch) as (caller, state, key):
        ahead[0] = 101.0
        assert refusal_of(await caller.retry(state, key)) == INVALID
        caller.refused_by_the_checker()
        ahead[0] = 0.0
        await goes_on(caller, state, key)


@pytest.mark.parametrize("way", WAYS)
async def test_an_answer_after_the_questions_timeout_is_no_answer_every_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    ahead = clock(monkeypatch)
    server = make_server(limits=Limits(elicitation_timeout=100))  # (the state lasts 600 s)
    async with ways(server, way, monkeypatch) as (caller, state, key):
        ahead[0] = 101.0
        assert text_of(complete(await caller.retry(state, key))) == "no 1"  # (the answer came too late)
        served = "rounds" if way == "handler" else "takeover"  # (taken over: the run answers at once)
        assert caller.checked == {"takeover": 0, "rounds": 0, served: 1}
        assert len(server.parking) == 0


@pytest.mark.parametrize("way", WAYS)
async def test_a_state_is_good_for_one_retry_every_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    server = make_server()
    async with ways(server, way, monkeypatch) as (caller, state, key):
        assert text_of(complete(await caller.retry(state, key))) == "hello Ada 1"
        served = "rounds" if way == "handler" else "takeover"  # (taken over: the run answers at once)
        assert caller.checked == {"takeover": 0, "rounds": 0, served: 1}
        caller.checked[served] = 0
        assert refusal_of(await caller.retry(state, key)) == USED
        caller.refused_by_the_checker()
        # A used state of a call still parked (an older round's) is refused too, and the call goes on.
        requests, first = input_required(await caller.call("greet", {"a": 1}))
        key = only(requests)[0]
        await caller.call("greet", {"a": 1}, inputResponses={}, requestState=first)  # (an answer missing: asked again)
        caller.checked = {"takeover": 0, "rounds": 0}
        assert refusal_of(await caller.retry(first, key)) == USED
        caller.refused_by_the_checker()
        assert len(server.parking) == 1
