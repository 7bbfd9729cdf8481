"""Authorization on the server: minimcp as an OAuth 2.1 resource server (opt-in, HTTP and WebSocket).

Layer 3.5, between the engine (:mod:`minimcp.core`) and the transports that check a request's
bearer token before anything of MCP runs. A first reading may skip it: nothing below it uses it, a
server without :class:`~minimcp.auth.config.Authorization` never loads it, and stdio never uses it
(the spec takes credentials for stdio from the environment).

Read in this order: :mod:`~minimcp.auth.principal` (who a token names, why one is refused, the
verifier protocol), :mod:`~minimcp.auth.config` (the one object a server is given: verifier,
resource URL, authorization servers, scopes; it checks the audience whatever the verifier),
:mod:`~minimcp.auth.request` (a 2026-07-28 request with its person: no session holds it), then
the verifiers (``jwt``: signed access tokens against the issuer's keys; ``introspection``: RFC 7662
for opaque tokens). Needs the ``auth`` extra (``pip install minimcp[auth]``) for the verifiers only.
"""
