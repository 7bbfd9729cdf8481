"""minimcp.server.prompts: a prompt's arguments from its signature, and its value turned into a prompts/get result."""

from __future__ import annotations

import pytest

from minimcp.server.prompts import build_prompt, to_prompt_result
from minimcp.wire.types import GetPromptResult, ImageContent, PromptArgument, PromptMessage, TextContent


class Ctx:
    """Stands for the Context type: a parameter of this type is not an argument."""


async def plan(ctx: Ctx, city: str, days: int = 2) -> str:
    """Plan a trip."""
    return f"{city} for {days} days"


def test_arguments_come_from_the_signature() -> None:
    prompt = build_prompt(plan, name=None, title="Plan", description=None, context_type=Ctx)
    d = prompt.definition
    assert (d.name, d.title, d.description) == ("plan", "Plan", "Plan a trip.")
    assert d.arguments == [PromptArgument(name="city", required=True), PromptArgument(name="days", required=False)]
    assert prompt.required == {"city"} and prompt.names == {"city", "days"}
    assert prompt.context_param == "ctx"


def test_explicit_name_and_description_win() -> None:
    prompt = build_prompt(plan, name="trip", title=None, description="Other.", context_type=Ctx)
    assert (prompt.definition.name, prompt.definition.description) == ("trip", "Other.")


def test_a_prompt_without_arguments() -> None:
    async def hello() -> str:
        return "hi"

    prompt = build_prompt(hello, name=None, title=None, description=None)
    assert prompt.definition.arguments is None and prompt.definition.description is None
    assert prompt.required == frozenset() and prompt.context_param is None


def test_a_sync_prompt_is_refused() -> None:
    def sync() -> str:
        return ""

    with pytest.raises(TypeError, match="'sync' must be an async function"):
        build_prompt(sync, name=None, title=None, description=None)  # type: ignore[arg-type]


def test_values_become_user_messages() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    said = PromptMessage(role="assistant", content=TextContent(text="ok"))
    result = to_prompt_result(["hello", image, said], "desc")
    assert result.description == "desc"
    assert result.messages == [
        PromptMessage(role="user", content=TextContent(text="hello")),
        PromptMessage(role="user", content=image),
        said,
    ]
    assert to_prompt_result("one", "").messages == [PromptMessage(role="user", content=TextContent(text="one"))]
    assert to_prompt_result("one", "").description is None


def test_a_ready_result_is_kept_and_anything_else_refused() -> None:
    ready = GetPromptResult(messages=[])
    assert to_prompt_result(ready, "ignored") is ready
    with pytest.raises(TypeError, match="returned int"):
        to_prompt_result(["ok", 3], None)
