"""URL-mode elicitation rules, without I/O: what a server may send, what a client shows.

Server side, :func:`check_elicitation_url` refuses before sending: a URL that is
not absolute ``http(s)``, one with a user-info part (``https://user:pw@host``
puts credentials in the URL), and plain ``http`` to anything but a loopback
host (allowed for development only).

Client side, :func:`inspect_url` gives what a person must see before
consenting: the full URL, and the host shown separately and decoded from
IDNA, with a warning flag when the host is punycode or mixes scripts (the
classic look-alike trick: a Cyrillic letter standing in for a Latin one).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import unicodedata
import urllib.parse

from minimcp.wire.errors import MinimcpError

__all__ = ["InvalidElicitationUrl", "UrlInfo", "check_elicitation_url", "inspect_url"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


class InvalidElicitationUrl(MinimcpError, ValueError):
    """A URL a server must not send in a URL-mode elicitation (the message says why)."""


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_elicitation_url(url: str) -> str:
    """Return ``url`` if a server may send it in a URL elicitation, else raise.

    Raises:
        InvalidElicitationUrl: not absolute http(s), has user info, or plain
            http to a non-loopback host.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError as exc:
        raise InvalidElicitationUrl(f"not a valid URL: {url!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidElicitationUrl(f"URL elicitation needs an absolute http(s) URL, got {url!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise InvalidElicitationUrl("the URL must not carry a user-info part (credentials in a URL leak)")
    if any(c.isspace() for c in url):
        raise InvalidElicitationUrl("the URL must not contain whitespace")
    if parts.scheme == "http" and not _is_loopback(host):
        raise InvalidElicitationUrl(
            f"plain http is allowed only to a loopback host (development); use https for {host!r}"
        )
    return url


@dataclasses.dataclass(frozen=True, slots=True)
class UrlInfo:
    """What to show a person before they consent to open a URL.

    Attributes:
        url: The full URL, exactly as received.
        host: The host, IDNA-decoded to Unicode for display.
        ascii_host: The host as sent on the wire (punycode where it applies).
        punycode: The host has ``xn--`` labels (may imitate another name).
        mixed_scripts: A label mixes letters of several scripts.
        https: The scheme is https.
    """

    url: str
    host: str
    ascii_host: str
    punycode: bool
    mixed_scripts: bool
    https: bool

    @property
    def warning(self) -> bool:
        """True when the host deserves a warning (punycode or mixed scripts)."""
        return self.punycode or self.mixed_scripts


def _decode_label(label: str) -> str:
    if label.startswith("xn--"):
        try:
            return label.encode("ascii").decode("idna")
        except (UnicodeError, ValueError):
            return label
    return label


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else None


def inspect_url(url: str) -> UrlInfo:
    """Describe ``url`` for a consent prompt (never fetches it)."""
    parts = urllib.parse.urlsplit(url)
    raw_host = parts.hostname or ""
    labels = raw_host.split(".")
    decoded = [_decode_label(label) for label in labels]
    mixed = any(len({s for s in map(_script, label) if s}) > 1 for label in decoded)
    return UrlInfo(
        url=url,
        host=".".join(decoded),
        ascii_host=raw_host,
        punycode=any(label.startswith("xn--") for label in labels),
        mixed_scripts=mixed,
        https=parts.scheme == "https",
    )
