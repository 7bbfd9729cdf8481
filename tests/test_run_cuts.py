"""The run side of the usual 2026-07-28 round made with less Python (issue 19): each shorter way held equal
to the way it replaces (the same token, the same result), and counted where it skips a call."""

from __future__ import annotations

from typing import Any

import pytest

from minimcp.state import StateSealer

BINDING = {"m": "tools/call", "t": "greet", "p": None}


def _body(**extra: Any) -> dict[str, Any]:
    return {"ans": [], "at": 1.5, "c": "call", "ks": ["q1"], "m": "tools/call", "n": None, "p": None, "qs": ["x"],
            "t": "greet", "to": 600.0, **extra}


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize(("handle", "args"), [("handle", "digest"), ("ha.ndle", "digest"), ("handle", "dig.est"),
                                              ("hándle", "digest")])
@pytest.mark.parametrize("extra", [{}, {"w": "worker"}])
def test_seal_parts_seals_what_seal_sorted_seals(version: str, handle: str, args: str, extra: dict[str, str]) -> None:
    """``seal_parts`` (the handle and the arguments' digest given apart, straight into a v2 header) gives the
    token ``seal_sorted`` gives for the whole payload, byte for byte on v2 (the same nonce); a handle or
    digest that cannot go in a header stays in the body, as ever."""
    sealers = [StateSealer(b"k" * 32, version=version) for _ in range(2)]
    if version == "v2":
        for sealer in sealers:
            sealer._nonces = iter(["nonce"])  # type: ignore[assignment]  # (the same nonce for both)
    whole = dict(sorted({**_body(**extra), "a": args, "exp": None, "h": handle}.items()))
    expected = sealers[0].seal_sorted(whole, now=1000.0, ttl=60.0)
    token = sealers[1].seal_parts(handle, args, _body(**extra), 1060.0)
    if version == "v2":
        assert token == expected
    binding = {**BINDING, "a": args}
    opened = [sealers[0].open(t, now=1000.0, binding=binding) for t in (expected, token)]
    assert opened[0]["h"] == opened[1]["h"] == handle
    assert [{k: v for k, v in o.items() if k != "n"} for o in opened][0] == {
        k: v for k, v in opened[1].items() if k != "n"}
