"""Serve the HTTP floor on minimcp's own HTTP/1.1 server (``run_asgi(asgi_server="minimcp")``), as a server prefix.

    BENCH_SERVER_PREFIX="python benchmarks/tools/floor_on_minimcp.py" \\
        python benchmarks/driver.py roundtrip --server floor --wire http --asgi minimcp --backend trio -c 100

The driver appends the floor's own command (``python .../servers/floor_http.py --backend B --asgi minimcp``);
the interpreter is dropped, ``asgi_run.py`` learns the server name ``minimcp`` (the tree's
``minimcp.transports.asgi_server.run_asgi``, with the same connection bound as the benchmark's minimcp server),
and the floor runs here unchanged. Needs a tree whose ``run_asgi`` has ``asgi_server="minimcp"``.
"""

from __future__ import annotations

import functools
import runpy
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    _python, script, *rest = sys.argv[1:]
    sys.path.insert(0, str(Path(script).resolve().parent))
    import anyio
    import asgi_run  # type: ignore[import-not-found]

    plain = asgi_run.serve

    async def serve(app: Any, asgi: str, backend: str) -> None:
        if asgi != "minimcp":
            await plain(app, asgi, backend)
            return
        from minimcp import Limits
        from minimcp.transports.asgi_server import bind, run_asgi

        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]
        limits = Limits(max_http_connections=1_000_000)  # as servers/minimcp_server.py: one connection per call
        async with anyio.create_task_group() as tg:
            await tg.start(functools.partial(run_asgi, app, sock, anyio.Event(), asgi_server="minimcp", limits=limits))
            print(f"PORT {port}", flush=True)

    asgi_run.serve = serve
    asgi_run.ASGI_SERVERS = (*asgi_run.ASGI_SERVERS, "minimcp")
    sys.argv = [script, *rest]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
