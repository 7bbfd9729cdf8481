"""The server the official MCP conformance suite is run against.

``@modelcontextprotocol/conformance`` (see ``conformance/run.sh``) acts as a
client and uses tools, resources and prompts with fixed names; this file
provides all of them with plain minimcp: content blocks of every kind, a tool
error, progress, logging, sampling, the three form-elicitation scenarios,
resources (text, binary, a template, a subscribable one), prompts and
completion. What the suite checks is described next to each piece.

The same server answers the pre-release suite of revision 2026-07-28
(``--suite draft``, 0.2.0-alpha): its ``test_input_required_result_*`` tools
ask with the very same ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots``
(which become ``input_required`` rounds on that revision), and a few
diagnostic tools serve ``server-stateless`` and the header scenarios.

Run: ``python examples/conformance_server.py --port 3001`` (Streamable HTTP on
``http://127.0.0.1:3001/mcp``). ``--stdio`` serves stdin/stdout instead.
"""

from __future__ import annotations

import argparse
import base64
import io
import logging
import struct
import sys
import wave
import zlib
from typing import Annotated, Any, Literal

import anyio
import msgspec

from minimcp import Accepted, Cancelled, Context, Declined, Elicit, ListRoots, Sample, Server, ToolError
from minimcp.wire.types import (
    AudioContent,
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceContents,
    TextContent,
)

log = logging.getLogger("conformance_server")


# --- media made here, so the file carries no opaque blobs -------------------------------------------------


def _png_1x1_red() -> str:
    """A 1x1 red PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, truecolour
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte + one RGB pixel
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def _wav_silence() -> str:
    """10 ms of 8 kHz mono 16-bit silence as a WAV file, base64."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)
    return base64.b64encode(buf.getvalue()).decode()


RED_PIXEL_PNG = _png_1x1_red()
SILENT_WAV = _wav_silence()


# --- forms -------------------------------------------------------------------------------------------------


class UserInfo(msgspec.Struct):
    """tools-call-elicitation: two required strings."""

    username: Annotated[str, msgspec.Meta(description="User's response")]
    email: Annotated[str, msgspec.Meta(description="User's email address")]


class Defaults(msgspec.Struct):
    """SEP-1034: a default for every primitive type."""

    name: Annotated[str, msgspec.Meta(description="User name")] = "John Doe"
    age: Annotated[int, msgspec.Meta(description="User age")] = 30
    score: Annotated[float, msgspec.Meta(description="User score")] = 95.5
    status: Annotated[Literal["active", "inactive", "pending"], msgspec.Meta(description="User status")] = "active"
    verified: Annotated[bool, msgspec.Meta(description="Verification status")] = True


CONTEXT_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string", "description": "Context for the prompt"}},
    "required": ["context"],
}


# SEP-1330: all five enum shapes, as a raw schema (sent to 2025-11-25 clients as written, so the
# deprecated legacy ``enum`` + ``enumNames`` shape survives).
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Pick one (untitled)",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Pick one (titled)",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Pick one (legacy titled)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Pick any (untitled)",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Pick any (titled)",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


NAME_FORM: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR_FORM: dict[str, Any] = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
CONFIRM_FORM: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def describe(answer: Accepted[Any] | Declined | Cancelled) -> str:
    """``action=..., content=...`` for a tool's text result."""
    if isinstance(answer, Accepted):
        return f"action=accept, content={msgspec.json.encode(answer.value).decode()}"
    if isinstance(answer, Declined):
        return "action=decline"
    return f"action=cancel ({answer.reason})"


# --- the server --------------------------------------------------------------------------------------------


