"""The benchmark tool on minimcp: ``ask(i)`` asks one question and returns the answer.

    python benchmarks/servers/minimcp_server.py [--transport stdio|ws|http] [--backend asyncio|uvloop|trio]
        [--tracemalloc] [--asgi default|uvicorn-h11|uvicorn-httptools|hypercorn|minimcp-h1|granian]
        [--port N] [--worker-id ID] [--redis URL]

One worker of several behind a load balancer (benchmarks/bench_scaleout.py): ``--worker-id``
(session ids ``ID.<random>``), ``--redis`` (the bus between workers), ``--port``; the sealing key
comes from ``MINIMCP_STATE_KEYS``.

On ws/http the bound port is printed on stdout as ``PORT <n>``. The ``stats`` tool
(identical in every benchmark server) reports this process's RSS and, with
``--tracemalloc``, the traced bytes, after an optional ``gc.collect()``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout

import anyio
import msgspec
from instrument import COUNTS, analysis_hooks, stats_text

from minimcp import Accepted, Context, Limits, Server


class Answer(msgspec.Struct):
    answer: str


def build(limits: Limits, **options: Any) -> Server:
    app = Server("bench-minimcp", "1.0.0", limits=limits, **options)

    @app.tool()
    async def ask(ctx: Context, i: int) -> str:
        """Ask one question and return the answer."""
        COUNTS["asks"] += 1
        reply = await ctx.elicit(f"Answer for call {i}", Answer)
        if isinstance(reply, Accepted):
            return reply.value.answer
        return "no answer"

    @app.tool()
    async def stats(collect: bool = False, snapshot: str = "") -> str:
        """This process's memory (benchmark instrumentation)."""
        return stats_text(collect, snapshot)

    return app


async def main(args: argparse.Namespace) -> None:
    limits = Limits(
        max_pending_outbound=4_000_000,
        max_inflight_inbound=4_000_000,
        elicitation_timeout=3600,
        request_timeout=3600,
        max_request_time=7200,
        # one open connection per pending call, and more for the answers and the stats call: the default
        # (10,000) closes the 10,001st connection at accept, so 10,000 pending over HTTP could not be answered
        # (behind a balancer, bench_scaleout.py: 30,000 and more)
        max_http_connections=1_000_000,
        max_parked_per_client=4_000_000,  # revision 2026-07-28: every parked call comes from the one driver
    )
    if args.worker_id:
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # in the run's worker log
        logging.getLogger("minimcp.http").setLevel(logging.INFO)  # sessions ended by a bound (the session table logs there)
    options: dict[str, Any] = {}
    if args.redis:
        from minimcp.scaleout.bus import RedisBus

        options["bus"] = RedisBus(args.redis)
    app = build(limits, **options)
    if args.transport == "stdio":
        await app.serve_stdio()
        return
    async with anyio.create_task_group() as tg:
        if args.transport == "ws":
            from minimcp import serve_websocket

            port = await tg.start(lambda task_status: serve_websocket(
                app, "127.0.0.1", 0, max_connections=100_000, task_status=task_status))
        elif args.asgi == "default" or args.asgi.startswith("serve_http:"):  # serve_http, its choice or the named one
            from minimcp import serve_http

            app_options: dict[str, Any] = {"session_id_prefix": args.worker_id} if args.worker_id else {}
            if args.tune_gc:
                app_options["tune_gc"] = True
            if args.backlog:  # a burst of connects can overflow serve_http's listen backlog
                import minimcp.hosting.http as serve_module

                bind = serve_module.bind

                def bind_with_backlog(host: str, port: int) -> Any:
                    sock = bind(host, port)
                    sock.listen(args.backlog)  # (listen again: Linux takes the new backlog)
                    return sock

                serve_module.bind = bind_with_backlog  # type: ignore[assignment]
            chosen = args.asgi.partition(":")[2] or None
            port = await tg.start(functools.partial(serve_http, app, "127.0.0.1", args.port, asgi_server=chosen,
                                                    **app_options))
        else:  # the server comparison: the same app on another ASGI server (asgi_run.py prints the port)
            from asgi_run import serve

            from minimcp.transports.http import StreamableHTTPApp

            http_app = StreamableHTTPApp(app)
            await tg.start(http_app.run)
            await serve(http_app, args.asgi, args.backend)
            return
        if os.environ.get("BENCH_FREEZE"):  # analysis only: the start-up heap out of the GC's passes
            gc.collect()
            print(f"frozen {len(gc.get_objects())} objects", file=sys.stderr)
            gc.freeze()
        print(f"PORT {port}", flush=True)


if __name__ == "__main__":
    analysis_hooks()
    if os.environ.get("BENCH_GC"):  # analysis only: "off", or gen-0 threshold
        gc.disable() if os.environ["BENCH_GC"] == "off" else gc.set_threshold(int(os.environ["BENCH_GC"]), 10, 10)
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "ws", "http"], default="stdio")
    parser.add_argument("--backend", choices=["asyncio", "uvloop", "trio"], default="asyncio")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="http: the port (default: a free one)")
    parser.add_argument("--worker-id", help="http: session ids named after this worker (behind a balancer)")
    parser.add_argument("--redis", help="the bus between workers on this Redis (redis://host:port/db)")
    parser.add_argument("--tune-gc", action="store_true", default=bool(os.environ.get("BENCH_TUNE_GC")),
                        help="http (serve_http): serve_http(tune_gc=True); also BENCH_TUNE_GC=1")
    parser.add_argument("--backlog", type=int, default=0, help="http: the listen backlog (default: serve_http's)")
    parser.add_argument("--asgi", default="default",
                        help="http only: default (serve_http), serve_http:<its asgi_server, e.g. uvicorn-h11>, "
                        "or the app on uvicorn-h11, uvicorn-httptools, hypercorn, granian (unguarded)")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    backend = "trio" if args.backend == "trio" else "asyncio"
    options = {"use_uvloop": True} if args.backend == "uvloop" else {}
    try:
        anyio.run(main, args, backend=backend, backend_options=options)
    except KeyboardInterrupt:
        sys.exit(0)
