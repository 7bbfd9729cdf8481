"""What a peer may be sent, decided from its declared capabilities (sans-I/O).

One place answers "may this client be asked X?" for both eras: on the
handshake era the capabilities come from ``initialize``; on the modern era
from each request's ``_meta``.
"""

from __future__ import annotations

from minimcp.wire.types import ClientCapabilities, UnsetType
from minimcp.wire.versions import Feature, supports

__all__ = ["can_elicit_form", "can_elicit_url", "can_list_roots", "can_sample"]


def can_elicit_form(version: str | None, caps: ClientCapabilities) -> bool:
    """Form-mode questions: ``elicitation`` declared (``{}`` means form only) on 2025-06-18+."""
    elicitation = caps.elicitation
    if version is None or not supports(version, Feature.ELICITATION) or isinstance(elicitation, UnsetType):
        return False
    # `elicitation: {}` (and every 2025-06-18 client) means form only.
    return not elicitation or "form" in elicitation or not supports(version, Feature.ELICITATION_URL)


def can_elicit_url(version: str | None, caps: ClientCapabilities) -> bool:
    """URL-mode questions: ``elicitation.url`` declared, on 2025-11-25 and later."""
    elicitation = caps.elicitation
    if version is None or not supports(version, Feature.ELICITATION_URL) or isinstance(elicitation, UnsetType):
        return False
    return "url" in elicitation


def can_sample(caps: ClientCapabilities) -> bool:
    return not isinstance(caps.sampling, UnsetType)


def can_list_roots(caps: ClientCapabilities) -> bool:
    return not isinstance(caps.roots, UnsetType)
