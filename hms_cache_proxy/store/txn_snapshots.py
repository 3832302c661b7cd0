"""Hive's snapshot strings: ValidReaderWriteIdList, ValidReadTxnList, ValidTxnWriteIdList.

Clients send these strings (``hive.txn.valid.writeids``, ``hive.txn.valid.txns``,
``hive.txn.tables.valid.writeids``) with their requests and the cache tags its entries with
them, so they are read and written byte for byte as Hive's storage-api does (Hive 4.0):

- write ids, per table: ``<table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>``,
  ids joined by ``,``, never range-compressed; a null table name is written ``null``;
- txns, global: ``<hwm>:<minOpenTxn>:<open txns>:<aborted txns>``, where a run of five or more
  consecutive ids is written ``a-b`` (the reader also takes the older, un-ranged form);
- all tables of one txn: ``<txnId>$<table list>$<table list>...``.

Java's ``String.split`` drops trailing empty fields, so ``t:5:9223372036854775807::`` has three
fields when Hive reads it; the readers here accept exactly what Hive's readers accept, and raise
``ValueError`` where Hive would throw. Pure code, no I/O.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise

from hms_cache_proxy.idl import hms

LONG_MAX = 9223372036854775807
"""Java's Long.MAX_VALUE: the "none" value of a minimum open id and the "everything" hwm."""

LONG_MIN = -9223372036854775808

MIN_RANGE_LENGTH = 5
"""ValidReadTxnList writes a run of at least this many consecutive txn ids as ``a-b``."""

MAX_EXPANDED_IDS = 2_000_000
"""Most txn ids a ValidReadTxnList string may expand to (``1-9999999999`` must not eat memory).

Not a Hive rule: Hive would try to allocate them all. Hive caps open txns at 100,000
(``hive.max.open.txns``), so real lists stay far below this.
"""

_LONG_RE = re.compile(r"[+-]?[0-9]+")


def parse_long(text: str) -> int:
    """Parse as Java's Long.parseLong does: ASCII digits, optional sign, 64-bit range."""
    if not _LONG_RE.fullmatch(text):
        raise ValueError(f"not a long: {text!r}")
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise ValueError(f"out of the range of a long: {text!r}")
    return value


def java_split(text: str, sep: str) -> list[str]:
    """``text.split(sep)`` as Java's String.split does it: trailing empty fields dropped.

    (A separator at the very start still yields a leading empty field, as in Java.)
    """
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def bitset_from_bytes(data: bytes | bytearray | memoryview | None) -> int:
    """Java's ``BitSet.valueOf(byte[])`` as a Python int: bit n is ``data[n//8] >> (n%8) & 1``."""
    if not data:
        return 0
    return int.from_bytes(bytes(data), "little")


def bitset_to_bytes(bits: int) -> bytes:
    """Java's ``BitSet.toByteArray()``: little-endian, ``(length()+7)//8`` bytes, none if empty."""
    if bits < 0:
        raise ValueError("a bit set cannot be negative")
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


def _parse_id_list(text: str) -> list[int]:
    """A ``,``-joined id list as Hive's write-id reader reads it (empty fields are errors)."""
    return [parse_long(item) for item in java_split(text, ",")]


def _flags_to_bits(flags: Iterable[bool]) -> int:
    """A BitSet (as an int) with bit i set where flags[i] is true; linear, not quadratic."""
    text = "".join("1" if f else "0" for f in flags)
    return int(text[::-1], 2) if text else 0


def _bits_to_flags(bits: int, n: int) -> list[bool]:
    """The first n bits of a BitSet, lowest first."""
    text = bin(bits)[2:][::-1]
    return [i < len(text) and text[i] == "1" for i in range(n)]


def _sorted_exceptions(
    open_ids: Iterable[int], aborted_ids: Iterable[int], what: str
) -> tuple[tuple[int, ...], int]:
    """Merge open and aborted ids into Hive's sorted exceptions array and its aborted bits.

    An id listed twice is an error here (Hive keeps both copies and flags one by binary search).
    """
    opened = list(open_ids)
    aborted = list(aborted_ids)
    merged = sorted(opened + aborted)
    if len(set(merged)) != len(merged):
        raise ValueError(f"a {what} is listed twice")
    aborted_set = set(aborted)
    return tuple(merged), _flags_to_bits(value in aborted_set for value in merged)


