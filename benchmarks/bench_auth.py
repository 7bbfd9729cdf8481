"""The cost of authorization per Streamable HTTP round trip: auth off, a JWT verifier, an introspection verifier.

    python benchmarks/bench_auth.py --repeats 5 -c 50 --seconds 3 [--variants off,jwt,introspection] > rows.jsonl
    python benchmarks/bench_auth.py --summary rows.jsonl

One round trip is one 2026-07-28 ``tools/call`` POST (a tool registered with ``scopes=``, no question),
answered with one JSON body, on ``serve_http`` as shipped (uvicorn + httptools, the GC tuned as
``server.run("http")`` does). The variants, each a fresh server process, alternated per repeat
(off, jwt, introspection, then the reverse order), so that load on the machine falls on all alike:

* ``off``: no ``auth=``;
* ``jwt``: ``Authorization(JWTVerifier(issuer))``, RS256 tokens, keys found through the issuer's
  RFC 8414 metadata and cached (fetched once per server process; the issuer counts the fetches);
* ``introspection``: ``Authorization(IntrospectionVerifier(...))``, one opaque token per caller whose
  outcome is cached after its first request (``Limits.introspection_cache_ttl``, 60 s).

The issuer is a stdlib HTTP server in this process (metadata, JWKS, RFC 7662 introspection). The
driver is here too: C keep-alive connections, each with one POST in flight and its own token (its
own person). Every answer is checked (call ``i`` returns ``i``). After a warm-up the window counts the
round trips and the server process's CPU seconds (``/proc``); the summary gives medians of the
server's CPU per round trip and of round trips/s, and their ratio to ``off`` in the same repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-auth", "version": "1"},
}
SCOPE = "bench:call"
RS_CLIENT = ("mcp-bench", "bench-resource-server-secret")


# --- the issuer (this process, a thread) ---------------------------------------------------------


class Issuer:
    """Metadata, a key set and introspection for one RSA key, on a stdlib HTTP server; counts requests."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**jwk, "kid": "bench-1", "use": "sig", "alg": "RS256"}]}
        self.opaque: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, int] = defaultdict(int)
        issuer = self
        ThreadingHTTPServer.request_queue_size = 256  # (default 5: 50 first requests at once overflow it)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def jwt_for(self, subject: str, resource: str) -> str:
        import jwt

        now = int(time.time())
        claims = {"iss": self.url, "sub": subject, "aud": resource, "scope": SCOPE, "client_id": "bench",
                  "iat": now, "exp": now + 3600}  # fmt: skip
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "bench-1"})

    def opaque_for(self, subject: str, resource: str) -> str:
        token = secrets.token_urlsafe(32)
        self.opaque[token] = {"active": True, "iss": self.url, "sub": subject, "aud": resource, "scope": SCOPE,
                              "client_id": "bench", "exp": int(time.time()) + 3600}  # fmt: skip
        return token


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, document: dict[str, Any]) -> None:
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            issuer.counts[self.path] += 1
            if self.path == "/.well-known/oauth-authorization-server":
                self._json({"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks",
                            "introspection_endpoint": issuer.url + "/introspect"})  # fmt: skip
            elif self.path == "/jwks":
                self._json(issuer.jwks)
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            issuer.counts[self.path] += 1
            form = parse_qs(self.rfile.read(int(self.headers.get("content-length", "0"))).decode())
            token = form.get("token", [""])[0]
            self._json(issuer.opaque.get(token, {"active": False}))

    return Handler


# --- the server (a child process) ----------------------------------------------------------------


def serve(variant: str, port: int, issuer: str) -> None:
    import anyio

    from minimcp import Server
    from minimcp.hosting.http import serve_http

    server = Server("bench-auth")

    @server.tool(scopes=[SCOPE])
    async def echo(i: int) -> str:
        return str(i)

    options: dict[str, Any] = {}
    if variant != "off":
        from minimcp.auth import Authorization, IntrospectionVerifier, JWTVerifier, Verifier

        verifier: Verifier
        if variant == "jwt":
            verifier = JWTVerifier(issuer, algorithms=["RS256"])
        else:
            verifier = IntrospectionVerifier(issuer + "/introspect", client_id=RS_CLIENT[0],
                                             client_secret=RS_CLIENT[1], issuer=issuer)  # fmt: skip
        options["auth"] = Authorization(verifier, resource=resource_of(port), authorization_servers=[issuer],
                                        scopes_supported=[SCOPE])  # fmt: skip

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(lambda task_status: serve_http(server, "127.0.0.1", port, tune_gc=True,
                                                          task_status=task_status, **options))  # fmt: skip
            print("ready", flush=True)

    anyio.run(main)


