"""The protocol era as an enum (``versions.Era``), the revision -> era map, and the client's era."""

from __future__ import annotations

import enum

import anyio
import pytest

from minimcp import Server
from minimcp.client.client import ERAS, Client
from minimcp.transports.memory import memory_pair
from minimcp.wire.versions import MODERN, SUPPORTED, Era, era_of
from tests.helpers import connected


def test_the_era_is_a_str_enum_whose_values_are_the_old_strings() -> None:
    assert issubclass(Era, enum.StrEnum)
    assert [e.value for e in Era] == ["legacy", "modern"]
    # Code and tests that still compare with the strings keep working.
    assert all(member == member.value and hash(member) == hash(member.value) for member in Era)
    assert "modern" in {Era.MODERN} and Era.MODERN in {"modern"}
    assert Era("modern") is Era.MODERN
    assert f"{Era.MODERN}" == "modern"
    assert ERAS == ("legacy", "modern", "auto") and all(type(e) is str for e in ERAS)


def test_every_revision_maps_to_its_era() -> None:
    assert {v: era_of(v) for v in SUPPORTED} == dict.fromkeys(SUPPORTED, Era.LEGACY)
    assert {v: era_of(v) for v in MODERN} == dict.fromkeys(MODERN, Era.MODERN)
    for unknown in ("2024-01-01", "2099-01-01", ""):
        with pytest.raises(ValueError, match=f"unknown protocol revision {unknown!r}"):
            era_of(unknown)


def test_the_client_takes_an_era_member_or_its_string() -> None:
    for era in (Era.LEGACY, Era.MODERN, "legacy", "modern", "auto"):
        assert Client(memory_pair()[0], era=era).requested_era == era


@pytest.mark.parametrize("requested", [Era.LEGACY, Era.MODERN, "legacy", "modern", "auto"])
async def test_a_connected_client_holds_its_era_as_an_era(requested: Era | str) -> None:
    server = Server("eras")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    expected = Era.LEGACY if requested == "legacy" else Era.MODERN
    with anyio.fail_after(30):
        async with connected(server, era=requested) as (client, _conn):
            assert type(client.era) is Era and client.era is expected
            assert client.protocol_version is not None and era_of(client.protocol_version) is expected
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
