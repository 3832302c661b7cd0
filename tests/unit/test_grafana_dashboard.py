"""conf/grafana-dashboard.json: a well-formed Grafana dashboard whose every query asks for
series the service exports.

The exported names come from the Prometheus registry the service serves on /metrics
(observability/metrics.py's REGISTRY), not from a list kept here: renaming a metric or a label
without updating the dashboard fails this test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.promql import TARGET_LABELS, exported, selectors

DASHBOARD = Path(__file__).resolve().parents[2] / "conf" / "grafana-dashboard.json"


def load() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def all_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dashboard["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def test_the_dashboard_has_grafanas_shape() -> None:
    d = load()
    assert isinstance(d["title"], str) and d["title"]
    assert isinstance(d["uid"], str) and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", d["uid"])
    assert isinstance(d["schemaVersion"], int)
    panels = all_panels(d)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in panels:
        assert p["type"] in {"row", "timeseries", "stat", "gauge", "table", "bargauge"}, p
        grid = p["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["targets"], f"panel {p['title']!r} has no query"
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}"
            assert t["expr"].count("(") == t["expr"].count(")"), t["expr"]
            assert t["expr"].count("{") == t["expr"].count("}"), t["expr"]


def test_no_two_panels_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for p in all_panels(load()):
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]


def test_datasource_and_instance_are_template_variables() -> None:
    variables = {v["name"]: v for v in load()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    inst = variables["instance"]
    assert inst["type"] == "query" and inst["multi"] and inst["includeAll"]
    assert inst["datasource"]["uid"] == "${datasource}"
    (name, _), *_ = selectors(inst["query"]["query"].replace("label_values", "rate"))
    names, _ = exported()
    assert name in names
    # every query is filtered by the instance variable
    for p in all_panels(load()):
        for t in p.get("targets", []):
            for metric, matchers in selectors(t["expr"]):
                if metric:
                    assert "instance" in matchers, f"{t['expr']!r}: {metric} has no instance"


def test_every_metric_and_label_in_the_queries_is_exported() -> None:
    names, labels = exported()
    exprs = [t["expr"] for p in all_panels(load()) for t in p.get("targets", [])]
    assert len(exprs) >= 20
    used: set[str] = set()
    every_label = set().union(*labels.values()) | TARGET_LABELS
    for expr in exprs:
        found = selectors(expr)
        assert any(name for name, _ in found), f"no metric in {expr!r}"
        for name, matchers in found:
            if name:
                assert name in names, f"{name!r} (in {expr!r}) is not exported by the service"
                unknown = matchers - labels[name] - TARGET_LABELS
                assert not unknown, f"{expr!r}: {name} has no label(s) {sorted(unknown)}"
                used.add(name)
            else:
                unknown = matchers - every_label
                assert not unknown, f"{expr!r}: grouping by unknown label(s) {sorted(unknown)}"
    # the panels the dashboard promises
    for name in (
        "hms_requests_total",
        "hms_request_seconds_bucket",
        "hms_cache_hits_total",
        "hms_cache_misses_total",
        "hms_cache_bytes",
        "hms_cache_partitions",
        "hms_cache_evictions_total",
        "hms_cache_lag_events",
        "hms_cache_lag_seconds",
        "hms_prewarm_tables_done",
        "hms_database_errors_total",
    ):
        assert name in used, f"no panel shows {name}"


@pytest.mark.parametrize(
    ("expr", "bad"),
    [
        ('sum(rate(hms_request_total{instance=~"$instance"}[5m]))', "hms_request_total"),
        ('hms_cache_byte{instance=~"$instance"}', "hms_cache_byte"),
        ('sum by (methd) (rate(hms_requests_total{instance=~"$i"}[5m]))', "methd"),
        ('rate(hms_cache_misses_total{instance=~"$i", reson="x"}[5m])', "reson"),
    ],
)
def test_the_check_catches_a_renamed_metric_or_label(expr: str, bad: str) -> None:
    names, labels = exported()
    every_label = set().union(*labels.values()) | TARGET_LABELS
    problems = set()
    for name, matchers in selectors(expr):
        if name and name not in names:
            problems.add(name)
        elif name:
            problems |= matchers - labels[name] - TARGET_LABELS
        else:
            problems |= matchers - every_label
    assert problems == {bad}
