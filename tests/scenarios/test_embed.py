"""Embedding: a stdio server loads only what serving over stdio needs.

A running stdio server (a real child process, after the handshake and a call) reports
the modules it has loaded; the client side, the other transports, the CLI, the trace
diagrams and the optional HTTP / WebSocket stacks are not among them (they load on
first use, see ``minimcp.__init__``'s lazy names). Nor is the forms machinery, until a
tool asks with a form (``Server.form_cache``): then it loads, and the answer is checked.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys
import textwrap

import anyio
import pytest

from minimcp import Accepted, ElicitationRequest, connect_stdio

ROOT = pathlib.Path(__file__).resolve().parents[2]

NOT_FOR_A_STDIO_SERVER = (
    "minimcp.client.client",
    "minimcp.transports.http",
    "minimcp.transports.websocket",
    "minimcp.transports.asgi_server",
    "minimcp.cli",
    "minimcp.diagram.layout",
    "minimcp.diagram.svg",
    "uvicorn",
    "hypercorn",
    "websockets",
    "httpx",
    "h11",
)

#: What only revision 2026-07-28, shared states, workers, URL steps, prompts or resources need: a stdio
#: server on the handshake era (no bus, no shared store, no prompt, no resource, no URL step) loads none
#: of it (each loads on first use: the era lock, ``Server(bus=...)``, the first URL step, ...).
NOT_ON_THE_HANDSHAKE_ERA = (
    "minimcp.server.mrtr.state",
    "minimcp.wire.envelope",
    "minimcp.wire.input_required",
    "minimcp.server.mrtr.run",
    "minimcp.server.mrtr.rounds",
    "minimcp.server.mrtr.retry",
    "minimcp.server.mrtr.used_states",
    "minimcp.server.bus",
    "minimcp.scaleout._redis",
    "minimcp.scaleout.bus",
    "minimcp.scaleout.redis_used_states",
    "minimcp.scaleout.workers",
    "minimcp.wire.urls",
    "minimcp.server.prompts",
    "minimcp.server.resources",
    "hashlib",
    "hmac",
    "secrets",
    "random",
    "unicodedata",
)

#: The forms machinery: loaded by the first form compiled or asked, not by serving, not by a failing tool.
NOT_UNTIL_A_FORM = (
    "minimcp.forms",
    "minimcp.forms.cache",
    "minimcp.forms.check",
    "minimcp.forms.fields",
    "minimcp.forms.schema",
    "minimcp.forms.types",
)


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_a_stdio_server_loads_no_client_transport_or_cli(tmp_path: pathlib.Path, server_backend: str) -> None:
    path = tmp_path / "server.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            sys.path.insert(0, {str(ROOT)!r})
            import {server_backend}
            backend_loads = sorted(sys.modules)  # what the event loop's own package loads (trio: random, hashlib)
            from minimcp import Context, Server

            app = Server("embedded")

            @app.tool()
            async def modules() -> str:
                return json.dumps([sorted(sys.modules), backend_loads])

            @app.tool()
            async def fails() -> str:
                raise ValueError("a bug in the tool")

            @app.tool()
            async def ask(ctx: Context) -> str:
                schema = {{"type": "object", "properties": {{"n": {{"type": "integer"}}}}}}
                answer = await ctx.elicit("How many?", schema)
                return repr(answer)

            app.run(backend={server_backend!r})
            """
        )
    )

    async def person(question: ElicitationRequest) -> Accepted[dict[str, object]]:
        return Accepted({"n": 2})

    with anyio.fail_after(60):
        async with connect_stdio([sys.executable, str(path)], elicitation_handler=person) as client:
            loaded_now, backend_loads = json.loads((await client.call_tool("modules")).text)
            failed = await client.call_tool("fails")
            loaded_after_a_failure = set(json.loads((await client.call_tool("modules")).text)[0])
            answer = await client.call_tool("ask")
            loaded_after_a_form = set(json.loads((await client.call_tool("modules")).text)[0])
    assert failed.is_error and "internal error" in failed.text
    loaded = set(loaded_now)
    assert "minimcp.server.server" in loaded and "minimcp.transports.stdio" in loaded  # the probe sees the server
    unwanted = sorted(m for m in loaded if m in NOT_FOR_A_STDIO_SERVER or m.split(".")[0] in NOT_FOR_A_STDIO_SERVER)
    assert unwanted == [], f"a stdio server loaded {unwanted}"
    unused = sorted(m for m in loaded - set(backend_loads) if m in NOT_ON_THE_HANDSHAKE_ERA)
    assert unused == [], f"a stdio server on the handshake era loaded {unused}"
    early_forms = sorted(m for m in loaded_after_a_failure if m in NOT_UNTIL_A_FORM)
    assert early_forms == [], f"a stdio server loaded the forms machinery before any form: {early_forms}"
    # the first form question loads it
    assert answer.text == "Accepted(value={'n': 2})"
    assert set(NOT_UNTIL_A_FORM) - {"minimcp.forms.types"} <= loaded_after_a_form


