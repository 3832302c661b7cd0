"""Partition reads answered from the partitions a table's entry holds.

Every call here is a read of the table's entry under the rules of :mod:`.cached_store`
(``_read`` with ``partitions``); the picking of partitions (by values, names, filter, partial
values) follows the database path's rules (store/sql/partition_reads.py), so a cached answer
equals the database's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import api, partnames
from hms_cache_proxy.store.cache.entries import PartitionedEntry, TableName, with_parts
from hms_cache_proxy.store.cached.direct import partitions_from_database
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.pushdown import pushdown
from hms_cache_proxy.store.sql.sql_base import java_list, table_ref
from hms_cache_proxy.thrift_bytes import Encoded


class PartitionReads:
    """Mixin of CachedStore (which provides sql and _read)."""

    sql: api.DatabaseStore
    _read: Callable[..., Any]

    def _partition_read(
        self,
        method: str,
        cat: str,
        db: str,
        tbl: str,
        snapshot: str | None,
        pick: Callable[[PartitionedEntry], Any],
        from_db: Callable[[], Any],
    ) -> Any:
        """A read answered from the entry's partitions (``_check_locked`` with ``partitions``
        refuses an entry without them, so ``with_parts`` only gives the entry its type)."""
        return self._read(
            method,
            TableName(cat, db, tbl),
            snapshot,
            lambda entry: pick(with_parts(entry)),
            from_db,
            partitions=True,
        )

    @staticmethod
    def _parts(entry: PartitionedEntry, names: Sequence[str], encoded: bool) -> Any:
        by_name = entry.parts.by_name
        pieces: list[bytes] = []
        for n in names:
            p = by_name[n]
            pieces.append(p.head)
            pieces.append(p.cols)
            pieces.append(p.tail)
        if encoded:
            return thrift_bytes.join_list(pieces, len(names))
        return _PartitionList(pieces, len(names))

    @staticmethod
    def _objects(result: Any) -> Any:
        if isinstance(result, _PartitionList):
            return result.decode()
        return result

    def get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        values: Sequence[str],
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            try:
                name = partnames.make_part_name(entry.key_names, list(values or []))
            except partnames.PartitionNameError as exc:
                raise hms.MetaException(message=str(exc)) from None
            part = entry.parts.by_name.get(name)
            if part is None:
                raise hms.NoSuchObjectException(message=f"partition values={java_list(values)}")
            data = part.encoded()
            return Encoded(data) if encoded else thrift_bytes.decode(hms.Partition, data)

        return self._partition_read(
            "get_partition",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition(cat, db, tbl, values),
        )

    def get_partition_by_name(
        self, cat: str, db: str, tbl: str, name: str, *, valid_write_id_list: str | None = None
    ) -> hms.Partition:
        def pick(entry: PartitionedEntry) -> Any:
            part = entry.parts.by_name.get(name)
            if part is None:
                raise hms.NoSuchObjectException(
                    message=f"partition {name} not found in {table_ref(cat, db, tbl)}"
                )
            return thrift_bytes.decode(hms.Partition, part.encoded())

        return self._partition_read(
            "get_partition_by_name",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition_by_name(cat, db, tbl, name),
        )

    def get_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            names = entry.parts.names()
            if max_parts == 0:
                names = []
            elif max_parts >= 0:
                names = names[:max_parts]
            return self._parts(entry, names, encoded)

        return self._objects(
            self._partition_read(
                "get_partitions",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: partitions_from_database(self.sql, cat, db, tbl, max_parts, encoded),
            )
        )

    def get_partitions_by_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            by_name = entry.parts.by_name
            found = [n for n in sorted(set(names)) if n in by_name]
            return self._parts(entry, found, encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_by_names",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_by_names(cat, db, tbl, names),
            )
        )

    def _filtered(
        self, entry: PartitionedEntry, filter_text: str, max_parts: int | None
    ) -> list[str]:
        """Names of the partitions the filter accepts, in order (the database path's rules:
        the same evaluator, narrowed first by the exact values the filter pins)."""
        node = parse(filter_text or "")
        accept = compile_filter(node, entry.key_names, entry.key_types)
        conditions = pushdown(node, entry.key_names, entry.key_types)
        parts = entry.parts
        candidates = parts.candidates(
            [(c.key_index, c.values) for c in conditions], len(entry.key_names)
        )
        by_name = parts.by_name
        found = [n for n in candidates if accept(by_name[n].values)]
        if max_parts is not None and max_parts >= 0:
            found = found[:max_parts]
        return found

    def get_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            return self._parts(entry, self._filtered(entry, filter_text, max_parts), encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_by_filter",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_by_filter(cat, db, tbl, filter_text, max_parts),
            )
        )

    def count_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        *,
        valid_write_id_list: str | None = None,
    ) -> int:
        return self._partition_read(
            "get_num_partitions_by_filter",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: len(self._filtered(e, filter_text, None)),
            lambda: self.sql.count_partitions_by_filter(cat, db, tbl, filter_text),
        )

    def get_partition_names_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        return self._partition_read(
            "get_partition_names_by_filter",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: self._filtered(e, filter_text, max_parts),
            lambda: self.sql.get_partition_names_by_filter(cat, db, tbl, filter_text, max_parts),
        )

    @staticmethod
    def _ps_names(
        entry: PartitionedEntry, partial: Sequence[str] | None, max_parts: int | None
    ) -> list[str]:
        partial = list(partial or [])
        if len(partial) > len(entry.key_names):
            raise hms.MetaException(
                message=f"Incorrect number of partition values. numPartKeys="
                f"{len(entry.key_names)}, part_val={java_list(partial)}"
            )
        conditions = [(i, (v,)) for i, v in enumerate(partial) if v not in ("", None)]
        found = entry.parts.candidates(conditions, len(entry.key_names))
        if max_parts is not None and max_parts >= 0:
            found = found[:max_parts]
        return found

    def get_partitions_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            return self._parts(entry, self._ps_names(entry, partial, max_parts), encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_ps",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_ps(cat, db, tbl, partial, max_parts),
            )
        )

    def get_partition_names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        return self._partition_read(
            "get_partition_names_ps",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: list(self._ps_names(e, partial, max_parts)),
            lambda: self.sql.get_partition_names_ps(cat, db, tbl, partial, max_parts),
        )

    def get_partition_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        def pick(entry: PartitionedEntry) -> list[str]:
            if max_parts == 0:
                return []
            names = entry.parts.names()
            return list(names[:max_parts] if max_parts >= 0 else names)

        return self._partition_read(
            "get_partition_names",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition_names(cat, db, tbl, max_parts),
        )

    def partition_values(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = None
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]:
        def pick(entry: PartitionedEntry) -> Any:
            keys = [
                hms.FieldSchema(name=k.name, type=k.type, comment=k.comment)
                for k in entry.table.partitionKeys or []
            ]
            by_name = entry.parts.by_name
            return keys, [(n, list(by_name[n].values)) for n in entry.parts.names()]

        return self._partition_read(
            "get_partition_values",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.partition_values(cat, db, tbl),
        )

    def partition_count(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = None
    ) -> int:
        return self._partition_read(
            "partition_count",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: len(e.parts),
            lambda: self.sql.partition_count(cat, db, tbl),
        )


class _PartitionList:
    """Partitions picked from the cache as bytes, decoded only after the lock is released."""

    __slots__ = ("pieces", "count")

    def __init__(self, pieces: list[bytes], count: int) -> None:
        self.pieces = pieces
        self.count = count

    def decode(self) -> list[hms.Partition]:
        data = b"".join(self.pieces)
        out = []
        pos = 0
        # Each partition is head + cols + tail: three pieces per partition.
        for i in range(0, len(self.pieces), 3):
            n = len(self.pieces[i]) + len(self.pieces[i + 1]) + len(self.pieces[i + 2])
            out.append(thrift_bytes.decode(hms.Partition, data[pos : pos + n]))
            pos += n
        return out
