"""What a server offers: its tools, resources, resource templates, prompts and completion handler.

A :class:`Registry` is data and lookups only (no event loop, no connection):
:class:`~minimcp.server.server.Server` fills it through its decorators, and the
request handlers (:mod:`minimcp.server.handlers`) read it, taking it as an argument.
:func:`page` cuts the lists into the pages the ``*/list`` methods return.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from minimcp.server.tools import RegisteredTool, check_tool_forms
from minimcp.wire import errors
from minimcp.wire.errors import McpError
from minimcp.wire.types import UNSET, Resource, ResourceTemplate, ServerCapabilities, Tool, UnsetType

if TYPE_CHECKING:  # both load with the first resource or prompt registered (a tools-only server never needs them)
    from minimcp.server.prompts import RegisteredPrompt
    from minimcp.server.resources import Reader, RegisteredResource, RegisteredTemplate

__all__ = ["NO_SCOPES", "CompletionHandler", "Registry", "described", "page"]

T = TypeVar("T")

#: ``completion/complete`` handler: (ref, argument name, typed value, other arguments) -> suggestions. It may
#: declare a Context parameter besides (:attr:`Registry.completion_context`), passed by keyword.
CompletionHandler = Callable[[dict[str, Any], str, str, dict[str, str]], Awaitable[list[str]]]

#: The longest cursor we read: our cursors are offsets, and ``int()`` of a longer digit string
#: can raise past Python's digit limit (4,300), which would be a -32603 instead of a -32602.
_MAX_CURSOR_DIGITS = 18

#: What an operation registered without ``scopes=`` needs.
NO_SCOPES: frozenset[str] = frozenset()


class _Named(msgspec.Struct):
    """The one field of ``tools/call`` and ``prompts/get`` params that says what needs which scopes."""

    name: str


class _Addressed(msgspec.Struct):
    """The one field of ``resources/read`` params that says what needs which scopes."""

    uri: str


_named = msgspec.json.Decoder(_Named)
_addressed = msgspec.json.Decoder(_Addressed)


def described(
    fn: Callable[..., Any], name: str | None, title: str | None, description: str | None, mime_type: str | None
) -> dict[str, Any]:
    """The descriptive fields of a resource or template (the docstring is the default description)."""
    doc = description if description is not None else inspect.getdoc(fn)
    return {
        "name": name or fn.__name__,
        "title": title if title is not None else UNSET,
        "description": doc if doc else UNSET,
        "mime_type": mime_type if mime_type is not None else UNSET,
    }


def page(items: list[T], cursor: str | UnsetType, size: int) -> tuple[list[T], str | UnsetType]:
    """One page of ``items`` after an opaque cursor (our cursors are offsets as text)."""
    start = 0
    if not isinstance(cursor, UnsetType):
        ok = len(cursor) <= _MAX_CURSOR_DIGITS and cursor.isascii() and cursor.isdigit()
        start = int(cursor) if ok else -1
        if not 0 <= start <= len(items):
            raise McpError(errors.INVALID_PARAMS, f"invalid cursor {cursor!r}")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else UNSET)


class Registry:
    """The tools, resources, templates, prompts and completion handler of one server."""

    def __init__(self) -> None:
        self.tools: dict[str, RegisteredTool] = {}
        #: The tool definitions in registration order (what ``tools/list`` pages through).
        self.tool_list: list[Tool] = []
        #: Tools registered with ``replayable=False`` (2026-07-28 retries never run them again).
        self.not_replayable: set[str] = set()
        self.resources: dict[str, RegisteredResource] = {}
        self.templates: list[RegisteredTemplate] = []
        self.prompts: dict[str, RegisteredPrompt] = {}
        self.completion: Callable[..., Awaitable[list[str]]] | None = None
        #: The completion handler's parameter that receives the request's context (``None``: it takes none).
        self.completion_context: str | None = None
        #: Whether anything was registered with ``scopes=`` (else :meth:`scopes_needed` reads no params).
        self.scoped = False

    def _scopes(self, scopes: Collection[str]) -> frozenset[str]:
        if isinstance(scopes, str):
            raise TypeError(f"scopes must be a collection of scope names, not the string {scopes!r}")
        found = frozenset(scopes)
        if found:
            self.scoped = True
        return found

    # tools

    def add_tool(
        self,
        tool: RegisteredTool,
        *,
        replayable: bool = True,
        forms: Iterable[Any] = (),
        scopes: Collection[str] = (),
    ) -> None:
        """Register ``tool`` (after checking that the ``forms`` it declares can be sent); ``scopes``: what a
        bearer token must grant to call it."""
        name = tool.definition.name
        if name in self.tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        check_tool_forms(name, forms)
        tool.scopes = self._scopes(scopes)
        self.tools[name] = tool
        self.tool_list.append(tool.definition)
        if not replayable:
            self.not_replayable.add(name)

    def remove_tool(self, name: str) -> None:
        tool = self.tools.pop(name)
        self.tool_list.remove(tool.definition)

    # resources and templates

    def add_reader(
        self,
        uri: str,
        fn: Reader,
        fields: dict[str, Any],
        *,
        template: bool,
        scopes: Collection[str] = (),
        context_param: str | None = None,
    ) -> None:
        """Register a resource reader: for the fixed ``uri``, or (``template``) for a URI template; ``scopes``:
        what a bearer token must grant to read it; ``context_param``: the reader's parameter that receives the
        read's context (``None``: it takes none)."""
        from minimcp.server.resources import RegisteredResource, RegisteredTemplate

        needed = self._scopes(scopes)
        if template:
            definition = ResourceTemplate(uri_template=uri, **fields)
            self.templates.append(RegisteredTemplate.create(definition, fn, needed, context_param))
            return
        if uri in self.resources:
            raise ValueError(f"a resource {uri!r} is already registered")
        self.resources[uri] = RegisteredResource(Resource(uri=uri, **fields), fn, needed, context_param)

    def reader_of(self, uri: str) -> tuple[RegisteredResource | RegisteredTemplate, dict[str, str]] | None:
        """What reads ``uri`` (its fixed resource first, else the first template that matches) and the keyword
        arguments of its reader (the template's variables); ``None`` when nothing serves it."""
        fixed = self.resources.get(uri)
        if fixed is not None:
            return fixed, {}
        for template in self.templates:
            variables = template.template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def reader_for(self, uri: str) -> tuple[Awaitable[Any], str | None] | None:
        """The read of ``uri`` (:meth:`reader_of`'s reader called, without a context) and its MIME type; ``None``
        when nothing serves it."""
        found = self.reader_of(uri)
        if found is None:
            return None
        reader, variables = found
        mime = reader.definition.mime_type
        return reader.fn(**variables), mime if isinstance(mime, str) else None

    # prompts

    def add_prompt(self, prompt: RegisteredPrompt, *, scopes: Collection[str] = ()) -> None:
        name = prompt.definition.name
        if name in self.prompts:
            raise ValueError(f"a prompt named {name!r} is already registered")
        prompt.scopes = self._scopes(scopes)
        self.prompts[name] = prompt

    # scopes

    def scopes_for_uri(self, uri: str) -> frozenset[str]:
        """The scopes a read of ``uri`` needs: its fixed resource's, else those of the first template that
        matches it (the reader :meth:`reader_of` picks)."""
        found = self.reader_of(uri)
        return found[0].scopes if found is not None else NO_SCOPES

    def scopes_needed(self, method: str, params: msgspec.Raw | bytes) -> frozenset[str]:
        """The scopes a request of ``method`` with these raw ``params`` needs (``tools/call``, ``prompts/get``,
        ``resources/read``; ``scopes=`` of what it names). Params that do not decode need none: the handler
        refuses them before anything runs."""
        if not self.scoped or not params:
            return NO_SCOPES
        try:
            if method == "tools/call":
                tool = self.tools.get(_named.decode(params).name)
                return tool.scopes if tool is not None else NO_SCOPES
            if method == "prompts/get":
                prompt = self.prompts.get(_named.decode(params).name)
                return prompt.scopes if prompt is not None else NO_SCOPES
            if method == "resources/read":
                return self.scopes_for_uri(_addressed.decode(params).uri)
        except msgspec.DecodeError:
            pass
        return NO_SCOPES

    # what the server declares

    def capabilities(self) -> ServerCapabilities:
        """The server capabilities that follow from what is registered (logging always)."""
        has_resources = bool(self.resources or self.templates)
        return ServerCapabilities(
            tools={"listChanged": True} if self.tools else UNSET,
            resources={"subscribe": True, "listChanged": True} if has_resources else UNSET,
            prompts={"listChanged": True} if self.prompts else UNSET,
            logging={},
            completions={} if self.completion is not None else UNSET,
        )
