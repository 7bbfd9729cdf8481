"""Who each URL step is for: step ids bound to a person by a MAC, so any worker's page can check the opener.

The spec's URL mode asks two things of a server that checks bearer tokens: bind each URL
elicitation to the person it was made for, and verify that whoever opens its page is that person
before accepting anything. The person is :attr:`minimcp.auth.principal.Principal.key`,
``(iss, sub)``.

With authorization on, a step id made for a person (:meth:`Context.url_step_id
<minimcp.server.context.Context.url_step_id>`, or the id minted by ``ctx.url_elicitation`` /
``ctx.elicit_url``) ends in ``~`` and a MAC of the id and the person under the server's state
keys: any worker that shares the keys (``MINIMCP_STATE_KEYS``) can tell whether a signed-in
person is the one the step is for, without a shared table, and an id cannot be re-bound to another
person without the key (a stripped or changed tag names another step, which the application does
not know). Without authorization ids carry no tag and nothing is checked, as before.

A page asks :meth:`Server.url_step_is_for <minimcp.server.server.Server.url_step_is_for>` before
it shows anything, and completes with ``Server.complete_url_elicitation(id, person=...)``, which
raises :class:`WrongPerson` for anyone else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING

from minimcp.wire.errors import MinimcpError

if TYPE_CHECKING:
    from minimcp.auth.principal import Principal

__all__ = ["SEPARATOR", "PersonKey", "WrongPerson", "bind", "is_bound", "is_for", "made_for", "person_key"]

#: A person: ``(iss, sub)`` (:attr:`minimcp.auth.principal.Principal.key`).
PersonKey = tuple[str, str]
#: Between a step id and its tag (unreserved in URLs: a page id keeps it as it is).
SEPARATOR = "~"
_TAG_BYTES = 16  # 128 bits of HMAC-SHA256: forging one is guessing it


class WrongPerson(MinimcpError, PermissionError):
    """A URL step was made for someone else (or for a person, and nobody signed in): nothing was done.

    A page answers ``403`` and changes nothing; the step stays open for its person.
    """

    def __init__(self, step_id: str) -> None:
        super().__init__(f"URL step {step_id!r} was made for another person")
        self.step_id = step_id


def person_key(person: Principal | PersonKey | None) -> PersonKey | None:
    """The key of ``person`` (a :class:`Principal`, a key already, or ``None`` for nobody)."""
    if person is None or isinstance(person, tuple):
        return person
    return person.key


def _tag(key: bytes, base: str, person: PersonKey) -> str:
    message = "\x00".join(("minimcp url step", base, person[0], person[1])).encode()
    digest = hmac.new(key, message, hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def bind(base: str, person: PersonKey | None, key: bytes) -> str:
    """``base`` bound to ``person`` (``base~tag``); ``base`` itself for nobody (no authorization)."""
    if person is None:
        return base
    return f"{base}{SEPARATOR}{_tag(key, base, person)}"


def is_bound(step_id: str) -> bool:
    """Whether ``step_id`` carries a person's tag (it was made with authorization on)."""
    return SEPARATOR in step_id


def is_for(step_id: str, person: PersonKey | None, keys: Sequence[bytes]) -> bool | None:
    """Whether the bound ``step_id`` was made for ``person`` (under any of ``keys``: rotation);
    ``None`` for an id that carries no tag (made without authorization, or by the application)."""
    base, sep, tag = step_id.rpartition(SEPARATOR)
    if not sep:
        return None
    if person is None:
        return False
    return any(hmac.compare_digest(tag, _tag(key, base, person)) for key in keys)


def made_for(
    step_id: str,
    person: Principal | PersonKey | None,
    keys: Sequence[bytes],
    held: Container[str],
    people: Mapping[str, PersonKey],
) -> bool:
    """Whether ``step_id`` was made for ``person`` (:meth:`Server.url_step_is_for
    <minimcp.server.server.Server.url_step_is_for>`).

    A bound id is checked by its tag (``keys``: on any worker sharing them). Another id by what this
    worker recorded when one of its sessions received it (``held``, ``people``; made for nobody:
    anyone, as without authorization). An id neither bound nor held here is for nobody but ``None``:
    with a person signed in it cannot be checked, so it is refused (fail closed).
    """
    key = person_key(person)
    verdict = is_for(step_id, key, keys)
    if verdict is not None:
        return verdict
    if step_id in held:
        recorded = people.get(step_id)
        return recorded is None or recorded == key
    return key is None
