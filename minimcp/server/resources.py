"""Resources and resource templates: what a server registers, and how a read is answered.

A resource is a fixed URI with an async reader; a template is a URI pattern
(``test://template/{id}/data``, RFC 6570 level 1 plus ``{+var}`` for values
that may contain ``/``) whose variables become the reader's arguments. A reader
returns ``str`` (text), ``bytes`` (binary, sent base64), ``ResourceContents``,
or a list of those.
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any

from minimcp.wire.types import Resource, ResourceContents, ResourceTemplate

__all__ = ["RegisteredResource", "RegisteredTemplate", "UriTemplate", "to_contents"]

_VAR = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


class UriTemplate:
    """A URI template with ``{var}`` (one path segment) and ``{+var}`` (anything) variables."""

    __slots__ = ("names", "pattern", "template")

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[str] = []
        names: list[str] = []
        pos = 0
        for m in _VAR.finditer(template):
            parts.append(re.escape(template[pos : m.start()]))
            parts.append(f"(?P<{m.group(2)}>.+)" if m.group(1) else f"(?P<{m.group(2)}>[^/?#]+)")
            names.append(m.group(2))
            pos = m.end()
        parts.append(re.escape(template[pos:]))
        if len(set(names)) != len(names):
            raise ValueError(f"URI template {template!r} repeats a variable")
        self.names = tuple(names)
        self.pattern = re.compile("".join(parts))

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` if it matches the template, else ``None``."""
        m = self.pattern.fullmatch(uri)
        return m.groupdict() if m else None


Reader = Callable[..., Awaitable[Any]]


@dataclasses.dataclass(slots=True)
class RegisteredResource:
    definition: Resource
    fn: Reader
    #: The scopes a bearer token must grant to read it (``scopes=`` of its decorator; empty: none).
    scopes: frozenset[str] = frozenset()
    #: The parameter that receives the read's Context (who is calling; it cannot ask them anything).
    context_param: str | None = None


@dataclasses.dataclass(slots=True)
class RegisteredTemplate:
    definition: ResourceTemplate
    template: UriTemplate
    fn: Reader
    #: The scopes a bearer token must grant to read a URI it matches (empty: none).
    scopes: frozenset[str] = frozenset()
    #: The parameter that receives the read's Context (not a variable of the template).
    context_param: str | None = None

    @classmethod
    def create(
        cls,
        definition: ResourceTemplate,
        fn: Reader,
        scopes: frozenset[str] = frozenset(),
        context_param: str | None = None,
    ) -> RegisteredTemplate:
        template = UriTemplate(definition.uri_template)
        params = set(inspect.signature(fn).parameters) - {context_param}  # (the context is no variable)
        missing = set(template.names) - params
        if missing:
            raise TypeError(f"resource template reader {fn.__name__!r} lacks parameters {sorted(missing)}")
        return cls(definition, template, fn, scopes, context_param)


def to_contents(uri: str, mime_type: str | None, value: Any) -> list[ResourceContents]:
    """Turn what a reader returned into ``contents``."""
    items = value if isinstance(value, list) else [value]
    out: list[ResourceContents] = []
    for item in items:
        if isinstance(item, ResourceContents):
            out.append(item)
        elif isinstance(item, str):
            out.append(ResourceContents(uri=uri, mime_type=mime_type, text=item))
        elif isinstance(item, (bytes, bytearray, memoryview)):
            blob = base64.b64encode(bytes(item)).decode("ascii")
            out.append(ResourceContents(uri=uri, mime_type=mime_type, blob=blob))
        else:
            raise TypeError(f"a resource reader returned {type(item).__name__}; return str, bytes or ResourceContents")
    return out
