"""Tools: from an async function's signature to a registered tool, and back to a result.

The input schema comes from the parameters' type hints (via msgspec, so
``Annotated`` constraints and defaults are honoured); arguments are decoded
straight from the raw JSON of the request into a Struct built from the same
hints, so validation and schema can never disagree. A validation failure
becomes a tool error result that names the argument (the model can correct
itself); it never becomes a protocol error.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from minimcp.wire.errors import FormDefinitionError, MinimcpError
from minimcp.wire.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
)

__all__ = [
    "RegisteredTool",
    "ToolError",
    "argument_error",
    "build_tool",
    "check_tool_forms",
    "context_parameter",
    "error_result",
    "to_result",
    "tool_result",
    "unchecked_failure",
]

_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


class ToolError(MinimcpError):
    """Raise from a tool to end the call with a tool error result (``isError: true``).

    The message is shown to the model, so make it say what to do differently.
    """


def tool_result(
    text: str, structured: Mapping[str, Any] | msgspec.Struct | None = None, *, is_error: bool = False
) -> CallToolResult:
    """A tool result with one text block and, optionally, structured content."""
    sc: dict[str, Any] | None = None
    if structured is not None:
        sc = msgspec.to_builtins(structured)
    return CallToolResult(content=[TextContent(text=text)], structured_content=sc, is_error=is_error)




@dataclasses.dataclass(slots=True)
class RegisteredTool:
    fn: Callable[..., Awaitable[Any]]
    definition: Tool
    args_type: type[msgspec.Struct] | None
    context_param: str | None
    structured: bool
    #: Parameters without a type annotation: their arguments reach the tool unchecked.
    unchecked: tuple[str, ...] = ()
    #: The scopes a bearer token must grant to call it (``@server.tool(scopes=...)``; empty: none).
    scopes: frozenset[str] = frozenset()
    _decoder: msgspec.json.Decoder[Any] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.args_type is not None:
            self._decoder = msgspec.json.Decoder(self.args_type)

    def arguments(self, raw: bytes | None) -> dict[str, Any]:
        """The keyword arguments of one call from its raw ``arguments`` JSON (Context not included).

        Raises:
            msgspec.DecodeError: a wrong or missing argument, or bytes that are not valid UTF-8.
        """
        if self._decoder is None:
            return {}
        return _asdict(self._decoder.decode(raw or b"{}"))  # its fields are the parameters


_asdict = msgspec.structs.asdict  # (bound once: a tool's arguments are read per call)
_MISSING_FIELD = re.compile(r"Object missing required field `([^`]+)`")
_UNKNOWN_FIELD = re.compile(r"Object contains unknown field `([^`]+)`")
_AT_PATH = re.compile(r"^(.*) - at `\$\.?([^`]*)`$")


def argument_error(tool: str, exc: msgspec.DecodeError) -> str:
    """Turn msgspec's message into one that names the argument."""
    text = str(exc)
    m = _AT_PATH.match(text)
    where = ""
    if m:
        text, where = m.group(1), m.group(2)
    if mm := _MISSING_FIELD.search(text):
        name = f"{where}.{mm.group(1)}" if where else mm.group(1)
        return f"Invalid arguments for tool {tool!r}: missing required argument {name!r}"
    if mm := _UNKNOWN_FIELD.search(text):
        name = f"{where}.{mm.group(1)}" if where else mm.group(1)
        return f"Invalid arguments for tool {tool!r}: unknown argument {name!r}"
    if where:
        return f"Invalid arguments for tool {tool!r}: argument {where!r}: {text[:1].lower()}{text[1:]}"
    return f"Invalid arguments for tool {tool!r}: {text}"


