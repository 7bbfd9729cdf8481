"""minimcp: a small, fast Model Context Protocol implementation on anyio and msgspec.

The public API is re-exported here; modules hold the details.
"""

from __future__ import annotations

from minimcp.client import Client as Client
from minimcp.client import ElicitationRequest as ElicitationRequest
from minimcp.client import UrlElicitationRequest as UrlElicitationRequest
from minimcp.client import connect_stdio as connect_stdio
from minimcp.client import open_in_browser as open_in_browser
from minimcp.config import Limits as Limits
from minimcp.context import Context as Context
from minimcp.context import Elicit as Elicit
from minimcp.context import ListRoots as ListRoots
from minimcp.context import Sample as Sample
from minimcp.elicitation import Accepted as Accepted
from minimcp.elicitation import Cancelled as Cancelled
from minimcp.elicitation import Declined as Declined
from minimcp.elicitation import ElicitationUnsupported as ElicitationUnsupported
from minimcp.elicitation import UrlElicitation as UrlElicitation
from minimcp.elicitation import UrlElicitationRequired as UrlElicitationRequired
from minimcp.errors import ConnectionClosed as ConnectionClosed
from minimcp.errors import McpError as McpError
from minimcp.errors import RequestTimeout as RequestTimeout
from minimcp.errors import TooManyPending as TooManyPending
from minimcp.errors import UnsupportedVersion as UnsupportedVersion
from minimcp.forms import FormDefinitionError as FormDefinitionError
from minimcp.forms import FormValidationError as FormValidationError
from minimcp.forms import check_form as check_form
from minimcp.forms import compile_form as compile_form
from minimcp.server import Server as Server
from minimcp.server import ToolError as ToolError
from minimcp.server import tool_result as tool_result
from minimcp.transports.memory import memory_pair as memory_pair
from minimcp.urls import InvalidElicitationUrl as InvalidElicitationUrl

__version__ = "0.1.0"

__all__ = [
    "Accepted",
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
    "RequestTimeout",
    "Sample",
    "Server",
    "ToolError",
    "TooManyPending",
    "UnsupportedVersion",
    "UrlElicitation",
    "UrlElicitationRequest",
    "UrlElicitationRequired",
    "__version__",
    "check_form",
    "compile_form",
    "connect_stdio",
    "memory_pair",
    "open_in_browser",
    "tool_result",
]
