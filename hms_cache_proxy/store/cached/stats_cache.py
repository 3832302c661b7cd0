"""Column-statistics reads answered from the statistics rows a table's entry holds.

The same functions as the database path (store/sql/stats_reads.py) turn rows into Thrift
objects and aggregate them (store/colstats/), so a cached answer equals the database's. Rows are
loaded per table on the first statistics read (not with the table: most tables are read far
more often than their statistics); a statistics event drops them until the next read loads
them again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store import api
from hms_cache_proxy.store.cache.entries import (
    PartitionStatsEntry,
    StatsEntry,
    TableEntry,
    TableName,
    with_parts_and_stats,
    with_stats,
)
from hms_cache_proxy.store.colstats.accuracy import stats_valid_for_query
from hms_cache_proxy.store.colstats.aggregation import aggregate_partition_stats
from hms_cache_proxy.store.colstats.stats_rows import (
    DEFAULT_ENGINE,
    column_statistics,
    compliant_by_partition,
    stats_obj_from_row,
)


class StatsReads:
    """Mixin of CachedStore (which provides sql, cache, loader, _read)."""

    sql: api.DatabaseStore
    cache: Any
    loader: Any
    _read: Callable[..., Any]
    counters: Any

    def _stats_read(
        self,
        method: str,
        cat: str,
        db: str,
        tbl: str,
        snapshot: str | None,
        pick: Callable[[StatsEntry], Any],
        from_db: Callable[[], Any],
    ) -> Any:
        """A read answered from the entry's statistics rows."""
        return self._stats_answer(
            method, cat, db, tbl, snapshot, lambda e: pick(with_stats(e)), from_db
        )

    def _partition_stats_read(
        self,
        method: str,
        cat: str,
        db: str,
        tbl: str,
        snapshot: str | None,
        pick: Callable[[PartitionStatsEntry], Any],
        from_db: Callable[[], Any],
    ) -> Any:
        """A read answered from the entry's statistics rows and its partitions."""
        return self._stats_answer(
            method,
            cat,
            db,
            tbl,
            snapshot,
            lambda e: pick(with_parts_and_stats(e)),
            from_db,
            partitions=True,
        )

    def _stats_answer(
        self,
        method: str,
        cat: str,
        db: str,
        tbl: str,
        snapshot: str | None,
        pick: Callable[[TableEntry], Any],
        from_db: Callable[[], Any],
        *,
        partitions: bool = False,
    ) -> Any:
        key = TableName(cat, db, tbl)

        def cached(entry: TableEntry) -> Any:
            if entry.stats is None:
                self.loader.request_stats(key)
                raise _NoStats()
            return pick(entry)

        def database() -> Any:
            return from_db()

        try:
            return self._read(
                method, key, snapshot, cached, database, partitions=partitions, newest=True
            )
        except _NoStats:
            self.counters.miss(method, metrics.MISS_NOT_CACHED)
            return from_db()

    def get_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
        bit_vectors: bool | None = None,
        histograms: bool | None = None,
    ) -> hms.ColumnStatistics | None:
        flags = self.sql.fetch_flags(bit_vectors, histograms)
        cols = list(dict.fromkeys(col_names or []))
        eng = engine or DEFAULT_ENGINE

        def pick(entry: StatsEntry) -> Any:
            if not cols:
                return None
            rows = [entry.stats.table.get((eng, c)) for c in cols]
            rows = [r for r in rows if r is not None]
            if not rows:
                return None
            compliant = None
            if valid_write_id_list is not None:
                params = entry.table.parameters or {}
                compliant = not entry.transactional or (
                    self.sql.txn_stats_enabled
                    and stats_valid_for_query(
                        params, entry.table.writeId, valid_write_id_list, False
                    )
                )
            return column_statistics(cat, db, tbl, rows, flags, compliant, eng)

        return self._stats_read(
            "get_table_column_statistics",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_table_column_statistics(
                cat,
                db,
                tbl,
                col_names,
                engine,
                valid_write_id_list=valid_write_id_list,
                bit_vectors=bit_vectors,
                histograms=histograms,
            ),
        )

    def partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
        bit_vectors: bool | None = None,
        histograms: bool | None = None,
    ) -> list[hms.ColumnStatistics]:
        flags = self.sql.fetch_flags(bit_vectors, histograms)
        eng = engine or DEFAULT_ENGINE
        names = sorted(set(part_names or []))
        cols = list(dict.fromkeys(col_names))
        wanted = set(col_names or [])

        def pick(entry: PartitionStatsEntry) -> Any:
            if not names or not wanted:
                return []
            stats = entry.stats
            parts = entry.parts
            out = []
            for name in names:
                prows = stats.parts.get(name)
                if not prows:
                    continue
                rows = {c: prows[(eng, c)] for c in cols if (eng, c) in prows}
                if not rows:
                    continue
                compliant = None
                if valid_write_id_list is not None:
                    if not self.sql.txn_stats_enabled:
                        compliant = False
                    else:
                        part = thrift_bytes.decode(hms.Partition, parts.by_name[name].encoded())
                        compliant = stats_valid_for_query(
                            part.parameters or {}, part.writeId, valid_write_id_list, False
                        )
                ordered = [rows[c] for c in cols if c in rows]
                out.append(column_statistics(cat, db, tbl, ordered, flags, compliant, eng, name))
            return out

        return self._partition_stats_read(
            "partition_column_statistics",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.partition_column_statistics(
                cat,
                db,
                tbl,
                part_names,
                col_names,
                engine,
                valid_write_id_list=valid_write_id_list,
                bit_vectors=bit_vectors,
                histograms=histograms,
            ),
        )

    def get_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
    ) -> dict[str, list[hms.ColumnStatisticsObj]]:
        return compliant_by_partition(
            self.partition_column_statistics(
                cat, db, tbl, part_names, col_names, engine, valid_write_id_list=valid_write_id_list
            )
        )

    def get_aggr_stats_for(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
    ) -> hms.AggrStats:
        names = list(dict.fromkeys(part_names or []))
        cols = list(dict.fromkeys(col_names or []))
        eng = engine or DEFAULT_ENGINE

        def pick(entry: PartitionStatsEntry) -> Any:
            if not names or not cols:
                return hms.AggrStats(colStats=[], partsFound=0)
            by_name = entry.parts.by_name
            if valid_write_id_list is not None:
                if entry.transactional and not self.sql.txn_stats_enabled:
                    return hms.AggrStats(colStats=[], partsFound=0)
                for n in names:
                    p = by_name.get(n)
                    if p is None:
                        continue
                    part = thrift_bytes.decode(hms.Partition, p.encoded())
                    if not stats_valid_for_query(
                        part.parameters or {}, part.writeId, valid_write_id_list, False
                    ):
                        return hms.AggrStats(colStats=[], partsFound=0)
            wanted = set(cols)
            stats: dict[str, list[hms.ColumnStatisticsObj]] = {}
            for n in names:
                prows = entry.stats.parts.get(n)
                if not prows:
                    continue
                objs = [
                    stats_obj_from_row(r) for (e, c), r in prows.items() if e == eng and c in wanted
                ]
                if objs:
                    stats[n] = objs
            return aggregate_partition_stats(
                names,
                cols,
                stats,
                ndv_tuner=self.sql.stats_ndv_tuner,
                use_density_function=self.sql.stats_ndv_density_function,
            )

        return self._partition_stats_read(
            "get_aggr_stats_for",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_aggr_stats_for(
                cat, db, tbl, part_names, col_names, engine, valid_write_id_list=valid_write_id_list
            ),
        )


class _NoStats(Exception):
    """The entry is usable but its statistics are not loaded."""
