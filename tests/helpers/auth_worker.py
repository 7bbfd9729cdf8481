"""A worker with authorization on, for the tests of several workers behind a balancer (run: ``python -m``).

``python -m tests.helpers.auth_worker --port P --redis URL --worker-id w1 --public-url URL --issuer ISS
--client-id ID --client-secret S --backend asyncio``, with ``MINIMCP_STATE_KEYS`` in the environment:
a Streamable HTTP app checking every request's token with a :class:`~minimcp.auth.jwt.JWTVerifier`
against ``ISS``, for the resource ``URL/mcp`` (the balancer's), its used states and bus in Redis.
``--ws-port W`` adds a WebSocket listener with the same authorization; ``--key-refetch-interval S``
sets ``Limits.auth_key_refetch_interval`` (its default otherwise).

Tools: ``whoami`` (the caller's subject; logs ``whoami ran for <sub>``), ``ask`` (a form question;
logs ``ask started for <sub>`` and ``ask finished for <sub>``, so a test sees what ran on which
worker), ``pay`` (a URL step bound to the caller, its page at ``URL/pages/step/<id>``). Pages, on
every worker: ``/pages/step/<id>`` and ``/pages/signin`` begin a page sign-in (302 to the
authorization server; one pre-registered client for every worker), ``/pages/callback`` finishes it
on whichever worker it reaches and then completes the step for the person who signed in (``403``
for anyone else) or answers who it is.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
import urllib.parse
from typing import Any

import anyio

from minimcp import Context, Limits, Server, serve_http, serve_websocket
from minimcp.auth.config import Authorization
from minimcp.auth.jwt import JWTVerifier
from minimcp.auth.signin import PageSignIn, SignInRefused
from minimcp.hosting.run import run_until_stopped
from minimcp.scaleout.bus import RedisBus
from minimcp.scaleout.redis_used_states import RedisUsedStates
from minimcp.server.url_steps import WrongPerson
from minimcp.transports.http import StreamableHTTPApp

log = logging.getLogger("auth_worker")
QUESTION = {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]}
SCOPE = "bookings:write"


def build(args: argparse.Namespace) -> tuple[Server, PageSignIn]:
    server = Server("scaleauth", used_states=RedisUsedStates(args.redis), bus=RedisBus(args.redis),
                    worker_id=args.worker_id)  # fmt: skip
    sign_in = PageSignIn(args.issuer, args.public_url + "/pages/callback", client_id=args.client_id,
                         client_secret=args.client_secret, keys=server.url_step_keys,
                         used_states=server.used_states)  # fmt: skip

    def subject(ctx: Context) -> str:
        assert ctx.auth is not None
        return str(ctx.auth.subject)

    @server.tool(scopes=[SCOPE])
    async def whoami(ctx: Context) -> str:
        log.info("whoami ran for %s", subject(ctx))
        return subject(ctx)

    @server.tool(scopes=[SCOPE])
    async def ask(ctx: Context, topic: str) -> str:
        log.info("ask started for %s", subject(ctx))
        answer = await ctx.elicit(f"Go on with {topic}?", QUESTION)
        log.info("ask finished for %s", subject(ctx))
        return f"{topic}: {answer!r} for {subject(ctx)}"

    @server.tool(scopes=[SCOPE])
    async def pay(ctx: Context) -> str:
        eid = ctx.url_step_id("pay")
        await ctx.elicit_url("Pay the deposit", f"{args.public_url}/pages/step/{eid}", elicitation_id=eid)
        return eid

    return server, sign_in


class WorkerApp(StreamableHTTPApp):
    """The MCP endpoint, and the pages under ``/pages/``."""

    def __init__(self, server: Server, sign_in: PageSignIn, **options: Any) -> None:
        super().__init__(server, **options)
        self.mcp = server
        self.sign_in = sign_in

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and path.startswith("/pages/"):
            status, headers, text = await self.page(path, scope.get("query_string", b"").decode())
            headers.append((b"content-type", b"text/plain; charset=utf-8"))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": text.encode()})
            return
        await super().__call__(scope, receive, send)

    async def page(self, path: str, query: str) -> tuple[int, list[tuple[bytes, bytes]], str]:
        if path.startswith("/pages/step/") or path == "/pages/signin":
            url, _ = self.sign_in.begin(path if path != "/pages/signin" else "/pages/whoami")
            return 302, [(b"location", url.encode())], "sign in first"
        if path != "/pages/callback":
            return 404, [], "no such page"
        try:
            person, return_to = await self.sign_in.finish(dict(urllib.parse.parse_qsl(query)))
        except SignInRefused as exc:
            log.info("sign-in refused: %s", exc.reason)
            return 400, [], f"sign-in refused: {exc.reason}"
        if not return_to.startswith("/pages/step/"):
            return 200, [], f"signed in: {person.subject}"
        try:
            await self.mcp.complete_url_elicitation(return_to.removeprefix("/pages/step/"), person=person)
        except WrongPerson:
            return 403, [], f"this step is not for {person.subject}"
        return 200, [], f"completed for {person.subject}"


async def serve(args: argparse.Namespace) -> None:
    server, sign_in = build(args)
    await sign_in.start()
    limits = Limits()
    if args.key_refetch_interval is not None:
        limits = limits.replace(auth_key_refetch_interval=float(args.key_refetch_interval))
    auth = Authorization(JWTVerifier(args.issuer, limits=limits), resource=args.public_url + "/mcp",
                         authorization_servers=[args.issuer], scopes_supported=[SCOPE])  # fmt: skip
    app = WorkerApp(server, sign_in, auth=auth, session_id_prefix=args.worker_id)
    async with anyio.create_task_group() as tg:
        if args.ws_port is not None:
            await tg.start(functools.partial(serve_websocket, server, "127.0.0.1", int(args.ws_port), auth=auth))
        port = await tg.start(serve_http, app, "127.0.0.1", args.port)
        print(f"mcp: http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await anyio.sleep_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("port", "redis", "worker-id", "public-url", "issuer", "client-id", "client-secret", "backend"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--ws-port")
    parser.add_argument("--key-refetch-interval")
    args = parser.parse_args()
    args.port = int(args.port)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    run_until_stopped(serve, args, backend=args.backend, what="the worker", logger=log)


if __name__ == "__main__":
    main()
