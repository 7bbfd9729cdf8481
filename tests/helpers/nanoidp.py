"""A real authorization server for tests: NanoIDP from PyPI in its own venv, on a free loopback port.

NanoIDP (``nanoidp``, pinned below) is a test identity provider: authorization code with PKCE,
RFC 8707 ``resource`` → the access token's ``aud``, dynamic client registration (RFC 7591),
refresh with rotation, RFC 7662 introspection, OpenID Connect, and a headless persona sign-in
(``login_hint=persona-auto-login:<user>`` makes ``/authorize`` redirect at once). Its
dependencies (flask, lxml, signxml, ``mcp<3``...) stay out of the dev venv: it is installed on
first use into ``tests/peers/nanoidp/.venv`` (git-ignored), under a lock file so that parallel
test processes install it once, and stamped with the pin so a changed pin reinstalls.

:class:`NanoIDP` writes a configuration into a temporary directory, starts the server in its own
process group, waits for its discovery document and stops it again; it gets tokens headlessly
with httpx (:meth:`NanoIDP.token_for`, :meth:`NanoIDP.refresh`, :meth:`NanoIDP.introspect`).
The ``nanoidp`` fixture (one server per test module; ``second_nanoidp``, another issuer) is exposed by
assignment in a test module (``nanoidp = idp.nanoidp``), as ``tests/helpers/redis_server.py``'s ``redis`` is.

``python tests/helpers/nanoidp.py`` installs it from a shell (``.ci/run`` does) and prints the
venv's Python.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import fcntl
import hashlib
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
HOME = REPO / "tests" / "peers" / "nanoidp"
VENV = HOME / ".venv"
LOCK_FILE = HOME / ".venv.lock"
VERSION = "3.4.0"  # PyPI `nanoidp`, exactly
INSTALL_TIMEOUT = 900  # seconds for venv + pip install (a cold install downloads ~50 packages, ~100 MB)
WAIT = 60  # seconds for the server to answer its discovery document on a busy machine
HTTP_TIMEOUT = 30  # seconds per request to it

USERS = ("alice", "bob")
SCOPES = ("bookings:read", "bookings:write", "deposits:confirm", "mcp:read", "mcp:write")
OIDC_SCOPES = ("openid", "profile", "email", "offline_access")
INTROSPECTOR = ("introspector", "introspector-secret")  # the confidential client that calls /introspect


class NanoIDPUnavailable(Exception):
    """NanoIDP could not be installed or started; the message says why."""


class TokenError(Exception):
    """The authorization server refused: ``error`` is the OAuth error code (``invalid_target``...)."""

    def __init__(self, error: str, description: str = "") -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description


# --- installing ----------------------------------------------------------------------------------


def venv_python() -> pathlib.Path:
    return VENV / "bin" / "python"


def _installed() -> bool:
    stamp = VENV / ".minimcp-nanoidp-version"
    return venv_python().exists() and stamp.exists() and stamp.read_text().strip() == VERSION


def install() -> pathlib.Path:
    """NanoIDP's venv Python, creating the venv and installing the pin first unless already there.

    Raises:
        NanoIDPUnavailable: The install failed; the message has pip's output.
    """
    if _installed():
        return venv_python()
    HOME.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be installing it right now
        try:
            if _installed():
                return venv_python()
            print(f"\ninstalling nanoidp=={VERSION} into {VENV} (once) ...", file=sys.stderr, flush=True)
            shutil.rmtree(VENV, ignore_errors=True)  # a stale pin or a half-done install
            for command in (
                [sys.executable, "-m", "venv", str(VENV)],
                [str(venv_python()), "-m", "pip", "install", "-q", "--no-input", f"nanoidp=={VERSION}"],
            ):
                try:
                    done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
                except subprocess.TimeoutExpired:
                    raise NanoIDPUnavailable(f"`{' '.join(command)}` took more than {INSTALL_TIMEOUT} s") from None
                if done.returncode != 0:
                    raise NanoIDPUnavailable(
                        f"`{' '.join(command)}` failed (exit {done.returncode}) while installing NanoIDP for the "
                        f"authorization tests:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
                    )
            (VENV / ".minimcp-nanoidp-version").write_text(VERSION + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return venv_python()


# --- running -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``code_verifier`` and its S256 ``code_challenge`` (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclasses.dataclass(frozen=True)
class Client:
    """A registered OAuth client: public when ``client_secret`` is None."""

    client_id: str
    redirect_uri: str
    client_secret: str | None = None

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.client_id, self.client_secret) if self.client_secret is not None else None


@dataclasses.dataclass(frozen=True)
class Tokens:
    """A token response (RFC 6749 §5.1)."""

    access_token: str
    refresh_token: str | None
    id_token: str | None
    scope: str
    expires_in: int
    raw: dict[str, Any]


def _settings(issuer: str, port: int, scopes: Sequence[str]) -> str:
    quoted = ", ".join(f'"{s}"' for s in (*OIDC_SCOPES, *scopes))
    client_id, secret = INTROSPECTOR
    return f"""config_version: 1
