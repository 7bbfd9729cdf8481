"""A token store on disk: a JSON file per authorization server and resource, mode 0600, as ``gh`` keeps its own.

:class:`FileTokenStore` is a :class:`~minimcp.auth.token_store.TokenStore` that outlives the process,
for terminals and desktop applications (the ``minimcp`` command uses it). Under its directory
(default: :func:`default_directory`, ``$XDG_CONFIG_HOME/minimcp``, else ``~/.config/minimcp``; on
Windows ``%APPDATA%\\minimcp``):

* ``tokens/<resource>--<issuer>--<hash>.json``: the tokens of one resource at one authorization
  server (``{"issuer", "resource", "tokens": {...}}``);
* ``clients/<issuer>--<hash>.json``: the client registration at one authorization server
  (``{"issuer", "client": {...}}``), never used with another.

The names are readable, the hash (of the exact issuer and resource) keeps them apart. Every file
is written whole and atomically (a temporary file created with mode ``0600`` in the same
directory, flushed, then renamed over the old one), so a reader never sees half a file and no
file is ever readable by another user, whatever the umask; the directories are ``0700``. A file
that cannot be read or parsed counts as absent (a warning names the file, never its content).
:meth:`FileTokenStore.forget` removes every token of a resource (``minimcp logout URL``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pathlib
import re
import secrets
import sys
from typing import Any, TypeVar

import anyio

from minimcp.auth.discovery import resource_matches
from minimcp.auth.token_store import ClientCredentials, Tokens

__all__ = ["FileTokenStore", "default_directory"]

logger = logging.getLogger("minimcp.auth")

_FILE_MODE = 0o600
_DIR_MODE = 0o700
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SLUG = 48  # characters of a readable name part
_Kept = TypeVar("_Kept", Tokens, ClientCredentials)


def default_directory() -> pathlib.Path:
    """minimcp's configuration directory: ``$XDG_CONFIG_HOME/minimcp``, else ``~/.config/minimcp``
    (``%APPDATA%\\minimcp`` on Windows)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    if not base and sys.platform == "win32":
        base = os.environ.get("APPDATA")
    root = pathlib.Path(base) if base else pathlib.Path.home() / ".config"
    return root / "minimcp"


def _slug(url: str) -> str:
    text = url.split("://", 1)[-1]
    return _UNSAFE.sub("_", text).strip("_.")[:_SLUG] or "_"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


class FileTokenStore:
    """A :class:`~minimcp.auth.token_store.TokenStore` in files under ``directory`` (see the module docs).

    Args:
        directory: Where the ``tokens`` and ``clients`` directories go (created ``0700`` on first write);
            default :func:`default_directory`.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = pathlib.Path(directory) if directory is not None else default_directory()

    # --- where -------------------------------------------------------------------------------------

    def tokens_path(self, issuer: str, resource: str) -> pathlib.Path:
        """The file of the tokens of ``resource`` at ``issuer``."""
        name = f"{_slug(resource)}--{_slug(issuer)}--{_digest(issuer, resource)}.json"
        return self.directory / "tokens" / name

    def client_path(self, issuer: str) -> pathlib.Path:
        """The file of the client registration at ``issuer``."""
        return self.directory / "clients" / f"{_slug(issuer)}--{_digest(issuer)}.json"

    # --- the protocol --------------------------------------------------------------------------------

    async def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        document = await anyio.to_thread.run_sync(self._read, self.tokens_path(issuer, resource))
        if document is None or document.get("issuer") != issuer or document.get("resource") != resource:
            return None
        return _build(Tokens, document.get("tokens"), self.tokens_path(issuer, resource))

    async def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        path = self.tokens_path(issuer, resource)
        if tokens is None:
            await anyio.to_thread.run_sync(_remove, path)
            return
        document = {"issuer": issuer, "resource": resource, "tokens": dataclasses.asdict(tokens)}
        await anyio.to_thread.run_sync(self._write, path, document)

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        path = self.client_path(issuer)
        document = await anyio.to_thread.run_sync(self._read, path)
        if document is None or document.get("issuer") != issuer:
            return None
        return _build(ClientCredentials, document.get("client"), path)

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        path = self.client_path(issuer)
        if client is None:
            await anyio.to_thread.run_sync(_remove, path)
            return
        await anyio.to_thread.run_sync(self._write, path, {"issuer": issuer, "client": dataclasses.asdict(client)})

    # --- logging out -----------------------------------------------------------------------------------

    def forget(self, url: str) -> list[pathlib.Path]:
        """Remove every kept token of the resource at ``url`` (at any authorization server): the token files
        whose resource names ``url`` (RFC 9728 §3.3: its origin, and ``url``'s path at or below its own).
        Registrations stay (they belong to the authorization server). Returns the files removed."""
        removed: list[pathlib.Path] = []
        folder = self.directory / "tokens"
        if not folder.is_dir():
            return removed
        for path in sorted(folder.glob("*.json")):
            document = self._read(path)
            resource = document.get("resource") if document is not None else None
            if isinstance(resource, str) and resource_matches(resource, url) and _remove(path):
                removed.append(path)
        return removed

    # --- files -------------------------------------------------------------------------------------------

    @staticmethod
    def _read(path: pathlib.Path) -> dict[str, Any] | None:
        try:
            with path.open("rb") as file:
                document = json.load(file)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("ignored the kept credentials in %s: %s", path, type(exc).__name__)
            return None
        return document if isinstance(document, dict) else None

    def _write(self, path: pathlib.Path, document: dict[str, Any]) -> None:
        """Write ``document`` to ``path`` atomically: a ``0600`` temporary file beside it, renamed over it."""
        _private_dir(self.directory)
        _private_dir(path.parent)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(temporary, flags, _FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as file:
                if hasattr(os, "fchmod"):
                    os.fchmod(file.fileno(), _FILE_MODE)  # whatever the umask did
                file.write(json.dumps(document, indent=2, sort_keys=True).encode("utf-8") + b"\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            _remove(temporary)
            raise


def _private_dir(path: pathlib.Path) -> None:
    path.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    if (path.stat().st_mode & 0o777) != _DIR_MODE:
        os.chmod(path, _DIR_MODE)


def _remove(path: pathlib.Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _build(kind: type[_Kept], fields: object, path: pathlib.Path) -> _Kept | None:
    """``kind(**fields)`` for a dataclass of this package; ``None`` (with a warning) when the fields do not fit."""
    if not isinstance(fields, dict):
        return None
    known = {f.name for f in dataclasses.fields(kind)}
    try:
        return kind(**{k: v for k, v in fields.items() if k in known})
    except TypeError:
        logger.warning("ignored the kept credentials in %s: fields missing", path)
        return None
