"""Shared by several test files: what tests/peers/test_interop.py sets up and others reuse."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")


mcp_types = pytest.importorskip("mcp.types")


REPO = pathlib.Path(__file__).resolve().parents[2]


BOOKING_SERVER = REPO / "examples" / "booking.py"


def child_env() -> dict[str, str]:
    """Our environment, with the repository importable (the example servers import minimcp).

    The official client passes only a handful of variables to the child unless ``env=`` is given.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


@contextlib.asynccontextmanager
async def official_client(script: pathlib.Path, *args: str, **options: Any) -> AsyncIterator[Any]:
    """The official SDK's client, connected over stdio to ``python script args...``."""
    params = mcp.StdioServerParameters(
        command=sys.executable, args=[str(script), *args], env=child_env(), cwd=str(REPO)
    )
    options.setdefault("mode", "legacy")
    async with mcp.Client(params, **options) as client:
        yield client


@contextlib.asynccontextmanager
async def serving_script(script: pathlib.Path, *args: str, port: int, wait: float = 15) -> AsyncIterator[None]:
    """``python script args...`` (the repository importable) until exit, once it accepts TCP on ``port``."""
    process = await anyio.open_process([sys.executable, str(script), *args], env=child_env(), stdout=None, stderr=None)
    try:
        with anyio.fail_after(wait):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", port)
                except OSError:
                    await anyio.sleep(0.1)
                else:
                    await stream.aclose()
                    break
        yield
    finally:
        with anyio.CancelScope(shield=True):
            process.terminate()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()


class Recorder:
    """An official-SDK elicitation callback that records the questions and gives fixed answers."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.questions: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        self.questions.append(params)
        return self.answers.pop(0)


def check_date_question(params: Any, *, day: str, party_size: int, default: str) -> None:
    assert isinstance(params, mcp_types.ElicitRequestFormParams)
    assert day in params.message
    assert str(party_size) in params.message
    schema = params.requested_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["accept_alternative"]
    props = schema["properties"]
    assert props["accept_alternative"]["type"] == "boolean"
    assert props["date"]["type"] == "string"
    assert props["date"]["format"] == "date"
    assert props["date"]["default"] == default

