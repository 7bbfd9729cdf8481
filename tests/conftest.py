"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import inspect
import pathlib
import sys
from typing import Any

import pytest

# The examples are imported by name (``import booking``) by tests and by their helpers, as mypy sees them
# (``mypy_path`` in pyproject.toml).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))


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
