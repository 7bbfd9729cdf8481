"""minimcp's client under the official MCP conformance suite (client leg).

The harness starts a mock server per scenario and runs::

    python conformance/client.py <server-url>

with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario (``CONFORMANCE_BACKEND=trio`` runs it on
trio). This program plays the
part a real application would: connect with :class:`minimcp.Client` over
Streamable HTTP, do what the scenario asks, and exit 0 (non-zero on error).

The pre-release harness (0.2.0-alpha) also sets ``MCP_CONFORMANCE_PROTOCOL_VERSION``; for
revision 2026-07-28 scenarios the client runs with ``era="auto"`` (a ``server/discover`` probe
over modern HTTP, which these mocks answer), and ``MCP_CONFORMANCE_CONTEXT`` may carry the
tool calls to make (``http-custom-headers``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio

from minimcp import Accepted, Client, ElicitationRequest
from minimcp.transports.http import http_client
from minimcp.wire.versions import is_modern

log = logging.getLogger("conformance.client")


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", f"<{type(block).__name__}>") for block in result.content)


async def initialize(url: str) -> None:
    """Handshake, then close."""
    async with http_client(url) as transport, Client(transport, name="minimcp-conformance-client") as client:
        log.info("initialized: %s %s", client.server_info, client.protocol_version)


async def tools_call(url: str) -> None:
    """List the tools, then call add_numbers."""
    async with http_client(url) as transport, modern_client(transport) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", _text(result))
        if result.is_error is True:
            raise SystemExit(f"add_numbers failed: {_text(result)}")


async def accept_with_defaults(request: ElicitationRequest) -> Accepted[dict[str, Any]]:
    """Accept without touching any field: the Client fills the schema's defaults (fill_defaults)."""
    log.info("elicitation from %s: %s (fields %s)", request.server_name, request.message,
             [f.name for f in request.form.fields])  # fmt: skip
    return Accepted({})


async def elicitation_defaults(url: str) -> None:
    """Call the tool that asks a form whose every field has a default (SEP-1034)."""
    async with (
        http_client(url) as transport,
        Client(
            transport,
            name="minimcp-conformance-client",
            elicitation_handler=accept_with_defaults,
            fill_defaults=True,
        ) as client,
    ):
        # The mock (TS SDK) sends its question on the standalone GET stream and drops it when that
        # stream is not open; http_client opens the GET right after the handshake and waits for it.
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("test_client_elicitation_defaults: %s", _text(result))


async def sse_retry(url: str) -> None:
    """Call a tool whose SSE stream the server closes before the answer (SEP-1699).

    The transport must wait the stream's ``retry`` delay and resume with a GET
    carrying ``Last-Event-ID``; the result arrives on that stream.
    """
    # No standalone GET stream here: this mock answers *any* GET with the pending tool result, so
    # it would take a standalone GET for the reconnection under test (the request's own GET with
    # Last-Event-ID, which the transport makes either way).
    async with (
        http_client(url, standalone_stream=False) as transport,
        Client(transport, name="minimcp-conformance-client") as client,
    ):
        result = await client.call_tool("test_reconnection", {})
        log.info("test_reconnection: %s", _text(result))


# --- revision 2026-07-28 (the alpha harness's draft scenarios) --------------------------------


def era() -> Literal["legacy", "auto"]:
    """``auto`` (probe with server/discover) when the harness targets a modern revision."""
    return "auto" if is_modern(os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")) else "legacy"


def modern_client(transport: Any, **options: Any) -> Client:
    return Client(transport, name="minimcp-conformance-client", era=era(), **options)


async def mrtr_request_state(url: str) -> None:
    """SEP-2322: answer input_required rounds; a call made between two rounds stays clean."""

    async def confirm(request: ElicitationRequest) -> Accepted[dict[str, Any]]:
        log.info("input request: %s", request.message)
        if "no state" not in request.message:
            # Another call while this flow waits for its answer: it must carry none of the
            # flow's inputResponses / requestState.
            result = await client.call_tool("test_mrtr_unrelated", {})
            log.info("test_mrtr_unrelated (between rounds): %s", _text(result))
        return Accepted({"confirmed": True})

    async with http_client(url) as transport, modern_client(transport, elicitation_handler=confirm) as client:
        log.info("era %s, tools %s", client.era, [t.name for t in await client.list_tools()])
        for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"):
            result = await client.call_tool(name, {})
            log.info("%s: %s", name, _text(result))


async def request_metadata(url: str) -> None:
    """SEP-2575: the per-request _meta and MCP-Protocol-Version (the mock refuses the first request)."""
    async with http_client(url) as transport, modern_client(transport) as client:
        log.info("era %s, tools %s", client.era, [t.name for t in await client.list_tools()])


def _sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Placeholder values for a tool's required arguments."""
    samples = {"string": "test", "integer": 1, "number": 1.5, "boolean": True}
    properties = schema.get("properties") or {}
    return {
        name: samples.get(str((properties.get(name) or {}).get("type")), "test")
        for name in schema.get("required") or []
    }


async def standard_headers(url: str) -> None:
    """SEP-2243: Mcp-Method on every POST, Mcp-Name on tools/call, resources/read, prompts/get."""
    async with http_client(url) as transport, modern_client(transport) as client:
        for tool in await client.list_tools():
            await client.call_tool(tool.name, _sample_arguments(tool.input_schema))
        for resource in await client.list_resources():
            await client.read_resource(resource.uri)
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt.name, {a.name: "test" for a in prompt.arguments or [] if a.required})


