"""Hive name patterns: the linear glob matcher answers exactly what the regular expressions it
replaced answered, and adversarial patterns cost name × pattern, not exponential time."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hms_cache_proxy.handler.names import filter_names as handler_filter
from hms_cache_proxy.store.patterns import filter_names as store_filter

NAMES = st.text(alphabet="aAbB._*|İi ", max_size=8)
PATTERNS = st.text(alphabet="aAbB._*| ", max_size=8)


def _regex_handler(names: list[str], pattern: str) -> list[str]:
    """The handler's former regex: '.' one character, '*' any run, alternatives kept as given."""
    regex = "|".join(
        "(?:" + "".join(".*" if c == "*" else "." if c == "." else re.escape(c) for c in alt) + ")"
        for alt in pattern.strip().split("|")
    )
    compiled = re.compile(regex, re.IGNORECASE | re.DOTALL)
    return [n for n in names if compiled.fullmatch(n)]


def _regex_store(names: list[str], pattern: str | None) -> list[str]:
    """The store's former regex: '.' literal, alternatives trimmed, empty or '*' all."""
    if pattern is None or pattern.strip() in ("", "*"):
        return list(names)
    regex = "|".join(
        "(?:" + ".*".join(re.escape(part) for part in alt.strip().split("*")) + ")"
        for alt in pattern.split("|")
    )
    compiled = re.compile(regex, re.IGNORECASE | re.DOTALL)
    return [n for n in names if compiled.fullmatch(n)]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NAMES, max_size=6), PATTERNS)
def test_glob_matcher_agrees_with_the_former_regexes(names: list[str], pattern: str) -> None:
    assert handler_filter(names, pattern) == _regex_handler(names, pattern)
    assert store_filter(names, pattern) == _regex_store(names, pattern)


def test_many_stars_against_a_long_name_answer_at_once() -> None:
    name = "a" * 60
    pattern = "*a" * 20 + "*b"  # a backtracking regex takes astronomically long here
    assert handler_filter([name, name + "b"], pattern) == [name + "b"]
    assert store_filter([name, name + "B"], pattern) == [name + "B"]
    assert handler_filter([name], "*a" * 60) == [name]
    assert handler_filter([name], "*a" * 61) == []


def test_anchored_ends_and_wildcards() -> None:
    names = ["sales_2024", "sales_2025", "salesx", "other", "x_sales"]
    assert handler_filter(names, "sales*") == ["sales_2024", "sales_2025", "salesx"]
    assert handler_filter(names, "*sales") == ["x_sales"]
    assert handler_filter(names, "sales_202.|oth*") == ["sales_2024", "sales_2025", "other"]
    assert handler_filter(names, "s*s*4") == ["sales_2024"]
    assert store_filter(names, "sales_202.") == []  # '.' is literal in the store's patterns
    assert store_filter(names, " SALESX | oth* ") == ["salesx", "other"]


def test_long_patterns_are_matched_but_not_remembered() -> None:
    from hms_cache_proxy.handler import names
    from hms_cache_proxy.store import patterns

    long = "*" + "x" * 5000 + "*|sales*"
    before = (names._compile_cached.cache_info().currsize, patterns._compile_cached.cache_info())
    assert handler_filter(["sales_1", "other"], long) == ["sales_1"]
    assert store_filter(["sales_1", "other"], long) == ["sales_1"]
    after = (names._compile_cached.cache_info().currsize, patterns._compile_cached.cache_info())
    assert after[0] == before[0] and after[1].currsize == before[1].currsize
