"""Revision 2026-07-28 on the server: a tool call that spans requests (multi round-trip requests).

A call that asks a question ends its request with ``input_required`` and a sealed
``requestState``; the client's retry carries the answers and the state, and the call goes on.
:mod:`~minimcp.server.mrtr.run` is one such call, parked between rounds; :mod:`~minimcp.server.mrtr.rounds`
serves one round; :mod:`~minimcp.server.mrtr.state` seals and opens the state;
:mod:`~minimcp.server.mrtr.takeover` is the read loop's fast way into a round.

Loaded on a connection's first 2026-07-28 request, never by a handshake-era server. Skip it on a
first reading.
"""
