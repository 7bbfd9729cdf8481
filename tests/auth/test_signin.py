"""Page sign-in (issue 29) against a real authorization server (NanoIDP): who opened a URL step's page.

The page signs the person in at the MCP authorization server (code + PKCE, its own client,
registered dynamically or beforehand) and compares them with the person the step was made for.
The browser is NanoIDP's persona picker, submitted headlessly (``NanoIDP.sign_in_at``).
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import anyio
import pytest

from minimcp import Server
from minimcp.auth.discovery import discovery_urls
from minimcp.auth.principal import Principal
from minimcp.auth.signin import PageSignIn, SignInRefused
from minimcp.core.config import Limits
from minimcp.server.mrtr.used_states import MemoryUsedStates, StoreUnavailable
from minimcp.server.url_steps import WrongPerson, bind
from tests.helpers import nanoidp as idp
from tests.helpers.nanoidp import NanoIDP, free_port

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

RESOURCE = "http://127.0.0.1:9/mcp"


def claims(jwt: str) -> dict[str, Any]:
    part = jwt.split(".")[1]
    result: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return result


def mcp_principal(server: NanoIDP, user: str) -> Principal:
    """Who ``user``'s MCP access token names (what a verifier would answer), from the real token."""
    token = claims(server.token_for(user, ["bookings:write"], RESOURCE).access_token)
    return Principal(issuer=token["iss"], subject=token["sub"], client_id=token.get("client_id"))


async def signed_in(server: NanoIDP, sign_in: PageSignIn, user: str, return_to: str = "/pages/x") -> dict[str, str]:
    """The callback's query after ``user`` signs in at the URL ``sign_in.begin`` gives (a browser's part)."""
    url, state = sign_in.begin(return_to)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query["code_challenge_method"] == "S256" and query["state"] == state and query["nonce"]
    location = await anyio.to_thread.run_sync(server.sign_in_at, url, user)
    assert location.startswith(sign_in.redirect_uri + "?"), location
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


def callback() -> str:
    return f"http://127.0.0.1:{free_port()}/pages/callback"


async def test_alice_signs_in_by_dynamic_registration_and_is_the_person_of_her_token(nanoidp: NanoIDP) -> None:
    sign_in = PageSignIn(nanoidp.issuer, callback())
    try:
        await sign_in.start()
        assert sign_in.client_id and sign_in.client_secret  # registered itself, a confidential web client
        params = await signed_in(nanoidp, sign_in, "alice", "/pages/deposit/1")
        principal, return_to = await sign_in.finish(params)
    finally:
        await sign_in.aclose()
    assert return_to == "/pages/deposit/1"
    assert principal.key == mcp_principal(nanoidp, "alice").key == (nanoidp.issuer, "alice")


async def test_a_pre_registered_client_signs_in_too(nanoidp: NanoIDP) -> None:
    redirect = callback()
    client = nanoidp.register_client(redirect, confidential=True, scopes=["openid"])
    sign_in = PageSignIn(nanoidp.issuer, redirect, client_id=client.client_id, client_secret=client.client_secret)
    try:
        await sign_in.start()
        assert sign_in.client_id == client.client_id
        principal, _ = await sign_in.finish(await signed_in(nanoidp, sign_in, "bob"))
    finally:
        await sign_in.aclose()
    assert principal.key == (nanoidp.issuer, "bob")


async def test_bob_signing_in_on_alices_step_is_refused_and_alice_completes_it(nanoidp: NanoIDP) -> None:
    server = Server("pages", state_key=b"s" * 32)
    alice = mcp_principal(nanoidp, "alice")
    # A 2026-07-28 page id made for alice (what ctx.url_step_id gives her call): bound by its tag.
    step_id = bind("call-1-deposit", alice.key, server.url_step_keys[0])
    sign_in = PageSignIn(nanoidp.issuer, callback())
    try:
        await sign_in.start()
        bob_on_page, _ = await sign_in.finish(await signed_in(nanoidp, sign_in, "bob"))
        alice_on_page, _ = await sign_in.finish(await signed_in(nanoidp, sign_in, "alice"))
    finally:
        await sign_in.aclose()
    assert not server.url_step_is_for(step_id, bob_on_page)
    with pytest.raises(WrongPerson):
        await server.complete_url_elicitation(step_id, person=bob_on_page)
    assert server.url_step_is_for(step_id, alice_on_page)
    assert await server.complete_url_elicitation(step_id, person=alice_on_page) is False  # nobody to notify


