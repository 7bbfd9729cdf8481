"""The diagram page in a real browser: the demo's own trace, drawn, opened in headless Chromium.

``examples/demo.py --script --diagram FILE`` runs the booking scenario over stdio and writes
the page. Chromium (driven over the DevTools protocol, see ``test_url_browser.py``) opens it
from disk; the test checks that the page loads with no console error and makes no network
request, and measures what is on screen: two lifelines that run the page's height, one arrow
per message, each wide enough to read, and the browser hit-tests an arrow where it is drawn.
"""

from __future__ import annotations

import base64
import contextlib
import pathlib
import subprocess
import sys
from typing import Any

import anyio

from tests.helpers.chromium import find_chromium
from tests.helpers.url_browser import REPO, Cdp, child_env, headless_chromium, png_size

TIMEOUT = 180


def look_at(browser_ws_url: str, page: pathlib.Path, screenshot: pathlib.Path) -> dict[str, Any]:
    """Open the page, gather what the browser did and what it drew. Runs in a worker thread."""
    from websockets.sync.client import connect

    with connect(browser_ws_url, open_timeout=20, max_size=64 * 2**20, compression=None) as ws:
        cdp = Cdp(ws)
        cdp.open_page()
        cdp.call("Network.enable")
        cdp.call("Log.enable")
        cdp.events.clear()
        cdp.call("Page.navigate", {"url": page.as_uri()})
        cdp.wait_event("Page.loadEventFired")
        geometry = cdp.evaluate(
            """(() => {
              const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
              const arrows = [...document.querySelectorAll('svg g.msg line.arrow')];
              const first = arrows[3];
              first.scrollIntoView({block: 'center'});
              const r = first.getBoundingClientRect();
              const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
              return {
                lifelines: [...document.querySelectorAll('svg line.lifeline')].map(box),
                arrows: arrows.map(box),
                labels: [...document.querySelectorAll('svg g.msg text.label')].map(t => t.textContent),
                hit: hit ? (hit.closest('g.msg') ? hit.closest('g.msg').id : hit.tagName) : null,
                expected: first.closest('g.msg').id,
                details: document.querySelectorAll('details').length,
              };
            })()"""
        )
        shot = cdp.call("Page.captureScreenshot", {"format": "png"})
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        with contextlib.suppress(Exception):
            cdp.call("Browser.close", browser=True)
        return {"geometry": geometry, "events": list(cdp.events)}


async def test_the_demo_diagram_in_a_real_browser(tmp_path: pathlib.Path) -> None:
    find_chromium()
    page = tmp_path / "demo.html"
    with anyio.fail_after(TIMEOUT):
        demo = await anyio.run_process(
            [sys.executable, str(REPO / "examples" / "demo.py"), "--script", "--diagram", str(page)],
            env=child_env(),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert demo.returncode == 0, demo.stderr.decode(errors="replace")[-3000:]
        assert f"is in {page}" in demo.stdout.decode()
        messages = page.read_text().count("<details id=")
        assert messages > 20
        async with headless_chromium(tmp_path / "chromium.log") as browser:
            seen = await anyio.to_thread.run_sync(look_at, browser, page, tmp_path / "shot.png")

    events = seen["events"]
    requests = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
    assert requests == [page.as_uri()], f"the page fetched more than itself: {requests}"
    errors = [e for e in events if e["method"] == "Runtime.exceptionThrown"]
    errors += [e for e in events if e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error"]
    errors += [e for e in events if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    assert not errors, errors

    g = seen["geometry"]
    assert g["details"] == messages
    (cx, _, _, ch), (sx, _, _, sh) = g["lifelines"]
    assert sx - cx > 300, "client and server lifelines stand apart"
    assert ch > 25 * messages and sh > 25 * messages, "the lifelines run down the whole exchange"
    assert len(g["arrows"]) == messages
    for left, _, width, _ in g["arrows"]:
        assert width > 150 and cx - 20 <= left <= sx + 100  # between the lifelines
    tops = [top for _, top, _, _ in g["arrows"]]
    assert tops == sorted(tops), "arrows go down the page in time order"
    assert any("elicitation/create" in label for label in g["labels"])
    assert g["hit"] == g["expected"], "the browser finds the arrow where it is drawn"
    width, height = png_size((tmp_path / "shot.png").read_bytes())
    assert width > 600 and height > 400
