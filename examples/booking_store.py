"""Where the booking example keeps its state: in this process (default) or in Redis (several workers).

:class:`MemoryStore` holds bookings, deposit pages and calendar authorizations in dicts of one
process, as the example always did. :class:`RedisStore` keeps the same records in Redis through
``coredis`` (the client library of :class:`minimcp.scaleout.bus.RedisBus`; extra ``minimcp[redis]``), so
that every worker of a service sees the same bookings: a booking made on one worker is found and
confirmed on another, a deposit page paid on any worker completes it, and a replayed round of a
2026-07-28 call finds the booking its first run made, wherever that ran.

Records of a step live until they expire (deposit pages that were never booked, pending
authorizations): a cancelled copy of a call never deletes what a live replay elsewhere needs.
Bookings themselves stay. Every write that decides something is atomic in Redis (``SET NX``):
one booking per call, one unguessable id per booking, one "paid now" per deposit.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import math
import secrets
import time
import weakref
from types import TracebackType
from typing import Any, Protocol

import anyio
import anyio.abc

from minimcp import ToolError
from minimcp.scaleout._redis import RedisClient, safe_url

log = logging.getLogger("booking.store")

#: Calendar authorizations waiting for their page, at most (the oldest is dropped beyond).
MAX_PENDING_AUTHORIZATIONS = 10_000


@dataclasses.dataclass
class Booking:
    booking_id: str
    date: datetime.date
    party_size: int
    status: str  # "booked" | "deposit_pending"
    deposit_elicitation_id: str | None = None
    #: Whose booking it is, ``(iss, sub)`` of the token that made it (``None``: no authorization).
    owner: tuple[str, str] | None = None


@dataclasses.dataclass
class Deposit:
    """A deposit page that exists from the moment its URL is sent."""

    date: datetime.date
    party_size: int
    paid: bool = False
    booking: Booking | None = None


def new_booking_id() -> str:
    """An unguessable booking id: 128 random bits as URL-safe text (22 characters), never sequential.

    A client learns a booking id only from its own results, so it cannot look
    at (or confirm) another client's booking by counting.
    """
    return secrets.token_urlsafe(16)


class BookingStore(Protocol):
    """What the example keeps. ``conn`` is a session (a ``ServerConnection``) of this worker."""

    async def find(self, booking_id: str) -> Booking | None: ...

    async def of_call(self, call_id: str) -> Booking | None:
        """The booking the tool call ``call_id`` made (in any round, replay, or worker), if any."""

    async def create(
        self,
        call_id: str,
        day: datetime.date,
        party_size: int,
        status: str,
        deposit_id: str | None = None,
        owner: tuple[str, str] | None = None,
    ) -> Booking:
        """The call's booking: a new one (paying ``deposit_id`` books it at once), or the one it made already."""

    async def open_deposit(self, eid: str, day: datetime.date, party_size: int, expires_at: float | None) -> Deposit:
        """The deposit page ``eid``: made now, or found again (a replay); unbooked, it goes at ``expires_at``."""

    async def deposit(self, eid: str) -> Deposit | None: ...

    async def pay(self, eid: str) -> bool | None:
        """Mark deposit ``eid`` paid (and its booking booked): True the first time, False after, None: unknown."""

    async def drop_unbooked_deposit(self, eid: str) -> None: ...

    async def authorized(self, conn: object) -> bool: ...

    async def pending_authorization(self, conn: object, eid: str | None = None) -> str:
        """The session's one authorization page waiting to be completed, made on first use: as ``eid``
        when given (a step id bound to the session's person), else with a random id."""

    async def wait_authorization(self, eid: str) -> None:
        """A 2026-07-28 call waits on authorization page ``eid`` (no session)."""

    async def authorization_pending(self, eid: str) -> bool: ...

    async def complete_authorization(self, eid: str) -> bool | None:
        """Page ``eid`` completed: True when a session was authorized (tell its client), False for a
        2026-07-28 call, None when the page is unknown or was used."""

    async def authorization_done(self, eid: str) -> bool: ...

    async def end_authorization(self, eid: str) -> None: ...

    def connection_closed(self, conn: object) -> None: ...


