"""Asking an authorization server for a JSON document over HTTP: bounded in time and size, any failure one error.

The verifiers (:mod:`~minimcp.auth.jwt`, :mod:`~minimcp.auth.introspection`) fetch metadata, key sets and
introspection answers through a :class:`Fetcher`. It uses the ``httpx.AsyncClient`` it is given (never
closed here), or makes one on first use (off the event loop: making one loads TLS certificates, ~30 ms)
and keeps it until :meth:`Fetcher.aclose`. Needs the ``auth`` extra (httpx).
"""

from __future__ import annotations

import functools
from typing import Any

import anyio
import httpx
import msgspec

from minimcp.core.config import Limits
from minimcp.wire.errors import MinimcpError

__all__ = ["FetchFailed", "Fetcher"]


class FetchFailed(MinimcpError):
    """A fetch gave no usable JSON object; the message says why, for the log (never a token)."""


class Fetcher:
    """JSON objects from an authorization server, each fetch bounded by ``limits`` (time and bytes).

    Args:
        limits: ``auth_fetch_timeout`` and ``max_auth_response_bytes`` bound each fetch.
        client: The client to use (yours: this never closes it); ``None``: one made on first use.
    """

    def __init__(self, limits: Limits, client: httpx.AsyncClient | None = None) -> None:
        self._limits = limits
        self._client = client
        self._own = client is None
        self._making: anyio.Event | None = None

    async def _get_client(self) -> httpx.AsyncClient:
        while self._client is None:
            if self._making is not None:  # another task is making it: wait for that one
                await self._making.wait()
                continue
            self._making = anyio.Event()
            try:
                make = functools.partial(
                    httpx.AsyncClient, timeout=self._limits.auth_fetch_timeout, follow_redirects=False
                )
                self._client = await anyio.to_thread.run_sync(make)
            finally:
                self._making.set()
                self._making = None
        return self._client

    async def json(
        self, method: str, url: str, *, data: dict[str, str] | None = None, auth: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        """The JSON object at ``url`` (a ``200`` answer to ``method``, ``data`` form-encoded, ``auth`` as basic).

        Raises:
            FetchFailed: unreachable, too slow, not ``200``, too large, or not a JSON object.
        """
        client = await self._get_client()
        limit = self._limits.max_auth_response_bytes
        body = bytearray()
        try:
            with anyio.fail_after(self._limits.auth_fetch_timeout):
                headers = {"Accept": "application/json"}
                async with client.stream(method, url, data=data, auth=auth, headers=headers) as response:
                    if response.status_code != 200:
                        raise FetchFailed(f"{method} {url}: HTTP {response.status_code}")
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > limit:
                            raise FetchFailed(f"{method} {url}: answer longer than {limit} bytes")
        except TimeoutError:
            raise FetchFailed(f"{method} {url}: no answer within {self._limits.auth_fetch_timeout} s") from None
        except (httpx.HTTPError, OSError) as error:
            raise FetchFailed(f"{method} {url}: {type(error).__name__}: {error}") from None
        try:
            document = msgspec.json.decode(bytes(body))
        except msgspec.DecodeError:
            raise FetchFailed(f"{method} {url}: the answer is not JSON") from None
        if not isinstance(document, dict):
            raise FetchFailed(f"{method} {url}: the answer is not a JSON object")
        return document

    async def aclose(self) -> None:
        """Close the client this made (a client given to it is left open)."""
        client, self._client = self._client, None
        if client is not None and self._own:
            await client.aclose()

