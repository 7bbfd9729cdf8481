"""Tables for the Streamable HTTP server comparison (``run.py --only http-servers``).

    python benchmarks/report_http.py benchmarks/results/<file>.json

For each C, ASGI server and loop: minimcp and the HTTP floor side by side (medians of
the interleaved repeats; the ratio is the median of the ratios of adjacent runs),
p50 / p99, the server's CPU per round trip (CPU seconds / round trips: steadier than
round trips/s on a shared machine; "floor / minimcp CPU" compares them) and the driver's CPU share.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from typing import Any

KEYS = ("round_trips_per_second", "p50_ms", "p99_ms", "server_cpu_share", "driver_cpu_share", "loadavg_1min")


def _med(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def summarize(doc: dict[str, Any], group: str = "http-servers") -> dict[str, Any]:
    acc: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    by_repeat: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for row in doc["rows"]:
        if not row or "error" in row or row.get("group") != group:
            continue
        key = f"{row['c']}/{row.get('asgi', 'default')}/{row['backend']}/{row['server']}"
        a = acc[key]
        for k in KEYS:
            a[k].append(row.get(k))
        rt = row["round_trips_per_second"]
        us = row["server_cpu_share"] / rt * 1e6 if rt else None
        a["server_cpu_us_per_round_trip"].append(us)
        a["runs"].append(1)
        by_repeat[(key.rsplit("/", 1)[0], row.get("repeat", 0))][row["server"]] = rt
    out: dict[str, Any] = {}
    for key, a in acc.items():
        out[key] = {k: _med(v) for k, v in a.items() if k != "runs"}
        out[key]["runs"] = len(a["runs"])
    for (stem, _r), servers in by_repeat.items():
        if "minimcp" in servers and "floor" in servers:
            out.setdefault(f"{stem}/ratio", {"minimcp_over_floor": []})["minimcp_over_floor"].append(
                servers["minimcp"] / servers["floor"])
    for key, v in out.items():
        if key.endswith("/ratio"):
            v["runs"] = len(v["minimcp_over_floor"])
            v["minimcp_over_floor"] = _med(v["minimcp_over_floor"])
    return out


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f} ms" if v >= 10 else f"{v:.1f} ms"


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def markdown(doc: dict[str, Any]) -> str:
    s = doc.get("http_servers") or summarize(doc)
    lines: list[str] = []
    cs = sorted({int(k.split("/")[0]) for k in s})
    for c in cs:
        lines += [f"**C = {c:,}**", "",
                  "| ASGI server | loop | minimcp rt/s | floor rt/s | minimcp / floor | minimcp p50 / p99 | "
                  "floor p50 / p99 | server CPU per rt, minimcp / floor | floor / minimcp CPU | driver CPU share |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        stems = sorted({k.rsplit("/", 1)[0] for k in s if k.startswith(f"{c}/") and "/default/" not in k})
        for stem in stems:
            m, f, r = s.get(f"{stem}/minimcp", {}), s.get(f"{stem}/floor", {}), s.get(f"{stem}/ratio", {})
            _c, asgi, backend = stem.split("/")
            mu, fu = m.get("server_cpu_us_per_round_trip"), f.get("server_cpu_us_per_round_trip")
            cpu_ratio = f"{fu / mu:.2f}x" if mu and fu else "-"
            lines.append(
                f"| {asgi} | {backend} | {_n(m.get('round_trips_per_second'))} | "
                f"{_n(f.get('round_trips_per_second'))} | "
                f"{r.get('minimcp_over_floor', 0):.2f}x | {_ms(m.get('p50_ms'))} / {_ms(m.get('p99_ms'))} | "
                f"{_ms(f.get('p50_ms'))} / {_ms(f.get('p99_ms'))} | "
                f"{_n(mu)} / {_n(fu)} µs | {cpu_ratio} | "
                f"{m.get('driver_cpu_share', 0):.2f} / {f.get('driver_cpu_share', 0):.2f} |")
        for server, label in (("minimcp", "minimcp, `serve_http` as shipped (its default server, guarded)"),
                              ("official", "official SDK (its own app on uvicorn)")):
            v = s.get(f"{c}/default/asyncio/{server}")
            if v:
                lines.append(f"| {label} | asyncio | {_n(v.get('round_trips_per_second'))} | | | "
                             f"{_ms(v.get('p50_ms'))} / {_ms(v.get('p99_ms'))} | | "
                             f"{_n(v.get('server_cpu_us_per_round_trip'))} µs | | {v.get('driver_cpu_share', 0):.2f} |")
        lines.append("")
    load = doc.get("loadavg")
    if load:
        lines.append(f"Load average (1 min) before / after the run: {load['before'][0]:.1f} / {load['after'][0]:.1f} "
                     f"on {doc['machine'].get('nproc')} CPUs.")
    return "\n".join(lines)


def default_markdown(doc: dict[str, Any]) -> str:
    """``run.py --only http-default``: serve_http's default before and after, the floors and the official SDK."""
    s = doc.get("http_default") or summarize(doc, "http-default")
    rows = (("default", "minimcp", "minimcp, `serve_http` default now (uvicorn httptools, guarded)"),
            ("serve_http:uvicorn-h11", "minimcp", "minimcp, `serve_http` default before (uvicorn h11, guarded)"),
            ("uvicorn-httptools", "floor", "HTTP floor on uvicorn httptools"),
            ("uvicorn-h11", "floor", "HTTP floor on uvicorn h11"),
            ("default", "official", "official SDK (its own app on uvicorn)"))
    lines: list[str] = []
    for c in sorted({int(k.split("/")[0]) for k in s}):
        lines += [f"**C = {c:,}**", "",
                  "| server | round trips/s | p50 / p99 | server CPU per round trip | driver CPU share | runs |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for asgi, server, label in rows:
            v = s.get(f"{c}/{asgi}/asyncio/{server}")
            if v:
                lines.append(f"| {label} | {_n(v.get('round_trips_per_second'))} | "
                             f"{_ms(v.get('p50_ms'))} / {_ms(v.get('p99_ms'))} | "
                             f"{_n(v.get('server_cpu_us_per_round_trip'))} µs | "
                             f"{v.get('driver_cpu_share', 0):.2f} | {v.get('runs')} |")
        lines.append("")
    loads = [r["loadavg_1min"] for r in doc["rows"] if r and r.get("group") == "http-default" and "loadavg_1min" in r]
    load = doc.get("loadavg")
    if load:
        lines.append(f"Load average (1 min) before / after the run: {load['before'][0]:.1f} / {load['after'][0]:.1f} "
                     f"on {doc['machine'].get('nproc')} CPUs" + (f"; after each run {min(loads):.1f}-{max(loads):.1f}."
                                                                  if loads else "."))
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        loaded = json.load(f)
    if any(r and r.get("group") == "http-default" for r in loaded["rows"]):
        print(default_markdown(loaded))
    else:
        print(markdown(loaded))


def pending_markdown(doc: dict[str, Any]) -> str:
    """``run.py --only http-10k``: 10,000 pending calls over Streamable HTTP, minimcp and the floor, each run."""
    labels = {"minimcp": "minimcp, `serve_http` as shipped", "floor": "HTTP floor, uvicorn httptools"}
    lines = ["| server | run | time to all pending, fill 1 / 2 / 3 | server CPU per fill | RSS per pending "
             "(fill 1) | RSS idle; after each drain | answers checked (wrong) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in doc["rows"]:
        if not row or row.get("group") != "http-10k" or "error" in row:
            continue
        fills = row["fills"]
        times = " / ".join(f"{f['seconds_to_all_pending']:.1f}" for f in fills)
        cpu = " / ".join(f"{f['server_cpu_seconds_fill']:.1f}" for f in fills)
        drained = ", ".join(f"{f['rss_after_drain'] / 2**20:.0f}" for f in fills)
        checked = sum(f.get("checked", row["n"]) for f in fills)
        wrong = sum(f["wrong_answers"] + f["errors"] for f in fills)
        lines.append(
            f"| {labels.get(row['server'], row['server'])} | {row.get('repeat', 0) + 1} | {times} s | {cpu} s | "
            f"{fills[0]['bytes_per_pending_rss'] / 1024:.1f} KB | {row['idle']['rss'] / 2**20:.0f}; {drained} MB | "
            f"{checked:,} ({wrong}) |")
    return "\n".join(lines)


def modern_markdown(doc: dict[str, Any]) -> str:
    """``run.py --only http-modern``: revision 2026-07-28 over HTTP beside the handshake era (medians)."""
    rows = [r for r in doc["rows"] if r and r.get("group") in ("http-modern", "http-10k") and "error" not in r
            and r.get("server") == "minimcp"]
    lines = ["| era | calls waiting | time to all waiting, fill 1 / 2 / 3 | server CPU per call, fill | "
             "server RSS per waiting call (fill 1) | RSS idle; after each drain |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if r["scenario"] != "pending":
            continue
        fills = r["fills"]
        times = " / ".join(f"{f['seconds_to_all_pending']:.1f}" for f in fills)
        drained = ", ".join(f"{f['rss_after_drain'] / 2**20:.0f}" for f in fills)
        cpu_us = statistics.median(f["server_cpu_seconds_fill"] for f in fills) / r["n"] * 1e6
        per = fills[0]["bytes_per_pending_rss"] / 1024
        lines.append(f"| {r.get('era', 'handshake')} | {r['n']:,} | {times} s | {cpu_us:,.0f} µs | "
                     f"{per:.1f} KB | {r['idle']['rss'] / 2**20:.0f}; {drained} MB |")
    lines += ["", "| era | C | round trips/s | p50 / p99 | server CPU per round trip | driver CPU share | runs |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    acc: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["scenario"] == "roundtrip":
            acc[(r.get("era", "handshake"), r["c"])].append(r)
    for (era, c), rs in sorted(acc.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rt = _med([x["round_trips_per_second"] for x in rs])
        us = _med([x["server_cpu_share"] / x["round_trips_per_second"] * 1e6
                   for x in rs if x["round_trips_per_second"]])
        lines.append(f"| {era} | {c:,} | {_n(rt)} | {_ms(_med([x['p50_ms'] for x in rs]))} / "
                     f"{_ms(_med([x['p99_ms'] for x in rs]))} | {_n(us)} µs | "
                     f"{_med([x['driver_cpu_share'] for x in rs]):.2f} | {len(rs)} |")
    return "\n".join(lines)
