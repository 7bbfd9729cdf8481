"""Revision 2026-07-28 on the server: the names this revision always had, kept working (re-exports).

A call that spans rounds is a :class:`~minimcp.server.mrtr.run.Run`, parked between rounds in a
:class:`~minimcp.server.mrtr.run.Parking`; how one round is served is
:mod:`minimcp.server.mrtr.rounds`; the pure wire of the revision (envelope, meta keys, codes,
result shape, questions and answers) is :mod:`minimcp.wire.mrtr`. Runs and the wire are
re-exported here, so the names this module always had (``modern.Run``, ``modern.complete``,
...) keep working.
"""

from __future__ import annotations

import logging

from minimcp.server.mrtr.run import PARK_OWNER as PARK_OWNER
from minimcp.server.mrtr.run import Parking as Parking
from minimcp.server.mrtr.run import Run as Run

# Re-exported so that every ``modern.X`` keeps working: the pure wire (mrtr.py) and the runs (runs.py).
from minimcp.wire.mrtr import HEADER_MISMATCH as HEADER_MISMATCH
from minimcp.wire.mrtr import META_CAPABILITIES as META_CAPABILITIES
from minimcp.wire.mrtr import META_CLIENT_INFO as META_CLIENT_INFO
from minimcp.wire.mrtr import META_LOG_LEVEL as META_LOG_LEVEL
from minimcp.wire.mrtr import META_SERVER_INFO as META_SERVER_INFO
from minimcp.wire.mrtr import META_VERSION as META_VERSION
from minimcp.wire.mrtr import MISSING_CAPABILITY as MISSING_CAPABILITY
from minimcp.wire.mrtr import UNSUPPORTED_VERSION as UNSUPPORTED_VERSION
from minimcp.wire.mrtr import Envelope as Envelope
from minimcp.wire.mrtr import Question as Question
from minimcp.wire.mrtr import asked as asked
from minimcp.wire.mrtr import clean_answer as clean_answer
from minimcp.wire.mrtr import complete as complete
from minimcp.wire.mrtr import has_envelope as has_envelope
from minimcp.wire.mrtr import read_envelope as read_envelope
from minimcp.wire.mrtr import required_capability as required_capability
from minimcp.wire.mrtr import take_answer as take_answer

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
]

logger = logging.getLogger("minimcp.modern")