async def custom_headers(url: str) -> None:
    """SEP-2243: x-mcp-header arguments mirrored as Mcp-Param-* (the calls come in MCP_CONFORMANCE_CONTEXT)."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    async with http_client(url) as transport, modern_client(transport) as client:
        log.info("tools %s", [t.name for t in await client.list_tools()])  # learns the annotations
        for call in context.get("toolCalls", []):
            result = await client.call_tool(call["name"], call.get("arguments") or {})
            log.info("%s: %s", call["name"], _text(result))


async def invalid_tool_headers(url: str) -> None:
    """SEP-2243: tools with invalid x-mcp-header annotations are dropped from tools/list; call the rest."""
    async with http_client(url) as transport, modern_client(transport) as client:
        tools = await client.list_tools()
        log.info("usable tools: %s", [t.name for t in tools])
        for tool in tools:
            await client.call_tool(tool.name, _sample_arguments(tool.input_schema))


async def ref_no_deref(url: str) -> None:
    """SEP-2106: list a tool whose schema $refs a network URL; nothing is fetched (minimcp never dereferences)."""
    async with http_client(url) as transport, modern_client(transport) as client:
        for tool in await client.list_tools():
            log.info("tool %s: schema keys %s", tool.name, sorted(tool.input_schema))


# --- authorization (the auth, backcompat, extensions and draft suites' auth/* scenarios) --------

#: The Client ID Metadata Document URL the CIMD scenario expects (the mock never fetches it).
CIMD_URL = "https://conformance-test.local/client-metadata.json"


async def authorized(url: str) -> None:
    """Sign in as the mock server's 401 asks (headless: the mock authorizes at once), list the tools, call them.

    ``MCP_CONFORMANCE_CONTEXT`` carries a pre-registered client where the scenario has one; the
    scenarios that refuse to proceed (a resource mismatch, a wrong ``iss``...) end with the
    request's error, which they allow. DPoP is asked for wherever the authorization server offers it
    (the ``auth/dpop*`` scenarios' servers do).
    """
    from minimcp.auth import HeadlessBrowser, OAuthClient

    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = OAuthClient(
        HeadlessBrowser(),
        redirect_uri="http://127.0.0.1:3030/callback",
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CIMD_URL if scenario == "auth/basic-cimd" else None,
        client_name="minimcp-conformance-client",
        dpop=True,
    )
    await call_every_tool(url, auth)


async def call_every_tool(url: str, auth: Any) -> None:
    """Connect with ``auth``, list the tools and call each."""
    async with http_client(url, auth=auth) as transport, modern_client(transport) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])
        for tool in tools:
            result = await client.call_tool(tool.name, _sample_arguments(tool.input_schema))
            log.info("%s: %s", tool.name, _text(result))


async def machine(url: str) -> None:
    """The authorization extensions' machine clients, configured from ``MCP_CONFORMANCE_CONTEXT``.

    Client credentials with ``client_secret_basic`` or a ``private_key_jwt`` assertion (SEP-1046),
    workload identity (SEP-1933: the context's valid workload JWT as the jwt-bearer grant), and
    enterprise-managed authorization (SEP-990: the ID token exchanged at the IdP for an ID-JAG,
    then the jwt-bearer grant; ``auth/cross-app-access-complete-flow`` in 0.1.16).
    """
    from minimcp.auth import ClientCredentialsAuth, EnterpriseAuth, JWTBearerAuth

    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth: Any
    if scenario == "auth/client-credentials-jwt":
        auth = ClientCredentialsAuth(
            context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    elif scenario == "auth/client-credentials-basic":
        auth = ClientCredentialsAuth(context["client_id"], context["client_secret"])
    elif scenario == "auth/wif-jwt-bearer":
        auth = JWTBearerAuth(context["valid_jwt"], client_id=context.get("client_id"))
    else:
        auth = EnterpriseAuth(
            context["idp_token_endpoint"],
            context["idp_id_token"],
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            idp_client_id=context.get("idp_client_id"),
        )
    await call_every_tool(url, auth)


AUTH_SCENARIOS = (
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported",
    "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
    "auth/iss-normalized", "auth/metadata-issuer-mismatch", "auth/dpop", "auth/dpop-nonce",
)  # fmt: skip
MACHINE_SCENARIOS = (
    "auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow",
)  # fmt: skip

SCENARIOS: dict[str, Callable[[str], Awaitable[None]]] = {
    **dict.fromkeys(AUTH_SCENARIOS, authorized),
    **dict.fromkeys(MACHINE_SCENARIOS, machine),
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "sep-2322-client-request-state": mrtr_request_state,
    "request-metadata": request_metadata,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": ref_no_deref,
}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2:
        print("usage: MCP_CONFORMANCE_SCENARIO=<name> client.py <server-url>", file=sys.stderr)
        return 2
    run = SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    anyio.run(_bounded, run, argv[-1], backend=os.environ.get("CONFORMANCE_BACKEND", "asyncio"))
    return 0


async def _bounded(run: Callable[[str], Awaitable[None]], url: str) -> None:
    with anyio.fail_after(25):  # the harness kills the client at 30 s; fail visibly before that
        await run(url)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