class MemoryStore:
    """Everything in this process (one worker): gone when it stops."""

    def __init__(self, *, max_pending_authorizations: int = MAX_PENDING_AUTHORIZATIONS) -> None:
        self.bookings: dict[str, Booking] = {}
        #: The booking each tool call made (by ``ctx.call_id``): a replayed call finds it again.
        self.by_call: dict[str, Booking] = {}
        self.deposits: dict[str, Deposit] = {}
        # deposit page id -> when no retry of its 2026-07-28 call can come back (oldest first)
        self._deposit_expiry: dict[str, float] = {}
        # authorization page id -> the session to authorize (None: a modern-revision call waiting on it);
        # oldest first, at most max_pending_authorizations
        self.authorizations: dict[str, object | None] = {}
        self.max_pending_authorizations = max(1, max_pending_authorizations)
        # the one pending authorization page of each live session
        self._pending_authorization: dict[object, str] = {}
        self.authorized_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        #: Authorization pages completed whose call has not ended yet (oldest first, bounded).
        self.completed_authorizations: dict[str, None] = {}

    # bookings and deposits (no await inside: each method runs at once, atomically)

    async def find(self, booking_id: str) -> Booking | None:
        return self.bookings.get(booking_id)

    async def of_call(self, call_id: str) -> Booking | None:
        return self.by_call.get(call_id)

    async def create(
        self,
        call_id: str,
        day: datetime.date,
        party_size: int,
        status: str,
        deposit_id: str | None = None,
        owner: tuple[str, str] | None = None,
    ) -> Booking:
        made = self.by_call.get(call_id)
        if made is not None:
            return made
        booking = Booking(new_booking_id(), day, party_size, status, owner=owner)
        while booking.booking_id in self.bookings:  # pragma: no cover - 128 random bits
            booking.booking_id = new_booking_id()
        if deposit_id is not None:
            booking.deposit_elicitation_id = deposit_id
            deposit = self.deposits.get(deposit_id)
            if deposit is not None:
                deposit.booking = booking
                if deposit.paid:
                    booking.status = "booked"
        self.bookings[booking.booking_id] = booking
        self.by_call[call_id] = booking
        return booking

    async def open_deposit(self, eid: str, day: datetime.date, party_size: int, expires_at: float | None) -> Deposit:
        self._drop_expired_deposits()
        deposit = self.deposits.get(eid)  # a replay finds its page again
        if deposit is None:
            deposit = self.deposits[eid] = Deposit(day, party_size)
            if expires_at is not None:  # kept past a cancelled copy, until no retry of the call can come back
                self._deposit_expiry[eid] = expires_at
        return deposit

    async def deposit(self, eid: str) -> Deposit | None:
        return self.deposits.get(eid)

    async def pay(self, eid: str) -> bool | None:
        deposit = self.deposits.get(eid)
        if deposit is None:
            return None
        if deposit.paid:
            return False
        deposit.paid = True
        if deposit.booking is not None and deposit.booking.status == "deposit_pending":
            deposit.booking.status = "booked"
        return True

    async def drop_unbooked_deposit(self, eid: str) -> None:
        deposit = self.deposits.get(eid)
        if deposit is not None and deposit.booking is None:
            del self.deposits[eid]

    def _drop_expired_deposits(self) -> None:
        """Drop the unbooked deposit pages of 2026-07-28 calls that no retry can continue any more."""
        now, expiry = time.time(), self._deposit_expiry
        while expiry and next(iter(expiry.values())) <= now:
            eid = next(iter(expiry))
            del expiry[eid]
            deposit = self.deposits.get(eid)
            if deposit is not None and deposit.booking is None:
                del self.deposits[eid]

    # calendar authorizations

    async def authorized(self, conn: object) -> bool:
        return conn in self.authorized_sessions

    async def pending_authorization(self, conn: object, eid: str | None = None) -> str:
        pending = self._pending_authorization.get(conn)
        if pending is not None:
            return pending
        eid = self._pending_authorization[conn] = eid or secrets.token_urlsafe(18)
        self.remember_authorization(eid, conn)
        return eid

    async def wait_authorization(self, eid: str) -> None:
        self.remember_authorization(eid, None)

    def remember_authorization(self, eid: str, conn: object | None) -> None:
        if eid in self.authorizations:
            return
        self.authorizations[eid] = conn
        while len(self.authorizations) > self.max_pending_authorizations:
            oldest = next(iter(self.authorizations))
            log.info("dropping the oldest pending calendar authorization (limit %d)", self.max_pending_authorizations)
            self._forget_authorization(oldest)

    async def authorization_pending(self, eid: str) -> bool:
        return eid in self.authorizations

    async def complete_authorization(self, eid: str) -> bool | None:
        if eid not in self.authorizations:
            return None
        conn = self._forget_authorization(eid)
        self.completed_authorizations[eid] = None
        while len(self.completed_authorizations) > self.max_pending_authorizations:
            del self.completed_authorizations[next(iter(self.completed_authorizations))]
        if conn is None:
            return False
        self.authorized_sessions.add(conn)
        return True

    async def authorization_done(self, eid: str) -> bool:
        return eid in self.completed_authorizations

    async def end_authorization(self, eid: str) -> None:
        self._forget_authorization(eid)
        self.completed_authorizations.pop(eid, None)

    def _forget_authorization(self, eid: str) -> object | None:
        conn = self.authorizations.pop(eid, None)
        if conn is not None and self._pending_authorization.get(conn) == eid:
            del self._pending_authorization[conn]
        return conn

    def connection_closed(self, conn: object) -> None:
        """A session ended: its pending authorization page goes, and so does its authorization."""
        eid = self._pending_authorization.pop(conn, None)
        if eid is not None:
            self.authorizations.pop(eid, None)
        self.authorized_sessions.discard(conn)


