"""docs/auth.md stays true: its code runs, its challenges are the ones sent, its bounds and tests exist.

* every ```` ```python ```` block is executed (in a fresh namespace, not as ``__main__``, so a block's
  ``server.run(...)`` under ``if __name__ == "__main__":`` is compiled but not run), and all of them
  together pass ``mypy --strict``;
* the functions the blocks define are run where they can be: the Entra wrapper makes a token naming
  the application id acceptable and leaves others refused, ``ctx.auth``'s tool, reader and completion
  answer by the person;
* the ```` ```text ```` block of challenges is exactly what :func:`minimcp.auth.resource.challenge`
  gives for the page's own ``Authorization``;
* the bounds table names ``Limits`` fields with their defaults, and every ``Limits`` field of
  authorization is in it; the refusal reasons listed are :data:`minimcp.auth.principal.Refusal`'s;
* the client samples run: the loopback browser answers the redirect's query, the per-user token store keeps
  each user's tokens apart, per authorization server and resource;
* every ``test_file.py::test_name`` the page cites exists.
"""

from __future__ import annotations

import ast
import pathlib
import re
import types
import typing
from typing import Any

import msgspec
import pytest

from minimcp import Limits
from minimcp.auth import Authorization, Principal, TokenRefused
from minimcp.auth.principal import Refusal
from minimcp.auth.resource import challenge

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "auth.md"
TEXT = DOC.read_text(encoding="utf-8")

#: The ``Limits`` fields of authorization (verifiers, page sign-in, WebSocket slots per person).
AUTH_LIMITS = {
    "max_token_bytes", "max_auth_keys", "auth_key_refetch_interval", "auth_keys_max_age", "auth_fetch_timeout",
    "max_auth_response_bytes", "max_introspection_cache", "introspection_cache_ttl", "max_pending_sign_ins",
    "max_sessions_per_client",
}


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", TEXT, flags=re.MULTILINE | re.DOTALL)


def run_block(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "auth_doc_sample"}
    exec(compile(source, str(DOC), "exec"), namespace)
    return namespace


def test_every_python_block_runs() -> None:
    found = blocks("python")
    assert len(found) >= 6
    for source in found:
        run_block(source)


def test_the_python_blocks_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    api = pytest.importorskip("mypy.api")
    files = []
    for n, source in enumerate(blocks("python")):
        path = tmp_path / f"auth_doc_sample_{n}.py"
        path.write_text(source, encoding="utf-8")
        files.append(str(path))
    out, err, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent", *files])
    assert status == 0, out + err


