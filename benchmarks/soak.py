"""Fault-injection soak: many sessions, many concurrent elicitations, every call ends exactly once.

Each round serves ``--connections`` in-memory connections at once. On each, a
client makes ``--calls`` concurrent ``tools/call``s; every call's tool asks one
question (``elicitation/create``) carrying the call's number, and the client's
person answers according to a seeded plan:

=============  ====================================================================
``accept``     a valid answer carrying the call number (the tool checks it is its own)
``decline``    the person says no
``cancel``     the person dismisses the question
``invalid``    an answer the server's form type refuses (server-side validation)
``bad_answer`` an answer the client's own check refuses (the client answers -32603)
``timeout``    nobody answers; the tool's question times out (the client is told)
``parent``     the caller cancels its ``tools/call`` while the question is open
=============  ====================================================================

On top of that a transport wrapper on the client side injects faults: duplicate
answers, responses with unknown ids, ``notifications/cancelled`` for unknown ids,
garbage lines; and a seeded share of the connections is cut at a random moment
(from either end, as the person answers a randomly chosen question).

Checked after every round: each call ended exactly once on each side with the
outcome its plan says (or "connection closed" on a cut connection), no answer
reached the wrong call, every session's counters match what was injected, every
pending and in-flight table is empty, every session holds nothing after close
and the server has no connection left. Memory is sampled after each round.

    python benchmarks/soak.py                         # 100,000 elicitations, asyncio
    python benchmarks/soak.py --elicitations 100000 --backend trio
    python benchmarks/soak.py --elicitations 5000 --tracemalloc

``tests/scenarios/test_soak.py`` runs the same engine with small numbers on both backends.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import gc
import json
import logging
import random
import sys
import time
import tracemalloc
from typing import Any

import anyio

from minimcp import (
    Accepted,
    Cancelled,
    Client,
    ConnectionClosed,
    Context,
    Declined,
    ElicitationRequest,
    FormValidationError,
    Limits,
    McpError,
    Server,
    memory_pair,
)
from minimcp.wire.jsonrpc import RequestId

__all__ = ["KINDS", "Plan", "Report", "SoakConfig", "run_round", "run_soak"]

#: Plan kinds and their default weights.
KINDS: dict[str, float] = {
    "accept": 0.30,
    "decline": 0.10,
    "cancel": 0.10,
    "invalid": 0.10,
    "bad_answer": 0.10,
    "timeout": 0.15,
    "parent": 0.15,
}

LONG = 120.0  # seconds: the question timeout of calls that are not meant to time out

# What each side must see for each plan kind, on a connection that stays up.
EXPECT_CLIENT = {
    "accept": "accept",
    "decline": "decline",
    "cancel": "cancel",
    "invalid": "tool_error",
    "bad_answer": "tool_error",  # the client could not answer: a tool error, not its -32603
    "timeout": "timeout",
    "parent": "cancelled",
}
EXPECT_TOOL = {
    "accept": "accept",
    "decline": "decline",
    "cancel": "cancel",
    "invalid": "invalid",
    "bad_answer": "rpc_error:-32603",
    "timeout": "timeout",
    "parent": "cancelled",
}
EXPECT_HANDLER = {
    "accept": "answered",
    "decline": "answered",
    "cancel": "answered",
    "invalid": "answered",
    "bad_answer": "answered",
    "timeout": "cancelled",
    "parent": "cancelled",
}


@dataclasses.dataclass
class Reply:
    """The form every question asks: the call number, and a value the business rule checks."""

    call: int
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative values are refused")


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    n: int
    kind: str
    delay: float  # seconds before the person answers (or before the caller cancels)
    timeout: float  # the question's timeout


@dataclasses.dataclass
class SoakConfig:
    connections: int = 20
    calls: int = 150  # per connection, all concurrent
    seed: int = 1
    cut_share: float = 0.2  # share of connections cut at a random moment
    fault_rate: float = 0.05  # per answer sent: chance of an injected stray message
    max_delay: float = 0.05
    timeout_range: tuple[float, float] = (0.02, 0.3)
    # Hang detectors, not timings: generous, because a loaded 2-core machine with tracemalloc on
    # runs a round 5-10 times slower than an idle one (a trio round of 3,000 calls took 56 s).
    round_deadline: float = 300.0  # a round still running after this is a hang: stop it and report
    settle_timeout: float = 60.0  # per connection: its sessions drain / its server side ends
    weights: dict[str, float] = dataclasses.field(default_factory=lambda: dict(KINDS))


@dataclasses.dataclass
class Report:
    """What a round saw (counters summed over connections)."""

    calls: int = 0
    client_outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    plans: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    cut_connections: int = 0
    injected: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    server_stats: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    client_stats: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    problems: list[str] = dataclasses.field(default_factory=list)
    elapsed: float = 0.0


class _Ledger:
    """Per call number, what each side recorded (a list, so a second record shows up)."""

    def __init__(self) -> None:
        self.client: dict[int, list[str]] = collections.defaultdict(list)
        self.tool_start: collections.Counter[int] = collections.Counter()
        self.tool_end: dict[int, list[str]] = collections.defaultdict(list)
        self.handler_start: collections.Counter[int] = collections.Counter()
        self.handler_end: dict[int, list[str]] = collections.defaultdict(list)
        self.misrouted: list[str] = []


def make_plans(cfg: SoakConfig, first: int, count: int, rng: random.Random) -> list[Plan]:
    kinds = list(cfg.weights)
    weights = [cfg.weights[k] for k in kinds]
    plans = []
    for n in range(first, first + count):
        kind = rng.choices(kinds, weights)[0]
        timeout = rng.uniform(*cfg.timeout_range) if kind == "timeout" else LONG
        plans.append(Plan(n, kind, rng.uniform(0, cfg.max_delay), timeout))
    return plans


def build_server(ledger: _Ledger) -> Server:
    app = Server("soak", limits=Limits(request_timeout=LONG, elicitation_timeout=LONG))

    @app.tool()
    async def ask(ctx: Context, n: int, timeout: float) -> str:
        ledger.tool_start[n] += 1
        end = "returned?"
        try:
            answer = await ctx.elicit(f"call {n}", Reply, timeout=timeout)
            if isinstance(answer, Accepted):
                if answer.value.call != n:
                    ledger.misrouted.append(f"tool {n} got the answer of call {answer.value.call}")
                end = "accept"
                return f"{n}:accept:{answer.value.value}"
            if isinstance(answer, Declined):
                end = "decline"
                return f"{n}:decline"
            assert isinstance(answer, Cancelled)
            end = "timeout" if answer.reason == "timeout" else "cancel"
            return f"{n}:{end}"
        except FormValidationError:
            end = "invalid"
            raise
        except ConnectionClosed:
            end = "closed"
            raise
        except McpError as exc:
            end = f"rpc_error:{exc.code}"
            raise
        except anyio.get_cancelled_exc_class():
            end = "cancelled"
            raise
        finally:
            ledger.tool_end[n].append(end)

    return app


class FaultyTransport:
    """The client's end of a memory pair, injecting stray messages next to its answers."""

    def __init__(self, inner: Any, rng: random.Random, rate: float, injected: collections.Counter[str]) -> None:
        self.inner = inner
        self.rng = rng
        self.rate = rate
        self.injected = injected
        self.cut = False

    async def send(self, message: bytes, *, related: RequestId | None = None) -> None:
        await self.inner.send(message)
        if b'"action"' not in message or self.rng.random() >= self.rate:
            return
        fault = self.rng.choice(("duplicate", "unknown_id", "cancel_unknown", "garbage", "error_unknown"))
        self.injected[fault] += 1
        if fault == "duplicate":
            await self.inner.send(message)
        elif fault == "unknown_id":
            await self.inner.send(b'{"jsonrpc":"2.0","id":"no-such-id","result":{"action":"accept"}}')
        elif fault == "error_unknown":
            await self.inner.send(b'{"jsonrpc":"2.0","id":987654321,"error":{"code":-32000,"message":"stray"}}')
        elif fault == "cancel_unknown":
            await self.inner.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":-5}}')
        else:
            await self.inner.send(b'{"jsonrpc": "2.0", garbage')

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        return data

    def receive_nowait(self) -> bytes | None:
        data: bytes | None = self.inner.receive_nowait()
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _wait_until(predicate: Any, timeout: float, what: str, problems: list[str]) -> None:
    with anyio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110 - session counters have no event to wait on
            await anyio.sleep(0.005)
        return
    problems.append(f"timed out waiting for: {what}")


