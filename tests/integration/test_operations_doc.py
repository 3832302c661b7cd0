"""docs/operations.md against the running service: every metric it names is exported, every
alert's PromQL asks for series and labels that exist, and the endpoints it documents are
exactly the ones served (each answered by a real instance, none missing from the page)."""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from hms_cache_proxy.observability.http import ENDPOINTS
from tests.support.promql import TARGET_LABELS, exported, selectors
from tests.support.server import ROOT, running_service

DOC = ROOT / "docs" / "operations.md"
TOKEN = "ops-doc-token"
PROMETHEUS_OWN = {"up"}  # series Prometheus adds when it scrapes

# Metric names as the page writes them: not a path (hms_cache_proxy/...) or a dotted name.
METRIC = re.compile(r"\b(?:hms|process|python)_[a-z0-9_]*[a-z0-9]\b(?![/.\w])")
DOCUMENTED = re.compile(r"`(GET|POST) (/[a-z/]+)(?:\?[^`]*)?`")


def _text() -> str:
    return DOC.read_text()


def _family_names() -> set[str]:
    from hms_cache_proxy.observability import metrics

    return {family.name for family in metrics.REGISTRY.collect()}


def test_every_metric_the_page_names_is_exported() -> None:
    names, _ = exported()
    known = names | _family_names()
    mentioned = set(METRIC.findall(_text()))
    assert {"hms_cache_lag_seconds", "hms_database_pool_in_use", "hms_requests_total"} <= mentioned
    missing = sorted(mentioned - known)
    assert not missing, f"docs/operations.md names metrics the service does not export: {missing}"


def _alert_rules() -> list[dict[str, Any]]:
    rules = []
    for block in re.findall(r"```yaml\n(.*?)```", _text(), flags=re.S):
        loaded = yaml.safe_load(block)
        if isinstance(loaded, dict) and "groups" in loaded:
            for group in loaded["groups"]:
                rules.extend(group["rules"])
    return rules


def test_the_alerts_ask_for_exported_series_and_labels() -> None:
    rules = _alert_rules()
    alerts = {r["alert"] for r in rules}
    # the ones the page promises: lag, a stalled poller, stale reads, errors, the pool
    assert {"HmsCacheLagging", "HmsPollerStalled", "HmsCacheStaleReads", "HmsCallErrors"} <= alerts
    assert "HmsDatabasePoolBusy" in alerts
    names, labels = exported()
    every_label = set().union(*labels.values()) | TARGET_LABELS
    for rule in rules:
        expr = rule["expr"]
        assert expr.count("(") == expr.count(")"), expr
        for name, matchers in selectors(expr):
            if not name:
                unknown = matchers - every_label
                assert not unknown, f"{rule['alert']}: grouping by unknown {sorted(unknown)}"
            elif name in PROMETHEUS_OWN:
                continue
            else:
                assert name in names, f"{rule['alert']}: {name} is not exported"
                unknown = matchers - labels[name] - TARGET_LABELS
                assert not unknown, f"{rule['alert']}: {name} has no label(s) {sorted(unknown)}"


def test_the_page_documents_exactly_the_endpoints_served() -> None:
    text = _text()
    documented = {path for _, path in DOCUMENTED.findall(text)}
    assert documented == set(ENDPOINTS), (
        f"documented but not served: {sorted(documented - set(ENDPOINTS))}; "
        f"served but not documented: {sorted(set(ENDPOINTS) - documented)}"
    )
    in_examples = set(re.findall(r"\$B(/[a-z/]+)", text))
    assert in_examples and in_examples <= set(ENDPOINTS), sorted(in_examples - set(ENDPOINTS))


def _request(base: str, method: str, path: str) -> int:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.fixture
def instance(sqlite_url: str, tmp_path: Path) -> Any:
    with running_service(
        sqlite_url, tmp_path / "wh", metrics_port=0, admin_token=TOKEN, cache_listen=False
    ) as svc:
        yield svc


def test_each_documented_endpoint_answers_on_a_running_instance(instance: Any) -> None:
    documented = DOCUMENTED.findall(_text())
    assert documented
    for method, path in documented:
        query = "?seconds=0.1" if path.endswith("/pause") else "?db=default"
        query = "" if method == "GET" else query
        status = _request(instance.metrics_url, method, path + query)
        assert status == 200, f"{method} {path}{query}: HTTP {status}"
