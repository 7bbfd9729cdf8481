"""The walk of one elicitating call on revision 2026-07-28 stays short (issue 17).

``benchmarks/tools/walk.py --era modern`` counts the library files one booking call passes through
on 2026-07-28. Before the redesign into one job per module it was 90 file entries across 15
files; these tests keep it under that, and pin the pieces that keep it there: what an envelope
allows a form question is worked out once per envelope (as a handshake works it out once per
connection), ``tools/call`` reads its params and envelope in one decoding, and a retry resumes
its parked run in one call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from minimcp import Context, Server
from minimcp.server.mrtr import run as runs
from minimcp.wire import envelope as wire_envelope
from minimcp.wire import errors
from minimcp.wire import input_required as wire_questions
from tests.helpers.modern import (
    K_CAPS,
    K_VERSION,
    V,
    accept,
    complete,
    error_of,
    input_required,
    meta,
    modern_peer,
    only,
)

ROOT = Path(__file__).resolve().parents[2]
#: The walk of one booking call on 2026-07-28 before the redesign (docs/internals.md).
BEFORE_REDESIGN_ENTRIES = 90


def _envelope(caps: dict[str, Any], version: str = V) -> wire_envelope.Envelope:
    return wire_envelope.read_envelope(msgspec.Raw(json.dumps({"_meta": {K_VERSION: version, K_CAPS: caps}}).encode()))


@pytest.mark.parametrize(
    ("caps", "allowed"),
    [
        ({"elicitation": {"form": {}}}, True),
        ({"elicitation": {}}, True),
        ({"elicitation": {"url": {}}}, False),
        ({}, False),
    ],
)
def test_an_envelope_works_out_the_form_facts_once(caps: dict[str, Any], allowed: bool) -> None:
    envelope = _envelope(caps)
    assert (envelope.form_allowed, envelope.form_mode, envelope.raw_forms_as_written) == (allowed, "form", True)
    # Facts, not fields: two envelopes that say the same are equal whatever was worked out.
    assert envelope == wire_envelope.Envelope(V, envelope.capabilities, None, None)


def test_parking_lives_beside_the_run_and_a_question_is_made_in_one_call() -> None:
    question = runs.Run.question("elicitation/create", {"message": "hi"})
    assert question == wire_questions.Question.create("elicitation/create", {"message": "hi"})


def _server() -> Server:
    server = Server("walk", "1.0.0", state_key=b"k" * 32)

    @server.tool()
    async def ask_name(ctx: Context, tag: str = "") -> str:
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"{tag}{getattr(answer, 'value', {}).get('name')}"

    return server


async def test_a_tool_call_with_bad_params_names_the_envelope_first_then_the_params(anyio_backend: str) -> None:
    async with modern_peer(_server()) as (m, _conn):
        # A bad envelope is told first, as for every other method (even when the params are bad too).
        bad_both = await m.request("tools/call", {"name": 3, "_meta": {K_VERSION: V}})
        assert "clientCapabilities" in error_of(bad_both, errors.INVALID_PARAMS)["message"]
        bad_params = await m.request("tools/call", {"name": 3})
        assert "$.name" in error_of(bad_params, errors.INVALID_PARAMS)["message"]
        # A progress token (the rest of _meta) still reaches the call, read once with the envelope.
        assert _envelope({}).rest is None
        token_meta = json.dumps({"_meta": {**meta(), "progressToken": 7}}).encode()
        with_token = wire_envelope.read_envelope(msgspec.Raw(token_meta))
        assert with_token.rest == {"progressToken": 7}
        requests, state = input_required(await m.call("ask_name", {"tag": "t:"}))
        key, _ = only(requests)
        done = complete(await m.call("ask_name", {"tag": "t:"}, responses={key: accept(name="Ada")}, state=state))
        assert done["content"][0]["text"] == "t:Ada"


def test_the_modern_walk_is_shorter_than_before_the_redesign() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tools" / "walk.py"), "--tree", str(ROOT), "--era", "modern"],
        capture_output=True, text=True, timeout=300, check=True,
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["file_entries"] < BEFORE_REDESIGN_ENTRIES, measured
    # Neither the revision re-exports nor the capability rules are on the way of a call.
    assert not {"wire/capabilities.py", "wire/versions.py"} & set(measured["file_list"]), measured["file_list"]

