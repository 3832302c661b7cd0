"""Partition names exactly as Hive writes and reads them.

Sources named in the cases (apache/hive, Hive 4.0; Hive 2.3's copies are the same):
- "FileUtils": standalone-metastore/metastore-common/.../metastore/utils/FileUtils.java
  (charToEscape, escapePathName, unescapePathName, makePartName);
- "Warehouse": standalone-metastore/metastore-common/.../metastore/Warehouse.java
  (makePartName, makeSpecFromName);
- "HMSHandler": getPartValsFromName, and validatePartition of add_partition(s).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hms_cache_proxy.store.partnames import (
    DEFAULT_PARTITION_NAME,
    MAX_PART_KEY_VAL_LENGTH,
    PartitionNameError,
    escape_path_name,
    make_part_name,
    parse_part_name,
    unescape_path_name,
    validate_values,
    values_from_name,
)

# FileUtils.charToEscape: U+0000..U+001F and these (U+007F included).
SPECIAL = "\"#%'*/:=?\\\x7f{[]^"
ESCAPED = [chr(c) for c in range(0x20)] + list(SPECIAL)
# Characters one might expect to be escaped that Hive writes as they are.
KEPT = " <>|!@$&()+,-.;_`~}é中😀\u00a0\u2028"


@pytest.mark.parametrize("ch", ESCAPED)
def test_every_special_character_is_escaped_in_upper_case_hex(ch: str) -> None:
    assert escape_path_name(ch) == "%" + format(ord(ch), "02X")
    assert escape_path_name(f"a{ch}b") == f"a%{ord(ch):02X}b"
    assert unescape_path_name(escape_path_name(ch)) == ch


def test_escape_table_spot_checks() -> None:
    assert escape_path_name("a/b") == "a%2Fb"
    assert escape_path_name("100%") == "100%25"
    assert escape_path_name("k=v") == "k%3Dv"
    assert escape_path_name("2024-01-01 10:00:00") == "2024-01-01 10%3A00%3A00"
    assert escape_path_name("\x00\n\x1f\x7f") == "%00%0A%1F%7F"
    assert escape_path_name("{[x]}^") == "%7B%5Bx%5D}%5E"  # '}' is not in Hive's list
    assert escape_path_name("C:\\dir") == "C%3A%5Cdir"


@pytest.mark.parametrize("ch", list(KEPT))
def test_other_characters_are_not_escaped(ch: str) -> None:
    assert escape_path_name(ch) == ch
    assert escape_path_name(f"x{ch}y") == f"x{ch}y"


def test_empty_and_missing_values_become_the_default_partition() -> None:
    # FileUtils.escapePathName: null or "" -> __HIVE_DEFAULT_PARTITION__ (or the given default)
    assert DEFAULT_PARTITION_NAME == "__HIVE_DEFAULT_PARTITION__"
    assert escape_path_name("") == DEFAULT_PARTITION_NAME
    assert escape_path_name(None) == DEFAULT_PARTITION_NAME
    assert escape_path_name("", "dflt") == "dflt"
    assert escape_path_name("x", "dflt") == "x"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a%2Fb", "a/b"),
        ("a%2fb", "a/b"),  # lower-case hex decodes too
        ("100%", "100%"),  # too short: kept
        ("1%4", "1%4"),
        ("%4", "%4"),
        ("%zz", "%zz"),  # not hex: kept
        ("%%41", "%A"),
        ("%2541", "%41"),  # decoded once
        ("a%3", "a%3"),
        ("%+A", "\n"),  # Integer.parseInt("+A", 16) == 10
        ("%-1", "%-1"),  # negative: kept
        ("%-0", "\x00"),  # Integer.parseInt("-0", 16) == 0
        ("% 1", "% 1"),  # Java does not trim
        ("%\uff11\uff10", "\x10"),  # Character.digit reads fullwidth digits
        ("%\uff21\uff41", chr(0xAA)),
        ("%e9", "\u00e9"),  # one char per escape, not UTF-8 bytes
        ("%C3%A9", "\u00c3\u00a9"),
        ("plain", "plain"),
    ],
)
def test_unescape_follows_java_exactly(name: str, expected: str) -> None:
    assert unescape_path_name(name) == expected


@given(st.text(min_size=1))
def test_escape_round_trips(value: str) -> None:
    escaped = escape_path_name(value)
    assert unescape_path_name(escaped) == value
    assert "/" not in escaped and "=" not in escaped
    assert re.fullmatch(r"(?:[^%]|%[0-9A-F]{2})*", escaped, re.DOTALL)


def test_make_part_name() -> None:
    # FileUtils.makePartName: keys lower-cased and escaped, values escaped, '/' between
    assert make_part_name(["dt"], ["2024-01-01"]) == "dt=2024-01-01"
    assert make_part_name(["DT", "Country"], ["2024-01-01", "US"]) == "dt=2024-01-01/country=US"
    assert make_part_name(["a", "b"], ["x/y", "1=2"]) == "a=x%2Fy/b=1%3D2"
    assert make_part_name(["a", "b"], ["", None]) == (
        f"a={DEFAULT_PARTITION_NAME}/b={DEFAULT_PARTITION_NAME}"
    )
    assert make_part_name(["a"], [""], default="null") == "a=null"
    assert make_part_name(["k:1"], ["v"]) == "k%3A1=v"


def test_make_part_name_rejects_mismatched_counts_with_hives_message() -> None:
    # Warehouse.makePartName(List<FieldSchema>, ...)
    with pytest.raises(PartitionNameError) as info:
        make_part_name(["a", "b"], ["x"])
    assert str(info.value) == "Invalid partition key & values; keys [a, b, ], values [x, ]"
    with pytest.raises(PartitionNameError, match="keys \\[\\], values \\[\\]"):
        make_part_name([], [])


def test_parse_part_name() -> None:
    # Warehouse.makeSpecFromName
    assert parse_part_name("dt=2024-01-01/hr=10") == [("dt", "2024-01-01"), ("hr", "10")]
    assert parse_part_name("a=x%2Fy/b=1%3D2") == [("a", "x/y"), ("b", "1=2")]
    assert parse_part_name("a=b=c") == [("a=b", "c")]  # ([^/]+)=([^/]+) is greedy
    assert parse_part_name("junk/dt=1/=x/y=/z") == [("dt", "1")]  # non key=value skipped
    assert parse_part_name("/dt=1//hr=2/") == [("dt", "1"), ("hr", "2")]
    assert parse_part_name("dt=1/hr=2/dt=3") == [("dt", "3"), ("hr", "2")]  # LinkedHashMap
    assert parse_part_name("DT=1") == [("DT", "1")]  # no case folding on read
    assert parse_part_name(f"p={DEFAULT_PARTITION_NAME}") == [("p", DEFAULT_PARTITION_NAME)]
    assert parse_part_name("junk") == []


@pytest.mark.parametrize("name", ["", None])
def test_parse_part_name_rejects_an_empty_name(name: str | None) -> None:
    with pytest.raises(PartitionNameError, match="Partition name is invalid"):
        parse_part_name(name)  # type: ignore[arg-type]


KEY = st.text(min_size=1, max_size=8).filter(lambda k: k == k.lower())
VALUE = st.text(min_size=1, max_size=12)


@given(st.lists(st.tuples(KEY, VALUE), min_size=1, max_size=5, unique_by=lambda kv: kv[0]))
def test_names_round_trip(pairs: list[tuple[str, str]]) -> None:
    keys = [k for k, _ in pairs]
    values = [v for _, v in pairs]
    name = make_part_name(keys, values)
    assert name.count("/") == len(keys) - 1
    assert parse_part_name(name) == pairs
    assert values_from_name(name, keys) == values
    assert values_from_name(name, keys, strict=True) == values


def test_values_from_name() -> None:
    keys = ["dt", "hr"]
    assert values_from_name("dt=2024-01-01/hr=10", keys) == ["2024-01-01", "10"]
    assert values_from_name("hr=10/dt=2024-01-01", keys) == ["2024-01-01", "10"]
    # HMSHandler.getPartValsFromName ignores components that are not keys
    assert values_from_name("dt=1/hr=2/extra=3", keys) == ["1", "2"]
    with pytest.raises(PartitionNameError, match="expected exactly"):
        values_from_name("dt=1/hr=2/extra=3", keys, strict=True)
    with pytest.raises(PartitionNameError, match="expected exactly"):
        values_from_name("hr=2/dt=1", keys, strict=True)


@pytest.mark.parametrize(
    ("name", "missing"),
    [("dt=1", "hr"), ("hr=1", "dt"), ("DT=1/HR=2", "dt"), ("dt=1/hr=", "hr"), ("junk", "dt")],
)
def test_values_from_name_reports_the_missing_key(name: str, missing: str) -> None:
    with pytest.raises(PartitionNameError) as info:
        values_from_name(name, ["dt", "hr"])
    message = str(info.value)
    assert message.startswith(f"incomplete partition name - missing {missing}")
    assert repr(name) in message and "['dt', 'hr']" in message
    assert isinstance(info.value, ValueError)


def test_validate_values_accepts_what_hive_accepts() -> None:
    validate_values(["a"], ["x"])
    validate_values(["a", "b"], ["x/y", "=%\n"])
    validate_values(["a"], [""])  # stored as '', named as the default partition
    validate_values(["a"], [DEFAULT_PARTITION_NAME])
    validate_values(["a"], ["x" * MAX_PART_KEY_VAL_LENGTH])


def test_validate_values_rejects_what_hive_rejects() -> None:
    with pytest.raises(PartitionNameError, match=r"^The partition values cannot be null or empty"):
        validate_values(["a"], [])
    with pytest.raises(PartitionNameError, match=r"^The partition values cannot be null or empty"):
        validate_values(["a"], None)
    with pytest.raises(PartitionNameError, match=r"^Partition value cannot be null\.$"):
        validate_values(["a", "b"], ["x", None])
    with pytest.raises(PartitionNameError, match=r"^Invalid partition key & values"):
        validate_values(["a", "b"], ["x"])
    with pytest.raises(PartitionNameError, match=r"^Invalid partition key & values"):
        validate_values(["a"], ["x", "y"])


def test_validate_values_whitelist_pattern() -> None:
    # metastore.partition.name.whitelist.pattern, off by default; the whole value must match
    validate_values(["a"], ["abc_1"], r"[\w]*")
    with pytest.raises(PartitionNameError) as info:
        validate_values(["a", "b"], ["ok", "not ok"], r"[\w]*")
    assert str(info.value) == (
        "Partition value 'not ok' contains a character not matched by whitelist pattern "
        "'[\\w]*'.  (configure with metastore.partition.name.whitelist.pattern)"
    )
    validate_values(["a"], ["x y"], "")  # empty pattern: no check
    validate_values(["a"], ["xyz"], re.compile("x.z"))


def test_validate_values_schema_sizes() -> None:
    with pytest.raises(PartitionNameError, match="PART_KEY_VAL holds at most 256"):
        validate_values(["a"], ["x" * (MAX_PART_KEY_VAL_LENGTH + 1)])
    keys = [f"k{n}" for n in range(4)]
    with pytest.raises(PartitionNameError, match="PART_NAME holds at most 767"):
        validate_values(keys, ["x" * 200] * 4)
    # escaping counts: 200 '/' are 600 characters in the name
    with pytest.raises(PartitionNameError, match="PART_NAME"):
        validate_values(["a", "b"], ["/" * 200, "/" * 100])
