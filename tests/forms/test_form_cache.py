"""Raw form schemas built per call: compiled once per shape, never held per waiting call.

A tool that writes its question as a raw schema dict with a default that changes per call
(the booking example's "next free date") gets one compiled form for every question of that
shape; each question still goes out with its own default, each answer is checked, a bad
default is still refused, and the shapes kept are bounded.
"""

from __future__ import annotations

import datetime
import gc
from typing import Any

import anyio
import pytest

from minimcp import Accepted, Context, ElicitationRequest, Server, forms
from tests.helpers import connected

CALLS = 40


def question(default: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "accept_alternative": {"type": "boolean", "description": "Try another date?"},
            "date": {"type": "string", "format": "date", "description": "Another date", "default": default},
        },
        "required": ["accept_alternative"],
    }


def make_server(default_of: Any = None) -> Server:
    app = Server("cache")

    @app.tool()
    async def ask(ctx: Context, i: int) -> str:
        day = default_of(i) if default_of else (datetime.date(2030, 1, 1) + datetime.timedelta(days=i)).isoformat()
        answer = await ctx.elicit(f"call {i}", question(day))
        assert isinstance(answer, Accepted)
        return f"{i}:{answer.value['date']}"

    return app


def live_forms() -> int:
    gc.collect()
    return sum(isinstance(o, forms.Form) for o in gc.get_objects())


async def test_waiting_calls_share_one_compiled_form_and_each_question_keeps_its_default() -> None:
    asked: dict[int, str] = {}
    all_asked = anyio.Event()
    release = anyio.Event()

    async def handler(q: ElicitationRequest) -> Any:
        i = int(q.message.split()[1])
        asked[i] = q.form.schema["properties"]["date"]["default"]
        if len(asked) == CALLS:
            all_asked.set()
        await release.wait()
        return Accepted({"accept_alternative": True, "date": f"2040-01-{1 + i % 28:02d}"})

    results: dict[int, str] = {}
    async with connected(make_server(), elicitation_handler=handler) as (client, _):
        before = live_forms()

        async def call(i: int) -> None:
            results[i] = (await client.call_tool("ask", {"i": i})).text

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(CALLS):
                    tg.start_soon(call, i)
                await all_asked.wait()
                # every waiting call on the server side shares one form (the client parses its own copies)
                held = live_forms() - before
                release.set()
    # the client's own parsed copies (one per question it holds), plus the server's: one form for
    # the shape and one checker for the field whose default changes (both made once per shape)
    assert held <= CALLS + 2, f"{held} compiled forms for {CALLS} waiting calls of one shape"
    for i in range(CALLS):
        assert asked[i] == (datetime.date(2030, 1, 1) + datetime.timedelta(days=i)).isoformat()
        assert results[i] == f"{i}:2040-01-{1 + i % 28:02d}"


def test_one_shape_one_compiled_form_whatever_its_default() -> None:
    from minimcp.forms import cache as form_cache

    cache = form_cache.FormCache()

    a, schema_a = cache.question_form(question("2030-01-01"), (), "2025-11-25")
    b, schema_b = cache.question_form(question("2031-05-06"), (), "2025-11-25")
    assert a is b
    assert schema_a is not None and schema_a["properties"]["date"]["default"] == "2030-01-01"
    assert schema_b is not None and schema_b["properties"]["date"]["default"] == "2031-05-06"
    other, _ = cache.question_form({**question("2030-01-01"), "required": []}, (), "2025-11-25")
    assert other is not a  # another shape (what is required changes validation)


def test_a_bad_default_is_refused_on_a_cached_shape_too() -> None:
    from minimcp.forms import cache as form_cache

    cache = form_cache.FormCache()

    cache.question_form(question("2030-01-01"), (), "2025-11-25")
    with pytest.raises(forms.FormDefinitionError, match="date"):
        cache.question_form(question("not a date"), (), "2025-11-25")


async def test_a_bad_default_ends_the_call_with_a_tool_error_and_the_session_goes_on() -> None:
    async def handler(q: ElicitationRequest) -> Any:
        return Accepted({"accept_alternative": False})

    async with connected(make_server(lambda i: "someday" if i == 1 else "2030-01-01"),
                         elicitation_handler=handler) as (client, _):  # fmt: skip
        with anyio.fail_after(30):
            assert (await client.call_tool("ask", {"i": 0})).text == "0:2030-01-01"
            bad = await client.call_tool("ask", {"i": 1})
            assert bad.is_error is True and "date" in bad.text
            assert (await client.call_tool("ask", {"i": 2})).text == "2:2030-01-01"


def test_the_shapes_kept_are_bounded() -> None:
    from minimcp import Limits
    from minimcp.forms import cache as form_cache

    cache = form_cache.FormCache()

    assert Limits().max_form_shapes == form_cache.MAX_SHAPES
    for n in range(form_cache.MAX_SHAPES + 20):
        schema = question("2030-01-01")
        schema["properties"]["date"]["description"] = f"shape {n}"
        cache.question_form(schema, (), "2025-11-25")
    assert len(cache.shapes) == form_cache.MAX_SHAPES
    cache.question_form(question("2030-01-01"), (), "2025-11-25", 10)  # a smaller bound: the oldest go
    assert len(cache.shapes) == 10
    first, _ = cache.question_form(question("2030-01-01"), (), "2025-11-25", 0)
    again, _ = cache.question_form(question("2030-01-01"), (), "2025-11-25", 0)
    assert first is not again and len(cache.shapes) == 10  # 0: every question compiled, nothing kept


def test_older_revisions_and_types_render_as_before() -> None:
    from minimcp.forms import cache as form_cache

    cache = form_cache.FormCache()

    form, schema = cache.question_form(question("2030-01-01"), (), "2025-06-18")
    assert schema is None  # 2025-06-18 gets the schema rendered for it (no default on the string)
    assert "default" not in form.schema_for("2025-06-18")["properties"]["date"]


def test_each_cache_keeps_its_own_shapes() -> None:
    """The tables belong to one FormCache (one per server), not to the module: two servers share nothing."""
    from minimcp.forms import cache as form_cache

    one, other = form_cache.FormCache(), form_cache.FormCache()
    a, _ = one.question_form(question("2030-01-01"), (), "2025-11-25")
    assert len(one.shapes) == 1 and other.shapes == {}
    b, _ = other.question_form(question("2030-01-01"), (), "2025-11-25")
    assert a is not b and len(other.shapes) == 1
    mutable = [name for name, value in vars(form_cache).items() if isinstance(value, dict | list | set)]
    assert mutable == ["__builtins__"]  # (no table of its own)
