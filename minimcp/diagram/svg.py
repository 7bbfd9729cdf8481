"""Draw a :class:`~minimcp.diagram.layout.Diagram` as SVG, or as a self-contained HTML page around it.

The picture: a time column on the left, one lifeline per client connection and one for the
server; one arrow per message, one row each, in time order. Requests are solid arrows, responses
dashed, errors red, notifications dotted. Each request opens an activation bar on the side that
serves it (concurrent calls stand side by side); a call that asked questions, or that took
several 2026-07-28 rounds, is framed, so what happened inside it shows. Every arrow carries its
whole message as a tooltip; in the HTML page it also links to the message written out below.
Nothing is loaded from the network: no script, no web font, no external style.
"""

from __future__ import annotations

from html import escape

from minimcp.diagram.layout import Call, Diagram, Event, shorten

__all__ = ["render_html", "render_svg"]

ROW = 30  # vertical distance between two arrows
TOP = 84  # room for the lifelines' heads and the legend
TIME_COLUMN = 86
CLIENT_GAP = 250  # between two client lifelines
SPAN = 470  # between the last client lifeline and the server's
BAR = 10  # an activation bar's width
LANE = 7  # how far concurrent bars stand apart
LANES = 12  # bars side by side at most (more concurrent calls reuse the lanes, overlapping)
CHAR = 7.3  # width of one character of the labels' 12 px monospace font
TOOLTIP = 6000  # characters of a message kept in its tooltip in a plain SVG
PAGE_TOOLTIP = 1000  # the same in the HTML page, which also shows every message whole
PALETTE = ("#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457", "#4e342e", "#283593")

_STYLE = """
.lifeline{stroke:#90a4ae;stroke-width:1.5;stroke-dasharray:8 5}
.head{fill:#eceff1;stroke:#546e7a;stroke-width:1.2}
.head-text{font:600 14px sans-serif;fill:#263238}
.time{font:11px monospace;fill:#78909c}
.label{font:12px monospace;fill:#263238}
.note{font:italic 11px sans-serif;fill:#607d8b}
.bar{fill:#fff;stroke:#546e7a;stroke-width:1}
.bar.open{stroke-dasharray:3 3}
.frame{fill-opacity:.05;stroke-width:1.2}
.frame-label{font:600 11px sans-serif}
.arrow{stroke-width:1.6;fill:none}
.request .arrow{stroke:#1f3f8f}
.result .arrow{stroke:#2e7d32;stroke-dasharray:7 4}
.error .arrow{stroke:#c62828;stroke-dasharray:7 4}
.error .label{fill:#b71c1c}
.notification .arrow{stroke:#6a1b9a;stroke-dasharray:2 4}
.other .arrow{stroke:#9e9e9e;stroke-dasharray:1 3}
.flagged .label{fill:#e65100}
.msg:hover .label{font-weight:bold}
.legend{font:11px sans-serif;fill:#455a64}
"""

_MARKERS = """<defs>
<marker id="head-request" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" markerHeight="9" orient="auto">
<path d="M0,0 L10,5 L0,10 z" fill="#1f3f8f"/></marker>
<marker id="head-result" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" markerHeight="9" orient="auto">
<path d="M0,0 L10,5 L0,10" fill="none" stroke="#2e7d32" stroke-width="1.5"/></marker>
<marker id="head-error" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" markerHeight="9" orient="auto">
<path d="M0,0 L10,5 L0,10" fill="none" stroke="#c62828" stroke-width="1.5"/></marker>
<marker id="head-notification" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto">
<path d="M0,1 L9,5 L0,9 z" fill="#6a1b9a"/></marker>
<marker id="head-other" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto">
<path d="M0,1 L9,5 L0,9 z" fill="#9e9e9e"/></marker>
</defs>"""


