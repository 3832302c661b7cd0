"""What the cache holds per table: the table, its partitions (as bytes), statistics rows, and the
write-id state and event position the entry reflects. Pure data structures, no I/O.

Sizes are accounted in bytes as Python holds them (object headers included), approximately:
enough to keep a byte budget honest, cheap enough to keep up to date on every change.
"""

from __future__ import annotations

import bisect
import operator
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple, cast

from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

# Fixed per-object costs (CPython 3.11, 64-bit): a bytes object's header, a str's, a tuple's,
# a Part's slots, and one dict slot with its share of the table's spare room.
_BYTES = sys.getsizeof(b"")
_STR = sys.getsizeof("")
_TUPLE = sys.getsizeof(())
_PART = 72
_DICT_SLOT = 50
_PER_VALUE = 8 + _STR  # a tuple slot and a string object per partition value
PART_FIXED = _PART + 2 * _BYTES + _TUPLE + _STR + _DICT_SLOT + 16  # + index/order slots


class TableName(NamedTuple):
    """A table's normalised names (lower case), as every cache map keys it (a tuple: hashing
    and comparing it is C code on the read path)."""

    cat: str
    db: str
    table: str

    def qualified(self) -> str:
        """``db.table``: how write-id lists, patterns and events name it."""
        return f"{self.db}.{self.table}"


class Part:
    """One partition: its values, and its encoding as ``head + cols + tail``."""

    __slots__ = ("values", "head", "cols", "tail")

    def __init__(self, values: tuple[str, ...], head: bytes, cols: bytes, tail: bytes) -> None:
        self.values = values
        self.head = head
        self.cols = cols
        self.tail = tail

    def encoded(self) -> bytes:
        return self.head + self.cols + self.tail

    def size(self, name: str) -> int:
        values = self.values
        return (
            PART_FIXED
            + len(self.head)
            + len(self.tail)
            + len(name)
            + _PER_VALUE * len(values)
            + sum(map(len, values))
        )


class PartitionSet:
    """Every partition of one table, by name, with the name order and an index from each
    key's values to names built when a filter first needs it (kept up to date after that)."""

    __slots__ = ("by_name", "_order", "_index", "_cols", "nbytes")

    def __init__(self) -> None:
        self.by_name: dict[str, Part] = {}
        self._order: list[str] | None = []
        self._index: list[dict[str, list[str]]] | None = None
        self._cols: dict[bytes, bytes] = {}
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self.by_name)

    def shared_cols(self, cols: bytes) -> bytes:
        """One object for equal column lists (most partitions share their table's)."""
        found = self._cols.get(cols)
        if found is None:
            self._cols[cols] = cols
            self.nbytes += len(cols) + _BYTES + _DICT_SLOT
            found = cols
        return found

    def put(self, name: str, part: Part) -> None:
        part.cols = self.shared_cols(part.cols)
        old = self.by_name.get(name)
        if old is not None:
            self.nbytes -= old.size(name)
        else:
            if self._order is not None:
                if not self._order or self._order[-1] < name:
                    self._order.append(name)
                else:
                    bisect.insort(self._order, name)
            if self._index is not None:
                for i, v in enumerate(part.values):
                    if i < len(self._index):
                        self._index[i].setdefault(v, []).append(name)
        self.by_name[name] = part
        self.nbytes += part.size(name)

    def load(self, items: Iterable[tuple[str, Part]], *, ordered: bool = False) -> None:
        """Fill an empty set in bulk; ``ordered``: the items come in name order already."""
        by_name = self.by_name
        known_cols = self._cols
        total = 0
        # Part.size, inlined (prewarm puts tens of thousands of partitions through here).
        for name, part in items:
            cols = known_cols.get(part.cols)
            part.cols = cols if cols is not None else self.shared_cols(part.cols)
            by_name[name] = part
            values = part.values
            total += (
                PART_FIXED
                + len(part.head)
                + len(part.tail)
                + len(name)
                + _PER_VALUE * len(values)
                + sum(map(len, values))
            )
        self.nbytes += total
        order = list(by_name) if ordered else None
        if order is not None and not all(map(operator.lt, order, islice(order, 1, None))):
            order = None  # not in the order promised: sort when first needed
        self._order = order
        self._index = None

    def remove(self, name: str) -> bool:
        old = self.by_name.pop(name, None)
        if old is None:
            return False
        self.nbytes -= old.size(name)
        if self._order is not None:
            i = bisect.bisect_left(self._order, name)
            if i < len(self._order) and self._order[i] == name:
                del self._order[i]
        if self._index is not None:
            for i, v in enumerate(old.values):
                if i < len(self._index):
                    names = self._index[i].get(v)
                    if names is not None:
                        try:
                            names.remove(name)
                        except ValueError:
                            pass
                        if not names:
                            del self._index[i][v]
        return True

    def names(self) -> list[str]:
        """Partition names in code-point order (the database path's order)."""
        if self._order is None:
            self._order = sorted(self.by_name)
        return self._order

    def candidates(self, conditions: Sequence[tuple[int, Sequence[str]]], nkeys: int) -> list[str]:
        """Names (in order) of the partitions whose value of key i is one of the given values,
        for every (i, values) condition."""
        if self._index is None:
            index: list[dict[str, list[str]]] = [{} for _ in range(nkeys)]
            for name, part in self.by_name.items():
                for i, v in enumerate(part.values[:nkeys]):
                    index[i].setdefault(v, []).append(name)
            self._index = index
        found: set[str] | None = None
        for i, values in conditions:
            if i >= len(self._index):
                return []
            names: set[str] = set()
            for v in values:
                names.update(self._index[i].get(v, ()))
            found = names if found is None else found & names
            if not found:
                return []
        if found is None:
            return list(self.names())
        return sorted(found)


