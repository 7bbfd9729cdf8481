"""The terminal signing in: its token files, the browser step's URL check and loopback listener, and a whole run.

The end-to-end test runs ``python -m minimcp`` against ``examples/booking.py --auth-issuer`` and a real
NanoIDP, with ``BROWSER`` set to ``tests/helpers/signin_browser.py`` (it signs alice in headlessly and
follows the redirect to the terminal's loopback listener, as a browser would): the first run signs in
in the browser, the next reuses the kept token, a call that needs ``bookings:write`` signs in again
for more, an expired token is refreshed without the browser, and ``logout`` makes the next run sign in.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import stat
import subprocess
import time
from typing import Any

import anyio
import pytest

from minimcp.auth.file_token_store import FileTokenStore, default_directory
from minimcp.auth.oauth_client import AuthorizationFailed
from minimcp.auth.token_store import ClientCredentials, MemoryTokenStore, Tokens
from minimcp.cli.args import CLIENT_SECRET_VARIABLE, build_parser, options_from
from minimcp.cli.loopback import LoopbackRedirect, check_browser_url
from minimcp.cli.signing_in import TerminalBrowser, TerminalStore, signing_in
from minimcp.cli.terminal import Console
from tests.helpers import nanoidp as idp
from tests.helpers.booking_auth import booking_behind
from tests.helpers.cli import PY, REPO, RUN_TIMEOUT, cli_env
from tests.helpers.nanoidp import NanoIDP
from tests.helpers.signin_browser import browser_command

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

ISSUER = "https://as.example.com"
RESOURCE = "https://mcp.example.com/mcp"
READ = "bookings:read"


def mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- the file store ----------------------------------------------------------------------------------------------


async def test_the_file_store_keeps_tokens_and_clients_0600_in_0700_directories(tmp_path: pathlib.Path) -> None:
    store = FileTokenStore(tmp_path / "minimcp")
    assert await store.get_tokens(ISSUER, RESOURCE) is None and not (tmp_path / "minimcp").exists()
    old = os.umask(0)  # the widest umask: the files stay private anyway
    try:
        await store.set_tokens(ISSUER, RESOURCE, Tokens("at-1", refresh_token="rt-1", expires_at=123.5, scope="a b"))
        await store.set_client(ISSUER, ClientCredentials("c1", "s1", "client_secret_basic", "http://127.0.0.1:1/cb"))
    finally:
        os.umask(old)
    path = store.tokens_path(ISSUER, RESOURCE)
    assert mode(path) == 0o600 and mode(store.client_path(ISSUER)) == 0o600
    assert mode(tmp_path / "minimcp") == mode(path.parent) == mode(store.client_path(ISSUER).parent) == 0o700
    assert path.name.startswith("mcp.example.com_mcp--as.example.com--")
    assert json.loads(path.read_text())["resource"] == RESOURCE
    assert await FileTokenStore(tmp_path / "minimcp").get_tokens(ISSUER, RESOURCE) == Tokens(
        "at-1", refresh_token="rt-1", expires_at=123.5, scope="a b"
    )
    assert await store.get_tokens(ISSUER, RESOURCE + "/other") is None
    assert await store.get_tokens("https://other.example.com", RESOURCE) is None
    client = await store.get_client(ISSUER)
    assert client is not None and client.client_secret == "s1" and client.redirect_uri == "http://127.0.0.1:1/cb"
    await store.set_tokens(ISSUER, RESOURCE, None)
    assert await store.get_tokens(ISSUER, RESOURCE) is None and not path.exists()


async def test_the_file_store_writes_atomically(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileTokenStore(tmp_path)
    await store.set_tokens(ISSUER, RESOURCE, Tokens("first"))
    path = store.tokens_path(ISSUER, RESOURCE)
    inode = path.stat().st_ino

    def broken(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        await store.set_tokens(ISSUER, RESOURCE, Tokens("second"))
    monkeypatch.undo()
    kept = await store.get_tokens(ISSUER, RESOURCE)
    assert kept is not None and kept.access_token == "first"  # the old file, whole
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
    await store.set_tokens(ISSUER, RESOURCE, Tokens("second"))
    assert path.stat().st_ino != inode  # a new file renamed over the old one, not the old one rewritten
    kept = await store.get_tokens(ISSUER, RESOURCE)
    assert kept is not None and kept.access_token == "second"


async def test_a_damaged_file_counts_as_absent(tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FileTokenStore(tmp_path)
    await store.set_tokens(ISSUER, RESOURCE, Tokens("secret-token"))
    store.tokens_path(ISSUER, RESOURCE).write_text('{"issuer": "secret-token", ')
    assert await store.get_tokens(ISSUER, RESOURCE) is None
    assert "ignored the kept credentials" in caplog.text and "secret-token" not in caplog.text


async def test_forget_removes_every_token_of_a_resource_only(tmp_path: pathlib.Path) -> None:
    store = FileTokenStore(tmp_path)
    await store.set_tokens(ISSUER, RESOURCE, Tokens("a"))
    await store.set_tokens("https://other-as.example.com", RESOURCE, Tokens("b"))
    await store.set_tokens(ISSUER, "https://mcp.example.com/other", Tokens("c"))
    await store.set_client(ISSUER, ClientCredentials("c1"))
    removed = store.forget(RESOURCE)
    assert len(removed) == 2 and not any(p.exists() for p in removed)
    assert await store.get_tokens(ISSUER, RESOURCE) is None
    assert await store.get_tokens(ISSUER, "https://mcp.example.com/other") is not None
    assert await store.get_client(ISSUER) is not None  # registrations belong to the authorization server
    assert store.forget(RESOURCE) == []


def test_the_default_directory_follows_xdg_config_home(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_directory() == tmp_path / "minimcp"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_directory() == tmp_path / "home" / ".config" / "minimcp"


def test_logout_removes_the_kept_tokens(tmp_path: pathlib.Path) -> None:
    store = FileTokenStore(tmp_path / "minimcp")
    anyio.run(store.set_tokens, ISSUER, RESOURCE, Tokens("a"))
    done = minimcp("logout", RESOURCE, XDG_CONFIG_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Signed out of {RESOURCE} (1 kept token removed)."
    assert not store.tokens_path(ISSUER, RESOURCE).exists()
    done = minimcp("logout", RESOURCE, XDG_CONFIG_HOME=str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == f"No kept tokens for {RESOURCE}."


# --- the browser step --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://as.example.com/authorize",
        "http://10.0.0.1/authorize",
        "data:text/html,hi",
        "https://user@as.example.com/authorize",
        "https://as.example.com/authorize?x=1 --new-window",
        "https:///authorize",
        "/authorize",
    ],
)
def test_only_http_and_https_urls_are_opened_and_http_only_on_loopback(url: str) -> None:
    with pytest.raises(ValueError):
        check_browser_url(url)


@pytest.mark.parametrize(
    "url",
    ["https://as.example.com/authorize?a=1", "http://127.0.0.1:8080/authorize", "http://[::1]:80/a", "HTTP://localhost/a"],
)
def test_https_and_loopback_http_urls_are_opened(url: str) -> None:
    check_browser_url(url)


async def fetch(url: str) -> tuple[int, str]:
    """A GET as a browser makes it (HTTP/1.1, read to the end)."""
    parts = url.split("/", 3)
    host, port = parts[2].rsplit(":", 1)
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(f"GET /{parts[3]} HTTP/1.1\r\nHost: {parts[2]}\r\n\r\n".encode())
        data = b""
        with pytest.raises(anyio.EndOfStream):
            while True:
                data += await stream.receive()
    head, _, body = data.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


async def test_the_loopback_listener_answers_and_returns_the_query() -> None:
    async with LoopbackRedirect.open() as redirect:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect.redirect_uri)
        pages: list[tuple[int, str]] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def browse() -> None:
                    base = redirect.redirect_uri.removesuffix("/callback")
                    pages.append(await fetch(f"{base}/favicon.ico"))
                    pages.append(await fetch(f"{redirect.redirect_uri}?code=forged&state=wrong"))
                    pages.append(await fetch(f"{redirect.redirect_uri}?code=abc&state=s1&iss=https%3A%2F%2Fas"))

                tg.start_soon(browse)
                query = await redirect.wait("s1")
        assert query == {"code": "abc", "state": "s1", "iss": "https://as"}
        assert [status for status, _ in pages] == [404, 400, 200]
        assert "You can close this window" in pages[2][1] and "abc" not in pages[2][1]
        # the listener stays open for a second sign-in (step-up) in the same run
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(fetch, f"{redirect.redirect_uri}?error=access_denied&state=s2")
                assert (await redirect.wait("s2"))["error"] == "access_denied"


class Shown:
    """A Console whose stderr is kept."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.path = tmp_path / "stderr.txt"
        self.file = self.path.open("w", encoding="utf-8")
        self.console = Console(color=False)
        self.console.err = self.file

    def text(self) -> str:
        self.file.flush()
        return self.path.read_text()


