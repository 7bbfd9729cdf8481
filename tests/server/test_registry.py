"""registry.py: what a server offers, and the pages its ``*/list`` methods cut (pure, no event loop)."""

from __future__ import annotations

from typing import Any

import pytest

from minimcp.server.prompts import build_prompt
from minimcp.server.registry import Registry, described, page
from minimcp.server.tools import build_tool
from minimcp.wire import errors
from minimcp.wire.errors import McpError
from minimcp.wire.types import UNSET


async def _tool(x: int) -> int:
    """Doubles."""
    return 2 * x


async def _read() -> str:
    """The fixed resource."""
    return "fixed"


async def _read_item(name: str) -> str:
    return f"item {name}"


def _registered_tool(name: str = "double") -> Any:
    return build_tool(
        _tool, name=name, title=None, description=None, annotations=None,
        input_schema=None, output_schema=None, structured=None,
    )


def test_page_cuts_after_an_offset_cursor_and_names_the_next() -> None:
    items = list(range(5))
    assert page(items, UNSET, 2) == ([0, 1], "2")
    assert page(items, "2", 2) == ([2, 3], "4")
    assert page(items, "4", 2) == ([4], UNSET)
    assert page(items, "5", 2) == ([], UNSET)


@pytest.mark.parametrize("cursor", ["-1", "6", "x", "\u0661", "9" * 19, "1" * 5000])
def test_page_refuses_a_cursor_it_did_not_give_with_invalid_params(cursor: str) -> None:
    with pytest.raises(McpError) as caught:
        page(list(range(5)), cursor, 2)
    assert caught.value.code == errors.INVALID_PARAMS
    assert "invalid cursor" in caught.value.message


def test_tools_keep_registration_order_refuse_duplicates_and_remember_replayability() -> None:
    registry = Registry()
    registry.add_tool(_registered_tool("b"))
    registry.add_tool(_registered_tool("a"), replayable=False)
    assert [t.name for t in registry.tool_list] == ["b", "a"]
    assert registry.not_replayable == {"a"}
    with pytest.raises(ValueError, match="already registered"):
        registry.add_tool(_registered_tool("a"))
    registry.remove_tool("b")
    assert [t.name for t in registry.tool_list] == ["a"] and set(registry.tools) == {"a"}


def test_a_fixed_resource_wins_over_a_template_and_an_unknown_uri_has_no_reader() -> None:
    registry = Registry()
    registry.add_reader("items://{name}", _read_item, described(_read_item, None, None, None, None), template=True)
    registry.add_reader("items://special", _read, described(_read, None, None, None, "text/plain"), template=False)
    with pytest.raises(ValueError, match="already registered"):
        registry.add_reader("items://special", _read, described(_read, None, None, None, None), template=False)
    fixed = registry.reader_for("items://special")
    assert fixed is not None and fixed[1] == "text/plain"
    fixed[0].close()  # type: ignore[attr-defined]  # the reader's coroutine, not awaited here
    templated = registry.reader_for("items://other")
    assert templated is not None and templated[1] is None
    templated[0].close()  # type: ignore[attr-defined]
    assert registry.reader_for("elsewhere://x") is None
    assert registry.resources["items://special"].definition.description == "The fixed resource."


def test_capabilities_follow_what_is_registered() -> None:
    registry = Registry()
    empty = registry.capabilities()
    assert empty.tools is UNSET and empty.resources is UNSET and empty.prompts is UNSET
    assert empty.logging == {} and empty.completions is UNSET
    registry.add_tool(_registered_tool())
    registry.add_reader("items://{name}", _read_item, described(_read_item, None, None, None, None), template=True)

    async def greet() -> str:
        return "hi"

    registry.add_prompt(build_prompt(greet, name=None, title=None, description=None))

    async def complete(ref: dict[str, Any], name: str, value: str, other: dict[str, str]) -> list[str]:
        return []

    registry.completion = complete
    full = registry.capabilities()
    assert full.tools == {"listChanged": True}
    assert full.resources == {"subscribe": True, "listChanged": True}
    assert full.prompts == {"listChanged": True} and full.completions == {}
    with pytest.raises(ValueError, match="already registered"):
        registry.add_prompt(build_prompt(greet, name=None, title=None, description=None))
