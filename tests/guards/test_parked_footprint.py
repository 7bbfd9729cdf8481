"""What a parked 2026-07-28 call holds on the server (issue 19: bytes per parked call).

A parked run is kept per waiting call, so it must stay lean: slots, no anyio Event of its
own (a one-shot cell is made only while someone waits), and no second copy of the
request's envelope in its context. The call still resumes with its answer.
"""

from __future__ import annotations

import gc
from typing import Any

import anyio

from minimcp import Accepted, Context, Server
from minimcp.server.mrtr.run import Run
from tests.helpers import raw_client
from tests.helpers.modern import NAME_FORM, Modern, accept, complete, input_required, only, text_of
from tests.helpers.parked_footprint import _bench_modern

TIMEOUT = 30


def ask_server() -> Server:
    server = Server("parked")

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)
        return f"hello {answer.value['name']}" if isinstance(answer, Accepted) else "no"

    return server


def parked_run(server: Server) -> Run:
    runs: Any = server.parking._runs
    assert len(runs) == 1
    run = next(iter(runs.values()))
    assert isinstance(run, Run)
    return run


async def test_a_parked_run_holds_no_event_and_no_instance_dict() -> None:
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("greet"))
            run = parked_run(server)
            assert not hasattr(run, "__dict__")
            held = gc.get_referents(run)
            assert not any(isinstance(obj, anyio.Event) for obj in held), held
            key, _ = only(requests)
            msg = await m.call("greet", responses={key: accept(name="Ada")}, state=state)
            assert text_of(complete(msg)) == "hello Ada"


async def test_a_parked_context_keeps_no_copy_of_the_envelope() -> None:
    server = ask_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("greet"))
            ctx = parked_run(server).context
            assert ctx is not None and ctx.envelope is not None
            meta = ctx.meta if isinstance(ctx.meta, dict) else {}
            assert not [k for k in meta if k.startswith("io.modelcontextprotocol/")], meta
            key, _ = only(requests)
            msg = await m.call("greet", responses={key: accept(name="Bo")}, state=state)
            assert text_of(complete(msg)) == "hello Bo"


#: Server bytes per parked call (``benchmarks/bench_modern.py --server-only``), with margin: on
#: asyncio the issue's target (4 KB; 3.6 KB measured, 10.0 KB before runs became bare tasks),
#: on trio 6 KB (5.5 KB measured, 10.5 KB before; its handshake era holds 4.6 KB per pending).
PARKED_BYTES = {"asyncio": 4096, "trio": 6 * 1024}




async def test_a_parked_call_holds_at_most_its_byte_budget_on_the_server(anyio_backend: str) -> None:
    """Issue 19: 500 calls parked at once, measured as the benchmark does (tracemalloc, server side)."""
    with anyio.fail_after(120):
        per_call = await _bench_modern().server_waiting("modern", 500)
    assert 0 < per_call <= PARKED_BYTES[anyio_backend], f"{per_call:.0f} bytes per parked call"
