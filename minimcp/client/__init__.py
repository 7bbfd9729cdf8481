"""Layer 5: the client role: connect, call tools, and answer the questions a server asks mid-call.

:class:`~minimcp.client.client.Client` is the API, one class (its 2026-07-28 part, the last section of
``client.py``, and :mod:`~minimcp.client.headers` may be skipped on a first reading);
:mod:`~minimcp.client.answers` holds what its answer handlers are given (elicitation, sampling, roots).
"""
