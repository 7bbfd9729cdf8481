"""What a 2026-07-28 form question costs per round trip (issue 19): counted, never timed.

A form question of a compiled form (a Struct, dataclass or TypedDict) is made from the form's
prepared bytes (``wire_questions.form_question``: the schema encoded once per form and revision, as sent and
sorted), not encoded twice and the sorted payload digested from a tree of values per question; its
answer is kept by the form's field names, not by reading them back from the question's JSON. Each
shortcut is held byte for byte equal to the general way (``Question.create``, ``clean_answer`` of a
plain question) and pinned by a count.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Any, Literal, TypedDict

import anyio
import msgspec
import pytest

from minimcp import Accepted, Context, Limits, Server, forms
from minimcp.wire import envelope as wire_envelope
from minimcp.wire import input_required as wire_questions
from minimcp.wire.types import ElicitRequestParams, UnsetType
from minimcp.wire.versions import MODERN
from tests.helpers import raw_client
from tests.helpers.modern import Modern, accept, complete, input_required, only, text_of
from tests.helpers.modern_form_work import Pick, ask_rounds, pick_server
from tests.helpers.modern_round_work import counting

TIMEOUT = 30
ROUNDS = 5
VERSION = MODERN[0]




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
    encoded = compiled.encoded_schema(VERSION, schema) or compiled.encoded_schema(VERSION, schema)  # (see below)
    assert encoded is not None
    made = wire_questions.form_question(message, mode, encoded, key)
    general = wire_questions.Question.create("elicitation/create", params, key)
    assert (made.method, made.wire, made.digest) == (general.method, general.wire, general.digest)
    assert made.key == general.key
    assert made.wire == msgspec.json.encode(params)
    for answer in ({"action": "accept", "content": {"n": 3, "guestName": "Ada", "text": "t", "extra": 1}},
                   {"action": "decline"}, {"action": "maybe"}, "yes"):
        assert wire_questions.clean_answer(made, answer) == wire_questions.clean_answer(general, answer)


def test_only_the_forms_own_rendering_has_prepared_bytes() -> None:
    """A schema that is not the form's own rendering for that revision (an author's dict, a copy, another
    revision's rendering) is made the general way; so is a form's first question (a form compiled for
    one question holds no bytes it never reuses), and from the second on the bytes are made once."""
    compiled = forms.compile_form({"type": "object", "properties": {"once": {"type": "string"}}})  # (not cached)
    schema = compiled.schema_for(VERSION)
    assert compiled.encoded_schema(VERSION, schema) is None  # its first question
    assert compiled.encoded_schema(VERSION, dict(schema)) is None
    assert compiled.encoded_schema("2025-06-18", schema) is None
    first = compiled.encoded_schema(VERSION, schema)
    assert first is not None and first is compiled.encoded_schema(VERSION, schema)  # made once
    assert first == (msgspec.json.encode(schema), msgspec.json.Encoder(order="sorted").encode(schema),
                     frozenset({"once"}))








async def test_a_form_question_is_encoded_and_digested_from_prepared_bytes(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round trip with a compiled form's question: no digest of a tree of values for the question
    (``Question.create`` calls
    ``wire_questions.digest``), no reading of its fields back from its JSON; on the wire
    the question is the encoded ``ElicitRequestParams``, and the answer reaches the tool, extras dropped."""
    server = pick_server()
    schema = forms.compile_form(Pick).schema_for(VERSION)
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("ask", {"i": 0}))  # (the form's first question)
            await m.call("ask", {"i": 0}, responses={only(requests)[0]: accept(n=0)}, state=state)
            with counting(monkeypatch, wire_questions, "digest") as digests, \
                    counting(monkeypatch, wire_questions, "_field_names") as reads:
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