def _check_exceptions(exceptions: tuple[int, ...], what: str) -> None:
    """Hive binary-searches the exceptions, so they must be strictly ascending."""
    for prev, cur in pairwise(exceptions):
        if cur <= prev:
            raise ValueError(f"{what}s must be strictly ascending: {prev} then {cur}")


class _IdSnapshot:
    """What ValidReaderWriteIdList and ValidReadTxnList share: hwm, exceptions, aborted bits."""

    __slots__ = ("_exceptions", "_aborted_bits", "_high_watermark", "_min_open")

    _exceptions: tuple[int, ...]
    _aborted_bits: int
    _high_watermark: int
    _min_open: int

    def _init_ids(
        self,
        exceptions: Iterable[int],
        aborted_bits: int,
        high_watermark: int,
        min_open: int | None,
        what: str,
    ) -> None:
        exc = tuple(exceptions)
        _check_exceptions(exc, what)
        self._exceptions = exc
        # Bits past the end of the exceptions mean nothing to Hive; drop them so equal lists
        # compare equal (Hive's own test builds BitSet.valueOf({1,0,1}) for three ids: bit 16).
        self._aborted_bits = aborted_bits & ((1 << len(exc)) - 1)
        self._high_watermark = high_watermark
        # As Hive's constructors: the minimum open id is kept only when there are exceptions.
        self._min_open = LONG_MAX if min_open is None or not exc else min_open

    @property
    def high_watermark(self) -> int:
        """The highest id allocated when the snapshot was taken."""
        return self._high_watermark

    @property
    def exceptions(self) -> tuple[int, ...]:
        """All ids at or below the hwm that are not committed (open and aborted), ascending."""
        return self._exceptions

    @property
    def aborted_bits(self) -> int:
        """Bit i set means ``exceptions[i]`` is aborted (Hive's BitSet, as an int)."""
        return self._aborted_bits

    def _index(self, value: int) -> int:
        i = bisect_left(self._exceptions, value)
        return i if i < len(self._exceptions) and self._exceptions[i] == value else -1

    def _is_valid(self, value: int) -> bool:
        return value <= self._high_watermark and self._index(value) < 0

    def _is_aborted(self, value: int) -> bool:
        i = self._index(value)
        return i >= 0 and bool(self._aborted_bits >> i & 1)

    def _split(self) -> tuple[list[int], list[int]]:
        """(open ids, aborted ids), each ascending."""
        opened: list[int] = []
        aborted: list[int] = []
        flags = _bits_to_flags(self._aborted_bits, len(self._exceptions))
        for value, is_aborted in zip(self._exceptions, flags, strict=True):
            (aborted if is_aborted else opened).append(value)
        return opened, aborted

    def _key(self) -> tuple:
        return (self._exceptions, self._aborted_bits, self._high_watermark, self._min_open)