server: {{host: "127.0.0.1", port: {port}}}
oauth:
  issuer: "{issuer}"
  audience: "nanoidp-default"  # the aud of a token asked for without a resource
  require_pkce: true
  refresh_token_rotation: true
  scopes_supported: [{quoted}]
  dynamic_registration: {{enabled: true}}
  clients:
    - client_id: "{client_id}"
      client_secret: "{secret}"
      token_endpoint_auth_method: "client_secret_basic"
      description: "calls /introspect"
login: {{mode: persona, auto_login: true}}
logging: {{level: WARNING, verbose_logging: false, log_token_requests: false}}
"""


def _users(users: Sequence[str]) -> str:
    lines = ["config_version: 1", "users:"]
    lines += [f'  {user}: {{email: "{user}@example.org"}}' for user in users]
    return "\n".join(lines) + "\n"


class NanoIDP:
    """One NanoIDP on loopback with persona sign-in for ``users``; ``start()``, then ``stop()``."""

    def __init__(self, users: Sequence[str] = USERS, scopes: Sequence[str] = SCOPES) -> None:
        self.python = install()
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.users = tuple(users)
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="minimcp-nanoidp-"))
        (self.directory / "settings.yaml").write_text(_settings(self.issuer, self.port, scopes))
        (self.directory / "users.yaml").write_text(_users(self.users))
        self.log = self.directory / "nanoidp.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.metadata: dict[str, Any] = {}
        import httpx  # here, not at the top: as a script, tests/helpers/http.py would shadow the stdlib's http

        self.http = httpx.Client(timeout=HTTP_TIMEOUT)
        self._client: Client | None = None

    # -- the process

    def start(self) -> None:
        import httpx

        command = [str(self.python), "-m", "nanoidp", "--config", str(self.directory), "--strict-config"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and self.process.poll() is None:
            with contextlib.suppress(httpx.TransportError):
                answer = self.http.get(self.metadata_url, timeout=2)
                if answer.status_code == 200:
                    self.metadata = answer.json()
                    assert self.metadata["issuer"] == self.issuer, self.metadata
                    return
            time.sleep(0.02)
        log_text = self.log.read_text(errors="replace")[-4000:]
        self.stop()
        raise NanoIDPUnavailable(f"NanoIDP did not answer {self.metadata_url} within {WAIT} s:\n{log_text}")

    def halt(self) -> None:
        """End the process and keep its directory: :meth:`start` brings the same issuer back (same port, same
        keys, so tokens it made before still verify), the authorization server down in between. The clients
        registered are forgotten with the process."""
        self._client = None
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(WAIT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def stop(self) -> None:
        self.halt()
        self.http.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- where things are

    @property
    def metadata_url(self) -> str:
        """OpenID discovery (NanoIDP serves RFC 8414's ``/.well-known/oauth-authorization-server`` as well)."""
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def oauth_metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    @property
    def jwks_uri(self) -> str:
        return str(self.metadata["jwks_uri"])

    def endpoint(self, name: str) -> str:
        """``token``, ``authorization``, ``registration``, ``introspection``, ``userinfo``... from the metadata."""
        return str(self.metadata[f"{name}_endpoint"])

    # -- clients and tokens

    def register_client(
        self,
        redirect_uri: str | None = None,
        *,
        confidential: bool = False,
        scopes: Sequence[str] | None = None,
        name: str = "minimcp tests",
    ) -> Client:
        """A new client by dynamic registration (RFC 7591); public (PKCE only) unless ``confidential``.

        The redirect is a loopback URL that nothing listens on unless given: the flow here never
        follows it (NanoIDP accepts any port on a loopback redirect, RFC 8252 §7.3).
        """
        redirect_uri = redirect_uri or f"http://127.0.0.1:{free_port()}/callback"
        body: dict[str, Any] = {
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "client_secret_basic" if confidential else "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": name,
        }
        if scopes is not None:
            body["scope"] = " ".join(scopes)
        answer = self.http.post(self.endpoint("registration"), json=body)
        assert answer.status_code == 201, (answer.status_code, answer.text)
        registered = answer.json()
        return Client(registered["client_id"], redirect_uri, registered.get("client_secret"))

    @property
    def client(self) -> Client:
        """The public client :meth:`token_for` uses by default (registered on first use)."""
        if self._client is None:
            self._client = self.register_client()
        return self._client

    def authorize(
        self,
        user: str,
        scopes: Sequence[str],
        resource: str | None,
        *,
        client: Client | None = None,
        code_challenge: str,
        extra: dict[str, str] | None = None,
    ) -> str:
        """The authorization code for ``user`` (signed in headlessly by persona auto-login).

        Raises:
            TokenError: The server redirected back with an error (``invalid_target``...).
        """
        client = client or self.client
        state = secrets.token_urlsafe(16)
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": client.redirect_uri,
            "scope": " ".join(scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            "login_hint": f"persona-auto-login:{user}",
            **({"resource": resource} if resource is not None else {}),
            **(extra or {}),
        }
        answer = self.http.get(self.endpoint("authorization"), params=params)
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        location = answer.headers["location"]
        assert location.startswith(client.redirect_uri + "?"), location
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        assert query.get("state") == state, query
        if "error" in query:
            raise TokenError(query["error"], query.get("error_description", ""))
        return query["code"]

    def token_for(
        self,
        user: str,
        scopes: Sequence[str],
        resource: str | None,
        *,
        client: Client | None = None,
        extra: dict[str, str] | None = None,
    ) -> Tokens:
        """Tokens for ``user`` by the whole authorization code + PKCE (S256) flow, for ``resource`` (RFC 8707).

        The access token is an RS256 JWT whose ``aud`` is ``resource`` (NanoIDP's default audience
        when ``resource`` is None). ``extra`` adds authorization request parameters (``nonce``...).

        Raises:
            TokenError: The authorization or the token endpoint refused.
        """
        client = client or self.client
        verifier, challenge = pkce_pair()
        code = self.authorize(user, scopes, resource, client=client, code_challenge=challenge, extra=extra)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": client.redirect_uri,
            "code_verifier": verifier,
            **({"resource": resource} if resource is not None else {}),
        }
        return self._token(form, client)

    def refresh(self, refresh_token: str, *, client: Client | None = None, resource: str | None = None) -> Tokens:
        """New tokens for a refresh token (rotated: the old one is revoked)."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        if resource is not None:
            form["resource"] = resource
        return self._token(form, client or self.client)

    def _token(self, form: dict[str, str], client: Client) -> Tokens:
        import httpx

        if client.auth is None:
            form = {**form, "client_id": client.client_id}
        answer = self.http.post(self.endpoint("token"), data=form, auth=client.auth or httpx.USE_CLIENT_DEFAULT)
        body = answer.json()
        if answer.status_code != 200:
            raise TokenError(str(body.get("error")), str(body.get("error_description", "")))
        return Tokens(
            access_token=body["access_token"],
            refresh_token=body.get("refresh_token"),
            id_token=body.get("id_token"),
            scope=body.get("scope", ""),
            expires_in=int(body.get("expires_in", 0)),
            raw=body,
        )

    def sign_in_at(self, authorization_url: str, user: str) -> str:
        """Where the browser is sent back after ``user`` signs in at ``authorization_url`` (built by someone else).

        For a page that sends the person to the authorization server with its own request (no
        ``login_hint``): NanoIDP then shows its persona picker, a form of one button per user,
        which this submits as a browser would. Returns the redirect (``...?code=...&state=...``,
        or ``...?error=...``).
        """
        answer = self.http.get(authorization_url)
        if answer.status_code == 200:  # the picker: <input name="transaction_id"> and a button per persona
            found = re.search(r'name="transaction_id" value="([^"]+)"', answer.text)
            assert found is not None, answer.text[:2000]
            assert f'name="username" value="{user}"' in answer.text, f"no persona {user!r} to pick"
            form = {"transaction_id": found.group(1), "username": user}
            answer = self.http.post(str(answer.url), data=form)
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        return answer.headers["location"]

    def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662 introspection, as the confidential introspection client."""
        answer = self.http.post(self.endpoint("introspection"), data={"token": token}, auth=INTROSPECTOR)
        assert answer.status_code == 200, (answer.status_code, answer.text)
        result: dict[str, Any] = answer.json()
        return result


def started(users: Sequence[str] = USERS) -> NanoIDP:
    """A started server; a test that cannot have one fails and says why."""
    try:
        server = NanoIDP(users)
        server.start()
    except NanoIDPUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    return server


def _for_the_module() -> Iterator[NanoIDP]:
    server = started()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def nanoidp() -> Iterator[NanoIDP]:
    """One NanoIDP for the test module (alice and bob), stopped after it."""
    yield from _for_the_module()


@pytest.fixture(scope="module")
def second_nanoidp() -> Iterator[NanoIDP]:
    """Another NanoIDP for the test module, with its own keys and issuer name (another issuer to ``nanoidp``)."""
    yield from _for_the_module()


if __name__ == "__main__":
    try:
        print(install())
    except NanoIDPUnavailable as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
