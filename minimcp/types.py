"""MCP messages as msgspec Structs (revision 2025-11-25 and its predecessors).

Python names are snake_case; on the wire they are camelCase (``rename="camel"``)
and ``_meta`` is spelled as the spec spells it. ``UNSET`` means "absent from the
message", which is different from ``None``. Unknown fields from a newer peer are
ignored on input; output carries exactly the fields that are set.

The results a client hands to its caller (``initialize``, server info, tools,
resources, prompts, completions, content blocks, ``tools/call`` results) say "absent" with ``None`` (and ``is_error``
with ``False``) instead: a field left at that default is omitted on the wire all
the same, so the bytes are unchanged.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "UNSET",
    "AudioContent",
    "CallToolParams",
    "CallToolResult",
    "CancelledParams",
    "ClientCapabilities",
    "CompleteParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "ContentBlock",
    "CreateMessageParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "ElicitationCompleteParams",
    "EmbeddedResource",
    "GetPromptParams",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "InitializeParams",
    "InitializeResult",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListRootsResult",
    "ListToolsResult",
    "LoggingLevel",
    "LoggingMessageParams",
    "PaginatedParams",
    "ProgressParams",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceParams",
    "ResourceTemplate",
    "ResourceUpdatedParams",
    "Root",
    "SamplingMessage",
    "ServerCapabilities",
    "SetLevelParams",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "UnsetType",
]

Meta: TypeAlias = "dict[str, Any] | UnsetType"


def _meta() -> Any:
    return msgspec.field(default=UNSET, name="_meta")


#: ``_meta`` of a result handed to the caller: ``None`` when absent.
ResultMeta: TypeAlias = "dict[str, Any] | None"


def _result_meta() -> Any:
    return msgspec.field(default=None, name="_meta")


class _Base(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    # gc=False: these messages never form reference cycles, so the cyclic collector need not
    # track them (it was a large share of the time with many calls pending).
    pass


class Implementation(_Base, kw_only=True):
    """Name and version of a client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[dict[str, Any]] | None = None


class ClientCapabilities(_Base, kw_only=True):
    """What a client can do. Presence of a key means support."""

    experimental: dict[str, Any] | UnsetType = UNSET
    roots: dict[str, Any] | UnsetType = UNSET
    sampling: dict[str, Any] | UnsetType = UNSET
    elicitation: dict[str, Any] | UnsetType = UNSET
    tasks: dict[str, Any] | UnsetType = UNSET


class ServerCapabilities(_Base, kw_only=True):
    """What a server offers. Presence of a key means support."""

    experimental: dict[str, Any] | UnsetType = UNSET
    logging: dict[str, Any] | UnsetType = UNSET
    completions: dict[str, Any] | UnsetType = UNSET
    prompts: dict[str, Any] | UnsetType = UNSET
    resources: dict[str, Any] | UnsetType = UNSET
    tools: dict[str, Any] | UnsetType = UNSET
    tasks: dict[str, Any] | UnsetType = UNSET


class InitializeParams(_Base, kw_only=True):
    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation
    meta: Meta = _meta()


class InitializeResult(_Base, kw_only=True):
    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None
    meta: ResultMeta = _result_meta()


class PaginatedParams(_Base, kw_only=True):
    cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ToolAnnotations(_Base, kw_only=True):
    """Hints about a tool's behaviour (untrusted unless the server is)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(_Base, kw_only=True):
    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[dict[str, Any]] | None = None
    meta: ResultMeta = _result_meta()


class ListToolsResult(_Base, kw_only=True):
    tools: list[Tool]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class CallToolParams(_Base, kw_only=True):
    name: str
    arguments: dict[str, Any] | UnsetType = UNSET
    meta: Meta = _meta()
    input_responses: dict[str, Any] | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


# --- content -----------------------------------------------------------------------------------

class _Content(_Base, tag_field="type"):
    annotations: dict[str, Any] | None = None
    meta: ResultMeta = _result_meta()


class TextContent(_Content, tag="text", kw_only=True):
    text: str


class ImageContent(_Content, tag="image", kw_only=True):
    data: str  # base64
    mime_type: str


class AudioContent(_Content, tag="audio", kw_only=True):
    data: str  # base64
    mime_type: str


class ResourceLink(_Content, tag="resource_link", kw_only=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


class ResourceContents(_Base, kw_only=True):
    """Text (``text``) or binary (``blob``, base64) contents of a resource."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: ResultMeta = _result_meta()


