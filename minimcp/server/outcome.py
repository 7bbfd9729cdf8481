"""A tool's outcome -> the call's result: its return value or exception as a ``CallToolResult`` or an ``McpError``.

:class:`ToolRun` is what the ``tools/call`` handler gives the session: the
tool's coroutine, and :meth:`ToolRun.finish`, which the session calls in the
request's own task once the coroutine is done (a :class:`~minimcp.core.session.Deferred`:
no wrapping coroutine frame for a call that may wait minutes on a person).
What the person or the client did wrong becomes a tool error result the model
can read; protocol errors stay JSON-RPC errors.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from minimcp.core.dispatch import Deferred
from minimcp.server.tools import RegisteredTool, ToolError, error_result, to_result, unchecked_failure
from minimcp.wire import errors
from minimcp.wire.elicitation import ElicitationUnsupported, QuestionFailed, UrlElicitationRequired
from minimcp.wire.errors import FormDefinitionError, FormValidationError, McpError
from minimcp.wire.types import CallToolResult

if TYPE_CHECKING:
    from minimcp.server.context import Context
    from minimcp.server.context.ports import CallHost

__all__ = ["ToolRun", "missing_capability", "ready"]

logger = logging.getLogger("minimcp.server")
T = TypeVar("T")


def missing_capability(exc: ElicitationUnsupported, required: dict[str, Any]) -> McpError:
    """The 2026-07-28 error for a question the client's declared capabilities do not allow."""
    from minimcp.wire.envelope import (
        MISSING_CAPABILITY,  # 2026-07-28 only: its wire module loads with its first request
    )

    return McpError(MISSING_CAPABILITY, str(exc), {"requiredCapabilities": required})


async def ready(value: T) -> T:
    """An awaitable of a value that is already known."""
    return value


class ToolRun(Deferred):
    """One ``tools/call``: the tool's coroutine, and how its outcome becomes the call's result."""

    __slots__ = ("ctx", "host", "modern_call", "name", "tool")

    def __init__(
        self,
        host: CallHost,
        tool: RegisteredTool,
        name: str,
        call: Awaitable[Any],
        ctx: Context | None,
        modern_call: bool,
    ) -> None:
        self.awaitable = call
        self.host = host
        self.tool = tool
        self.name = name
        self.ctx = ctx
        self.modern_call = modern_call

    def finish(self, value: Any, error: BaseException | None) -> CallToolResult:
        if self.ctx is not None:
            self.ctx.finished = True  # no progress after the call ends
        if error is None:  # a tool that built its result itself (tool_result) needs no mapping
            return value if type(value) is CallToolResult else to_result(self.tool, value)
        name, host = self.name, self.host
        try:
            raise error
        except ToolError as exc:
            return error_result(str(exc) or f"tool {name!r} failed")
        except ElicitationUnsupported as exc:
            if self.modern_call and exc.required is not None:
                raise missing_capability(exc, exc.required) from None
            return error_result(str(exc))
        except FormDefinitionError as exc:
            # The tool's own form is broken: the person cannot be asked; its author must hear of it.
            logger.error("tool %r asked a question with a form that cannot be sent: %s", name, exc)
            return error_result(str(exc))
        except FormValidationError as exc:
            return error_result(str(exc))
        except QuestionFailed as exc:
            return error_result(f"tool {name!r} could not finish: {exc.describe()}")
        except UrlElicitationRequired as exc:
            if not self.modern_call and not host.can_elicit_url():
                for item in exc.elicitations:
                    host.forget_url_elicitation(item.elicitation_id)
                return error_result(
                    f"tool {name!r} needs the person to complete a step in their browser, and this client "
                    "cannot open links (it did not declare URL-mode elicitation)"
                )
            raise
        except (errors.RequestTimeout, errors.TooManyPending) as exc:
            return error_result(f"tool {name!r} could not finish: {exc.message}")
        except McpError:
            raise
        except Exception as exc:
            from minimcp.wire.urls import InvalidElicitationUrl  # loaded by the first URL step (or this)

            if isinstance(exc, InvalidElicitationUrl):
                return error_result(str(exc))
            logger.exception("tool %r raised", name)
            if self.tool.unchecked:
                return error_result(unchecked_failure(self.tool, name))
            return error_result(f"tool {name!r} failed with an internal error")

