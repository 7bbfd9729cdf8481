"""The server's request handlers: tools, resources, prompts and completion, each given what it reads.

Each handler takes the :class:`~minimcp.server.registry.Registry` (and, where a call
runs user code with a :class:`~minimcp.server.context.Context`, the connection as a
:class:`~minimcp.server.context.ports.CallHost`) explicitly, decodes its params, and returns
the result (or raises :class:`~minimcp.wire.errors.McpError`). Both eras use them:
:mod:`minimcp.server.connection` dispatches the handshake era to them, and
:mod:`minimcp.server.mrtr.rounds` wraps them in the 2026-07-28 result shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from minimcp.core.dispatch import Deferred
from minimcp.server.context import AnswerContext, Context
from minimcp.server.outcome import ToolRun, missing_capability, ready
from minimcp.server.registry import Registry, page
from minimcp.server.tools import argument_error, error_result
from minimcp.wire import errors, jsonrpc
from minimcp.wire.elicitation import ElicitationUnsupported
from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import Request
from minimcp.wire.types import (
    UNSET,
    CallToolResult,
    CompleteParams,
    CompleteResult,
    Completion,
    GetPromptParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedParams,
    ReadResourceResult,
    ResourceParams,
    UnsetType,
)

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal
    from minimcp.server.context.ports import CallHost
    from minimcp.server.prompts import RegisteredPrompt
    from minimcp.wire.envelope import Envelope

__all__ = [
    "EMPTY",
    "LISTS",
    "CallToolWire",
    "call_tool",
    "complete",
    "get_prompt",
    "prompt_and_arguments",
    "prompt_result",
    "read_resource",
    "subscribe",
    "unsubscribe",
]

#: The empty result (``ping``, ``resources/subscribe``, ``logging/setLevel``).
EMPTY: dict[str, Any] = {}

#: The spec caps one completion answer at this many values.
MAX_COMPLETION_VALUES = 100


class CallToolWire(msgspec.Struct, rename="camel"):
    """``tools/call`` params, with the arguments kept raw (the tool's own type decodes them)."""

    name: str
    arguments: msgspec.Raw = jsonrpc.NO_PARAMS
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")
    # 2026-07-28 multi round-trip requests
    input_responses: dict[str, Any] | UnsetType | None = UNSET
    request_state: str | UnsetType = UNSET


# --- tools ---------------------------------------------------------------------------------------


def call_tool(host: CallHost, registry: Registry, request: Request) -> Awaitable[CallToolResult] | Deferred:
    """``tools/call`` on the handshake era: the tool's coroutine, for the session to await and finish."""
    params = jsonrpc.decode_params(request.params, CallToolWire)
    tool = registry.tools.get(params.name)
    if tool is None:
        raise McpError(errors.INVALID_PARAMS, f"Unknown tool: {params.name}")
    try:
        kwargs = tool.arguments(params.arguments)
    except msgspec.DecodeError as exc:  # a validation error, or bytes that are not valid UTF-8
        return ready(error_result(argument_error(params.name, exc)))
    # The registered name (equal to the one asked for): the decoded string is not kept while the call waits.
    name = tool.definition.name
    ctx: Context | None = None
    if tool.context_param is not None:
        ctx = kwargs[tool.context_param] = Context(host, request.id, params.meta, None, None, name)  # (positional)
    # The tool's coroutine is made here, so the arguments dict is not kept alive beside it.
    return ToolRun(host, tool, name, tool.fn(**kwargs), ctx, False)


async def list_tools(
    registry: Registry, page_size: int, request: Request, allowed: frozenset[str] | None = None
) -> ListToolsResult:
    params = jsonrpc.decode_params(request.params, PaginatedParams)
    items = registry.tool_list
    if allowed is not None and registry.scoped:
        tools_ = registry.tools
        items = [t for t in items if tools_[t.name].scopes <= allowed]
    tools, cursor = page(items, params.cursor, page_size)
    return ListToolsResult(tools=tools, next_cursor=cursor)


# --- resources -----------------------------------------------------------------------------------


async def list_resources(
    registry: Registry, page_size: int, request: Request, allowed: frozenset[str] | None = None
) -> ListResourcesResult:
    params = jsonrpc.decode_params(request.params, PaginatedParams)
    items = [r.definition for r in registry.resources.values() if allowed is None or r.scopes <= allowed]
    found, cursor = page(items, params.cursor, page_size)
    return ListResourcesResult(resources=found, next_cursor=cursor)


async def list_templates(
    registry: Registry, page_size: int, request: Request, allowed: frozenset[str] | None = None
) -> ListResourceTemplatesResult:
    params = jsonrpc.decode_params(request.params, PaginatedParams)
    items = [t.definition for t in registry.templates if allowed is None or t.scopes <= allowed]
    found, cursor = page(items, params.cursor, page_size)
    return ListResourceTemplatesResult(resource_templates=found, next_cursor=cursor)


async def _answered(fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any], ctx: Context,
                    context_param: str) -> Any:
    """``fn(*args, **kwargs)`` awaited with ``ctx`` as its ``context_param`` (a reader or a completion handler that
    declares one; one that does not is awaited as it is), ``ctx`` finished when ``fn`` returns."""
    kwargs[context_param] = ctx
    try:
        return await fn(*args, **kwargs)
    finally:
        ctx.finished = True