async def _run_connection(
    app: Server,
    ledger: _Ledger,
    plans: list[Plan],
    cut: str | None,
    cut_after: int,
    cfg: SoakConfig,
    rng: random.Random,
    report: Report,
) -> None:
    """One connection; a crash is reported as a problem (the other connections go on)."""
    try:
        await _connection(app, ledger, plans, cut, cut_after, cfg, rng, report)
    except Exception as exc:
        first = exc
        while isinstance(first, BaseExceptionGroup) and first.exceptions:
            first = first.exceptions[0]  # type: ignore[assignment]
        report.problems.append(f"connection of calls {plans[0].n}..{plans[-1].n} crashed: {first!r}")


async def _connection(
    app: Server,
    ledger: _Ledger,
    plans: list[Plan],
    cut: str | None,
    cut_after: int,
    cfg: SoakConfig,
    rng: random.Random,
    report: Report,
) -> None:
    by_n = {p.n: p for p in plans}
    scopes: dict[int, anyio.CancelScope] = {}
    answered = 0
    injected: collections.Counter[str] = collections.Counter()
    problems = report.problems

    async def handler(q: ElicitationRequest) -> Any:
        n = int(q.message.split()[1])
        plan = by_n.get(n)
        ledger.handler_start[n] += 1
        end = "answered"
        try:
            if plan is None:  # pragma: no cover - would be a misrouted question
                ledger.misrouted.append(f"question {q.message!r} reached a connection that did not ask it")
                return Declined()
            if plan.kind == "parent":
                await anyio.sleep(plan.delay)
                scope = scopes.get(n)
                if scope is not None:
                    scope.cancel()  # the caller gives up on its tools/call
                await anyio.sleep_forever()
            if plan.kind == "timeout":
                await anyio.sleep_forever()
            await anyio.sleep(plan.delay)
            if plan.kind == "accept":
                return Accepted({"call": n, "value": n * 7})
            if plan.kind == "decline":
                return Declined()
            if plan.kind == "cancel":
                return Cancelled()
            if plan.kind == "invalid":
                return Accepted({"call": n, "value": -1})  # valid JSON schema, refused by Reply
            return Accepted({"call": n, "value": "not a number"})  # bad_answer
        except anyio.get_cancelled_exc_class():
            end = "cancelled"
            raise
        finally:
            ledger.handler_end[n].append(end)
            nonlocal answered
            answered += 1
            if cut is not None and answered == max(cut_after, 1):
                # The cut comes as the person answers the k-th question: some calls are over,
                # others surely still in flight. (Timed by calls ended on the client instead,
                # it can find the server done: results come back in bursts.)
                faulty.cut = True
                (b if cut == "client" else a).close()

    a, b = memory_pair(buffer=4 * len(plans) + 64)
    faulty = FaultyTransport(b, random.Random(rng.random()), cfg.fault_rate, injected)
    client_limits = Limits(request_timeout=LONG, max_request_time=4 * LONG)
    async with anyio.create_task_group() as server_tg:
        conn = await server_tg.start(app.serve, a)
        client = Client(faulty, elicitation_handler=handler, limits=client_limits)  # type: ignore[arg-type]
        async with client:

            async def call(plan: Plan) -> None:
                n = plan.n
                outcome = "?"
                try:
                    with anyio.CancelScope() as scope:
                        scopes[n] = scope
                        result = await client.call_tool("ask", {"n": n, "timeout": plan.timeout})
                        text = result.text
                        if result.is_error:
                            outcome = "tool_error"
                        else:
                            head, _, rest = text.partition(":")
                            if head != str(n):
                                ledger.misrouted.append(f"call {n} got the result of call {head}")
                            outcome = rest.split(":")[0]
                            if outcome == "accept" and rest != f"accept:{n * 7}":
                                ledger.misrouted.append(f"call {n} got answer {rest!r}")
                    if scope.cancelled_caught:
                        outcome = "cancelled"
                except ConnectionClosed:
                    outcome = "closed"
                except McpError as exc:
                    outcome = f"rpc_error:{exc.code}"
                finally:
                    scopes.pop(n, None)
                    ledger.client[n].append(outcome)

            async with anyio.create_task_group() as calls:
                for plan in plans:
                    calls.start_soon(call, plan)

            if cut is None:
                # Handlers cancelled by the server finish asynchronously, and replies to injected
                # garbage may still be on their way: give them a moment.
                await _wait_until(
                    lambda: conn.session.pending_count == 0
                    and conn.session.inflight_count == 0
                    and client.session.pending_count == 0
                    and client.session.inflight_count == 0
                    and client.session.stats.unknown_responses >= injected["garbage"],
                    cfg.settle_timeout,
                    "live sessions to drain",
                    problems,
                )
        # The client is gone: the server's side must end by itself.
        await _wait_until(
            lambda: conn not in app.connections, cfg.settle_timeout, "the server connection to end", problems
        )
        await client.session.wait_closed()
        with anyio.move_on_after(cfg.settle_timeout) as waited:
            await conn.session.wait_closed()
        if waited.cancelled_caught:
            problems.append("server session did not finish after the client left")
        server_tg.cancel_scope.cancel()

    for side, session in (("server", conn.session), ("client", client.session)):
        if not session.holds_nothing():
            problems.append(f"{side} session holds something after close")
    client_budget = getattr(client.session, "budget", None)
    if client_budget is not None and client_budget.used != 0:
        problems.append(f"client pending budget not given back: {client_budget.used}")
    if cut is not None:
        report.cut_connections += 1
    report.injected.update(injected)
    s, c = conn.session.stats, client.session.stats
    report.server_stats.update(dataclasses.asdict(s))
    report.client_stats.update(dataclasses.asdict(c))
    if cut is None:
        kinds = collections.Counter(p.kind for p in plans)
        exact = {
            "server timeouts": (s.timeouts, kinds["timeout"]),
            "server cancelled_by_peer": (s.cancelled_by_peer, kinds["parent"]),
            "server cancelled_by_us": (s.cancelled_by_us, kinds["parent"]),
            "server unknown_responses": (
                s.unknown_responses,
                injected["duplicate"] + injected["unknown_id"] + injected["error_unknown"],
            ),
            "server invalid_messages": (s.invalid_messages, injected["garbage"]),
            "server rejected_busy": (s.rejected_busy, 0),
            "client cancelled_by_peer": (c.cancelled_by_peer, kinds["timeout"] + kinds["parent"]),
            "client cancelled_by_us": (c.cancelled_by_us, kinds["parent"]),
            "client timeouts": (c.timeouts, 0),
            # the server's -32700 answers to garbage carry no id: counted as unknown responses
            "client unknown_responses": (c.unknown_responses, injected["garbage"]),
            "client invalid_messages": (c.invalid_messages, 0),
        }
        for name, (got, want) in exact.items():
            if got != want:
                problems.append(f"{name} = {got}, expected {want}")