class EmbeddedResource(_Content, tag="resource", kw_only=True):
    resource: ResourceContents


ContentBlock: TypeAlias = "TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource"


class CallToolResult(_Base, kw_only=True):
    """The result of ``tools/call``. ``is_error`` marks a tool error (not a protocol error)."""

    content: list[ContentBlock]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: ResultMeta = _result_meta()

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (convenience for callers)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


# --- elicitation -------------------------------------------------------------------------------

class ElicitRequestParams(_Base, kw_only=True):
    """``elicitation/create`` params: form mode (``requested_schema``) or URL mode."""

    message: str
    mode: Literal["form", "url"] | UnsetType = UNSET
    requested_schema: dict[str, Any] | UnsetType = UNSET
    elicitation_id: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
    meta: Meta = _meta()


class ElicitResult(_Base, kw_only=True):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | UnsetType = UNSET
    meta: Meta = _meta()


class ElicitationCompleteParams(_Base, kw_only=True):
    elicitation_id: str


# --- notifications -----------------------------------------------------------------------------

class CancelledParams(_Base, kw_only=True):
    request_id: int | str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    meta: Meta = _meta()


class ProgressParams(_Base, kw_only=True):
    progress_token: int | str
    progress: float
    total: float | UnsetType = UNSET
    message: str | UnsetType = UNSET
    meta: Meta = _meta()


# --- resources ---------------------------------------------------------------------------------

class Resource(_Base, kw_only=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: ResultMeta = _result_meta()


class ResourceTemplate(_Base, kw_only=True):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: ResultMeta = _result_meta()


class ListResourcesResult(_Base, kw_only=True):
    resources: list[Resource]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListResourceTemplatesResult(_Base, kw_only=True):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ResourceParams(_Base, kw_only=True):
    """Params of ``resources/read``, ``resources/subscribe``, ``resources/unsubscribe``."""

    uri: str
    meta: Meta = _meta()
    input_responses: dict[str, Any] | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


class ReadResourceResult(_Base, kw_only=True):
    contents: list[ResourceContents]
    meta: ResultMeta = _result_meta()


class ResourceUpdatedParams(_Base, kw_only=True):
    uri: str


# --- prompts -----------------------------------------------------------------------------------

class PromptArgument(_Base, kw_only=True):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(_Base, kw_only=True):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    meta: ResultMeta = _result_meta()


class ListPromptsResult(_Base, kw_only=True):
    prompts: list[Prompt]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class GetPromptParams(_Base, kw_only=True):
    name: str
    arguments: dict[str, str] | UnsetType = UNSET
    meta: Meta = _meta()
    input_responses: dict[str, Any] | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


class PromptMessage(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(_Base, kw_only=True):
    messages: list[PromptMessage]
    description: str | None = None
    meta: ResultMeta = _result_meta()


# --- completion and logging ----------------------------------------------------------------------

class CompletionArgument(_Base, kw_only=True):
    name: str
    value: str


class CompleteParams(_Base, kw_only=True):
    ref: dict[str, Any]  # {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}
    argument: CompletionArgument
    context: dict[str, Any] | UnsetType = UNSET
    meta: Meta = _meta()


class Completion(_Base, kw_only=True):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(_Base, kw_only=True):
    completion: Completion
    meta: ResultMeta = _result_meta()


LoggingLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class SetLevelParams(_Base, kw_only=True):
    level: LoggingLevel
    meta: Meta = _meta()


class LoggingMessageParams(_Base, kw_only=True):
    level: LoggingLevel
    data: Any
    logger: str | UnsetType = UNSET
    meta: Meta = _meta()


# --- sampling and roots --------------------------------------------------------------------------

class SamplingMessage(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock


class CreateMessageParams(_Base, kw_only=True):
    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | UnsetType = UNSET
    include_context: Literal["none", "thisServer", "allServers"] | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    stop_sequences: list[str] | UnsetType = UNSET
    model_preferences: dict[str, Any] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    meta: Meta = _meta()


class CreateMessageResult(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock
    model: str
    stop_reason: str | UnsetType = UNSET
    meta: Meta = _meta()


class Root(_Base, kw_only=True):
    uri: str
    name: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListRootsResult(_Base, kw_only=True):
    roots: list[Root]
    meta: Meta = _meta()
