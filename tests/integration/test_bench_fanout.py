"""The sidecar fan-out measurement runs end to end (its figures are not judged here): a central
instance, sidecars, the idle figures, and for every write and sidecar when the sidecar learnt of
it (its apply time in /readyz) and when a read through it first showed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hms_cache_proxy.bench import fanout

pytestmark = [pytest.mark.postgres]


def test_two_sidecars_report_a_learn_and_a_visible_lag_for_every_write(tmp_path: Path) -> None:
    report = tmp_path / "fanout.json"
    args = ["--sidecars", "2", "--idle-seconds", "1", "--writes", "3", "--report", str(report)]
    assert fanout.main(args) == 0
    [step] = json.loads(report.read_text())
    assert step["sidecars"] == 2
    assert step["pg_connections"] >= 1
    # learn: every sidecar's apply time of every write's event was found
    assert step["learn_samples"] == 3 * 2 and step["learn_missing"] == 0
    assert len(step["learn_lags_ms"]) == 3 and len(step["write_round_trip_ms"]) == 3
    for lags, round_trip in zip(step["learn_lags_ms"], step["write_round_trip_ms"], strict=True):
        assert len(lags) == 2
        # No sidecar applied an event before its write was sent (from the reply on, a lag
        # is the machine's to decide: the writer's own wake-up may come last).
        assert all(lag + round_trip >= 0 for lag in lags)
    assert step["learn_p50_ms"] is not None and step["learn_p99_ms"] is not None
    assert len(step["learn_load_before"]) == 3
    # visible: every write was seen on every sidecar
    assert step["visible_samples"] == 3 * 2
    assert step["visible_p50_ms"] is not None and step["visible_p50_ms"] > 0


def test_measure_learn_runs_the_learn_phase_alone(tmp_path: Path) -> None:
    report = tmp_path / "fanout.json"
    args = ["--sidecars", "1", "--idle-seconds", "1", "--writes", "2", "--measure", "learn"]
    assert fanout.main([*args, "--report", str(report)]) == 0
    [step] = json.loads(report.read_text())
    assert step["learn_samples"] == 2 and "visible_samples" not in step
