"""Layer 4: how encoded messages travel: stdio, Streamable HTTP, WebSocket, in memory.

Each transport implements :class:`minimcp.core.transport.Transport` (whole messages in and out).
``memory`` is the one to read first (two queues); ``stdio``, ``websocket`` and ``http/`` deal with
processes, sockets and HTTP, and may be skipped on a first reading, as may the HTTP servers that run
the Streamable HTTP app (``asgi_server``: uvicorn, hypercorn, or minimcp's own ``h1_server`` on h11).
"""
