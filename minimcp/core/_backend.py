"""The session layer's only contact with asyncio and trio: one-shot reply cells, handler tasks, which backend runs.

Everything else in the session layer is anyio code. This module exists because the plain anyio
versions of two pieces cost more than the design budget on the hottest path (measured with
``benchmarks/run.py --only stdio-pending,stdio-roundtrip``; the figures are in the comments below):

* **A one-shot cell per pending request.** On asyncio the cell *is* an ``asyncio.Future``
  subclass carrying the entry's fields in its slots, and the requester awaits it directly (no
  coroutine beside it). On trio the waiting task is parked with ``wait_task_rescheduled``
  (a ``trio.Event`` adds a parking lot per request). An ``anyio.Event`` plus a value slot
  costs an Event object and a coroutine frame per pending request: several hundred bytes on
  top of about 2.4 KB.
* **A task per inbound request.** On asyncio a bare ``loop.create_task`` (an anyio task in a
  task group costs about three times the memory); on trio a task in a nursery of trio's own
  under a trio cancel scope (an anyio task and scope cost about twice as much).

Both backends have the same interface: :func:`new_cell`, :class:`Handlers` (a context manager
whose lifetime the :meth:`Session.run <minimcp.core.session.Session.run>` owns: every handler task
it started has ended when it exits), :func:`backend_name`, and for the transports
:func:`start_owned` and :func:`threadsafe_caller`. No module-global task set exists: every
task is held by what started it.

No other module of the session layer touches the event loop (``tests/docs/test_backend_isolation.py``;
the transports' I/O paths have their own, :mod:`minimcp.transports._backend_io`): a session and the
parked runs of revision 2026-07-28 get the running loop as a token (:func:`running_backend`,
:func:`loop_of`) and hand it back to the loop helpers here (:func:`call_at`, :func:`loop_clock`,
:func:`loop_closed`); their one-shot waiters are :func:`one_shot`'s.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import math
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, ClassVar, Literal, Protocol

import anyio
import msgspec

from minimcp.wire.errors import McpError
from minimcp.wire.jsonrpc import RequestId

__all__ = [
    "AbandonSink",
    "AsyncioCell",
    "BareTaskCancelled",
    "Cell",
    "Handlers",
    "TrioCell",
    "running_loop",
    "running_backend",
    "call_at",
    "loop_clock",
    "loop_closed",
    "loop_of",
    "one_shot",
    "cell_here",
    "drop_outcome",
    "start_owned",
    "threadsafe_caller",
    "trio_checkpoint_if_cancelled",
    "trio_deadline_in",
    "backend_name",
    "new_cell",
    "relayed_wait",
    "cell_factory",
    "cell_settled",
]

_NO_RESULT = msgspec.Raw()


#: The running asyncio loop; ``None`` on trio. asyncio's own C function: no Python frame and no
#: exception per call (asked once per 2026-07-28 round and per new session).
running_loop: Callable[[], asyncio.AbstractEventLoop | None] = asyncio._get_running_loop


def _trio() -> Any:
    import trio  # only ever reached when running on trio

    return trio


def backend_name() -> str:
    """``"asyncio"`` or ``"trio"``: the backend running the calling task."""
    return "asyncio" if running_loop() is not None else "trio"


# --- one-shot cells ---------------------------------------------------------------------------


class AbandonSink(Protocol):
    """Who hears of a cell given up on by its awaiter (the session; see :meth:`AsyncioCell.cancel`)."""

    def cell_abandoned(self, cell: Cell) -> None:
        """The awaiter of ``cell`` was cancelled before the cell settled."""
        ...


_ENTRY = ("deadline", "id", "laned", "method", "progress", "related", "sending", "started", "timeout")


class _Entry:
    """What every pending entry records (the slots themselves are the subclasses')."""

    __slots__ = ()

    id: RequestId
    method: str
    related: RequestId | None
    progress: int | str | None
    #: The request itself is still waiting for room in the output.
    sending: bool
    deadline: float
    laned: bool
    timeout: float
    started: float


class AsyncioCell(_Entry, asyncio.Future[msgspec.Raw]):
    """asyncio: a request waiting for its response is the very future its requester awaits.

    It resolves to the raw result or fails with the request's error.
    """

    __slots__ = (*_ENTRY, "sink")

    #: Set when nobody but the future's awaiter can notice it being given up on (may be unset).
    sink: AbandonSink | None
    #: The cell is the future its requester awaits (``await cell``; a TrioCell: ``await cell.wait()``).
    is_future: ClassVar[Literal[True]] = True
    #: A response's raw result into a cell still pending (never done: every ending takes it out of the
    #: table first): the future's own C ``set_result``, no Python frame per response.
    resolve_raw = asyncio.Future.set_result

    def settle(self, raw: msgspec.Raw | None, error: McpError | None) -> None:
        """Resolve the cell (once; later calls do nothing)."""
        if self.done():
            return
        if error is not None:
            self.set_exception(error)
        else:
            self.set_result(raw if raw is not None else _NO_RESULT)

    def cancel(self, msg: Any = None) -> bool:
        # Why this override exists: when the session hands the cell itself to the requester
        # (Session.start_request's fast path), the requester's task awaits this future and
        # nothing else. A cancelled task cancels the future it waits on, and that call is the
        # only place where the request can learn it was given up on. The alternatives cost
        # memory per pending request: a done callback holding the session (128 bytes more per
        # future, tracemalloc, CPython 3.11: about 5 % of a pending elicitation's 2.5 KB), or a
        # coroutine wrapping the future (a frame, more still). The sink (the session) then forgets
        # the entry and tells the peer; this module knows nothing of what it does. The session
        # sets the sink on every cell it has handed to an awaiter, so a cell still in its pending
        # table is never done, and a response settles it with the future's own set_result.
        sink = getattr(self, "sink", None)  # (unset in a cell from cell_factory: nobody to tell)
        if sink is not None and not self.done():
            self.sink = None
            sink.cell_abandoned(self)
        return super().cancel(msg)

    async def wait(self) -> msgspec.Raw:
        """The raw result (or the request's error raised)."""
        return await self


class TrioCell(_Entry):
    """trio: a request waiting for its response, and the task that waits for it, parked
    with ``wait_task_rescheduled`` (a ``trio.Event`` would add a parking lot per request)."""

    __slots__ = (*_ENTRY, "done", "error", "task", "value")

    #: See :attr:`AsyncioCell.is_future`: a TrioCell is awaited through :meth:`wait`.
    is_future: ClassVar[Literal[False]] = False

    def __init__(self) -> None:
        self.done = False
        self.value: msgspec.Raw | None = None
        self.error: McpError | None = None
        self.task: Any = None

    def settle(self, raw: msgspec.Raw | None, error: McpError | None) -> None:
        """Resolve the cell (once; later calls do nothing) and wake its waiter."""
        if self.done:
            return
        self.done = True
        self.value = raw
        self.error = error
        task, self.task = self.task, None
        if task is not None:
            _trio().lowlevel.reschedule(task)

    def resolve_raw(self, raw: msgspec.Raw) -> None:
        """A response's raw result (see :attr:`AsyncioCell.resolve_raw`)."""
        self.settle(raw, None)

    async def wait(self) -> msgspec.Raw:
        """The raw result (or the request's error raised)."""
        if not self.done:
            await self.parked()
        return self.outcome()

    def parked(self) -> Coroutine[Any, Any, Any]:
        """The wait for :meth:`settle`, for the calling task to await at once (it is marked as the waiter now),
        then :meth:`outcome`: trio's own
        coroutine, so a requester that awaits it holds no frame of the cell's (``wait``'s, ~220 bytes per
        pending call) while it waits."""
        lowlevel = _trio().lowlevel
        self.task = lowlevel.current_task()
        # (a bound method, not a closure made per wait: a function and its cells, ~160 bytes per pending call)
        return lowlevel.wait_task_rescheduled(self._abort)  # type: ignore[no-any-return]

    def outcome(self) -> msgspec.Raw:
        """The raw result of a settled cell (or the request's error raised)."""
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value

    def _abort(self, _: Any) -> Any:
        """The wait's abort function (trio): cancelled, the waiter is no longer woken."""
        self.task = None
        return _trio().lowlevel.Abort.SUCCEEDED


Cell = AsyncioCell | TrioCell


def cell_settled(cell: Cell) -> bool:
    """Whether ``cell`` was settled (an asyncio cell cancelled with its waiter is not)."""
    if isinstance(cell, asyncio.Future):
        return cell.done() and not cell.cancelled()
    return cell.done


def new_cell(loop: asyncio.AbstractEventLoop | None) -> Cell:
    """A fresh cell for the backend of ``loop`` (``None``: trio). Its entry fields are unset."""
    if loop is not None:
        cell = AsyncioCell(loop=loop)
        cell.sink = None
        return cell
    return TrioCell()


def cell_here() -> Cell:
    """A fresh cell for the running backend (see :func:`new_cell`)."""
    return new_cell(running_loop())


def drop_outcome(cell: Cell) -> None:
    """A cell that ended while nobody awaits it any more: its error is not reported (asyncio would log it
    as never retrieved)."""
    if type(cell) is AsyncioCell and cell.done() and not cell.cancelled():
        cell.exception()


def cell_factory(loop: asyncio.AbstractEventLoop | None) -> Callable[[], Cell]:
    """What makes fresh cells for the backend of ``loop`` (``None``: trio), chosen once by its caller.

    On asyncio it is the class :class:`AsyncioCell` itself: the future's own C ``__init__``
    takes the running loop (the loop of the caller, which runs in it), so a new pending request
    enters no code of this module, and a session holds no object per factory. The cells' entry
    fields are unset, ``sink`` included (read as ``None``).
    """
    return AsyncioCell if loop is not None else TrioCell


def running_backend() -> tuple[asyncio.AbstractEventLoop | None, Callable[[], Cell], Callable[[], float] | None]:
    """For a session starting to run: the running loop (``None`` on trio), a token for the loop helpers
    below; what makes its cells (:func:`cell_factory`); and the backend's own clock (the one
    ``anyio.current_time`` reads, without its backend lookup on every request sent)."""
    loop = running_loop()
    return loop, cell_factory(loop), (loop.time if loop is not None else _trio().current_time)


# --- the loop's clock, timers and one-shot waiters (asyncio), for a session and parked runs -----


def call_at(loop: asyncio.AbstractEventLoop, at: float, fire: Callable[[], object]) -> asyncio.TimerHandle:
    """asyncio: ``fire()`` at ``at`` on ``loop``'s clock, a callback of the loop (no task, no cancel
    scope); the handle's ``when()`` and ``cancel()`` are what its holder uses."""
    return loop.call_at(at, fire)


def loop_clock(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """asyncio: ``loop``'s clock (what :func:`call_at` times)."""
    return loop.time


def loop_closed(loop: asyncio.AbstractEventLoop) -> bool:
    """asyncio: whether ``loop`` was closed (what ran on it has ended)."""
    return loop.is_closed()


def one_shot() -> Any:
    """A one-shot waiter for the running backend: on asyncio a plain future of the running loop, awaited
    as is (no coroutine around it; settled with ``set_result``); on trio a :class:`TrioCell`
    (``await cell.wait()``; settled with ``settle``)."""
    loop = running_loop()
    return loop.create_future() if loop is not None else TrioCell()


#: ``loop_of(waiter)``, asyncio: the loop of :func:`one_shot`'s ``waiter`` (the loop it runs on); the future's
#: own ``get_loop``, called in C (no frame of ours: once per parked round).
loop_of: Callable[[asyncio.Future[Any]], asyncio.AbstractEventLoop] = asyncio.Future.get_loop


#: What cancels a bare asyncio handler task. Its body returns quietly on it (a request
#: cancelled by the peer gets no response, per the spec). On trio the handler's own cancel
#: scope catches its cancellation; this exception never arrives there.
BareTaskCancelled = asyncio.CancelledError

#: How many tasks of ``start_detached`` are held before the first sweep of the ended ones (asyncio).
_FIRST_SWEEP = 64
_task_done = asyncio.Task.done


# --- handler tasks ----------------------------------------------------------------------------


class _Cancellable(Protocol):
    def cancel(self) -> Any: ...


class Handlers:
    """The tasks answering inbound requests, owned by whoever enters this context manager.

    :meth:`start` runs a coroutine in a task of its own and returns a handle whose ``cancel()``
    cancels it. On exit, ``before_exit`` is called (it cancels what should not finish), then
    every task started here is awaited: none outlives the block.

    Args:
        live: The caller's table of running handles (the session's in-flight requests): each
            task takes its own entry out when it ends; the table is emptied on exit.
        before_exit: Called once, first thing on exit (the session's close).
    """

    __slots__ = (
        "_before_exit", "_context", "_live", "_loop", "_nursery", "_nursery_cm", "_runs", "_sweep_at", "start",
    )

    #: Run a coroutine in a task of its own; returns its handle (``.cancel()``). On asyncio the
    #: loop's own ``create_task`` (a bare task: about a third of an anyio task's memory), held
    #: here so that starting a handler enters no Python code; owned all the same: ``__aexit__``
    #: cancels (through ``before_exit``) and awaits every one still in ``live``. On trio
    #: :meth:`_start_in_nursery`.
    start: Callable[[Coroutine[Any, Any, None]], _Cancellable]

    def __init__(self, live: dict[RequestId, Any], before_exit: Callable[[], None]) -> None:
        self._live = live
        self._before_exit = before_exit
        self._loop = loop = running_loop()
        self.start = loop.create_task if loop is not None else self._start_in_nursery
        self._nursery: Any = None
        self._nursery_cm: Any = None
        # asyncio: the tasks of start_detached. Those that ended are taken out when the set outgrows
        # _sweep_at (then twice what is left, plus _FIRST_SWEEP): no done callback per task, which the
        # loop would schedule and run as one more step per call. It holds at most about twice the tasks
        # still running, plus _FIRST_SWEEP; a sweep looks at no more than two tasks per task started since.
        self._runs: set[asyncio.Task[None]] = set()
        self._sweep_at = _FIRST_SWEEP
        # The owner's context (made where the owner runs): a detached task starts from a copy of it,
        # not of the request that started it, so a parked call keeps none of that request's variables.
        self._context = contextvars.copy_context()

    async def __aenter__(self) -> Handlers:
        if self._loop is None:
            # trio: a nursery of trio's own, each handler under a trio cancel scope.
            self._nursery_cm = _trio().open_nursery()
            self._nursery = await self._nursery_cm.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._before_exit()
        try:
            if self._nursery_cm is not None:
                self._nursery.cancel_scope.cancel()
                nursery_cm, self._nursery_cm, self._nursery = self._nursery_cm, None, None
                return await nursery_cm.__aexit__(exc_type, exc, tb)  # type: ignore[no-any-return]
            # asyncio: the bare tasks were cancelled by before_exit (the detached ones here);
            # wait for each to end (shielded: they are ours, whatever cancels the owner).
            runs = list(self._runs)
            for task in runs:
                task.cancel()
            tasks = [t for t in self._live.values() if isinstance(t, asyncio.Task)] + runs
            if tasks:
                await _shielded_wait(tasks)
            return None
        finally:
            # A task cancelled before its first step never ran the code that takes its entry out.
            self._live.clear()
            self._runs.clear()

    def _start_in_nursery(self, body: Coroutine[Any, Any, None]) -> _Cancellable:
        """trio's :attr:`start`: ``body`` in the nursery, under a trio cancel scope of its own (the handle)."""
        scope = _trio().CancelScope()
        self._nursery.start_soon(_under, scope, body)
        return scope  # type: ignore[no-any-return]

    def start_detached(self, body: Coroutine[Any, Any, None]) -> _Cancellable:
        """Run ``body`` in a task of its own that answers no request (a 2026-07-28 call between rounds).

        Owned like the handler tasks: cancelled and awaited on exit. Returns its handle
        (``.cancel()``). A bare task again (on trio under a trio cancel scope): a task that may
        wait minutes for a person costs here what a handler task costs, not an anyio task's
        cancel scope and finished-event besides.
        """
        loop = self._loop
        if loop is not None:
            task = loop.create_task(body, context=self._context.copy())
            runs = self._runs
            runs.add(task)
            if len(runs) > self._sweep_at:
                self._sweep(runs)
            return task
        scope = _trio().CancelScope()
        self._context.run(self._nursery.start_soon, _under, scope, body)  # (trio copies the context entered)
        return scope  # type: ignore[no-any-return]

    def _sweep(self, runs: set[asyncio.Task[None]]) -> None:
        """Let go of the detached tasks that ended; the next sweep comes when the set has doubled."""
        runs.difference_update([*filter(_task_done, runs)])
        self._sweep_at = 2 * len(runs) + _FIRST_SWEEP

    @staticmethod
    def never_ran(handle: Any) -> bool:
        """Whether the task of ``handle`` has not taken its first step (asyncio only; trio: ``False``).

        A task cancelled before its first step never runs its body, so nothing in it can
        clean up after it.
        """
        if not isinstance(handle, asyncio.Task):
            return False
        coro = handle.get_coro()
        return inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED



# --- tasks outside the session ---------------------------------------------------------------


def start_owned(fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> object:
    """Run ``fn(*args)`` in a task of its own, for an owner that holds no task group.

    Returns the task's handle: the owner keeps it (asyncio holds only weak references to
    tasks), ends the task (a cancel scope ``fn`` runs under, say) and waits for it before it
    closes. Used by a :class:`~minimcp.transports.stdio.StdioTransport` built by hand, without
    its opener's task group. On trio the task is a system task (no nursery at hand).
    """
    loop = running_loop()
    if loop is not None:
        return loop.create_task(fn(*args))
    trio = _trio()
    trio.lowlevel.spawn_system_task(fn, *args, name="minimcp owned task")
    return None


def threadsafe_caller(fn: Callable[[], object]) -> Callable[[], object]:
    """A function another thread can call to run ``fn`` in the current event loop."""
    loop = running_loop()
    if loop is not None:
        return functools.partial(loop.call_soon_threadsafe, fn)
    return functools.partial(_trio().lowlevel.current_trio_token().run_sync_soon, fn)


async def trio_checkpoint_if_cancelled() -> None:
    """trio only: raise if the calling task's scope is already cancelled (a handler cancelled
    before it began)."""
    await _trio().lowlevel.checkpoint_if_cancelled()


async def _under(scope: Any, body: Coroutine[Any, Any, None]) -> None:
    """On trio: ``body`` under the request's own cancel scope (``.cancel()``-able)."""
    with scope:
        await body


async def _shielded_wait(tasks: list[asyncio.Task[Any]]) -> None:
    with anyio.CancelScope(shield=True):
        await asyncio.wait(tasks)


def trio_deadline_in(scope: Any, delay: float | None) -> None:
    """trio: cancel the trio cancel scope ``scope`` ``delay`` seconds from now (``None``: never)."""
    scope.deadline = math.inf if delay is None else _trio().current_time() + delay


# --- asyncio only: a coroutine driven by hand, its wait relayed (an HTTP response's wait in receive()) ------
#
# ``transports/http/_response.py`` (``Reader.respond``) waits in the ASGI ``receive()`` with no task of its
# own, and must be able to end that wait without cancelling anything (a cancellation that strikes as
# ``receive()`` returns would be left behind in the ASGI server's task). On trio a native cancel scope
# around ``await receive()`` does it: trio's cancellation is level-triggered, so a wake that comes as
# ``receive()`` returns is simply unused. That is the reference path: the plain structured wait (anyio's
# ``with CancelScope(): await receive()``, without anyio's wrapper per response: bytes per pending call).
#
# On asyncio the response drives ``receive()``'s steps itself (``send(None)`` / ``throw``) inside its own
# coroutine, and relies on the protocol between a task and the futures it awaits, as
# ``asyncio.Task.__step`` implements it:
#
# * a coroutine that awaits a future yields that future up to its task, with the future's
#   ``_asyncio_future_blocking`` set to True (``Future.__await__`` does this); the task then adds a
#   done-callback to the future and resumes the coroutine when it is done, or throws the task's
#   cancellation into it; a bare ``yield`` (None) asks for one turn of the loop;
# * so the response does not yield the future ``receive()`` waits on: it yields a future of its own
#   (:func:`relayed_wait`), completed by a done-callback of the other one, or by ``end_wait`` to end
#   the wait early. Woken early, it closes ``receive()``'s coroutine where it waits (no cancellation).
#
# Nothing else outside this module touches a private attribute of asyncio.


def relayed_wait(
    loop: asyncio.AbstractEventLoop, inner: asyncio.Future[Any], relay: Callable[[asyncio.Future[Any]], object]
) -> asyncio.Future[None]:
    """asyncio: the future for the running task to wait on instead of ``inner`` (which a coroutine driven by
    hand waits on), as ``Future.__await__`` would yield it: ``relay``, now a done-callback of ``inner``, is
    to complete it, as ``end_wait`` (:mod:`minimcp.transports._backend_io`) does to end the wait early. The
    caller removes ``relay`` from ``inner`` when the wait ends."""
    wake: asyncio.Future[None] = loop.create_future()
    wake._asyncio_future_blocking = True  # (the task protocol: a future yielded up is waited on)
    inner.add_done_callback(relay, context=_RELAY_CONTEXT)
    return wake


#: The context ``relay`` runs in: one for all (``add_done_callback`` would copy the current one for each wait,
#: 64 bytes per pending HTTP call). A relay reads no context variable, and only completes a future: it never
#: runs inside another callback of this context (a future's callbacks are scheduled, not called in place).
_RELAY_CONTEXT = contextvars.Context()