@dataclass(slots=True)
class StatsRows:
    """Column-statistics rows of a table and its partitions, as loaded (engine, column)."""

    table: dict[tuple[str, str], Any]  # (engine, column) -> row
    parts: dict[str, dict[tuple[str, str], Any]]  # partition name -> (engine, column) -> row
    nbytes: int = 0


class TableEntry:
    """One cached table. ``write_ids`` (W) is the committed write-id state the entry reflects
    (None for non-transactional tables); ``pending`` maps write ids of open transactions whose
    events changed the entry to nothing in particular: while it is not empty the entry is
    uncommitted. ``as_of`` is the last event id the entry reflects."""

    __slots__ = (
        "key",
        "table",
        "table_bytes",
        "transactional",
        "key_names",
        "key_types",
        "write_ids",
        "pending",
        "as_of",
        "parts",
        "stats",
        "stats_changed",
        "constraints",
        "constraint_refs",
        "constraints_changed",
        "nbytes",
    )

    def __init__(
        self,
        key: TableName,
        table: Any,
        table_bytes: bytes,
        *,
        as_of: int,
        write_ids: ValidReaderWriteIdList | None,
        parts: PartitionSet | None = None,
    ) -> None:
        self.key = key
        self.pending: dict[int, None] = {}
        self.as_of = as_of
        self.write_ids = write_ids
        self.parts = parts
        self.stats: StatsRows | None = None
        self.stats_changed = as_of
        # The table's constraints as encoded SQLAllTableConstraints (None: not loaded), the
        # tables its foreign keys reference, and the last event that changed them or may have.
        self.constraints: bytes | None = None
        self.constraint_refs: frozenset[TableName] = frozenset()
        self.constraints_changed = as_of
        self.nbytes = 0
        self.set_table(table, table_bytes)

    def set_table(self, table: Any, table_bytes: bytes) -> None:
        self.table = table
        self.table_bytes = table_bytes
        self.transactional = is_transactional(table.parameters)
        keys = table.partitionKeys or []
        self.key_names = [k.name for k in keys]
        self.key_types = [k.type for k in keys]

    @property
    def committed(self) -> bool:
        return not self.pending

    def size(self) -> int:
        n = 600 + 2 * len(self.table_bytes)  # the bytes and the decoded object, roughly
        if self.parts is not None:
            n += self.parts.nbytes
        if self.stats is not None:
            n += self.stats.nbytes
        if self.constraints is not None:
            n += 2 * len(self.constraints) + 100 * len(self.constraint_refs)
        return n

    def forget_constraints(self, event_id: int) -> None:
        """Constraints changed (or may have) at ``event_id``: loaded again on the next read."""
        self.constraints = None
        self.constraint_refs = frozenset()
        self.constraints_changed = event_id


class PartitionedEntry(TableEntry):
    """A ``TableEntry`` whose partitions are loaded, as the partition reads see it: ``parts`` is
    a ``PartitionSet``, not None. A type only (no entry is made as one): ``with_parts`` gives
    an entry this type once it has checked it, as the caching store's rules already have."""

    __slots__ = ()
    parts: PartitionSet


class StatsEntry(TableEntry):
    """A ``TableEntry`` whose column statistics are loaded (``stats`` is not None); a type
    only, given by ``with_stats``."""

    __slots__ = ()
    stats: StatsRows


class PartitionStatsEntry(PartitionedEntry, StatsEntry):
    """Both loaded: the partition statistics reads (``with_stats`` after ``with_parts``)."""

    __slots__ = ()


def with_parts(entry: TableEntry) -> PartitionedEntry:
    """``entry`` typed as holding its partitions (ValueError if it does not)."""
    if entry.parts is None:
        raise ValueError(f"{entry.key.qualified()}: the entry holds no partitions")
    return cast(PartitionedEntry, entry)


def with_stats(entry: TableEntry) -> StatsEntry:
    """``entry`` typed as holding its column statistics (ValueError if it does not)."""
    if entry.stats is None:
        raise ValueError(f"{entry.key.qualified()}: the entry holds no statistics")
    return cast(StatsEntry, entry)


def with_parts_and_stats(entry: TableEntry) -> PartitionStatsEntry:
    """``entry`` typed as holding both its partitions and its statistics."""
    with_parts(entry)
    with_stats(entry)
    return cast(PartitionStatsEntry, entry)


def is_transactional(params: dict[str, str] | None) -> bool:
    """Hive's AcidUtils.isTransactionalTable: ``transactional=true`` (any case)."""
    return str((params or {}).get("transactional", "")).strip().lower() == "true"


def row_size(row: Any) -> int:
    """Approximate bytes of a statistics row kept as a tuple."""
    n = _TUPLE + 8 * len(row)
    for v in row:
        if isinstance(v, (str, bytes)):
            n += len(v) + _STR
        elif v is not None:
            n += 32
    return n
