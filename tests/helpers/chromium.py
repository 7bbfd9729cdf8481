"""Headless Chromium for the real-browser tests (and other Debian programs the tests run), installed on first use.

The tests call :func:`find_chromium`. When no Chromium is on PATH and we run as root on a
machine with ``apt-get`` (a fresh Debian, as in the README's Quick start), it runs
``apt-get update`` and ``apt-get install -y chromium`` once, under a lock file, so test runs
in parallel processes install it once and the others wait and then find it. When it cannot
be installed (not root, no ``apt-get``, the install fails) the calling test fails with a
message saying what to do; it is never skipped unless ``MINIMCP_SKIP_BROWSER=1`` asks for it.

``MINIMCP_CHROMIUM`` names the executable to use (a name looked up on PATH, or a path),
instead of ``chromium`` / ``chromium-browser``.

``python tests/helpers/chromium.py`` does the same from a shell (``.ci/run`` uses it) and prints
the executable's path.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence

import pytest

SKIP_ENV = "MINIMCP_SKIP_BROWSER"
NAME_ENV = "MINIMCP_CHROMIUM"
DEFAULT_NAMES = ("chromium", "chromium-browser")
PACKAGE = "chromium"  # Debian's package (bookworm and later)
INSTALL_TIMEOUT = 1800  # seconds for `apt-get update` plus the install (a cold install downloads ~100 MB)
APT_LOCK_WAIT = 600  # seconds apt waits for another apt/dpkg run to let go of its own lock
LOCK_FILE = pathlib.Path(tempfile.gettempdir()) / "minimcp-chromium-install.lock"


class ChromiumUnavailable(Exception):
    """No Chromium, and it could not be installed; the message says what to do."""


def _names() -> tuple[str, ...]:
    chosen = os.environ.get(NAME_ENV, "").strip()
    return (chosen,) if chosen else DEFAULT_NAMES


def _which(names: Sequence[str], path: str | None) -> str | None:
    for name in names:
        found = shutil.which(name, path=path)
        if found is not None:
            return found
    return None


def _hint(names: Sequence[str], why: str) -> str:
    return (
        f"Chromium is needed for the real-browser URL-mode test (tests/peers/test_url_browser.py) but no "
        f"{' / '.join(f'`{n}`' for n in names)} executable was found on PATH, and {why}. Install it "
        f"(Debian/Ubuntu, as root): `apt-get update && apt-get install -y {PACKAGE}`, or point "
        f"{NAME_ENV} at a Chromium or Chrome executable. To skip this test deliberately, set {SKIP_ENV}=1."
    )


def _run(command: list[str], env: dict[str, str], deadline: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=deadline, check=False)
    except subprocess.TimeoutExpired:
        raise ChromiumUnavailable(f"`{' '.join(command)}` took more than {deadline:.0f} s") from None


def ensure_installed(
    package: str,
    names: Sequence[str],
    *,
    purpose: str,
    hint: Callable[[Sequence[str], str], str] | None = None,
    path: str | None = None,
    root: bool | None = None,
    lock_file: pathlib.Path | None = None,
) -> str:
    """An executable of Debian's ``package``, installed with apt-get first if it is missing and we may.

    Args:
        package: The Debian package that brings it.
        names: Executables to look for.
        purpose: What needs it (said while installing and on failure).
        hint: Builds the failure message from ``names`` and why it could not be had.
        path: The search path for them and for ``apt-get`` (default: ``$PATH``).
        root: Whether we may install (default: running as root).
        lock_file: Serializes installs across processes (default: one per package in the temp dir).

    Raises:
        ChromiumUnavailable: Missing and not installable; the message says what to do.
    """
    if hint is None:

        def hint(names: Sequence[str], why: str) -> str:
            wanted = " / ".join(f"`{n}`" for n in names)
            return (
                f"{wanted} is needed for {purpose} but was not found on PATH, and {why}. Install it "
                f"(Debian/Ubuntu, as root): `apt-get update && apt-get install -y {package}`."
            )

    found = _which(names, path)
    if found is not None:
        return found
    if root is None:
        root = os.geteuid() == 0
    if not root:
        raise ChromiumUnavailable(hint(names, "this is not root, so the tests cannot install it"))
    apt_get = shutil.which("apt-get", path=path)
    if apt_get is None:
        raise ChromiumUnavailable(hint(names, "there is no `apt-get` to install it with"))
    lock_file = lock_file or pathlib.Path(tempfile.gettempdir()) / f"minimcp-{package}-install.lock"
    with lock_file.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be installing it right now
        try:
            found = _which(names, path)
            if found is not None:
                return found
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            wait = f"DPkg::Lock::Timeout={APT_LOCK_WAIT}"
            print(f"\ninstalling {package} for {purpose} (apt-get, once) ...", file=sys.stderr, flush=True)
            for command in (
                [apt_get, "-o", wait, "update", "-qq"],
                [apt_get, "-o", wait, "install", "-y", "-qq", package],
            ):
                done = _run(command, env, INSTALL_TIMEOUT)
                if done.returncode != 0:
                    raise ChromiumUnavailable(
                        f"`{' '.join(command)}` failed (exit {done.returncode}) while installing {package} for "
                        f"{purpose}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
                    )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    found = _which(names, path)
    if found is None:
        raise ChromiumUnavailable(
            f"`apt-get install -y {package}` succeeded but no {' / '.join(f'`{n}`' for n in names)} "
            f"is on PATH afterwards"
        )
    return found


def ensure_chromium(
    *,
    names: Sequence[str] | None = None,
    path: str | None = None,
    root: bool | None = None,
    lock_file: pathlib.Path = LOCK_FILE,
) -> str:
    """The Chromium executable, installed with apt-get first if it is missing and we may.

    Args:
        names: Executables to look for (default: ``$MINIMCP_CHROMIUM``, else chromium /
            chromium-browser).
        path: The search path for them and for ``apt-get`` (default: ``$PATH``).
        root: Whether we may install (default: running as root).
        lock_file: Serializes installs across processes.

    Raises:
        ChromiumUnavailable: Missing and not installable; the message says what to do.
    """
    names = tuple(names) if names is not None else _names()
    return ensure_installed(
        PACKAGE, names, purpose="the real-browser tests", hint=_hint, path=path, root=root, lock_file=lock_file
    )


def find_chromium() -> str:
    """For a test: the Chromium executable; skip only when asked to, fail loudly when it cannot be had."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1 is set: the real-browser URL-mode test is skipped on request")
    try:
        return ensure_chromium()
    except ChromiumUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


if __name__ == "__main__":
    try:
        print(ensure_chromium())
    except ChromiumUnavailable as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
