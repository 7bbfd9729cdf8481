"""Authorization with several workers behind a real balancer (issue 29, "Several workers"; "Nothing completes
for the wrong person, on any worker").

Two worker processes (``tests/helpers/auth_worker.py``, on the test's anyio backend) check every request's
token with a ``JWTVerifier`` against a real NanoIDP, all with one ``MINIMCP_STATE_KEYS`` and one resource URL
(the balancer's), sharing a real ``redis-server`` (used states and bus), behind a real ``haproxy`` running
``deploy/haproxy.cfg`` cut to two workers (``tests/helpers/balancer.py``). Tokens come from NanoIDP's whole
code + PKCE flow; the pages sign the person in there (one pre-registered client for both workers).

(a) a 2025-11-25 session of alice: bob's token on its id is 404 on either worker, alice's refreshed token
goes on; (b) a 2026-07-28 call parked on w1: bob's retry with alice's state is -32602 on either worker and
runs nothing, alice's retry on w2 then finishes; (c) a URL step made for alice on w1: bob completing it from
w2 is refused, alice completing it from w2 reaches her client once; (d) a page sign-in begun on w1 finishes
on w2, and its callback replayed is refused on both.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import minimcp
from minimcp import Accepted, connect_http
from tests.helpers import nanoidp as idp
from tests.helpers.balancer import AuthWorkers, stopped_at_end
from tests.helpers.http import Raw, req
from tests.helpers.http_modern import Modern, accept, input_required
from tests.helpers.nanoidp import NanoIDP

httpx = pytest.importorskip("httpx")
pytest.importorskip("jwt", reason="the auth extra (pyjwt) is not installed")
pytest.importorskip("coredis", reason="the redis extra (coredis) is not installed")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

WAIT = 30  # seconds: generous bounds on a busy machine
SCOPE = "bookings:write"


Cluster = AuthWorkers  # Redis, two authorizing workers (w1, w2) and haproxy in front; all tracked


@pytest.fixture(scope="module")
def clusters(nanoidp: NanoIDP) -> Iterator[dict[str, Cluster]]:
    """One cluster per backend for the whole module (started on first use), stopped at its end."""
    with stopped_at_end() as made:
        yield made


@pytest.fixture
def cluster(clusters: dict[str, Cluster], anyio_backend: str, nanoidp: NanoIDP,
            tmp_path_factory: pytest.TempPathFactory) -> Cluster:  # fmt: skip
    if anyio_backend not in clusters:
        made = Cluster(anyio_backend, tmp_path_factory.mktemp(f"scaleauth-{anyio_backend}"), nanoidp)
        clusters[anyio_backend] = made
        made.start()
    return clusters[anyio_backend]


# --- helpers --------------------------------------------------------------------------------------------------------


async def tokens(cluster: Cluster, user: str) -> idp.Tokens:
    """``user``'s tokens for the balancer's resource URL, by NanoIDP's code + PKCE flow (in a thread)."""
    return await anyio.to_thread.run_sync(cluster.idp.token_for, user, [SCOPE, "offline_access"], cluster.url)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


class Bearer(Raw):
    """A hand-driven 2025-11-25 session whose requests carry ``token``."""

    def __init__(self, http: Any, url: str, token: str) -> None:
        super().__init__(http, url)
        self.token = token

    def headers(self, **extra: str) -> dict[str, str]:
        return super().headers(**bearer(self.token), **extra)


