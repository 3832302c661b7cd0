"""Do two write-id snapshots of a table describe the same commit point? (Hive's TxnIdUtils)

The cache serves a transactional table only when the entry's list is equivalent to the
reader's, so this is the exact algorithm of Hive 4's
``storage-api/src/java/org/apache/hive/common/util/TxnIdUtils.java``:

1. Walk both sorted invalid-id lists (open and aborted alike; minOpenWriteId is ignored) up to
   the shorter length. The first difference means that id is committed in one list and not in
   the other: not equivalent.
2. Same length: equivalent iff the high-water marks are equal.
3. Otherwise the shorter list's hwm must be exactly one below the longer list's next invalid
   id, and the longer list's remaining invalid ids must run consecutively up to its own hwm:
   the extra ids it knows about are all uncommitted, so both lists see the same committed set.

Two Java details are kept on purpose:

- the else branch returns ``signum(b.hwm - (A[m] - 1))`` where the first branch returns
  ``signum(a.hwm - (B[m] - 1))``: a sign flip. ``compare`` is therefore not antisymmetric in
  that case; equivalence (``== 0``) is unaffected and symmetric.
- table names are compared ignoring case; when they differ the result is Java's
  ``String.compareTo`` of the lower-cased names (a char difference or a length difference,
  not just -1/1).

A None table name makes Java throw a NullPointerException. Here ``compare`` raises ValueError
instead, and ``check_equivalent_write_ids`` answers False: a list that names no table proves
nothing about any table, and "not equivalent" only sends the read to the database.
"""

from __future__ import annotations

from collections.abc import Sequence

from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

_MASK64 = (1 << 64) - 1


def _long(value: int) -> int:
    """Wrap to a Java long, so a subtraction overflows as Hive's does."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def _signum(value: int) -> int:
    """Long.signum of a Java long subtraction result."""
    value = _long(value)
    return (value > 0) - (value < 0)


def _java_compare_to(a: str, b: str) -> int:
    """Java's String.compareTo: first differing UTF-16 unit's difference, else length difference."""
    ua = a.encode("utf-16-be")
    ub = b.encode("utf-16-be")
    units_a = [int.from_bytes(ua[i : i + 2], "big") for i in range(0, len(ua), 2)]
    units_b = [int.from_bytes(ub[i : i + 2], "big") for i in range(0, len(ub), 2)]
    for x, y in zip(units_a, units_b, strict=False):
        if x != y:
            return x - y
    return len(units_a) - len(units_b)


def _all_invalid_from(ids: Sequence[int], start: int, hwm: int) -> bool:
    """ids[start:] are consecutive and the last of them is the hwm."""
    for i in range(start + 1, len(ids)):
        if ids[i] != _long(ids[i - 1] + 1):
            return False
    return ids[-1] == hwm


def compare(a: ValidReaderWriteIdList, b: ValidReaderWriteIdList) -> int:
    """0 when a and b are at the same commit point, 1 when a is newer, -1 when b is newer.

    Exactly TxnIdUtils.compare, caveats included (see the module docstring). The lists are
    assumed well formed: invalid ids ascending and none above the hwm. Raises ValueError when
    either table name is None (Java throws NullPointerException).
    """
    name_a, name_b = a.table_name, b.table_name
    if name_a is None or name_b is None:
        raise ValueError("cannot compare write id lists without a table name")
    if name_a.lower() != name_b.lower():
        return _java_compare_to(name_a.lower(), name_b.lower())
    ids_a = a.invalid_write_ids()
    ids_b = b.invalid_write_ids()
    m = min(len(ids_a), len(ids_b))
    for i in range(m):
        if ids_a[i] != ids_b[i]:
            return 1 if ids_a[i] > ids_b[i] else -1
    if len(ids_a) == len(ids_b):
        return _signum(a.high_watermark - b.high_watermark)
    if len(ids_a) == m:
        below_next = _long(ids_b[m] - 1)
        if a.high_watermark != below_next:
            return _signum(a.high_watermark - below_next)
        return 0 if _all_invalid_from(ids_b, m, b.high_watermark) else -1
    # Hive's sign flip: b's hwm minus a's next id, where the branch above has a's hwm first.
    below_next = _long(ids_a[m] - 1)
    if b.high_watermark != below_next:
        return _signum(b.high_watermark - below_next)
    return 0 if _all_invalid_from(ids_a, m, a.high_watermark) else 1


def check_equivalent_write_ids(a: ValidReaderWriteIdList, b: ValidReaderWriteIdList) -> bool:
    """True when a and b see the same committed write ids (TxnIdUtils.checkEquivalentWriteIds).

    False, not an error, when either list has no table name.
    """
    if a.table_name is None or b.table_name is None:
        return False
    return compare(a, b) == 0
