"""``Server(replay_every_retry=True)``: a test mode that never parks a 2026-07-28 call (issue 18).

Every retry then replays the tool from its sealed state in this one process, as when it
reaches another worker: code before a question runs again, clean-up on cancellation runs
when the question goes out, and ``replayable=False`` tools are refused. The booking
example's 2026-07-28 tests run in this mode too (``tests/helpers/replay_mode.py``). A replay hands
back a recorded answer even when the retry no longer declares the capability the question
needed (it was asked when the client could be asked), as a parked call does.
"""

from __future__ import annotations

import anyio

from minimcp import Accepted, Context
from tests.helpers.modern import (
    FORM_URL,
    KEY,
    NAME_FORM,
    NONE,
    Probe,
    accept,
    complete,
    error_of,
    input_required,
    make_server,
    modern_peer,
    only,
    text_of,
)

WAIT = 30


async def test_every_retry_replays_and_nothing_stays_parked() -> None:
    probe = Probe()
    server = make_server(probe, replay_every_retry=True)
    with anyio.fail_after(WAIT):
        async with modern_peer(server) as (m, _):
            requests, state = input_required(await m.call("ask_once", {"tag": "x"}))
            key, _ = only(requests)
            assert len(server.parking) == 0
            with anyio.fail_after(WAIT):
                while probe.cleaned["ask_once:x"] == 0:  # noqa: ASYNC110 - the dropped copy ends in its own task
                    await anyio.sleep(0.01)
            result = complete(await m.call("ask_once", {"tag": "x"}, responses={key: accept(name="Ada")}, state=state))
            assert text_of(result) == "hello Ada"
            assert probe.pre["ask_once:x"] == 2  # the code before the question ran again: a replay
            # A tool that must not be replayed cannot go on in this mode (nor on another worker).
            requests, state = input_required(await m.call("charge_card"))
            key, _ = only(requests)
            refused = error_of(await m.call("charge_card", responses={key: accept(name="Ada")}, state=state), -32602)
            assert "not replayable" in refused["message"]
            assert len(server.parking) == 0


async def test_parked_by_default() -> None:
    probe = Probe()
    server = make_server(probe)
    with anyio.fail_after(WAIT):
        async with modern_peer(server) as (m, _):
            requests, state = input_required(await m.call("ask_once"))
            assert len(server.parking) == 1
            key, _ = only(requests)
            complete(await m.call("ask_once", responses={key: accept(name="Ada")}, state=state))
            assert probe.pre["ask_once:"] == 1


async def test_a_replay_hands_back_the_answer_though_the_retry_declares_no_elicitation() -> None:
    """Parked or replayed, one outcome: the question was asked when the client could answer it."""
    for replay in (False, True):
        probe = Probe()
        server = make_server(probe, state_key=KEY, replay_every_retry=replay)

        @server.tool()
        async def ask_if_possible(ctx: Context) -> str:
            if not ctx.can_elicit_form():
                return "not asked"
            answer = await ctx.elicit("Your name?", NAME_FORM)
            link = await ctx.elicit_url("Open this", "https://example.com/step") if ctx.can_elicit_url() else None
            assert isinstance(answer, Accepted)
            return f"{answer.value['name']}, link: {link is not None}"

        with anyio.fail_after(WAIT):
            async with modern_peer(server) as (m, _):
                requests, state = input_required(await m.call("ask_if_possible"))
                key, _ = only(requests)
                msg = await m.call("ask_if_possible", caps=NONE, responses={key: accept(name="Ada")}, state=state)
                assert text_of(complete(msg)) == "Ada, link: False", replay
                requests, state = input_required(await m.call("ask_once"))
                key, _ = only(requests)
                msg = await m.call("ask_once", caps=NONE, responses={key: accept(name="Ada")}, state=state)
                assert text_of(complete(msg)) == "hello Ada", replay
                requests, state = input_required(await m.call("open_link", caps=FORM_URL))
                key, _ = only(requests)
                msg = await m.call("open_link", caps=NONE, responses={key: {"action": "accept"}}, state=state)
                assert text_of(complete(msg)) == "opened", replay
                # A question that is not on record still needs the capability.
                error_of(await m.call("ask_once", {"tag": "new"}, caps=NONE), -32021)

