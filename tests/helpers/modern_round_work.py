"""Shared by several test files: what tests/guards/test_modern_round_work.py sets up and others reuse."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from minimcp import Accepted, Context, Limits, Server
from tests.helpers.modern import NAME_FORM, Modern, accept, input_required, only

ROUNDS = 5


async def first_round_trip(m: Modern) -> None:
    """One round trip of ``greet`` before the counted ones (the first request locks the era)."""
    requests, state = input_required(await m.call("greet"))
    await m.call("greet", responses={only(requests)[0]: accept(name="Ada")}, state=state)


def ask_server() -> Server:
    server = Server("work", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def greet(ctx: Context, a: int = 0, b: int = 0) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)
        return f"hello {answer.value['name']} {a + b}" if isinstance(answer, Accepted) else "no"

    return server


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Iterator[list[int]]:
    """Count the calls of ``module.name`` (a function the rounds call by that name)."""
    original = getattr(module, name)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    yield calls

