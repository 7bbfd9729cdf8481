"""The walk of one elicitating call stays short: what a call or a connection knows for good is read once.

``benchmarks/tools/walk.py`` counts the library files one booking call passes through (and
``tests/docs/test_internals_doc.py`` checks the doc's table of them against a real run). These
tests pin the pieces that keep that walk short: a call's revision and client are plain
attributes, the handshake works out the form facts once per connection, and the shared
decoders are found by the table's own lookup, not a Python function.
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import msgspec
import pytest

from minimcp import Accepted, Client, Context, Server
from minimcp.transports.memory import memory_pair
from minimcp.wire import jsonrpc
from minimcp.wire.types import UNSET


def test_a_calls_revision_and_client_are_plain_attributes() -> None:
    assert {"protocol_version", "client_info"} <= set(Context.__slots__)
    for name in ("protocol_version", "client_info"):
        assert not isinstance(inspect.getattr_static(Context, name), property), name


class _Point(msgspec.Struct):
    x: int = 0


def test_decoder_for_is_the_tables_own_lookup() -> None:
    assert not inspect.isfunction(jsonrpc.decoder_for)  # no Python call once the decoder exists
    decoder = jsonrpc.decoder_for(_Point)
    assert decoder is jsonrpc.decoder_for(_Point)
    assert decoder.decode(b'{"x": 3}') == _Point(3)
    assert jsonrpc.decode_params(jsonrpc.NO_PARAMS, _Point) == _Point()


async def _accept(question: Any) -> Accepted[dict[str, Any]]:
    return Accepted({})  # pragma: no cover - no question is asked here


@pytest.mark.parametrize(
    ("version", "elicits", "allowed", "mode", "as_written"),
    [
        ("2025-11-25", True, True, "form", True),
        ("2025-11-25", False, False, "form", True),
        ("2025-06-18", True, True, UNSET, False),
        ("2025-03-26", True, False, UNSET, False),
    ],
)
async def test_the_handshake_works_out_the_form_facts_once(
    version: str, elicits: bool, allowed: bool, mode: Any, as_written: bool
) -> None:
    server = Server("facts", "1.0.0")
    seen: dict[str, Any] = {}

    @server.tool()
    async def probe(ctx: Context) -> str:
        conn = ctx.connection
        seen.update(
            allowed=conn.form_allowed, mode=conn.form_mode, as_written=conn.raw_forms_as_written,
            can=ctx.can_elicit_form(), version=ctx.protocol_version,
        )
        return "ok"

    a, b = memory_pair()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve, a)
            async with Client(b, elicitation_handler=_accept if elicits else None, protocol_version=version) as client:
                await client.call_tool("probe", {})
            tg.cancel_scope.cancel()
    assert seen == {"allowed": allowed, "mode": mode, "as_written": as_written, "can": allowed, "version": version}
