"""What the run machinery does per 2026-07-28 round trip (issue 19): counted, never timed.

The usual round (one numbered question, nothing on record or offered) skips ``Run._recorded``; an
answered parked run leaves the sweep with ``Deadlines.let_go`` (not ``forget`` then ``earliest``,
which walked every lane); a parking without owners calls no ``_disown``.
"""

from __future__ import annotations

import anyio
import pytest

from minimcp.core.deadlines import Deadlines
from minimcp.server.mrtr.parking import Parking
from minimcp.server.mrtr.run import Run
from tests.helpers import raw_client
from tests.helpers.modern import Modern, accept, complete, input_required, text_of
from tests.helpers.modern_form_work import ask_rounds, pick_server
from tests.helpers.modern_round_work import counting

TIMEOUT = 30
ROUNDS = 5


async def test_the_usual_round_takes_the_short_way(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            with counting(monkeypatch, Run, "_recorded") as recorded, \
                    counting(monkeypatch, Deadlines, "earliest") as earliest, \
                    counting(monkeypatch, Deadlines, "forget") as forgets, \
                    counting(monkeypatch, Deadlines, "let_go") as let_go, \
                    counting(monkeypatch, Parking, "_disown") as disowns:
                await ask_rounds(m, ROUNDS)
            counts = (recorded[0], earliest[0], forgets[0], disowns[0])
            assert counts == (0, 0, 0, 0), counts
            # asyncio times parked runs out in the sweep: one let_go per answered round (trio: its cancel scope)
            assert let_go[0] == (ROUNDS if anyio_backend == "asyncio" else 0)
            # a call that asks twice (the second round is not the usual one) still gets both answers
            requests, state = input_required(await m.call("both", {"i": 7}))
            responses = {"first": accept(n=0), "second": accept(n=1)}
            assert set(requests) == set(responses)
            msg = await m.call("both", {"i": 7}, responses=responses, state=state)
            assert text_of(complete(msg)) == "0 1"
            assert recorded[0] == 1