def _check(plans: list[Plan], cut_ns: set[int], ledger: _Ledger, report: Report) -> None:
    problems = report.problems
    problems.extend(ledger.misrouted)
    for p in plans:
        n = p.n
        client = ledger.client.get(n, [])
        tool_end = ledger.tool_end.get(n, [])
        handler_end = ledger.handler_end.get(n, [])
        if len(client) != 1:
            problems.append(f"call {n} ({p.kind}) ended {len(client)} times on the client: {client}")
            continue
        report.client_outcomes[client[0]] += 1
        if ledger.tool_start[n] > 1 or len(tool_end) != ledger.tool_start[n]:
            problems.append(f"call {n}: tool started {ledger.tool_start[n]} times, ended {tool_end}")
        if ledger.handler_start[n] > 1 or len(handler_end) != ledger.handler_start[n]:
            problems.append(f"call {n}: handler started {ledger.handler_start[n]} times, ended {handler_end}")
        want_c, want_t, want_h = EXPECT_CLIENT[p.kind], EXPECT_TOOL[p.kind], EXPECT_HANDLER[p.kind]
        if n in cut_ns:
            # The connection was cut at a random moment: either the call finished first, or it
            # ended with the connection. Nothing else.
            ok = (
                client[0] in (want_c, "closed")
                and all(t in (want_t, "cancelled", "closed") for t in tool_end)
                and all(h in (want_h, "cancelled") for h in handler_end)
            )
        else:
            ok = (
                client[0] == want_c
                and tool_end == [want_t]
                # A question that timed out before the client got to it (its request and the
                # cancellation read together) never starts a handler.
                and (handler_end == [want_h] or (p.kind == "timeout" and not handler_end))
            )
        if not ok:
            problems.append(
                f"call {n} ({p.kind}{', cut' if n in cut_ns else ''}): client {client}, "
                f"tool {tool_end}, handler {handler_end}"
            )


