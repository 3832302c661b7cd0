"""The soak report as Markdown (docs/soak.md comes from ``soak --write-docs docs``)."""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.bench.report import describe_machine


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _mib(v: float | None) -> str:
    return "–" if v is None else f"{v / 2**20:.1f}"


def _status(s: str) -> str:
    return {"pass": "PASS", "fail": "FAIL"}.get(s, s)


def markdown(report: dict[str, Any]) -> str:
    """The whole report: verdict, how it was run, the windows, the calls by method."""
    s = report["settings"]
    v = report.get("verdict") or {}
    server = report.get("server", {})
    lines = ["# Soak run", ""]
    overall = "PASS" if v.get("passed") else "FAIL"
    if v.get("passed") and not v.get("judged"):
        overall = "PASS (errors only: too short to judge p99 and memory)"
    lines += [
        f"**Verdict: {overall}.** {report.get('calls', 0):,} calls in "
        f"{report.get('seconds', 0):.0f} s "
        f"({(report.get('calls_per_s') or 0):,.0f} calls/s) from {s['clients']} client "
        "processes at full speed.",
        "",
        "| question | verdict | figures |",
        "|---|---|---|",
    ]
    ev = v.get("errors_verdict", {})
    lines.append(f"| no errors | {_status(ev.get('status', '?'))} | {ev.get('why', '')} |")
    p99 = v.get("p99", {})
    spread = p99.get("spread")
    trend = p99.get("trend")
    fig = p99.get("why", "")
    if spread is not None:
        extras = [f"worst window / median window {spread:.2f}×"]
        if trend is not None and "third" not in fig:
            extras.append(f"last third / first third {trend:.2f}×")
        fig += f" ({', '.join(extras)})"
    lines.append(f"| p99 stable | {_status(p99.get('status', '?'))} | {fig} |")
    mem = v.get("memory", {})
    mfig = mem.get("why", "")
    if mem.get("slope_bytes_per_min") is not None:
        mfig += f"; least-squares slope {mem['slope_bytes_per_min'] / 2**20:+.2f} MiB/min"
    lines.append(f"| memory flat | {_status(mem.get('status', '?'))} | {mfig} |")
    lim = v.get("limits", {})
    if lim:
        lines += [
            "",
            f"Judged over the {v.get('steady_windows', 0)} windows after the first "
            f"{s['warmup_s']:g} s (warm-up) that ran a full window. p99 is stable when the "
            f"worst window's p99 is at most {lim['p99_spread']}× the median window's and the "
            f"median p99 of the last third of the windows is at most {lim['p99_trend']}× that "
            f"of the first third; memory is flat when the server's RSS at the end of the last "
            f"window exceeds that at the end of the first by at most "
            f"{lim['rss_drift_fraction'] * 100:.0f}% or {lim['rss_drift_bytes'] / 2**20:.0f} "
            "MiB, whichever is larger.",
        ]
    lines += ["", "## How it was run", ""]
    lines.append(f"- Command: `{report.get('command', '')}`")
    lines.append(f"- Started {report.get('started', '?')}, finished {report.get('finished', '?')}")
    lines.append(f"- Machine: {describe_machine(report.get('machine', {}))}")
    target = server.get("target", "?")
    if server.get("database"):
        target += f", on a {server['database']}"
    if server.get("settings"):
        target += "; settings " + ", ".join(f"{k}: {v}" for k, v in server["settings"].items())
    lines.append(f"- Server: {target}")
    lines.append(
        f"- Load: {s['clients']} clients, {s['duration_s']:g} s at most, "
        f"{s['max_requests']:,} calls at most, {s['window_s']:g}-s windows; {s['client']}"
    )
    lines.append(
        f"- Mix: {s['mix']}; reads on {s['read_table']}, writes on a scratch table "
        "per client (partitions added and dropped in batches of 10, so data stays "
        "bounded)"
    )
    if report.get("rss_before_bytes"):
        lines.append(f"- Server RSS before the load: {_mib(report['rss_before_bytes'])} MiB")

    windows = report.get("windows", [])
    has_cache = any("cache_bytes" in (w.get("extra") or {}) for w in windows)
    has_load = any("load1" in (w.get("extra") or {}) for w in windows)
    lines += ["", "## Windows", ""]
    head = "| window | seconds | calls | calls/s | p50 ms | p99 ms | errors | server RSS MiB |"
    rule = "|---:|---|---:|---:|---:|---:|---:|---:|"
    if has_cache:
        head += " cache MiB | cache hit rate |"
        rule += "---:|---:|"
    if has_load:
        head += " machine load |"
        rule += "---:|"
    lines += [head, rule]
    for w in windows:
        warm = " (warm-up)" if w["start_s"] < s["warmup_s"] - 1e-6 else ""
        row = (
            f"| {w['index']} | {w['start_s']:g}–{w['end_s']:g}{warm} | {w['calls']:,} | "
            f"{(w.get('calls_per_s') or 0):,.1f} | {_ms(w['p50_ms'])} | {_ms(w['p99_ms'])} | "
            f"{w['errors']} | {_mib(w['rss_bytes'])} |"
        )
        if has_cache:
            e = w.get("extra") or {}
            hr = e.get("hit_rate")
            row += f" {_mib(e.get('cache_bytes'))} | {'–' if hr is None else f'{hr:.1%}'} |"
        if has_load:
            load = (w.get("extra") or {}).get("load1")
            row += f" {'–' if load is None else f'{load:.1f}'} |"
        lines.append(row)

    if has_load:
        cpus = (report.get("machine") or {}).get("cpus")
        lines += [
            "",
            "*machine load*: the 1-minute load average at the window's end, on "
            f"{cpus or '?'} cores; the clients and the server count in it, and so does "
            "whatever else runs on the machine.",
        ]

    methods = report.get("methods", {})
    if methods:
        total = sum(m["calls"] for m in methods.values()) or 1
        lines += ["", "## Calls by method (whole run)", ""]
        lines += ["| method | calls | share | p50 ms | p99 ms |", "|---|---:|---:|---:|---:|"]
        for name, m in methods.items():
            lines.append(
                f"| {name} | {m['calls']:,} | {100 * m['calls'] / total:.1f}% | "
                f"{_ms(m['p50_ms'])} | {_ms(m['p99_ms'])} |"
            )
    if report.get("error_messages") or report.get("client_failures"):
        lines += ["", "## Errors", ""]
        lines += [f"- {m}" for m in report.get("error_messages", [])]
        lines += [f"- client {i}: {m}" for i, m in report.get("client_failures", {}).items()]
    return "\n".join(lines)
