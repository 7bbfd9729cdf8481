"""Run a booking test twice: with parked 2026-07-28 calls, and with every retry replayed (issue 18).

``@pytest.mark.usefixtures("booking_retries")`` on a test that builds the example through
``booking.build()`` makes it run once as usual and once with ``Server(replay_every_retry=True)``:
no call is ever parked, so each retry replays the tool from its sealed state -- what happens
when the retry reaches another worker. A tool that is unsafe to replay fails there.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import booking


@pytest.fixture(params=[False, True], ids=["parked", "replay-every-retry"])
def booking_retries(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    replay: bool = request.param
    build = booking.build

    def build_in_mode(**options: Any) -> booking.BookingApp:
        app = build(**options)
        app.server.replay_every_retry = replay
        return app

    monkeypatch.setattr(booking, "build", build_in_mode)
    return replay
