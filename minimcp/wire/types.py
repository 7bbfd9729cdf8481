"""MCP messages as msgspec Structs (revision 2025-11-25 and its predecessors).

Python names are snake_case; on the wire they are camelCase (``rename="camel"``)
and ``_meta`` is spelled as the spec spells it. ``UNSET`` means "absent from the
message", which is different from ``None``. Unknown fields from a newer peer are
ignored on input; output carries exactly the fields that are set.

The results a client hands to its caller (``initialize``, server info, tools,
resources, prompts, completions, content blocks, ``tools/call`` results) say "absent" with ``None`` (and ``is_error``
with ``False``) instead: a field left at that default is omitted on the wire all
the same, so the bytes are unchanged.

Each request's params class names its method and its result type as class
variables (``ListToolsParams.method == "tools/list"``,
``ListToolsParams.result is ListToolsResult``), so
``await session.request(ListToolsParams())`` sends ``tools/list`` and is typed
``ListToolsResult`` (:class:`RequestParams`). Class variables are not fields:
they never reach the wire.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar

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
    "EmptyResult",
    "GetPromptParams",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "InitializeParams",
    "InitializeResult",
    "JSONObject",
    "JSONValue",
    "ListPromptsParams",
    "ListPromptsResult",
    "ListResourceTemplatesParams",
    "ListResourceTemplatesResult",
    "ListResourcesParams",
    "ListResourcesResult",
    "ListRootsParams",
    "ListRootsResult",
    "ListToolsParams",
    "ListToolsResult",
    "LoggingLevel",
    "LoggingMessageParams",
    "PaginatedParams",
    "PingParams",
    "ProgressParams",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceParams",
    "ReadResourceResult",
    "RequestParams",
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
    "SubscribeParams",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "UnsetType",
    "UnsubscribeParams",
]

if TYPE_CHECKING:
    #: Any JSON value, as a JSON decoder gives it (objects as ``dict``, arrays as ``list``).
    JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
    #: A JSON object.
    JSONObject: TypeAlias = "dict[str, JSONValue]"
else:
    # msgspec cannot resolve a recursive alias (and ``object`` would cost it a check per
    # value): at run time these are ``Any``, so decoding is exactly what it was.
    JSONValue = Any
    JSONObject = dict[str, Any]

Meta: TypeAlias = "JSONObject | UnsetType"


def _meta() -> Any:
    return msgspec.field(default=UNSET, name="_meta")


#: ``_meta`` of a result handed to the caller: ``None`` when absent.
ResultMeta: TypeAlias = "JSONObject | None"


def _result_meta() -> Any:
    return msgspec.field(default=None, name="_meta")


class _Base(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    # gc=False: these messages never form reference cycles, so the cyclic collector need not
    # track them (it was a large share of the time with many calls pending).
    pass


_R_co = TypeVar("_R_co", covariant=True)


class RequestParams(Protocol[_R_co]):
    """The params of one request method, whose class names that method and its result type.

    Every ``...Params`` class below that belongs to one method satisfies it, through two
    class variables: ``method`` (the JSON-RPC method) and ``result`` (the Struct its
    result decodes into). ``Session.request(params)`` reads both, so the call needs no
    method string and its value is typed by the params alone.
    """

    @property
    def method(self) -> str: ...

    @property
    def result(self) -> type[_R_co]: ...


class EmptyResult(_Base, kw_only=True):
    """The result of a request that answers nothing but success (``ping``, ``logging/setLevel``, ...)."""

    meta: Meta = _meta()


class PingParams(_Base, kw_only=True):
    """``ping`` params (only ``_meta``)."""

    method: ClassVar[str] = "ping"
    result: ClassVar[type[EmptyResult]] = EmptyResult

    meta: Meta = _meta()


class Implementation(_Base, kw_only=True):
    """Name and version of a client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[JSONObject] | None = None