class RedisStore:
    """The same records in Redis, shared by every worker (``--redis URL``).

    Keys (all under ``prefix``): ``b:<id>`` a booking (JSON, ``SET NX``: ids never collide),
    ``bs:<id>`` "booked" once its deposit is paid; ``c:<call id>`` the booking a call made
    (``SET NX``: one per call, across workers); ``d:<eid>`` a deposit page, ``dp:<eid>`` paid,
    ``db:<eid>`` its booking; ``a:<eid>`` an authorization page waiting (the session's token,
    or ``-`` for a 2026-07-28 call), ``ad:<eid>`` completed, ``az:<token>`` an authorized session.
    Everything but the bookings expires (``ttl`` seconds; a deposit page is kept once booked):
    no clean-up on cancellation is ever needed.

    Lifecycle: the client is opened by :meth:`run` (start it in the server's task group,
    ``await tg.start(store.run)``) or ``async with RedisStore(url) as store``. While Redis does
    not answer, the tools end with a tool error saying to try again later.
    """

    def __init__(self, url: str, *, prefix: str = "booking:", ttl: float = 86_400.0, timeout: float = 5.0) -> None:
        # The client, opened by run() and kept open; the URL and the coredis extra are checked here.
        self._redis = RedisClient(url, name="--redis", decode_responses=True)
        self._nx = self._redis.coredis.tokens.PureToken.NX
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        self.timeout = timeout
        # per worker: a session's token (its authorization in Redis) and its pending page
        self._tokens: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._pending: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    # lifecycle

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the client open until cancelled (reopened with backoff when it fails)."""
        await self._redis.run(task_status=task_status)

    async def __aenter__(self) -> RedisStore:
        await self._redis.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._redis.__aexit__(exc_type, exc, tb)

    async def _do(self, command: str, *args: Any, **kwargs: Any) -> Any:
        client = self._redis.client
        if client is None:
            raise ToolError("The booking store (Redis) is not available right now. Try again later.")
        try:
            with anyio.fail_after(self.timeout):
                return await getattr(client, command)(*args, **kwargs)
        except Exception as exc:
            log.warning("booking store: Redis at %s: %s failed (%r)", safe_url(self.url), command, exc)
            raise ToolError("The booking store (Redis) did not answer. Try again later.") from None

    def _px(self, seconds: float | None = None) -> int:
        return max(1, math.ceil((self.ttl if seconds is None else seconds) * 1000))

    # bookings and deposits

    async def find(self, booking_id: str) -> Booking | None:
        p = self.prefix
        raw, status = await self._do("mget", [f"{p}b:{booking_id}", f"{p}bs:{booking_id}"])
        if raw is None:
            return None
        data = json.loads(raw)
        owner = data.get("owner")
        return Booking(booking_id, datetime.date.fromisoformat(data["date"]), data["party_size"],
                       status or data["status"], data.get("deposit"), tuple(owner) if owner else None)  # fmt: skip

    async def of_call(self, call_id: str) -> Booking | None:
        booking_id = await self._do("get", f"{self.prefix}c:{call_id}")
        return None if booking_id is None else await self.find(booking_id)

    async def create(
        self,
        call_id: str,
        day: datetime.date,
        party_size: int,
        status: str,
        deposit_id: str | None = None,
        owner: tuple[str, str] | None = None,
    ) -> Booking:
        made = await self.of_call(call_id)
        if made is not None:
            return made
        p = self.prefix
        record = json.dumps({"date": day.isoformat(), "party_size": party_size, "status": status,
                             "deposit": deposit_id, **({"owner": list(owner)} if owner else {})})  # fmt: skip
        booking_id = new_booking_id()
        while not await self._do("set", f"{p}b:{booking_id}", record, condition=self._nx):  # pragma: no cover
            booking_id = new_booking_id()  # 128 random bits: never in practice, but never two owners either
        if not await self._do("set", f"{p}c:{call_id}", booking_id, condition=self._nx, px=self._px()):
            # another round of this call, on another worker, booked in the meantime: that one counts
            await self._do("delete", [f"{p}b:{booking_id}"])
            made = await self.of_call(call_id)
            assert made is not None
            return made
        if deposit_id is not None:
            # Written before reading "paid"; the payer writes "paid" before reading this: one of us books.
            await self._do("set", f"{p}db:{deposit_id}", booking_id)
            await self._do("persist", f"{p}d:{deposit_id}")
            if await self._do("get", f"{p}dp:{deposit_id}"):
                await self._do("set", f"{p}bs:{booking_id}", "booked")
                status = "booked"
        return Booking(booking_id, day, party_size, status, deposit_id, owner)

    async def open_deposit(self, eid: str, day: datetime.date, party_size: int, expires_at: float | None) -> Deposit:
        record = json.dumps({"date": day.isoformat(), "party_size": party_size})
        ttl = self.ttl if expires_at is None else max(expires_at - time.time(), 1.0)
        await self._do("set", f"{self.prefix}d:{eid}", record, condition=self._nx, px=self._px(ttl))
        found = await self.deposit(eid)
        return found if found is not None else Deposit(day, party_size)

    async def deposit(self, eid: str) -> Deposit | None:
        p = self.prefix
        raw, paid, booking_id = await self._do("mget", [f"{p}d:{eid}", f"{p}dp:{eid}", f"{p}db:{eid}"])
        if raw is None:
            return None
        data = json.loads(raw)
        booking = await self.find(booking_id) if booking_id else None
        return Deposit(datetime.date.fromisoformat(data["date"]), data["party_size"], bool(paid), booking)

    async def pay(self, eid: str) -> bool | None:
        p = self.prefix
        if not await self._do("exists", [f"{p}d:{eid}"]):
            return None
        first = bool(await self._do("set", f"{p}dp:{eid}", "1", condition=self._nx, px=self._px()))
        await self._do("persist", f"{p}dp:{eid}")
        booking_id = await self._do("get", f"{p}db:{eid}")
        if booking_id:
            await self._do("set", f"{p}bs:{booking_id}", "booked")
        return first

    async def drop_unbooked_deposit(self, eid: str) -> None:
        # The call that opened the page ended without a booking (declined, cancelled, refused). Shielded: a
        # 2025-11-25 call cancelled with its session still removes its page; never on 2026-07-28 (see the app).
        p = self.prefix
        with anyio.CancelScope(shield=True):
            try:
                if not await self._do("exists", [f"{p}db:{eid}"]):
                    await self._do("delete", [f"{p}d:{eid}", f"{p}dp:{eid}"])
            except ToolError:
                pass  # Redis is away: the page expires on its own

    # calendar authorizations

    def _token(self, conn: object) -> str:
        token = self._tokens.get(conn)
        if token is None:
            token = self._tokens[conn] = secrets.token_urlsafe(18)
        return token

    async def authorized(self, conn: object) -> bool:
        token = self._tokens.get(conn)
        return token is not None and bool(await self._do("exists", [f"{self.prefix}az:{token}"]))

    async def pending_authorization(self, conn: object, eid: str | None = None) -> str:
        pending = self._pending.get(conn)
        if pending is not None and await self.authorization_pending(pending):
            return pending
        eid = self._pending[conn] = eid or secrets.token_urlsafe(18)
        await self._do("set", f"{self.prefix}a:{eid}", self._token(conn), px=self._px())
        return eid

    async def wait_authorization(self, eid: str) -> None:
        await self._do("set", f"{self.prefix}a:{eid}", "-", condition=self._nx, px=self._px())

    async def authorization_pending(self, eid: str) -> bool:
        return bool(await self._do("exists", [f"{self.prefix}a:{eid}"]))

    async def complete_authorization(self, eid: str) -> bool | None:
        p = self.prefix
        token = await self._do("getdel", f"{p}a:{eid}")
        if token is None:
            return None
        await self._do("set", f"{p}ad:{eid}", "1", px=self._px())
        if token == "-":
            return False
        await self._do("set", f"{p}az:{token}", "1", px=self._px())
        return True

    async def authorization_done(self, eid: str) -> bool:
        return bool(await self._do("exists", [f"{self.prefix}ad:{eid}"]))

    async def end_authorization(self, eid: str) -> None:
        await self._do("delete", [f"{self.prefix}a:{eid}", f"{self.prefix}ad:{eid}"])

    def connection_closed(self, conn: object) -> None:
        """A session ended on this worker: forget its token here (its records in Redis expire)."""
        self._tokens.pop(conn, None)
        self._pending.pop(conn, None)
