"""Layer 5: the client role: connect, call tools, and answer the questions a server asks mid-call.

:class:`~minimcp.client.client.Client` is the API; :mod:`~minimcp.client.answers` answers a
server's nested requests (elicitation, sampling, roots). :mod:`~minimcp.client.rounds` and
:mod:`~minimcp.client.headers` serve revision 2026-07-28 and may be skipped on a first reading.
"""
