"""What a client's answer handlers are given and return: the elicitation requests, the handler types, a browser.

:class:`minimcp.Client` answers the server's questions (elicitation, form and URL; sampling; roots) by
calling the handlers it was given (see its ``answers`` methods). This module is the vocabulary those
handlers share: :class:`ElicitationRequest` and :class:`UrlElicitationRequest` (what a handler is
given), the handler types, and :func:`open_in_browser` for a URL the person consented to open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from minimcp import forms
from minimcp.wire.elicitation import Accepted, Cancelled, Declined
from minimcp.wire.types import (
    CreateMessageParams,
    CreateMessageResult,
)
from minimcp.wire.urls import UrlInfo

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "SamplingHandler",
    "UrlElicitationRequest",
    "UrlHandler",
    "open_in_browser",
]



@dataclasses.dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A question from the server, as the elicitation handler sees it.

    Attributes:
        message: The question text.
        form: The requested schema, parsed (form mode).
        server_name: Who is asking (show it to the person).
        protocol_version: The negotiated revision.
    """

    message: str
    form: forms.Form[dict[str, Any]]
    server_name: str
    protocol_version: str


ElicitationHandler = Callable[[ElicitationRequest], Awaitable["Accepted[dict[str, Any]] | Declined | Cancelled"]]
SamplingHandler = Callable[[CreateMessageParams], Awaitable[CreateMessageResult]]


@dataclasses.dataclass(frozen=True, slots=True)
class UrlElicitationRequest:
    """A request to open a URL (URL mode), as the URL handler sees it.

    Show the person :attr:`message`, the full :attr:`url`, and the host apart
    from it (:attr:`info`), warn when ``info.warning`` is set, and open the page
    only with their consent (:func:`open_in_browser`). Nothing is fetched by
    the library.

    Attributes:
        message: Why the server wants the page opened.
        url: The full URL, exactly as sent.
        info: Host (IDNA-decoded), punycode / mixed-script flags, scheme.
        elicitation_id: The server's id for this step.
        server_name: Who is asking.
    """

    message: str
    url: str
    info: UrlInfo
    elicitation_id: str
    server_name: str


UrlHandler = Callable[[UrlElicitationRequest], Awaitable["Accepted[Any] | Declined | Cancelled"]]


async def open_in_browser(url: str) -> bool:
    """Open ``url`` in the system browser (only call this after the person consented)."""
    import webbrowser

    return await anyio.to_thread.run_sync(webbrowser.open, url)