class ValidReaderWriteIdList(_IdSnapshot):
    """One table's write-id snapshot: which write ids a reader may see.

    A write id is valid when it is at or below the high-water mark and not an exception
    (open or aborted). The no-argument form (table None, hwm Long.MAX_VALUE, no exceptions)
    treats everything as valid, as Hive's does. Instances are immutable and hashable; ``==``
    is structural (use ``equivalence.check_equivalent_write_ids`` for "same commit point").
    """

    __slots__ = ("_table_name",)

    def __init__(
        self,
        table_name: str | None = None,
        exceptions: Iterable[int] = (),
        aborted_bits: int = 0,
        high_watermark: int = LONG_MAX,
        min_open_write_id: int | None = None,
    ) -> None:
        """Arguments in the order of Hive's constructor (tableName, exceptions, abortedBits,
        highWatermark, minOpenWriteId). ``exceptions`` must be strictly ascending."""
        self._table_name = table_name
        self._init_ids(exceptions, aborted_bits, high_watermark, min_open_write_id, "write id")

    @classmethod
    def from_ids(
        cls,
        table_name: str | None,
        high_watermark: int,
        open_write_ids: Iterable[int] = (),
        aborted_write_ids: Iterable[int] = (),
    ) -> ValidReaderWriteIdList:
        """Build from open and aborted ids; the minimum open write id is derived from them."""
        opened = list(open_write_ids)
        exc, bits = _sorted_exceptions(opened, aborted_write_ids, "write id")
        return cls(table_name, exc, bits, high_watermark, min(opened) if opened else None)

    @classmethod
    def parse(cls, text: str | None) -> ValidReaderWriteIdList:
        """Read Hive's string form (ValidReaderWriteIdList.readFromString).

        None or "" means everything is valid. The table name ``null`` (any case) reads as None.
        Missing or empty open/aborted fields are empty lists; fields after the fifth are ignored,
        as Hive ignores them. Raises ValueError where Hive would throw.
        """
        if not text:
            return cls()
        values = java_split(text, ":")
        if len(values) < 3:
            raise ValueError(f"not a write id list (needs table:hwm:minOpen): {text!r}")
        name: str | None = values[0]
        if len(values[0]) == 4 and values[0].lower() == "null":
            name = None
        hwm = parse_long(values[1])
        min_open = parse_long(values[2])
        opened = _parse_id_list(values[3]) if len(values) > 3 and values[3] else []
        aborted = _parse_id_list(values[4]) if len(values) > 4 and values[4] else []
        exc, bits = _sorted_exceptions(opened, aborted, "write id")
        result = cls(name, exc, bits, hwm)
        # Hive's reader keeps minOpenWriteId as written, even with no exceptions.
        result._min_open = min_open
        return result

    @classmethod
    def from_table_valid_write_ids(cls, tvwi: hms.TableValidWriteIds) -> ValidReaderWriteIdList:
        """As TxnCommonUtils.createValidReaderWriteIdList(TableValidWriteIds).

        invalidWriteIds become the exceptions as given (the metastore sends them ascending),
        abortedBits is ``BitSet.valueOf(bytes)``, and minOpenWriteId is used only when the
        optional field is set (and, by the constructor, only when there are exceptions).
        """
        return cls(
            tvwi.fullTableName,
            tvwi.invalidWriteIds or (),
            bitset_from_bytes(tvwi.abortedBits),
            tvwi.writeIdHighWaterMark,
            tvwi.minOpenWriteId,
        )

    def to_table_valid_write_ids(self) -> hms.TableValidWriteIds:
        """The Thrift form a metastore returns (TxnHandler's getValidWriteIdsForTable).

        abortedBits is ``BitSet.toByteArray()``; minOpenWriteId is left unset when no write
        is open, as Hive leaves it.
        """
        if self._table_name is None:
            raise ValueError("TableValidWriteIds needs a table name")
        return hms.TableValidWriteIds(
            fullTableName=self._table_name,
            writeIdHighWaterMark=self._high_watermark,
            invalidWriteIds=list(self._exceptions),
            minOpenWriteId=self.min_open_write_id,
            abortedBits=bitset_to_bytes(self._aborted_bits),
        )

    @property
    def table_name(self) -> str | None:
        """``<db>.<table>`` as the list names it (None for the no-table form)."""
        return self._table_name

    @property
    def min_open_write_id(self) -> int | None:
        """The lowest open write id, None when it is Long.MAX_VALUE (nothing open)."""
        return None if self._min_open == LONG_MAX else self._min_open

    def is_write_id_valid(self, write_id: int) -> bool:
        """Committed in this snapshot: at or below the hwm and not open or aborted."""
        return self._is_valid(write_id)

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Listed as an exception with its aborted bit set."""
        return self._is_aborted(write_id)

    def is_valid_base(self, write_id: int) -> bool:
        """A base_N directory is usable when N is below the lowest open write id and the hwm."""
        return write_id < self._min_open and write_id <= self._high_watermark

    def invalid_write_ids(self) -> tuple[int, ...]:
        """Open and aborted write ids together, ascending (Hive's getInvalidWriteIds)."""
        return self._exceptions

    def open_write_ids(self) -> tuple[int, ...]:
        """Write ids still open in this snapshot, ascending."""
        return tuple(self._split()[0])

    def aborted_write_ids(self) -> tuple[int, ...]:
        """Write ids aborted in this snapshot, ascending."""
        return tuple(self._split()[1])

    def to_string(self) -> str:
        """Hive's writeToString: ``name:hwm:minOpen:open:aborted`` (``name:hwm:minOpen::``)."""
        head = f"{'null' if self._table_name is None else self._table_name}:" + (
            f"{self._high_watermark}:{self._min_open}"
        )
        if not self._exceptions:
            return head + "::"
        opened, aborted = self._split()
        return f"{head}:{','.join(map(str, opened))}:{','.join(map(str, aborted))}"

    __str__ = to_string

    def __repr__(self) -> str:
        return f"ValidReaderWriteIdList.parse({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValidReaderWriteIdList):
            return NotImplemented
        return self._table_name == other._table_name and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self._table_name, self._key()))


