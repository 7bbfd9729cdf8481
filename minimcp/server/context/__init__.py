"""The tool context: the one object a tool gets to learn who is calling and to ask them things mid-call.

Part of the first reading (``ctx.elicit`` is how a tool asks): this package, then
:mod:`~minimcp.server.context.asking` and :mod:`~minimcp.server.context.call`; ``keepalive`` may be skipped.

A :class:`Context` is what a tool (or a prompt) gets as its ``Context``-typed
parameter. It is era-neutral: ``ctx.elicit`` sends a nested ``elicitation/create``
on the handshake era, and becomes an ``input_required`` round on revision
2026-07-28 (see :mod:`minimcp.server.mrtr.rounds`) -- the tool's code is the same.

It is built in two layers, one module each, the upper using only the public
members of the lower:

* :class:`~minimcp.server.context.call.Call` (:mod:`minimcp.server.context.call`): the call's identity, what the
  client declared, and what it tells the client unasked -- progress, log messages,
  and keep-alive progress while a person answers;
* :class:`~minimcp.server.context.asking.AskingCall` (:mod:`minimcp.server.context.asking`): asking -- form and URL
  elicitation, sampling, roots, and several questions at once (:meth:`Context.gather`
  with :class:`Elicit`, :class:`Sample`, :class:`ListRoots`).

A context reaches the connection serving its call only through
:class:`~minimcp.server.context.ports.CallHost` (and the 2026-07-28 run it executes in through
:class:`~minimcp.server.context.ports.RunHandle`), so none of these modules imports
:mod:`minimcp.server.server` or :mod:`minimcp.server.connection`.
"""

from __future__ import annotations

from minimcp.server.context.asking import AskingCall

__all__ = ["Context"]


class Context(AskingCall):
    """What a running tool gets: who is calling, and a way to ask them things.

    One context exists per tool call; do not keep it after the call returns
    (progress reported after that is dropped). Its members come from
    :class:`~minimcp.server.context.call.Call` (identity, progress, logging) and
    :class:`~minimcp.server.context.asking.AskingCall` (elicitation, sampling, roots).
    """

    __slots__ = ()
