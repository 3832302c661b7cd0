"""Reading column statistics: TAB_COL_STATS and PART_COL_STATS as answers and aggregates.

Bit vectors and histograms are returned only when ``stats_fetch_bitvector`` / ``stats_fetch_kll``
are set (Hive's metastore.stats.fetch.bitvector / .kll, both false by default); they are always
stored. The row format is in ``colstats/stats_rows.py``, the aggregation rules in
``colstats/aggregation.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.colstats.accuracy import stats_valid_for_query
from hms_cache_proxy.store.colstats.aggregation import aggregate_partition_stats
from hms_cache_proxy.store.colstats.stats_rows import (
    DEFAULT_ENGINE,
    column_statistics,
    compliant_by_partition,
    stats_obj_from_row,
)
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks, fetch_in, group
from hms_cache_proxy.store.sql.sql_base import SqlPart, is_transactional, table_ref

_TCS, _PCS, _P, _T = schema.TAB_COL_STATS, schema.PART_COL_STATS, schema.PARTITIONS, schema.TBLS


def _missing_table(cat: str, db: str, tbl: str) -> hms.NoSuchObjectException:
    """ObjectStore.ensureGetMTable's words."""
    return hms.NoSuchObjectException(
        message=f"Specified catalog.database.table does not exist : {table_ref(cat, db, tbl)}"
    )


def _stats_rows_query(
    table: Any, engine: str, cols: Sequence[str]
) -> Callable[[ColumnElement[bool]], Select[Any]]:
    """The statement of ``fetch_in`` reading ``table``'s rows of ``engine`` and ``cols``."""

    def build(owned: ColumnElement[bool]) -> Select[Any]:
        return select(table).where(
            owned, table.c.ENGINE == engine, table.c.COLUMN_NAME.in_(list(cols))
        )

    return build


def _partition_stats_query(
    tbl_id: int, engine: str, cols: Sequence[str]
) -> Callable[[ColumnElement[bool]], Select[Any]]:
    """The statement of ``fetch_in`` reading PART_COL_STATS rows of named partitions, with
    each partition's name and write id."""

    def build(named: ColumnElement[bool]) -> Select[Any]:
        return (
            select(_PCS, _P.c.PART_NAME.label("P_NAME"), _P.c.WRITE_ID.label("P_WRITE_ID"))
            .select_from(_PCS.join(_P, _P.c.PART_ID == _PCS.c.PART_ID))
            .where(
                _P.c.TBL_ID == tbl_id,
                named,
                _PCS.c.ENGINE == engine,
                _PCS.c.COLUMN_NAME.in_(list(cols)),
            )
        )

    return build