class _Layout:
    def __init__(self, diagram: Diagram) -> None:
        self.d = diagram
        self.clients = [TIME_COLUMN + 110 + i * CLIENT_GAP for i in range(len(diagram.lifelines))]
        self.server = (self.clients[-1] if self.clients else TIME_COLUMN + 110) + SPAN
        self.bars = min(diagram.lanes(client_side=False), LANES)  # concurrent calls' bars on the server's lifeline
        self.width = self.server + 200 + self.bars * LANE
        self.height = TOP + ROW * (len(diagram.events) + 1) + 24

    def y(self, index: int) -> float:
        return TOP + ROW * (index + 0.5)

    def bar_x(self, call: Call) -> float:
        """The centre of a call's activation bar (on the side that serves it)."""
        base = self.server if call.from_client else self.clients[call.lifeline]
        return base + (call.lane % LANES) * LANE

    def ends(self, event: Event) -> tuple[float, float]:
        """Where the event's arrow starts and ends."""
        client, server = self.clients[event.lifeline], self.server
        call = event.call
        if event.kind == "request" and call is not None:  # from the asking call's bar to the new bar
            target = self.bar_x(call) - (BAR / 2 if event.from_client else -BAR / 2)
            source = client if event.from_client else (self.bar_x(call.parent) if call.parent else server)
            return source, target
        if event.kind in ("result", "error") and call is not None and call.end == event.index:
            source = self.bar_x(call) + (-BAR / 2 if event.from_client else BAR / 2)
            target = server if event.from_client else client
            if not event.from_client and call.parent is None:
                target = client
            return source, target
        return (client, server) if event.from_client else (server, client)


def _frames(layout: _Layout) -> list[str]:
    """Frames around calls that asked questions, and around the rounds of one 2026-07-28 call."""
    d = layout.d
    out: list[str] = []
    spans: dict[int, list[Call]] = {}
    for call in d.calls:
        spans.setdefault(call.chain, []).append(call)
    for chain, calls in spans.items():
        first, last = calls[0], calls[-1]
        if not first.from_client or (len(calls) == 1 and not first.children):
            continue
        color = PALETTE[(chain - 1) % len(PALETTE)]
        top = layout.y(first.start) - ROW / 2 + 2
        end = last.end if last.end is not None else len(d.events) - 1
        bottom = layout.y(end) + ROW / 2 - 2
        inset = 4 * min(first.lane, 6)
        left = layout.clients[first.lifeline] - 64 + inset
        right = layout.server + 64 + (first.lane % LANES) * LANE - inset
        rounds = f" · {len(calls)} rounds" if len(calls) > 1 else ""
        asked = sum(len(c.children) for c in calls)
        questions = f" · asked {asked}" if asked else ""
        out.append(
            f'<g class="frame-group"><rect class="frame" x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
            f'height="{bottom - top:.1f}" rx="6" fill="{color}" stroke="{color}"/>'
            f'<text class="frame-label" x="{layout.server + 14 + layout.bars * LANE:.1f}" y="{top + 12:.1f}" '
            f'fill="{color}">'
            f"{escape(shorten(first.name + rounds + questions, 48))}</text></g>"
        )
    return out


def _bars(layout: _Layout) -> list[str]:
    out: list[str] = []
    last = len(layout.d.events) - 1
    for call in layout.d.calls:
        x = layout.bar_x(call) - BAR / 2
        top = layout.y(call.start)
        bottom = layout.y(call.end if call.end is not None else last) + (0 if call.end is not None else ROW / 2)
        kind = "bar" if call.end is not None else "bar open"
        out.append(
            f'<rect class="{kind}" x="{x:.1f}" y="{top:.1f}" width="{BAR}" height="{max(bottom - top, 4):.1f}"/>'
        )
    return out


def _arrow(layout: _Layout, event: Event, *, link: bool) -> str:
    x1, x2 = layout.ends(event)
    y = layout.y(event.index)
    room = max(abs(x2 - x1) - 16, 120)
    label = shorten(event.label, int(room / CHAR))
    mid = (x1 + x2) / 2
    flagged = " flagged" if "unknown" in event.note or "guessed" in event.note or "never saw" in event.note else ""
    keep = PAGE_TOOLTIP if link else TOOLTIP
    tip = event.detail if len(event.detail) <= keep else event.detail[:keep] + "\n… (cut: the whole message is below)"
    title = f"#{event.index + 1} · line {event.line} · +{event.t:.3f} s" + (f" · {event.note}" if event.note else "")
    parts = [
        f'<g class="msg {event.kind}{flagged}" id="a{event.index + 1}">',
        f"<title>{escape(title)}\n{escape(tip)}</title>",
        f'<line class="arrow" x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" '
        f'marker-end="url(#head-{event.kind})"/>',
        f'<text class="label" x="{mid:.1f}" y="{y - 5:.1f}" text-anchor="middle">{escape(label)}</text>',
    ]
    if event.note:
        nx = min(x1, x2) + 6
        parts.append(f'<text class="note" x="{nx:.1f}" y="{y + 13:.1f}">{escape(shorten(event.note, 60))}</text>')
    parts.append(f'<text class="time" x="8" y="{y + 4:.1f}">+{event.t:.3f} s</text>')
    parts.append("</g>")
    body = "".join(parts)
    return f'<a href="#m{event.index + 1}">{body}</a>' if link else body