def build_server() -> Server:
    """The conformance server (no state shared between connections)."""
    app = Server("minimcp-conformance-server", "1.0.0", instructions="Tools for the MCP conformance suite.")

    @app.tool()
    async def test_simple_text() -> str:
        """Returns one text block."""
        return "This is a simple text response for testing."

    @app.tool()
    async def test_image_content() -> ImageContent:
        """Returns one image block (a 1x1 red PNG)."""
        return ImageContent(data=RED_PIXEL_PNG, mime_type="image/png")

    @app.tool()
    async def test_audio_content() -> AudioContent:
        """Returns one audio block (a short silent WAV)."""
        return AudioContent(data=SILENT_WAV, mime_type="audio/wav")

    @app.tool()
    async def test_embedded_resource() -> EmbeddedResource:
        """Returns one embedded text resource."""
        return EmbeddedResource(
            resource=ResourceContents(
                uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
            )
        )

    @app.tool()
    async def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Returns text, image and embedded-resource blocks together."""
        return [
            TextContent(text="Multiple content types test:"),
            ImageContent(data=RED_PIXEL_PNG, mime_type="image/png"),
            EmbeddedResource(
                resource=ResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text='{"test":"data","value":123}',
                )
            ),
        ]

    @app.tool()
    async def test_error_handling() -> str:
        """Always fails with a tool error (isError: true)."""
        raise ToolError("This tool intentionally returns an error for testing")

    @app.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100, about 50 ms apart."""
        # Slightly over 50 ms apart: minimcp drops progress sent sooner than limits.progress_interval (0.05 s).
        await ctx.report_progress(0, 100, "started")
        await anyio.sleep(0.06)
        await ctx.report_progress(50, 100, "half way")
        await anyio.sleep(0.06)
        await ctx.report_progress(100, 100, "done")
        return "Progress test completed"

    @app.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Sends three info log messages about 50 ms apart while it runs."""
        await ctx.log("info", "Tool execution started", logger="conformance")
        await anyio.sleep(0.05)
        await ctx.log("info", "Tool processing data", logger="conformance")
        await anyio.sleep(0.05)
        await ctx.log("info", "Tool execution completed", logger="conformance")
        return "Logging test completed"

    @app.tool()
    async def test_sampling(
        ctx: Context, prompt: Annotated[str, msgspec.Meta(description="The prompt to send to the LLM")]
    ) -> str:
        """Asks the client's model to answer a prompt (sampling/createMessage)."""
        result: CreateMessageResult = await ctx.sample(prompt, max_tokens=100)
        text = result.content.text if isinstance(result.content, TextContent) else f"<{type(result.content).__name__}>"
        return f"LLM response: {text}"

    @app.tool()
    async def test_elicitation(
        ctx: Context, message: Annotated[str, msgspec.Meta(description="The message to show the user")]
    ) -> str:
        """Asks the user for a username and an email address."""
        answer = await ctx.elicit(message, UserInfo)
        if isinstance(answer, Accepted):
            content = {"username": answer.value.username, "email": answer.value.email}
            return f"User response: action=accept, content={msgspec.json.encode(content).decode()}"
        return f"User response: {describe(answer)}"

    @app.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks a form whose every field has a default (SEP-1034)."""
        answer = await ctx.elicit("Please confirm or change these values", Defaults)
        if isinstance(answer, Accepted):
            return f"Elicitation completed: action=accept, content={msgspec.json.encode(answer.value).decode()}"
        return f"Elicitation completed: {describe(answer)}"

    @app.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks a form with all five enum shapes (SEP-1330)."""
        answer = await ctx.elicit("Please make your selections", ENUMS_SCHEMA)
        return f"Elicitation completed: {describe(answer)}"

    @app.tool(
        description="Tool with JSON Schema 2020-12 features",
        # SEP-1613 ($schema, $defs, additionalProperties survive) and SEP-2106 (the rest of the
        # 2020-12 vocabulary survives too: $anchor, allOf / anyOf, if / then / else).
        input_schema={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    )
    async def json_schema_2020_12_tool(
        name: str | None = None,
        address: dict[str, str] | None = None,
        contactMethod: str | None = None,  # the wire name
        phone: str | None = None,
        email: str | None = None,
    ) -> str:
        where = ", ".join(v for v in (address or {}).values())
        reach = phone if contactMethod == "phone" else email
        return f"Hello {name or 'nobody'}" + (f" from {where}" if where else "") + (f", at {reach}" if reach else "")

    @app.tool()
    async def test_reconnection() -> str:
        """Finishes after a short pause (SSE polling, SEP-1699)."""
        await anyio.sleep(0.1)
        return "Reconnection test completed successfully"

    # --- revision 2026-07-28 (the draft suite): multi round-trip requests (SEP-2322) -------------

    @app.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks for a name (an elicitation input request, under the key the suite expects), then greets."""
        answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
        if isinstance(answer, Accepted):
            return f"Hello, {answer.value['name']}!"
        return f"No name given ({describe(answer)})"

    @app.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's model a question (a sampling input request)."""
        result = await ctx.sample("What is the capital of France?", max_tokens=100)
        text = result.content.text if isinstance(result.content, TextContent) else f"<{type(result.content).__name__}>"
        return f"The model said: {text}"

    @app.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Asks for the client's roots (a roots/list input request)."""
        roots = await ctx.list_roots()
        return "Roots: " + ", ".join(root.uri for root in roots)

    @app.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Asks for a confirmation; the answer comes back with the (sealed) requestState."""
        answer = await ctx.elicit("Please confirm", CONFIRM_FORM)
        ok = isinstance(answer, Accepted) and answer.value["ok"] is True
        return f"state-ok: confirmed={ok}"

    @app.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Needs a name, a model-written greeting and the roots, asked all at once (one round)."""
        got = await ctx.gather(
            user_name=Elicit("What is your name?", NAME_FORM),
            greeting=Sample("Generate a greeting", max_tokens=50),
            client_roots=ListRoots(),
        )
        name, greeting, roots = got["user_name"], got["greeting"], got["client_roots"]
        who = name.value["name"] if isinstance(name, Accepted) else "nobody"
        said = greeting.content.text if isinstance(greeting.content, TextContent) else "?"
        return f"{said} {who} ({len(roots)} roots)"

    @app.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Two questions in two rounds: a name, then a colour."""
        name = await ctx.elicit("Step 1: What is your name?", NAME_FORM)
        color = await ctx.elicit("Step 2: What is your favorite color?", COLOR_FORM)
        who = name.value["name"] if isinstance(name, Accepted) else "?"
        favourite = color.value["color"] if isinstance(color, Accepted) else "?"
        return f"{who} likes {favourite}"

    @app.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Asks for a confirmation; a retry with altered requestState is refused (-32602)."""
        answer = await ctx.elicit("Please confirm", CONFIRM_FORM)
        return f"confirmed: {describe(answer)}"

    @app.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks only what the request's client capabilities allow: a form, else the model."""
        if ctx.can_elicit_form():
            return f"asked the person: {describe(await ctx.elicit('What is your name?', NAME_FORM))}"
        result = await ctx.sample("What is your name?", max_tokens=20)
        text = result.content.text if isinstance(result.content, TextContent) else "?"
        return f"asked the model: {text}"

    @app.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that first asks the person for some context (an input request on prompts/get)."""
        answer = await ctx.elicit("What context should the prompt use?", CONTEXT_FORM)
        given = answer.value["context"] if isinstance(answer, Accepted) else "none"
        return f"Write about this context: {given}"

    # --- revision 2026-07-28: server-stateless (SEP-2575) and header (SEP-2243) diagnostics -------

    @app.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Needs sampling: without it in the request's capabilities, -32021 (HTTP 400)."""
        result = await ctx.sample("Say hello", max_tokens=10)
        return result.content.text if isinstance(result.content, TextContent) else "?"

    @app.tool()
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Asks a question: on 2026-07-28 an input_required result, never a request on the stream."""
        return f"answered: {describe(await ctx.elicit('What is your name?', NAME_FORM))}"

    @app.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Logs, but only when the request asked for a log level (2026-07-28: ``_meta`` logLevel)."""
        sent = await ctx.log("info", "test_logging_tool ran", logger="conformance")
        return f"logged={sent}"

    @app.tool(
        description="Mirrors its region argument into the Mcp-Param-Region header (x-mcp-header)",
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"},
                "query": {"type": "string", "description": "What to run"},
            },
            "required": ["region"],
        },
    )
    async def test_custom_header(region: str, query: str = "") -> str:
        return f"ran {query!r} in {region}"

    # resources

    @app.resource("test://static-text", name="static-text", mime_type="text/plain")
    async def static_text() -> str:
        """A fixed text resource."""
        return "This is the content of the static text resource."

    @app.resource("test://static-binary", name="static-binary", mime_type="image/png")
    async def static_binary() -> bytes:
        """A fixed binary resource (a 1x1 red PNG)."""
        return base64.b64decode(RED_PIXEL_PNG)

    @app.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
    async def watched_resource() -> str:
        """A resource clients may subscribe to."""
        return "This resource can be watched for changes."

    @app.resource_template("test://template/{id}/data", name="template-data", mime_type="application/json")
    async def template_data(id: str) -> str:
        """JSON data for any id."""
        return msgspec.json.encode({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}).decode()

    # prompts

    @app.prompt()
    async def test_simple_prompt() -> str:
        """A prompt without arguments."""
        return "This is a simple prompt for testing."

    @app.prompt()
    async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with two required arguments, arg1 and arg2."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @app.prompt()
    async def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:  # the wire name
        """A prompt that embeds the resource named by resourceUri."""
        return [
            PromptMessage(
                role="user",
                content=EmbeddedResource(
                    resource=ResourceContents(
                        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                    )
                ),
            ),
            PromptMessage(role="user", content=TextContent(text="Please process the embedded resource above.")),
        ]

    @app.prompt()
    async def test_prompt_with_image() -> list[PromptMessage]:
        """A prompt with an image."""
        return [
            PromptMessage(role="user", content=ImageContent(data=RED_PIXEL_PNG, mime_type="image/png")),
            PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
        ]

    # completion

    @app.completion
    async def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, str]) -> list[str]:
        """Suggestions for test_prompt_with_arguments' arguments and the template's id."""
        if ref.get("type") == "ref/prompt" and ref.get("name") == "test_prompt_with_arguments":
            options = ["paris", "park", "party", "test", "testing"]
        elif ref.get("type") == "ref/resource" and argument == "id":
            options = ["1", "2", "3", "123"]
        else:
            options = []
        return [o for o in options if o.startswith(value)]

    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3001, help="port (default 3001)")
    parser.add_argument("--stdio", action="store_true", help="serve stdin/stdout instead of HTTP")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    app = build_server()
    if args.stdio:
        app.run(backend=args.backend)
        return
    from minimcp import serve_http

    log.info("serving http://%s:%d/mcp", args.host, args.port)
    anyio.run(serve_http, app, args.host, args.port, backend=args.backend)


if __name__ == "__main__":
    main()
