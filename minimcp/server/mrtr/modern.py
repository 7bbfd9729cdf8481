"""Revision 2026-07-28 on the server: the names this revision always had, kept working (re-exports).

A call that spans rounds is a :class:`~minimcp.server.mrtr.run.Run`, parked between rounds in a
:class:`~minimcp.server.mrtr.parking.Parking`; how one round is served is
:mod:`minimcp.server.mrtr.rounds`; the pure wire of the revision (envelope, meta keys, codes,
result shape, questions and answers) is :mod:`minimcp.wire.envelope` and :mod:`minimcp.wire.input_required`.
Runs and the wire are
re-exported here, so the names this module always had (``modern.Run``, ``modern.complete``,
...) keep working.
"""

from __future__ import annotations

import logging

from minimcp.server.mrtr.parking import PARK_OWNER as PARK_OWNER
from minimcp.server.mrtr.parking import Parking as Parking
from minimcp.server.mrtr.run import Run as Run
from minimcp.server.mrtr.used_states import use_state as use_state

# Re-exported so that every ``modern.X`` keeps working: the pure wire (envelope.py, input_required.py) and the runs.
from minimcp.wire.envelope import HEADER_MISMATCH as HEADER_MISMATCH
from minimcp.wire.envelope import META_CAPABILITIES as META_CAPABILITIES
from minimcp.wire.envelope import META_CLIENT_INFO as META_CLIENT_INFO
from minimcp.wire.envelope import META_LOG_LEVEL as META_LOG_LEVEL
from minimcp.wire.envelope import META_SERVER_INFO as META_SERVER_INFO
from minimcp.wire.envelope import MISSING_CAPABILITY as MISSING_CAPABILITY
from minimcp.wire.envelope import UNSUPPORTED_VERSION as UNSUPPORTED_VERSION
from minimcp.wire.envelope import Envelope as Envelope
from minimcp.wire.envelope import complete as complete
from minimcp.wire.envelope import read_envelope as read_envelope
from minimcp.wire.envelope import required_capability as required_capability
from minimcp.wire.input_required import Question as Question
from minimcp.wire.input_required import asked as asked
from minimcp.wire.input_required import clean_answer as clean_answer
from minimcp.wire.input_required import take_answer as take_answer
from minimcp.wire.versions import META_VERSION as META_VERSION
from minimcp.wire.versions import has_envelope as has_envelope

__all__ = [
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "META_VERSION",
    "PARK_OWNER",
    "Envelope",
    "Parking",
    "Question",
    "Run",
    "complete",
    "has_envelope",
    "read_envelope",
    "use_state",
]

logger = logging.getLogger("minimcp.modern")
