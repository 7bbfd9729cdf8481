"""Layer 1, pure: what travels on the wire, and the rules of each revision.

JSON-RPC 2.0 messages and their codes (``jsonrpc``), the MCP message structs (``types``), the error tree
(``errors``), newline framing (``framing``), the revisions and what each allows (``versions``,
``capabilities``), elicitation outcomes (``elicitation``), URL rules (``urls``) and the per-request
envelope and complete result of revision 2026-07-28 (``envelope``) and its questions and answers
(``input_required``).

No module here does I/O or imports anyio, asyncio or trio (``tests/docs/test_layers.py`` checks it).
Read ``jsonrpc`` first (part of the first reading); the rest may be skipped on a first reading and read
as the code that uses it points at them.
"""
