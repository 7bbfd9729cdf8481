"""The terminal's sign-in at an http(s) server's authorization server: its OAuthClient, browser step, and logout.

For an ``http(s)://`` target the terminal gives the transport an
:class:`~minimcp.auth.oauth_client.OAuthClient` (it does nothing until the server answers ``401``).
Before it is built, a :class:`~minimcp.cli.loopback.LoopbackRedirect` listens on ``127.0.0.1`` and a
free port: its URL is the redirect URI. Signing in is not a question: the terminal says which
authorization server it signs in at and for which resource, then opens the authorization URL in
the browser (:func:`~minimcp.cli.loopback.open_browser`; the URL is printed when none can be
opened), also when stdin is not a terminal, and waits for the browser to come back, at most
:data:`~minimcp.cli.args.SIGN_IN_WAIT` seconds (the session's request clocks are paused meanwhile, as for a question).

Tokens and registrations are kept in a :class:`~minimcp.auth.file_token_store.FileTokenStore`
(``--no-store``: in memory, for this run). The flags: ``--scope`` (the scopes asked for at the first
sign-in), ``--client-id``/``--client-secret`` (a client registered beforehand: preferred to a kept
registration, and never written to disk), ``--client-metadata-url`` (a Client ID Metadata Document).
A kept registration whose redirect URI is a loopback one is used with this run's port (RFC 8252
§7.3). ``minimcp logout URL`` (:func:`logout`) forgets every kept token of that resource. No token,
code or secret is ever shown.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import anyio

from minimcp.auth.file_token_store import FileTokenStore
from minimcp.auth.oauth_client import AuthorizationFailed, OAuthClient
from minimcp.auth.token_store import ClientCredentials, MemoryTokenStore, Tokens, TokenStore
from minimcp.cli.args import EXIT_OK, SIGN_IN_WAIT, Options
from minimcp.cli.loopback import LoopbackRedirect, check_browser_url, is_loopback, open_browser
from minimcp.cli.terminal import Console
from minimcp.core.config import Limits
from minimcp.core.session import Session

__all__ = ["SigningIn", "TerminalBrowser", "TerminalStore", "logout", "signing_in"]

class TerminalStore:
    """The store the terminal's OAuthClient uses: the kept one, with the flags' client and this run's port.

    * a client given by ``--client-id`` is preferred to a kept registration and not written down;
    * a kept registration with a loopback redirect URI gets this run's (RFC 8252 §7.3: any port);
    * :attr:`issuer` is the authorization server last asked about (the browser step names it).
    """

    def __init__(self, kept: TokenStore, redirect_uri: str, client_id: str | None = None) -> None:
        self.kept = kept
        self.redirect_uri = redirect_uri
        self.client_id = client_id
        self.issuer: str | None = None

    async def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        return await self.kept.get_tokens(issuer, resource)

    async def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        await self.kept.set_tokens(issuer, resource, tokens)

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        self.issuer = issuer
        client = await self.kept.get_client(issuer)
        if client is None or (self.client_id is not None and client.client_id != self.client_id):
            return None
        redirect = client.redirect_uri
        if redirect is not None and redirect != self.redirect_uri and _loopback_http(redirect):
            client = dataclasses.replace(client, redirect_uri=self.redirect_uri)
        return client

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        if client is not None and self.client_id is not None and client.client_id == self.client_id:
            return  # the flags' client: given again on each run, its secret never written down
        await self.kept.set_client(issuer, client)


def _loopback_http(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "http" and is_loopback(parts.hostname or "")


class TerminalBrowser:
    """The terminal's browser step (an :data:`~minimcp.auth.oauth_client.Browser`): say where it signs in,
    open the URL, wait on the loopback redirect at most ``wait`` seconds."""

    def __init__(
        self,
        console: Console,
        redirect: LoopbackRedirect,
        store: TerminalStore,
        *,
        wait: float = SIGN_IN_WAIT,
        opener: Callable[[str], Awaitable[bool]] = open_browser,
    ) -> None:
        self.console = console
        self.redirect = redirect
        self.store = store
        self.wait = wait
        self.opener = opener
        #: The client's session once it exists: its request clocks pause while the person signs in.
        self.session: Session | None = None

    async def __call__(self, authorization_url: str) -> Mapping[str, str]:
        try:
            check_browser_url(authorization_url)
        except ValueError as exc:
            raise AuthorizationFailed("browser", f"the authorization URL is not opened: {exc}") from None
        parts = urllib.parse.urlsplit(authorization_url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        issuer = self.store.issuer or f"{parts.scheme}://{parts.netloc}"
        style = self.console.err_style
        self.console.note(style.bold(
            f"Signing in at {issuer} for {query.get('resource', 'this server')}: opening your browser "
            f"(waiting up to {self.wait:g} s for it to come back)"
        ))  # fmt: skip
        if self.session is not None:
            self.session.begin_human_wait()
        try:
            answer: dict[str, str] | None = None
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._open, authorization_url)
                with anyio.move_on_after(self.wait):
                    answer = await self.redirect.wait(query.get("state"))
                tg.cancel_scope.cancel()
        finally:
            if self.session is not None:
                self.session.end_human_wait()
        if answer is None:
            raise AuthorizationFailed("browser", f"the browser did not come back within {self.wait:g} s")
        self.console.note(style.dim("(the browser came back: finishing the sign-in)"))
        return answer

    async def _open(self, url: str) -> None:
        if not await self.opener(url):
            self.console.note(f"No browser could be opened. To sign in, open this URL:\n  {url}")


@dataclasses.dataclass(slots=True)
class SigningIn:
    """What :func:`signing_in` yields: the OAuthClient for the transport, and its browser step."""

    oauth: OAuthClient
    browser: TerminalBrowser


@asynccontextmanager
async def signing_in(options: Options, console: Console, limits: Limits | None = None) -> AsyncIterator[SigningIn]:
    """The terminal's OAuthClient for an http(s) target, its loopback redirect listening while the block runs."""
    async with LoopbackRedirect.open(limits) as redirect:
        kept: TokenStore = MemoryTokenStore() if options.no_store else FileTokenStore()
        store = TerminalStore(kept, redirect.redirect_uri, options.client_id)
        browser = TerminalBrowser(console, redirect, store)
        oauth = OAuthClient(
            browser,
            redirect_uri=redirect.redirect_uri,
            client_id=options.client_id,
            client_secret=options.client_secret,
            client_metadata_url=options.client_metadata_url,
            client_name="minimcp",
            scopes=options.scopes,
            store=store,
            limits=limits,
        )
        yield SigningIn(oauth, browser)


def logout(url: str, console: Console, store: FileTokenStore | None = None) -> int:
    """``minimcp logout URL``: forget every kept token of the resource at ``url``."""
    removed = (store or FileTokenStore()).forget(url)
    if removed:
        count = len(removed)
        console.result(f"Signed out of {url} ({count} kept token{'s' if count != 1 else ''} removed).")
    else:
        console.result(f"No kept tokens for {url}.")
    return EXIT_OK