class ClientCapabilities(_Base, kw_only=True):
    """What a client can do. Presence of a key means support."""

    experimental: JSONObject | UnsetType = UNSET
    roots: JSONObject | UnsetType = UNSET
    sampling: JSONObject | UnsetType = UNSET
    elicitation: JSONObject | UnsetType = UNSET
    tasks: JSONObject | UnsetType = UNSET


class ServerCapabilities(_Base, kw_only=True):
    """What a server offers. Presence of a key means support."""

    experimental: JSONObject | UnsetType = UNSET
    logging: JSONObject | UnsetType = UNSET
    completions: JSONObject | UnsetType = UNSET
    prompts: JSONObject | UnsetType = UNSET
    resources: JSONObject | UnsetType = UNSET
    tools: JSONObject | UnsetType = UNSET
    tasks: JSONObject | UnsetType = UNSET


class InitializeResult(_Base, kw_only=True):
    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None
    meta: ResultMeta = _result_meta()


class InitializeParams(_Base, kw_only=True):
    method: ClassVar[str] = "initialize"
    result: ClassVar[type[InitializeResult]] = InitializeResult

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation
    meta: Meta = _meta()


class PaginatedParams(_Base, kw_only=True):
    """The params every ``.../list`` request shares (the subclasses below name the method)."""

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
    input_schema: dict[str, Any]  # a JSON Schema, walked level by level by renderers: left open
    title: str | None = None
    description: str | None = None
    output_schema: JSONObject | None = None
    annotations: ToolAnnotations | None = None
    icons: list[JSONObject] | None = None
    meta: ResultMeta = _result_meta()


class ListToolsResult(_Base, kw_only=True):
    tools: list[Tool]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListToolsParams(PaginatedParams, kw_only=True):
    method: ClassVar[str] = "tools/list"
    result: ClassVar[type[ListToolsResult]] = ListToolsResult


# --- content -----------------------------------------------------------------------------------

class _Content(_Base, tag_field="type"):
    annotations: JSONObject | None = None
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
    structured_content: dict[str, Any] | None = None  # the tool's own output (its outputSchema): left open
    is_error: bool = False
    meta: ResultMeta = _result_meta()

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (convenience for callers)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


class CallToolParams(_Base, kw_only=True):
    method: ClassVar[str] = "tools/call"
    result: ClassVar[type[CallToolResult]] = CallToolResult

    name: str
    arguments: JSONObject | UnsetType = UNSET
    meta: Meta = _meta()
    input_responses: JSONObject | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


# --- elicitation -------------------------------------------------------------------------------

class ElicitResult(_Base, kw_only=True):
    action: Literal["accept", "decline", "cancel"]
    content: JSONObject | UnsetType = UNSET
    meta: Meta = _meta()


class ElicitRequestParams(_Base, kw_only=True):
    """``elicitation/create`` params: form mode (``requested_schema``) or URL mode."""

    method: ClassVar[str] = "elicitation/create"
    result: ClassVar[type[ElicitResult]] = ElicitResult

    message: str
    mode: Literal["form", "url"] | UnsetType = UNSET
    requested_schema: JSONObject | UnsetType = UNSET
    elicitation_id: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
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
    annotations: JSONObject | None = None
    meta: ResultMeta = _result_meta()


class ResourceTemplate(_Base, kw_only=True):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: JSONObject | None = None
    meta: ResultMeta = _result_meta()


class ListResourcesResult(_Base, kw_only=True):
    resources: list[Resource]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListResourceTemplatesResult(_Base, kw_only=True):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListResourcesParams(PaginatedParams, kw_only=True):
    method: ClassVar[str] = "resources/list"
    result: ClassVar[type[ListResourcesResult]] = ListResourcesResult


class ListResourceTemplatesParams(PaginatedParams, kw_only=True):
    method: ClassVar[str] = "resources/templates/list"
    result: ClassVar[type[ListResourceTemplatesResult]] = ListResourceTemplatesResult


class ResourceParams(_Base, kw_only=True):
    """Params of ``resources/read``, ``resources/subscribe``, ``resources/unsubscribe``."""

    uri: str
    meta: Meta = _meta()
    input_responses: JSONObject | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