async def run_round(cfg: SoakConfig, *, first: int = 0) -> Report:
    """One round: ``cfg.connections`` connections at once, ``cfg.calls`` concurrent calls each."""
    rng = random.Random(cfg.seed)
    ledger = _Ledger()
    app = build_server(ledger)
    report = Report()
    plans_by_conn = []
    cuts: list[tuple[str | None, int]] = []
    n = first
    for _ in range(cfg.connections):
        plans = make_plans(cfg, n, cfg.calls, rng)
        n += cfg.calls
        plans_by_conn.append(plans)
        if rng.random() < cfg.cut_share:
            cuts.append((rng.choice(("client", "server")), rng.randrange(0, max(1, cfg.calls))))
        else:
            cuts.append((None, 0))
    all_plans = [p for plans in plans_by_conn for p in plans]
    report.calls = len(all_plans)
    report.plans.update(p.kind for p in all_plans)
    cut_ns = {p.n for plans, (cut, _) in zip(plans_by_conn, cuts, strict=True) if cut for p in plans}
    t0 = time.perf_counter()
    with anyio.move_on_after(cfg.round_deadline) as overall:
        async with anyio.create_task_group() as tg:
            for plans, (cut, after) in zip(plans_by_conn, cuts, strict=True):
                tg.start_soon(
                    _run_connection, app, ledger, plans, cut, after, cfg, random.Random(rng.random()), report
                )
    report.elapsed = time.perf_counter() - t0
    if overall.cancelled_caught:
        stuck = [p.n for p in all_plans if ledger.client.get(p.n, ["?"]) == ["?"]]
        report.problems.append(
            f"the round did not finish within {cfg.round_deadline} s; {len(stuck)} calls never ended: {stuck[:20]}"
        )
    if app.connections:
        report.problems.append(f"server still has {len(app.connections)} connections")
    if app._url_owners:
        report.problems.append("server still has URL elicitation owners")
    budget = getattr(app, "budget", None)  # the server-wide pending bound (Limits.max_pending_total)
    if budget is not None and budget.used != 0:
        report.problems.append(f"server pending budget not given back: {budget.used} still counted")
    _check(all_plans, cut_ns, ledger, report)
    return report


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:  # pragma: no cover - not Linux
        return 0


