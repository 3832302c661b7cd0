"""``hms-cache-proxy status``: a running instance summed up for a person, from its HTTP endpoint.

Reads /healthz, /readyz and /metrics (no token needed) and prints whether the instance is up and
ready, its connections and calls, the cache's size, event position and lag, the hit rate and the
commonest miss reasons; in front of an upstream metastore, where its notification log is
followed and how long ago the last event was applied. With ``--interval`` it scrapes twice and
adds calls per second.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TextIO

from prometheus_client.parser import text_string_to_metric_families

DEFAULT_URL = "http://127.0.0.1:9090"

EXIT_OK = 0  # up and ready
EXIT_NOT_READY = 1  # answered, but not healthy or not ready
EXIT_UNREACHABLE = 2  # no answer, or not an hms-cache-proxy


class Unreachable(Exception):
    pass


@dataclass
class Scrape:
    """The samples of one /metrics scrape, by sample name."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    at: float = 0.0

    @classmethod
    def parse(cls, text: str, at: float) -> Scrape:
        out: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[sample.name].append((dict(sample.labels), float(sample.value)))
        return cls(dict(out), at)

    def has(self, name: str) -> bool:
        return name in self.samples

    def total(self, name: str, **match: str) -> float:
        """Sum of the series named ``name`` whose labels include ``match`` (0 when absent)."""
        return sum(
            value
            for labels, value in self.samples.get(name, [])
            if all(labels.get(k) == v for k, v in match.items())
        )

    def by_label(self, name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for labels, value in self.samples.get(name, []):
            out[labels.get(label, "")] += value
        return dict(out)


@dataclass
class Report:
    url: str
    health_status: int
    health: dict[str, Any]
    ready_status: int
    ready: dict[str, Any]
    scrape: Scrape
    wall_time: float = 0.0  # time.time() of the scrape: the age of upstream events applied


def normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if "://" in url else "http://" + url


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    """GET ``url``; an HTTP error status is an answer too (503 carries the reason)."""
    request = urllib.request.Request(url, headers={"Accept": "text/plain, application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"cannot reach {url}: {reason}") from exc


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def gather(url: str, timeout: float = 5.0) -> Report:
    base = normalise_url(url)
    health_status, health = _get(base + "/healthz", timeout)
    ready_status, ready = _get(base + "/readyz", timeout)
    metrics_status, text = _get(base + "/metrics", timeout)
    if metrics_status != 200:
        raise Unreachable(f"{base}/metrics answered HTTP {metrics_status}")
    try:
        scrape = Scrape.parse(text.decode("utf-8"), time.monotonic())
    except ValueError as exc:
        raise Unreachable(f"{base}/metrics is not Prometheus text: {exc}") from exc
    if not scrape.has("hms_build_info"):
        raise Unreachable(f"{base} does not look like an hms-cache-proxy (no hms_build_info)")
    return Report(
        base, health_status, _json(health), ready_status, _json(ready), scrape, time.time()
    )


def _n(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def _bytes(value: float) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - the loop returns


def _upstream_line(upstream: dict[str, Any], now: float) -> str:
    """Where the upstream's notification log is followed: its state, the position, and when the
    newest event was applied (from /readyz ``recent_applied``: [event id, unix time])."""
    if upstream.get("by_time"):
        return f"upstream:   caching by time ({_n(upstream.get('ttl_seconds', 0))} s), no log"
    log = upstream.get("notification_log") or {}
    line = f"upstream:   log {log.get('state', '?')} ({log.get('reason', '?')})"
    recent = log.get("recent_applied") or []
    if recent:
        event_id, at = recent[-1]
        line += f"; last applied event {_n(event_id)}, {max(0.0, now - float(at)):.1f} s ago"
    else:
        line += "; no event applied yet"
    return line


def format_report(report: Report, previous: Report | None = None) -> str:
    """The summary lines (``previous``: an earlier scrape, for rates)."""
    m = report.scrape
    version = next(iter(m.by_label("hms_build_info", "version")), "?")
    lines = [f"hms-cache-proxy {version} at {report.url}"]

    h = report.health
    if report.health_status == 200:
        subject = "upstream" if "upstream" in h else "database"  # upstream mode checks that
        took = h.get(f"{subject}_seconds")
        detail = f", {subject} answered in {took * 1000:.1f} ms" if took is not None else ""
        lines.append(f"up:         yes (Thrift serving{detail})")
    else:
        lines.append(f"up:         NO (HTTP {report.health_status}: {h.get('reason', '?')})")

    r = report.ready
    pw = r.get("prewarm") or {}
    prewarm = (
        f"prewarm {str(pw.get('state', '?')).replace('_', ' ')}: "
        f"{_n(pw.get('tables_done', 0))}/{_n(pw.get('tables_total', 0))} tables, "
        f"{_n(pw.get('partitions_loaded', 0))} partitions"
    )
    if report.ready_status == 200:
        lines.append(f"ready:      yes ({prewarm})")
    else:
        lines.append(f"ready:      NO ({r.get('reason', '?')}; {prewarm})")

    outcomes = m.by_label("hms_requests_total", "outcome")
    calls = sum(outcomes.values())
    ok = outcomes.get("ok", 0.0)
    lines.append(
        f"thrift:     {_n(m.total('hms_thrift_connections'))} connections; {_n(calls)} calls "
        f"({_n(ok)} ok, {_n(calls - ok)} answered with an exception)"
    )
    if previous is not None and m.at > previous.scrape.at:
        seconds = m.at - previous.scrape.at
        before = previous.scrape.total("hms_requests_total")
        lines.append(f"rate:       {(calls - before) / seconds:,.1f} calls/s over {seconds:.1f} s")

    lines.append(
        f"cache:      {_bytes(m.total('hms_cache_bytes'))} in {_n(m.total('hms_cache_tables'))} "
        f"tables, {_n(m.total('hms_cache_partitions'))} partitions"
    )
    lines.append(
        f"events:     position {_n(m.total('hms_cache_event_position'))}; lag "
        f"{_n(m.total('hms_cache_lag_events'))} events ({m.total('hms_cache_lag_seconds'):.2f} s)"
    )

    upstream = r.get("upstream_cache")
    if isinstance(upstream, dict):
        lines.append(_upstream_line(upstream, report.wall_time))

    hits = m.total("hms_cache_hits_total")
    reasons = m.by_label("hms_cache_misses_total", "reason")
    misses = sum(reasons.values())
    if hits + misses:
        lines.append(
            f"hit rate:   {100 * hits / (hits + misses):.1f}% "
            f"({_n(hits)} hits, {_n(misses)} misses)"
        )
    else:
        lines.append("hit rate:   n/a (no cacheable reads yet)")
    top = sorted(((v, k) for k, v in reasons.items() if v > 0), reverse=True)[:3]
    lines.append("top misses: " + (", ".join(f"{k} {_n(v)}" for v, k in top) if top else "none"))
    lines.append(f"database:   {_n(m.total('hms_database_errors_total'))} driver errors")
    return "\n".join(lines)


def run(url: str, *, timeout: float = 5.0, interval: float = 0.0, out: TextIO | None = None) -> int:
    """Print the summary (to ``out``, else stdout as it is at the call); the exit code says
    up-and-ready (0), not (1), unreachable (2)."""
    try:
        first = gather(url, timeout)
        previous = None
        if interval > 0:
            time.sleep(interval)
            previous, first = first, gather(url, timeout)
    except Unreachable as exc:
        print(f"hms-cache-proxy status: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(format_report(first, previous), file=out or sys.stdout)
    healthy = first.health_status == 200 and first.ready_status == 200
    return EXIT_OK if healthy else EXIT_NOT_READY
