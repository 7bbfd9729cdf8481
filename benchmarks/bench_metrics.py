"""The cost of elicitation metrics on the hot path.

Runs the same in-memory elicitation round trips with the server's metrics on
and with them stubbed out, alternating, and prints the medians and their
ratio. Figures are printed, never asserted.

    python benchmarks/bench_metrics.py            # 5 rounds of 5,000 round trips
    python benchmarks/bench_metrics.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import msgspec

from minimcp import Accepted, Client, Context, Limits, Server, memory_pair


class Pick(msgspec.Struct):
    n: int


class _Off:
    """Metrics that record nothing."""

    def started(self, *args: Any) -> None: ...
    def finished(self, *args: Any) -> None: ...
    def unsupported(self, *args: Any) -> None: ...


def build(metrics_on: bool) -> Server:
    app = Server("bench", limits=Limits(elicitation_timeout=600))
    if not metrics_on:
        app.metrics = _Off()  # type: ignore[assignment]

    @app.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"q {i}", Pick)
        return str(answer.value.n) if isinstance(answer, Accepted) else "?"

    return app


async def run(metrics_on: bool, calls: int, concurrency: int) -> float:
    app = build(metrics_on)

    async def answer(question: Any) -> Any:
        return Accepted({"n": int(question.message.split()[1])})

    a, b = memory_pair(buffer=4096)
    async with anyio.create_task_group() as tg:
        await tg.start(app.serve, a)
        async with Client(b, elicitation_handler=answer) as client:
            todo = iter(range(calls))

            async def worker() -> None:
                for i in todo:
                    assert (await client.call_tool("ask", {"i": i})).text == str(i)

            start = time.perf_counter()
            async with anyio.create_task_group() as workers:
                for _ in range(concurrency):
                    workers.start_soon(worker)
            elapsed = time.perf_counter() - start
        tg.cancel_scope.cancel()
    return calls / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    rounds, calls = (2, 500) if args.quick else (5, 5000)
    on: list[float] = []
    off: list[float] = []
    for _ in range(rounds):  # alternate, so drift on a noisy machine hits both alike
        on.append(anyio.run(run, True, calls, 100, backend=args.backend))
        off.append(anyio.run(run, False, calls, 100, backend=args.backend))
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"elicitation round trips/s, {args.backend}, C=100: metrics on {m_on:,.0f}, off {m_off:,.0f}, "
          f"cost {100 * (1 - m_on / m_off):+.1f}%")


if __name__ == "__main__":
    main()
