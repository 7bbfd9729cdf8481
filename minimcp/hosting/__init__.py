"""Layer 6: where a role meets a network: ``Server.run``, ``serve_http`` and ``serve_websocket``.

Each module starts a server on a transport (an ASGI server for Streamable HTTP, websockets for
WebSocket) and stops it on Ctrl-C or SIGTERM (:mod:`~minimcp.hosting.run`). Skip it on a
first reading.
"""
