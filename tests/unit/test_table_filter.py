"""Hive's table-filter language: the three fields, a missing parameter as SQL NULL, and LIKE
as the JDOQL matches() pattern DataNucleus runs as SQL LIKE."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError
from hms_cache_proxy.store.table_filter import compile_table_filter, matches_as_like

TABLES = [
    SimpleNamespace(tableName="a", owner="alice", lastAccessTime=0, parameters={"K": "v1"}),
    SimpleNamespace(tableName="b", owner="bob", lastAccessTime=7, parameters={"k": "v2"}),
    SimpleNamespace(tableName="c", owner=None, lastAccessTime=None, parameters=None),
]


def matching(text: str) -> list[str]:
    test = compile_table_filter(parse(text))
    return [t.tableName for t in TABLES if test(t)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('hive_filter_field_owner__ = "bob"', ["b"]),
        ('HIVE_FILTER_FIELD_OWNER__ <> "bob"', ["a"]),  # field names in any case; NULL owner
        ("hive_filter_field_last_access__ >= 0", ["a", "b", "c"]),  # unset lastAccessTime: 0
        ("hive_filter_field_last_access__ between 1 and 10", ["b"]),
        ('hive_filter_field_params__K = "v1"', ["a"]),  # parameter keys are case-sensitive
        ('hive_filter_field_params__k like "v.*"', ["b"]),
        ('hive_filter_field_params__k not like "x.*"', ["b"]),  # NOT of unknown is unknown
        ('hive_filter_field_params__k like ".*"', ["b"]),
        ('not hive_filter_field_params__k = "v2"', []),
        ('hive_filter_field_params__k < "z"', ["b"]),
        ('(hive_filter_field_params__k) in ("v2", "v3")', ["b"]),
        ('hive_filter_field_params__k = "v2" or hive_filter_field_params__K = "v1"', ["a", "b"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_fields_and_null_parameters(text: str, expected: list[str]) -> None:
    assert matching(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('owner = "x"', "Invalid key name in filter: <owner>"),
        ('hive_filter_field_params__ = "x"', "Invalid key name in filter"),
        ('hive_filter_field_last_access__ = "x"', "Cannot compare"),
        ("hive_filter_field_owner__ = 5", "Cannot compare"),
    ],
)
def test_bad_filters(text: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        compile_table_filter(parse(text))


OWNERS = [
    SimpleNamespace(tableName=name, owner=owner, lastAccessTime=0, parameters={})
    for name, owner in [
        ("t1", "diff"),
        ("t2", "diffuse"),
        ("t3", "Diff"),
        ("t4", "d.ff"),
        ("t5", "d[i]ff"),
        ("t6", "a|b"),
        ("t7", "50%"),
        ("t8", "x_y"),
        ("t9", "a\\b"),
    ]
]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("diff.*", ["t1", "t2"]),  # the issue: a Java-regex wildcard, not SQL LIKE's %
        ("diff", ["t1"]),  # the whole owner, as matches() and LIKE both require
        ("d.ff", ["t1", "t4"]),  # . is any one character
        ("d\\.ff", ["t4"]),  # \. is a dot
        ("diff%", []),  # % and _ are themselves
        ("50%", ["t7"]),
        ("x_y", ["t8"]),
        ("(?i)DIFF", ["t1", "t3"]),  # a leading (?i) ignores case
        ("d[i]ff", ["t5"]),  # other regex syntax is literal text, as DataNucleus passes it
        ("a|b", ["t6"]),
        ("a\\b", ["t9"]),  # a backslash before another character is itself
        (".*", [f"t{i}" for i in range(1, 10)]),
    ],
)
def test_owner_like_reads_the_pattern_as_jdoql_matches(pattern: str, expected: list[str]) -> None:
    test = compile_table_filter(parse(f'hive_filter_field_owner__ like "{pattern}"'))
    assert [t.tableName for t in OWNERS if test(t)] == expected


def test_patterns_that_backtrack_in_a_regex_engine_are_plain_globs() -> None:
    """No regular-expression engine runs: ``(a.*){50}b`` would backtrack for ages in
    java.util.regex or Python's re over a long run of ``a``; here it is the LIKE glob
    ``a%a%...b``, tried segment by segment."""
    hostile = "a.*" * 50
    assert matches_as_like(hostile + "b") == ("a%" * 50 + "b", False)
    owner = SimpleNamespace(tableName="t", owner="a" * 5000, lastAccessTime=0, parameters={})
    ends_in_b = compile_table_filter(parse(f'hive_filter_field_owner__ like "{hostile}b"'))
    assert ends_in_b(owner) is False
    assert compile_table_filter(parse(f'hive_filter_field_owner__ like "{hostile}"'))(owner) is True