def _memory(traced: bool) -> dict[str, int]:
    gc.collect()
    out = {"rss": _rss_bytes(), "allocated_blocks": sys.getallocatedblocks(), "gc_objects": len(gc.get_objects())}
    if traced:
        out["traced"] = tracemalloc.get_traced_memory()[0]
    return out


async def run_soak(cfg: SoakConfig, elicitations: int, *, traced: bool = False) -> dict[str, Any]:
    """Rounds of ``cfg`` until ``elicitations`` calls were made; memory sampled around them."""
    per_round = cfg.connections * cfg.calls
    rounds = max(2, -(-elicitations // per_round))
    if traced:
        tracemalloc.start()
    totals: collections.Counter[str] = collections.Counter()
    plans: collections.Counter[str] = collections.Counter()
    injected: collections.Counter[str] = collections.Counter()
    server_stats: collections.Counter[str] = collections.Counter()
    client_stats: collections.Counter[str] = collections.Counter()
    problems: list[str] = []
    cut = 0
    memory = [_memory(traced)]
    t0 = time.perf_counter()
    round_seconds = []
    for r in range(rounds):
        report = await run_round(dataclasses.replace(cfg, seed=cfg.seed + r), first=r * per_round)
        totals.update(report.client_outcomes)
        plans.update(report.plans)
        injected.update(report.injected)
        server_stats.update(report.server_stats)
        client_stats.update(report.client_stats)
        problems.extend(f"round {r}: {p}" for p in report.problems)
        cut += report.cut_connections
        round_seconds.append(round(report.elapsed, 2))
        memory.append(_memory(traced))
    elapsed = time.perf_counter() - t0
    if traced:
        tracemalloc.stop()
    return {
        "elicitations": rounds * per_round,
        "rounds": rounds,
        "connections_per_round": cfg.connections,
        "concurrent_calls_per_connection": cfg.calls,
        "cut_connections": cut,
        "elapsed_s": round(elapsed, 2),
        "calls_per_s": round(rounds * per_round / elapsed),
        "round_seconds": round_seconds,
        "plans": dict(sorted(plans.items())),
        "client_outcomes": dict(sorted(totals.items())),
        "injected_faults": dict(sorted(injected.items())),
        "server_counters": dict(sorted(server_stats.items())),
        "client_counters": dict(sorted(client_stats.items())),
        "memory_before": memory[0],
        "memory_after_round_1": memory[1],
        "memory_after": memory[-1],
        "growth_after_round_1": {k: memory[-1][k] - memory[1][k] for k in memory[0]},
        "problems": problems[:50],
        "problem_count": len(problems),
        "crashed_connections": sum("crashed" in p for p in problems),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elicitations", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200, help="concurrent calls per connection")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python allocations (slower)")
    parser.add_argument("--verbose", action="store_true", help="keep minimcp's own log output")
    args = parser.parse_args()
    if not args.verbose:
        # bad_answer plans make the client log an error each; thousands of lines hide the figures
        logging.getLogger("minimcp").setLevel(logging.CRITICAL)
    cfg = SoakConfig(connections=args.connections, calls=args.calls, seed=args.seed)
    row = anyio.run(functools.partial(run_soak, cfg, args.elicitations, traced=args.tracemalloc), backend=args.backend)
    row = {"backend": args.backend, "python": sys.version.split()[0], **row}
    print(json.dumps(row, indent=2))
    if row["problem_count"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
