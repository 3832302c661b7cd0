"""Partition filters cannot take the service hostage: size limits with messages naming the
setting, bounded nesting, wide ORs without recursion, and LIKE without regex backtracking."""

from __future__ import annotations

import pytest

from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import MAX_NESTING, parse
from hms_cache_proxy.store.partition_filter.pushdown import pushdown
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError, Not, Or


def _ors(n: int) -> str:
    return " OR ".join(f'p = "v{i}"' for i in range(n))


def test_longer_than_the_limit_is_refused_naming_the_setting() -> None:
    with pytest.raises(FilterError, match="partition_filter_max_length") as refused:
        parse("p = 'x'" + " " * 100, max_length=50)
    assert "107 characters long" in str(refused.value)


def test_more_values_than_the_limit_are_refused_naming_the_setting() -> None:
    assert isinstance(parse(_ors(10), max_terms=10), Or)
    with pytest.raises(FilterError, match="more than 10 values .partition_filter_max_terms"):
        parse(_ors(11), max_terms=10)
    with pytest.raises(FilterError, match="partition_filter_max_terms"):
        parse("(p) IN (" + ", ".join(f"'{i}'" for i in range(11)) + ")", max_terms=10)


def test_an_error_quotes_a_long_filter_only_in_part() -> None:
    text = _ors(5000) + " OR"
    with pytest.raises(FilterError) as bad:
        parse(text)
    assert len(str(bad.value)) < 500
    assert f"({len(text):,} characters)" in str(bad.value)


def test_nesting_deeper_than_the_bound_is_refused_not_a_recursion_error() -> None:
    ok = "(" * MAX_NESTING + "p = 'a'" + ")" * MAX_NESTING
    assert compile_filter(parse(ok), ["p"], ["string"])(["a"])
    for deep in (
        "(" * 5000 + "p = 'a'" + ")" * 5000,
        "NOT " * 5000 + "p = 'a'",
        "(NOT " * 3000 + "p = 'a'" + ")" * 3000,
    ):
        with pytest.raises(FilterError, match=f"nest more than {MAX_NESTING} deep"):
            parse(deep)


def test_a_hundred_thousand_or_terms_compile_and_evaluate_without_recursion() -> None:
    node = parse(_ors(100_000) + " OR p > 'zz' OR (p < '0' AND p <> '')")
    accept = compile_filter(node, ["p"], ["string"])
    assert accept(["v99999"]) and accept(["v0"]) and accept(["zzz"]) and not accept(["w"])
    reject = compile_filter(Not(node), ["p"], ["string"])
    assert not reject(["v5"]) and reject(["w"])
    (cond,) = pushdown(parse(_ors(100_000)), ["p"], ["string"])
    assert len(cond.values) == 100_000


def test_many_typed_terms_stay_flat() -> None:
    node = parse(" AND ".join(f"n <> {i}" for i in range(20_000)))
    accept = compile_filter(node, ["n"], ["int"])
    assert accept(["20000"]) and not accept(["7"])


def test_like_with_many_wildcards_does_not_backtrack() -> None:
    pattern = "%a" * 30 + "%b"
    node = parse(f"p LIKE '{pattern}'")
    accept = compile_filter(node, ["p"], ["string"])
    assert not accept(["a" * 60]) and accept(["a" * 60 + "b"])
    underscore = compile_filter(parse("p LIKE 'a_%_c%'"), ["p"], ["string"])
    assert underscore(["axyc"]) and underscore(["abbcd"]) and not underscore(["abc"])
    assert not underscore(["AXYC"])  # LIKE is case-sensitive
