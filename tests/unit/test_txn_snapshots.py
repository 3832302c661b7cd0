"""Hive's snapshot strings, read and written byte for byte.

Sources named in the cases:
- "design §strings": docs/design.md, "Hive's snapshot strings" (worked examples);
- "TestValidReaderWriteIdList" / "TestValidReadTxnList": apache/hive
  storage-api/src/test/org/apache/hadoop/hive/common/;
- "TxnCommonUtils": standalone-metastore/metastore-common/.../txn/TxnCommonUtils.java.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import deserialize, serialize

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import txn_snapshots
from hms_cache_proxy.store.txn_snapshots import (
    LONG_MAX,
    LONG_MIN,
    MAX_EXPANDED_IDS,
    ValidReaderWriteIdList,
    ValidReadTxnList,
    ValidTxnWriteIdList,
    bitset_from_bytes,
    bitset_to_bytes,
    java_split,
    parse_long,
)

MAX = str(LONG_MAX)


def bits(*indexes: int) -> int:
    """A Java BitSet with these bits set, as an int."""
    out = 0
    for i in indexes:
        out |= 1 << i
    return out


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("t:5:9223372036854775807::", ["t", "5", "9223372036854775807"]),
        ("t:5:1:1:", ["t", "5", "1", "1"]),
        (":5:1", ["", "5", "1"]),  # a leading empty field stays, as in Java
        (":::", []),
        ("a", ["a"]),
        ("a::b", ["a", "", "b"]),
    ],
)
def test_java_split_drops_only_trailing_empty_fields(text: str, parts: list[str]) -> None:
    assert java_split(text, ":") == parts


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("+7", 7), ("-7", -7), (MAX, LONG_MAX), (str(LONG_MIN), LONG_MIN)],
)
def test_parse_long_accepts_what_java_accepts(text: str, value: int) -> None:
    assert parse_long(text) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1_000", "0x10", "١", "9223372036854775808", "+"])
def test_parse_long_rejects_what_java_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_long(text)


@pytest.mark.parametrize(
    ("indexes", "data"),
    [
        ((), b""),
        ((0,), b"\x01"),
        ((0, 2), b"\x05"),
        ((8,), b"\x00\x01"),
        # java.util.BitSet.toByteArray() documentation example: {10,20,30,40,50}
        ((10, 20, 30, 40, 50), bytes([0, 4, 16, 64, 0, 1, 4])),
    ],
)
def test_bitset_bytes_are_javas_little_endian_layout(indexes: tuple[int, ...], data: bytes) -> None:
    assert bitset_to_bytes(bits(*indexes)) == data
    assert bitset_from_bytes(data) == bits(*indexes)


def test_bitset_value_of_ignores_trailing_zero_bytes() -> None:
    # TestTxnIdUtils builds BitSet.valueOf(new byte[]{1,0}): only bit 0.
    assert bitset_from_bytes(b"\x01\x00") == bits(0)
    assert bitset_from_bytes(None) == 0


# --------------------------------------------------------------- ValidReaderWriteIdList


WRITE_ID_STRINGS = [
    # (source, string, table, hwm, open ids, aborted ids, min open)
    ("design §strings: no activity yet", f"default.t1:0:{MAX}::", "default.t1", 0, (), (), None),
    ("design §strings: 5 committed", f"default.t1:5:{MAX}::", "default.t1", 5, (), (), None),
    (
        "design §strings: HIVE-25372 TestTxnCommands",
        f"default.alter_table:4:{MAX}::",
        "default.alter_table",
        4,
        (),
        (),
        None,
    ),
    (
        "design §strings: open 7, aborted 5,8",
        "default.t1:10:7:7:5,8",
        "default.t1",
        10,
        (7,),
        (5, 8),
        7,
    ),
    (
        "design §strings: only aborted",
        f"default.t1:6:{MAX}::3,4",
        "default.t1",
        6,
        (),
        (3, 4),
        None,
    ),
    ("TestValidReaderWriteIdList.noExceptions", f"t1:1:{MAX}::", "t1", 1, (), (), None),
    ("TestValidReaderWriteIdList.exceptions", "t1:5:4:2,4:", "t1", 5, (2, 4), (), 4),
    (
        "TestValidReaderWriteIdList.testAbortedTxn",
        "t1:11:4:4,6,10:2,8",
        "t1",
        11,
        (4, 6, 10),
        (2, 8),
        4,
    ),
    ("null table name", f"null:3:{MAX}::", None, 3, (), (), None),
]


@pytest.mark.parametrize(
    ("source", "text", "table", "hwm", "opened", "aborted", "min_open"), WRITE_ID_STRINGS
)
def test_write_id_list_strings(source, text, table, hwm, opened, aborted, min_open) -> None:
    built = ValidReaderWriteIdList.from_ids(table, hwm, opened, aborted)
    if min_open is not None and min_open != min(opened, default=None):
        # Hive's test passes a minOpen that is not the lowest open id; the string keeps it.
        built = ValidReaderWriteIdList(table, built.exceptions, built.aborted_bits, hwm, min_open)
    assert str(built) == text, source
    parsed = ValidReaderWriteIdList.parse(text)
    assert parsed == built
    assert parsed.table_name == table
    assert parsed.high_watermark == hwm
    assert parsed.open_write_ids() == opened
    assert parsed.aborted_write_ids() == aborted
    assert parsed.invalid_write_ids() == tuple(sorted(opened + aborted))
    assert parsed.min_open_write_id == min_open
    assert str(parsed) == text


def test_worked_example_exceptions_and_bits() -> None:
    # design §strings: exceptions=[5,7,8], abortedBits={0,2}
    wl = ValidReaderWriteIdList.parse("default.t1:10:7:7:5,8")
    assert wl.exceptions == (5, 7, 8)
    assert wl.aborted_bits == bits(0, 2)
    assert [wl.is_write_id_valid(w) for w in range(0, 12)] == [
        True, True, True, True, True, False, True, False, False, True, True, False,
    ]  # fmt: skip
    assert [wl.is_write_id_aborted(w) for w in (4, 5, 7, 8, 11)] == [
        False,
        True,
        False,
        True,
        False,
    ]


def test_java_constructor_form_matches_hive_tests() -> None:
    # TestValidReaderWriteIdList.testAbortedTxn: {2,4,6,8,10}, bits {0,3}, hwm 11, minOpen 4
    wl = ValidReaderWriteIdList("t1", [2, 4, 6, 8, 10], bits(0, 3), 11, 4)
    assert str(wl) == "t1:11:4:4,6,10:2,8"
    assert [wl.is_write_id_aborted(w) for w in (2, 4, 6, 8, 10)] == [
        True,
        False,
        False,
        True,
        False,
    ]
    # TestValidReaderWriteIdList.exceptions: validity after a round trip
    rt = ValidReaderWriteIdList.parse(str(ValidReaderWriteIdList("t1", [2, 4], 0, 5, 4)))
    assert [rt.is_write_id_valid(w) for w in range(1, 7)] == [True, False, True, False, True, False]


def test_write_ids_are_never_range_compressed() -> None:
    # TestValidReaderWriteIdList.longEnoughToCompress: 100..1099 open, hwm 2000, minOpen 900
    wl = ValidReaderWriteIdList("t1", range(100, 1100), 0, 2000, 900)
    text = str(wl)
    assert text == "t1:2000:900:" + ",".join(str(i) for i in range(100, 1100)) + ":"
    rt = ValidReaderWriteIdList.parse(text)
    assert all(rt.is_write_id_valid(i) for i in range(0, 100))
    assert not any(rt.is_write_id_valid(i) for i in range(100, 1100))
    assert all(rt.is_write_id_valid(i) for i in range(1100, 2001))
    assert not rt.is_write_id_valid(2001)


@pytest.mark.parametrize("text", [None, ""])
def test_empty_write_id_string_means_everything_valid(text: str | None) -> None:
    wl = ValidReaderWriteIdList.parse(text)
    assert wl == ValidReaderWriteIdList()
    assert wl.table_name is None
    assert wl.high_watermark == LONG_MAX
    assert wl.exceptions == ()
    assert wl.min_open_write_id is None
    assert wl.is_write_id_valid(LONG_MAX)
    assert wl.is_valid_base(LONG_MAX - 1)
    assert str(wl) == f"null:{MAX}:{MAX}::"


@pytest.mark.parametrize("name", ["null", "NULL", "Null", "nUlL"])
def test_null_table_name_is_case_insensitive_on_read(name: str) -> None:
    wl = ValidReaderWriteIdList.parse(f"{name}:5:{MAX}::")
    assert wl.table_name is None
    assert str(wl) == f"null:5:{MAX}::"


@pytest.mark.parametrize(
    ("text", "opened", "aborted", "written"),
    [
        # Java's split drops the trailing empty fields: 3, 4 and 5 fields all read.
        ("t:5:9223372036854775807", (), (), f"t:5:{MAX}::"),
        ("t:5:9223372036854775807:", (), (), f"t:5:{MAX}::"),
        ("t:5:9223372036854775807::", (), (), f"t:5:{MAX}::"),
        ("t:5:3:3", (3,), (), "t:5:3:3:"),
        ("t:5:3:3:", (3,), (), "t:5:3:3:"),
        ("t:5:3:3,4,", (3, 4), (), "t:5:3:3,4:"),  # trailing ',' dropped by split too
        ("t:5:9223372036854775807::2", (), (2,), f"t:5:{MAX}::2"),
        ("t:5:3:4,3:1", (3, 4), (1,), "t:5:3:3,4:1"),  # Hive sorts what it reads
        ("t:5:3:3:1:ignored", (3,), (1,), "t:5:3:3:1"),  # fields past the fifth are ignored
        (":5:3:3:", (3,), (), ":5:3:3:"),  # an empty table name is a name, not null
    ],
)
def test_write_id_list_parsing_edge_cases(text, opened, aborted, written) -> None:
    wl = ValidReaderWriteIdList.parse(text)
    assert wl.open_write_ids() == opened
    assert wl.aborted_write_ids() == aborted
    assert str(wl) == written


def test_parsed_min_open_is_kept_as_written() -> None:
    # Hive's reader stores minOpenWriteId whatever the lists say; its constructor does not.
    wl = ValidReaderWriteIdList.parse("t:5:3::")
    assert wl.min_open_write_id == 3
    assert str(wl) == "t:5:3::"
    assert ValidReaderWriteIdList("t", [], 0, 5, 3).min_open_write_id is None


@pytest.mark.parametrize(
    "text",
    [
        "t",
        "t:5",
        "t:x:1::",
        "t:5:one::",
        "t:5:1:1,,2:",
        "t:5:1:,1:",
        "t:5:1: 1:",
        "t:5:1:1:1",  # listed both open and aborted
        "t:5:1:1,1:",
        ":::",
    ],
)
def test_malformed_write_id_strings_raise(text: str) -> None:
    with pytest.raises(ValueError):
        ValidReaderWriteIdList.parse(text)


def test_write_id_list_predicates() -> None:
    wl = ValidReaderWriteIdList.from_ids("db.t", 10, open_write_ids=[4, 9], aborted_write_ids=[6])
    assert wl.min_open_write_id == 4
    assert [wl.is_valid_base(w) for w in (3, 4, 10)] == [True, False, False]
    assert wl.open_write_ids() == (4, 9)
    assert wl.aborted_write_ids() == (6,)
    assert wl.invalid_write_ids() == (4, 6, 9)
    assert not wl.is_write_id_valid(11)
    assert not wl.is_write_id_aborted(11)
    nothing_open = ValidReaderWriteIdList.from_ids("db.t", 10, aborted_write_ids=[6])
    assert nothing_open.is_valid_base(10)
    assert not nothing_open.is_valid_base(11)


def test_unsorted_exceptions_are_rejected() -> None:
    with pytest.raises(ValueError):
        ValidReaderWriteIdList("t", [3, 2], 0, 5)
    with pytest.raises(ValueError):
        ValidReadTxnList([3, 3], 0, 5)


def test_aborted_bits_past_the_exceptions_are_ignored() -> None:
    # TestTxnIdUtils: BitSet.valueOf(new byte[]{1,0,1}) for exceptions {6,7,8} sets bits 0 and 16,
    # so only 6 is aborted; bit 16 points past the array.
    wl = ValidReaderWriteIdList(
        "default.table1", [6, 7, 8], bitset_from_bytes(bytes([1, 0, 1])), 8, 7
    )
    assert wl.aborted_write_ids() == (6,)
    assert wl.open_write_ids() == (7, 8)
    assert wl == ValidReaderWriteIdList("default.table1", [6, 7, 8], bits(0), 8, 7)
    assert str(wl) == "default.table1:8:7:7,8:6"


# ----------------------------------------------------------------- Thrift TableValidWriteIds


def test_from_table_valid_write_ids_with_min_open() -> None:
    tvwi = hms.TableValidWriteIds(
        fullTableName="default.t1",
        writeIdHighWaterMark=10,
        invalidWriteIds=[5, 7, 8],
        minOpenWriteId=7,
        abortedBits=b"\x05",
    )
    wl = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi)
    assert str(wl) == "default.t1:10:7:7:5,8"
    assert wl.to_table_valid_write_ids() == tvwi


def test_from_table_valid_write_ids_without_min_open() -> None:
    # TxnCommonUtils: unset minOpenWriteId -> the 4-argument constructor -> Long.MAX_VALUE.
    tvwi = hms.TableValidWriteIds(
        fullTableName="default.t1",
        writeIdHighWaterMark=6,
        invalidWriteIds=[3, 4],
        abortedBits=b"\x03",
    )
    wl = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi)
    assert str(wl) == f"default.t1:6:{MAX}::3,4"
    assert wl.min_open_write_id is None
    back = wl.to_table_valid_write_ids()
    assert back.minOpenWriteId is None
    assert back == tvwi


def test_from_table_valid_write_ids_min_open_needs_exceptions() -> None:
    # The 5-argument constructor keeps minOpenWriteId only when there are exceptions.
    tvwi = hms.TableValidWriteIds(
        fullTableName="db.t", writeIdHighWaterMark=3, invalidWriteIds=[], minOpenWriteId=2,
        abortedBits=b"",
    )  # fmt: skip
    wl = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi)
    assert str(wl) == f"db.t:3:{MAX}::"


def test_to_table_valid_write_ids_survives_the_wire() -> None:
    wl = ValidReaderWriteIdList.from_ids(
        "db.t", 30, open_write_ids=[12, 20], aborted_write_ids=[3, 15, 25]
    )
    tvwi = wl.to_table_valid_write_ids()
    # exceptions 3,12,15,20,25 -> aborted positions 0,2,4 -> 0b10101
    assert tvwi.abortedBits == b"\x15"
    assert tvwi.invalidWriteIds == [3, 12, 15, 20, 25]
    assert tvwi.minOpenWriteId == 12
    factory = TBinaryProtocolFactory()
    again = deserialize(hms.TableValidWriteIds(), serialize(tvwi, factory), factory)
    assert ValidReaderWriteIdList.from_table_valid_write_ids(again) == wl


def test_to_table_valid_write_ids_needs_a_table_name() -> None:
    with pytest.raises(ValueError):
        ValidReaderWriteIdList().to_table_valid_write_ids()


# ---------------------------------------------------------------------- ValidReadTxnList


TXN_STRINGS = [
    # (source, string, hwm, open, aborted, min open)
    ("design §strings", f"100:{MAX}::", 100, (), (), None),
    ("design §strings", "100:90:90,95:93", 100, (90, 95), (93,), 90),
    ("design §strings", "100:10:10-20:", 100, tuple(range(10, 21)), (), 10),
    ("TestValidReadTxnList.noExceptions", f"1:{MAX}::", 1, (), (), None),
    ("TestValidReadTxnList.exceptions", "5:4:2,4:", 5, (2, 4), (), 4),
    ("TestValidReadTxnList.testAbortedTxn", "11:4:4,6,10:2,8", 11, (4, 6, 10), (2, 8), 4),
    (
        "TestValidReadTxnList.testAbortedTxnRange",
        "11:4:4-8,10:2,9",
        11,
        (4, 5, 6, 7, 8, 10),
        (2, 9),
        4,
    ),
    ("exactly 4 consecutive: no range", "9:1:1,2,3,4:", 9, (1, 2, 3, 4), (), 1),
    ("exactly 5 consecutive: a range", "9:1:1-5:", 9, (1, 2, 3, 4, 5), (), 1),
    (
        "mixed ranges and singles",
        "40:3:3,10-20,22,30-34:",
        40,
        (3, *range(10, 21), 22, *range(30, 35)),
        (),
        3,
    ),
    (
        "aborted runs compress too",
        f"40:{MAX}::1,2,3,4,6-10",
        40,
        (),
        (1, 2, 3, 4, 6, 7, 8, 9, 10),
        None,
    ),
]


@pytest.mark.parametrize(("source", "text", "hwm", "opened", "aborted", "min_open"), TXN_STRINGS)
def test_txn_list_strings(source, text, hwm, opened, aborted, min_open) -> None:
    built = ValidReadTxnList.from_ids(hwm, opened, aborted)
    if min_open is not None and min_open != min(opened, default=None):
        built = ValidReadTxnList(built.exceptions, built.aborted_bits, hwm, min_open)
    assert str(built) == text, source
    parsed = ValidReadTxnList.parse(text)
    assert parsed == built
    assert parsed.high_watermark == hwm
    assert parsed.open_txns() == opened
    assert parsed.aborted_txns() == aborted
    assert parsed.invalid_txns() == tuple(sorted(opened + aborted))
    assert parsed.min_open_txn == min_open
    assert str(parsed) == text


def test_txn_list_java_constructor_forms() -> None:
    # TestValidReadTxnList.testAbortedTxnRange: {2,4,5,6,7,8,9,10}, bits {0,6}, hwm 11, minOpen 4
    tl = ValidReadTxnList([2, 4, 5, 6, 7, 8, 9, 10], bits(0, 6), 11, 4)
    assert str(tl) == "11:4:4-8,10:2,9"
    assert [tl.is_txn_aborted(t) for t in (2, 4, 6, 9, 10)] == [True, False, False, True, False]
    # TestValidReadTxnList.exceptions: {2,4}, hwm 5, minOpen 4 (the test passes 4, not 2)
    tl = ValidReadTxnList([2, 4], 0, 5, 4)
    assert str(tl) == "5:4:2,4:"
    rt = ValidReadTxnList.parse(str(tl))
    assert [rt.is_txn_valid(t) for t in range(1, 7)] == [True, False, True, False, True, False]


def test_txn_list_long_enough_to_compress() -> None:
    # TestValidReadTxnList.longEnoughToCompress
    tl = ValidReadTxnList(range(100, 1100), 0, 2000, 900)
    assert str(tl) == "2000:900:100-1099:"
    rt = ValidReadTxnList.parse(str(tl))
    assert all(rt.is_txn_valid(i) for i in range(0, 100))
    assert not any(rt.is_txn_valid(i) for i in range(100, 1100))
    assert all(rt.is_txn_valid(i) for i in range(1100, 2001))
    assert not rt.is_txn_valid(2001)


def test_old_unranged_format_reads_and_is_rewritten_with_ranges() -> None:
    old = "100:10:10,11,12,13,14,15,17:"
    tl = ValidReadTxnList.parse(old)
    assert tl.open_txns() == (10, 11, 12, 13, 14, 15, 17)
    assert str(tl) == "100:10:10-15,17:"


@pytest.mark.parametrize(
    ("text", "opened", "aborted"),
    [
        ("50:10:10-20", tuple(range(10, 21)), ()),  # 3 fields: open only
        ("50:10:10-20:", tuple(range(10, 21)), ()),
        ("50:2:1,3-7,9:2", (1, 3, 4, 5, 6, 7, 9), (2,)),
        ("50:10:1-2,4-4,6", (1, 2, 4, 6), ()),  # short ranges are read even if never written
        ("50:10:7-5:", (), ()),  # an empty range reads as nothing, as in Hive
        ("50:10:1-2-3:", (1, 2), ()),  # Hive takes the first two fields of a split on '-'
        ("50:10", (), ()),
        ("50:10:", (), ()),
        (f"50:{MAX}::", (), ()),
    ],
)
def test_txn_list_parsing_edge_cases(text: str, opened: tuple, aborted: tuple) -> None:
    tl = ValidReadTxnList.parse(text)
    assert tl.open_txns() == opened
    assert tl.aborted_txns() == aborted


@pytest.mark.parametrize("text", [None, ""])
def test_empty_txn_string_means_everything_valid(text: str | None) -> None:
    tl = ValidReadTxnList.parse(text)
    assert tl == ValidReadTxnList()
    assert tl.high_watermark == LONG_MAX
    assert tl.min_open_txn is None
    assert tl.is_txn_valid(LONG_MAX)
    assert str(tl) == f"{MAX}:{MAX}::"


@pytest.mark.parametrize(
    "text",
    ["5", "x:1::", "5:1:-4:", "5:1:4-:", "5:1:a-b:", "5:1:1,,2:", "5:1:1-5:3", f"5:1:1-{MAX}:"],
)
def test_malformed_txn_strings_raise(text: str) -> None:
    with pytest.raises(ValueError):
        ValidReadTxnList.parse(text)


def test_txn_range_expansion_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_EXPANDED_IDS >= 100_000  # Hive's hive.max.open.txns default
    monkeypatch.setattr(txn_snapshots, "MAX_EXPANDED_IDS", 100)
    assert len(ValidReadTxnList.parse("200:1:1-99:100").exceptions) == 100
    with pytest.raises(ValueError, match="more than"):
        ValidReadTxnList.parse("200:1:1-100:101")
    with pytest.raises(ValueError, match="more than"):
        ValidReadTxnList.parse("200:1:1-101:")


# ----------------------------------------------- TxnCommonUtils.createValidReadTxnList


def open_txns(hwm: int, txns: list[int], aborted_positions=(), min_open_txn=None):
    return hms.GetOpenTxnsResponse(
        txn_high_water_mark=hwm,
        open_txns=txns,
        min_open_txn=min_open_txn,
        abortedBits=bitset_to_bytes(bits(*aborted_positions)),
    )


@pytest.mark.parametrize(
    ("case", "response", "current", "expected"),
    [
        ("no txns open", open_txns(10, []), 0, f"10:{MAX}::"),
        ("no current txn: all listed", open_txns(10, [3, 5, 7], [1]), 0, "10:3:3,7:5"),
        (
            "current txn and later ones dropped, hwm lowered",
            open_txns(10, [3, 5, 7, 9], [1]),
            7,
            "7:3:3:5",
        ),
        (
            "current txn missing (read-only): still cut at it",
            open_txns(10, [3, 5, 7]),
            6,
            "6:3:3,5:",
        ),
        ("current txn below every open txn", open_txns(10, [3, 5]), 2, f"2:{MAX}::"),
        ("min open skips aborted txns", open_txns(10, [2, 3, 4], [0]), 0, "10:3:3,4:2"),
        ("only aborted: min open stays MAX", open_txns(10, [2, 3], [0, 1]), 0, f"10:{MAX}::2,3"),
        ("response min_open_txn is not used", open_txns(10, [3], (), min_open_txn=1), 0, "10:3:3:"),
        ("current above hwm (a Java assert): hwm kept", open_txns(10, [3]), 12, "10:3:3:"),
        ("ranges in the output", open_txns(30, list(range(11, 21))), 0, "30:11:11-20:"),
    ],
)
def test_create_valid_read_txn_list(case, response, current, expected) -> None:
    tl = ValidReadTxnList.from_open_txns_response(response, current)
    assert str(tl) == expected, case


def test_create_valid_read_txn_list_own_txn_is_invisible_but_not_an_exception() -> None:
    tl = ValidReadTxnList.from_open_txns_response(open_txns(10, [3, 5, 7, 9]), 7)
    assert tl.high_watermark == 7
    assert tl.is_txn_valid(6)
    assert not tl.is_txn_valid(5)
    # 7 itself is not listed; Hive treats it specially elsewhere. 8 is above the hwm.
    assert 7 not in tl.exceptions
    assert not tl.is_txn_valid(8)


# ------------------------------------------------------------------- ValidTxnWriteIdList


def test_txn_write_id_list_worked_example() -> None:
    # design §strings
    text = f"42$default.t1:5:{MAX}::$default.t2:3:2:2:"
    tw = ValidTxnWriteIdList.parse(text)
    assert tw.txn_id == 42
    assert list(tw) == ["default.t1", "default.t2"]
    assert tw.get_table_valid_write_id_list("default.t2") == ValidReaderWriteIdList.from_ids(
        "default.t2", 3, open_write_ids=[2]
    )
    assert tw["default.t1"].high_watermark == 5
    assert tw.get_table_valid_write_id_list("default.t3") is None
    assert tw.get_table_valid_write_id_list("DEFAULT.T1") is None  # exact, as Hive's HashMap
    assert str(tw) == text


@pytest.mark.parametrize(
    ("text", "txn_id", "tables", "written"),
    [
        ("42", 42, [], "42"),
        ("42$", 42, [], "42"),  # Java's split drops the trailing empty field
        (f"7$a.b:1:{MAX}::$a.b:2:{MAX}::", 7, ["a.b"], f"7$a.b:2:{MAX}::"),  # last one wins
        (f"7$$a.b:1:{MAX}::", 7, [None, "a.b"], f"7$null:{MAX}:{MAX}::$a.b:1:{MAX}::"),
    ],
)
def test_txn_write_id_list_edge_cases(text, txn_id, tables, written) -> None:
    tw = ValidTxnWriteIdList.parse(text)
    assert tw.txn_id == txn_id
    assert list(tw) == tables
    assert str(tw) == written


@pytest.mark.parametrize("text", [None, ""])
def test_empty_txn_write_id_list(text: str | None) -> None:
    tw = ValidTxnWriteIdList.parse(text)
    assert tw.txn_id is None
    assert tw.is_empty()
    with pytest.raises(ValueError):
        tw.to_string()


@pytest.mark.parametrize("text", ["x$a.b:1:2::", "$a.b:1:2::", "$$", "1$a.b"])
def test_malformed_txn_write_id_lists_raise(text: str) -> None:
    with pytest.raises(ValueError):
        ValidTxnWriteIdList.parse(text)


def test_create_valid_txn_write_id_list() -> None:
    tables = [
        hms.TableValidWriteIds(
            fullTableName="db.a", writeIdHighWaterMark=4, invalidWriteIds=[3], minOpenWriteId=3,
            abortedBits=b"",
        ),
        hms.TableValidWriteIds(
            fullTableName="db.b", writeIdHighWaterMark=0, invalidWriteIds=[], abortedBits=b"",
        ),
    ]  # fmt: skip
    tw = ValidTxnWriteIdList.from_table_valid_write_ids(9, tables)
    assert str(tw) == f"9$db.a:4:3:3:$db.b:0:{MAX}::"
    grown = tw.with_table(ValidReaderWriteIdList.from_ids("db.c", 1))
    assert list(grown) == ["db.a", "db.b", "db.c"]
    assert list(tw) == ["db.a", "db.b"]


# -------------------------------------------------------------------------- properties

longs = st.integers(min_value=LONG_MIN, max_value=LONG_MAX)
table_names = st.one_of(
    st.none(),
    st.text(
        st.characters(blacklist_characters=":$", blacklist_categories=("Cs",)), max_size=12
    ).filter(lambda s: s.lower() != "null"),
)


@st.composite
def sorted_ids(draw, lo: int = LONG_MIN, hi: int = LONG_MAX) -> list[int]:
    """Strictly ascending ids, often in runs so ranges are exercised."""
    small = st.lists(st.integers(min_value=max(lo, 1), max_value=min(hi, 60)), max_size=40)
    wide = st.lists(st.integers(min_value=lo, max_value=hi), max_size=20)
    return sorted(set(draw(st.one_of(small, wide))))


@st.composite
def write_id_lists(draw, names=table_names) -> ValidReaderWriteIdList:
    exc = draw(sorted_ids())
    aborted = draw(st.integers(min_value=0, max_value=(1 << len(exc)) - 1)) if exc else 0
    min_open = draw(st.one_of(st.none(), longs))
    return ValidReaderWriteIdList(draw(names), exc, aborted, draw(longs), min_open)


@st.composite
def txn_lists(draw) -> ValidReadTxnList:
    exc = draw(sorted_ids(lo=1))
    aborted = draw(st.integers(min_value=0, max_value=(1 << len(exc)) - 1)) if exc else 0
    min_open = draw(st.one_of(st.none(), longs))
    return ValidReadTxnList(exc, aborted, draw(longs), min_open)


@given(write_id_lists())
def test_write_id_list_format_parse_round_trip(wl: ValidReaderWriteIdList) -> None:
    text = str(wl)
    again = ValidReaderWriteIdList.parse(text)
    assert again == wl
    assert str(again) == text


@given(write_id_lists(names=st.just("db.t")))
def test_write_id_list_thrift_round_trip(wl: ValidReaderWriteIdList) -> None:
    again = ValidReaderWriteIdList.from_table_valid_write_ids(wl.to_table_valid_write_ids())
    assert again == wl


@given(txn_lists())
def test_txn_list_format_parse_round_trip(tl: ValidReadTxnList) -> None:
    text = str(tl)
    again = ValidReadTxnList.parse(text)
    assert again == tl
    assert str(again) == text


def _items(field: str) -> list[tuple[int, int]]:
    """A written txn list field as (first, last) items."""
    out = []
    for item in filter(None, field.split(",")):
        lo, _, hi = item.partition("-")
        out.append((int(lo), int(hi or lo)))
    return out


@given(txn_lists())
def test_txn_list_ranges_exactly_for_runs_of_five_or_more(tl: ValidReadTxnList) -> None:
    fields = str(tl).split(":")
    for field, ids in ((fields[2], tl.open_txns()), (fields[3], tl.aborted_txns())):
        items = _items(field)
        assert [i for lo, hi in items for i in range(lo, hi + 1)] == list(ids)
        # Group the items into maximal runs of consecutive ids.
        runs: list[list[tuple[int, int]]] = []
        for item in items:
            if runs and runs[-1][-1][1] + 1 == item[0]:
                runs[-1].append(item)
            else:
                runs.append([item])
        for run in runs:
            length = run[-1][1] - run[0][0] + 1
            if length >= 5:
                assert len(run) == 1  # one a-b item
            else:
                assert all(lo == hi for lo, hi in run)  # singles only


@given(
    longs,
    st.lists(
        write_id_lists(names=st.text(alphabet="abcdefgh.", min_size=1, max_size=6)), max_size=5
    ),
)
def test_txn_write_id_list_round_trip(txn_id, tables) -> None:
    tw = ValidTxnWriteIdList(txn_id, tables)
    text = str(tw)
    again = ValidTxnWriteIdList.parse(text)
    assert again == tw
    assert str(again) == text
    for t in tables:
        assert again.get_table_valid_write_id_list(t.table_name) == tw[t.table_name]


@given(txn_lists())
def test_txn_list_validity_matches_its_exceptions(tl: ValidReadTxnList) -> None:
    for txn in tl.exceptions:
        assert not tl.is_txn_valid(txn)
        assert tl.is_txn_aborted(txn) == (txn in tl.aborted_txns())