def test_a_one_question_reply_is_the_encoded_result() -> None:
    """The ``input_required`` reply of one question (joined in one go) is byte for byte
    ``jsonrpc.encode_result`` of :func:`wire_questions.input_required`, whatever the id, key, method and server
    info; a server info changed in place is encoded again, in this reply and the final one."""
    from minimcp.wire import jsonrpc
    from minimcp.wire.types import CallToolResult, TextContent

    questions = [
        wire_questions.form_question('n\u00e9 "x"', "form", forms.compile_form(Booking).encoded_schema(
            VERSION, forms.compile_form(Booking).schema_for(VERSION)) or (b"", b"", frozenset()), None),
        wire_questions.Question.create("sampling/createMessage", {"messages": [], "maxTokens": 5}),
        wire_questions.Question.create("roots/list", msgspec.UNSET),
        wire_questions.Question.create("x/\u00e9\"", {"a": 1}),
    ]
    server = Server("one", "1")
    info, wire = server.info, server.modern_wire
    result = CallToolResult(content=[TextContent(text="hi \u00e9")])
    for round_ in range(2):
        for id_ in (0, -3, 2**53, "id-\u00e9\n\"", ""):
            for key in ("q1", 'k"\\\u2028', ""):
                for question in questions:
                    general = wire_questions.input_required((key,), (question,), "v1.a.b", wire)
                    expected = jsonrpc.encode_result(id_, general)
                    assert wire_questions.input_required_reply(id_, (key,), (question,), "v1.a.b", wire) == expected
            expected = jsonrpc.encode_result(id_, wire_envelope.complete(result, wire))
            assert wire_envelope.complete_reply(id_, result, wire) == expected
        info.name = "renamed"  # (in place: the next round's replies say so)
        assert round_ or b"renamed" in wire_envelope.complete_reply(1, result, wire)
    with pytest.raises(ValueError):
        wire_questions.input_required_reply(1, ("q1", "q2"), questions[:1], "v1.a.b", wire)


async def test_a_form_answer_is_converted_once(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept form answer with nothing to drop reaches ``ctx.elicit`` as the ``ElicitResult`` it was
    converted to when kept (it was converted a second time from the kept values); one with extras, a
    ``_meta`` or a decline still reaches the tool with the form's values only."""
    from minimcp.server import context

    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("ask", {"i": 0}))  # (the first request locks the era)
            await m.call("ask", {"i": 0}, responses={only(requests)[0]: accept(n=0)}, state=state)
            convert, converts = msgspec.convert, [0]

            def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
                converts[0] += sys._getframe(1).f_code.co_filename == context.__file__  # (in the tool's context)
                return convert(value, *args, **kwargs)

            monkeypatch.setattr(msgspec, "convert", counted)
            await ask_rounds(m, ROUNDS)
            assert converts[0] == 0, f"{converts[0]} conversions in the tool's context for {ROUNDS} answers"
            for answer, text in (({"action": "accept", "content": {"n": 4, "x": 1}}, "4"),
                                 ({"action": "accept", "content": {"n": 5}, "_meta": {"k": 1}}, "5"),
                                 ({"action": "decline", "_meta": {"k": 1}}, "?"), ({"action": "cancel"}, "?")):
                requests, state = input_required(await m.call("ask", {"i": 9}))
                msg = await m.call("ask", {"i": 9}, responses={only(requests)[0]: answer}, state=state)
                assert text_of(complete(msg)) == text


FORM_ANSWERS: list[Any] = [
    {"action": "accept", "content": {"n": 3}},
    {"action": "accept", "content": {"n": 3, "extra": [1, 2]}},
    {"action": "accept", "content": {"n": 3}, "_meta": {"k": 1}},
    {"action": "accept", "content": {}},
    {"action": "accept"},
    {"action": "decline"},
    {"action": "decline", "_meta": {"k": 1}, "content": {"n": 1}},
    {"action": "cancel", "extra": 1},
    {"action": "maybe"},
    {"action": "accept", "content": [1]},
    {"content": {"n": 1}},
    "yes",
    None,
]


@pytest.mark.parametrize("answer", FORM_ANSWERS)
def test_a_form_answer_is_taken_as_a_plain_question_takes_it(answer: Any) -> None:
    """``take_answer`` of a compiled form's question (its own shortcut) gives what the general way gives
    for the same question made by ``Question.create``: what the tool gets and what is recorded."""
    compiled = forms.compile_form(Pick)
    schema = compiled.schema_for(VERSION)
    encoded = compiled.encoded_schema(VERSION, schema) or compiled.encoded_schema(VERSION, schema)
    assert encoded is not None
    made = wire_questions.form_question("q", "form", encoded, None)
    general = wire_questions.Question.create(
        "elicitation/create", ElicitRequestParams(message="q", mode="form", requested_schema=schema))
    assert type(general) is wire_questions.Question
    assert wire_questions.take_answer(made, answer) == wire_questions.take_answer(general, answer)