def _write_txn_ranges(ids: list[int]) -> str:
    """Hive 4's writeTxnRange over an ascending list: runs of 5+ as ``a-b``, the rest singly."""
    items: list[str] = []
    i = 0
    n = len(ids)
    while i < n:
        j = i
        while j + 1 < n and ids[j + 1] == ids[j] + 1:
            j += 1
        if j - i + 1 >= MIN_RANGE_LENGTH:
            items.append(f"{ids[i]}-{ids[j]}")
        else:
            items.extend(str(v) for v in ids[i : j + 1])
        i = j + 1
    return ",".join(items)


def _read_txn_ranges(text: str, limit: int) -> list[int]:
    """Hive 4's readTxnListFromRangeString: ``10-20,14,16-50`` expanded; singles as they are.

    Like Hive, an item with a ``-`` is split on ``-`` and its first two fields are the bounds
    (so a negative id cannot be read), and ``b < a`` expands to nothing.
    """
    out: list[int] = []
    for item in java_split(text, ","):
        if "-" not in item:
            start = end = parse_long(item)
        else:
            bounds = java_split(item, "-")
            if len(bounds) < 2:
                raise ValueError(f"not a txn range: {item!r}")
            start, end = parse_long(bounds[0]), parse_long(bounds[1])
        if len(out) + max(0, end - start + 1) > limit:
            raise ValueError(f"txn list expands to more than {MAX_EXPANDED_IDS} ids")
        out.extend(range(start, end + 1))
    return out


