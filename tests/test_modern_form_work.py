"""What a 2026-07-28 form question costs per round trip (issue 19): counted, never timed.

A form question of a compiled form (a Struct, dataclass or TypedDict) is made from the form's
prepared bytes (``mrtr.form_question``: the schema encoded once per form and revision, as sent and
sorted), not encoded twice and the sorted payload digested from a tree of values per question; its
answer is kept by the form's field names, not by reading them back from the question's JSON. Each
shortcut is held byte for byte equal to the general way (``Question.create``, ``clean_answer`` of a
plain question) and pinned by a count.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, TypedDict

import anyio
import msgspec
import pytest

from minimcp import Accepted, Context, Limits, Server, forms, mrtr
from minimcp.types import ElicitRequestParams, UnsetType
from minimcp.versions import MODERN
from tests.helpers import raw_client
from tests.test_modern import Modern, accept, complete, input_required, only, text_of
from tests.test_modern_round_work import counting

TIMEOUT = 30
ROUNDS = 5
VERSION = MODERN[0]


class Pick(msgspec.Struct):
    n: int


class Colour(Enum):
    RED = "red"
    GREEN = "green"


class Booking(msgspec.Struct, rename="camel"):
    guest_name: Annotated[str, msgspec.Meta(title="Your name", description="as on the passport")]
    nights: Annotated[int, msgspec.Meta(ge=1, le=30)] = 1
    colour: Colour = Colour.RED
    size: Literal["s", "m", "l"] = "m"
    breakfast: bool = False
    budget: float | None = None


class Note(TypedDict):
    text: str


MESSAGES = ["q 7", "", 'a "quoted" \\ back\nslash', "naïve ☕ \u2028 \x00 \U0001f600", "x" * 300]


@pytest.mark.parametrize("form", [Pick, Booking, Note])
@pytest.mark.parametrize("message", MESSAGES)
@pytest.mark.parametrize("mode", ["form", msgspec.UNSET])
@pytest.mark.parametrize("key", [None, "who"])
def test_a_form_question_from_prepared_bytes_is_question_create(
    form: Any, message: str, mode: Literal["form"] | UnsetType, key: str | None
) -> None:
    compiled = forms.compile_form(form)
    schema = compiled.schema_for(VERSION)
    params = ElicitRequestParams(message=message, mode=mode, requested_schema=schema)
    encoded = compiled.encoded_schema(VERSION, schema)
    assert encoded is not None
    made = mrtr.form_question(message, mode, encoded, key)
    general = mrtr.Question.create("elicitation/create", params, key)
    assert (made.method, made.wire, made.digest) == (general.method, general.wire, general.digest)
    assert made.key == general.key
    assert made.wire == msgspec.json.encode(params)
    for answer in ({"action": "accept", "content": {"n": 3, "guestName": "Ada", "text": "t", "extra": 1}},
                   {"action": "decline"}, {"action": "maybe"}, "yes"):
        assert mrtr.clean_answer(made, answer) == mrtr.clean_answer(general, answer)


def test_only_the_forms_own_rendering_has_prepared_bytes() -> None:
    """A schema that is not the form's own rendering for that revision (an author's dict, a copy, another
    revision's rendering) is made the general way."""
    compiled = forms.compile_form(Pick)
    schema = compiled.schema_for(VERSION)
    assert compiled.encoded_schema(VERSION, dict(schema)) is None
    assert compiled.encoded_schema("2025-06-18", schema) is None
    assert compiled.encoded_schema(VERSION, schema) is compiled.encoded_schema(VERSION, schema)  # made once


def pick_server() -> Server:
    server = Server("form-work", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"q {i}", Pick)
        return str(answer.value.n) if isinstance(answer, Accepted) else "?"

    @server.tool()
    async def both(ctx: Context, i: int) -> str:
        answers = await ctx.gather(first=ctx_elicit(f"a {i}"), second=ctx_elicit(f"b {i}"))
        return " ".join(str(a.value.n) for a in answers.values() if isinstance(a, Accepted))

    return server


def ctx_elicit(message: str) -> Any:
    from minimcp import Elicit

    return Elicit(message, Pick)


async def test_a_form_question_is_encoded_and_digested_from_prepared_bytes(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round trip with a compiled form's question: no digest of a tree of values for the question
    (``Question.create`` calls ``mrtr.digest``), no reading of its fields back from its JSON; on the wire
    the question is the encoded ``ElicitRequestParams``, and the answer reaches the tool, extras dropped."""
    server = pick_server()
    schema = forms.compile_form(Pick).schema_for(VERSION)
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            with counting(monkeypatch, mrtr, "digest") as digests, \
                    counting(monkeypatch, mrtr, "_field_names") as reads:
                for n in range(ROUNDS):
                    requests, state = input_required(await m.call("ask", {"i": n}))
                    key, request = only(requests)
                    assert msgspec.json.encode(request["params"]) == msgspec.json.encode(
                        ElicitRequestParams(message=f"q {n}", mode="form", requested_schema=schema))
                    answer = {"action": "accept", "content": {"n": n, "extra": "dropped"}}
                    msg = await m.call("ask", {"i": n}, responses={key: answer}, state=state)
                    assert text_of(complete(msg)) == str(n)
                requests, state = input_required(await m.call("both", {"i": 1}))
                assert sorted(requests) == ["first", "second"]
                msg = await m.call("both", {"i": 1}, responses={"first": accept(n=1), "second": accept(n=2)},
                                   state=state)
                assert text_of(complete(msg)) == "1 2"
            assert (digests[0], reads[0]) == (0, 0), f"{digests[0]} question digests, {reads[0]} field reads"
