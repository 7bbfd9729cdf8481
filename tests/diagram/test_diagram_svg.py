"""minimcp.diagram.svg: a Diagram drawn as a standalone SVG, and as an HTML page that links each arrow to its message.

test_diagram.py checks what the drawings show for whole scenarios; this file checks the renderers' own contract.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET

from minimcp.diagram.layout import Diagram, read_trace
from minimcp.diagram.svg import render_html, render_svg
from tests.helpers.diagram import err, nested_trace, note, rec, req

SVG = "{http://www.w3.org/2000/svg}"


def diagram() -> Diagram:
    return read_trace(
        [
            *nested_trace(),
            rec(13.0, "receive", req(2, "tools/call", name="<b>&amp;", arguments={})),
            rec(13.1, "send", note("notifications/message", level="info", data="x")),
            rec(13.2, "send", err(2, -32602, "bad <args>")),
        ]
    )


def messages(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if "msg" in (g.get("class") or "").split()]


def test_the_svg_is_well_formed_with_one_arrow_group_per_message() -> None:
    d = diagram()
    svg = ET.fromstring(render_svg(d))
    assert svg.tag == f"{SVG}svg"
    assert float(svg.get("width", "0")) > 0 and float(svg.get("height", "0")) > 0
    groups = messages(svg)
    assert len(groups) == len(d.events) == 7
    assert [g.get("id") for g in groups] == [f"a{n}" for n in range(1, 8)]
    kinds = [(g.get("class") or "").split()[1] for g in groups]
    assert kinds == ["request", "request", "result", "result", "request", "notification", "error"]


def test_labels_and_tooltips_are_escaped() -> None:
    text = render_svg(diagram())
    assert "<b>" not in text and "&lt;b&gt;&amp;amp;" in text
    titles = [t.text or "" for t in ET.fromstring(text).iter(f"{SVG}title")]
    assert any("bad <args>" in t for t in titles)  # the whole message travels in the tooltip


def test_nothing_is_loaded_from_elsewhere() -> None:
    for page in (render_svg(diagram()), render_html(diagram())):
        assert "<script" not in page and "@import" not in page and "url(http" not in page
        assert "href=\"http" not in page and "src=" not in page


def test_links_point_each_arrow_at_its_message() -> None:
    plain = ET.fromstring(render_svg(diagram()))
    assert list(plain.iter(f"{SVG}a")) == []
    linked = ET.fromstring(render_svg(diagram(), links=True))
    assert [a.get("href") for a in linked.iter(f"{SVG}a")] == [f"#m{n}" for n in range(1, 8)]


def test_the_page_holds_the_drawing_and_every_message() -> None:
    d = diagram()
    page = render_html(d, title="Trace <1>")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Trace &lt;1&gt;</title>" in page and "<h1>Trace &lt;1&gt;</h1>" in page
    assert all(f'<details id="m{n}">' in page for n in range(1, 8)) and '<details id="m8">' not in page
    assert "7 messages" in page and "3 requests, 2 results, 1 errors, 1 notifications" in page
    assert "Skipped lines" not in page


def test_the_page_lists_skipped_lines() -> None:
    d = read_trace([*nested_trace(), "not json", rec(20.0, "sideways", {})])
    assert len(d.problems) == 2
    page = render_html(d)
    assert "<h2>Skipped lines</h2>" in page
    assert all(f"<li>{html.escape(problem)}</li>" in page for problem in d.problems)
