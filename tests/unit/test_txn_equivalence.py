"""TxnIdUtils.compare / checkEquivalentWriteIds, ported case for case.

Sources: "TestTxnIdUtils.<method>" is apache/hive
storage-api/src/test/org/apache/hive/common/util/TestTxnIdUtils.java (the lists keep that
test's variable names); "design §equivalence" is docs/design.md, "Equivalence of two write-id
lists".
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, bitset_from_bytes
from hms_cache_proxy.store.write_id_equivalence import check_equivalent_write_ids, compare

T1 = "default.table1"


def wl(
    exceptions: list[int],
    hwm: int,
    min_open: int | None = None,
    aborted: bytes = b"",
    name: str | None = T1,
) -> ValidReaderWriteIdList:
    """Java's ``new ValidReaderWriteIdList(name, exceptions, BitSet.valueOf(aborted), hwm,
    minOpen)`` (minOpen None is the four-argument constructor)."""
    return ValidReaderWriteIdList(name, exceptions, bitset_from_bytes(aborted), hwm, min_open)


# TestTxnIdUtils.testCheckEquivalentWriteIds
id1 = wl([1, 2, 3, 4, 5], 5, 1)
id2 = wl([1, 2, 3, 4, 5, 6, 7, 8], 8, 1)  # additional uncommitted ids
id3 = wl([2, 3, 4, 5, 6, 7, 8], 8, 2)  # 1 committed, all others open
id4 = wl([1, 2, 3, 4, 6, 7, 8], 8, 1)  # 5 committed
id5 = wl([1, 2, 3, 4, 6, 7], 8, 1)  # 8 committed
id6 = wl([1, 2, 3, 4, 5], 5, 1, name="default.tab2")  # different table
id7 = wl([100, 101, 105], 105, 100)  # way in the future
id8 = wl([], 0)  # before any activity
id9 = wl([], 5)  # 5 committed, nothing open
id10 = wl([], 5)

# TestTxnIdUtils.testCheckEquivalentWriteIds2
e1 = wl([], 5)
e2 = wl([6], 6, aborted=bytes([1]))
e3 = wl([6, 7], 7, 7, aborted=bytes([1, 0]))
e4 = wl([6, 7, 8], 8, 7, aborted=bytes([1, 0, 1]))  # bit 16, not bit 2: only 6 is aborted
e5 = wl([], 8)  # 6,7,8 aborted and then cleaned up

S1 = "TestTxnIdUtils.testCheckEquivalentWriteIds"
S2 = "TestTxnIdUtils.testCheckEquivalentWriteIds2"

EQUIVALENCE_CASES = [
    (S1, "id1", id1, "id1", id1, True),
    (S1 + " / design §equivalence: extra uncommitted ids", "id1", id1, "id2", id2, True),
    (S1, "id2", id2, "id1", id1, True),
    (S1 + " / design §equivalence: write 1 committed", "id1", id1, "id3", id3, False),
    (S1, "id3", id3, "id2", id2, False),
    (S1 + " / design §equivalence: write 5 committed", "id1", id1, "id4", id4, False),
    (S1, "id4", id4, "id2", id2, False),
    (S1 + " / design §equivalence: write 8 committed", "id1", id1, "id5", id5, False),
    (S1, "id5", id5, "id2", id2, False),
    (S1 + " / design §equivalence: different table", "id1", id1, "id6", id6, False),
    (S1, "id1", id1, "id7", id7, False),
    (S1 + " / design §equivalence: {},0 = {1..5},5", "id1", id1, "id8", id8, True),
    (S1, "id8", id8, "id2", id2, True),
    (S1, "id8", id8, "id3", id3, False),
    (S1, "id8", id8, "id7", id7, False),
    (S1 + " / design §equivalence: {},5 = {},5", "id9", id9, "id10", id10, True),
    (S1 + " / design §equivalence: {},5 != {},0", "id8", id8, "id9", id9, False),
    (S1, "id9", id9, "id8", id8, False),
    (S1, "id9", id9, "id1", id1, False),
    (S1, "id9", id9, "id2", id2, False),
    (S1, "id9", id9, "id7", id7, False),
    (S2 + " / design §equivalence: {},5 = {6a},6", "id1", e1, "id2", e2, True),
    (S2 + " / design §equivalence: {},5 = {6a,7o},7", "id1", e1, "id3", e3, True),
    (S2 + " / design §equivalence: {},5 = {6,7,8},8", "id1", e1, "id4", e4, True),
    (S2, "id2", e2, "id3", e3, True),
    (S2, "id2", e2, "id4", e4, True),
    (S2 + " / design §equivalence: aborted ids cleaned up", "id1", e1, "id5", e5, False),
    (S2, "id2", e2, "id5", e5, False),
    (S2, "id3", e3, "id5", e5, False),
    (S2, "id4", e4, "id5", e5, False),
]


@pytest.mark.parametrize(
    ("source", "name_a", "a", "name_b", "b", "expected"),
    EQUIVALENCE_CASES,
    ids=[f"{c[1]}-{c[3]}-{c[0].split()[0]}" for c in EQUIVALENCE_CASES],
)
def test_check_equivalent_write_ids(source, name_a, a, name_b, b, expected) -> None:
    assert check_equivalent_write_ids(a, b) is expected, f"{source}: {name_a} vs {name_b}"
    assert (compare(a, b) == 0) is expected


def test_hive_test_bitset_marks_only_write_6_aborted() -> None:
    # design §equivalence lists {6a,7o,8a}; Java's BitSet.valueOf({1,0,1}) sets bits 0 and 16,
    # so 8 is open there. Open and aborted are alike to the algorithm, so the outcome is the same.
    assert e4.aborted_write_ids() == (6,)
    assert e4.open_write_ids() == (7, 8)


C = "TestTxnIdUtils.testCompareWriteIds"

COMPARE_CASES = [
    (C + ": same writeids", wl([], 5), wl([], 5), 0),
    (C + ": b has high hwm", wl([], 4), wl([], 5), -1),
    (C + ": a has a hole in invalid writeids", wl([1, 2, 4, 5], 5), wl([1, 2, 3, 4, 5], 5), 1),
    (C + ": a has high hwm", wl([2, 4, 5], 6), wl([2, 4, 5], 5), 1),
    (C + ": none are committed", wl([1, 2, 3], 3), wl([1, 2, 3, 4, 5], 5), 0),
    (C + ": all invalid above lower hwm", wl([1, 2, 3], 9), wl([1, 2, 3, 10, 11], 11), 0),
    (C + ": same invalid writeids, different hwm", wl([1, 2, 3], 9), wl([1, 2, 3], 11), -1),
    (C + ": all invalid above lower hwm", wl([], 9), wl([10, 11], 11), 0),
    (C + ": not all invalid above lower hwm", wl([], 9), wl([10], 11), -1),
    (C + ": not all invalid above lower hwm", wl([8], 9), wl([8], 11), -1),
    (C + ": all invalid above lower hwm", wl([8], 9), wl([8, 10, 11], 11), 0),
    (
        C + ": table name is different",
        wl([8, 10, 11], 11),
        wl([8, 10, 11], 11, name="default.table2"),
        -1,
    ),
]


@pytest.mark.parametrize(("source", "a", "b", "expected"), COMPARE_CASES)
def test_compare(source: str, a, b, expected: int) -> None:
    assert compare(a, b) == expected, source


@pytest.mark.parametrize(
    ("name_a", "name_b", "expected"),
    [
        # Java's String.compareTo of the lower-cased names: a char difference ...
        ("default.table1", "default.table2", ord("1") - ord("2")),
        ("default.table1", "default.tab2", ord("l") - ord("2")),
        ("DEFAULT.B", "default.a", 1),
        # ... or, when one is a prefix of the other, a length difference.
        ("a.b", "a.bcd", -2),
        ("a.bcd", "a.b", 2),
    ],
)
def test_compare_different_tables_is_javas_string_compare(name_a, name_b, expected) -> None:
    assert compare(wl([], 1, name=name_a), wl([], 1, name=name_b)) == expected
    assert not check_equivalent_write_ids(wl([], 1, name=name_a), wl([], 1, name=name_b))


def test_table_names_are_compared_ignoring_case() -> None:
    assert check_equivalent_write_ids(wl([3], 4, name="Default.Table1"), wl([3], 4))
    assert compare(wl([3], 5, name="DEFAULT.TABLE1"), wl([3], 4)) == 1


def test_min_open_write_id_is_ignored() -> None:
    assert check_equivalent_write_ids(wl([3, 4], 4, 3), wl([3, 4], 4, None, aborted=bytes([3])))


def test_caveat_sign_flip_in_the_else_branch() -> None:
    # design §equivalence, last paragraph (the sign flip). a = {2,3},hwm 3 sees only write 1
    # committed; b = {2},hwm 5 sees 1,3,4,5. b is newer, yet compare gives 1 both ways: the else
    # branch computes signum(b.hwm - (A[m]-1)) where the first computes signum(a.hwm - (B[m]-1)).
    a = wl([2, 3], 3)
    b = wl([2], 5)
    assert compare(a, b) == 1
    assert compare(b, a) == 1
    assert not check_equivalent_write_ids(a, b)
    assert not check_equivalent_write_ids(b, a)


def test_none_table_name() -> None:
    # design §equivalence, step 1 (a null name): Java throws NullPointerException. compare
    # raises ValueError; check_equivalent_write_ids answers False (nothing proven), even for the
    # same list.
    nameless = wl([], 5, name=None)
    for a, b in ((nameless, wl([], 5)), (wl([], 5), nameless), (nameless, nameless)):
        with pytest.raises(ValueError):
            compare(a, b)
        assert check_equivalent_write_ids(a, b) is False


def test_parsed_strings_compare_like_constructed_lists() -> None:
    a = ValidReaderWriteIdList.parse("default.t1:5:9223372036854775807::")
    b = ValidReaderWriteIdList.parse("default.t1:8:7:7:6,8")
    assert check_equivalent_write_ids(a, b)
    c = ValidReaderWriteIdList.parse("default.t1:8:9223372036854775807::")
    assert not check_equivalent_write_ids(a, c)


# -------------------------------------------------------------------------- properties

HWM = 40
names = st.sampled_from(["default.t", "DEFAULT.T", "Default.T"])


@st.composite
def lists(draw, hwm: int | None = None) -> ValidReaderWriteIdList:
    """A well-formed list: exceptions are a subset of 1..hwm, any of them aborted."""
    if hwm is None:
        hwm = draw(st.integers(min_value=0, max_value=HWM))
    invalid = draw(st.sets(st.integers(min_value=1, max_value=hwm), max_size=hwm)) if hwm else set()
    aborted = draw(st.sets(st.sampled_from(sorted(invalid)))) if invalid else set()
    return ValidReaderWriteIdList.from_ids(draw(names), hwm, invalid - aborted, aborted)


def committed(x: ValidReaderWriteIdList) -> frozenset[int]:
    """The write ids the list reports as committed."""
    return frozenset(w for w in range(1, x.high_watermark + 1) if x.is_write_id_valid(w))


def changed(
    x: ValidReaderWriteIdList, hwm: int | None = None, opened=(), aborted=(), commit=()
) -> ValidReaderWriteIdList:
    """x with more open/aborted ids, some ids committed, or a new hwm."""
    gone = set(commit)
    return ValidReaderWriteIdList.from_ids(
        x.table_name,
        x.high_watermark if hwm is None else hwm,
        [w for w in (*x.open_write_ids(), *opened) if w not in gone],
        [w for w in (*x.aborted_write_ids(), *aborted) if w not in gone],
    )


@given(lists())
def test_equivalence_is_reflexive(a: ValidReaderWriteIdList) -> None:
    assert check_equivalent_write_ids(a, a)
    assert compare(a, a) == 0


@given(lists(), lists())
def test_equivalence_is_symmetric(a: ValidReaderWriteIdList, b: ValidReaderWriteIdList) -> None:
    assert check_equivalent_write_ids(a, b) == check_equivalent_write_ids(b, a)


@given(lists(), lists())
def test_compare_zero_iff_equivalent_iff_same_committed_ids(a, b) -> None:
    same = committed(a) == committed(b)
    assert (compare(a, b) == 0) == check_equivalent_write_ids(a, b) == same


@given(lists(), st.data())
def test_trailing_uncommitted_ids_do_not_matter(a: ValidReaderWriteIdList, data) -> None:
    new_hwm = data.draw(st.integers(min_value=a.high_watermark + 1, max_value=HWM + 20))
    extra = range(a.high_watermark + 1, new_hwm + 1)
    aborted = data.draw(st.sets(st.sampled_from(extra)))
    b = changed(a, new_hwm, [w for w in extra if w not in aborted], aborted)
    assert check_equivalent_write_ids(a, b)
    assert check_equivalent_write_ids(b, a)
    assert compare(a, b) == compare(b, a) == 0


@given(lists(), st.data())
def test_committing_an_invalid_id_breaks_equivalence(a: ValidReaderWriteIdList, data) -> None:
    assume(a.exceptions)
    w = data.draw(st.sampled_from(a.exceptions))
    b = changed(a, commit=[w])
    assert not check_equivalent_write_ids(a, b)
    assert not check_equivalent_write_ids(b, a)


@given(lists(), st.data(), st.booleans())
def test_uncommitting_a_committed_id_breaks_equivalence(a, data, as_aborted: bool) -> None:
    valid = sorted(committed(a))
    assume(valid)
    w = data.draw(st.sampled_from(valid))
    b = changed(a, aborted=[w]) if as_aborted else changed(a, opened=[w])
    assert not check_equivalent_write_ids(a, b)
    assert not check_equivalent_write_ids(b, a)


@given(lists(), st.data())
def test_a_later_committed_write_breaks_equivalence(a: ValidReaderWriteIdList, data) -> None:
    # Raise the hwm with at least one new id committed (not listed as an exception).
    new_hwm = data.draw(st.integers(min_value=a.high_watermark + 1, max_value=HWM + 20))
    extra = list(range(a.high_watermark + 1, new_hwm + 1))
    still_open = data.draw(st.sets(st.sampled_from(extra), max_size=len(extra) - 1))
    b = changed(a, new_hwm, opened=still_open)
    assert not check_equivalent_write_ids(a, b)
    assert not check_equivalent_write_ids(b, a)
