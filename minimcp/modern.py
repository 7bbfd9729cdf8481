"""Revision 2026-07-28 on the server: where calls wait between rounds (:class:`Parking`).

A call that spans rounds is a :class:`~minimcp.runs.Run`; how one round is served is
:mod:`minimcp.rounds`; the pure wire of the revision (envelope, meta keys, codes,
result shape, questions and answers) is :mod:`minimcp.mrtr`. Runs and the wire are
re-exported here, so the names this module always had (``modern.Run``, ``modern.complete``,
...) keep working.
"""

from __future__ import annotations

import contextvars
import logging
from collections import OrderedDict

from minimcp import errors
from minimcp.errors import McpError

# Re-exported so that every ``modern.X`` keeps working: the pure wire (mrtr.py) and the runs (runs.py).
from minimcp.mrtr import HEADER_MISMATCH as HEADER_MISMATCH
from minimcp.mrtr import META_CAPABILITIES as META_CAPABILITIES
from minimcp.mrtr import META_CLIENT_INFO as META_CLIENT_INFO
from minimcp.mrtr import META_LOG_LEVEL as META_LOG_LEVEL
from minimcp.mrtr import META_SERVER_INFO as META_SERVER_INFO
from minimcp.mrtr import META_VERSION as META_VERSION
from minimcp.mrtr import MISSING_CAPABILITY as MISSING_CAPABILITY
from minimcp.mrtr import UNSUPPORTED_VERSION as UNSUPPORTED_VERSION
from minimcp.mrtr import Envelope as Envelope
from minimcp.mrtr import Question as Question
from minimcp.mrtr import asked as asked
from minimcp.mrtr import clean_answer as clean_answer
from minimcp.mrtr import complete as complete
from minimcp.mrtr import has_envelope as has_envelope
from minimcp.mrtr import read_envelope as read_envelope
from minimcp.mrtr import required_capability as required_capability
from minimcp.mrtr import take_answer as take_answer
from minimcp.runs import Run as Run
from minimcp.used_states import use_state as use_state

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


#: Whom the request being served comes from, and how many calls that client may have parked
#: (set by the HTTP app around each request; ``None``: not counted per client).
PARK_OWNER: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("PARK_OWNER", default=None)


class Parking:
    """Suspended runs by handle, bounded: the oldest are dropped (their retries replay).

    Runs parked under a :data:`PARK_OWNER` also count against that owner's own
    bound: one more is refused with ``-32003`` (and its run cancelled).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._owner_of: dict[str, str] = {}  # handle -> owner, for runs parked under an owner
        self._owned: dict[str, set[str]] = {}  # owner -> handles

    def __len__(self) -> int:
        return len(self._runs)

    def park(self, run: Run) -> None:
        """Keep ``run`` until its retry takes it.

        Raises:
            McpError: ``-32003``: the client of the request being served has its bound of parked calls.
        """
        owner = PARK_OWNER.get()
        if owner is not None:
            key, bound = owner
            mine = self._owned.get(key, set())
            if len(mine) >= bound:
                run.stop()
                raise McpError(
                    errors.SERVER_BUSY,
                    f"too many calls waiting for answers from this client (limit {bound}); "
                    "answer or abandon one first",
                )
            mine.add(run.handle)
            self._owned[key] = mine
            self._owner_of[run.handle] = key
        self._runs[run.handle] = run
        while len(self._runs) > self.limit:
            handle, oldest = self._runs.popitem(last=False)
            self._disown(handle)
            logger.info("dropping the oldest parked call (limit %d); its retry will replay", self.limit)
            oldest.stop()

    def take(self, handle: str) -> Run | None:
        run = self._runs.pop(handle, None)
        if run is not None:
            self._disown(handle)
        return run

    def discard(self, run: Run) -> None:
        if self._runs.get(run.handle) is run:
            del self._runs[run.handle]
            self._disown(run.handle)

    def _disown(self, handle: str) -> None:
        key = self._owner_of.pop(handle, None)
        if key is not None:
            mine = self._owned[key]
            mine.discard(handle)
            if not mine:
                del self._owned[key]
