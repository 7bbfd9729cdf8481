"""URL steps bound to their person (issue 29): whom a URL elicitation is for; completions by anyone else refused.

The spec's URL mode: "servers MUST bind elicitation requests to the client and user identity" and
must verify the person who opens the URL. Here the connection's principal stands for what a
transport that checks tokens sets; the page's check (``Server.url_step_is_for``) and the completion
(``Server.complete_url_elicitation(id, person=...)``) are what a page calls after signing the
person in. Both eras; two workers on an in-memory bus for the completion that travels.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp import Context, Server, UrlElicitationRequired
from minimcp.scaleout.bus import InMemoryBus
from minimcp.server.bus import Notice
from minimcp.server.url_steps import WrongPerson
from tests.helpers import RawPeer, raw_client
from tests.helpers.auth_tokens import person
from tests.helpers.modern import KEY, input_required, modern_peer, only

ALICE = person("alice")
BOB = person("bob")
ALICE_ELSEWHERE = person("alice", issuer="https://other.example")  # same sub, another issuer
PAGES = "https://pages.example/step/"
WAIT = 10


def make_server(name: str = "urls", **options: Any) -> Server:
    server = Server(name, state_key=KEY, **options)

    @server.tool()
    async def minted(ctx: Context) -> str:
        raise UrlElicitationRequired([ctx.url_elicitation("Pay the deposit", "https://pay.example/d")])

    @server.tool()
    async def given(ctx: Context) -> str:
        # An id of the application's own making, not bound by a tag: recorded where its session lives.
        raise UrlElicitationRequired([ctx.url_elicitation("Pay", "https://pay.example/d", elicitation_id="plain-1")])

    @server.tool()
    async def page(ctx: Context) -> str:
        step = ctx.url_step_id("deposit")
        answer = await ctx.elicit_url("Pay the deposit", PAGES + urllib.parse.quote(step, safe=""), elicitation_id=step)
        return type(answer).__name__

    return server


async def url_step(peer: RawPeer, tool: str = "minted") -> str:
    await peer.initialize(capabilities={"elicitation": {"url": {}}})
    step = await peer.request(1, "tools/call", {"name": tool})
    eid: str = step["error"]["data"]["elicitations"][0]["elicitationId"]
    return eid


def completion(eid: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": eid}}


@contextlib.asynccontextmanager
async def running(*servers: Server) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        for server in servers:
            await tg.start(server.run_background)
        yield
        tg.cancel_scope.cancel()


# --- the handshake era ---------------------------------------------------------------------------


async def test_a_minted_url_step_is_bound_to_its_person_and_refused_to_anyone_else() -> None:
    server = make_server()
    async with raw_client(server) as (peer, conn):
        conn.principal = ALICE
        eid = await url_step(peer)
        assert "~" in eid  # the tag that binds it
        assert server.url_person(eid) == ALICE.key
        assert server.url_step_is_for(eid, ALICE) and server.url_step_is_for(eid, ALICE.key)
        for other in (BOB, ALICE_ELSEWHERE, None):
            assert not server.url_step_is_for(eid, other)
            with pytest.raises(WrongPerson):
                await server.complete_url_elicitation(eid, person=other)
        assert await peer.nothing_for(0.2)  # nothing was sent for the wrong person
        assert eid in conn.url_elicitations  # and the step stays open for its own
        assert await server.complete_url_elicitation(eid, person=ALICE) is True
        assert await peer.recv(WAIT) == completion(eid)
        assert server.url_person(eid) is None  # done: forgotten


async def test_a_tampered_tag_or_a_stripped_one_is_not_the_persons_step() -> None:
    server = make_server()
    async with raw_client(server) as (peer, conn):
        conn.principal = ALICE
        eid = await url_step(peer)
        base, _, tag = eid.rpartition("~")
        assert not server.url_step_is_for(f"{base}~{tag[:-1]}{'B' if tag[-1] == 'A' else 'A'}", ALICE)
        assert not server.url_step_is_for(base, ALICE)  # stripped: an id nobody holds, refused to a person
        with pytest.raises(WrongPerson):
            await server.complete_url_elicitation(base, person=ALICE)


async def test_an_id_the_application_gives_is_recorded_where_its_session_lives() -> None:
    server = make_server()
    async with raw_client(server) as (peer, conn):
        conn.principal = ALICE
        eid = await url_step(peer, "given")
        assert eid == "plain-1" and server.url_person(eid) == ALICE.key
        assert server.url_step_is_for(eid, ALICE) and not server.url_step_is_for(eid, BOB)
        with pytest.raises(WrongPerson):
            await server.complete_url_elicitation(eid, person=BOB)
        # Another worker (same keys) cannot tell whose an unbound id is: it refuses a person (fail closed).
        assert not make_server("b").url_step_is_for(eid, ALICE)
        assert await server.connections.copy().pop().complete_url_elicitation(eid, person=ALICE) is True
        assert await peer.recv(WAIT) == completion(eid)


async def test_without_authorization_nothing_is_bound_and_completion_is_as_before() -> None:
    server = make_server()
    async with raw_client(server) as (peer, conn):
        assert conn.principal is None
        eid = await url_step(peer)
        assert "~" not in eid and server.url_person(eid) is None
        assert server.url_step_is_for(eid, None) and server.url_step_is_for(eid, BOB)  # made for nobody
        assert await server.complete_url_elicitation(eid, person=None) is True
        assert await peer.recv(WAIT) == completion(eid)
        again = await peer.request(2, "tools/call", {"name": "minted"})
        eid = again["error"]["data"]["elicitations"][0]["elicitationId"]
        assert await server.complete_url_elicitation(eid) is True  # unchecked, as before
        assert await peer.recv(WAIT) == completion(eid)


async def test_the_application_may_complete_a_bound_step_itself() -> None:
    server = make_server()
    async with raw_client(server) as (peer, conn):
        conn.principal = ALICE
        eid = await url_step(peer)
        assert await server.complete_url_elicitation(eid) is True  # a provider's callback: no person
        assert await peer.recv(WAIT) == completion(eid)


# --- revision 2026-07-28: page ids from call_id ----------------------------------------------------


async def test_on_2026_07_28_a_page_id_from_call_id_names_its_person_on_any_worker() -> None:
    server = make_server()
    async with modern_peer(server) as (peer, conn):
        conn.principal = ALICE
        requests, _ = input_required(await peer.call("page", caps={"elicitation": {"url": {}}}))
        _, entry = only(requests)
        assert "elicitationId" not in entry["params"]
        step = urllib.parse.unquote(entry["params"]["url"].removeprefix(PAGES))
        assert "~" in step
        other_worker, other_keys = make_server("b"), Server("c", state_key=b"z" * 32)
        assert server.url_step_is_for(step, ALICE) and other_worker.url_step_is_for(step, ALICE)
        assert not other_keys.url_step_is_for(step, ALICE)  # keys not shared: cannot check, refused
        for checker in (server, other_worker):
            assert not checker.url_step_is_for(step, BOB)
            with pytest.raises(WrongPerson):
                await checker.complete_url_elicitation(step, person=BOB)
            assert await checker.complete_url_elicitation(step, person=ALICE) is False  # nothing to notify


async def test_url_step_id_is_the_same_in_every_round_and_plain_without_authorization() -> None:
    server = make_server()
    async with modern_peer(server) as (peer, conn):
        urls = []
        for principal in (ALICE, ALICE, None):
            conn.principal = principal
            requests, _ = input_required(await peer.call("page", caps={"elicitation": {"url": {}}}))
            urls.append(only(requests)[1]["params"]["url"])
        assert "~" in urls[0] and "~" not in urls[2]
        assert urls[0] != urls[1]  # each call has its own call_id
        assert urls[0].split("~")[0] != urls[2]


# --- two workers -------------------------------------------------------------------------------------


async def test_a_completion_on_another_worker_for_the_wrong_person_is_refused() -> None:
    bus = InMemoryBus()
    a, b = make_server("a", bus=bus, worker_id="a"), make_server("b", bus=bus, worker_id="b")
    async with running(a, b), raw_client(a) as (alice, conn):
        conn.principal = ALICE
        eid = await url_step(alice)
        # B checks the tag itself: refused there, nothing published.
        with pytest.raises(WrongPerson):
            await b.complete_url_elicitation(eid, person=BOB)
        assert bus.stats.published == 0
        # A notice naming the wrong person (a worker that did not check): A, holding the step, refuses it.
        bus.publish(Notice("url_complete", eid, "b", BOB.key))
        bus.publish(Notice("url_complete", eid, "b", ()))  # nobody signed in
        assert await alice.nothing_for(0.3)
        assert eid in conn.url_elicitations
        # The right person on B: published with her key, A checks it again and tells its client, once.
        assert await b.complete_url_elicitation(eid, person=ALICE) is False
        assert await alice.recv(WAIT) == completion(eid)
        assert eid not in conn.url_elicitations
        assert await alice.nothing_for(0.2)


async def test_an_unbound_id_completed_on_another_worker_is_checked_where_it_lives() -> None:
    bus = InMemoryBus()
    a, b = make_server("a", bus=bus, worker_id="a"), make_server("b", bus=bus, worker_id="b")
    async with running(a, b), raw_client(a) as (alice, conn):
        conn.principal = ALICE
        eid = await url_step(alice, "given")
        bus.publish(Notice("url_complete", eid, "b", BOB.key))
        assert await alice.nothing_for(0.3)
        bus.publish(Notice("url_complete", eid, "b", ALICE.key))
        assert await alice.recv(WAIT) == completion(eid)
