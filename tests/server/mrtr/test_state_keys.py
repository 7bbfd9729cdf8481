"""Sealing keys shared by several workers (issue 18): bytes, hex, lists, ``MINIMCP_STATE_KEYS``, rotation.

Two :class:`~minimcp.Server` objects in one process stand for two workers behind a load
balancer: a 2026-07-28 call asked on one and retried on the other finishes there (replay)
when both have the same key, and is refused with ``-32602`` when they do not. A key
random to the process makes the Streamable HTTP app warn once at start.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import anyio
import pytest

from minimcp import Server
from minimcp.server.mrtr.state import StateSealer, parse_state_keys, state_keys_from_env
from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.modern import (
    INVALID_STATE,
    accept,
    complete,
    error_of,
    input_required,
    modern_peer,
    only,
)
from tests.helpers.state_keys import worker

OLD = secrets.token_hex(32)
NEW = secrets.token_hex(32)
WAIT = 30




async def ask_on(server: Server) -> tuple[str, str]:
    """The first round of ``greet`` on ``server``: (the question's key, the requestState)."""
    async with modern_peer(server) as (m, _):
        requests, state = input_required(await m.call("greet"))
    key, _ = only(requests)
    return key, state


async def retry_on(server: Server, key: str, state: str) -> dict[str, Any]:
    async with modern_peer(server) as (m, _):
        return await m.call("greet", responses={key: accept(name="Ada")}, state=state)


# --- two workers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["hex", "bytes", "list", "environment"])
async def test_a_retry_on_another_worker_with_the_same_key_finishes_there(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys: dict[str, Any] = {"hex": NEW, "bytes": bytes.fromhex(NEW), "list": [NEW, OLD]}
    if form == "environment":
        monkeypatch.setenv("MINIMCP_STATE_KEYS", f"{NEW}, {OLD}")
    runs_b: list[str] = []
    a, b = worker(keys.get(form)), worker(keys.get(form), runs=runs_b)
    with anyio.fail_after(WAIT):
        key, state = await ask_on(a)
        result = complete(await retry_on(b, key, state))
    assert result["content"][0]["text"] == "hello Ada"
    assert runs_b == ["greet"]  # B replayed the call from the state A sealed
    assert b.state_key_source == ("environment" if form == "environment" else "argument")


async def test_a_retry_on_a_worker_with_another_key_is_refused() -> None:
    a, b = worker(NEW), worker(OLD)
    with anyio.fail_after(WAIT):
        key, state = await ask_on(a)
        error = error_of(await retry_on(b, key, state), -32602)
    assert error["message"] == INVALID_STATE


async def test_without_keys_each_process_draws_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINIMCP_STATE_KEYS", raising=False)
    a, b = worker(), worker()
    assert a.state_key_source == b.state_key_source == "random"
    with anyio.fail_after(WAIT):
        key, state = await ask_on(a)
        error_of(await retry_on(b, key, state), -32602)


async def test_rotation_the_first_key_seals_and_every_key_opens() -> None:
    before, during, after = worker(OLD), worker([NEW, OLD]), worker(NEW)
    with anyio.fail_after(WAIT):
        # A state sealed with the old key still opens once the new key is put first...
        key, state = await ask_on(before)
        complete(await retry_on(during, key, state))
        # ... and what the rotated worker seals is under the new key: a worker on the new key alone
        # opens it, one still on the old key alone does not.
        key, state = await ask_on(during)
        complete(await retry_on(after, key, state))
        key, state = await ask_on(during)
        error_of(await retry_on(before, key, state), -32602)


@pytest.mark.parametrize("where", ["argument", "environment", "argument, no key"])
async def test_a_rolling_upgrade_can_seal_v1_and_every_worker_opens_both_formats(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During an upgrade from a release that opens only v1, the new workers seal v1 (``state_format`` or
    ``MINIMCP_STATE_FORMAT``); every worker of this release opens v1 and v2 alike."""
    monkeypatch.delenv("MINIMCP_STATE_FORMAT", raising=False)
    if where == "environment":
        monkeypatch.setenv("MINIMCP_STATE_FORMAT", "v1")
    key_of = None if where == "argument, no key" else NEW
    upgrading = worker(key_of, state_format=None if where == "environment" else "v1")
    upgraded = worker(NEW)
    with anyio.fail_after(WAIT):
        key, state = await ask_on(upgrading)
        assert state.startswith("v1."), state
        assert complete(await retry_on(upgrading, key, state))["content"][0]["text"] == "hello Ada"
        if key_of is not None:  # (a key random to the process: nobody else opens its states)
            monkeypatch.delenv("MINIMCP_STATE_FORMAT", raising=False)
            key, state = await ask_on(upgrading)
            assert complete(await retry_on(upgraded, key, state))["content"][0]["text"] == "hello Ada"
            key, state = await ask_on(worker(NEW))
            assert state.startswith("v2."), state  # the default, once the upgrade is over
            assert complete(await retry_on(upgrading, key, state))["content"][0]["text"] == "hello Ada"


def test_a_format_that_does_not_exist_is_refused_naming_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINIMCP_STATE_FORMAT", raising=False)
    with pytest.raises(ValueError, match=r"state_format must be one of v1, v2, not 'v3'"):
        Server("s", state_format="v3")
    monkeypatch.setenv("MINIMCP_STATE_FORMAT", "V2")
    with pytest.raises(ValueError, match=r"MINIMCP_STATE_FORMAT must be one of v1, v2, not 'V2'"):
        Server("s")


# --- parsing ----------------------------------------------------------------------------------------


def test_keys_are_parsed_from_bytes_hex_and_lists() -> None:
    raw = bytes.fromhex(NEW)
    assert parse_state_keys(raw) == (raw,)
    assert parse_state_keys(NEW.upper()) == (raw,)
    assert parse_state_keys([f" {NEW} ", bytes.fromhex(OLD)]) == (raw, bytes.fromhex(OLD))
    assert state_keys_from_env({}) is None
    assert state_keys_from_env({"MINIMCP_STATE_KEYS": f"{NEW},{OLD}"}) == (raw, bytes.fromhex(OLD))
    sealer = Server("s", state_key=[NEW, OLD]).sealer
    assert (sealer.key, sealer.keys) == (raw, (raw, bytes.fromhex(OLD)))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("ab" * 16, "state_key is 16 bytes: a sealing key needs at least 32 bytes (64 hex digits"),
        (b"k" * 31, "state_key is 31 bytes"),
        ("zz" * 32, "state_key is not hex"),
        ("abc" + "0" * 62, "state_key is not hex"),  # an odd number of digits
        ("", "state_key is empty"),
        ([], "state_key: no key given"),
        ([NEW, "ab" * 8], "state_key: key 2 is 8 bytes"),
        ([NEW, 42], "state_key: key 2 is a int: expected bytes or a hex string"),
    ],
)
def test_bad_keys_are_refused_naming_the_problem(value: Any, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        Server("s", state_key=value)
    assert problem in str(caught.value)
    if isinstance(value, str) and value:
        assert value not in str(caught.value)  # a key never shows in an error


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "MINIMCP_STATE_KEYS is set but empty"),
        ("  ", "MINIMCP_STATE_KEYS is set but empty"),
        ("ab" * 31, "MINIMCP_STATE_KEYS is 31 bytes"),
        (f"{NEW},", "MINIMCP_STATE_KEYS: key 2 is empty"),
        (f"{NEW},{'ab' * 20}", "MINIMCP_STATE_KEYS: key 2 is 20 bytes"),
        (f"0x{NEW}", "MINIMCP_STATE_KEYS is not hex"),
    ],
)
def test_bad_keys_in_the_environment_are_refused_naming_the_problem(
    value: str, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINIMCP_STATE_KEYS", value)
    with pytest.raises(ValueError) as caught:
        Server("s")
    assert problem in str(caught.value)
    with pytest.raises(ValueError, match="MINIMCP_STATE_KEYS"):
        state_keys_from_env()


def test_the_sealer_still_takes_one_key_of_bytes() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        StateSealer(b"short")


# --- the warning ------------------------------------------------------------------------------------


async def run_app_briefly(app: StreamableHTTPApp) -> None:
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(WAIT):
            await tg.start(app.run)
        tg.cancel_scope.cancel()


def key_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "MINIMCP_STATE_KEYS" in
            r.getMessage()]  # fmt: skip


async def test_the_http_app_warns_once_when_the_key_is_random(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINIMCP_STATE_KEYS", raising=False)
    caplog.set_level(logging.WARNING, logger="minimcp")
    server = worker()
    await run_app_briefly(StreamableHTTPApp(server))
    await run_app_briefly(StreamableHTTPApp(server))  # started again (or a second app): still one warning
    [warning] = key_warnings(caplog)
    assert "random to this process" in warning and "another worker is refused" in warning
    assert "Server(state_key=...)" in warning


@pytest.mark.parametrize("where", ["argument", "environment"])
async def test_the_http_app_does_not_warn_with_keys_set(
    where: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINIMCP_STATE_KEYS", raising=False)
    if where == "environment":
        monkeypatch.setenv("MINIMCP_STATE_KEYS", NEW)
    caplog.set_level(logging.WARNING, logger="minimcp")
    await run_app_briefly(StreamableHTTPApp(worker(NEW if where == "argument" else None)))
    assert key_warnings(caplog) == []
