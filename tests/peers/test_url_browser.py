"""URL mode end to end with a real browser: the deposit of ``examples/booking.py`` paid in Chromium.

Our client spawns the booking example over stdio and books a table for a party of 8; the
server asks (URL mode) for a deposit, the URL handler accepts and records the URL, and the
tool answers ``deposit_pending``. A headless Debian ``chromium`` then opens that URL and the
test clicks "Pay deposit" through the Chrome DevTools Protocol (CDP, over a WebSocket with
the ``websockets`` library): the page's plain form POST pays, the server sends
``notifications/elicitation/complete`` for that elicitation id, and the booking is booked.

Runs on asyncio and trio (see ``conftest.py``): the CDP conversation is synchronous
(``websockets.sync``) and runs in a worker thread (``anyio.to_thread``), so the event loop,
whichever it is, keeps serving the MCP connection while the browser works.

Chromium is required: ``tests/helpers/chromium.py`` installs it from Debian on first use when the
tests run as root (``apt-get install -y chromium``); when it cannot, the test fails and says
how to install it. Set ``MINIMCP_SKIP_BROWSER=1`` to skip it explicitly.
"""

from __future__ import annotations

import base64
import contextlib
import pathlib
import sys
from typing import Any

import anyio
import anyio.abc
import pytest

from minimcp import Accepted, Client, UrlElicitationRequest
from minimcp.transports.stdio import stdio_client
from tests.helpers.chromium import find_chromium
from tests.helpers.url_browser import REPO, STEP, Cdp, CdpError, child_env, headless_chromium, png_size, tail

BOOKING = REPO / "examples" / "booking.py"

TIMEOUT = 120  # seconds for the whole test: two process start-ups, a page load, a form POST







async def wait_for_line(path: pathlib.Path, prefix: str, process_hint: str) -> str:
    """Poll a log file until a line starting with ``prefix`` appears; return the rest of it."""
    with anyio.fail_after(30):
        while True:
            for line in tail(path, 1 << 20).splitlines():
                if line.startswith(prefix):
                    return line.removeprefix(prefix).strip()
            await anyio.sleep(0.05)
    raise AssertionError(f"no {prefix!r} line from {process_hint}")  # pragma: no cover


# --- Chromium and the DevTools protocol --------------------------------------------------------






def pay_in_browser(browser_ws_url: str, deposit_url: str, screenshot: pathlib.Path) -> dict[str, Any]:
    """The person's part, in the browser: open the page, click "Pay deposit". Runs in a thread."""
    from websockets.sync.client import connect

    # Screenshots arrive base64-encoded in one message: allow a few MB.
    with connect(browser_ws_url, open_timeout=STEP, max_size=64 * 2**20, compression=None) as ws:
        cdp = Cdp(ws)
        cdp.open_page()
        cdp.events.clear()
        navigated = cdp.call("Page.navigate", {"url": deposit_url})
        if navigated.get("errorText"):
            raise CdpError(f"navigation to {deposit_url} failed: {navigated['errorText']}")
        cdp.wait_event("Page.loadEventFired")
        before = cdp.page_state()
        button = cdp.evaluate("document.querySelector('button') && document.querySelector('button').textContent")
        # The click submits the page's plain HTML form (a POST to the same URL): a new document loads.
        cdp.events.clear()
        cdp.evaluate("document.querySelector('button').click()")
        cdp.wait_event("Page.loadEventFired")
        after = cdp.page_state()
        shot = cdp.call("Page.captureScreenshot", {"format": "png"})
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        with contextlib.suppress(Exception):
            cdp.call("Browser.close", browser=True)
        return {"before": before, "button": button, "after": after}






# --- the test ------------------------------------------------------------------------------------


class Person:
    """A URL handler: agrees to open the page (the test opens it afterwards) and records the request."""

    def __init__(self) -> None:
        self.seen: list[UrlElicitationRequest] = []

    async def __call__(self, request: UrlElicitationRequest) -> Accepted[None]:
        self.seen.append(request)
        return Accepted(None)




async def test_deposit_paid_in_a_real_browser(tmp_path: pathlib.Path) -> None:
    find_chromium()  # fail (or skip on request) before starting anything
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the environment
        pytest.fail(
            "the `websockets` package drives Chromium here (CDP): pip install -e '.[dev]' (or websockets)",
            pytrace=False,
        )
    person = Person()
    completed: list[str] = []
    server_log = tmp_path / "booking-stderr.log"
    screenshot = tmp_path / "deposit-paid.png"
    with anyio.fail_after(TIMEOUT), server_log.open("wb") as log:
        async with (
            stdio_client([sys.executable, str(BOOKING)], env=child_env(), cwd=str(REPO), stderr=log.fileno()) as tr,
            Client(tr, url_handler=person, on_elicitation_complete=completed.append) as client,
        ):
            pages = await wait_for_line(server_log, "pages: ", "examples/booking.py")
            assert pages.startswith("http://127.0.0.1:") and pages.endswith("/"), pages

            result = await client.call_tool("book_table", {"date": "2026-03-14", "party_size": 8})
            assert not result.is_error, result.text
            assert isinstance(result.structured_content, dict)
            assert result.structured_content["status"] == "deposit_pending"
            assert result.structured_content["party_size"] == 8
            booking_id = result.structured_content["booking_id"]

            [request] = person.seen
            eid = request.elicitation_id
            assert result.structured_content["elicitation_id"] == eid
            assert request.url == f"{pages}deposit/{eid}"
            assert request.info.host == "127.0.0.1" and not request.info.warning
            assert request.server_name == "booking"
            assert "deposit" in request.message.lower()
            assert completed == []

            status = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert isinstance(status.structured_content, dict)
            assert status.structured_content["status"] == "deposit_pending"

            async with headless_chromium(tmp_path / "chromium.log") as browser_ws:
                report = await anyio.to_thread.run_sync(
                    pay_in_browser, browser_ws, request.url, screenshot, abandon_on_cancel=True
                )
                # The page's POST made the server send notifications/elicitation/complete to us.
                assert await client.wait_elicitation_complete(eid, timeout=STEP), (
                    f"no notifications/elicitation/complete for {eid}; browser saw {report}; "
                    f"server log:\n{tail(server_log)}"
                )

            assert completed == [eid]
            assert report["button"] == "Pay deposit"
            assert report["before"]["title"] == "Pay the deposit"
            assert "party of 8 on 2026-03-14" in report["before"]["text"]
            assert report["after"]["url"] == request.url  # the form posts back to the same page
            assert report["after"]["title"] == "Deposit paid", report
            assert "is paid" in report["after"]["text"]

            status = await client.call_tool("booking_status", {"booking_id": booking_id})
            assert isinstance(status.structured_content, dict)
            assert status.structured_content["status"] == "booked"

    data = screenshot.read_bytes()
    width, height = png_size(data)
    assert width > 0 and height > 0 and len(data) > 1000
