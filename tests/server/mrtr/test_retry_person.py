"""A 2026-07-28 ``requestState`` is bound to its person, on each way a retry comes in (issue 29).

The binding's ``u`` is a digest of the principal's key ``(iss, sub)``: another person's retry is refused
with -32602 whichever way it comes -- the read loop's fast path, which checks a parked run's record
without opening the state, and the handler task's full opener -- runs nothing, and leaves the state
unused for its owner; a refreshed token of the same person goes on. Here the person is the connection's
(as on a transport that holds one per connection); over HTTP it is the request's
(``tests/transports/http/test_http_modern_auth.py``).
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Context, Limits, Server
from minimcp.auth.principal import Principal
from minimcp.server.mrtr import retry, rounds, takeover
from minimcp.wire import errors
from tests.helpers import raw_client
from tests.helpers.auth_tokens import ISSUER, person
from tests.helpers.modern import NAME_FORM, accept, complete, input_required, meta, only, text_of

TIMEOUT = 30
WAYS = ["read loop", "handler"]
INVALID = {
    "code": errors.INVALID_PARAMS,
    "message": "Invalid or expired requestState",
    "data": {"reason": "invalid_request_state"},
}

ALICE = person("alice", "a")
ALICE_REFRESHED = person("alice", "a", "b")
BOB = person("bob")
ALICE_ELSEWHERE = person("alice", issuer="https://other.example")


def test_the_binding_names_the_person_by_a_digest_and_nothing_without_one() -> None:
    assert "u" not in retry.binding("tools/call", "t", "d", "c")  # no authorization: states as before
    u = retry.user_of(ALICE)
    assert retry.binding("tools/call", "t", "d", "c", u)["u"] == u
    assert "alice" not in u and len(u) == 22
    assert retry.user_of(ALICE_REFRESHED) == u  # the key, not the token: a refreshed token is the same person
    assert len({u, retry.user_of(BOB), retry.user_of(ALICE_ELSEWHERE)}) == 3  # (iss, sub), not sub alone
    client = Principal(issuer=ISSUER, subject=None, client_id="alice")
    assert retry.user_of(client) != u  # a client acting for itself is not the person of the same name


def make_server(counts: dict[str, int]) -> Server:
    server = Server("person", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def greet(ctx: Context, a: int = 0) -> str:
        counts["started"] += 1
        answer = await ctx.elicit("Your name?", NAME_FORM)
        counts["continued"] += 1
        who = ctx.auth
        assert who is not None and isinstance(answer, Accepted)
        return f"{who.subject} {answer.value['name']} {a}"

    return server


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("intruder", [BOB, ALICE_ELSEWHERE], ids=["bob", "alice-of-another-issuer"])
async def test_another_persons_retry_is_refused_every_way_and_leaves_the_state_to_its_owner(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, way: str, intruder: Principal
) -> None:
    counts = {"started": 0, "continued": 0}
    checked = {"takeover": 0, "rounds": 0}
    original = retry.check_retry
    for module in (rounds, takeover):

        def counted(*args: Any, _name: str = module.__name__.rsplit(".", 1)[1], **kwargs: Any) -> Any:
            checked[_name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, "check_retry", counted)
    ids = iter(range(1, 100))

    async def call(peer: Any, **params: Any) -> dict[str, Any]:
        body = {"name": "greet", "arguments": {"a": 1}, "_meta": meta(), **params}
        await peer.send(
            msgspec.json.encode({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": body})
        )
        reply: dict[str, Any] = await peer.recv()
        return reply

    with anyio.fail_after(TIMEOUT):
        async with raw_client(make_server(counts)) as (peer, conn):
            conn.principal = ALICE
            input_required(await call(peer))  # (the era's first call, served by a handler task, locks it)
            if way == "handler":  # (the read loop takes nothing over: a handler task serves every request)
                conn.session.take_call = conn.session.take_over = None
            requests, state = input_required(await call(peer))  # the read loop's way: its run's record holds alice
            key = only(requests)[0]
            conn.principal = intruder
            refused = await call(peer, inputResponses={key: accept(name="Eve")}, requestState=state)
            assert refused.get("error") == INVALID, refused
            assert checked["rounds"] == 1 and (checked["takeover"] >= 1) is (way == "read loop"), checked
            assert counts == {"started": 2, "continued": 0}  # nothing ran
            conn.principal = ALICE_REFRESHED  # the owner, with a refreshed token: the state is still good
            done = await call(peer, inputResponses={key: accept(name="Ada")}, requestState=state)
            assert text_of(complete(done)) == "alice Ada 1"
            assert counts == {"started": 2, "continued": 1}