def inline_schema(tp: Any) -> dict[str, Any]:
    """JSON schema of ``tp`` with the top level inlined (MCP wants ``type: object`` at the root)."""
    (root,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    ref = root.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        root = dict(components.pop(name))
    root.pop("title", None)
    if components:
        root["$defs"] = components
    return root


def _is_structured_type(tp: Any) -> bool:
    if tp is None or tp is inspect.Signature.empty:
        return False
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _is_structured_type(typing.get_args(tp)[0])
    if isinstance(tp, type):
        if issubclass(tp, (CallToolResult, *_CONTENT_TYPES)):
            return False
        return (
            issubclass(tp, msgspec.Struct)
            or dataclasses.is_dataclass(tp)
            or typing.is_typeddict(tp)
        )
    return False


def context_parameter(
    fn: Callable[..., Any], context_type: type, hints: Mapping[str, Any] | None = None
) -> str | None:
    """The parameter of ``fn`` annotated ``context_type`` (or a subclass): where its context goes; ``None``: none.

    Used by everything that may declare one (tools, prompts, resource readers, the completion handler).
    ``hints``: ``fn``'s resolved type hints, when the caller has them (else resolved here, unless no
    parameter is annotated). Two such parameters are refused (``TypeError``).
    """
    params = inspect.signature(fn).parameters
    if hints is None:
        if all(p.annotation is inspect.Parameter.empty for p in params.values()):
            return None
        hints = typing.get_type_hints(fn)
    found = [
        name for name in params if isinstance(hint := hints.get(name), type) and issubclass(hint, context_type)
    ]
    if len(found) > 1:
        raise TypeError(f"{fn.__name__!r} declares more than one {context_type.__name__} parameter: {_names(found)}")
    return found[0] if found else None


def build_tool(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: ToolAnnotations | None,
    input_schema: dict[str, Any] | None,
    output_schema: dict[str, Any] | None,
    structured: bool | None,
    context_type: type | None = None,
) -> RegisteredTool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__name__!r} must be an async function")
    tool_name = name or fn.__name__
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    context_param = context_parameter(fn, context_type, hints) if context_type is not None else None
    fields: list[tuple[str, Any, Any]] = []
    unchecked: list[str] = []
    for pname, param in sig.parameters.items():
        ann = hints.get(pname, Any)
        if pname == context_param:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args / **kwargs parameters are not supported")
        if pname not in hints:
            unchecked.append(pname)
        if param.default is inspect.Parameter.empty:
            fields.append((pname, ann, msgspec.NODEFAULT))
        else:
            fields.append((pname, ann, param.default))
    args_type: type[msgspec.Struct] | None = None
    if fields:
        args_type = msgspec.defstruct(
            f"{tool_name}_arguments", fields, kw_only=True, forbid_unknown_fields=True
        )
    if input_schema is None:
        if args_type is not None:
            input_schema = inline_schema(args_type)
        else:
            input_schema = {"type": "object", "additionalProperties": False}
    ret = hints.get("return", inspect.Signature.empty)
    is_structured = _is_structured_type(ret) if structured is None else structured
    if output_schema is None and is_structured and _is_structured_type(ret):
        output_schema = inline_schema(ret)
    doc = description if description is not None else inspect.getdoc(fn)
    definition = Tool(
        name=tool_name,
        input_schema=input_schema,
        title=title,
        description=doc or None,
        output_schema=output_schema,
        annotations=annotations,
    )
    if unchecked:
        _warn_unchecked(fn, tool_name, unchecked)
    return RegisteredTool(
        fn, definition, args_type, context_param, is_structured, tuple(unchecked)
    )


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _warn_unchecked(fn: Callable[..., Any], tool: str, names: list[str]) -> None:
    """Warn, at the tool's own ``def`` line, that some parameters take any JSON value unchecked."""
    plural = "s" if len(names) > 1 else ""
    message = (
        f"tool {tool!r}: parameter{plural} {_names(names)} {'have' if plural else 'has'} no type annotation, "
        f"so {'they accept' if plural else 'it accepts'} any JSON value unchecked (input schema: any); annotate "
        f"{'them' if plural else 'it'} (e.g. `{names[0]}: str`), or with `typing.Any` to accept anything on purpose"
    )
    code = getattr(fn, "__code__", None)
    if code is None:  # pragma: no cover - an async callable object
        warnings.warn(message, UserWarning, stacklevel=4)
        return
    warnings.warn_explicit(
        message, UserWarning, code.co_filename, code.co_firstlineno, module=getattr(fn, "__module__", None),
        registry=getattr(fn, "__globals__", {}).setdefault("__warningregistry__", {}),
    )


def check_tool_forms(tool: str, items: Iterable[Any]) -> None:
    """Compile each form a tool names (``@app.tool(forms=...)``): a broken one fails registration.

    An item is a form (a type or a raw schema dict), or an object with ``form`` and
    ``allow_sensitive`` (an :class:`~minimcp.server.context.Elicit`).
    """
    if not items:
        return
    from minimcp.forms import check_form  # the forms machinery loads with the first tool that names forms

    for item in items:
        if isinstance(item, (type, Mapping)) or not hasattr(item, "allow_sensitive"):
            form, allowed = item, ()
        else:
            form, allowed = item.form, item.allow_sensitive
        try:
            check_form(form, allow_sensitive=allowed)
        except FormDefinitionError as exc:
            label = getattr(form, "__qualname__", None) or "schema"
            raise type(exc)(exc.field, f"tool {tool!r}, form {label}: {exc}") from None


def unchecked_failure(tool: RegisteredTool, name: str) -> str:
    """The tool error text for a tool that raised while some of its arguments were not type-checked."""
    plural = len(tool.unchecked) > 1
    return (
        f"tool {name!r} failed; its argument{'s' if plural else ''} {_names(tool.unchecked)} "
        f"{'are' if plural else 'is'} not type-checked (the tool declares no type for "
        f"{'them' if plural else 'it'}), so a value of the wrong type may be the cause: check "
        f"{'them' if plural else 'it'} against the tool's description"
    )


def to_result(tool: RegisteredTool, value: Any) -> CallToolResult:
    if type(value) is str:  # (the usual value first: a text)
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, CallToolResult):
        return value
    if value is None:
        return CallToolResult(content=[])
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, _CONTENT_TYPES):
        return CallToolResult(content=[value])
    if isinstance(value, list) and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return CallToolResult(content=list(value))
    data = msgspec.to_builtins(value)
    text = msgspec.json.encode(data).decode()
    if isinstance(data, dict) and tool.structured:
        return CallToolResult(content=[TextContent(text=text)], structured_content=data)
    return CallToolResult(content=[TextContent(text=text)])



def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)