class ColumnStatsReads(SqlPart):
    """Column statistics of tables and partitions: the settings, lookups and reads
    (the rules: hms_cache_proxy/store/colstats/)."""

    stats_fetch_bitvector: bool = False
    """metastore.stats.fetch.bitvector: return bit vectors on reads."""
    stats_fetch_kll: bool = False
    """metastore.stats.fetch.kll: return histograms on reads."""
    txn_stats_enabled: bool = True
    """hive.txn.stats.enabled: keep accurate statistics for transactional tables."""
    stats_ndv_tuner: float = 0.0
    """metastore.stats.ndv.tuner (0.0: largest partition NDV, 1.0: their sum)."""
    stats_ndv_density_function: bool = False
    """metastore.stats.ndv.densityfunction."""

    # -- helpers ---------------------------------------------------------------------------------

    def stats_table_row(
        self, conn: Connection, cat: str, db: str, tbl: str, *, lock: bool = False
    ) -> Any:
        """TBL_ID, WRITE_ID of a table, or Hive's ensureGetMTable NoSuchObjectException."""
        d = schema.DBS
        stmt = (
            select(_T.c.TBL_ID, _T.c.WRITE_ID)
            .select_from(_T.join(d, d.c.DB_ID == _T.c.DB_ID))
            .where(d.c.CTLG_NAME == cat, d.c.NAME == db, _T.c.TBL_NAME == tbl)
        )
        if lock:
            stmt = stmt.with_for_update(of=_T)
        row = conn.execute(stmt).first()
        if row is None:
            raise _missing_table(cat, db, tbl)
        return row

    def table_params(self, conn: Connection, tbl_id: int) -> dict[str, str]:
        p = schema.TABLE_PARAMS.c
        rows = conn.execute(select(p.PARAM_KEY, p.PARAM_VALUE).where(p.TBL_ID == tbl_id))
        return {r[0]: r[1] if r[1] is not None else "" for r in rows}

    def partition_rows(
        self, conn: Connection, tbl_id: int, names: Sequence[str], *, lock: bool = False
    ) -> dict[str, Any]:
        """PART_ID, PART_NAME, WRITE_ID of the named partitions, by name."""

        def build(cond: Any) -> Any:
            stmt = select(_P.c.PART_ID, _P.c.PART_NAME, _P.c.WRITE_ID).where(
                _P.c.TBL_ID == tbl_id, cond
            )
            return stmt.with_for_update() if lock else stmt

        rows = fetch_in(conn, _P.c.PART_NAME, sorted(set(names)), build)
        return {r.PART_NAME: r for r in rows}

    def partition_params(
        self, conn: Connection, part_ids: Sequence[int]
    ) -> dict[int, dict[str, str]]:
        p = schema.PARTITION_PARAMS.c
        rows = fetch_in(
            conn,
            p.PART_ID,
            part_ids,
            lambda cond: select(p.PART_ID, p.PARAM_KEY, p.PARAM_VALUE).where(cond),
        )
        out: dict[int, dict[str, str]] = {pid: {} for pid in part_ids}
        for r in rows:
            out.setdefault(r.PART_ID, {})[r.PARAM_KEY] = (
                r.PARAM_VALUE if r.PARAM_VALUE is not None else ""
            )
        return out

    def fetch_flags(
        self, bit_vectors: bool | None = None, histograms: bool | None = None
    ) -> dict[str, bool]:
        """Whether answers carry bit vectors and histograms: the settings unless the call says."""
        return {
            "bit_vectors": self.stats_fetch_bitvector if bit_vectors is None else bit_vectors,
            "histograms": self.stats_fetch_kll if histograms is None else histograms,
        }

    # -- writes ----------------------------------------------------------------------------------

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
        """The table's statistics of these columns (requested order), None when it has none.

        With ``valid_write_id_list`` the answer's isStatsCompliant says whether the statistics
        are valid for that snapshot (ObjectStore.getTableColumnStatistics).
        """
        flags = self.fetch_flags(bit_vectors, histograms)
        cols = list(dict.fromkeys(col_names or []))
        with self.db.read() as conn:
            row = self.stats_table_row(conn, cat, db, tbl)
            if not cols:
                return None
            found = self.stored_rows(
                conn, _TCS, "TBL_ID", [row.TBL_ID], engine or DEFAULT_ENGINE, cols
            )
            if not found:
                return None
            compliant = None
            if valid_write_id_list is not None:
                params = self.table_params(conn, row.TBL_ID)
                compliant = not is_transactional(params) or (
                    self.txn_stats_enabled
                    and stats_valid_for_query(params, row.WRITE_ID, valid_write_id_list, False)
                )
        rows = [found[(row.TBL_ID, c)] for c in cols if (row.TBL_ID, c) in found]
        return column_statistics(cat, db, tbl, rows, flags, compliant, engine or DEFAULT_ENGINE)

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
        """One ColumnStatistics per partition that has any of the columns, by partition name.

        With ``valid_write_id_list`` each carries isStatsCompliant (ObjectStore
        .getPartitionColumnStatistics).
        """
        flags = self.fetch_flags(bit_vectors, histograms)
        with self.db.read() as conn:
            row = self.stats_table_row(conn, cat, db, tbl)
            grouped, part_rows = self._partition_stat_rows(
                conn, row.TBL_ID, part_names, col_names, engine or DEFAULT_ENGINE
            )
            compliance: dict[str, bool] = {}
            if valid_write_id_list is not None and grouped:
                if not self.txn_stats_enabled:
                    compliance = {n: False for n in grouped}
                else:
                    params = self.partition_params(conn, [part_rows[n].PART_ID for n in grouped])
                    compliance = {
                        n: stats_valid_for_query(
                            params.get(part_rows[n].PART_ID, {}),
                            part_rows[n].WRITE_ID,
                            valid_write_id_list,
                            False,
                        )
                        for n in grouped
                    }
        cols = list(dict.fromkeys(col_names))
        eng = engine or DEFAULT_ENGINE
        out = []
        for name in sorted(grouped):
            rows = {r.COLUMN_NAME: r for r in grouped[name]}
            ordered = [rows[c] for c in cols if c in rows]
            out.append(
                column_statistics(cat, db, tbl, ordered, flags, compliance.get(name), eng, name)
            )
        return out

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
        """Partition name -> statistics valid for ``valid_write_id_list``."""
        return compliant_by_partition(
            self.partition_column_statistics(
                cat, db, tbl, part_names, col_names, engine, valid_write_id_list=valid_write_id_list
            )
        )

    def stored_rows(
        self,
        conn: Connection,
        table: Any,
        owner_col: str,
        owner_ids: Sequence[int],
        engine: str,
        col_names: Sequence[str],
    ) -> dict[tuple[int, str], Any]:
        """Stored rows of these owners, engine and columns, by (owner id, column)."""
        if not owner_ids or not col_names:
            return {}
        owner = table.c[owner_col]
        out: dict[tuple[int, str], Any] = {}
        for cols in chunks(sorted(set(col_names))):
            rows = fetch_in(conn, owner, owner_ids, _stats_rows_query(table, engine, cols))
            for r in rows:
                out.setdefault((r._mapping[owner_col], r.COLUMN_NAME), r)
        return out

    def _partition_stat_rows(
        self,
        conn: Connection,
        tbl_id: int,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str,
    ) -> tuple[dict[str, list[Any]], dict[str, Any]]:
        """PART_COL_STATS rows of the named partitions and columns, grouped by partition name,
        and the partitions' (PART_ID, PART_NAME, WRITE_ID) rows."""
        names = sorted(set(part_names or []))
        cols = sorted(set(col_names or []))
        if not names or not cols:
            return {}, {}
        rows: list[Any] = []
        for col_chunk in chunks(cols):
            rows.extend(
                fetch_in(
                    conn, _P.c.PART_NAME, names, _partition_stats_query(tbl_id, engine, col_chunk)
                )
            )
        grouped = group(rows, lambda r: r.P_NAME)
        parts = {r.P_NAME: _PartRow(r.PART_ID, r.P_NAME, r.P_WRITE_ID) for r in rows}
        return grouped, parts

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
        """Statistics of the columns aggregated over the partitions (colstats/aggregation.py).

        Where Hive answers null (a transactional snapshot the stored statistics are not valid
        for, or no partitions with a snapshot) the answer is empty with partsFound 0.
        """
        names = list(dict.fromkeys(part_names or []))
        cols = list(dict.fromkeys(col_names or []))
        with self.db.read() as conn:
            row = self.stats_table_row(conn, cat, db, tbl)
            if not names or not cols:
                return hms.AggrStats(colStats=[], partsFound=0)
            if valid_write_id_list is not None:
                params = self.table_params(conn, row.TBL_ID)
                if is_transactional(params) and not self.txn_stats_enabled:
                    return hms.AggrStats(colStats=[], partsFound=0)
                parts = self.partition_rows(conn, row.TBL_ID, names)
                pparams = self.partition_params(conn, [p.PART_ID for p in parts.values()])
                for p in parts.values():
                    if not stats_valid_for_query(
                        pparams.get(p.PART_ID, {}), p.WRITE_ID, valid_write_id_list, False
                    ):
                        return hms.AggrStats(colStats=[], partsFound=0)
            grouped, _ = self._partition_stat_rows(
                conn, row.TBL_ID, names, cols, engine or DEFAULT_ENGINE
            )
        stats = {name: [stats_obj_from_row(r) for r in rows] for name, rows in grouped.items()}
        return aggregate_partition_stats(
            names,
            cols,
            stats,
            ndv_tuner=self.stats_ndv_tuner,
            use_density_function=self.stats_ndv_density_function,
        )

    # -- deletes ---------------------------------------------------------------------------------


class _PartRow:
    __slots__ = ("PART_ID", "PART_NAME", "WRITE_ID")

    def __init__(self, part_id: int, name: str, write_id: int | None) -> None:
        self.PART_ID, self.PART_NAME, self.WRITE_ID = part_id, name, write_id