def resource_of(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the driver (this process) -------------------------------------------------------------------


class Caller:
    """One keep-alive connection POSTing ``tools/call echo(i)``, each answer checked."""

    def __init__(self, port: int, token: str | None) -> None:
        from minimcp.transports.http._headers import request_headers

        self.port = port
        self.auth = f"authorization: Bearer {token}\r\n" if token else ""
        self.headers = request_headers
        self.i = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def call(self) -> None:
        self.i += 1
        params = json.dumps({"name": "echo", "arguments": {"i": self.i}, "_meta": ENVELOPE}).encode()
        body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}' % (self.i, params)
        extra = "".join(f"{k}: {v}\r\n" for k, v in self.headers("tools/call", params).items())
        head = (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
                f"accept: application/json, text/event-stream\r\n{self.auth}{extra}"
                f"content-length: {len(body)}\r\n\r\n")  # fmt: skip
        self.writer.write(head.encode() + body)
        status = await self.reader.readuntil(b"\r\n")
        length = 0
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        answer = json.loads(await self.reader.readexactly(length))
        if b" 200 " not in status or answer["result"]["content"][0]["text"] != str(self.i):
            raise RuntimeError(f"wrong answer: {status!r} {answer}")


async def drive(port: int, tokens: list[str | None], warmup: float, seconds: float, pid: int) -> dict[str, Any]:
    callers = [Caller(port, token) for token in tokens]
    for caller in callers:
        await caller.open()
    counting = False
    done = 0
    latencies: list[float] = []
    stop = time.perf_counter() + warmup + seconds

    async def loop(caller: Caller) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            start = time.perf_counter()
            await caller.call()
            if counting:
                done += 1
                latencies.append(time.perf_counter() - start)

    tasks = [asyncio.create_task(loop(c)) for c in callers]
    await asyncio.sleep(warmup)
    counting, t0, cpu0 = True, time.perf_counter(), cpu_seconds(pid)
    await asyncio.sleep(seconds)
    counting, t1, cpu1 = False, time.perf_counter(), cpu_seconds(pid)
    await asyncio.gather(*tasks)
    for c in callers:
        c.writer.close()
    latencies.sort()
    return {"round_trips_per_second": round(done / (t1 - t0), 1),
            "cpu_us_per_rt": round((cpu1 - cpu0) / done * 1e6, 1) if done else None,
            "p50_ms": round(latencies[len(latencies) // 2] * 1e3, 2) if latencies else None,
            "round_trips": done}  # fmt: skip


def run_one(issuer: Issuer, variant: str, c: int, warmup: float, seconds: float) -> dict[str, Any]:
    port = free_port()
    before = dict(issuer.counts)
    cmd = [sys.executable, __file__, "serve", "--variant", variant, "--port", str(port), "--issuer", issuer.url]
    env = {**os.environ, "MINIMCP_STATE_KEYS": secrets.token_hex(32)}  # one worker: no warning
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        resource = resource_of(port)
        makers = {"off": lambda subject, resource: None, "jwt": issuer.jwt_for, "introspection": issuer.opaque_for}
        make = makers[variant]
        tokens = [make(f"person-{n}", resource) for n in range(c)]
        load = os.getloadavg()[0]
        row = asyncio.run(drive(port, tokens, warmup, seconds, proc.pid))
    finally:
        proc.terminate()
        proc.wait(10)
    asked = {path: n - before.get(path, 0) for path, n in issuer.counts.items() if n != before.get(path, 0)}
    return {"variant": variant, "c": c, **row, "issuer_requests": asked, "load": round(load, 2)}


def summary(path: str) -> None:
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r)
    ratios: dict[str, list[float]] = defaultdict(list)
    for r in rows:  # each variant against off in the same repeat
        base = next((b for b in rows if b["variant"] == "off" and b["repeat"] == r["repeat"]), None)
        if base is not None:
            ratios[r["variant"]].append(r["cpu_us_per_rt"] / base["cpu_us_per_rt"])
    loads = [r["load"] for r in rows]
    print(f"load average (1 min) at the start of each run: {min(loads)}-{max(loads)}; C = {rows[0]['c']}")
    print("| variant | round trips/s | server CPU per round trip | CPU / off (same repeat) | p50 | runs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for variant in ("off", "jwt", "introspection"):
        rs = by.get(variant)
        if not rs:
            continue
        cpus = sorted(r["cpu_us_per_rt"] for r in rs)
        rate = statistics.median(r["round_trips_per_second"] for r in rs)
        p50 = statistics.median(r["p50_ms"] for r in rs)
        print(f"| {variant} | {rate:,.0f} | {statistics.median(cpus):,.0f} µs ({cpus[0]:,.0f}-{cpus[-1]:,.0f}) | "
              f"{statistics.median(ratios[variant]):.2f}x | {p50:.1f} ms | {len(rs)} |")
    for r in rows:
        if r["variant"] != "off":
            print(f"issuer asked during a {r['variant']} run: {r['issuer_requests']}")
            break


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("serve")
    child.add_argument("--variant", required=True)
    child.add_argument("--port", type=int, required=True)
    child.add_argument("--issuer", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("-c", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--variants", default="off,jwt,introspection")
    parser.add_argument("--summary", metavar="ROWS")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.variant, args.port, args.issuer)
        return
    if args.summary:
        summary(args.summary)
        return
    issuer = Issuer()
    variants = args.variants.split(",")
    for repeat in range(args.repeats):
        for variant in variants if repeat % 2 == 0 else variants[::-1]:
            row = run_one(issuer, variant, args.c, args.warmup, args.seconds)
            print(json.dumps({"repeat": repeat, **row}), flush=True)


if __name__ == "__main__":
    main()
