"""Hive's table-filter language: the three fields, and a missing parameter as SQL NULL."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError
from hms_cache_proxy.store.table_filter import compile_table_filter

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
        ('hive_filter_field_params__k like "v%"', ["b"]),
        ('hive_filter_field_params__k not like "x%"', ["b"]),  # NOT of unknown is unknown
        ('hive_filter_field_params__k like "%"', ["b"]),
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
