"""Rendering for the command-line client: tools, results, progress bars, server logs and wire trace lines as text."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import msgspec

from minimcp.cli.terminal import Console, Style
from minimcp.wire.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageParams,
    ProgressParams,
    ResourceLink,
    TextContent,
    Tool,
    UnsetType,
)

__all__ = [
    "Progress",
    "describe_tool",
    "format_log",
    "format_progress",
    "format_result",
    "format_trace",
    "result_json",
    "server_banner",
]

#: Characters of a progress bar between its brackets.
PROGRESS_WIDTH = 20
_NOT_JSON_SHOWN = 2000  # bytes of a trace message that is not JSON shown (as a bytes repr)


# --- progress, logs, trace -----------------------------------------------------------------------------------


def format_progress(params: ProgressParams, *, width: int = PROGRESS_WIDTH) -> str:
    """``[#####.....] 50% message`` (or ``[...] 3 message`` without a total)."""
    message = "" if isinstance(params.message, UnsetType) else f" {params.message}"
    total = None if isinstance(params.total, UnsetType) else params.total
    if total is not None and total > 0:
        fraction = min(1.0, max(0.0, params.progress / total))
        filled = round(fraction * width)
        return f"[{'#' * filled}{'.' * (width - filled)}] {round(fraction * 100):3d}%{message}"
    return f"[{'.' * width}] {params.progress:g}{message}"


class Progress:
    """Shows the progress notifications of one call on stderr."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.seen = False

    def update(self, params: ProgressParams) -> None:
        self.seen = True
        self.console.progress_line(format_progress(params))

    def finish(self) -> None:
        self.console.settle()


def format_log(params: LoggingMessageParams, style: Style) -> str:
    """One server log message, for stderr."""
    data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
    source = "" if isinstance(params.logger, UnsetType) else f" {params.logger}"
    level = params.level
    tag = f"[server {level}{source}]"
    if level in ("error", "critical", "alert", "emergency"):
        tag = style.red(tag)
    elif level == "warning":
        tag = style.yellow(tag)
    else:
        tag = style.dim(tag)
    return f"{tag} {data}"


def _summary(message: Any) -> str:
    if not isinstance(message, dict):
        return "batch" if isinstance(message, list) else "message"
    if "method" in message:
        kind = "request" if "id" in message else "notification"
        ident = f" {json.dumps(message['id'])}" if "id" in message else ""
        return f"{kind}{ident} {message['method']}"
    if "error" in message:
        return f"error response {json.dumps(message.get('id'))}"
    return f"response {json.dumps(message.get('id'))}"


def format_trace(direction: str, data: bytes, style: Style, *, pretty: bool = False) -> str:
    """One wire message: an arrow (``→`` we send, ``←`` we receive) and its JSON."""
    sending = direction == "send"
    arrow = style.glyph("→", "->") if sending else style.glyph("←", "<-")
    arrow = style.cyan(arrow) if sending else style.magenta(arrow)
    try:
        decoded = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return f"{arrow} {style.red('(not JSON)')} {data[:_NOT_JSON_SHOWN]!r}"
    if pretty:
        body = msgspec.json.format(data, indent=2).decode(errors="replace")
        return f"{arrow} {style.bold(_summary(decoded))}\n" + textwrap.indent(body, "    ")
    return f"{arrow} {data.decode(errors='replace')}"


# --- tools and results ---------------------------------------------------------------------------------------


def _schema_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_schema_type(s) for s in schema[key])
    if isinstance(schema.get("$ref"), str):
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    text = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
    if text == "array" and isinstance(schema.get("items"), dict):
        text = f"{_schema_type(schema['items'])}[]"
    if isinstance(schema.get("format"), str):
        text += f"<{schema['format']}>"
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None or hi is not None:
        text += f"[{'' if lo is None else lo}..{'' if hi is None else hi}]"
    return text


def describe_tool(tool: Tool, *, full: bool = False) -> list[str]:
    """A tool as ``name(arg: type, opt?: type = default)`` and its description, indented."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    params: list[str] = []
    for name, prop in (props or {}).items():
        text = f"{name}{'' if name in required else '?'}: {_schema_type(prop)}"
        if isinstance(prop, dict) and "default" in prop:
            text += f" = {json.dumps(prop['default'])}"
        params.append(text)
    lines = [f"{tool.name}({', '.join(params)})"]
    title = None if isinstance(tool.title, UnsetType) else tool.title
    description = None if isinstance(tool.description, UnsetType) else tool.description
    if title:
        lines.append(f"    {title}")
    if description:
        text = description.strip()
        if not full:
            text = text.split("\n\n", 1)[0]
        lines += ["    " + line for line in text.splitlines()]
    if full:
        lines += ["    input schema:", textwrap.indent(json.dumps(tool.input_schema, indent=2), "      ")]
    return lines


def format_result(result: CallToolResult) -> str:
    """The content of a tool result as text (structured content as JSON when there is no text)."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, (ImageContent, AudioContent)):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            size = len(block.data) * 3 // 4  # base64: four characters carry three bytes
            parts.append(f"[{kind} {block.mime_type}, about {size} bytes]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.name}: {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res.text, str):
                parts.append(res.text)
            else:
                parts.append(f"[resource {res.uri}]")
    structured = result.structured_content
    if not parts and structured is not None:
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return "\n".join(parts)


def result_json(result: CallToolResult) -> str:
    """The whole result as JSON, as it came on the wire."""
    return msgspec.json.format(msgspec.json.encode(result), indent=2).decode()


def server_banner(name: str, version: str, title: str | None, transport: str, protocol: str | None) -> str:
    shown = f"{name} {version}" + (f" ({title})" if title else "")
    return f"Connected to {shown} over {transport}, protocol {protocol or '?'}"
