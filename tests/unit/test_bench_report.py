"""The benchmark report: ratios pair by pair within a run, and the Markdown that shows them."""

from __future__ import annotations

import json
from pathlib import Path

from hms_cache_proxy.bench.report import Report, write_docs
from hms_cache_proxy.bench.runner import Result


def _result(target: str, case: str, cps: float, p50: float, mode: str = "decoded") -> Result:
    return Result(target, case, 1, mode, "ok", 100, 1.0, p50, p50 * 2, cps)


def _report() -> Report:
    report = Report(
        started="2026-01-01T00:00:00Z",
        command="hms-cache-proxy bench",
        machine={"cpus": 2, "python": "3.11"},
        settings={},
        targets=[
            {"key": k, "label": k, "status": s, "reason": "", "uri": "", "settings": {}}
            for k, s in (("db", "ok"), ("cache", "unavailable"), ("stock", "ok"), ("floor", "ok"))
        ],
    )
    report.results = [
        _result("db", "get_table", 900.0, 1.0),
        Result("cache", "get_table", 1, "decoded", "n/a", reason="cache not available yet"),
        _result("stock", "get_table", 300.0, 3.0),
        _result("floor", "get_table", 9000.0, 0.1),
        _result("db", "get_partitions_1000", 50.0, 20.0, "bytes"),
        Result("stock", "get_partitions_1000", 1, "bytes", "error", reason="boom"),
    ]
    return report


def test_ratios_are_computed_pair_by_pair_from_the_same_run() -> None:
    ratios = _report().ratios()
    by_pair = {(r["case"], r["ours"], r["vs"]): r for r in ratios}
    assert by_pair[("get_table", "db", "stock")]["calls_per_s_ratio"] == 3.0
    assert by_pair[("get_table", "db", "stock")]["p50_ratio"] == 3.0
    assert by_pair[("get_table", "db", "floor")]["calls_per_s_ratio"] == 0.1
    # Nothing for a server that could not run the case, or failed it.
    assert not any(r["ours"] == "cache" for r in ratios)
    assert ("get_partitions_1000", "db", "stock") not in by_pair


def test_markdown_shows_figures_ratios_and_unavailable_cells() -> None:
    md = _report().markdown()
    row = next(line for line in md.splitlines() if line.startswith("| get_table |"))
    assert "900/s · 1.00 / 2.00" in row and "n/a" in row and "3.00× / 3.00×" in row
    parts_row = next(line for line in md.splitlines() if "get_partitions_1000" in line)
    assert "error" in parts_row and "bytes" in parts_row
    full = _report().full_markdown("chart.png")
    assert "![calls/s per case and server](chart.png)" in full
    assert "Headline rows" in full


def test_json_round_trip_renders_the_same_table() -> None:
    report = _report()
    again = Report.from_dict(json.loads(report.to_json()))
    assert again.markdown() == report.markdown()


def test_rewriting_the_page_keeps_the_fanout_section(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nold run\n\n## Fan-out\n\nfigures of fanout\n")
    write_docs(_report(), tmp_path)
    text = page.read_text()
    assert "old run" not in text and "Headline rows" in text
    assert text.endswith("\n\n## Fan-out\n\nfigures of fanout\n")
    write_docs(_report(), tmp_path)
    assert page.read_text() == text
