"""Prompts: templates a client can list and fill in (``prompts/list``, ``prompts/get``).

A prompt is an async function whose ``str`` parameters are the prompt's
arguments (required unless they have a default). It returns a ``str`` (one
user message), a :class:`~minimcp.wire.types.PromptMessage`, a list of messages or
content blocks, or a whole :class:`~minimcp.wire.types.GetPromptResult`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from minimcp.server.tools import context_parameter
from minimcp.wire.types import (
    AudioContent,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceLink,
    TextContent,
)

__all__ = ["RegisteredPrompt", "build_prompt", "to_prompt_result"]

_CONTENT = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


@dataclasses.dataclass(slots=True)
class RegisteredPrompt:
    definition: Prompt
    fn: Callable[..., Awaitable[Any]]
    required: frozenset[str]
    names: frozenset[str]
    #: The parameter that receives the call's Context (it can ask the person, like a tool).
    context_param: str | None = None
    #: The scopes a bearer token must grant to get it (``@server.prompt(scopes=...)``; empty: none).
    scopes: frozenset[str] = frozenset()


def build_prompt(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    context_type: type | None = None,
) -> RegisteredPrompt:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"prompt {fn.__name__!r} must be an async function")
    arguments: list[PromptArgument] = []
    required: set[str] = set()
    context_param = context_parameter(fn, context_type) if context_type is not None else None
    for pname, param in inspect.signature(fn).parameters.items():
        if pname == context_param:
            continue
        is_required = param.default is inspect.Parameter.empty
        if is_required:
            required.add(pname)
        arguments.append(PromptArgument(name=pname, required=is_required))
    doc = description if description is not None else inspect.getdoc(fn)
    definition = Prompt(
        name=name or fn.__name__,
        title=title,
        description=doc or None,
        arguments=arguments or None,
    )
    return RegisteredPrompt(
        definition, fn, frozenset(required), frozenset(a.name for a in arguments), context_param
    )


def to_prompt_result(value: Any, description: str | None) -> GetPromptResult:
    """Turn what a prompt function returned into a ``prompts/get`` result."""
    if isinstance(value, GetPromptResult):
        return value
    items = value if isinstance(value, list) else [value]
    messages: list[PromptMessage] = []
    for item in items:
        if isinstance(item, PromptMessage):
            messages.append(item)
        elif isinstance(item, str):
            messages.append(PromptMessage(role="user", content=TextContent(text=item)))
        elif isinstance(item, _CONTENT):
            messages.append(PromptMessage(role="user", content=item))
        else:
            raise TypeError(f"a prompt returned {type(item).__name__}; return str, content blocks or PromptMessage")
    return GetPromptResult(messages=messages, description=description or None)
