"""minimcp.wire.versions: which revisions we speak, and what each one allows (the handshake-era table is in
test_layers)."""

from __future__ import annotations

import pytest

from minimcp.wire.versions import (
    LATEST,
    LATEST_MODERN,
    MODERN,
    SUPPORTED,
    Feature,
    is_modern,
    is_supported,
    negotiate,
    supports,
)


def test_the_modern_revision_is_known_but_not_negotiated() -> None:
    """2026-07-28 has no handshake: it is modern, never an answer to ``initialize``."""
    assert MODERN == ("2026-07-28",) and LATEST_MODERN == "2026-07-28"
    assert is_modern("2026-07-28")
    assert not is_supported("2026-07-28")
    assert negotiate("2026-07-28") == LATEST


@pytest.mark.parametrize("revision", [*SUPPORTED, "2099-01-01", "", "2026-07-28 "])
def test_only_the_modern_revisions_are_modern(revision: str) -> None:
    assert not is_modern(revision)


def test_revisions_are_listed_oldest_first_and_do_not_overlap() -> None:
    """The rules order revisions as ISO dates, so each list must be in date order."""
    assert list(SUPPORTED) == sorted(SUPPORTED)
    assert len(set(SUPPORTED)) == len(SUPPORTED)
    assert not set(SUPPORTED) & set(MODERN)
    assert max(SUPPORTED) < min(MODERN)


@pytest.mark.parametrize("feature", [f for f in Feature if f is not Feature.BATCHES])
def test_the_modern_revision_has_every_feature_but_batches(feature: Feature) -> None:
    assert supports(LATEST_MODERN, feature)


def test_batches_exist_on_2025_03_26_only() -> None:
    assert [v for v in (*SUPPORTED, *MODERN) if supports(v, Feature.BATCHES)] == ["2025-03-26"]
    assert not supports("2099-01-01", Feature.BATCHES)


def test_a_revision_outside_the_table_is_answered_by_date() -> None:
    """A later revision we do not speak still gets a consistent answer (features it postdates)."""
    assert supports("2030-01-01", Feature.ELICITATION_URL)
    assert not supports("2025-01-01", Feature.ELICITATION)
    assert supports("2025-06-19", Feature.ELICITATION)
    assert not supports("2025-06-17", Feature.ELICITATION)


def test_features_are_plain_strings() -> None:
    """Feature is a StrEnum, so it logs and compares as its value."""
    assert str(Feature.ELICITATION_URL) == "elicitation_url"
    assert Feature("elicitation_url") is Feature.ELICITATION_URL
    assert f"{Feature.SSE_PRIMING}" == "sse_priming"


#: The first revision of each feature (batches: the only one).
FIRST = {
    Feature.BATCHES: "2025-03-26",
    Feature.ELICITATION: "2025-06-18",
    Feature.ELICITATION_URL: "2025-11-25",
    Feature.ELICITATION_DEFAULTS: "2025-11-25",
    Feature.ELICITATION_ENUMS: "2025-11-25",
    Feature.ERROR_WITHOUT_ID: "2025-11-25",
    Feature.SSE_PRIMING: "2025-11-25",
}


@pytest.mark.parametrize("feature", list(Feature))
def test_a_feature_starts_on_its_revision(feature: Feature) -> None:
    first = FIRST[feature]
    assert supports(first, feature)
    assert not any(supports(v, feature) for v in SUPPORTED if v < first)