async def test_the_browser_step_says_where_opens_and_prints_the_url_when_no_browser_opens(
    tmp_path: pathlib.Path,
) -> None:
    shown = Shown(tmp_path)
    async with LoopbackRedirect.open() as redirect:
        store = TerminalStore(MemoryTokenStore(), redirect.redirect_uri)
        await store.get_client(ISSUER)  # as the OAuth client does just before the browser step
        opened: list[str] = []

        async def no_browser(url: str) -> bool:
            opened.append(url)
            await fetch(f"{redirect.redirect_uri}?code=c&state=st")  # the person copies the URL by hand
            return False

        browser = TerminalBrowser(shown.console, redirect, store, opener=no_browser)
        url = f"https://as.example.com/authorize?state=st&resource={RESOURCE}&redirect_uri={redirect.redirect_uri}"
        with anyio.fail_after(10):
            answer = await browser(url)
    assert answer == {"code": "c", "state": "st"} and opened == [url]
    text = shown.text()
    assert f"Signing in at {ISSUER} for {RESOURCE}" in text
    assert f"No browser could be opened. To sign in, open this URL:\n  {url}" in text


async def test_the_browser_step_refuses_bad_urls_and_bounds_its_wait(tmp_path: pathlib.Path) -> None:
    shown = Shown(tmp_path)
    async with LoopbackRedirect.open() as redirect:
        opened: list[str] = []

        async def browser_app(url: str) -> bool:
            opened.append(url)
            return True

        store = TerminalStore(MemoryTokenStore(), redirect.redirect_uri)
        browser = TerminalBrowser(shown.console, redirect, store, wait=0.3, opener=browser_app)
        for bad in ("javascript:alert(1)", "file:///etc/passwd", "http://as.example.com/authorize?state=x"):
            with pytest.raises(AuthorizationFailed, match="not opened"):
                await browser(bad)
        assert opened == [] and "Signing in" not in shown.text()  # nothing said, nothing opened
        with anyio.fail_after(10), pytest.raises(AuthorizationFailed, match=r"did not come back within 0\.3 s"):
            await browser("https://as.example.com/authorize?state=x")
        assert opened == ["https://as.example.com/authorize?state=x"]