async def read_resource(host: CallHost, registry: Registry, request: Request, envelope: Envelope | None = None,
                        principal: Principal | None = None) -> ReadResourceResult:
    """``resources/read``; ``envelope``, ``principal``: the request's own on 2026-07-28 (for the reader's context;
    ``principal`` ``None``: the connection's)."""
    params = jsonrpc.decode_params(request.params, ResourceParams)
    uri = params.uri
    found = registry.reader_of(uri)
    if found is None:
        raise McpError(errors.RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    reader, variables = found
    if reader.context_param is None:
        value = await reader.fn(**variables)
    else:
        ctx = AnswerContext(host, request.id, params.meta, envelope, tool=reader.definition.name, principal=principal)
        value = await _answered(reader.fn, (), variables, ctx, reader.context_param)
    mime = reader.definition.mime_type
    from minimcp.server.resources import to_contents  # loaded with the first resource registered

    return ReadResourceResult(contents=to_contents(uri, mime if isinstance(mime, str) else None, value))


async def subscribe(subscriptions: set[str], limit: int, request: Request) -> dict[str, Any]:
    uri = jsonrpc.decode_params(request.params, ResourceParams).uri
    if len(subscriptions) >= limit and uri not in subscriptions:
        raise McpError(errors.SERVER_BUSY, "too many resource subscriptions on this session")
    subscriptions.add(uri)
    return EMPTY


async def unsubscribe(subscriptions: set[str], request: Request) -> dict[str, Any]:
    subscriptions.discard(jsonrpc.decode_params(request.params, ResourceParams).uri)
    return EMPTY


# --- prompts -------------------------------------------------------------------------------------


async def list_prompts(
    registry: Registry, page_size: int, request: Request, allowed: frozenset[str] | None = None
) -> ListPromptsResult:
    params = jsonrpc.decode_params(request.params, PaginatedParams)
    items = [p.definition for p in registry.prompts.values() if allowed is None or p.scopes <= allowed]
    found, cursor = page(items, params.cursor, page_size)
    return ListPromptsResult(prompts=found, next_cursor=cursor)


def prompt_and_arguments(registry: Registry, params: GetPromptParams) -> tuple[RegisteredPrompt, dict[str, str]]:
    """The prompt ``params`` name and its arguments, checked against what it declares."""
    prompt = registry.prompts.get(params.name)
    if prompt is None:
        raise McpError(errors.INVALID_PARAMS, f"Unknown prompt: {params.name}")
    arguments = params.arguments if not isinstance(params.arguments, UnsetType) else {}
    missing = sorted(prompt.required - arguments.keys())
    if missing:
        raise McpError(errors.INVALID_PARAMS, f"prompt {params.name!r} needs argument(s): {', '.join(missing)}")
    unknown = sorted(arguments.keys() - prompt.names)
    if unknown:
        raise McpError(errors.INVALID_PARAMS, f"prompt {params.name!r} has no argument(s): {', '.join(unknown)}")
    return prompt, arguments


async def get_prompt(host: CallHost, registry: Registry, request: Request) -> GetPromptResult:
    params = jsonrpc.decode_params(request.params, GetPromptParams)
    prompt, arguments = prompt_and_arguments(registry, params)
    ctx = Context(host, request.id, params.meta, None, None, params.name) if prompt.context_param else None
    return await prompt_result(prompt, arguments, ctx)


async def prompt_result(prompt: RegisteredPrompt, arguments: dict[str, str], ctx: Context | None) -> GetPromptResult:
    """Run the prompt's function (with its context, if it takes one) and shape its result."""
    kwargs: dict[str, Any] = dict(arguments)
    if prompt.context_param is not None:
        kwargs[prompt.context_param] = ctx
    try:
        value = await prompt.fn(**kwargs)
    except ElicitationUnsupported as exc:
        if ctx is not None and ctx.modern and exc.required is not None:
            raise missing_capability(exc, exc.required) from None
        raise McpError(errors.INVALID_PARAMS, str(exc)) from None
    finally:
        if ctx is not None:
            ctx.finished = True
    description = prompt.definition.description
    from minimcp.server.prompts import to_prompt_result  # loaded with the first prompt registered

    return to_prompt_result(value, description if isinstance(description, str) else None)


# --- completion ----------------------------------------------------------------------------------


async def complete(host: CallHost, registry: Registry, request: Request, envelope: Envelope | None = None,
                   principal: Principal | None = None) -> CompleteResult:
    """``completion/complete``; ``envelope``, ``principal``: as :func:`read_resource`'s."""
    params = jsonrpc.decode_params(request.params, CompleteParams)
    handler = registry.completion
    values: list[str] = []
    if handler is not None:
        context = params.context.get("arguments", {}) if isinstance(params.context, dict) else {}
        args = (params.ref, params.argument.name, params.argument.value, dict(context))
        if registry.completion_context is None:
            values = list(await handler(*args))
        else:
            ctx = AnswerContext(host, request.id, params.meta, envelope, principal=principal)
            values = list(await _answered(handler, args, {}, ctx, registry.completion_context))
    return CompleteResult(
        completion=Completion(
            values=values[:MAX_COMPLETION_VALUES],
            total=len(values),
            has_more=len(values) > MAX_COMPLETION_VALUES,
        )
    )


class Lister(Protocol):
    """A list handler: (registry, page size, request, the caller's scopes) -> result. ``allowed``: leave out what
    needs a scope outside it (``None``: leave nothing out)."""

    def __call__(
        self, registry: Registry, page_size: int, request: Request, allowed: frozenset[str] | None = None, /
    ) -> Awaitable[Any]: ...


#: The methods that page through what the registry holds (see :class:`Lister`).
#: Their answers on 2026-07-28 may be cached by the client.
LISTS: dict[str, Lister] = {
    "tools/list": list_tools,
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
    "prompts/list": list_prompts,
}
