"""The token attacks through two workers behind haproxy with Redis (issue 29: "Attacks, each a test ... one worker
and two behind haproxy with Redis"), over HTTP and WebSocket.

Two worker processes (``tests/helpers/auth_worker.py``, on the test's anyio backend) check every request's token
with a ``JWTVerifier`` against a real NanoIDP, with one ``MINIMCP_STATE_KEYS`` and one resource URL (the
balancer's), sharing a real ``redis-server``, behind a real ``haproxy`` running ``deploy/haproxy.cfg`` cut to two
workers (``tests/helpers/balancer.py``); each worker also listens for WebSocket, which ``deploy/haproxy.cfg``
routes an upgrade of ``/mcp`` to. One cluster per backend for the module; the tokens are made once per cluster.

Over HTTP every attack of ``tests/scenarios/test_auth_attacks.py`` is sent through the balancer as a 2026-07-28
``tools/call`` of ``whoami`` (a tool that logs each run), twice, so that haproxy's round robin hands it to each
worker once: both refuse it with the status and challenge one worker gives, no tool runs on either (their logs),
and alice's genuine token then runs ``whoami`` on both. Over WebSocket through haproxy: an upgrade without a
token and with a bad one is ``401`` with the challenge, a good token's connection is alice's in the tool, and a
request needing a scope the token lacks is the JSON-RPC error ``-32004`` while the connection goes on.

The workers fetch the issuer's keys again for an unknown ``kid`` at most once a second (``--key-refetch-interval
1``, 30 s by default) so that the authorization server stopped mid-module (then started again, same keys) is
asked by each worker whatever attack came before.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from minimcp import McpError, connect_websocket
from tests.helpers import balancer
from tests.helpers import nanoidp as idp
from tests.helpers.auth_e2e import (
    ALGORITHM,
    AUDIENCE,
    EXPIRED,
    MALFORMED,
    NOT_YET,
    OTHER_ISSUER,
    READ,
    TOO_LARGE,
    UNKNOWN_KEY,
    WRITE,
    Deployment,
    Outcome,
    alg_none,
    assert_refused_as,
    attempt,
    hmac_signed,
    issuer_key,
    now,
    public_key_pem,
    resigned,
    rogue_key,
)
from tests.helpers.balancer import AuthWorkers, started_once
from tests.helpers.http_modern import body, modern_headers
from tests.helpers.nanoidp import NanoIDP, free_port

httpx = pytest.importorskip("httpx")
pytest.importorskip("jwt", reason="the auth extra (pyjwt) is not installed")
pytest.importorskip("coredis", reason="the redis extra (coredis) is not installed")
pytest.importorskip("websockets", reason="the ws extra (websockets) is not installed")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module
second_nanoidp = idp.second_nanoidp  # another issuer
clusters = balancer.clusters  # one cluster per backend for the module (started on first use)

WAIT = 30  # seconds: generous bounds on a busy machine
REFETCH = 1.0  # seconds: the workers' auth_key_refetch_interval
RAN = "whoami ran for"  # what a worker logs each time whoami runs
CALL = body(1, "tools/call", {"name": "whoami", "arguments": {}})
CALL_HEADERS = modern_headers("tools/call", "whoami")


class Cluster(AuthWorkers):
    """Two authorizing workers with WebSocket listeners behind haproxy (:class:`AuthWorkers`), and the balancer's
    resource and tokens (:class:`Deployment`, each made once)."""

    def __init__(self, backend: str, tmp: pathlib.Path, idp: NanoIDP) -> None:
        super().__init__(backend, tmp, idp, websocket=True, key_refetch_interval=REFETCH)
        self.site = Deployment(idp, port=self.front)
        assert self.site.resource == self.url

    def runs(self) -> int:
        """How many times whoami has run, on either worker."""
        return sum(self.log(n).count(RAN) for n in range(2))


@pytest.fixture
def cluster(clusters: dict[str, Any], anyio_backend: str, nanoidp: NanoIDP,
            tmp_path_factory: pytest.TempPathFactory) -> Cluster:  # fmt: skip
    def make() -> Cluster:
        return Cluster(anyio_backend, tmp_path_factory.mktemp(f"attacks-{anyio_backend}"), nanoidp)

    return started_once(clusters, anyio_backend, make)


# --- helpers --------------------------------------------------------------------------------------------------------


async def on_both(cluster: Cluster, header: str | None, *, query: str = "") -> Outcome:
    """``header`` on a ``tools/call`` of whoami through haproxy, twice: once to each worker (round robin). Both
    answer alike; that answer."""
    first, second = [
        await attempt(cluster.url, header, query=query, message=CALL, headers=CALL_HEADERS) for _ in range(2)
    ]
    assert {first.worker, second.worker} == {"w1", "w2"}, (first.worker, second.worker)
    assert (first.status, first.challenge) == (second.status, second.challenge), (vars(first), vars(second))
    return first


async def refused_on_both(cluster: Cluster, token: str, description: str) -> None:
    assert_refused_as(await on_both(cluster, f"Bearer {token}"), description)


async def runs_on_both(cluster: Cluster, token: str) -> None:
    """``token`` runs whoami through haproxy on each worker, as alice."""
    workers = set()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        for _ in range(2):
            answer = await http.post(cluster.url, json=CALL, headers={**CALL_HEADERS, **bearer(token)})
            assert answer.status_code == 200, answer.text
            assert answer.json()["result"]["content"][0]["text"] == "alice", answer.text
            workers.add(answer.headers["x-mcp-worker"])
    assert workers == {"w1", "w2"}


@contextlib.asynccontextmanager
async def nothing_runs(cluster: Cluster) -> AsyncIterator[Deployment]:
    """Yields the cluster's resource and tokens; on the way out no tool has run on either worker, and alice's
    genuine token still runs whoami on each: the refusals were the attacks', not a broken cluster's."""
    before = cluster.runs()
    with anyio.fail_after(WAIT):
        yield cluster.site
        assert cluster.runs() == before
        await runs_on_both(cluster, cluster.site.token("alice"))
        assert cluster.runs() == before + 2


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- over HTTP: the header ------------------------------------------------------------------------------------------


async def test_no_token_is_401_with_the_metadata_and_no_error_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster):
        outcome = await on_both(cluster, None)
        assert outcome.status == 401
        assert set(outcome.challenge) == {"resource_metadata", "scope"}  # RFC 6750 3.1: no error code
        assert outcome.challenge["resource_metadata"] == cluster.public + "/.well-known/oauth-protected-resource/mcp"


async def test_a_malformed_header_is_401_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        token = site.token("alice")
        for header in ("Basic YWxpY2U6cGFzc3dvcmQ=", token, f"Bearer {token} {token}", "Bearer"):
            outcome = await on_both(cluster, header)
            assert outcome.status == 401, header
            assert outcome.challenge["error_description"] == MALFORMED


async def test_a_token_in_the_query_is_400_on_both_workers_even_beside_a_good_header(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        token = site.token("alice")
        for header in (None, f"Bearer {token}"):
            outcome = await on_both(cluster, header, query=f"?access_token={token}")
            assert outcome.status == 400
            assert outcome.challenge["error"] == "invalid_request"


async def test_an_oversized_token_is_refused_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        bloated = resigned(site.token("alice"), *issuer_key(site.idp), padding="x" * 9000)  # signed by the issuer
        await refused_on_both(cluster, bloated, TOO_LARGE)


# --- over HTTP: the signature ---------------------------------------------------------------------------------------


async def test_alg_none_is_refused_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        await refused_on_both(cluster, alg_none(site.token("alice")), ALGORITHM)


async def test_hmac_signed_with_the_issuers_public_key_is_refused_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        await refused_on_both(cluster, hmac_signed(site.token("alice"), public_key_pem(site.idp)), ALGORITHM)


async def test_a_key_the_issuer_never_published_is_refused_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        alice = site.token("alice")
        for kid in ("rogue-kid", "rogue-kid-2"):  # the second within the refetch interval: no fetch, same refusal
            await refused_on_both(cluster, resigned(alice, rogue_key(), kid), UNKNOWN_KEY)


# --- over HTTP: the claims ------------------------------------------------------------------------------------------


async def test_another_issuers_token_is_refused_on_both_workers(cluster: Cluster, second_nanoidp: NanoIDP) -> None:
    async with nothing_runs(cluster) as site:
        theirs = await anyio.to_thread.run_sync(second_nanoidp.token_for, "alice", [READ, WRITE], cluster.url)
        renamed = resigned(site.token("alice"), *issuer_key(site.idp), iss=second_nanoidp.issuer)
        await refused_on_both(cluster, theirs.access_token, UNKNOWN_KEY)  # not one of our issuer's keys
        await refused_on_both(cluster, renamed, OTHER_ISSUER)  # our issuer's key, another issuer's name


async def test_a_token_for_another_audience_is_refused_on_both_workers(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        elsewhere = site.token("alice", resource=f"http://127.0.0.1:{free_port()}/mcp")
        await refused_on_both(cluster, elsewhere, AUDIENCE)


async def test_an_expired_token_is_refused_on_both_workers_past_the_leeway(cluster: Cluster) -> None:
    key, kid = issuer_key(cluster.idp)
    alice = cluster.site.token("alice")
    async with nothing_runs(cluster):
        await refused_on_both(cluster, resigned(alice, key, kid, exp=now() - 300), EXPIRED)
    await runs_on_both(cluster, resigned(alice, key, kid, exp=now() - 5))  # inside the leeway: the clock refused


async def test_a_token_not_yet_valid_is_refused_on_both_workers_past_the_leeway(cluster: Cluster) -> None:
    key, kid = issuer_key(cluster.idp)
    alice = cluster.site.token("alice")
    async with nothing_runs(cluster):
        await refused_on_both(cluster, resigned(alice, key, kid, nbf=now() + 300, iat=now() + 300), NOT_YET)
    await runs_on_both(cluster, resigned(alice, key, kid, nbf=now() + 5))


# --- over HTTP: the authorization server down -----------------------------------------------------------------------


async def test_the_authorization_server_down_kept_keys_verify_on_both_workers_unknown_ones_are_503(
    cluster: Cluster,
) -> None:
    """NanoIDP stopped, then started again (same port, same keys): meanwhile alice's token (keys kept) goes on on
    both workers and a token whose key is not kept is refused 503 by both (never accepted)."""
    alice = cluster.site.token("alice")
    rogue = resigned(alice, rogue_key(), "rogue-kid-down")
    with anyio.fail_after(WAIT):
        await runs_on_both(cluster, alice)  # both workers hold the keys
        await anyio.to_thread.run_sync(cluster.idp.halt)
        try:
            with pytest.raises(httpx.TransportError):
                async with httpx.AsyncClient() as client:
                    await client.get(cluster.idp.metadata_url)
            await anyio.sleep(REFETCH)  # past any earlier refetch: each worker asks the stopped server now
            await runs_on_both(cluster, alice)
            before = cluster.runs()
            for _ in range(2):  # the fetch fails; then, within the interval, no fetch: still 503
                refused = await on_both(cluster, f"Bearer {rogue}")
                assert (refused.status, refused.challenge) == (503, {}), vars(refused)
            assert cluster.runs() == before
        finally:
            await anyio.to_thread.run_sync(cluster.idp.start)
    async with nothing_runs(cluster):
        await anyio.sleep(REFETCH)
        await refused_on_both(cluster, rogue, UNKNOWN_KEY)  # the server back: asked again, the key is not its own


# --- over WebSocket through haproxy ---------------------------------------------------------------------------------


async def upgrade(cluster: Cluster, header: str | None) -> Outcome:
    """An upgrade of ``/mcp`` at the balancer, twice: once to each worker's WebSocket listener. Both alike."""
    first, second = [await attempt(cluster.ws_url, header) for _ in range(2)]
    assert {first.worker, second.worker} == {"ws1", "ws2"}, (first.worker, second.worker)
    assert (first.status, first.challenge) == (second.status, second.challenge), (vars(first), vars(second))
    return first


