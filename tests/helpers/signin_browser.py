"""A browser for the terminal's sign-in tests: run as ``BROWSER``, it signs alice in at NanoIDP headlessly.

``python tests/helpers/signin_browser.py URL`` (the terminal's :mod:`webbrowser` runs it with the
authorization URL as its one argument) appends ``login_hint=persona-auto-login:<user>`` (user:
``SIGNIN_BROWSER_USER``, default ``alice``), fetches it, follows NanoIDP's redirect to the terminal's
loopback listener as a browser would, and appends one JSON line to the file ``SIGNIN_BROWSER_LOG``:
the authorization URL's query, where the redirect went, and the status and text of the page the
listener answered. With ``SIGNIN_BROWSER_DENY`` set it goes straight back to the redirect URI with
``error=access_denied``, as the browser of a person who refuses would. Standard library only (it
runs under any interpreter); exits 1 when a step fails.

:func:`browser_command` writes an executable wrapper for it (``BROWSER`` names one program, no
arguments: :mod:`webbrowser` does not split it).
"""

from __future__ import annotations

import json
import os
import pathlib
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 30  # seconds per request

HERE = pathlib.Path(__file__).resolve()


def browser_command(directory: pathlib.Path, python: str) -> str:
    """An executable in ``directory`` that runs this script under ``python``; its path (for ``BROWSER``)."""
    wrapper = directory / "signin-browser"
    wrapper.write_text(f"#!{python}\nimport runpy\nrunpy.run_path({str(HERE)!r}, run_name='__main__')\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


class _Recorder(urllib.request.HTTPRedirectHandler):
    def __init__(self) -> None:
        self.locations: list[str] = []

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        self.locations.append(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def main(argv: list[str]) -> int:
    url = argv[1]
    user = os.environ.get("SIGNIN_BROWSER_USER", "alice")
    recorder = _Recorder()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), recorder)
    hinted = url + ("&" if "?" in url else "?") + urllib.parse.urlencode({"login_hint": f"persona-auto-login:{user}"})
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    record: dict[str, object] = {"query": query}
    if os.environ.get("SIGNIN_BROWSER_DENY"):  # the person refuses: the authorization server redirects with an error
        denied = {"error": "access_denied", "state": query["state"]}
        hinted = query["redirect_uri"] + "?" + urllib.parse.urlencode(denied)
    try:
        with opener.open(hinted, timeout=TIMEOUT) as answer:
            record.update(status=answer.status, page=answer.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        record.update(status=exc.code, page=exc.read().decode("utf-8", "replace"))
    except OSError as exc:
        record.update(status=0, page=f"{type(exc).__name__}: {exc}")
    record["redirects"] = recorder.locations
    log = os.environ.get("SIGNIN_BROWSER_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")
    return 0 if record["status"] == 200 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