async def test_the_terminal_store_prefers_the_flags_client_and_this_runs_port() -> None:
    kept = MemoryTokenStore()
    await kept.set_client(ISSUER, ClientCredentials("dynamic", None, "none", "http://127.0.0.1:1111/callback"))
    store = TerminalStore(kept, "http://127.0.0.1:2222/callback")
    client = await store.get_client(ISSUER)
    assert client is not None and client.client_id == "dynamic"
    assert client.redirect_uri == "http://127.0.0.1:2222/callback" and store.issuer == ISSUER
    flagged = TerminalStore(kept, "http://127.0.0.1:2222/callback", client_id="mine")
    assert await flagged.get_client(ISSUER) is None  # the OAuth client then builds the flags' client
    await flagged.set_client(ISSUER, ClientCredentials("mine", "its-secret", "client_secret_basic"))
    kept_client = await kept.get_client(ISSUER)
    assert kept_client is not None and kept_client.client_id == "dynamic"  # the secret was not written down


# --- the whole run -------------------------------------------------------------------------------------------------


class Run:
    """``python -m minimcp`` runs against one server, with a kept configuration directory and the test browser."""

    def __init__(self, tmp_path: pathlib.Path, backend: str) -> None:
        self.config = tmp_path / "config"
        self.visits_log = tmp_path / "browser.jsonl"
        self.backend = backend
        self.env = cli_env(
            XDG_CONFIG_HOME=str(self.config),
            BROWSER=browser_command(tmp_path, PY),
            SIGNIN_BROWSER_LOG=str(self.visits_log),
        )
        self.outputs: list[str] = []

    async def __call__(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        done = await anyio.run_process(
            [PY, "-m", "minimcp", "--backend", self.backend, *args], input=b"", env=self.env, cwd=str(REPO),
            check=False,
        )  # fmt: skip
        self.outputs.append(done.stdout.decode() + done.stderr.decode())
        return done

    @property
    def visits(self) -> list[dict[str, Any]]:
        if not self.visits_log.exists():
            return []
        return [json.loads(line) for line in self.visits_log.read_text().splitlines()]

    @property
    def token_files(self) -> list[pathlib.Path]:
        folder = self.config / "minimcp" / "tokens"
        return sorted(folder.glob("*.json")) if folder.exists() else []

    def kept(self) -> dict[str, Any]:
        (path,) = self.token_files
        tokens: dict[str, Any] = json.loads(path.read_text())["tokens"]
        return tokens


def check(done: subprocess.CompletedProcess[bytes], status: int = 0) -> tuple[str, str]:
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == status, f"exit {done.returncode}\nstdout:\n{out}\nstderr:\n{err}"
    return out, err


async def test_the_terminal_signs_in_keeps_steps_up_refreshes_and_logs_out(
    nanoidp: NanoIDP, tmp_path: pathlib.Path, anyio_backend: str
) -> None:
    run = Run(tmp_path, anyio_backend)
    secrets: set[str] = set()
    with anyio.fail_after(6 * RUN_TIMEOUT):
        async with booking_behind(nanoidp) as (_, url):
            # 1. The first run signs in in the browser (without asking: stdin is not a terminal).
            out, err = check(await run("tools", "--scope", "bookings:read", url))
            assert "booking_status(" in out
            assert f"Signing in at {nanoidp.issuer} for {url}: opening your browser" in err
            assert "[y]" not in err and "?" not in err.split("Signing in", 1)[1].split("\n", 1)[0]
            (visit,) = run.visits
            assert visit["status"] == 200 and "You can close this window" in visit["page"]
            assert visit["query"]["scope"].split() == ["bookings:read", "offline_access"]
            assert visit["query"]["resource"] == url and visit["query"]["code_challenge_method"] == "S256"
            redirect = visit["query"]["redirect_uri"]
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect)
            assert visit["redirects"][0].startswith(redirect + "?")
            (path,) = run.token_files
            assert mode(path) == 0o600 and mode(path.parent) == 0o700 and mode(run.config / "minimcp") == 0o700
            (client_file,) = (run.config / "minimcp" / "clients").glob("*.json")
            assert mode(client_file) == 0o600
            first = run.kept()
            secrets |= {first["access_token"], first["refresh_token"]}
            assert first["scope"].split() == ["bookings:read", "offline_access"] and first["refresh_token"]

            # 2. The next run uses the kept token: no browser.
            out, err = check(await run("tools", url))
            assert "booking_status(" in out and "Signing in" not in err and len(run.visits) == 1

            # 3. Booking needs bookings:write: the server's 403 makes the terminal sign in again, for both scopes.
            out, err = check(await run("call", url, "book_table", "date=2025-12-20", "party_size=2"))
            assert "Booked a table for 2 on 2025-12-20" in out, out + err
            assert f"Signing in at {nanoidp.issuer} for {url}" in err
            assert len(run.visits) == 2
            assert {"bookings:read", "bookings:write"} <= set(run.visits[1]["query"]["scope"].split())
            assert run.visits[1]["query"]["redirect_uri"] != redirect  # this run's port, the kept registration
            found = re.search(r"\(booking (\S+)\)", out)
            assert found is not None
            booking_id = found.group(1)
            stepped = run.kept()
            secrets |= {stepped["access_token"], stepped["refresh_token"]}
            assert {"bookings:read", "bookings:write"} <= set(stepped["scope"].split())

            # 4. An expired token is refreshed without the browser (-v: debug logs, no token in them either).
            path = run.token_files[0]
            document = json.loads(path.read_text())
            document["tokens"]["expires_at"] = time.time() - 60
            path.write_text(json.dumps(document))
            out, err = check(await run("call", "-v", url, "booking_status", f"booking_id={booking_id}"))
            assert booking_id in out and "Signing in" not in err and len(run.visits) == 2
            refreshed = run.kept()
            assert refreshed["access_token"] != stepped["access_token"]
            secrets |= {refreshed["access_token"], refreshed["refresh_token"]}

            # 5. logout forgets the token; the next run signs in again.
            out, _ = check(await run("logout", url))
            assert out.strip() == f"Signed out of {url} (1 kept token removed)." and run.token_files == []
            out, err = check(await run("call", "--scope", READ, url, "booking_status", f"booking_id={booking_id}"))
            assert booking_id in out and "Signing in" in err and len(run.visits) == 3
            secrets.add(run.kept()["access_token"])
    for output in run.outputs:
        for secret in secrets:
            assert secret not in output


