"""The pass-through overhead measurement runs end to end (its figures are not judged here)."""

from __future__ import annotations

import re

import pytest

from hms_cache_proxy.bench import passthrough


def test_the_overhead_measurement_prints_both_sides_and_the_difference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert passthrough.main(["--rounds", "1", "--calls", "5"]) == 0
    out = capsys.readouterr().out
    assert "get_database, 5 calls each" in out
    for side in ("direct to the upstream", "through the proxy"):
        assert re.search(rf"{side}: +p50 \d+\.\d{{3}} ms +p99 \d+\.\d{{3}} ms", out), out
    assert re.search(r"pass-through overhead: +p50 [+-]\d+\.\d{3} ms", out), out


def test_the_cache_hit_measurement_prints_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    assert passthrough.main(["--rounds", "1", "--calls", "5", "--cache"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"proxy's cache hits: +p50 \d+\.\d{3} ms", out), out
    assert re.search(r"cache hits vs direct: +p50 [+-]\d+\.\d{3} ms", out), out
