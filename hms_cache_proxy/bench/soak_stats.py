"""Per-window figures of a soak run and the verdict drawn from them (pure, no I/O).

A soak run is cut into equal time windows. Each window has its calls, errors, latency
percentiles and the server's resident memory at the window's end. The verdict answers the
three questions of a soak: did any call fail, is p99 stable, is memory flat. The first
windows (warm-up: caches filling, the interpreter's allocator growing) and a last window cut
short by the end of the run are left out of the stability and memory judgements, never out
of the error count.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MIN_STEADY_WINDOWS = 6
"""Fewer steady windows than this: too short a run to judge stability or memory (errors are
still judged)."""


@dataclass(frozen=True)
class Limits:
    """What counts as stable and flat.

    ``p99_trend``: the median p99 of the last third of the steady windows over that of the
    first third must stay at or below this (a p99 that keeps growing fails);
    ``p99_spread``: the worst window's p99 over the median window p99 (one slow window on a
    shared machine is tolerated up to this);
    ``rss_drift_fraction`` / ``rss_drift_bytes``: memory is flat when the last steady window's
    RSS exceeds the first's by no more than the larger of the two.
    """

    p99_trend: float = 1.5
    p99_spread: float = 3.0
    rss_drift_fraction: float = 0.05
    rss_drift_bytes: int = 16 * 1024 * 1024


@dataclass
class Window:
    """One time window of the run (``start_s``/``end_s``: seconds since the run started)."""

    index: int
    start_s: float
    end_s: float
    calls: int = 0
    errors: int = 0
    p50_ms: float | None = None
    p99_ms: float | None = None
    rss_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return max(0.0, self.end_s - self.start_s)

    @property
    def calls_per_s(self) -> float | None:
        return self.calls / self.seconds if self.seconds > 0 else None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["calls_per_s"] = self.calls_per_s
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Window:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty sequence."""
    ordered = sorted(samples)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def make_window(
    index: int,
    start_s: float,
    end_s: float,
    latencies_s: Sequence[float],
    errors: int,
    rss_bytes: int | None,
) -> Window:
    """A window from its call latencies (seconds) and error count."""
    w = Window(index, round(start_s, 3), round(end_s, 3), len(latencies_s), errors)
    if latencies_s:
        w.p50_ms = statistics.median(latencies_s) * 1000
        w.p99_ms = percentile(latencies_s, 0.99) * 1000
    w.rss_bytes = rss_bytes
    return w


def steady_windows(windows: Sequence[Window], warmup_s: float, window_s: float) -> list[Window]:
    """The windows the stability verdict looks at: past the warm-up, long enough (a last
    window under half the window length is cut off by the end of the run), with calls."""
    return [
        w
        for w in windows
        if w.start_s >= warmup_s - 1e-6 and w.seconds >= window_s / 2 and w.calls > 0
    ]


def _thirds_ratio(values: list[float]) -> float | None:
    n = max(1, len(values) // 3)
    first, last = statistics.median(values[:n]), statistics.median(values[-n:])
    return last / first if first > 0 else None


def _slope_per_minute(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) points, per minute."""
    if len(points) < 2:
        return None
    mx = statistics.fmean(p[0] for p in points)
    my = statistics.fmean(p[1] for p in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    if den == 0:
        return None
    return 60 * sum((x - mx) * (y - my) for x, y in points) / den


def verdict(
    windows: Sequence[Window],
    *,
    warmup_s: float,
    window_s: float,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """Judge the run: ``passed`` and, per question, the figures and why.

    ``status`` is ``pass``, ``fail`` or ``not judged`` (too few steady windows, or no
    memory readings) for each of errors, p99 and memory; the run passes when none fails.
    """
    limits = limits or Limits()
    errors = sum(w.errors for w in windows)
    calls = sum(w.calls for w in windows)
    steady = steady_windows(windows, warmup_s, window_s)
    out: dict[str, Any] = {
        "calls": calls,
        "errors": errors,
        "steady_windows": len(steady),
        "limits": asdict(limits),
        "errors_verdict": {
            "status": "pass" if errors == 0 else "fail",
            "why": f"{errors:,} of {calls:,} calls failed",
        },
    }
    enough = len(steady) >= MIN_STEADY_WINDOWS
    too_short = (
        f"{len(steady)} steady windows (after {warmup_s:g} s of warm-up); "
        f"at least {MIN_STEADY_WINDOWS} are needed to judge"
    )

    p99s = [w.p99_ms for w in steady if w.p99_ms is not None]
    p99: dict[str, Any] = {"status": "not judged", "why": too_short}
    if p99s:
        med = statistics.median(p99s)
        p99.update(
            min_ms=min(p99s),
            median_ms=med,
            max_ms=max(p99s),
            spread=max(p99s) / med if med > 0 else None,
            trend=_thirds_ratio(p99s),
        )
    if enough and p99s:
        spread, trend = p99["spread"], p99["trend"]
        bad = []
        if spread is not None and spread > limits.p99_spread:
            bad.append(f"worst window p99 is {spread:.2f}× the median (limit {limits.p99_spread})")
        if trend is not None and trend > limits.p99_trend:
            bad.append(
                f"p99 grew {trend:.2f}× from the first third of the run to the last "
                f"(limit {limits.p99_trend})"
            )
        p99["status"] = "fail" if bad else "pass"
        p99["why"] = "; ".join(bad) or (
            f"p99 {min(p99s):.2f}–{max(p99s):.2f} ms across {len(p99s)} windows, "
            f"last third / first third {trend:.2f}×"
            if trend is not None
            else f"p99 {min(p99s):.2f}–{max(p99s):.2f} ms across {len(p99s)} windows"
        )
    out["p99"] = p99

    rss = [(w.end_s, w.rss_bytes) for w in steady if w.rss_bytes is not None]
    memory: dict[str, Any] = {"status": "not judged", "why": too_short}
    if rss:
        first, last = rss[0][1], rss[-1][1]
        allowed = max(limits.rss_drift_bytes, int(limits.rss_drift_fraction * first))
        memory.update(
            first_bytes=first,
            last_bytes=last,
            max_bytes=max(v for _, v in rss),
            drift_bytes=last - first,
            drift_fraction=(last - first) / first if first else None,
            allowed_bytes=allowed,
            slope_bytes_per_min=_slope_per_minute([(float(t), float(v)) for t, v in rss]),
        )
        if enough:
            drift = last - first
            memory["status"] = "pass" if drift <= allowed else "fail"
            memory["why"] = (
                f"RSS {first / 2**20:.1f} → {last / 2**20:.1f} MiB over the steady windows "
                f"(drift {drift / 2**20:+.1f} MiB; allowed {allowed / 2**20:.1f} MiB)"
            )
    elif enough:
        memory["why"] = "no readings of the server's resident memory (see --server-pid)"
    out["memory"] = memory

    statuses = [out["errors_verdict"]["status"], p99["status"], memory["status"]]
    out["passed"] = "fail" not in statuses
    out["judged"] = all(s != "not judged" for s in statuses)
    return out
