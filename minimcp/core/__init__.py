"""Layer 3: the engine both roles share: one JSON-RPC connection, its pending table, its clock.

A :class:`~minimcp.core.session.Session` reads messages from a
:class:`~minimcp.core.transport.Transport`, routes responses to the requests it sent (the pending
table of :mod:`~minimcp.core.pending`), starts a handler task per request it receives
(:mod:`~minimcp.core.dispatch`) and times out what waits too long (:mod:`~minimcp.core.deadlines`).
It knows no MCP role: the server and the client are built on it.

This is the core to read first: ``transport``, ``pending``, ``session`` (with its part
``_requests``), ``dispatch``. ``_takeover`` serves revision 2026-07-28 only and may be skipped on a
first reading; ``_backend`` holds every asyncio- and trio-specific line.
"""
