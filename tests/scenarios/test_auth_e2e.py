"""Authorization end to end (issue 29): a real NanoIDP issues the tokens, a real minimcp server checks them.

The server is served on a loopback port (``serve_http``, ``serve_websocket``) whose URL is the resource the
tokens name (``aud``); its :class:`~minimcp.auth.jwt.JWTVerifier` knows only the issuer and finds the keys
through NanoIDP's metadata (one run asks NanoIDP's ``/introspect`` instead). Covered: alice's token calls a
tool and ``ctx.auth`` is her with the scopes granted, on a handshake session, on 2026-07-28 POSTs with
``input_required`` and a retry, and over WebSocket; bob's token on alice's session (404) and on alice's
``requestState`` (-32602, nothing runs, her retry still works); a refreshed token of alice keeps both.
The attacks are in tests/scenarios/test_auth_attacks.py, the official SDK's OAuth client in
tests/peers/test_oauth_sdk.py.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from minimcp import Accepted, ElicitationRequest, connect_http, connect_websocket
from minimcp.wire import errors
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import READ, SCOPES, TIMEOUT, WRITE, Bearer, Deployment, build
from tests.helpers.http import httpx, req
from tests.helpers.http_modern import Modern, accept, complete_text, error_of, input_required
from tests.helpers.nanoidp import NanoIDP

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module


@pytest.fixture(scope="module")
def site(nanoidp: NanoIDP) -> Deployment:
    return Deployment(nanoidp)


def http() -> Any:
    return httpx.AsyncClient(timeout=httpx.Timeout(10, read=None))


def text_of(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


def who(response: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(text_of(response))
    return found


async def tool_call(modern: Modern, token: str, name: str, arguments: dict[str, Any], **retry: Any) -> Any:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if retry:
        params["requestState"], params["inputResponses"] = retry["state"], retry["responses"]
    return await modern.request("tools/call", params, authorization=f"Bearer {token}")


async def retry_book(modern: Modern, token: str, room: str, state: str, key: str, name: str) -> Any:
    """The retry of ``book`` for ``room``: its ``requestState`` and the name as the answer to ``key``."""
    return await tool_call(modern, token, "book", {"room": room}, state=state, responses={key: accept(name=name)})


async def answer_al(request: ElicitationRequest) -> Accepted[dict[str, str]]:
    return Accepted({"name": "Al"})


# --- alice, as granted ----------------------------------------------------------------------------


async def test_alices_token_calls_a_tool_on_a_handshake_session_and_ctx_auth_is_alice(site: Deployment) -> None:
    token = site.token("alice")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url, http() as client:
            alice = Bearer(client, url, token)
            await alice.initialize()
            assert who(await alice.call(req(1, "tools/call", {"name": "whoami", "arguments": {}}))) == {
                "iss": site.idp.issuer,
                "sub": "alice",
                "scopes": [READ, WRITE],
                "client_id": site.idp.client.client_id,
            }
    assert ran.events == ["whoami"]


async def test_alice_books_on_2026_07_28_through_input_required_and_a_retry(site: Deployment) -> None:
    token = site.token("alice")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url, http() as client:
            modern = Modern(client, url)
            asked = await tool_call(modern, token, "book", {"room": "7"})
            assert asked.status_code == 200, asked.text
            key, question, state = input_required(asked.json())
            assert question["params"]["message"] == "Your name?"
            done = await retry_book(modern, token, "7", state, key, "Al")
            assert done.status_code == 200, done.text
            assert complete_text(done.json()) == "alice booked 7 for Al"
            whoami = await tool_call(modern, token, "whoami", {})
            assert json.loads(complete_text(whoami.json()))["sub"] == "alice"
    assert ran.events[-2:] == ["booked 7", "whoami"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_minimcps_client_books_over_http_with_alices_token(site: Deployment, era: str) -> None:
    token = site.token("alice")
    server, _ = build()
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, site.authorization(site.verifier())) as url,
            connect_http(url, headers={"Authorization": f"Bearer {token}"}, era=era, elicitation_handler=answer_al)
            as client,
        ):
            result = await client.call_tool("book", {"room": "8"})
            assert result.content[0].text == "alice booked 8 for Al"  # type: ignore[union-attr]


async def test_alice_books_over_websocket_and_the_connection_is_hers(site: Deployment) -> None:
    token = site.token("alice")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with (
            site.serving(server, site.authorization(site.verifier()), "websocket") as url,
            connect_websocket(url, headers={"Authorization": f"Bearer {token}"}, elicitation_handler=answer_al)
            as client,
        ):
            found = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            assert (found["iss"], found["sub"], found["scopes"]) == (site.idp.issuer, "alice", [READ, WRITE])
            result = await client.call_tool("book", {"room": "9"})
            assert result.content[0].text == "alice booked 9 for Al"  # type: ignore[union-attr]
            (connection,) = server.connections
            assert connection.principal is not None
            assert connection.principal.key == (site.idp.issuer, "alice")
    assert ran.events == ["whoami", "book 9", "booked 9"]


async def test_introspection_at_nanoidp_stands_for_the_jwt_verifier(site: Deployment) -> None:
    token, elsewhere = site.token("alice"), site.token("alice", resource="http://127.0.0.1:9/other")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.introspection())) as url, http() as client:
            alice = Bearer(client, url, token)
            await alice.initialize()
            found = who(await alice.call(req(1, "tools/call", {"name": "whoami", "arguments": {}})))
            assert (found["iss"], found["sub"], found["scopes"]) == (site.idp.issuer, "alice", [READ, WRITE])
            for bad, reason in [
                ("not-a-token-nanoidp-knows", "the token is not active"),
                (elsewhere, "the token was not issued for this resource"),
            ]:
                refused = await Bearer(client, url, bad).post(req(0, "initialize", {}))
                assert refused.status_code == 401, refused.text
                assert f'error_description="{reason}"' in refused.headers["www-authenticate"]
    assert ran.events == ["whoami"]


# --- bob on what is alice's -----------------------------------------------------------------------


async def test_bobs_token_on_alices_session_is_404_and_alice_goes_on(site: Deployment) -> None:
    alice_token, bob_token = site.token("alice"), site.token("bob")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url, http() as client:
            alice = Bearer(client, url, alice_token)
            await alice.initialize()
            bob = Bearer(client, url, bob_token)
            bob.session_id, bob.version = alice.session_id, alice.version
            stolen = await bob.post(req(1, "tools/call", {"name": "whoami", "arguments": {}}))
            assert stolen.status_code == 404, stolen.text
            async with bob.get() as stream:
                assert stream.status_code == 404
            assert ran.events == []
            assert who(await alice.call(req(2, "tools/call", {"name": "whoami", "arguments": {}})))["sub"] == "alice"
    assert ran.events == ["whoami"]


async def test_bobs_token_on_alices_request_state_is_refused_runs_nothing_and_alice_retries(site: Deployment) -> None:
    alice_token, bob_token = site.token("alice"), site.token("bob")
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url, http() as client:
            modern = Modern(client, url)
            key, _, state = input_required((await tool_call(modern, alice_token, "book", {"room": "5"})).json())
            assert ran.events == ["book 5"]
            stolen = await retry_book(modern, bob_token, "5", state, key, "B")
            assert error_of(stolen, 400, errors.INVALID_PARAMS)["error"]["data"] == {"reason": "invalid_request_state"}
            assert ran.events == ["book 5"]  # nothing ran for bob: no replay, no answer delivered
            done = await retry_book(modern, alice_token, "5", state, key, "Al")
            assert complete_text(done.json()) == "alice booked 5 for Al"
    assert ran.events == ["book 5", "booked 5"]


async def test_a_refreshed_token_of_alice_keeps_her_session_and_her_request_state(site: Deployment) -> None:
    first = await anyio.to_thread.run_sync(site.idp.token_for, "alice", SCOPES, site.resource)
    assert first.refresh_token is not None
    server, ran = build()
    with anyio.fail_after(TIMEOUT):
        async with site.serving(server, site.authorization(site.verifier())) as url, http() as client:
            alice = Bearer(client, url, first.access_token)
            await alice.initialize()
            modern = Modern(client, url)
            key, _, state = input_required((await tool_call(modern, first.access_token, "book", {"room": "4"})).json())

            second = await anyio.to_thread.run_sync(site.idp.refresh, first.refresh_token)
            assert second.access_token != first.access_token
            alice.token = second.access_token
            assert who(await alice.call(req(1, "tools/call", {"name": "whoami", "arguments": {}})))["sub"] == "alice"
            done = await retry_book(modern, second.access_token, "4", state, key, "Al")
            assert complete_text(done.json()) == "alice booked 4 for Al"
    assert ran.events == ["book 4", "whoami", "booked 4"]
