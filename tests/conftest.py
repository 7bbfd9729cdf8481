"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import inspect
from typing import Any

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    # Mark coroutine tests for anyio's plugin before it looks at them, so that
    # they are parametrized over anyio_backend (asyncio and trio) like any other fixture.
    is_test = isinstance(collector, pytest.Module | pytest.Class) and collector.istestfunction(obj, name)
    if is_test and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)
