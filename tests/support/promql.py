"""PromQL as the docs and the Grafana dashboard write it, held against the service's registry:
the series names and labels /metrics exports, and the selectors a query uses."""

from __future__ import annotations

import re

from prometheus_client.metrics import MetricWrapperBase

from hms_cache_proxy.observability import metrics

# Series names each metric type puts on /metrics (text format).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "stateset": ("",),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "unknown": ("",),
}
TARGET_LABELS = {"instance", "job"}  # added by Prometheus when it scrapes

PROMQL_FUNCTIONS = {
    "abs", "avg_over_time", "ceil", "clamp_max", "clamp_min", "delta", "deriv", "floor",
    "histogram_quantile", "increase", "irate", "label_replace", "max_over_time",
    "min_over_time", "predict_linear", "rate", "resets", "round", "scalar", "sort",
    "sort_desc", "sum_over_time", "time", "vector", "absent", "changes", "idelta",
}  # fmt: skip
AGGREGATIONS = {
    "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group",
}  # fmt: skip
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and",
    "or", "unless",
}  # fmt: skip


def exported() -> tuple[set[str], dict[str, set[str]]]:
    """(series names, label names by series name) of the service's registry."""
    names: set[str] = set()
    labels: dict[str, set[str]] = {}
    declared = {
        m._name: set(m._labelnames)
        for m in vars(metrics).values()
        if isinstance(m, MetricWrapperBase)
    }
    for family in metrics.REGISTRY.collect():
        family_labels = set(declared.get(family.name, set()))
        for sample in family.samples:
            family_labels |= set(sample.labels)
        for suffix in SUFFIXES[family.type]:
            series = family.name + suffix
            names.add(series)
            labels[series] = family_labels | ({"le"} if suffix == "_bucket" else set())
        for sample in family.samples:
            names.add(sample.name)
            labels.setdefault(sample.name, set()).update(family_labels, sample.labels)
    return names, labels


def _strip_grafana(expr: str) -> str:
    return re.sub(r"\$\{?\w+\}?", "x", expr)


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names in its matchers) of every series selector in ``expr``, and
    the label names of by/without/on/ignoring clauses as the pseudo-name ``""``."""
    text = _strip_grafana(expr)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)  # string literals
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery durations
    out: list[tuple[str, set[str]]] = []
    for m in re.finditer(r"\b(by|without|on|ignoring)\s*\(([^)]*)\)", text):
        out.append(("", {x.strip() for x in m.group(2).split(",") if x.strip()}))
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    pos = 0
    token = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*|\{[^}]*\}|\d+(?:\.\d+)?(?:e[+-]?\d+)?")
    while (m := token.search(text, pos)) is not None:
        word = m.group(0)
        pos = m.end()
        if word.startswith("{") or word[0].isdigit():
            continue
        following = text[pos:].lstrip()
        if following.startswith("("):
            assert word in PROMQL_FUNCTIONS | AGGREGATIONS, f"unknown PromQL function {word!r}"
            continue
        if word in KEYWORDS:
            continue
        matchers: set[str] = set()
        if following.startswith("{"):
            body = following[1 : following.index("}")]
            matchers = {
                re.split(r"=~|!~|!=|=", part)[0].strip()
                for part in re.split(r",", body)
                if part.strip()
            }
        out.append((word, matchers))
    return out
