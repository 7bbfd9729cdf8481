"""tests/helpers/chromium.py: Chromium is found, or installed with apt-get once (as root), or the test fails saying why.

A fake ``apt-get`` on a fake PATH stands for Debian's: it records its arguments and, on
``install``, puts an executable ``chromium`` on that PATH (or fails, when told to). The real
system Chromium is never touched.
"""

from __future__ import annotations

import os
import pathlib
import stat
import threading

import pytest

from tests.helpers import chromium

FAKE_APT = """#!/bin/sh
echo "$*" >> "{log}"
case " $* " in
  *" install "*)
    if [ -n "{fail}" ]; then echo "E: Unable to locate package chromium" >&2; exit 100; fi
    sleep {pause}
    printf '#!/bin/sh\\necho chromium\\n' > "{bin}/{name}"
    chmod +x "{bin}/{name}"
    ;;
esac
exit 0
"""


def _fake_path(tmp_path: pathlib.Path, *, apt: bool = True, fail: bool = False, pause: float = 0.0) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if apt:
        script = bin_dir / "apt-get"
        log = tmp_path / "apt.log"
        fake = FAKE_APT.format(log=log, fail="yes" if fail else "", pause=pause, bin=bin_dir, name="chromium")
        script.write_text(fake)
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(bin_dir)


def _apt_calls(tmp_path: pathlib.Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def _ensure(tmp_path: pathlib.Path, path: str, *, root: bool = True) -> str:
    return chromium.ensure_chromium(names=("chromium",), path=path, root=root, lock_file=tmp_path / "install.lock")


def test_a_chromium_on_path_is_used_without_installing(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path)
    existing = pathlib.Path(path) / "chromium"
    existing.write_text("#!/bin/sh\n")
    existing.chmod(0o755)
    assert _ensure(tmp_path, path) == str(existing)
    assert _apt_calls(tmp_path) == []


def test_a_missing_chromium_is_installed_with_apt_get_as_root(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path)
    found = _ensure(tmp_path, path)
    assert found == str(pathlib.Path(path) / "chromium")
    calls = _apt_calls(tmp_path)
    assert len(calls) == 2
    assert calls[0].endswith("update -qq")
    assert calls[1].endswith("install -y -qq chromium")
    assert all(c.startswith("-o DPkg::Lock::Timeout=") for c in calls)  # waits for another apt run
    assert _ensure(tmp_path, path) == found  # once installed, found
    assert len(_apt_calls(tmp_path)) == 2


def test_parallel_callers_install_once(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path, pause=0.5)  # the install takes a while: the others must wait for it
    results: list[str] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            results.append(_ensure(tmp_path, path))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert results == [str(pathlib.Path(path) / "chromium")] * 4
    assert sum(" install " in f" {c} " for c in _apt_calls(tmp_path)) == 1


def test_not_root_fails_saying_how_to_install(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path)
    with pytest.raises(chromium.ChromiumUnavailable) as raised:
        _ensure(tmp_path, path, root=False)
    message = str(raised.value)
    assert "not root" in message and "apt-get install -y chromium" in message and "MINIMCP_SKIP_BROWSER=1" in message
    assert _apt_calls(tmp_path) == []


def test_no_apt_get_fails_saying_how_to_install(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path, apt=False)
    with pytest.raises(chromium.ChromiumUnavailable, match="no `apt-get`"):
        _ensure(tmp_path, path)


def test_a_failed_install_fails_with_apt_gets_own_words(tmp_path: pathlib.Path) -> None:
    path = _fake_path(tmp_path, fail=True)
    with pytest.raises(chromium.ChromiumUnavailable) as raised:
        _ensure(tmp_path, path)
    message = str(raised.value)
    assert "exit 100" in message and "Unable to locate package chromium" in message


def test_find_chromium_fails_the_test_and_skips_only_on_request(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MINIMCP_CHROMIUM points the check at a name that is not there; PATH has no apt-get.
    monkeypatch.setenv(chromium.NAME_ENV, "no-such-chromium-for-minimcp")
    monkeypatch.setenv("PATH", _fake_path(tmp_path, apt=False))
    monkeypatch.delenv(chromium.SKIP_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception) as failed:
        chromium.find_chromium()
    assert "no-such-chromium-for-minimcp" in str(failed.value)
    if os.geteuid() == 0:
        assert "no `apt-get`" in str(failed.value)
    monkeypatch.setenv(chromium.SKIP_ENV, "1")
    with pytest.raises(pytest.skip.Exception):
        chromium.find_chromium()
