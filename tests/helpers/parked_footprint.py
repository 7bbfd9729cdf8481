"""Shared by several test files: what tests/guards/test_parked_footprint.py sets up and others reuse."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType


def _bench_modern() -> ModuleType:
    name = "minimcp_benchmark_bench_modern"
    if name in sys.modules:
        return sys.modules[name]
    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_modern.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # (it puts benchmarks/ on the path for its raw client)
    return module