async def test_the_replies_meta_is_prepared_once(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over round trips with a compiled form's question, the replies' ``_meta`` (the server's info) is
    prepared once by the server (``ServerWire._prepare``), not per round trip."""
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            requests, state = input_required(await m.call("ask", {"i": 0}))  # (the form's first question)
            await m.call("ask", {"i": 0}, responses={only(requests)[0]: accept(n=0)}, state=state)
            with counting(monkeypatch, wire_envelope.ServerWire, "_prepare") as metas:
                await ask_rounds(m, ROUNDS)
            assert metas[0] == 0, metas[0]


async def test_a_form_type_asked_before_skips_the_question_work(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a form type's question was made from its prepared bytes on a revision, later questions of it
    are made from its ready form and bytes: no ``_form_question`` (params, form cache, schema lookup) and
    no ``encoded_schema`` per question (each ran once per round trip); the wire stays the same."""
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            asked = []
            for n in range(2):  # (the form's first questions: made the general way)
                requests, state = input_required(await m.call("ask", {"i": n}))
                asked.append(requests)
                await m.call("ask", {"i": n}, responses={only(requests)[0]: accept(n=n)}, state=state)
            with counting(monkeypatch, Context, "_form_question") as made, \
                    counting(monkeypatch, forms.Form, "encoded_schema") as encoded:
                for n in range(2, 2 + ROUNDS):
                    requests, state = input_required(await m.call("ask", {"i": n}))
                    asked.append(requests)
                    msg = await m.call("ask", {"i": n}, responses={only(requests)[0]: accept(n=n)}, state=state)
                    assert text_of(complete(msg)) == str(n)
            assert (made[0], encoded[0]) == (0, 0), f"{made[0]}, {encoded[0]}"
            # every question alike but for its message: the same schema and mode as the general way made
            shapes = [{k: v for k, v in only(r)[1]["params"].items() if k != "message"} for r in asked]
            assert all(shape == shapes[0] for shape in shapes), shapes
            assert [only(r)[1]["params"]["message"] for r in asked] == [f"q {n}" for n in range(2 + ROUNDS)]


async def test_a_ready_form_type_is_still_refused_to_a_client_without_forms(anyio_backend: str) -> None:
    """The ready shortcut is taken only where the request's client takes forms: a request declaring no
    elicitation still gets -32021, after the same form type was asked (and made ready) on other requests."""
    server = pick_server()
    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            for n in range(3):
                requests, state = input_required(await m.call("ask", {"i": n}))
                await m.call("ask", {"i": n}, responses={only(requests)[0]: accept(n=n)}, state=state)
            msg = await m.call("ask", {"i": 9}, caps={})
            assert msg["error"]["code"] == -32021, msg
            assert msg["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
            input_required(await m.call("ask", {"i": 10}))  # (and the session keeps working)


def test_a_plain_struct_form_is_made_as_the_general_way_makes_it() -> None:
    """A Struct whose fields take answers as they are is made by one constructor call: the same values as
    before for full and partial answers, the same refusal by the type, and a key that is no field left out."""

    class Plain(msgspec.Struct):
        n: int
        note: str = "none"
        maybe: int | None = None

    compiled = forms.compile_form(Plain)
    assert compiled.build({"n": 1}) == Plain(1)
    assert compiled.build({"n": 2, "note": "x", "maybe": 3, "extra": True}) == Plain(2, "x", 3)
    assert compiled.make({"n": 4, "nope": 1}) == Plain(4)  # (make's caller may pass other keys: left out)
    with pytest.raises(forms.FormValidationError):
        compiled.build({"note": "x"})  # required n omitted

    class Renamed(msgspec.Struct, rename="camel"):
        first_name: str

    assert forms.compile_form(Renamed).build({"firstName": "a"}) == Renamed("a")

    class Refusing(msgspec.Struct):
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(forms.FormValidationError, match="refused by Refusing: negative"):
        forms.compile_form(Refusing).build({"n": -1})


PLAIN_FIELDS = [
    forms.FormField("b", "boolean"),
    forms.FormField("i", "integer"),
    forms.FormField("x", "number"),
    forms.FormField("s", "string"),
    forms.FormField("lo", "integer", minimum=1),
    forms.FormField("hi", "number", maximum=2),
    forms.FormField("short", "string", max_length=2),
    forms.FormField("mail", "string", format="email"),
    forms.FormField("one", "select", options=(("a", "a"),)),
]
PLAIN_VALUES = [True, False, 0, 1, 5, -3, 2.0, 2.5, float("inf"), "", "abc", "a@b.c", "a", None, [], {}]


@pytest.mark.parametrize("field", PLAIN_FIELDS, ids=lambda f: f.name)
def test_an_answer_checked_by_its_prepared_checks_is_checked_as_check_value_checks_it(field: forms.FormField) -> None:
    """A value of a field's plain type skips ``check_value`` only where that gives it back as it is: every
    other value (a bool for a number, a float for an integer, bounds, formats, options) gets its error."""
    from minimcp.forms.check import answer_checks, check_value, validate_checked

    checks = answer_checks((field,))
    for value in PLAIN_VALUES:
        try:
            expected: Any = {field.name: check_value(field, value)}
        except forms.FormValidationError as exc:
            expected = (exc.constraint, str(exc))
        try:
            got: Any = validate_checked(checks, {field.name: value})
        except forms.FormValidationError as exc:
            got = (exc.constraint, str(exc))
        assert got == expected, (value, got, expected)
        if isinstance(got, dict):
            assert type(got[field.name]) is type(expected[field.name]), value


def test_a_plain_answer_is_checked_without_a_check_value_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pick's answer (a plain int) is taken as check_value would give it back, without calling it (it ran
    once per field per answer); a bool or a float that is no integer still goes to it and is refused."""
    from minimcp.forms import check as form_check

    compiled = forms.compile_form(Pick)
    with counting(monkeypatch, form_check, "check_value") as checked:
        assert compiled.build({"n": 7}) == Pick(7)
        assert checked[0] == 0
        for bad in (True, 1.5, "7"):
            with pytest.raises(forms.FormValidationError, match="expected integer"):
                compiled.build({"n": bad})
        assert checked[0] == 3


def test_the_form_type_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its bound, form types are no longer added to ``question_form``'s table (a program making types
    per call cannot grow it); such a type's form is still the one compile_form gives."""
    from minimcp.forms import cache as form_cache

    cache = form_cache.FormCache()
    known: Any = msgspec.defstruct("Known", [("n", int)])
    cache.question_form(known, (), VERSION)
    assert known in cache.types  # (below the bound a type is kept)
    monkeypatch.setattr(form_cache, "MAX_TYPES", len(cache.types))
    fresh: Any = msgspec.defstruct("Fresh", [("n", int)])  # (a form type made at run time: not one mypy knows)
    compiled, given = cache.question_form(fresh, (), VERSION)
    assert given is None and compiled is forms.compile_form(fresh)
    assert fresh not in cache.types



async def test_past_its_bound_a_form_type_is_asked_the_general_way(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the ready table full, a new form type's questions are made the general way (not added), and
    asked and answered as before (asyncio and trio)."""
    from minimcp.forms import cache as form_cache

    monkeypatch.setattr(form_cache, "MAX_READY_TYPES", 0)
    fresh: Any = msgspec.defstruct("Fresh", [("n", int)])  # (a form type made at run time: not one mypy knows)
    server = Server("form-bound", limits=Limits(elicitation_timeout=600))

    @server.tool()
    async def ask(ctx: Context, i: int) -> str:
        answer = await ctx.elicit(f"q {i}", fresh)
        return str(answer.value.n) if isinstance(answer, Accepted) else "?"

    with anyio.fail_after(TIMEOUT):
        async with raw_client(server) as (peer, _conn):
            m = Modern(peer)
            for n in range(4):
                requests, state = input_required(await m.call("ask", {"i": n}))
                msg = await m.call("ask", {"i": n}, responses={only(requests)[0]: accept(n=n)}, state=state)
                assert text_of(complete(msg)) == str(n)
    assert server.form_cache.ready_question(fresh, VERSION, "q", None) is None
