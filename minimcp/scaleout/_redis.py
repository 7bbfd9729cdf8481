"""One Redis client owned by one task: opened, kept open, reopened with backoff (coredis).

coredis 6 wants its connection pool entered by a parent task before concurrent use, so a
:class:`RedisClient` is *run*: ``await task_group.start(redis.run)`` (or ``async with redis:``)
opens the client and keeps it open until cancelled; any task may then use ``redis.client``
(``None`` while it is not open). A client that fails is opened again, waiting longer each time
(up to 5 s). Several runners may share one object: one owns the client, the others wait to
take over when it stops. Used by :class:`minimcp.scaleout.redis_used_states.RedisUsedStates` and the booking
example's store; the extra ``minimcp[redis]`` brings coredis, imported here only.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

__all__ = ["RedisClient", "client_failure", "import_coredis", "safe_url"]

logger = logging.getLogger("minimcp.redis_client")


def import_coredis(what: str) -> Any:
    """The coredis module, or an ImportError naming the extra that brings it."""
    try:
        import coredis
        import coredis.tokens
    except ImportError as exc:
        raise ImportError(
            f"{what} needs the coredis package: install the minimcp[redis] extra (pip install 'minimcp[redis]')"
        ) from exc
    return coredis


def client_failure(exc: BaseException) -> bool:
    """An error of the Redis client (maybe grouped with cancellations of its own tasks), not an exit."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, BaseExceptionGroup):
        cancelled = anyio.get_cancelled_exc_class()
        other = exc.subgroup(lambda e: not isinstance(e, Exception | cancelled | BaseExceptionGroup))
        return other is None and exc.subgroup(lambda e: isinstance(e, Exception)) is not None
    return False


def safe_url(url: str) -> str:
    """The URL without its password, for logs and errors."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return scheme + sep + rest


class RedisClient:
    """A coredis client kept open by :meth:`run` (see the module's docstring).

    Args:
        url: ``redis://[:password@]host:port/db`` (``rediss://`` for TLS, ``unix://`` for a socket).
        name: What uses it, in log lines and errors.
        options: Passed to ``coredis.Redis.from_url`` (``decode_responses=True``, say).
    """

    def __init__(self, url: str, *, name: str, **options: Any) -> None:
        scheme = url.partition("://")[0] if "://" in url else ""
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"{name} needs a redis://, rediss:// or unix:// URL, not {safe_url(url)!r}")
        self.coredis = import_coredis(name)  # here, so that a missing extra shows at once
        self.url = url
        self.name = name
        self.options = options
        #: The open client, for any task to use; ``None`` while it is not open.
        self.client: Any = None
        self._owned: anyio.Event | None = None  # set when the owner's client closes
        self._context: anyio.abc.TaskGroup | None = None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the client open until cancelled (start it in a task group).

        Opening does not wait for Redis (connections are made per command), so a server
        starts while Redis is down; what it asks of Redis fails until Redis answers.
        """
        started = False
        wait = 0.1
        while True:
            owned = self._owned
            if owned is not None:  # another runner owns the client: take over when it stops
                if not started:
                    task_status.started()
                    started = True
                await owned.wait()
                continue
            owned = self._owned = anyio.Event()
            opening = self.coredis.Redis.from_url(self.url, **self.options)  # a malformed URL fails at once
            try:
                async with opening as client:
                    self.client, wait = client, 0.1
                    if not started:
                        task_status.started()
                        started = True
                    await anyio.sleep_forever()
            except BaseException as exc:  # a failure inside the client's own tasks: open it again
                if not client_failure(exc):
                    raise
                self.client = None
                logger.warning("%s: the Redis client for %s failed (%r); opening it again in %.1f s",
                               self.name, safe_url(self.url), exc, wait)  # fmt: skip
                await anyio.sleep(wait)
                wait = min(wait * 2, 5.0)
            finally:
                self.client = None
                self._owned = None
                owned.set()

    async def __aenter__(self) -> RedisClient:
        if self._context is not None:
            raise RuntimeError(f"this {self.name} is entered already (start its run() in more task groups instead)")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        try:
            await tg.start(self.run)
        except BaseException:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
            raise
        self._context = tg
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        tg, self._context = self._context, None
        assert tg is not None, f"{self.name} was not entered"
        tg.cancel_scope.cancel()
        return await tg.__aexit__(exc_type, exc, tb)