async def test_a_websocket_upgrade_without_a_token_is_401_with_the_challenge_through_haproxy(cluster: Cluster) -> None:
    async with nothing_runs(cluster):
        outcome = await upgrade(cluster, None)
        assert outcome.status == 401
        assert set(outcome.challenge) == {"resource_metadata", "scope"}
        assert outcome.challenge["resource_metadata"] == cluster.public + "/.well-known/oauth-protected-resource/mcp"


async def test_a_websocket_upgrade_with_a_bad_token_is_401_through_haproxy(cluster: Cluster) -> None:
    async with nothing_runs(cluster) as site:
        key, kid = issuer_key(site.idp)
        alice = site.token("alice")
        for forged, description in (
            (alg_none(alice), ALGORITHM),
            (hmac_signed(alice, public_key_pem(site.idp)), ALGORITHM),
            (resigned(alice, key, kid, exp=now() - 300), EXPIRED),
            (site.token("alice", resource=f"http://127.0.0.1:{free_port()}/mcp"), AUDIENCE),
        ):
            assert_refused_as(await upgrade(cluster, f"Bearer {forged}"), description)


async def test_a_websocket_with_a_good_token_is_alices_in_the_tool_through_haproxy(cluster: Cluster) -> None:
    before = cluster.runs()
    with anyio.fail_after(WAIT):
        for _ in range(2):  # the fewest connections first: one to each listener
            async with connect_websocket(cluster.ws_url, headers=bearer(cluster.site.token("alice"))) as client:
                result = await client.call_tool("whoami", {})
                assert result.content[0].text == "alice"  # type: ignore[union-attr]
    assert cluster.runs() == before + 2
    assert all(cluster.log(n).count("whoami ran for alice") >= 1 for n in range(2))  # on each worker


async def test_a_websocket_request_lacking_a_scope_is_refused_and_the_connection_goes_on(cluster: Cluster) -> None:
    reader = cluster.site.token("alice", [READ])
    async with nothing_runs(cluster), connect_websocket(cluster.ws_url, headers=bearer(reader)) as client:
        with pytest.raises(McpError) as info:
            await client.call_tool("whoami", {})
        assert info.value.code == -32004
        data: Any = info.value.data
        assert data["requiredScopes"] == [WRITE]
        assert 'error="insufficient_scope"' in data["wwwAuthenticate"]
        await client.ping()  # the same connection answers on
        with pytest.raises(McpError) as again:
            await client.call_tool("whoami", {})
        assert again.value.code == -32004