def test_the_http_app_loads_no_run_machinery_until_a_2026_07_28_request() -> None:
    """Importing the Streamable HTTP app (and making one) loads nothing of server/mrtr/ (the runs, rounds,
    parking, sealed states of 2026-07-28), nor the HTTP client's httpx: it reads the revision's envelope
    through the pure wire, and its package loads each name on first use. A running app that serves the
    handshake era loads none of it either (its server's key is random: the warning says so without the
    state module); its first 2026-07-28 request makes the connection that serves that revision, which
    loads them."""
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from minimcp import Server
        from minimcp.transports.http import StreamableHTTPApp

        def era() -> list[str]:
            return sorted(m for m in sys.modules if m.startswith("minimcp.server.mrtr") or m == "httpx")

        app = StreamableHTTPApp(Server("embedded"))
        seen = [era()]
        import anyio
        import httpx

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                await tg.start(app.run)
                client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000")
                headers = {{"accept": "application/json, text/event-stream", "content-type": "application/json"}}
                hello = {{"name": "c", "version": "1"}}
                init = {{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{
                    "protocolVersion": "2025-11-25", "capabilities": {{}}, "clientInfo": hello}}}}
                reply = await client.post("/mcp", json=init, headers=headers)
                sid = reply.headers["mcp-session-id"]
                follow = {{**headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}}
                initialized = {{"jsonrpc": "2.0", "method": "notifications/initialized"}}
                await client.post("/mcp", json=initialized, headers=follow)
                listed = await client.post("/mcp", json={{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}},
                                           headers=follow)
                seen.append([str(reply.status_code), str(listed.status_code), *(m for m in era() if m != "httpx")])
                modern = {{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {{"_meta": {{
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {{}},
                    "io.modelcontextprotocol/clientInfo": {{"name": "c", "version": "1"}}}}}}}}
                headers.update({{"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}})
                reply = await client.post("/mcp", json=modern, headers=headers)
                seen.append([str(reply.status_code), *era()])
                tg.cancel_scope.cancel()
            print(json.dumps(seen))

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    imported, serving_the_handshake_era, after_a_modern_request = json.loads(done.stdout)
    assert imported == []
    assert serving_the_handshake_era == ["200", "200"]
    assert after_a_modern_request[0] == "200" and "minimcp.server.mrtr.rounds" in after_a_modern_request


def test_the_client_names_still_import_from_minimcp() -> None:
    from minimcp import Client, ElicitationRequest, UrlElicitationRequest, connect_stdio, memory_pair, open_in_browser
    from minimcp.client.client import Client as DirectClient
    from minimcp.transports.memory import memory_pair as direct_pair

    assert Client is DirectClient and memory_pair is direct_pair
    # each public name is the object where it is defined (the client's answers, its questions' handlers)
    for name, value in [("ElicitationRequest", ElicitationRequest), ("UrlElicitationRequest", UrlElicitationRequest),
                        ("connect_stdio", connect_stdio), ("open_in_browser", open_in_browser)]:
        assert getattr(importlib.import_module(value.__module__), name) is value
        assert value.__module__ in ("minimcp.client.answers", "minimcp.client.client")