async def test_a_replayed_unknown_or_expired_state_is_refused(nanoidp: NanoIDP) -> None:
    sign_in = PageSignIn(nanoidp.issuer, callback())
    try:
        await sign_in.start()
        params = await signed_in(nanoidp, sign_in, "alice")
        await sign_in.finish(params)
        with pytest.raises(SignInRefused) as replayed:
            await sign_in.finish(params)
        assert replayed.value.reason == "state"
        with pytest.raises(SignInRefused) as unknown:
            await sign_in.finish({**params, "state": "never-issued"})
        assert unknown.value.reason == "state"
        sign_in.timeout = 0.0  # expires at once
        params = await signed_in(nanoidp, sign_in, "alice")
        with pytest.raises(SignInRefused) as expired:
            await sign_in.finish(params)
        assert expired.value.reason == "state"
    finally:
        await sign_in.aclose()


async def test_the_pending_sign_ins_are_bounded_oldest_dropped(nanoidp: NanoIDP) -> None:
    sign_in = PageSignIn(nanoidp.issuer, callback(), limits=Limits(max_pending_sign_ins=2))
    try:
        await sign_in.start()
        first = await signed_in(nanoidp, sign_in, "alice")
        second, third = sign_in.begin("/b")[1], sign_in.begin("/c")[1]
        assert len(sign_in._pending) == 2 and set(sign_in._pending) == {second, third}
        with pytest.raises(SignInRefused) as dropped:
            await sign_in.finish(first)
        assert dropped.value.reason == "state"
    finally:
        await sign_in.aclose()


async def test_an_iss_mismatch_is_refused_and_a_missing_one_when_the_server_promises_it(nanoidp: NanoIDP) -> None:
    sign_in = PageSignIn(nanoidp.issuer, callback())
    try:
        await sign_in.start()
        params = await signed_in(nanoidp, sign_in, "alice")
        with pytest.raises(SignInRefused) as mixed_up:
            await sign_in.finish({**params, "iss": "https://attacker.example"})
        assert mixed_up.value.reason == "issuer"
        sign_in.metadata["authorization_response_iss_parameter_supported"] = True
        params = await signed_in(nanoidp, sign_in, "alice")
        assert "iss" not in params  # NanoIDP does not send it; a server that promises it must
        with pytest.raises(SignInRefused) as missing:
            await sign_in.finish(params)
        assert missing.value.reason == "issuer"
        params = await signed_in(nanoidp, sign_in, "alice")
        principal, _ = await sign_in.finish({**params, "iss": nanoidp.issuer})
        assert principal.subject == "alice"
    finally:
        await sign_in.aclose()


async def test_a_stolen_code_without_the_verifier_or_an_error_answer_signs_nobody_in(nanoidp: NanoIDP) -> None:
    sign_in = PageSignIn(nanoidp.issuer, callback())
    try:
        await sign_in.start()
        params = await signed_in(nanoidp, sign_in, "alice")
        _, state = sign_in.begin("/x")  # an attacker's own state, with alice's code from another sign-in
        with pytest.raises(SignInRefused) as stolen:
            await sign_in.finish({"code": params["code"], "state": state})
        assert stolen.value.reason == "token"
        _, state = sign_in.begin("/x")
        with pytest.raises(SignInRefused) as denied:
            await sign_in.finish({"error": "access_denied", "state": state})
        assert denied.value.reason == "denied"
    finally:
        await sign_in.aclose()


async def test_an_issuer_that_does_not_answer_or_names_another_is_refused(nanoidp: NanoIDP) -> None:
    down = PageSignIn(f"http://127.0.0.1:{free_port()}", callback())
    other = PageSignIn(nanoidp.issuer + "/", callback())  # its metadata says issuer without the slash
    try:
        with pytest.raises(SignInRefused) as unavailable:
            await down.start()
        assert unavailable.value.reason == "unavailable"
        with pytest.raises(SignInRefused) as mismatch:
            await other.start()
        assert mismatch.value.reason == "metadata"
    finally:
        await down.aclose()
        await other.aclose()