def _heads(layout: _Layout) -> list[str]:
    out = []
    names = [(x, n) for x, n in zip(layout.clients, layout.d.lifelines, strict=True)] + [
        (layout.server, layout.d.server)
    ]
    for x, name in names:
        w = max(len(name) * 8.5 + 24, 90)
        out.append(f'<line class="lifeline" x1="{x}" y1="{TOP - 30}" x2="{x}" y2="{layout.height - 10}"/>')
        out.append(f'<rect class="head" x="{x - w / 2:.1f}" y="{TOP - 62}" width="{w:.1f}" height="30" rx="5"/>')
        out.append(f'<text class="head-text" x="{x}" y="{TOP - 42}" text-anchor="middle">{escape(name)}</text>')
    legend = [("request", "request"), ("result", "result"), ("error", "error"), ("notification", "notification")]
    x = layout.width - 4 * 92 - 8
    for kind, text in legend:
        out.append(
            f'<g class="{kind}"><line class="arrow" x1="{x}" y1="12" x2="{x + 30}" y2="12" '
            f'marker-end="url(#head-{kind})"/><text class="legend" x="{x + 36}" y="16">{text}</text></g>'
        )
        x += 92
    return out


def render_svg(diagram: Diagram, *, links: bool = False) -> str:
    """The diagram as one standalone SVG document (``links``: arrows link to ``#m<n>`` anchors)."""
    layout = _Layout(diagram)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width}" height="{layout.height}" '
        f'viewBox="0 0 {layout.width} {layout.height}" role="img" aria-label="sequence diagram of an MCP wire trace">',
        f"<style>{_STYLE}</style>",
        _MARKERS,
        f'<rect x="0" y="0" width="{layout.width}" height="{layout.height}" fill="#fff"/>',
        *_frames(layout),
        *_heads(layout),
        *_bars(layout),
        *(_arrow(layout, e, link=links) for e in diagram.events),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


_PAGE_STYLE = """
body{font:14px/1.45 sans-serif;color:#263238;margin:24px;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}
.sub{color:#607d8b;margin:0 0 16px}
.canvas{overflow:auto;background:#fff;border:1px solid #cfd8dc;border-radius:6px}
details{border-bottom:1px solid #eceff1;padding:2px 0}
details:target{background:#fff8e1}
summary{cursor:pointer;font:12px monospace}
pre{font:12px monospace;background:#f5f5f5;padding:8px;overflow:auto;max-height:420px;margin:4px 0 8px}
.problems{color:#b71c1c}
"""


def render_html(diagram: Diagram, *, title: str = "MCP wire trace") -> str:
    """A self-contained page: the SVG inline, then every message in full (each arrow links to it)."""
    counts = {k: sum(1 for e in diagram.events if e.kind == k) for k in ("request", "result", "error", "notification")}
    sub = (
        f"{len(diagram.events)} messages between {', '.join(diagram.lifelines)} and {diagram.server} "
        f"({diagram.side}-side trace): {counts['request']} requests, {counts['result']} results, "
        f"{counts['error']} errors, {counts['notification']} notifications. "
        "Hover an arrow for its message; click it to read the message in full below."
    )
    messages = [
        f'<details id="m{e.index + 1}"><summary>#{e.index + 1} +{e.t:.3f} s '
        f"{'client' if e.from_client else 'server'} → {'server' if e.from_client else 'client'}: "
        f"{escape(shorten(e.label, 140))}</summary><pre>{escape(e.detail)}</pre></details>"
        for e in diagram.events
    ]
    problems = ""
    if diagram.problems:
        items = "".join(f"<li>{escape(p)}</li>" for p in diagram.problems)
        problems = f'<h2>Skipped lines</h2><ul class="problems">{items}</ul>'
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_PAGE_STYLE}</style></head><body>\n"
        f'<h1>{escape(title)}</h1><p class="sub">{escape(sub)}</p>\n'
        f'<div class="canvas">\n{render_svg(diagram, links=True)}</div>\n'
        f"{problems}<h2>Messages</h2>\n" + "\n".join(messages) + "\n</body></html>\n"
    )