class _Fixed:
    """A verifier that names whoever the test says (the page's wrapper is what is checked)."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    async def verify(self, token: str) -> Principal:
        return self.principal


def _sample_defining(name: str) -> dict[str, Any]:
    for source in blocks("python"):
        if re.search(rf"^(class|async def|def) {name}\b", source, flags=re.MULTILINE):
            return run_block(source)
    raise AssertionError(f"no block of docs/auth.md defines {name}")


async def test_the_entra_wrapper_takes_the_application_id_as_the_resource_and_nothing_else() -> None:
    wrapper = _sample_defining("AppIdAudience")["AppIdAudience"]
    resource, app_id = "https://mcp.example.com/mcp", "11111111-2222-3333-4444-555555555555"
    entra = "https://login.microsoftonline.com/tid/v2.0"
    for audience, accepted in (((app_id,), True), (("api://other",), False), ((), False)):
        inner = _Fixed(Principal(issuer=entra, subject="s", audience=audience))
        auth = Authorization(wrapper(inner, app_id, resource), resource=resource, authorization_servers=[entra])
        if accepted:
            assert (await auth.authenticate("Bearer t")).key == (entra, "s")
        else:
            with pytest.raises(TokenRefused) as refused:
                await auth.authenticate("Bearer t")
            assert refused.value.reason == "audience"


async def test_the_ctx_auth_tool_answers_by_the_person() -> None:
    tool = _sample_defining("my_bookings")["my_bookings"]
    assert await tool(types.SimpleNamespace(auth=None)) == []
    alice = Principal(issuer="https://as", subject="alice", scopes=frozenset({"bookings:read"}))
    assert await tool(types.SimpleNamespace(auth=alice)) == ["bookings of https://as|alice"]


async def test_the_ctx_auth_reader_and_completion_answer_by_the_person() -> None:
    sample = _sample_defining("bookings_on")
    reader, suggest = sample["bookings_on"], sample["suggest"]
    alice = Principal(issuer="https://as", subject="alice", scopes=frozenset({"bookings:read", "bookings:write"}))
    reading = Principal(issuer="https://as", subject="bob", scopes=frozenset({"bookings:read"}))
    assert await reader("mon", ctx=types.SimpleNamespace(auth=alice)) == "mon: the bookings of alice"
    assert await reader("mon", ctx=types.SimpleNamespace(auth=None)) == "mon: nothing to show"
    ref = {"type": "ref/resource", "uri": "bookings://{day}"}
    assert await suggest(ref, "room", "g", {}, ctx=types.SimpleNamespace(auth=alice)) == ["garden"]
    assert await suggest(ref, "room", "g", {}, ctx=types.SimpleNamespace(auth=reading)) == []
    template = sample["server"].registry.templates[0]
    assert template.context_param == "ctx" and sample["server"].registry.completion_context == "ctx"


def test_the_challenges_shown_are_the_ones_sent() -> None:
    auth = _sample_defining("book")["auth"]
    shown = [line.split(": ", 1)[1] for line in "".join(blocks("text")).splitlines()
             if line.startswith("WWW-Authenticate: ")]  # fmt: skip
    assert shown == [
        challenge(auth, TokenRefused("missing", "this resource needs a bearer token")),
        challenge(auth, TokenRefused("expired", "the token has expired")),
        challenge(auth, None, frozenset({"bookings:write"}) | auth.required_scopes),
    ]


def _default(text: str) -> object:
    """A default as the table writes it: ``30 s``, ``256 KiB``, ``10,000``, ``None``."""
    text = text.strip().replace(",", "")
    if text == "None":
        return None
    if text.endswith(" KiB"):
        return int(text[:-4]) * 1024
    return float(text.removesuffix(" s"))


def test_the_bounds_table_names_limits_fields_with_their_defaults_and_misses_none() -> None:
    section = TEXT.split("## Bounds\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, flags=re.MULTILINE)
    assert rows
    defaults = Limits()
    for field, written in rows:
        assert hasattr(defaults, field), f"docs/auth.md names Limits.{field}, which does not exist"
        assert _default(written) == getattr(defaults, field), f"Limits.{field}: the page says {written}"
    assert {field for field, _ in rows} >= AUTH_LIMITS
    assert {f.name for f in msgspec.structs.fields(Limits)} >= AUTH_LIMITS


def test_the_refusal_reasons_listed_are_the_verifiers() -> None:
    paragraph = TEXT.split("`reason` is a `Refusal` (", 1)[1].split(")", 1)[0]
    assert set(re.findall(r"`(\w+)`", paragraph)) == set(typing.get_args(Refusal))


def test_every_test_the_page_cites_exists() -> None:
    names: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names[path.name] = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    cited = re.findall(r"(test_\w+\.py)::(\w+)", TEXT)
    assert len(cited) >= 5
    assert [c for c in cited if c[1] not in names.get(c[0], set())] == []


async def test_the_loopback_browser_opens_the_url_and_answers_the_redirects_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    import anyio
    import anyio.abc
    import httpx

    browser_class = _sample_defining("LoopbackBrowser")["LoopbackBrowser"]
    pages: list[tuple[int, str]] = []
    opened: list[str] = []
    people: list[threading.Thread] = []

    def person(url: str) -> None:  # the person's browser: a stray request, then the redirect back
        with httpx.Client(timeout=10) as http:
            pages.append((http.get(url.replace("/callback", "/favicon.ico")).status_code, ""))
            answer = http.get(url)
            pages.append((answer.status_code, answer.text))

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        browser = browser_class(listener, listener.extra(anyio.abc.SocketAttribute.local_port), wait=10)

        def open_url(url: str) -> bool:  # the authorization server would redirect the browser here at once
            opened.append(url)
            back = f"{browser.redirect_uri}?code=c1&state=s1&iss=https%3A%2F%2Fas"
            people.append(threading.Thread(target=person, args=(back,)))
            people[-1].start()
            return True

        monkeypatch.setattr("webbrowser.open", open_url)
        answer = await browser("https://as/authorize?state=s1")
        await anyio.to_thread.run_sync(people[0].join, 10)
    assert opened == ["https://as/authorize?state=s1"]
    assert answer == {"code": "c1", "state": "s1", "iss": "https://as"}
    assert pages == [(404, ""), (200, "Signed in. You can close this window.")]


async def test_the_per_user_store_keeps_each_users_tokens_apart_and_shares_the_registration() -> None:
    from minimcp.auth import ClientCredentials, Tokens

    store_class = _sample_defining("PerUserStore")["PerUserStore"]
    shared: dict[str, str] = {}
    alice, bob = store_class(shared, "alice"), store_class(shared, "bob")
    tokens = Tokens("access", refresh_token="refresh", expires_at=1.0e9, scope="bookings:read")
    client = ClientCredentials("dcr-1", "secret", "client_secret_basic", "http://127.0.0.1:8765/callback")
    assert await alice.get_tokens("https://as", "https://mcp/mcp") is None
    await alice.set_tokens("https://as", "https://mcp/mcp", tokens)
    await alice.set_client("https://as", client)
    assert await alice.get_tokens("https://as", "https://mcp/mcp") == tokens
    assert await bob.get_tokens("https://as", "https://mcp/mcp") is None  # per user
    assert await alice.get_tokens("https://other-as", "https://mcp/mcp") is None  # per authorization server
    assert await bob.get_client("https://as") == client  # the application's registration
    await alice.set_tokens("https://as", "https://mcp/mcp", None)
    assert await alice.get_tokens("https://as", "https://mcp/mcp") is None
    assert len(shared) == 1
