"""minimcp.wire.capabilities: what a client may be asked, from the capabilities it declared and the revision."""

from __future__ import annotations

import pytest

from minimcp.wire.capabilities import can_elicit_form, can_elicit_url, can_list_roots, can_sample
from minimcp.wire.types import ClientCapabilities

NONE = ClientCapabilities()
EMPTY = ClientCapabilities(elicitation={})
FORM = ClientCapabilities(elicitation={"form": {}})
URL = ClientCapabilities(elicitation={"url": {}})
BOTH = ClientCapabilities(elicitation={"form": {}, "url": {}})


@pytest.mark.parametrize(
    ("version", "caps", "form", "url"),
    [
        ("2025-11-25", NONE, False, False),  # nothing declared: never asked
        ("2025-11-25", EMPTY, True, False),  # `elicitation: {}` means form only
        ("2025-11-25", FORM, True, False),
        ("2025-11-25", URL, False, True),  # url only: no forms
        ("2025-11-25", BOTH, True, True),
        ("2025-06-18", URL, True, False),  # no URL mode on 2025-06-18: its elicitation is a form
        ("2025-06-18", EMPTY, True, False),
        ("2025-03-26", BOTH, False, False),  # no elicitation at all before 2025-06-18
        ("2024-11-05", EMPTY, False, False),
        ("2026-07-28", BOTH, True, True),
        (None, BOTH, False, False),  # no revision agreed yet
    ],
)
def test_elicitation_modes(version: str | None, caps: ClientCapabilities, form: bool, url: bool) -> None:
    assert can_elicit_form(version, caps) is form
    assert can_elicit_url(version, caps) is url


def test_sampling_is_declared_by_presence() -> None:
    assert can_sample(ClientCapabilities(sampling={}))
    assert not can_sample(NONE)
    assert not can_sample(BOTH)


def test_roots_are_declared_by_presence() -> None:
    assert can_list_roots(ClientCapabilities(roots={"listChanged": True}))
    assert can_list_roots(ClientCapabilities(roots={}))
    assert not can_list_roots(ClientCapabilities(sampling={}))
