"""The booking example with ``--auth-issuer`` as two workers behind haproxy with Redis (docs/booking.md,
"Authorization": "Several workers"; issue 29: "Nothing completes for the wrong person, on any worker").

Two ``examples/booking.py`` processes (``--redis``, ``--worker-id``, ``--public-url`` of the balancer, one
pre-registered page client, one ``MINIMCP_STATE_KEYS``; on the test's anyio backend) check every request's
token against a real NanoIDP, behind a real ``haproxy`` running ``deploy/haproxy.cfg`` cut to two workers.
alice's 2025-11-25 session lives on one worker; her calendar page and her deposit page are opened on the
other one (as a balancer may send a browser anywhere): bob, signed in there, gets ``403`` and nothing
changes; alice completes the step there, her client is told once, and her retry (calendar) or her booking
(deposit) goes on.
"""

from __future__ import annotations

import os
import pathlib
import sys
import urllib.parse
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from minimcp import Accepted, UrlElicitationRequest, UrlElicitationRequired, connect_http
from tests.helpers import nanoidp as idp
from tests.helpers.balancer import TwoWorkers, stopped_at_end
from tests.helpers.nanoidp import NanoIDP

httpx = pytest.importorskip("httpx")
pytest.importorskip("jwt", reason="the auth extra (pyjwt) is not installed")
pytest.importorskip("coredis", reason="the redis extra (coredis) is not installed")

nanoidp = idp.nanoidp  # the fixture: one NanoIDP (alice, bob) for this module

BOOKING = pathlib.Path(__file__).resolve().parents[2] / "examples" / "booking.py"
KEYS = "c3" * 32  # one state key shared by both workers
WAIT = 30  # seconds: generous bounds on a busy machine
PERSON = ["bookings:read", "bookings:write"]


class Cluster(TwoWorkers):
    """Redis, two booking workers (w1, w2) with ``--auth-issuer`` on ``backend``, haproxy in front; all tracked."""

    def __init__(self, backend: str, tmp: pathlib.Path, server: NanoIDP) -> None:
        super().__init__(tmp)
        self.backend, self.idp = backend, server

    def start(self) -> None:
        """The workers' tokens must name the balancer's MCP URL (``--public-url`` + ``/mcp``); one page client."""
        page_client = self.idp.register_client(self.public + "/pages/callback", confidential=True, scopes=["openid"])
        assert page_client.client_secret is not None
        secret = page_client.client_secret
        self.launch(lambda n: [sys.executable, str(BOOKING), "--transport", "http", "--port", str(self.ports[n]),
                               "--redis", self.redis.url, "--worker-id", f"w{n + 1}", "--public-url", self.public,
                               "--auth-issuer", self.idp.issuer, f"--page-client-id={page_client.client_id}",
                               f"--page-client-secret={secret}",  # (one argument: it may begin with "-")
                               "--backend", self.backend,
                               "--elicitation-timeout", "60"], {**os.environ, "MINIMCP_STATE_KEYS": KEYS})  # fmt: skip


@pytest.fixture(scope="module")
def clusters(nanoidp: NanoIDP) -> Iterator[dict[str, Cluster]]:
    """One cluster per backend for the whole module (started on first use), stopped at its end."""
    with stopped_at_end() as made:
        yield made


@pytest.fixture
def cluster(clusters: dict[str, Cluster], anyio_backend: str, nanoidp: NanoIDP,
            tmp_path_factory: pytest.TempPathFactory) -> Cluster:  # fmt: skip
    if anyio_backend not in clusters:
        made = Cluster(anyio_backend, tmp_path_factory.mktemp(f"bookingauth-{anyio_backend}"), nanoidp)
        clusters[anyio_backend] = made
        made.start()
    return clusters[anyio_backend]


# --- helpers --------------------------------------------------------------------------------------------------------


async def token(cluster: Cluster, user: str) -> str:
    """``user``'s access token for the balancer's resource URL, by NanoIDP's code + PKCE flow (in a thread)."""
    got = await anyio.to_thread.run_sync(cluster.idp.token_for, user, PERSON, cluster.url)
    return got.access_token


async def signed_in(cluster: Cluster, browser: Any, page: str, user: str, n: int) -> None:
    """``user`` opens ``page`` on worker ``n``, is sent to sign in, and the callback comes back to worker ``n``."""
    went = await browser.get(page)
    assert went.status_code == 303, (went.status_code, went.text)
    back: str = await anyio.to_thread.run_sync(cluster.idp.sign_in_at, went.headers["location"], user)
    assert back.startswith(cluster.public + "/pages/callback?"), back
    done = await browser.get(cluster.on_worker(back, n))
    assert done.status_code == 303, (done.status_code, done.text)
    assert urllib.parse.urljoin(page, done.headers["location"]) == page