def test_discovery_urls_follow_rfc_8414_then_openid() -> None:
    assert discovery_urls("https://a.example") == [
        "https://a.example/.well-known/oauth-authorization-server",
        "https://a.example/.well-known/openid-configuration",
    ]
    assert discovery_urls("https://a.example/t1") == [
        "https://a.example/.well-known/oauth-authorization-server/t1",
        "https://a.example/.well-known/openid-configuration/t1",
        "https://a.example/t1/.well-known/openid-configuration",
    ]


# --- sealed: the sign-in travels in its state, any worker sharing the keys finishes it, once ----------------------


class FlakyStore:
    """A store of used states that cannot answer while ``down`` (as Redis restarting), else records in memory."""

    def __init__(self) -> None:
        self.used = MemoryUsedStates(100)
        self.down = False

    async def consume(self, key: str, expires_at: float) -> bool:
        if self.down:
            raise StoreUnavailable("down")
        return await self.used.consume(key, expires_at)


async def test_a_sealed_sign_in_begun_by_one_worker_finishes_on_another_once(nanoidp: NanoIDP) -> None:
    redirect = callback()
    client = nanoidp.register_client(redirect, confidential=True, scopes=["openid"])
    keys, store = [b"k" * 32], FlakyStore()  # what every worker shares: the state keys and the used states
    workers = [PageSignIn(nanoidp.issuer, redirect, client_id=client.client_id, client_secret=client.client_secret,
                          keys=keys, used_states=store) for _ in range(2)]  # fmt: skip
    first, second = workers
    try:
        for worker in workers:
            await worker.start()
        params = await signed_in(nanoidp, first, "alice", "/pages/deposit/7")
        assert not first._pending and params["state"].startswith("s1.")  # nothing kept in the process
        store.down = True  # the store cannot tell: refused, and the sign-in is not used up
        with pytest.raises(SignInRefused) as unavailable:
            await second.finish(params)
        assert unavailable.value.reason == "unavailable"
        store.down = False
        principal, return_to = await second.finish(params)
        assert principal.key == (nanoidp.issuer, "alice") and return_to == "/pages/deposit/7"
        for worker in workers:
            with pytest.raises(SignInRefused) as replayed:
                await worker.finish(params)
            assert replayed.value.reason == "state"

        params = await signed_in(nanoidp, first, "bob", "/pages/a")
        signed, _, tag = params["state"].rpartition(".")
        altered = signed.replace(signed.split(".")[3], "L3BhZ2VzL2I")  # another return page, the same tag
        other_key = PageSignIn(nanoidp.issuer, redirect, client_id=client.client_id, keys=[b"x" * 32],
                               used_states=store)  # fmt: skip
        other_key.metadata = first.metadata
        foreign = dict(await signed_in(nanoidp, other_key, "bob"))
        for state in (f"{altered}.{tag}", foreign["state"], "s1.a.9999999999.L2E.AAAA", "junk"):
            with pytest.raises(SignInRefused) as forged:
                await second.finish({**params, "state": state})
            assert forged.value.reason == "state"
        assert len(store.used) == 1  # forged states never reach the store
        assert (await second.finish(params))[0].key == (nanoidp.issuer, "bob")  # the real one is still good

        first.timeout = 0.0  # expires at once
        params = await signed_in(nanoidp, first, "alice")
        with pytest.raises(SignInRefused) as expired:
            await second.finish(params)
        assert expired.value.reason == "state" and len(store.used) == 2
    finally:
        for worker in workers:
            await worker.aclose()


def test_keys_and_used_states_go_together() -> None:
    with pytest.raises(ValueError, match="together"):
        PageSignIn("https://as.example", "https://app.example/cb", keys=[b"k" * 32])
    with pytest.raises(ValueError, match="together"):
        PageSignIn("https://as.example", "https://app.example/cb", used_states=MemoryUsedStates(1))
    with pytest.raises(ValueError, match="at least one"):
        PageSignIn("https://as.example", "https://app.example/cb", keys=[], used_states=MemoryUsedStates(1))
