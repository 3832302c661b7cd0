"""The sidecar fan-out measurement runs end to end (its figures are not judged here): a central
instance, one sidecar, the idle figures and the write-to-sidecar lag of every write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hms_cache_proxy.bench import fanout

pytestmark = [pytest.mark.postgres]


def test_one_sidecar_step_reports_connections_and_a_lag_for_every_write(tmp_path: Path) -> None:
    report = tmp_path / "fanout.json"
    args = ["--sidecars", "1", "--idle-seconds", "1", "--writes", "3", "--report", str(report)]
    assert fanout.main(args) == 0
    [step] = json.loads(report.read_text())
    assert step["sidecars"] == 1
    assert step["lag_samples"] == 3  # every write was seen on the sidecar
    assert step["lag_p50_ms"] is not None and step["lag_p50_ms"] > 0
    assert step["pg_connections"] >= 1
