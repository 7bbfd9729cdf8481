"""Streamable HTTP (revisions 2025-11-25 and 2026-07-28): a bare ASGI 3 server app, and an httpx client transport.

Layer 4, the largest transport. Skip it on a first reading: :mod:`minimcp.transports.memory` shows
what a transport is.

Needs the ``http`` extra (``pip install minimcp[http]``): httpx for the client,
uvicorn (asyncio) or h11 (minimcp's own server, on trio) to serve the app. They are imported only when used.

Server: :class:`StreamableHTTPApp`
----------------------------------
One endpoint (default ``/mcp``) takes POST, GET and DELETE.

* **POST** carries exactly one JSON-RPC message. A notification or a response
  is answered ``202 Accepted`` with an empty body. A request is answered with
  ``text/event-stream``: every message the session sends *for that request*
  (nested ``elicitation/create``, progress, logs) goes on that stream, then the
  response, which ends it. The client answers a nested question with a new
  POST of the response (``202``); the tool's result then arrives on the
  original stream.
* **Sessions.** ``initialize`` creates one (``MCP-Session-Id``, random from
  :mod:`secrets`, after ``<session_id_prefix>.`` when one is given); every later request must carry it (``400`` without,
  ``404`` when unknown or ended). Each session is one
  :meth:`minimcp.Server.serve` running in the app's task group (started by
  ASGI lifespan, by :meth:`StreamableHTTPApp.run`, or by :func:`minimcp.serve_http`).
  DELETE ends a session: its pending questions end and running tools are
  cancelled. A session with no open stream and no request for
  ``session_idle_timeout`` seconds is ended the same way, one that never went
  past ``initialize`` after ``limits.initialize_timeout``. At most
  ``max_sessions`` live at once, ``limits.max_sessions_per_client`` per client
  address: one more ends the least recently used one without pending work
  (``503`` when all have work; see :mod:`minimcp.transports._client_bounds`).
* **Streams.** Every SSE stream of a session has its own number; event ids are
  ``<stream>-<seq>``, unique in the session. On clients of 2025-11-25 and later
  a stream starts with a *priming* event (an id, empty data, and ``retry``).
  Keep-alive comments go out every ``keepalive_interval`` seconds, so a person
  may take minutes to answer. Each stream keeps a bounded replay buffer; GET
  with ``Last-Event-ID`` resumes *that* stream after that event (replaying
  only its own events). Messages related to no open request (for example
  ``notifications/elicitation/complete``, server-initiated requests) go to
  the standalone GET stream when one is open, else wait in its bounded buffer
  until one opens. Responses never go to the standalone stream.
* **A dropped connection is not a cancel** (spec 2025-11-25, "SHOULD NOT").
  When the client's SSE connection for a request drops, the request keeps
  running; its pending elicitation stays answerable by POST; its later
  messages and its response are kept in the stream's replay buffer and are
  delivered when the client resumes with GET + ``Last-Event-ID``. To stop a
  request the client sends ``notifications/cancelled``. Requests whose client
  never comes back end with the session (DELETE or idle expiry).
* **Security.** ``Host`` and ``Origin`` are checked against allow-lists
  (``403`` otherwise) to stop DNS rebinding. The default allows only
  ``localhost``, ``127.0.0.1`` and ``[::1]`` on any port, which is right for a
  server bound to loopback; a server reachable under other names must list
  them. ``MCP-Protocol-Version`` must be a supported revision (``400``);
  absent means ``2025-03-26``. Bodies over ``limits.max_message_bytes`` are
  refused with ``413`` without being buffered. There is no authentication
  here: put one in front, or keep the server on loopback.

The modern leg (revision 2026-07-28)
------------------------------------
The same endpoint serves revision 2026-07-28 beside the handshake era,
chosen per POST: a POST whose ``MCP-Protocol-Version`` header is not a
handshake-era revision, or whose body carries the per-request ``_meta``
envelope, is served *statelessly*.

* **No sessions.** Nothing is minted, an ``Mcp-Session-Id`` sent along is
  ignored, GET and DELETE with a modern version header get ``405``.
* **One exchange per POST.** The request is answered on that POST's response:
  plain JSON, or SSE (``X-Accel-Buffering: no``) when the request sends
  progress or log notifications before its answer. A notification is
  answered ``202`` and dropped (the revision defines none on HTTP).
* **Headers mirror the body** (:mod:`minimcp.transports.http._headers`):
  ``MCP-Protocol-Version`` = the body's ``_meta`` version, ``Mcp-Method`` =
  ``method``, ``Mcp-Name`` = ``params.name`` / ``params.uri`` on
  ``tools/call`` / ``prompts/get`` / ``resources/read``, and ``Mcp-Param-*``
  for ``x-mcp-header`` tool arguments; missing or different -> ``400`` with
  ``-32020``. Errors map to statuses: ``-32700`` ``-32600`` ``-32602``
  ``-32020`` ``-32021`` ``-32022`` -> 400, ``-32601`` -> 404, others 200.
* **A disconnect is a cancel** (the 2026-07-28 rule): closing the response
  stream cancels the request's handler, and so the tool round it drives.
* **Parked calls outlive their POST.** Every modern request is handled by
  one long-lived connection of the app (a :class:`~minimcp.server.connection.ServerConnection`
  over an inert transport, started with the app), whose task group hosts the
  tool runs: a tool waiting for ``inputResponses`` stays parked between
  POSTs, and the retry -- on any connection -- resumes it (one client address
  parks at most ``limits.max_parked_per_client``; ``-32003`` beyond). Requests
  get app-unique internal ids, so clients reusing ids never collide.

Client: :func:`http_client`
---------------------------
A :class:`~minimcp.core.transport.Transport` for :class:`minimcp.Client`. Each
message is one POST. A request's answer is read in a task of its own (JSON or
SSE), feeding every message into :meth:`~StreamableHTTPClientTransport.receive`;
a stream that ends before the response is resumed with GET +
``Last-Event-ID`` after the server's ``retry`` delay. An HTTP error for a
request becomes a JSON-RPC error response for that id, so the pending call
fails with a clear :class:`~minimcp.McpError` instead of hanging. ``404`` for
the session ends the connection with :class:`~minimcp.ConnectionClosed`
(starting a new session is the caller's job). DELETE is sent on close.

The era follows the messages: a request whose ``params._meta`` carries the
modern envelope (what :class:`minimcp.Client` sends with ``era="modern"``, and
its ``"auto"`` probe) goes out the 2026-07-28 way -- ``MCP-Protocol-Version``
from the body, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers, no
session id, no GET stream, no DELETE, no resumption -- and cancelling it
closes its POST instead of sending ``notifications/cancelled``. The
``Mcp-Param-*`` headers of ``x-mcp-header`` arguments come from the
:class:`minimcp.Client`, which decides which tools may be called (it leaves out
of ``tools/list`` a tool whose annotations break the rules, as the revision
requires of HTTP clients) and is asked per request
(:mod:`minimcp.client.headers`); the transport reads no result. For the era
probe (a first ``server/discover``), ``401`` / ``403`` / ``5xx`` are not
evidence of a handshake-era server: they end the connection instead of
failing the probe.

The package, one job per module
-------------------------------
* ``_wire`` -- what both halves read of messages and headers (media types, ids, initialize's version);
* ``_asgi`` -- the ASGI side: aliases, header map, ``Accept`` matching, bodies, error replies;
* ``_sse`` (SSE encoding and decoding) and ``_headers`` (2026-07-28 header mirroring,
  ``Host`` / ``Origin`` allow-lists): pure, no event loop;
* ``_streams`` -- one session's numbered SSE streams, replay buffers and resumption, and the
  readers that write a request's stream to its response with no task of their own, the standalone
  stream's writing loop;
* ``_pacing`` -- the app's two clocks for response streams (priming events held a moment, keep-alives);
* ``_session_table`` -- one session of the app, and the sessions' tasks (their table, LRU order and
  per-client bounds, is :mod:`minimcp.transports._client_bounds`, shared with WebSocket);
* ``_auth`` -- with ``auth=`` only: the bearer-token gate (metadata routes, 401 / 400 / 503, the 403
  step-up, refusal counters); an app without authorization never loads it;
* ``app`` -- the ASGI app, :class:`StreamableHTTPApp` (loaded from here on first use): sessions,
  lifespan, handshake-era POST / GET / DELETE;
* ``app_stateless`` -- the 2026-07-28 POSTs: header checks, one request answered per POST;
* ``client`` and ``client_stateless`` -- the client transport, and its 2026-07-28 exchange;

No module here imports a role: the app serves a :class:`~minimcp.transports._ports.Servable`.
Serving a :class:`minimcp.Server` in an ASGI server and connecting a :class:`minimcp.Client`
(:func:`minimcp.serve_http`, :func:`minimcp.connect_http`) is :mod:`minimcp.hosting.http`, a layer
above (``tests/docs/test_layers.py`` checks the direction).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minimcp.transports.http._asgi import DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS
    from minimcp.transports.http.app import StreamableHTTPApp
    from minimcp.transports.http.client import StreamableHTTPClientTransport, http_client

# This package's public names, each loaded on first use from its module here: a server never loads
# the client (nor httpx), a client never loads the app, and importing one module of the package
# (``_sse``, say) loads no other.
_LAZY = {
    "DEFAULT_ALLOWED_HOSTS": "_asgi",
    "DEFAULT_ALLOWED_ORIGINS": "_asgi",
    "StreamableHTTPApp": "app",
    "StreamableHTTPClientTransport": "client",
    "http_client": "client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'minimcp.transports.http' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "StreamableHTTPApp",
    "StreamableHTTPClientTransport",
    "http_client",
]
