"""Several workers behind a real load balancer (issue 18, "Tested for real").

Three worker processes of ``examples/booking.py --transport http`` (on the test's anyio backend,
``--backend``), sharing a real ``redis-server`` and one ``MINIMCP_STATE_KEYS``, each with its own
``--worker-id``, behind a real ``haproxy`` running ``deploy/haproxy.cfg`` (the placeholder ports
replaced by free loopback ports). Every binary is Debian's, installed on first use when missing
(``tests/helpers/chromium.py``'s ``ensure_installed``); every process is tracked and stopped in teardown.

Scenarios, through the balancer, with our client (``connect_http``) and the official SDK client
(``mcp``): (a) 2025-11-25 sessions with a form question finish; (b) a 2026-07-28 retry on another
worker finishes, the first worker drops its parked copy, and the same state is refused by a third;
(c) a deposit paid on a worker other than the session's: its notice arrives once; (d)
``booking_status`` / ``confirm_deposit`` from every worker; (e) a worker killed mid-question: the
2025-11-25 client gets a clean "session ended" (HTTP 404), a 2026-07-28 call finishes elsewhere;
(f) Redis restarted: later completions arrive; (g) other balancer setups: nginx with
``deploy/nginx.conf`` and haproxy learning stickiness (``deploy/haproxy-learned.cfg``) work, the
common ``hash $http_mcp_session_id`` recipe does not (the negative control).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

import minimcp
from minimcp import Accepted, connect_http
from tests.helpers.balancer import binary, render, stop, stopped_at_end, wait_listening
from tests.helpers.http_modern import Modern, accept, input_required
from tests.helpers.redis_server import RedisProcess, free_port

httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp", reason="the official MCP SDK (package 'mcp') is not installed")
mcp_types = pytest.importorskip("mcp.types")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BOOKING = ROOT / "examples" / "booking.py"
KEYS = "5c" * 32  # one sealing key shared by every worker
WAIT = 30  # seconds: generous bounds on a busy machine
FULL = {"date": "2025-12-25", "party_size": 2}  # a full day: the form question
DEPOSIT = {"date": "2025-12-26", "party_size": 8}  # a deposit: the URL question
ALTERNATIVE = {"accept_alternative": True, "date": "2025-12-26"}


class Cluster:
    """Redis, three booking workers (w1..w3) on ``backend``, and a balancer in front; all tracked."""

    def __init__(self, backend: str, tmp: pathlib.Path) -> None:
        self.backend = backend
        self.tmp = tmp
        self.redis = RedisProcess()
        self.front = free_port()
        self.ports = [free_port() for _ in range(3)]
        self.workers: list[subprocess.Popen[bytes] | None] = [None, None, None]
        self.balancers: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.front}/mcp"

    def worker_url(self, n: int) -> str:
        return f"http://127.0.0.1:{self.ports[n]}/mcp"

    def log(self, n: int) -> str:
        return (self.tmp / f"w{n + 1}.log").read_text(errors="replace")

    def start(self) -> None:
        self.redis.start()
        for n in range(3):
            self.start_worker(n, wait=False)
        for n in range(3):
            self.wait_worker(n)
        self.haproxy("haproxy.cfg", self.front)

    def start_worker(self, n: int, *, wait: bool = True) -> None:
        argv = [sys.executable, str(BOOKING), "--transport", "http", "--port", str(self.ports[n]),
                "--redis", self.redis.url, "--worker-id", f"w{n + 1}", "--backend", self.backend,
                "--public-url", f"http://127.0.0.1:{self.front}", "--elicitation-timeout", "20"]  # fmt: skip
        env = {**os.environ, "MINIMCP_STATE_KEYS": KEYS, "PYTHONPATH": str(ROOT)}
        with (self.tmp / f"w{n + 1}.log").open("ab") as log:
            self.workers[n] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=log, env=env)  # fmt: skip
        if wait:
            self.wait_worker(n)

    def wait_worker(self, n: int) -> None:
        process = self.workers[n]
        assert process is not None
        deadline = time.monotonic() + 60
        while "mcp: http://" not in self.log(n):
            assert process.poll() is None, f"worker w{n + 1} exited:\n{self.log(n)}"
            assert time.monotonic() < deadline, f"worker w{n + 1} did not start:\n{self.log(n)}"
            time.sleep(0.05)

    def kill_worker(self, n: int) -> None:
        process = self.workers[n]
        assert process is not None
        process.kill()
        process.wait()

    def haproxy(self, config: str, front: int) -> subprocess.Popen[bytes]:
        path = self.tmp / f"{front}-{config}"
        path.write_text(render((DEPLOY / config).read_text(), front, self.ports))
        with (self.tmp / f"haproxy-{front}.log").open("ab") as log:
            process = subprocess.Popen([binary("haproxy", "haproxy"), "-db", "-f", str(path)],
                                       stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
        self.balancers.append(process)
        wait_listening(front, process, "haproxy")
        return process

    def nginx(self, config_text: str, front: int) -> subprocess.Popen[bytes]:
        prefix = self.tmp / f"nginx-{front}"
        prefix.mkdir()
        path = prefix / "nginx.conf"
        path.write_text(render(config_text, front, self.ports))
        with (prefix / "stderr.log").open("ab") as log:
            process = subprocess.Popen([binary("nginx", "nginx"), "-p", str(prefix), "-c", str(path),
                                        "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
        self.balancers.append(process)
        wait_listening(front, process, "nginx")
        return process

    def stop(self) -> None:
        for process in [*self.balancers, *self.workers]:
            stop(process)
        self.redis.stop()


@contextlib.contextmanager
def running(backend: str) -> Iterator[Cluster]:
    with tempfile.TemporaryDirectory(prefix="minimcp-scaleout-") as tmp:
        cluster = Cluster(backend, pathlib.Path(tmp))
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[str, Cluster]]:
    """One cluster per backend for the whole module (started on first use), stopped at its end."""
    with stopped_at_end() as made:
        yield made


@pytest.fixture
def cluster(clusters: dict[str, Cluster], anyio_backend: str, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    if anyio_backend not in clusters:
        made = Cluster(anyio_backend, tmp_path_factory.mktemp(f"cluster-{anyio_backend}"))
        clusters[anyio_backend] = made
        made.start()
    return clusters[anyio_backend]


# --- helpers --------------------------------------------------------------------------------------------------------


async def form_answer(request: minimcp.ElicitationRequest) -> Any:
    assert "2025-12-25" in request.message
    return Accepted(ALTERNATIVE)


async def official_form_answer(context: Any, params: Any) -> Any:
    assert "2025-12-25" in params.message
    return mcp_types.ElicitResult(action="accept", content=ALTERNATIVE)


def booked_on_the_alternative(structured: dict[str, Any] | None) -> None:
    assert structured is not None and structured["status"] == "booked", structured
    assert structured["date"] == "2025-12-26"


def session_id(client: minimcp.Client) -> str:
    sid: str = client.session.transport.session_id  # type: ignore[attr-defined]
    return sid


async def served_by(http: Any, method: str, url: str) -> tuple[Any, str]:
    """One request through haproxy on a fresh connection: (the response, the worker that answered)."""
    response = await http.request(method, url, headers={"connection": "close"})
    return response, response.headers["x-mcp-worker"]


async def pay_elsewhere(cluster: Cluster, url: str, owner: str) -> str:
    """Pay a deposit page through haproxy on a worker other than ``owner``: the worker that took the payment."""
    async with httpx.AsyncClient() as http:
        for _ in range(6):
            page, shown_by = await served_by(http, "GET", url)
            assert page.status_code == 200, page.text
            if f"w{int(shown_by[1:]) % 3 + 1}" != owner:  # round robin: the next request goes to the next worker
                paid, paid_by = await served_by(http, "POST", url)
                assert paid.status_code == 200 and "Deposit paid" in paid.text, paid.text
                assert paid_by != owner
                return str(paid_by)
    raise AssertionError("round robin never moved off the owner")


async def wait_for_log(cluster: Cluster, n: int, text: str, count: int = 1, timeout: float = WAIT) -> None:
    with anyio.fail_after(timeout):
        while cluster.log(n).count(text) < count:  # noqa: ASYNC110 - another process writes it
            await anyio.sleep(0.05)


def continued(cluster: Cluster) -> int:
    """How many parked 2026-07-28 calls the workers dropped because their retry finished on another worker."""
    return sum(cluster.log(n).count("dropped here") for n in range(3))


async def wait_until_continued(cluster: Cluster, count: int) -> None:
    with anyio.fail_after(WAIT):
        while continued(cluster) < count:  # noqa: ASYNC110 - the workers' logs, written by other processes
            await anyio.sleep(0.05)
    assert continued(cluster) == count


# --- (a) 2025-11-25 sessions with a form question, through haproxy ---------------------------------------------------


async def test_2025_sessions_with_a_form_question_finish_through_haproxy(cluster: Cluster) -> None:
    owners = []
    with anyio.fail_after(60):
        for _ in range(3):  # initialize goes round robin: one session on each worker
            async with connect_http(cluster.url, elicitation_handler=form_answer) as client:
                owners.append(session_id(client).split(".", 1)[0])
                result = await client.call_tool("book_table", FULL)
                booked_on_the_alternative(result.structured_content)
                assert result.structured_content is not None, result
                again = await client.call_tool(
                    "booking_status", {"booking_id": result.structured_content["booking_id"]}
                )
                assert again.structured_content is not None, again
                assert again.structured_content["status"] == "booked"
        assert sorted(owners) == ["w1", "w2", "w3"]
        for _ in range(3):  # the official client, legacy handshake
            async with mcp.Client(cluster.url, mode="legacy", elicitation_callback=official_form_answer) as client:
                assert client.protocol_version == "2025-11-25"
                result = await client.call_tool("book_table", FULL)
                assert not result.is_error
                booked_on_the_alternative(result.structured_content)


# --- (b) 2026-07-28: a retry on another worker finishes there; the same state again is refused -----------------


async def test_2026_retry_on_another_worker_finishes_and_the_state_is_single_use(cluster: Cluster) -> None:
    with anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=WAIT) as http:
            on = [Modern(http, cluster.worker_url(n)) for n in range(3)]
            key, entry, state = input_required(await on[0].call("book_table", FULL))
            assert entry["method"] == "elicitation/create"
            before = cluster.log(0).count("continued on worker")
            done = await on[1].call("book_table", FULL, responses={key: accept(**ALTERNATIVE)}, state=state)
            assert done["result"]["resultType"] == "complete"
            booked_on_the_alternative(done["result"]["structuredContent"])
            # w1 hears on the bus that its parked copy continued on w2, and drops it.
            await wait_for_log(cluster, 0, "continued on worker w2: dropped here", before + 1, timeout=10)
            again = {"name": "book_table", "arguments": FULL, "inputResponses": {key: accept(**ALTERNATIVE)},
                     "requestState": state}  # fmt: skip
            refused = await on[2].request("tools/call", again)  # the same state on a third worker
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602, refused.text
            assert refused.json()["error"]["data"]["reason"] == "request_state_used"
            booking_id = done["result"]["structuredContent"]["booking_id"]
            status = await on[0].call("booking_status", {"booking_id": booking_id})
            assert status["result"]["structuredContent"]["status"] == "booked"  # nothing undone on w1

        # Through haproxy: each POST of a 2026-07-28 call goes round robin, so every retry lands on another worker,
        # and the worker that parked the first round says it dropped its copy.
        before = continued(cluster)
        async with connect_http(cluster.url, era="modern", elicitation_handler=form_answer) as client:
            for _ in range(2):
                result = await client.call_tool("book_table", FULL)
                booked_on_the_alternative(result.structured_content)
        await wait_until_continued(cluster, before + 2)
        async with mcp.Client(cluster.url, mode="auto", elicitation_callback=official_form_answer) as official:
            assert official.protocol_version == "2026-07-28"
            for _ in range(2):
                result = await official.call_tool("book_table", FULL)
                assert not result.is_error
                booked_on_the_alternative(result.structured_content)
        await wait_until_continued(cluster, before + 4)


# --- (c) a deposit paid on another worker: the notice reaches the session's worker, once -------------------------


async def test_a_deposit_paid_on_another_worker_notifies_once(cluster: Cluster) -> None:
    completed: list[str] = []
    asked: list[str] = []

    async def consent(request: minimcp.UrlElicitationRequest) -> Any:
        asked.append(request.url)
        return Accepted(None)

    with anyio.fail_after(60):
        async with connect_http(cluster.url, url_handler=consent, on_elicitation_complete=completed.append) as client:
            owner = session_id(client).split(".", 1)[0]
            made = await client.call_tool("book_table", DEPOSIT)
            assert made.structured_content is not None, made
            assert made.structured_content["status"] == "deposit_pending", made
            [url] = asked
            assert url.startswith(f"http://127.0.0.1:{cluster.front}/pages/deposit/")
            eid = url.rsplit("/", 1)[1]
            await pay_elsewhere(cluster, url, owner)
            with anyio.fail_after(WAIT):
                while not completed:  # noqa: ASYNC110 - filled by the client's reader
                    await anyio.sleep(0.02)
            status = await client.call_tool("booking_status", {"booking_id": made.structured_content["booking_id"]})
            assert status.structured_content is not None, status
            assert status.structured_content["status"] == "booked"
            await pay_elsewhere(cluster, url, owner)  # paying again sends nothing more
            await client.call_tool("booking_status", {"booking_id": made.structured_content["booking_id"]})
            await anyio.sleep(0.5)
            assert completed == [eid]

        # The official client (legacy); its session's worker read off the responses' Mcp-Session-Id.
        seen: list[Any] = []
        notes: list[str] = []
        responses: list[tuple[str, str | None]] = []

        async def official_consent(context: Any, params: Any) -> Any:
            seen.append(params)
            return mcp_types.ElicitResult(action="accept")

        async def messages(message: Any) -> None:
            if isinstance(message, mcp_types.ElicitCompleteNotification):
                notes.append(message.params.elicitation_id)

        async with official_watched(cluster.url, responses, mode="legacy", elicitation_callback=official_consent,
                                    message_handler=messages) as official:  # fmt: skip
            owner = next(sid for _, sid in responses if sid).split(".", 1)[0]
            made = await official.call_tool("book_table", DEPOSIT)
            assert made.structured_content["status"] == "deposit_pending", made
            [params] = seen
            await pay_elsewhere(cluster, params.url, owner)
            with anyio.fail_after(WAIT):
                while not notes:  # noqa: ASYNC110 - filled by the client's reader
                    await anyio.sleep(0.02)
            await official.call_tool("booking_status", {"booking_id": made.structured_content["booking_id"]})
            await anyio.sleep(0.5)
            assert notes == [params.elicitation_id]


# --- (d) a booking is found and confirmed from any worker ----------------------------------------------------------


async def test_booking_status_and_confirm_deposit_from_any_worker(cluster: Cluster) -> None:
    async def consent(request: minimcp.UrlElicitationRequest) -> Any:
        return Accepted(None)

    with anyio.fail_after(60):
        async with connect_http(cluster.url, url_handler=consent) as client:
            made = await client.call_tool("book_table", DEPOSIT)
            assert made.structured_content is not None, made
            booking_id = made.structured_content["booking_id"]
        async with httpx.AsyncClient(timeout=WAIT) as http:
            on = [Modern(http, cluster.worker_url(n)) for n in range(3)]
            for worker in on:
                seen = await worker.call("booking_status", {"booking_id": booking_id})
                assert seen["result"]["structuredContent"]["status"] == "deposit_pending"
            confirmed = await on[2].call("confirm_deposit", {"booking_id": booking_id})
            assert confirmed["result"]["structuredContent"]["status"] == "booked"
            for worker in on:
                seen = await worker.call("booking_status", {"booking_id": booking_id})
                assert seen["result"]["structuredContent"]["status"] == "booked"
        async with mcp.Client(cluster.url, mode="legacy") as official:
            for _ in range(2):  # its session lives on one worker; the booking was made through another session
                seen = await official.call_tool("booking_status", {"booking_id": booking_id})
                assert seen.structured_content["status"] == "booked"


# --- (g) other balancer setups: nginx's map and haproxy's learned stickiness work; nginx's hash does not -----------

# The recipe often given for "sticky sessions" in nginx: hash on the session header. initialize has no
# Mcp-Session-Id (an empty key: nginx picks any worker), and the id it gets back then hashes to a worker
# of its own, the session's worker for about one session in three.
NGINX_HASH = """
worker_processes 1;
error_log stderr warn;
pid nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path tmp_body; proxy_temp_path tmp_proxy; fastcgi_temp_path tmp_fastcgi;
    uwsgi_temp_path tmp_uwsgi; scgi_temp_path tmp_scgi;
    upstream mcp {
        hash $http_mcp_session_id;
        server 127.0.0.1:8101;
        server 127.0.0.1:8102;
        server 127.0.0.1:8103;
    }
    server {
        listen 127.0.0.1:8100;
        location / {
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout 60s;
        }
    }
}
"""


async def form_sessions(url: str, count: int) -> list[str]:
    """``count`` 2025-11-25 sessions with a form question through ``url``: how each ended ("ok" or the error)."""
    outcomes = []
    for _ in range(count):
        try:
            with anyio.fail_after(WAIT):
                async with connect_http(url, elicitation_handler=form_answer) as client:
                    result = await client.call_tool("book_table", FULL)
                    booked_on_the_alternative(result.structured_content)
            outcomes.append("ok")
        except Exception as exc:  # a session that reached the wrong worker
            outcomes.append(f"{type(exc).__name__}: {exc}")
    return outcomes


async def test_nginx_map_and_haproxy_learned_stickiness_work_and_nginx_hash_does_not(cluster: Cluster) -> None:
    mapped, learned, hashed = free_port(), free_port(), free_port()
    cluster.nginx((DEPLOY / "nginx.conf").read_text(), mapped)
    cluster.haproxy("haproxy-learned.cfg", learned)
    cluster.nginx(NGINX_HASH, hashed)
    with anyio.fail_after(120):
        for front in (mapped, learned):
            url = f"http://127.0.0.1:{front}/mcp"
            assert await form_sessions(url, 6) == ["ok"] * 6, front
            async with mcp.Client(url, mode="legacy", elicitation_callback=official_form_answer) as official:
                booked_on_the_alternative((await official.call_tool("book_table", FULL)).structured_content)
            async with connect_http(url, era="modern", elicitation_handler=form_answer) as client:  # 2026-07-28
                booked_on_the_alternative((await client.call_tool("book_table", FULL)).structured_content)
            async with mcp.Client(url, mode="auto", elicitation_callback=official_form_answer) as official:
                assert official.protocol_version == "2026-07-28"
                booked_on_the_alternative((await official.call_tool("book_table", FULL)).structured_content)
        # The negative control: with 9 sessions, all 9 reaching their own worker by chance is (1/3)^9.
        outcomes = await form_sessions(f"http://127.0.0.1:{hashed}/mcp", 9)
        broken = [outcome for outcome in outcomes if outcome != "ok"]
        assert broken, outcomes
        # (each broken one: a request with the session's id reached another worker, which answered 404, and the
        # client ended the session as the server asked)


# --- (e) a worker killed mid-question ----------------------------------------------------------------------------


@pytest.fixture
def fresh_cluster(anyio_backend: str) -> Iterator[Cluster]:
    """A cluster of its own, for a test that kills a worker."""
    with running(anyio_backend) as cluster:
        yield cluster


async def test_a_worker_killed_mid_question(fresh_cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    cluster = fresh_cluster
    with anyio.fail_after(90):
        # 2026-07-28: the first round on w3, w3 dies, the retry through haproxy finishes on a live worker.
        async with httpx.AsyncClient(timeout=WAIT) as http:
            key, _, state = input_required(await Modern(http, cluster.worker_url(2)).call("book_table", FULL))
            cluster.kill_worker(2)
            done = await Modern(http, cluster.url).call("book_table", FULL, responses={key: accept(**ALTERNATIVE)},
                                                        state=state)  # fmt: skip
            booked_on_the_alternative(done["result"]["structuredContent"])

        # 2025-11-25: the session's worker dies while the person thinks; the session ends cleanly.
        asked, killed = anyio.Event(), anyio.Event()

        async def slow_answer(request: minimcp.ElicitationRequest) -> Any:
            asked.set()
            await killed.wait()
            return Accepted(ALTERNATIVE)

        failures: list[BaseException] = []
        async with connect_http(cluster.url, elicitation_handler=slow_answer) as client:
            owner = int(session_id(client).split(".", 1)[0][1:]) - 1
            assert owner in (0, 1)

            async def call() -> None:
                try:
                    await client.call_tool("book_table", FULL)
                except Exception as exc:
                    failures.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await asked.wait()
                cluster.kill_worker(owner)
                killed.set()
            # The answer's POST names the session; haproxy sends it on to a live worker (the session's is down),
            # which does not know the session: 404, and the client ends the session, saying so.
            [failure] = failures
            assert isinstance(failure, minimcp.ConnectionClosed), repr(failure)
            with anyio.fail_after(WAIT):
                while not any("(HTTP 404); start a new session" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            with pytest.raises(minimcp.ConnectionClosed):
                await client.call_tool("booking_status", {"booking_id": "x"})
        # A new session lands on the worker that is left.
        assert await form_sessions(cluster.url, 2) == ["ok", "ok"]


# --- (f) Redis restarted mid-run: the workers reconnect, later completions arrive --------------------------------


async def test_redis_restarted_later_completions_arrive(cluster: Cluster) -> None:
    completed: list[str] = []
    asked: list[str] = []

    async def consent(request: minimcp.UrlElicitationRequest) -> Any:
        asked.append(request.url)
        return Accepted(None)

    with anyio.fail_after(90):
        async with connect_http(cluster.url, url_handler=consent, on_elicitation_complete=completed.append) as client:
            owner = session_id(client).split(".", 1)[0]
            listening = [cluster.log(n).count("redis bus: listening on") for n in range(3)]
            cluster.redis.stop()
            cluster.redis.start()  # empty (no persistence), same port
            for n in range(3):  # every worker's bus subscribes again
                await wait_for_log(cluster, n, "redis bus: listening on", listening[n] + 1, timeout=60)
            while True:  # the store's client reconnects too (until then: a tool error saying to try again later)
                made = await client.call_tool("book_table", DEPOSIT)
                if not made.is_error:
                    break
                await anyio.sleep(0.2)
            assert made.structured_content is not None, made
            assert made.structured_content["status"] == "deposit_pending", made
            await pay_elsewhere(cluster, asked[-1], owner)
            with anyio.fail_after(WAIT):
                while not completed:  # noqa: ASYNC110 - filled by the client's reader
                    await anyio.sleep(0.02)
            assert completed == [asked[-1].rsplit("/", 1)[1]]

        # The used-state records are back as well: a 2026-07-28 retry on another worker, then refused on a third.
        async with httpx.AsyncClient(timeout=WAIT) as http:
            on = [Modern(http, cluster.worker_url(n)) for n in range(3)]
            key, _, state = input_required(await on[0].call("book_table", FULL))
            done = await on[1].call("book_table", FULL, responses={key: accept(**ALTERNATIVE)}, state=state)
            booked_on_the_alternative(done["result"]["structuredContent"])
            again = {"name": "book_table", "arguments": FULL, "inputResponses": {key: accept(**ALTERNATIVE)},
                     "requestState": state}  # fmt: skip
            assert (await on[2].request("tools/call", again)).json()["error"]["code"] == -32602


# --- deploy/try.sh ------------------------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def start_try_script(backend: str, workers: int) -> subprocess.Popen[str]:
    """``deploy/try.sh`` with this Python and backend, and Debian's redis-server and haproxy on its PATH."""
    from tests.helpers.redis_server import redis_server_binary

    tools = [str(pathlib.Path(binary("haproxy", "haproxy")).parent), str(pathlib.Path(redis_server_binary()).parent)]
    env = {**os.environ, "PYTHON": sys.executable, "BACKEND": backend, "TRY_SECONDS": "120", "PYTHONPATH": str(ROOT)}
    env["PATH"] = os.pathsep.join([*tools, os.environ.get("PATH", "")])
    return subprocess.Popen(["bash", str(DEPLOY / "try.sh"), str(workers)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip


async def test_try_script_serves_through_haproxy_and_stops_what_it_started(anyio_backend: str) -> None:
    script = start_try_script(anyio_backend, 2)
    assert script.stdout is not None and script.stderr is not None
    started: list[int] = []
    try:
        with anyio.fail_after(90):
            while "MCP endpoint:" not in (line := await anyio.to_thread.run_sync(script.stdout.readline)):
                assert line, f"try.sh ended: {script.stderr.read()}"
            url = line.split()[2]
            started = children(script.pid)
            assert len(started) >= 4  # Redis, two workers, haproxy (and the timer)
            assert await form_sessions(url, 2) == ["ok", "ok"]
            async with connect_http(url, era="modern", elicitation_handler=form_answer) as client:
                booked_on_the_alternative((await client.call_tool("book_table", FULL)).structured_content)
    finally:
        started = sorted({*started, *children(script.pid)})  # (the timer starts after the URL is printed)
        script.terminate()
        try:
            script.wait(WAIT)
        except subprocess.TimeoutExpired:
            script.kill()
            script.wait()
            for pid in started:  # (only if the script itself failed to)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert script.returncode == 143
    assert "stopped everything this script started" in script.stderr.read()
    script.stdout.close()
    script.stderr.close()
    with anyio.fail_after(WAIT):
        while not all(gone(pid) for pid in started):  # noqa: ASYNC110 - other processes
            await anyio.sleep(0.05)


@contextlib.asynccontextmanager
async def official_watched(url: str, seen: list[tuple[str, str | None]], **options: Any) -> AsyncIterator[Any]:
    """The official client over HTTP, noting (the worker that answered, the session id) for every response."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def note(response: Any) -> None:
        seen.append((response.headers.get("x-mcp-worker", ""), response.headers.get("mcp-session-id")))

    http = create_mcp_http_client()
    http.event_hooks = {"response": [note]}
    async with http, mcp.Client(streamable_http_client(url, http_client=http), **options) as client:
        yield client


async def test_a_worker_killed_mid_question_official_client(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    seen: list[tuple[str, str | None]] = []
    killed: list[int] = []

    async def kill_the_asker(context: Any, params: Any) -> Any:
        worker = seen[-1][0]  # the worker whose response carried this question
        killed.append(int(worker[1:]) - 1)
        cluster.kill_worker(killed[-1])
        return mcp_types.ElicitResult(action="accept", content=ALTERNATIVE)

    with anyio.fail_after(90):
        # 2026-07-28: the worker that asked (and parked the call) dies; the retry finishes on another worker.
        async with official_watched(cluster.url, seen, mode="auto", elicitation_callback=kill_the_asker) as official:
            assert official.protocol_version == "2026-07-28"
            result = await official.call_tool("book_table", FULL)
            assert not result.is_error
            booked_on_the_alternative(result.structured_content)
        [dead] = killed
        assert seen[-1][0] != f"w{dead + 1}"  # the retry's answer came from a live worker

        # 2025-11-25: the session's worker dies while the person thinks: the call fails, it does not hang.
        seen.clear()
        async with official_watched(cluster.url, seen, mode="legacy", elicitation_callback=kill_the_asker) as official:
            owner = next(sid for _, sid in seen if sid).split(".", 1)[0]
            # (mcp 2.3: its stream broke and resuming it on the session's id got 404s: MCPError -32000)
            with pytest.raises(mcp.MCPError):
                await official.call_tool("book_table", FULL)
            assert killed[-1] == int(owner[1:]) - 1
