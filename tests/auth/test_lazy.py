"""minimcp.auth is opt-in: ``import minimcp`` loads none of it, and its face loads only the module a name needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import minimcp.auth


def loaded_after(code: str) -> set[str]:
    """The modules of minimcp.auth, pyjwt, httpx and cryptography loaded in a fresh interpreter by ``code``."""
    probe = (
        f"{code}\nimport sys\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('jwt', 'httpx', 'cryptography')"
        " or m.startswith('minimcp.auth')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_minimcp_loads_nothing_of_auth() -> None:
    assert loaded_after("import minimcp") == set()
    assert loaded_after("import minimcp\nfrom minimcp import Server, Context, Limits") == set()


def test_the_face_loads_only_what_a_name_needs() -> None:
    assert loaded_after("from minimcp.auth import Authorization, Principal") == {
        "minimcp.auth", "minimcp.auth.config", "minimcp.auth.principal",
        "minimcp.auth.metrics",  # (the refusal counters an Authorization holds: no dependency)
    }
    introspection = loaded_after("from minimcp.auth import IntrospectionVerifier")
    assert "minimcp.auth.introspection" in introspection and "httpx" in introspection
    assert not {m for m in introspection if m.split(".")[0] == "jwt"}  # opaque tokens need no pyjwt
    verifier = loaded_after("from minimcp.auth import JWTVerifier")
    assert {"minimcp.auth.jwt", "jwt", "httpx"} <= verifier


def test_every_name_of_the_face_resolves() -> None:
    for name in minimcp.auth.__all__:
        assert getattr(minimcp.auth, name) is not None
    with pytest.raises(AttributeError, match="Nope"):
        minimcp.auth.Nope  # noqa: B018
