"""minimcp: a small, fast Model Context Protocol implementation on anyio and msgspec.

The public API is re-exported here; modules hold the details. The HTTP and WebSocket
entry points (and a few names only some programs need) are loaded on first use, so the
``http`` and ``ws`` extras stay optional and ``import minimcp`` stays quick.

The code is in packages by layer; ``docs/internals.md`` says in which order to read them on a first
reading, and what to skip.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from minimcp.core.config import Limits as Limits
from minimcp.server.context import Context as Context
from minimcp.server.context import Elicit as Elicit
from minimcp.server.context import ListRoots as ListRoots
from minimcp.server.context import Sample as Sample
from minimcp.server.server import Server as Server
from minimcp.server.tools import ToolError as ToolError
from minimcp.server.tools import tool_result as tool_result
from minimcp.wire.elicitation import Accepted as Accepted
from minimcp.wire.elicitation import Cancelled as Cancelled
from minimcp.wire.elicitation import Declined as Declined
from minimcp.wire.elicitation import ElicitationUnsupported as ElicitationUnsupported
from minimcp.wire.elicitation import QuestionFailed as QuestionFailed
from minimcp.wire.elicitation import UrlElicitation as UrlElicitation
from minimcp.wire.elicitation import UrlElicitationRequired as UrlElicitationRequired
from minimcp.wire.errors import ConnectionClosed as ConnectionClosed
from minimcp.wire.errors import McpError as McpError
from minimcp.wire.errors import MinimcpError as MinimcpError
from minimcp.wire.errors import RequestTimeout as RequestTimeout
from minimcp.wire.errors import TooManyPending as TooManyPending
from minimcp.wire.errors import UnsupportedVersion as UnsupportedVersion

if TYPE_CHECKING:
    from minimcp.client.answers import ElicitationRequest as ElicitationRequest
    from minimcp.client.answers import UrlElicitationRequest as UrlElicitationRequest
    from minimcp.client.answers import open_in_browser as open_in_browser
    from minimcp.client.client import Client as Client
    from minimcp.client.client import connect_stdio as connect_stdio
    from minimcp.core.trace import WireTrace as WireTrace
    from minimcp.forms import AllowSensitive as AllowSensitive
    from minimcp.forms import FormDefinitionError as FormDefinitionError
    from minimcp.forms import FormValidationError as FormValidationError
    from minimcp.forms import Titled as Titled
    from minimcp.forms import check_form as check_form
    from minimcp.forms import compile_form as compile_form
    from minimcp.hosting.http import connect_http as connect_http
    from minimcp.hosting.http import serve_http as serve_http
    from minimcp.hosting.websocket import connect_websocket as connect_websocket
    from minimcp.hosting.websocket import serve_websocket as serve_websocket
    from minimcp.server.mrtr.state import state_keys_from_env as state_keys_from_env
    from minimcp.transports.memory import memory_pair as memory_pair
    from minimcp.wire.urls import InvalidElicitationUrl as InvalidElicitationUrl

__version__ = "0.1.0"

# Public names loaded on first access (module ``__getattr__``): name -> module.
_LAZY: dict[str, str] = {
    "Client": "minimcp.client.client",  # the client side: a server never loads it
    "ElicitationRequest": "minimcp.client.answers",
    "UrlElicitationRequest": "minimcp.client.answers",
    "connect_stdio": "minimcp.client.client",
    "open_in_browser": "minimcp.client.answers",
    "memory_pair": "minimcp.transports.memory",
    "AllowSensitive": "minimcp.forms",
    "Titled": "minimcp.forms",
    "FormDefinitionError": "minimcp.forms",  # the forms machinery loads with the first form (compiled, checked, asked)
    "FormValidationError": "minimcp.forms",
    "check_form": "minimcp.forms",
    "compile_form": "minimcp.forms",
    "WireTrace": "minimcp.core.trace",
    "connect_http": "minimcp.hosting.http",  # the HTTP and WebSocket stacks load with their first use
    "serve_http": "minimcp.hosting.http",
    "connect_websocket": "minimcp.hosting.websocket",
    "serve_websocket": "minimcp.hosting.websocket",
    # the sealed state of 2026-07-28: a handshake-era server never loads it
    "state_keys_from_env": "minimcp.server.mrtr.state",
    "InvalidElicitationUrl": "minimcp.wire.urls",  # the URL rules load with the first URL step
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'minimcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Accepted",
    "AllowSensitive",
    "Cancelled",
    "Client",
    "ConnectionClosed",
    "Context",
    "Declined",
    "Elicit",
    "ElicitationRequest",
    "ElicitationUnsupported",
    "FormDefinitionError",
    "FormValidationError",
    "InvalidElicitationUrl",
    "Limits",
    "ListRoots",
    "McpError",
    "MinimcpError",
    "RequestTimeout",
    "Sample",
    "Server",
    "ToolError",
    "Titled",
    "TooManyPending",
    "UnsupportedVersion",
    "UrlElicitation",
    "UrlElicitationRequest",
    "UrlElicitationRequired",
    "QuestionFailed",
    "WireTrace",
    "__version__",
    "check_form",
    "compile_form",
    "connect_http",
    "connect_stdio",
    "connect_websocket",
    "memory_pair",
    "open_in_browser",
    "serve_http",
    "serve_websocket",
    "state_keys_from_env",
    "tool_result",
]
