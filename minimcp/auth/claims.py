"""The principal a verified token's claims name (a JWT's payload or an introspection answer), and their time checks.

Shared by both verifiers, so that a JWT and an introspection answer saying the same thing give the same
:class:`~minimcp.auth.principal.Principal`: ``sub``, ``client_id`` (or ``azp``), ``scope`` (a
space-separated string, or ``scp``, a list), ``aud`` (a string or a list), ``exp``. A claim of the wrong
type refuses the token (``malformed``) rather than being guessed at.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from minimcp.auth.principal import Principal, TokenRefused

__all__ = ["check_times", "check_window", "finite_number", "principal_from_claims"]


def finite_number(value: object) -> float | None:
    """``value`` as a float when it is a finite JSON number (not a bool), else ``None``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _malformed(claim: str) -> TokenRefused:
    return TokenRefused("malformed", f"the token's {claim!r} claim has the wrong type")


def _strings(claims: Mapping[str, Any], name: str, *, split: bool, lists: bool = True) -> tuple[str, ...]:
    value = claims.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split()) if split else (value,)
    if lists and isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise _malformed(name)


def _optional_string(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is None or isinstance(value, str):
        return value
    raise _malformed(name)


def check_times(claims: Mapping[str, Any], now: float, leeway: float) -> None:
    """Refuse claims whose ``exp`` has passed or whose ``nbf`` has not come, ``leeway`` seconds given.

    Raises:
        TokenRefused: ``expired``, ``not_yet_valid``, or ``malformed`` (a time that is not a number).
    """
    for name in ("exp", "nbf"):
        if name in claims and finite_number(claims[name]) is None:
            raise _malformed(name)
    check_window(finite_number(claims.get("exp")), finite_number(claims.get("nbf")), now, leeway)


def check_window(exp: float | None, nbf: float | None, now: float, leeway: float) -> None:
    """Refuse a token whose ``exp`` has passed or whose ``nbf`` has not come at ``now``, ``leeway`` seconds given
    (``None``: the token does not say).

    Raises:
        TokenRefused: ``expired`` or ``not_yet_valid``.
    """
    if exp is not None and exp <= now - leeway:
        raise TokenRefused("expired", "the token has expired")
    if nbf is not None and nbf > now + leeway:
        raise TokenRefused("not_yet_valid", "the token is not valid yet")


def principal_from_claims(claims: Mapping[str, Any], issuer: str) -> Principal:
    """The principal ``claims`` name, issued by ``issuer`` (already checked by the caller).

    Raises:
        TokenRefused: ``malformed``: a claim of the wrong type.
    """
    if "scope" in claims:  # RFC 9068 / RFC 7662: one space-separated string
        scopes = _strings(claims, "scope", split=True, lists=False)
    else:  # Entra, Okta: a list (or a string) under ``scp``
        scopes = _strings(claims, "scp", split=True)
    if "exp" in claims and finite_number(claims["exp"]) is None:
        raise _malformed("exp")
    return Principal(
        issuer=issuer,
        subject=_optional_string(claims, "sub"),
        client_id=_optional_string(claims, "client_id") or _optional_string(claims, "azp"),
        scopes=frozenset(scopes),
        audience=_strings(claims, "aud", split=False),
        expires_at=finite_number(claims.get("exp")),
        claims=dict(claims),
    )