class ValidReadTxnList(_IdSnapshot):
    """The global txn snapshot: which txns a reader sees as committed.

    A txn is valid when it is at or below the high-water mark and not open or aborted. The
    no-argument form (hwm Long.MAX_VALUE, no exceptions) treats everything as valid.
    Immutable and hashable; ``==`` is structural.
    """

    __slots__ = ()

    def __init__(
        self,
        exceptions: Iterable[int] = (),
        aborted_bits: int = 0,
        high_watermark: int = LONG_MAX,
        min_open_txn: int | None = None,
    ) -> None:
        """Arguments in the order of Hive's constructor (exceptions, abortedBits,
        highWatermark, minOpenTxn). ``exceptions`` must be strictly ascending."""
        self._init_ids(exceptions, aborted_bits, high_watermark, min_open_txn, "txn id")

    @classmethod
    def from_ids(
        cls, high_watermark: int, open_txns: Iterable[int] = (), aborted_txns: Iterable[int] = ()
    ) -> ValidReadTxnList:
        """Build from open and aborted txns; the minimum open txn is derived from them."""
        opened = list(open_txns)
        exc, bits = _sorted_exceptions(opened, aborted_txns, "txn id")
        return cls(exc, bits, high_watermark, min(opened) if opened else None)

    @classmethod
    def parse(cls, text: str | None) -> ValidReadTxnList:
        """Read Hive's string form (Hive 4 ValidReadTxnList.readFromString).

        None or "" means everything is valid. ``a-b`` items are expanded, plain ids are taken
        as they are, so strings from older Hive versions (no ranges) read the same.
        """
        if not text:
            return cls()
        values = java_split(text, ":")
        if len(values) < 2:
            raise ValueError(f"not a txn list (needs hwm:minOpen): {text!r}")
        hwm = parse_long(values[0])
        min_open = parse_long(values[1])
        limit = MAX_EXPANDED_IDS
        opened = _read_txn_ranges(values[2], limit) if len(values) > 2 and values[2] else []
        limit -= len(opened)
        aborted = _read_txn_ranges(values[3], limit) if len(values) > 3 and values[3] else []
        exc, bits = _sorted_exceptions(opened, aborted, "txn id")
        result = cls(exc, bits, hwm)
        result._min_open = min_open  # kept as written, as Hive's reader does
        return result

    @classmethod
    def from_open_txns_response(
        cls, response: hms.GetOpenTxnsResponse, current_txn: int = 0
    ) -> ValidReadTxnList:
        """As TxnCommonUtils.createValidReadTxnList(GetOpenTxnsResponse, currentTxn).

        - hwm is ``min(current_txn, txn_high_water_mark)`` when current_txn > 0, else the
          response's hwm (a txn must not see txns that commit after it began).
        - Exceptions are the response's open_txns (ascending; open and aborted together) in
          order, stopping at the first txn >= current_txn when current_txn > 0, so the caller's
          own txn and every later one are left out (later ones are invalid by the hwm anyway).
        - abortedBits are read by position in open_txns (``BitSet.valueOf``).
        - minOpenTxn is the first non-aborted exception; the response's min_open_txn field is
          not used.

        Hive sizes its array with a binary search for current_txn; when current_txn is missing
        from open_txns and a later txn is open, Java leaves a stray 0 at the end of the
        exceptions. That is a Java bug with no meaning (txn ids start at 1) and is not copied.
        """
        hwm_all: int = response.txn_high_water_mark
        hwm = min(current_txn, hwm_all) if current_txn > 0 else hwm_all
        txns = list(response.open_txns or ())
        in_flags = _bits_to_flags(bitset_from_bytes(response.abortedBits), len(txns))
        exceptions: list[int] = []
        out_flags: list[bool] = []
        min_open = LONG_MAX
        for txn, is_aborted in zip(txns, in_flags, strict=True):
            if current_txn > 0 and txn >= current_txn:
                break
            if not is_aborted and min_open == LONG_MAX:
                min_open = txn
            exceptions.append(txn)
            out_flags.append(is_aborted)
        return cls(exceptions, _flags_to_bits(out_flags), hwm, min_open)

    @property
    def min_open_txn(self) -> int | None:
        """The lowest open txn, None when it is Long.MAX_VALUE (nothing open)."""
        return None if self._min_open == LONG_MAX else self._min_open

    def is_txn_valid(self, txn_id: int) -> bool:
        """Committed in this snapshot: at or below the hwm and not open or aborted."""
        return self._is_valid(txn_id)

    def is_txn_aborted(self, txn_id: int) -> bool:
        """Listed as an exception with its aborted bit set."""
        return self._is_aborted(txn_id)

    def invalid_txns(self) -> tuple[int, ...]:
        """Open and aborted txns together, ascending (Hive's getInvalidTransactions)."""
        return self._exceptions

    def open_txns(self) -> tuple[int, ...]:
        """Txns still open in this snapshot, ascending."""
        return tuple(self._split()[0])

    def aborted_txns(self) -> tuple[int, ...]:
        """Txns aborted in this snapshot, ascending."""
        return tuple(self._split()[1])

    def to_string(self) -> str:
        """Hive 4's writeToString: ``hwm:minOpen:open:aborted`` with ``a-b`` runs of 5+."""
        head = f"{self._high_watermark}:{self._min_open}"
        if not self._exceptions:
            return head + "::"
        opened, aborted = self._split()
        return f"{head}:{_write_txn_ranges(opened)}:{_write_txn_ranges(aborted)}"

    __str__ = to_string

    def __repr__(self) -> str:
        return f"ValidReadTxnList.parse({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValidReadTxnList):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class ValidTxnWriteIdList(Mapping[str | None, ValidReaderWriteIdList]):
    """The write-id snapshots of every table one txn reads: ``txnId$list$list...``.

    A read-only mapping from full table name (``db.table``, exact match as Hive's HashMap
    lookup is) to its ValidReaderWriteIdList. Hive keeps the tables in a HashMap, so the order
    it writes them in is arbitrary; this class keeps and writes them in insertion (parse) order,
    so a parsed string is written back unchanged.
    """

    __slots__ = ("_txn_id", "_tables")

    def __init__(
        self, txn_id: int | None = None, tables: Iterable[ValidReaderWriteIdList] = ()
    ) -> None:
        self._txn_id = txn_id
        self._tables: dict[str | None, ValidReaderWriteIdList] = {}
        for table in tables:
            # Keyed by the list's own table name; a later list for the same name wins.
            self._tables[table.table_name] = table

    @classmethod
    def parse(cls, text: str | None) -> ValidTxnWriteIdList:
        """Read Hive's string form (ValidTxnWriteIdList.readFromString).

        None or "" gives no txn id and no tables. The first ``$`` field is the txn id, each
        further one is read as a ValidReaderWriteIdList (an empty one, as in ``1$$t:...``,
        reads as the everything-valid list with no table name, as in Hive).
        """
        if not text:
            return cls()
        fields = java_split(text, "$")
        if not fields:
            raise ValueError(f"not a txn write id list: {text!r}")
        txn_id = parse_long(fields[0])
        return cls(txn_id, (ValidReaderWriteIdList.parse(f) for f in fields[1:]))

    @classmethod
    def from_table_valid_write_ids(
        cls, txn_id: int | None, table_write_ids: Iterable[hms.TableValidWriteIds]
    ) -> ValidTxnWriteIdList:
        """As TxnCommonUtils.createValidTxnWriteIdList(currentTxnId, List<TableValidWriteIds>)."""
        return cls(
            txn_id,
            (ValidReaderWriteIdList.from_table_valid_write_ids(t) for t in table_write_ids),
        )

    @property
    def txn_id(self) -> int | None:
        """The txn these snapshots belong to."""
        return self._txn_id

    def get_table_valid_write_id_list(
        self, full_table_name: str | None
    ) -> ValidReaderWriteIdList | None:
        """The list for ``db.table`` (exact name, as Hive's lookup), None when absent."""
        return self._tables.get(full_table_name)

    def with_table(self, table: ValidReaderWriteIdList) -> ValidTxnWriteIdList:
        """A copy with ``table`` added (replacing any list of the same name)."""
        return ValidTxnWriteIdList(self._txn_id, [*self._tables.values(), table])

    def is_empty(self) -> bool:
        """No table lists (Hive's isEmpty)."""
        return not self._tables

    def __getitem__(self, key: str | None) -> ValidReaderWriteIdList:
        return self._tables[key]

    def __iter__(self) -> Iterator[str | None]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def to_string(self) -> str:
        """Hive's writeToString: the txn id, then ``$`` and each table's list."""
        if self._txn_id is None:
            raise ValueError("a ValidTxnWriteIdList without a txn id cannot be written")
        return str(self._txn_id) + "".join("$" + t.to_string() for t in self._tables.values())

    __str__ = to_string

    def __repr__(self) -> str:
        if self._txn_id is None:
            return "ValidTxnWriteIdList()"
        return f"ValidTxnWriteIdList.parse({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValidTxnWriteIdList):
            return NotImplemented
        return self._txn_id == other._txn_id and self._tables == other._tables

    def __hash__(self) -> int:
        return hash((self._txn_id, frozenset(self._tables.items())))
