"""minimcp.wire.urls: which URLs a server may send in a URL elicitation, and what a person is shown of one."""

from __future__ import annotations

import pytest

from minimcp.wire.errors import MinimcpError
from minimcp.wire.urls import InvalidElicitationUrl, UrlInfo, check_elicitation_url, inspect_url


@pytest.mark.parametrize(
    "url",
    [
        "https://pay.example/checkout?id=1",
        "https://pay.example:8443/x",
        "http://localhost:8000/x",
        "http://app.localhost/x",
        "http://127.0.0.1/x",
        "http://127.8.9.10/x",
        "http://[::1]:8080/x",
    ],
)
def test_allowed_urls_are_returned_unchanged(url: str) -> None:
    assert check_elicitation_url(url) == url


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("/relative/path", "absolute http"),
        ("ftp://files.example/x", "absolute http"),
        ("javascript:alert(1)", "absolute http"),
        ("https:///no-host", "absolute http"),
        ("https://user:pw@pay.example/x", "user-info"),
        ("https://user@pay.example/x", "user-info"),
        ("http://pay.example/x", "loopback"),
        ("http://10.0.0.1/x", "loopback"),
        ("https://pay.example/a b", "whitespace"),
        ("https://pay.example:99999/x", "not a valid URL"),
    ],
)
def test_refused_urls_name_the_problem(url: str, problem: str) -> None:
    with pytest.raises(InvalidElicitationUrl, match=problem):
        check_elicitation_url(url)


def test_the_error_is_a_minimcp_error_and_a_value_error() -> None:
    with pytest.raises(MinimcpError):
        check_elicitation_url("ftp://x")
    with pytest.raises(ValueError):
        check_elicitation_url("ftp://x")


def test_a_plain_host_gets_no_warning() -> None:
    info = inspect_url("https://pay.example/checkout")
    assert info == UrlInfo(
        url="https://pay.example/checkout", host="pay.example", ascii_host="pay.example",
        punycode=False, mixed_scripts=False, https=True,
    )
    assert not info.warning


def test_a_punycode_host_is_decoded_and_flagged() -> None:
    # "apple.com" with a Cyrillic first letter: shown decoded, flagged both as punycode and as mixed scripts.
    info = inspect_url("https://xn--pple-43d.com/pay")
    assert info.ascii_host == "xn--pple-43d.com"
    assert info.host == "\u0430pple.com"
    assert info.punycode and info.mixed_scripts and info.warning


def test_a_unicode_host_mixing_scripts_is_flagged() -> None:
    info = inspect_url("https://p\u0430ypal.com/")
    assert not info.punycode
    assert info.mixed_scripts and info.warning


def test_a_single_script_unicode_host_is_not_mixed() -> None:
    info = inspect_url("https://xn--80ak6aa92e.com/")  # "apple" spelled in Cyrillic letters only: still punycode
    assert info.punycode and not info.mixed_scripts and info.warning


def test_plain_http_is_reported() -> None:
    assert not inspect_url("http://localhost:8000/x").https


def test_a_broken_punycode_label_is_shown_as_sent() -> None:
    info = inspect_url("https://xn--zz-.example/")
    assert info.host == info.ascii_host == "xn--zz-.example"
    assert info.punycode