def text_of(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


def count(cluster: Cluster, text: str) -> int:
    return sum(cluster.log(n).count(text) for n in range(2))


async def wait_for(cluster: Cluster, text: str, at_least: int) -> None:
    with anyio.fail_after(WAIT):
        while count(cluster, text) < at_least:  # noqa: ASYNC110 - the workers' logs, written by other processes
            await anyio.sleep(0.05)


async def signed_in_callback(cluster: Cluster, http: Any, page: str, user: str) -> str:
    """The callback URL (at the balancer) after ``user`` signs in from ``page`` (a page that begins a sign-in)."""
    begun = await http.get(page)
    assert begun.status_code == 302, begun.text
    callback: str = await anyio.to_thread.run_sync(cluster.idp.sign_in_at, begun.headers["location"], user)
    assert callback.startswith(cluster.public + "/pages/callback?"), callback
    return callback


# --- (a) a 2025-11-25 session belongs to its person on every worker ----------------------------------------------


async def test_another_persons_token_on_a_session_is_404_on_every_worker_and_the_owner_goes_on(
    cluster: Cluster,
) -> None:
    alice_tokens, bob_tokens = await tokens(cluster, "alice"), await tokens(cluster, "bob")
    with anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as http:
            alice = Bearer(http, cluster.worker_url(0), alice_tokens.access_token)
            await alice.initialize()
            assert alice.session_id is not None and alice.session_id.startswith("w1.")
            alice.url = cluster.url  # from now on through haproxy, which routes the session to w1 by its id
            assert text_of(await alice.call(req(1, "tools/call", {"name": "whoami", "arguments": {}}))) == "alice"
            for url in (cluster.url, cluster.worker_url(0), cluster.worker_url(1)):
                bob = Bearer(http, url, bob_tokens.access_token)
                bob.session_id, bob.version = alice.session_id, alice.version
                stolen = await bob.post(req(2, "tools/call", {"name": "whoami", "arguments": {}}))
                assert stolen.status_code == 404, (url, stolen.status_code, stolen.text)
            assert alice_tokens.refresh_token is not None
            refreshed = await anyio.to_thread.run_sync(
                lambda: cluster.idp.refresh(alice_tokens.refresh_token or "", resource=cluster.url)
            )
            assert refreshed.access_token != alice.token
            alice.token = refreshed.access_token  # other bytes, the same (iss, sub): the same session
            assert text_of(await alice.call(req(3, "tools/call", {"name": "whoami", "arguments": {}}))) == "alice"


# --- (b) a 2026-07-28 state carries its person, on every worker ---------------------------------------------------


async def test_a_retry_with_another_persons_state_is_refused_on_every_worker_and_the_owner_continues_on_w2(
    cluster: Cluster,
) -> None:
    alice_token, bob_token = (await tokens(cluster, "alice")).access_token, (await tokens(cluster, "bob")).access_token
    with anyio.fail_after(60):
        async with (
            httpx.AsyncClient(timeout=WAIT, headers=bearer(alice_token)) as alice_http,
            httpx.AsyncClient(timeout=WAIT, headers=bearer(bob_token)) as bob_http,
        ):
            alice = [Modern(alice_http, cluster.worker_url(n)) for n in range(2)]
            bob = [Modern(bob_http, cluster.worker_url(n)) for n in range(2)]
            key, entry, state = input_required(await alice[0].call("ask", {"topic": "t"}))  # parked on w1
            assert entry["method"] == "elicitation/create"
            started, finished = count(cluster, "ask started for"), count(cluster, "ask finished for")
            retry = {"name": "ask", "arguments": {"topic": "t"}, "inputResponses": {key: accept(go=True)},
                     "requestState": state}  # fmt: skip
            for worker in bob:
                refused = await worker.request("tools/call", retry)
                assert refused.status_code == 400, refused.text
                error = refused.json()["error"]
                assert error["code"] == -32602 and error["data"]["reason"] == "invalid_request_state", error
            assert (count(cluster, "ask started for"), count(cluster, "ask finished for")) == (started, finished)
            assert "ask started for bob" not in cluster.log(0) + cluster.log(1)

            dropped = cluster.log(0).count("dropped here")
            done = await alice[1].call("ask", {"topic": "t"}, responses={key: accept(go=True)}, state=state)
            assert done["result"]["resultType"] == "complete", done
            assert done["result"]["content"][0]["text"].endswith("for alice")
            assert cluster.log(1).count("ask finished for alice") >= 1
            with anyio.fail_after(10):  # w1 hears on the bus that its parked copy continued on w2
                while cluster.log(0).count("dropped here") <= dropped:  # noqa: ASYNC110 - another process's log
                    await anyio.sleep(0.05)
            assert "ask finished for bob" not in cluster.log(0) + cluster.log(1)


# --- (c) a URL step completes for its own person only, from any worker ---------------------------------------------


async def test_a_url_step_made_for_alice_on_w1_is_refused_to_bob_from_w2_and_completes_for_alice_once(
    cluster: Cluster,
) -> None:
    alice_token = (await tokens(cluster, "alice")).access_token
    asked: list[str] = []
    completed: list[str] = []

    async def consent(request: minimcp.UrlElicitationRequest) -> Any:
        asked.append(request.url)
        return Accepted(None)

    with anyio.fail_after(90):
        async with (
            connect_http(cluster.worker_url(0), headers=bearer(alice_token), url_handler=consent,
                         on_elicitation_complete=completed.append) as client,
            httpx.AsyncClient(timeout=WAIT) as browser,
        ):  # fmt: skip
            made = await client.call_tool("pay", {})
            step_id = made.content[0].text  # type: ignore[union-attr]
            [page] = asked
            assert page == f"{cluster.public}/pages/step/{step_id}" and "~" in step_id  # bound to alice

            callback = await signed_in_callback(cluster, browser, cluster.on_worker(page, 1), "bob")
            refused = await browser.get(cluster.on_worker(callback, 1))
            assert refused.status_code == 403 and refused.text == "this step is not for bob", refused.text

            # alice opens the page on w1 and the sign-in's callback reaches w2, which completes the step.
            callback = await signed_in_callback(cluster, browser, cluster.on_worker(page, 0), "alice")
            done = await browser.get(cluster.on_worker(callback, 1))
            assert done.status_code == 200 and done.text == "completed for alice", done.text
            with anyio.fail_after(WAIT):
                while not completed:  # noqa: ASYNC110 - filled by the client's reader
                    await anyio.sleep(0.02)
            await anyio.sleep(0.3)  # a second notice would come now
            assert completed == [step_id]


# --- (d) a page sign-in begun on one worker finishes on the other, once -------------------------------------------


async def test_a_page_sign_in_begun_on_w1_finishes_on_w2_and_a_replay_is_refused_on_both(cluster: Cluster) -> None:
    with anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=WAIT) as browser:
            callback = await signed_in_callback(cluster, browser, cluster.base(0) + "/pages/signin", "alice")
            state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))["state"]
            assert state.startswith("s1.")  # the sign-in travels in it (nothing kept on w1)
            done = await browser.get(cluster.on_worker(callback, 1))
            assert done.status_code == 200 and done.text == "signed in: alice", done.text
            for n in (1, 0):
                replayed = await browser.get(cluster.on_worker(callback, n))
                assert replayed.status_code == 400 and replayed.text == "sign-in refused: state", (n, replayed.text)
            # A state altered on its way (another return page) is refused before the store is asked.
            forged = callback.replace(state, state.replace(state.split(".")[3], "L3BhZ2VzL290aGVy"))
            assert (await browser.get(cluster.on_worker(forged, 1))).status_code == 400
            assert count(cluster, "sign-in refused: state") >= 3
