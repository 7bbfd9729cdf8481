"""Which tools a 2026-07-28 client may call over HTTP, and which headers each of its requests carries.

On revision 2026-07-28 a tool may declare ``"x-mcp-header": "Region"`` on a property of
its ``inputSchema``; an HTTP client then mirrors that argument into an
``Mcp-Param-Region`` header on every ``tools/call`` of the tool, and leaves out of
``tools/list`` a tool whose declarations break the rules (it could not be called with
the right headers). Both are decisions about tools, so the client role makes them
(:class:`ToolHeaders`, filled by :meth:`minimcp.Client.list_tools`); the transport
only asks, per request, which headers to send.

The seam is one attribute (:class:`HeaderedTransport`): a transport that mirrors
requests into HTTP headers (Streamable HTTP's client) has
``request_headers(method, params) -> headers``, called for each 2026-07-28 request
with its method and raw ``params``. On its own it mirrors only what the body says
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``); a :class:`minimcp.Client`
replaces it with :meth:`ToolHeaders.request_headers`, which adds the ``Mcp-Param-*``
headers of the tools it listed. Over stdio and the other transports (no such
attribute) the declarations are ignored, as the revision allows, and no tool is
left out.

Requests sent past the Client (``client.session.request("tools/list")``) are not
read: their tools/list results come back as the server sent them, invalid tools
included, and teach nothing; a raw ``tools/call`` carries ``Mcp-Param-*`` headers
only for tools the Client listed with :meth:`~minimcp.Client.list_tools`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from minimcp.core.transport import Transport
from minimcp.transports.trace import TracedTransport
from minimcp.wire.types import Tool

if TYPE_CHECKING:
    from minimcp.transports.http._headers import ParamHeader

__all__ = ["HeaderedTransport", "ToolHeaders", "headered"]

logger = logging.getLogger("minimcp.client")


@runtime_checkable
class HeaderedTransport(Protocol):
    """A transport that sends each 2026-07-28 request with HTTP headers mirroring it.

    ``request_headers(method, params)`` gives one request's headers (lower-case
    names); ``params`` is the request's raw JSON ``params`` (``b""`` when absent).
    """

    request_headers: Callable[[str, bytes], dict[str, str]]


def headered(transport: Transport) -> HeaderedTransport | None:
    """The transport under ``transport`` that mirrors requests into headers, if there is one.

    A :class:`~minimcp.transports.trace.TracedTransport` passes every message on
    unchanged, so the one it wraps is asked.
    """
    inner: object = transport
    while isinstance(inner, TracedTransport):
        inner = inner.inner
    return inner if isinstance(inner, HeaderedTransport) else None


class ToolHeaders:
    """The ``x-mcp-header`` declarations of the tools a client listed, and the headers they add.

    Made only for a :class:`HeaderedTransport` (the HTTP client transport, whose
    package is then loaded): it imports the sans-I/O header rules of
    :mod:`minimcp.transports.http._headers`.
    """

    __slots__ = ("_declared", "_mirror", "by_tool")

    def __init__(self) -> None:
        from minimcp.transports.http import _headers

        self._declared = _headers.param_headers
        self._mirror = _headers.request_headers
        #: tool name -> its x-mcp-header declarations, from the latest tools/list
        self.by_tool: dict[str, tuple[ParamHeader, ...]] = {}

    def usable(self, tools: list[Tool]) -> list[Tool]:
        """Learn the declarations of ``tools`` (a ``tools/list`` result); the tools minus those whose are invalid."""
        kept: list[Tool] = []
        for tool in tools:
            try:
                found = self._declared(tool.input_schema)
            except ValueError as exc:
                logger.warning("dropped tool %r from tools/list: invalid x-mcp-header (%s)", tool.name, exc)
                self.by_tool.pop(tool.name, None)
                continue
            if found:
                self.by_tool[tool.name] = found
            else:
                self.by_tool.pop(tool.name, None)
            kept.append(tool)
        return kept

    def request_headers(self, method: str, params: bytes) -> dict[str, str]:
        """One request's headers: version, method, name, and its tool's ``Mcp-Param-*`` (``tools/call``)."""
        return self._mirror(method, params, self.by_tool)
