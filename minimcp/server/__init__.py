"""Layer 5: the server role: tools, prompts and resources, and the calls that ask the person questions.

:class:`~minimcp.server.server.Server` registers what it offers and serves connections;
:mod:`~minimcp.server.connection` runs one connection's handshake and routing,
:mod:`~minimcp.server.handlers` answers each method, and :mod:`~minimcp.server.context` is the
``ctx`` a tool receives (``ctx.elicit`` asks a nested question).

``mrtr/`` serves revision 2026-07-28 (calls that span several requests). It loads only when a
2026-07-28 request arrives and may be skipped on a first reading.
"""