async def test_no_store_keeps_nothing_on_disk(nanoidp: NanoIDP, tmp_path: pathlib.Path, anyio_backend: str) -> None:
    run = Run(tmp_path, anyio_backend)
    with anyio.fail_after(3 * RUN_TIMEOUT):
        async with booking_behind(nanoidp) as (_, url):
            for _ in range(2):
                out, err = check(await run("tools", "--no-store", "--scope", "bookings:read", url))
                assert "booking_status(" in out and "Signing in" in err
    assert len(run.visits) == 2 and not (run.config / "minimcp").exists()


async def test_a_refused_sign_in_ends_the_run_in_one_line(
    nanoidp: NanoIDP, tmp_path: pathlib.Path, anyio_backend: str
) -> None:
    run = Run(tmp_path, anyio_backend)
    run.env["SIGNIN_BROWSER_DENY"] = "1"
    with anyio.fail_after(2 * RUN_TIMEOUT):
        async with booking_behind(nanoidp) as (_, url):
            out, err = check(await run("tools", url), status=2)
    assert out == "" and len(run.visits) == 1 and run.visits[0]["status"] == 200
    assert "The sign-in did not complete (access_denied)" in run.visits[0]["page"]
    assert err.splitlines()[-1] == (
        f"minimcp: error: cannot connect to {url}: authorization failed: "
        "the authorization server refused: access_denied"
    )
    assert run.token_files == []