def holder(client: Any) -> int:
    """Which worker (0, 1) holds ``client``'s session, read off its id (``w1.…``, ``w2.…``) as haproxy does."""
    session_id: str = client.session.transport.session_id
    return ["w1", "w2"].index(session_id.split(".", 1)[0])


async def told_once(completed: list[str], step_id: str) -> None:
    with anyio.fail_after(WAIT):
        while not completed:  # noqa: ASYNC110 - filled by the client's reader
            await anyio.sleep(0.02)
    await anyio.sleep(0.3)  # a second notice would come now
    assert completed == [step_id]


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


# --- the calendar page of a 2025-11-25 session, completed on the other worker -------------------------------------


async def test_a_sessions_calendar_page_completes_on_the_other_worker_for_its_person_only(cluster: Cluster) -> None:
    alice = await token(cluster, "alice")
    completed: list[str] = []
    seen: list[str] = []
    other = -1  # the worker alice's session is not on (set once it is open)

    async def people_at_the_page(request: UrlElicitationRequest) -> Any:
        """alice's client asks her consent; her browser reaches the other worker, and so does bob's."""
        seen.append(request.url)
        page = cluster.on_worker(request.url, other)
        async with httpx.AsyncClient(timeout=WAIT) as bobs, httpx.AsyncClient(timeout=WAIT) as alices:
            await signed_in(cluster, bobs, page, "bob", other)
            for method in ("GET", "POST"):
                refused = await bobs.request(method, page)
                assert refused.status_code == 403 and "someone else" in refused.text, (method, refused.text)
            await signed_in(cluster, alices, page, "alice", other)
            shown = await alices.get(page)  # still waiting: bob authorized nothing
            assert shown.status_code == 200 and "Authorize calendar access" in shown.text
            done = await alices.post(page)
            assert done.status_code == 200 and "Calendar access is authorized" in done.text, done.text
            assert (await alices.post(page)).status_code == 404  # used
        return Accepted(None)

    with anyio.fail_after(120):
        async with connect_http(cluster.url, headers=bearer(alice), url_handler=people_at_the_page,
                                on_elicitation_complete=completed.append) as client:  # fmt: skip
            other = 1 - holder(client)  # alice's session is on one worker; the pages are opened on the other
            made = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            assert made.structured_content is not None
            arguments = {"booking_id": made.structured_content["booking_id"]}
            with pytest.raises(UrlElicitationRequired) as needs:
                await client.call_tool("add_to_calendar", arguments)
            [step] = needs.value.elicitations
            assert step.url == f"{cluster.public}/pages/authorize/{step.elicitation_id}"
            assert "~" in step.elicitation_id  # bound to alice: any worker with the state keys can check it
            # -32042 again, the same page; then the page (on the other worker), the notice and her retry
            added = await client.call_tool_with_consent("add_to_calendar", arguments, completion_timeout=WAIT)
            assert added.structured_content is not None and added.structured_content["status"] == "added", added
            assert seen == [step.url]
            await told_once(completed, step.elicitation_id)  # by the worker holding her session


# --- a deposit page, paid on the other worker -----------------------------------------------------------------------


async def test_a_deposit_page_is_paid_on_the_other_worker_by_its_person_only(cluster: Cluster) -> None:
    alice = await token(cluster, "alice")
    completed: list[str] = []
    asked: list[str] = []

    async def consent(request: UrlElicitationRequest) -> Any:
        asked.append(request.url)
        return Accepted(None)

    with anyio.fail_after(120):
        async with (
            connect_http(cluster.url, headers=bearer(alice), url_handler=consent,
                         on_elicitation_complete=completed.append) as client,
            httpx.AsyncClient(timeout=WAIT) as bobs,
            httpx.AsyncClient(timeout=WAIT) as alices,
        ):  # fmt: skip
            other = 1 - holder(client)
            made = await client.call_tool("book_table", {"date": "2025-12-26", "party_size": 8})
            found = made.structured_content
            assert found is not None and found["status"] == "deposit_pending", made
            step_id, arguments = found["elicitation_id"], {"booking_id": found["booking_id"]}
            assert asked == [f"{cluster.public}/pages/deposit/{step_id}"] and "~" in step_id

            page = cluster.on_worker(asked[0], other)
            await signed_in(cluster, bobs, page, "bob", other)
            for method in ("GET", "POST"):
                refused = await bobs.request(method, page)
                assert refused.status_code == 403 and "someone else" in refused.text, (method, refused.text)
            status = await client.call_tool("booking_status", arguments)
            assert status.structured_content is not None and status.structured_content["status"] == "deposit_pending"

            await signed_in(cluster, alices, page, "alice", other)
            shown = await alices.get(page)
            assert shown.status_code == 200 and "Pay the deposit" in shown.text
            paid = await alices.post(page)
            assert paid.status_code == 200 and "is paid" in paid.text, paid.text
            await told_once(completed, step_id)
            status = await client.call_tool("booking_status", arguments)
            assert status.structured_content is not None and status.structured_content["status"] == "booked"
