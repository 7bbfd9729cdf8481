"""Medians, tables, the target check and the chart, from a results document of ``run.py``.

    python benchmarks/report.py benchmarks/results/latest.json           # print the tables
    python benchmarks/report.py benchmarks/results/latest.json --tables  # and rewrite results/latest.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

SERVERS = ("minimcp", "official", "floor")
NAMES = {"minimcp": "minimcp", "official": "official SDK", "floor": "floor"}


def med(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    acc: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in doc["rows"]:
        if not row or "error" in row:
            continue
        group = row.get("group", "")
        sc = row["scenario"]
        base = f"{row['wire']}/{row['server']}/{row['backend']}"
        if row.get("asgi", "default") != "default":  # the HTTP server comparison (run.py --only http-servers)
            base += f"/{row['asgi']}"
        if sc in ("pending", "sessions") and row["wire"] != "memory":
            key = f"{sc}:{base}/{row['n']}" + (f"/x{row['sessions']}" if sc == "sessions" else "")
            if group == "stdio-tracemalloc":
                key = f"traced:{sc}:{base}"
            f0 = row["fills"][0]
            a = acc[key]
            for k in ("seconds_to_all_pending", "seconds_to_drain", "bytes_per_pending_rss", "gc_objects_per_pending",
                      "bytes_per_pending_traced", "server_cpu_seconds_fill"):
                if k in f0:
                    a[k].append(f0[k])
            a["idle_rss"].append(row.get("idle_rss_external"))
            if len(row["fills"]) > 1:
                a["rss_after_each_drain"].append([f["rss_after_drain"] for f in row["fills"]])
                a["rss_before"].append(row["fills"][0]["rss_before"])
                a["bytes_per_pending_rss_each_fill"].append([f["bytes_per_pending_rss"] for f in row["fills"]])
            for k in ("top_filename", "top_lineno", "gc_types"):
                if k in f0:
                    a[k].append(f0[k])
            if group == "stdio-tracemalloc":
                a["n"].append(row["n"])
                fl = row["fills"][-1]
                for k in ("traced_after_drain_delta", "after_drain_top_lineno", "after_drain_gc_types"):
                    if k in fl:
                        a[k].append(fl[k])
        elif sc == "pending":  # in memory
            a = acc[f"pending:{base}/{row['n']}"]
            for k in ("seconds_to_all_pending", "seconds_to_drain", "bytes_per_pending_rss_both_sides"):
                a[k].append(row[k])
        elif sc == "roundtrip":
            a = acc[f"roundtrip:{base}/{row['c']}"]
            for k in ("round_trips_per_second", "p50_ms", "p99_ms", "server_cpu_share", "driver_cpu_share",
                      "process_cpu_share"):
                if k in row:
                    a[k].append(row[k])
        elif sc == "idle":
            a = acc[f"idle:{base}/{row['sessions']}"]
            for k, v in row.items():
                if k.startswith("bytes_per_idle") or k == "idle_server_rss":
                    a[k].append(v)
    out: dict[str, Any] = {}
    for key, metrics in acc.items():
        out[key] = {}
        for k, vals in metrics.items():
            if k in ("rss_after_each_drain", "bytes_per_pending_rss_each_fill", "top_filename", "top_lineno",
                     "gc_types", "after_drain_top_lineno", "after_drain_gc_types"):
                out[key][k] = vals[0] if len(vals) == 1 else vals  # raw lists (first run if one)
            else:
                m = med(vals)
                out[key][k] = m
                out[key][k + "__runs"] = len([v for v in vals if v is not None])
    out["targets"] = targets(out, doc)
    return out


def get(summary: dict[str, Any], key: str, metric: str) -> Any:
    return summary.get(key, {}).get(metric)


# --- the targets ---------------------------------------------------------------------------------


def targets(s: dict[str, Any], doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, measured side by side (stdio, asyncio, 2025-11-25, form elicitation)."""
    t: list[dict[str, Any]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        t.append({"target": name, "met": ok, "detail": detail})

    for n in (10_000, 100_000):
        b = get(s, f"pending:stdio/minimcp/asyncio/{n}", "bytes_per_pending_rss")
        if b is not None:
            add(f"<= 6 KB server RSS per pending at N={n:,} (stretch <= 4 KB)", b <= 6144,
                f"{b / 1024:.2f} KB" + (" (stretch met)" if b <= 4096 else ""))
    tm = get(s, "pending:stdio/minimcp/asyncio/10000", "seconds_to_all_pending")
    tf = get(s, "pending:stdio/floor/asyncio/10000", "seconds_to_all_pending")
    if tm and tf:
        add("within 2x of the floor's time until 10,000 pending", tm <= 2 * tf,
            f"{tm:.3f} s vs floor {tf:.3f} s = {tm / tf:.1f}x")
    big = [r for r in doc["rows"] if r and r.get("server") == "minimcp" and r.get("scenario") == "pending"
           and r.get("wire") == "stdio" and r.get("n", 0) >= 100_000 and "error" not in r]
    if big:
        ns = sorted({r["n"] for r in big})
        add("100,000 pending on one process", True, "ran: N = " + ", ".join(f"{n:,}" for n in ns)
            + f", every answer checked ({sum(len(r['fills']) for r in big)} fills)")
    for c in (100, 1000):
        m = get(s, f"roundtrip:stdio/minimcp/asyncio/{c}", "round_trips_per_second")
        o = get(s, f"roundtrip:stdio/official/asyncio/{c}", "round_trips_per_second")
        f = get(s, f"roundtrip:stdio/floor/asyncio/{c}", "round_trips_per_second")
        if m and o:
            add(f">= 20x the official SDK's round trips/s at C={c:,}", m >= 20 * o,
                f"{m:,.0f} vs {o:,.0f} = {m / o:.1f}x")
        if m and f:
            add(f"within 2x of the floor's round trips/s at C={c:,}", 2 * m >= f,
                f"{m:,.0f} vs {f:,.0f} = {f / m:.1f}x")
    cs = [c for c in (1, 100, 1000, 10000) if get(s, f"roundtrip:stdio/minimcp/asyncio/{c}", "p99_ms")]
    if len(cs) >= 2:
        p = {c: get(s, f"roundtrip:stdio/minimcp/asyncio/{c}", "p99_ms") for c in cs}
        steps = [f"C {a}->{b}: p99 x{p[b] / p[a]:.1f} (C x{b // a})" for a, b in itertools.pairwise(cs)]
        ok = all(p[b] / p[a] <= b / a for a, b in itertools.pairwise(cs))
        add("p99 latency grows no faster than C", ok, "; ".join(steps))
    def per_fill(v: Any) -> Any:  # one run's list, or the per-fill medians of several runs
        if v and isinstance(v[0], list):
            return [statistics.median(x) for x in zip(*v, strict=False)]
        return v

    for n in (10_000, 100_000):
        k = f"pending:stdio/minimcp/asyncio/{n}"
        drains = per_fill(get(s, k, "rss_after_each_drain"))
        before = get(s, k, "rss_before")
        if drains and before:
            growth = (drains[-1] - drains[0]) / max(1, drains[0] - before)
            fk = f"pending:stdio/floor/asyncio/{n}"
            fd, fb = per_fill(get(s, fk, "rss_after_each_drain")), get(s, fk, "rss_before")
            floor = ""
            if fd and fb:
                floor = (f"; the floor: {fb / 2**20:.0f} MB, then " + ", ".join(f"{d / 2**20:.0f}" for d in fd)
                         + f" MB ({100 * (fd[-1] - fd[0]) / max(1, fd[0] - fb):+.0f}%)")
            add(f"no growth across repeated fills (N={n:,}, {len(drains)} fills; RSS)", growth <= 0.10,
                "RSS before " + f"{before / 2**20:.0f} MB; after each drain: "
                + ", ".join(f"{d / 2**20:.0f} MB" for d in drains)
                + f" (fill 1 -> {len(drains)}: {100 * growth:+.0f}% of the first fill's residue){floor}. "
                "No Python process gives freed arenas back to the OS here, so RSS stays near the peak.")
    held = {srv: get(s, f"traced:pending:stdio/{srv}/asyncio", "traced_after_drain_delta") for srv in SERVERS}
    ns = {srv: get(s, f"traced:pending:stdio/{srv}/asyncio", "n") for srv in SERVERS}
    if held.get("minimcp") is not None and ns.get("minimcp"):
        per = {k: held[k] / ns[k] for k in SERVERS if held.get(k) is not None and ns.get(k)}
        add("live objects back near the start after a drain (tracemalloc)", per["minimcp"] <= 256,
            "still held per drained call: " + ", ".join(f"{NAMES[k]} {v:,.0f} B" for k, v in per.items()))
    return t


# --- tables --------------------------------------------------------------------------------------


def fmt_bytes(b: float | None) -> str:
    return "-" if b is None else f"{b / 1024:.1f} KB"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def fmt_rate(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f} ms" if x < 10 else f"{x:,.0f} ms"


def ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    r = a / b
    return f"{r:.1f}x" if r < 100 else f"{r:,.0f}x"


def side_by_side(s: dict[str, Any], wire: str, backend: str) -> str:
    """One wire and backend: minimcp | official | floor, with ratios."""
    head = ("| figure | minimcp | official SDK | floor | official / minimcp | minimcp / floor |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: |")
    lines = [head]

    def row(label: str, key: str, metric: str, fmt: Any, higher_better: bool = False) -> None:
        v = {srv: get(s, key.format(srv=srv), metric) for srv in SERVERS}
        if all(x is None for x in v.values()):
            return
        if higher_better:  # columns still read "how many times better minimcp is" / "how far from the floor"
            r1, r2 = ratio(v["minimcp"], v["official"]), ratio(v["floor"], v["minimcp"])
        else:
            r1, r2 = ratio(v["official"], v["minimcp"]), ratio(v["minimcp"], v["floor"])
        lines.append(f"| {label} | {fmt(v['minimcp'])} | {fmt(v['official'])} | {fmt(v['floor'])} | {r1} | {r2} |")

    for n in (1000, 10_000, 100_000, 1_000_000):
        row(f"server RSS per pending, N={n:,}", f"pending:{wire}/{{srv}}/{backend}/{n}", "bytes_per_pending_rss",
            fmt_bytes)
    for n in (1000, 10_000, 100_000, 1_000_000):
        row(f"time until all pending, N={n:,}", f"pending:{wire}/{{srv}}/{backend}/{n}", "seconds_to_all_pending",
            fmt_s)
    for n in (1000, 10_000, 100_000, 1_000_000):
        row(f"time to drain, N={n:,}", f"pending:{wire}/{{srv}}/{backend}/{n}", "seconds_to_drain", fmt_s)
    for c in (1, 100, 1000, 10000):
        row(f"round trips/s, C={c:,}", f"roundtrip:{wire}/{{srv}}/{backend}/{c}", "round_trips_per_second",
            fmt_rate, True)
    for c in (1, 100, 1000, 10000):
        row(f"p50 latency, C={c:,}", f"roundtrip:{wire}/{{srv}}/{backend}/{c}", "p50_ms", fmt_ms)
        row(f"p99 latency, C={c:,}", f"roundtrip:{wire}/{{srv}}/{backend}/{c}", "p99_ms", fmt_ms)
    return "\n".join(lines) if len(lines) > 1 else ""


def per_backend(s: dict[str, Any], wire: str, servers: tuple[str, ...]) -> str:
    lines = ["| server | backend | RSS/pending 10k | RSS/pending 100k | to 10k pending | drain 10k | "
             "rt/s C=1 | rt/s C=100 | rt/s C=1,000 | rt/s C=10,000 | p50 / p99 C=100 | p50 / p99 C=1,000 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for srv in servers:
        for b in ("asyncio", "uvloop", "trio"):
            p10, p100 = f"pending:{wire}/{srv}/{b}/10000", f"pending:{wire}/{srv}/{b}/100000"
            mkey = "bytes_per_pending_rss" if wire != "memory" else "bytes_per_pending_rss_both_sides"
            rt = [get(s, f"roundtrip:{wire}/{srv}/{b}/{c}", "round_trips_per_second") for c in (1, 100, 1000, 10000)]
            lat = [(get(s, f"roundtrip:{wire}/{srv}/{b}/{c}", "p50_ms"), get(s, f"roundtrip:{wire}/{srv}/{b}/{c}",
                                                                              "p99_ms")) for c in (100, 1000)]
            cells = [fmt_bytes(get(s, p10, mkey)), fmt_bytes(get(s, p100, mkey)),
                     fmt_s(get(s, p10, "seconds_to_all_pending")), fmt_s(get(s, p10, "seconds_to_drain")),
                     *[fmt_rate(x) for x in rt],
                     *[f"{fmt_ms(a)} / {fmt_ms(b_)}" if a is not None else "-" for a, b_ in lat]]
            if all(c in ("-", "- / -") for c in cells):
                continue
            lines.append(f"| {NAMES[srv]} | {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def roundtrip_table(s: dict[str, Any], wire: str, servers: tuple[str, ...]) -> str:
    lines = ["| server | backend | C=1 rt/s (p50 / p99) | C=100 rt/s (p50 / p99) | C=1,000 rt/s (p50 / p99) |",
             "| --- | --- | ---: | ---: | ---: |"]
    for srv in servers:
        for b in ("asyncio", "uvloop", "trio"):
            cells = []
            for c in (1, 100, 1000):
                k = f"roundtrip:{wire}/{srv}/{b}/{c}"
                r = get(s, k, "round_trips_per_second")
                cells.append("-" if r is None else f"{fmt_rate(r)} ({fmt_ms(get(s, k, 'p50_ms'))} / "
                                                   f"{fmt_ms(get(s, k, 'p99_ms'))})")
            if all(c == "-" for c in cells):
                continue
            lines.append(f"| {NAMES[srv]} | {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sessions_table(s: dict[str, Any]) -> str:
    lines = ["| wire | server | backend | sessions x pending | server RSS per pending | time until all pending | "
             "time to drain |", "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for key in sorted(k for k in s if k.startswith("sessions:")):
        wire, srv, b, n, x = key.split(":", 1)[1].split("/")
        sess = int(x[1:])
        v = s[key]
        lines.append(f"| {wire} | {NAMES[srv]} | {b} | {sess:,} x {int(n) // sess} | "
                     f"{fmt_bytes(v.get('bytes_per_pending_rss'))} | {fmt_s(v.get('seconds_to_all_pending'))} | "
                     f"{fmt_s(v.get('seconds_to_drain'))} |")
    return "\n".join(lines)


def footprint_table(s: dict[str, Any], doc: dict[str, Any]) -> str:
    imp = doc.get("import_seconds", {})
    lines = ["| figure | minimcp | official SDK | floor |", "| --- | ---: | ---: | ---: |"]
    if imp:
        lines.append("| import time (fresh interpreter, median) | "
                     + " | ".join(fmt_ms(imp[k] * 1e3) if imp.get(k) is not None else "-" for k in SERVERS) + " |")
    idle = [get(s, f"pending:stdio/{srv}/asyncio/1000", "idle_rss") for srv in SERVERS]
    lines.append("| RSS of an idle stdio server (after the handshake and 50 calls) | "
                 + " | ".join("-" if v is None else f"{v / 2**20:.1f} MB" for v in idle) + " |")
    for label, key, metric in (
        ("server bytes per idle session, Streamable HTTP (RSS, 1,000 sessions)", "idle:http/{srv}/asyncio/1000",
         "bytes_per_idle_session_rss"),
        ("server bytes per idle session, WebSocket (RSS, 1,000 sessions)", "idle:ws/{srv}/asyncio/1000",
         "bytes_per_idle_session_rss"),
        ("bytes per idle session in memory, both sides (tracemalloc, 1,000)", "idle:memory/{srv}/asyncio/1000",
         "bytes_per_idle_session_traced_both_sides"),
    ):
        v = [get(s, key.format(srv=srv), metric) for srv in SERVERS]
        if any(x is not None for x in v):
            lines.append(f"| {label} | " + " | ".join(fmt_bytes(x) for x in v) + " |")
    return "\n".join(lines)


def targets_table(s: dict[str, Any]) -> str:
    lines = ["| target | met | measured |", "| --- | --- | --- |"]
    for t in s.get("targets", []):
        lines.append(f"| {t['target']} | {'yes' if t['met'] else 'NO'} | {t['detail']} |")
    return "\n".join(lines)


def tracemalloc_table(s: dict[str, Any]) -> str:
    lines = []
    for srv in SERVERS:
        v = s.get(f"traced:pending:stdio/{srv}/asyncio")
        if not v or not v.get("top_filename"):
            continue
        n = int(v["n"])
        held = v.get("traced_after_drain_delta")
        lines.append(f"**{NAMES[srv]}**: {fmt_bytes(v.get('bytes_per_pending_traced'))} traced and "
                     f"{v.get('gc_objects_per_pending'):.0f} GC-tracked objects per pending elicitation "
                     f"(N = {n:,}, server side)"
                     + (f"; still held after the second drain: {held / n:,.0f} B per call" if held is not None else "")
                     + ". By file:\n")
        lines.append("| file | bytes per pending | blocks per pending |\n| --- | ---: | ---: |")
        for name, size, count in v["top_filename"][:9]:
            if size / n < 16:
                continue
            short = name.split("site-packages/")[-1].split("lib/python3.11/")[-1].rsplit(":", 1)[0]
            lines.append(f"| {short} | {size / n:,.0f} | {count / n:.1f} |")
        if v.get("gc_types"):
            kinds = ", ".join(f"{k / n:.0f} {name.replace('builtins.', '')}" for name, k in v["gc_types"][:25]
                              if k / n >= 0.5)
            lines.append(f"\nGC-tracked objects per pending, by type: {kinds}.")
        lines.append("")
    return "\n".join(lines)


def text_tables(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    m = doc["machine"]
    parts = [
        f"Machine: {m.get('nproc')} CPUs ({m.get('cpu_model', '?')}), "
        f"{(m.get('memory_bytes') or 0) / 2**30:.0f} GB, Python {m.get('python')}; "
        + ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items() if v)
        + f". {doc['repeats']} repeats, medians; whole run {doc['seconds']:.0f} s.",
        "",
        "### Side by side: server over stdio, asyncio, the same raw driver for all three",
        "", side_by_side(s, "stdio", "asyncio"), "",
        "### Targets", "", targets_table(s), "",
        "### stdio, every backend", "", per_backend(s, "stdio", SERVERS), "",
        "### In memory (each SDK with its own client; memory covers both sides)", "",
        per_backend(s, "memory", ("minimcp", "official")), "",
        "### WebSocket round trips (the official SDK has no WebSocket server)", "",
        roundtrip_table(s, "ws", ("minimcp",)), "",
        "### Streamable HTTP round trips", "", roundtrip_table(s, "http", ("minimcp", "official")), "",
        "### Many sessions", "", sessions_table(s), "",
        "### Footprint", "", footprint_table(s, doc), "",
        "### Where the bytes go (tracemalloc, server side, stdio, asyncio)", "", tracemalloc_table(s),
    ]
    return "\n".join(p for p in parts if p is not None)


# --- chart ---------------------------------------------------------------------------------------


def chart(doc: dict[str, Any], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no chart")
        return None
    s = doc["summary"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = {"minimcp": "tab:blue", "official": "tab:red", "floor": "tab:gray"}
    styles = {"asyncio": "-", "uvloop": "--", "trio": ":"}
    for srv in SERVERS:
        for b in ("asyncio", "uvloop", "trio"):
            pts = [(n, get(s, f"pending:stdio/{srv}/{b}/{n}", "bytes_per_pending_rss"))
                   for n in (1000, 10_000, 100_000, 1_000_000)]
            pts = [(n, v / 1024) for n, v in pts if v is not None]
            if pts:
                ax1.plot(*zip(*pts, strict=True), styles[b], marker="o", color=colors[srv], label=f"{NAMES[srv]} {b}")
            pts = [(c, get(s, f"roundtrip:stdio/{srv}/{b}/{c}", "round_trips_per_second"))
                   for c in (1, 100, 1000, 10000)]
            pts = [(c, v) for c, v in pts if v is not None]
            if pts:
                ax2.plot(*zip(*pts, strict=True), styles[b], marker="o", color=colors[srv], label=f"{NAMES[srv]} {b}")
    ax1.set(xscale="log", yscale="log", xlabel="N pending elicitations (one session)",
            ylabel="server RSS per pending (KB)", title="Memory per pending elicitation (stdio)")
    ax2.set(xscale="log", yscale="log", xlabel="C concurrent callers", ylabel="elicitation round trips / s",
            title="Round trips per second (stdio)")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, ncol=1, loc="center left", bbox_to_anchor=(1.0, 0.5))
    m = doc["machine"]
    fig.suptitle(f"minimcp vs official SDK {m['packages'].get('mcp')} vs floor - {m.get('nproc')} CPUs, "
                 f"Python {m.get('python')} (medians)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_tables(doc: dict[str, Any], path: Path) -> None:
    """Every table of a full run, in ``path`` (``results/latest.md``; the page quotes a few of them)."""
    m = doc["machine"]
    stamp = (f"# Every table of the latest full run (`benchmarks/run.py`)\n\n"
             f"Written by `benchmarks/run.py` ({doc.get('when', '?')}, minimcp commit "
             f"{m.get('minimcp_commit', '?')}); `benchmarks/README.md` explains what is measured.")
    path.write_text(f"{stamp}\n\n{text_tables(doc)}\n\n![chart](chart.png)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--tables", action="store_true", help="rewrite results/latest.md")
    parser.add_argument("--chart", action="store_true")
    args = parser.parse_args()
    doc = json.loads(Path(args.results).read_text())
    doc["summary"] = summarize(doc)
    print(text_tables(doc))
    here = Path(__file__).resolve().parent
    if args.chart:
        chart(doc, here / "results" / "chart.png")
    if args.tables:
        write_tables(doc, here / "results" / "latest.md")


if __name__ == "__main__":
    main()
