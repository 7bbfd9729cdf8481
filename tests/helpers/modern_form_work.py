"""Shared by several test files: what tests/guards/test_modern_form_work.py sets up and others reuse."""

from __future__ import annotations

from typing import Any

import msgspec

from minimcp import Accepted, Context, Limits, Server
from tests.helpers.modern import Modern, accept, complete, input_required, only, text_of


class Pick(msgspec.Struct):
    n: int


async def ask_rounds(m: Modern, rounds: int) -> None:
    """``rounds`` usual round trips of ``ask`` (:func:`pick_server`): call ``n`` asks, is answered ``n``, says ``n``."""
    for n in range(rounds):
        requests, state = input_required(await m.call("ask", {"i": n}))
        msg = await m.call("ask", {"i": n}, responses={only(requests)[0]: accept(n=n)}, state=state)
        assert text_of(complete(msg)) == str(n)


def pick_server() -> Server:
    server = Server("form-work", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"q {i}", Pick)
        return str(answer.value.n) if isinstance(answer, Accepted) else "?"

    @server.tool()
    async def both(ctx: Context, i: int) -> str:
        answers = await ctx.gather(first=ctx_elicit(f"a {i}"), second=ctx_elicit(f"b {i}"))
        return " ".join(str(a.value.n) for a in answers.values() if isinstance(a, Accepted))

    return server


def ctx_elicit(message: str) -> Any:
    from minimcp import Elicit

    return Elicit(message, Pick)