async def test_a_client_registered_beforehand_is_used_and_its_secret_not_kept(
    nanoidp: NanoIDP, tmp_path: pathlib.Path, anyio_backend: str
) -> None:
    run = Run(tmp_path, anyio_backend)
    registered = await anyio.to_thread.run_sync(lambda: nanoidp.register_client(confidential=True, name="mine"))
    assert registered.client_secret is not None
    with anyio.fail_after(2 * RUN_TIMEOUT):
        async with booking_behind(nanoidp) as (_, url):
            # (--flag=VALUE: a secret may begin with "-")
            client = [f"--client-id={registered.client_id}", f"--client-secret={registered.client_secret}"]
            out, err = check(await run("tools", *client, "--scope", READ, url))
    assert "booking_status(" in out and "Signing in" in err
    assert run.visits[0]["query"]["client_id"] == registered.client_id
    assert not (run.config / "minimcp" / "clients").exists()  # the flags' client is given again, not written down
    files = [p.read_text() for p in (run.config / "minimcp").rglob("*.json")]
    assert files and not any(registered.client_secret in text for text in files)
    assert registered.client_secret not in out + err


async def test_the_flags_reach_the_oauth_client(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    args = build_parser().parse_args([
        "call", "--scope", "a b", "--scope", "c", "--client-id", "cid", "--client-secret", "sec",
        "--client-metadata-url", "https://app.example.com/client.json", "https://mcp.example.com/mcp", "t",
    ])  # fmt: skip
    options = options_from(args)
    async with signing_in(options, Console(color=False)) as signin:
        oauth = signin.oauth
        assert oauth.scopes == ["a", "b", "c"] and oauth.client_id == "cid" and oauth.client_secret == "sec"
        assert oauth.client_metadata_url == "https://app.example.com/client.json"
        assert oauth.redirect_uri == signin.browser.redirect.redirect_uri and oauth.browser is signin.browser
        assert isinstance(oauth.store, TerminalStore) and isinstance(oauth.store.kept, FileTokenStore)
        assert oauth.store.kept.directory == tmp_path / "minimcp"
    options = options_from(build_parser().parse_args(["tools", "--no-store", "https://mcp.example.com/mcp"]))
    async with signing_in(options, Console(color=False)) as signin:
        assert isinstance(signin.oauth.store, TerminalStore) and isinstance(signin.oauth.store.kept, MemoryTokenStore)
        assert signin.oauth.scopes is None


def test_the_secret_may_come_from_the_environment_and_only_with_a_client_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLIENT_SECRET_VARIABLE, "from-env")
    url = "https://mcp.example.com/mcp"
    assert options_from(build_parser().parse_args(["tools", "--client-id", "cid", url])).client_secret == "from-env"
    flag = build_parser().parse_args(["tools", "--client-id", "cid", "--client-secret", "flag", url])
    assert options_from(flag).client_secret == "flag"  # the flag wins
    assert options_from(build_parser().parse_args(["tools", url])).client_secret is None  # no client named: unused
    monkeypatch.setenv(CLIENT_SECRET_VARIABLE, "")
    assert options_from(build_parser().parse_args(["tools", "--client-id", "cid", url])).client_secret is None


def minimcp(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "minimcp", *args], capture_output=True, text=True, env=cli_env(**env),
                          cwd=str(REPO), timeout=RUN_TIMEOUT, check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools", "--scope", "x", "ws://127.0.0.1:1/mcp"], "--scope is for http(s):// targets"),
        (["tools", "--no-store", "python server.py"], "--no-store is for http(s):// targets"),
        (["tools", "--client-secret", "s", "http://127.0.0.1:1/mcp"], "--client-secret needs --client-id"),
        (["tools", "--client-metadata-url", "http://a.example/c", "http://127.0.0.1:1/mcp"], "must be an https://"),
        (["logout", "javascript:alert(1)"], "logout takes the server's http(s):// URL"),
    ],
)
def test_sign_in_flags_are_checked_before_connecting(args: list[str], message: str) -> None:
    done = minimcp(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
