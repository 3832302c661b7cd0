"""The soak's window statistics and verdict (bench/soak_stats.py), on made-up series.

Each doctored series breaks one of the three promises (no errors, stable p99, flat memory) and
the verdict must say which; a steady series passes; a short one is not judged.
"""

from __future__ import annotations

import pytest

from hms_cache_proxy.bench.soak_stats import (
    MIN_STEADY_WINDOWS,
    Limits,
    Window,
    make_window,
    percentile,
    steady_windows,
    verdict,
)

MiB = 2**20


def series(
    p99s: list[float],
    rss_mib: list[float] | None = None,
    errors: list[int] | None = None,
    window_s: float = 10.0,
) -> list[Window]:
    rss_mib = rss_mib or [200.0] * len(p99s)
    errors = errors or [0] * len(p99s)
    return [
        Window(
            i,
            i * window_s,
            (i + 1) * window_s,
            calls=1000,
            errors=errors[i],
            p50_ms=p / 4,
            p99_ms=p,
            rss_bytes=int(r * MiB),
        )
        for i, (p, r) in enumerate(zip(p99s, rss_mib, strict=True))
    ]


STEADY_P99 = [12, 11, 13, 12, 12, 11, 12, 13, 12, 12, 11, 12.0]


def judge(windows: list[Window], warmup_s: float = 20.0) -> dict:
    return verdict(windows, warmup_s=warmup_s, window_s=10.0)


def test_a_steady_series_passes_every_question() -> None:
    v = judge(series(STEADY_P99, [200 + 0.1 * i for i in range(12)]))
    assert v["passed"] and v["judged"]
    assert v["errors_verdict"]["status"] == "pass"
    assert v["p99"]["status"] == "pass"
    assert v["memory"]["status"] == "pass"
    assert v["steady_windows"] == 10  # the first two (20 s) are warm-up


def test_one_failed_call_fails_the_run_even_in_warm_up() -> None:
    errors = [1] + [0] * 11
    v = judge(series(STEADY_P99, errors=errors))
    assert not v["passed"]
    assert v["errors_verdict"]["status"] == "fail"
    assert v["errors"] == 1


def test_a_growing_p99_fails_on_the_trend() -> None:
    growing = [10.0 + 3 * i for i in range(12)]  # 10 → 43 ms, steady windows 16 → 43
    v = judge(series(growing))
    assert not v["passed"]
    assert v["p99"]["status"] == "fail"
    assert v["p99"]["trend"] > Limits().p99_trend
    assert "grew" in v["p99"]["why"]


def test_one_window_far_above_the_median_fails_on_the_spread() -> None:
    spiky = list(STEADY_P99)
    spiky[6] = 120.0  # 10× the median, in the middle (the thirds' medians barely move)
    v = judge(series(spiky))
    assert v["p99"]["status"] == "fail"
    assert v["p99"]["spread"] == pytest.approx(120 / 12)
    assert "median" in v["p99"]["why"]


def test_growing_memory_fails_and_reports_the_drift() -> None:
    rss = [200 + 10 * i for i in range(12)]  # +10 MiB per window
    v = judge(series(STEADY_P99, rss))
    mem = v["memory"]
    assert not v["passed"] and mem["status"] == "fail"
    # drift after warm-up: last window minus the first steady one (window 2)
    assert mem["drift_bytes"] == (310 - 220) * MiB
    assert mem["first_bytes"] == 220 * MiB and mem["last_bytes"] == 310 * MiB
    assert mem["slope_bytes_per_min"] == pytest.approx(60 * MiB)


def test_memory_growth_during_warm_up_is_not_counted() -> None:
    rss = [100, 180] + [200.0] * 10  # grows while caches fill, then flat
    v = judge(series(STEADY_P99, rss))
    assert v["memory"]["status"] == "pass"
    assert v["memory"]["drift_bytes"] == 0


def test_a_short_run_judges_errors_only() -> None:
    v = judge(series(STEADY_P99[: MIN_STEADY_WINDOWS - 1]), warmup_s=0)
    assert v["p99"]["status"] == "not judged" and v["memory"]["status"] == "not judged"
    assert v["passed"] and not v["judged"]
    v = judge(series(STEADY_P99[:3], errors=[0, 2, 0]), warmup_s=0)
    assert not v["passed"] and v["errors_verdict"]["status"] == "fail"


def test_a_last_window_cut_short_is_left_out() -> None:
    windows = series(STEADY_P99)
    windows.append(Window(12, 120.0, 121.0, calls=5, p50_ms=900, p99_ms=900, rss_bytes=0))
    assert windows[-1] not in steady_windows(windows, 20.0, 10.0)
    assert judge(windows)["passed"]


def test_make_window_computes_percentiles_and_rate() -> None:
    lat = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    w = make_window(3, 30.0, 40.0, lat, errors=0, rss_bytes=123)
    assert w.calls == 100 and w.calls_per_s == pytest.approx(10.0)
    assert w.p50_ms == pytest.approx(50.5)
    assert w.p99_ms == pytest.approx(99.0)
    assert percentile([5.0], 0.99) == 5.0
    empty = make_window(4, 40.0, 50.0, [], errors=0, rss_bytes=None)
    assert empty.p99_ms is None and empty.calls == 0
    assert Window.from_dict(w.as_dict()) == w
