"""Progress notifications while a tool waits on a person: one timer task per connection, nothing per question.

A host whose request clock keeps running on ``tools/call`` while the person answers (the
TypeScript SDK's 60-second default) cancels the call unless progress arrives; with
``resetTimeoutOnProgress`` each ``notifications/progress`` restarts that clock. So while
a tool waits on a form, a URL step or a sampling request, and its call carried a
``progressToken``, the connection sends one every ``limits.waiting_progress_interval``
seconds, saying what it waits for, and stops the moment the answer arrives.

Cost: a call without a progress token pays nothing (no entry, no task, no frame). A
waiting question with one costs one small entry in a :class:`~minimcp.core.deadlines.Deadlines`
(one lane: every entry has the same interval, so adding is an append and the earliest
entry is the lane's head) and one coroutine frame that ends the entry when the answer
arrives (``Context._kept_alive``); no task. The connection runs one timer task while any
entry exists, and it ends when the last one does. With 100,000 waiting questions the
timer sends 100,000 notifications per interval (15 s by default), spread over it the way
the questions were asked.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio

from minimcp.core.deadlines import Deadlines
from minimcp.wire.errors import ConnectionClosed

if TYPE_CHECKING:
    from minimcp.core.session import Session
    from minimcp.server.context import Context

__all__ = ["Wait", "Waits"]


class Wait:
    """One question a person is answering, for a call that asked for progress."""

    __slots__ = ("ctx", "deadline", "laned", "what")

    def __init__(self, ctx: Context, what: str) -> None:
        #: ``None`` once the answer arrived (the timer may hold the entry at that moment).
        self.ctx: Context | None = ctx
        self.what = what
        self.deadline = math.inf
        self.laned = False


class Waits:
    """The waiting questions of one connection, and the one timer that keeps their calls alive."""

    __slots__ = ("_deadlines", "_running", "interval", "session")

    def __init__(self, session: Session, interval: float) -> None:
        self.session = session
        self.interval = interval
        self._deadlines: Deadlines[Wait] = Deadlines(max_lanes=1)
        self._running = False

    def __len__(self) -> int:
        """Entries held (finished ones included until the timer drops them)."""
        return len(self._deadlines)

    @property
    def running(self) -> bool:
        """Whether the timer task is running."""
        return self._running

    def begin(self, ctx: Context, what: str) -> Wait | None:
        """A question of ``ctx``'s call (which carries a progress token) waits on a person from now."""
        session = self.session
        wait = Wait(ctx, what)
        if not self._running:
            try:
                session.spawn(self._timer)
            except ConnectionClosed:
                return None  # the session is ending: nothing to keep alive
            self._running = True
        self._deadlines.add(wait, session.now(), self.interval)
        return wait

    def end(self, wait: Wait) -> None:
        """The answer arrived (or the question ended otherwise): no more progress for it."""
        wait.ctx = None
        self._deadlines.forget(wait)

    async def _timer(self) -> None:
        deadlines, session = self._deadlines, self.session
        try:
            while True:
                earliest = deadlines.earliest()
                if earliest == math.inf:
                    return  # nothing waits; the next question starts the timer again
                delay = earliest - session.now()
                if delay > 0:
                    await anyio.sleep(delay)
                    continue
                for wait in deadlines.due(session.now()):
                    ctx = wait.ctx
                    if ctx is None or ctx.finished:
                        continue
                    try:
                        await ctx.keep_alive(wait.what, self.interval)
                    except ConnectionClosed:
                        return
                    if wait.ctx is not None:  # not answered while we were sending
                        deadlines.add(wait, session.now(), self.interval)
        finally:
            self._running = False