class ReadResourceResult(_Base, kw_only=True):
    contents: list[ResourceContents]
    meta: ResultMeta = _result_meta()


class ReadResourceParams(ResourceParams, kw_only=True):
    method: ClassVar[str] = "resources/read"
    result: ClassVar[type[ReadResourceResult]] = ReadResourceResult


class SubscribeParams(ResourceParams, kw_only=True):
    method: ClassVar[str] = "resources/subscribe"
    result: ClassVar[type[EmptyResult]] = EmptyResult


class UnsubscribeParams(ResourceParams, kw_only=True):
    method: ClassVar[str] = "resources/unsubscribe"
    result: ClassVar[type[EmptyResult]] = EmptyResult


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


class ListPromptsParams(PaginatedParams, kw_only=True):
    method: ClassVar[str] = "prompts/list"
    result: ClassVar[type[ListPromptsResult]] = ListPromptsResult


class PromptMessage(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(_Base, kw_only=True):
    messages: list[PromptMessage]
    description: str | None = None
    meta: ResultMeta = _result_meta()


class GetPromptParams(_Base, kw_only=True):
    method: ClassVar[str] = "prompts/get"
    result: ClassVar[type[GetPromptResult]] = GetPromptResult

    name: str
    arguments: dict[str, str] | UnsetType = UNSET
    meta: Meta = _meta()
    input_responses: JSONObject | UnsetType = UNSET  # 2026-07-28 retries
    request_state: str | UnsetType = UNSET


# --- completion and logging ----------------------------------------------------------------------

class CompletionArgument(_Base, kw_only=True):
    name: str
    value: str


class Completion(_Base, kw_only=True):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(_Base, kw_only=True):
    completion: Completion
    meta: ResultMeta = _result_meta()


class CompleteParams(_Base, kw_only=True):
    method: ClassVar[str] = "completion/complete"
    result: ClassVar[type[CompleteResult]] = CompleteResult

    ref: JSONObject  # {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}
    argument: CompletionArgument
    context: dict[str, Any] | UnsetType = UNSET  # {"arguments": {name: value}}; left open for handlers
    meta: Meta = _meta()


LoggingLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
#: The levels, least severe first (the order ``logging/setLevel`` compares them in).
LOG_LEVELS: tuple[LoggingLevel, ...] = typing.get_args(LoggingLevel)


class SetLevelParams(_Base, kw_only=True):
    method: ClassVar[str] = "logging/setLevel"
    result: ClassVar[type[EmptyResult]] = EmptyResult

    level: LoggingLevel
    meta: Meta = _meta()


class LoggingMessageParams(_Base, kw_only=True):
    level: LoggingLevel
    data: JSONValue
    logger: str | UnsetType = UNSET
    meta: Meta = _meta()


# --- sampling and roots --------------------------------------------------------------------------

class SamplingMessage(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock


class CreateMessageResult(_Base, kw_only=True):
    role: Literal["user", "assistant"]
    content: ContentBlock
    model: str
    stop_reason: str | UnsetType = UNSET
    meta: Meta = _meta()


class CreateMessageParams(_Base, kw_only=True):
    method: ClassVar[str] = "sampling/createMessage"
    result: ClassVar[type[CreateMessageResult]] = CreateMessageResult

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | UnsetType = UNSET
    include_context: Literal["none", "thisServer", "allServers"] | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    stop_sequences: list[str] | UnsetType = UNSET
    model_preferences: JSONObject | UnsetType = UNSET
    metadata: JSONObject | UnsetType = UNSET
    meta: Meta = _meta()


class Root(_Base, kw_only=True):
    uri: str
    name: str | UnsetType = UNSET
    meta: Meta = _meta()


class ListRootsResult(_Base, kw_only=True):
    roots: list[Root]
    meta: Meta = _meta()


class ListRootsParams(_Base, kw_only=True):
    """``roots/list`` params (only ``_meta``)."""

    method: ClassVar[str] = "roots/list"
    result: ClassVar[type[ListRootsResult]] = ListRootsResult

    meta: Meta = _meta()
