"""Writing column statistics: upserts and deletes of TAB_COL_STATS / PART_COL_STATS, with the
COLUMN_STATS_ACCURATE flags and the events of each write.

Upserts follow ObjectStore.setFieldsIntoOldStats / DirectSqlUpdateStat: an existing row keeps
every value the new statistics leave unset (None), COLUMN_TYPE is not rewritten, LAST_ANALYZED
and ENGINE always are. The handler stamps LAST_ANALYZED with the current time, as Hive's
normalizeColStatsInput does. The flag rules are in ``colstats/accuracy.py``, the merge rules
of set_aggr_stats_for with needMerge in ``colstats/aggregation.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.colstats.accuracy import (
    COLUMN_STATS_ACCURATE,
    can_column_stats_merge,
    set_column_stats_state,
    stats_valid_for_query,
    verify_stats_change,
)
from hms_cache_proxy.store.colstats.aggregation import merge_stats_obj
from hms_cache_proxy.store.colstats.stats_rows import (
    DEFAULT_ENGINE,
    SKETCH_COLUMNS,
    VALUE_COLUMNS,
    data_member,
    row_values,
    stats_obj_from_row,
)
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.partition_reads import PartitionReads, ResolvedTable
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    TxnWrite,
    is_transactional,
    now,
    table_ref,
)
from hms_cache_proxy.store.sql.stats_reads import ColumnStatsReads
from hms_cache_proxy.store.sql.tables import Tables

_TCS, _PCS, _P, _T = schema.TAB_COL_STATS, schema.PART_COL_STATS, schema.PARTITIONS, schema.TBLS


def is_acid(params: Mapping[str, str] | None) -> bool:
    """TxnUtils.isAcidTable: transactional and not insert-only."""
    props = str((params or {}).get("transactional_properties", "")).lower()
    return is_transactional(params) and props != "insert_only"


class _Target:
    """One owner (table or partition) of statistics being written in this call."""

    __slots__ = ("owner_id", "name", "objs", "params", "write_id", "analyzed", "clear")

    def __init__(
        self,
        owner_id: int,
        name: str,
        objs: list[hms.ColumnStatisticsObj],
        params: dict[str, str],
        write_id: int | None,
        analyzed: int,
    ) -> None:
        self.owner_id = owner_id
        self.name = name
        """The partition's name (for a table's statistics, the table's)."""
        self.objs = objs
        self.params = params
        self.write_id = write_id
        self.analyzed = analyzed
        self.clear: set[str] = set()
        """Columns whose stored bit vector and histogram no longer apply (merged)."""


class ColumnStatsWrites(SqlPart):
    """Column statistics of tables and partitions: the writes, with their flags and events
    (the reads and lookups are ``reads``'s)."""

    def __init__(
        self, shared: SqlShared, reads: ColumnStatsReads, partitions: PartitionReads, tables: Tables
    ) -> None:
        super().__init__(shared)
        self.reads = reads
        self.partitions = partitions
        self.tables = tables

    @writes_events
    def update_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats: hms.ColumnStatistics,
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        merge: bool = False,
    ) -> None:
        """Store a table's column statistics (upsert per column) and their state flag.

        ``merge`` (set_aggr_stats_for with needMerge): merge into the stored statistics the
        columns whose stored statistics are accurate, drop the others.

        On a transactional table a ``write_id`` must belong to an open txn (``_txn_write``);
        without ``valid_write_id_list`` the writer's own snapshot stands in for it. The
        UPDATE_TBL_COL_STAT_EVENT carries the table and the statistics of the columns written
        as stored afterwards (read back), and the table's new parameters.
        """
        engine = stats.engine or DEFAULT_ENGINE
        objs = list(stats.statsObj or [])
        analyzed = _analyzed(stats)

        def run(conn: Connection) -> None:
            row = self.reads.stats_table_row(conn, cat, db, tbl, lock=True)
            table = self.tables.load_table_by_id(conn, row.TBL_ID)
            params = dict(table.parameters or {})
            tw = self._txn_write(conn, db, tbl, params, write_id, valid_write_id_list)
            snapshot = tw.valid_write_ids
            _validate_table_cols(table, [o.colName for o in objs])
            target = _Target(row.TBL_ID, tbl, objs, params, row.WRITE_ID, analyzed)
            old = self.reads.stored_rows(
                conn, _TCS, "TBL_ID", [row.TBL_ID], engine, [o.colName for o in objs]
            )
            if merge:
                old_objs = {k[1]: stats_obj_from_row(r) for k, r in old.items()}
                txn = is_transactional(params)
                if (
                    txn
                    and old_objs
                    and snapshot is not None
                    and not (
                        self.reads.txn_stats_enabled
                        and stats_valid_for_query(params, row.WRITE_ID, snapshot, False)
                    )
                ):
                    self._invalidate_table(conn, cat, db, tbl, table, tw)
                    return
                _prepare_merge(target, old_objs)
                if not target.objs:
                    return
            names = [o.colName for o in target.objs]
            new_params = dict(params)
            set_column_stats_state(new_params, names)
            new_write_id = None
            if is_transactional(params):
                if not self.reads.txn_stats_enabled:
                    new_params.pop(COLUMN_STATS_ACCURATE, None)
                else:
                    error = verify_stats_change(  # a replayed write's id counts
                        f"{db}.{tbl}", params, new_params, tw.row_write_id, snapshot
                    )
                    if error is not None:
                        raise hms.MetaException(message=error)
                    if not stats_valid_for_query(params, row.WRITE_ID, snapshot, True):
                        new_params.pop(COLUMN_STATS_ACCURATE, None)
                    new_write_id = tw.row_write_id
            owner = {"CAT_NAME": cat, "DB_NAME": db, "TABLE_NAME": tbl}
            self._write_rows(
                conn, _TCS, idseq.TABLE_COLUMN_STATS, "TBL_ID", [target], old, owner, engine
            )
            _set_param(conn, schema.TABLE_PARAMS, "TBL_ID", row.TBL_ID, params, new_params)
            if new_write_id is not None:
                conn.execute(
                    update(_T).where(_T.c.TBL_ID == row.TBL_ID).values(WRITE_ID=new_write_id)
                )
            stored = self.tables.load_table_by_id(conn, row.TBL_ID)
            rows = self.reads.stored_rows(conn, _TCS, "TBL_ID", [row.TBL_ID], engine, names)
            desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=tbl, catName=cat)
            written = _stored_statistics(desc, rows, row.TBL_ID, names, engine)
            body = self.messages.update_table_column_stats(
                written,
                stored,
                stored.parameters,
                write_id=tw.event_write_id,
                valid_write_ids=snapshot,
            )
            self._emit(conn, [NewEvent(msg.UPDATE_TBL_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)

    def _invalidate_table(
        self, conn: Connection, cat: str, db: str, tbl: str, table: hms.Table, tw: TxnWrite
    ) -> None:
        """Stored transactional statistics the writer cannot merge into: mark them all stale
        (``table`` is the table as read before; the event carries it and the table after)."""
        params = dict(table.parameters or {})
        params.pop(COLUMN_STATS_ACCURATE, None)
        _set_param(conn, schema.TABLE_PARAMS, "TBL_ID", table.id, table.parameters or {}, params)
        if tw.write_id is not None:
            conn.execute(update(_T).where(_T.c.TBL_ID == table.id).values(WRITE_ID=tw.write_id))
        stored = self.tables.load_table_by_id(conn, table.id)
        body = self.messages.alter_table(
            table,
            stored,
            write_id=tw.event_write_id,
            valid_write_ids=tw.valid_write_ids,
            partitions_changed=False,
        )
        self._emit(conn, [NewEvent(msg.ALTER_TABLE, body, cat, db, tbl)])

    @writes_events
    def update_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats_list: Sequence[hms.ColumnStatistics],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        merge: bool = False,
    ) -> None:
        """Store column statistics of one or many partitions of a table in one transaction.

        Each ColumnStatistics names its partition in ``statsDesc.partName``; several for the
        same partition are merged (as set_aggr_stats_for does). One UPDATE_PART_COL_STAT_EVENT
        per partition, carrying the statistics of the columns written and the partition (our
        ``partitionObjJson``) as stored afterwards, and the partition's new parameters. Write
        ids as in ``update_table_column_statistics``.
        """
        by_part: dict[str, hms.ColumnStatistics] = {}
        for cs in stats_list:
            name = cs.statsDesc.partName if cs.statsDesc is not None else None
            if not name:
                raise hms.InvalidInputException(message="The partition name must be set")
            prior = by_part.get(name)
            by_part[name] = cs if prior is None else _merge_statistics(cs, prior)
        if not by_part:
            return

        def run(conn: Connection) -> None:
            try:
                tk = self.partitions.resolve_table(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(
                    message=f"{table_ref(cat, db, tbl)} table not found"
                ) from None
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            tw = self._txn_write(conn, db, tbl, table.parameters, write_id, valid_write_id_list)
            snapshot = tw.valid_write_ids
            parts = self.reads.partition_rows(conn, tk.tbl_id, list(by_part), lock=True)
            missing = [n for n in by_part if n not in parts]
            if missing:
                raise hms.NoSuchObjectException(
                    message=f"Partition {missing[0]} for which stats is gathered doesn't exist."
                )
            part_ids = [parts[n].PART_ID for n in by_part]
            params = self.reads.partition_params(conn, part_ids)
            engines = {n: cs.engine or DEFAULT_ENGINE for n, cs in by_part.items()}
            all_cols = sorted({o.colName for cs in by_part.values() for o in cs.statsObj or []})
            old: dict[tuple[int, str, str], Any] = {}
            for engine in sorted(set(engines.values())):
                ids_for = [parts[n].PART_ID for n in by_part if engines[n] == engine]
                old.update(
                    {
                        (pid, col, engine): r
                        for (pid, col), r in self.reads.stored_rows(
                            conn, _PCS, "PART_ID", ids_for, engine, all_cols
                        ).items()
                    }
                )
            acid = is_acid(table.parameters)
            targets: list[_Target] = []
            invalid: list[_Target] = []
            for name, cs in by_part.items():
                prow = parts[name]
                target = _Target(
                    prow.PART_ID,
                    name,
                    list(cs.statsObj or []),
                    params.get(prow.PART_ID, {}),
                    prow.WRITE_ID,
                    _analyzed(cs),
                )
                if merge:
                    eng = engines[name]
                    old_objs = {
                        k[1]: stats_obj_from_row(r)
                        for k, r in old.items()
                        if k[0] == prow.PART_ID and k[2] == eng
                    }
                    if (
                        old_objs
                        and snapshot is not None
                        and not (
                            self.reads.txn_stats_enabled
                            and stats_valid_for_query(target.params, prow.WRITE_ID, snapshot, False)
                        )
                    ):
                        invalid.append(target)
                        continue
                    _prepare_merge(target, old_objs)
                    if not target.objs:
                        continue
                targets.append(target)
            self._partition_flags(conn, table, targets, tw.row_write_id, snapshot, acid)
            for engine in sorted({engines[t.name] for t in targets}):
                group_ = [t for t in targets if engines[t.name] == engine]
                old_e = {(k[0], k[1]): r for k, r in old.items() if k[2] == engine}
                self._write_rows(
                    conn,
                    _PCS,
                    idseq.PARTITION_COLUMN_STATS,
                    "PART_ID",
                    group_,
                    old_e,
                    {"CAT_NAME": cat, "DB_NAME": db, "TABLE_NAME": tbl},
                    engine,
                    partition_names=True,
                )
            events = []
            values = {t.name: partnames.values_from_name(t.name, tk.key_names) for t in targets}
            stored = {
                tuple(p.values): p
                for p in self.partitions.load_partitions(conn, tk, [t.owner_id for t in targets])
            }
            rows: dict[tuple[int, str], Any] = {}
            for engine in sorted({engines[t.name] for t in targets}):
                rows.update(
                    self.reads.stored_rows(
                        conn,
                        _PCS,
                        "PART_ID",
                        [t.owner_id for t in targets if engines[t.name] == engine],
                        engine,
                        all_cols,
                    )
                )
            for t in targets:
                part = stored[tuple(values[t.name])]
                desc = hms.ColumnStatisticsDesc(
                    isTblLevel=False, dbName=db, tableName=tbl, partName=t.name, catName=cat
                )
                cols = [o.colName for o in t.objs]
                written = _stored_statistics(desc, rows, t.owner_id, cols, engines[t.name])
                body = self.messages.update_partition_column_stats(
                    written,
                    values[t.name],
                    part.parameters,
                    table,
                    write_id=tw.event_write_id,
                    valid_write_ids=snapshot,
                    partition=part,
                )
                events.append(NewEvent(msg.UPDATE_PART_COL_STAT_EVENT, body, cat, db, tbl))
            events.extend(self._invalidate_partitions(conn, tk, table, invalid, tw))
            self._emit(conn, events)

        self.db.transaction(run)

    def _partition_flags(
        self,
        conn: Connection,
        table: hms.Table,
        targets: Sequence[_Target],
        write_id: int | None,
        valid_write_id_list: str | None,
        acid: bool,
    ) -> dict[int, dict[str, str]]:
        """Update COLUMN_STATS_ACCURATE (and WRITE_ID) of the partitions; their new params.
        ``write_id`` is the request's, as ObjectStore.verifyStatsChangeCtx checks it: that of
        the caller's txn, or the committed source write id a replication target replays."""
        inserts, updates, deletes, result = [], [], [], {}
        for t in targets:
            names = [o.colName for o in t.objs]
            old_flag = t.params.get(COLUMN_STATS_ACCURATE)
            new = dict(t.params)
            if old_flag is None:
                new[COLUMN_STATS_ACCURATE] = "TRUE"
                set_column_stats_state(new, names)
                inserts.append({"pid": t.owner_id, "val": new[COLUMN_STATS_ACCURATE]})
            else:
                set_column_stats_state(new, names)
                if acid:
                    error = verify_stats_change(
                        f"{table.dbName}.{table.tableName}",
                        {COLUMN_STATS_ACCURATE: old_flag},
                        {COLUMN_STATS_ACCURATE: new[COLUMN_STATS_ACCURATE]},
                        write_id,
                        valid_write_id_list,
                    )
                    if error is not None:
                        raise hms.MetaException(message=error)
                if acid and not (
                    self.reads.txn_stats_enabled
                    and stats_valid_for_query(
                        {COLUMN_STATS_ACCURATE: old_flag}, t.write_id, valid_write_id_list, True
                    )
                ):
                    new.pop(COLUMN_STATS_ACCURATE, None)
                    deletes.append({"pid": t.owner_id})
                else:
                    updates.append({"pid": t.owner_id, "val": new[COLUMN_STATS_ACCURATE]})
            result[t.owner_id] = new
        pp = schema.PARTITION_PARAMS
        key_cond = pp.c.PARAM_KEY == COLUMN_STATS_ACCURATE
        if inserts:
            conn.execute(
                insert(pp).values(
                    PART_ID=bindparam("pid"),
                    PARAM_KEY=COLUMN_STATS_ACCURATE,
                    PARAM_VALUE=bindparam("val"),
                ),
                inserts,
            )
        if updates:
            conn.execute(
                update(pp)
                .where(pp.c.PART_ID == bindparam("pid"), key_cond)
                .values(PARAM_VALUE=bindparam("val")),
                updates,
            )
        if deletes:
            conn.execute(delete(pp).where(pp.c.PART_ID == bindparam("pid"), key_cond), deletes)
        if acid and write_id is not None and write_id > 0:
            for part in chunks([t.owner_id for t in targets]):
                conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(WRITE_ID=write_id))
        return result

    def _invalidate_partitions(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        targets: Sequence[_Target],
        tw: TxnWrite,
    ) -> list[NewEvent]:
        """Partitions whose stored statistics the writer cannot merge into: mark them stale."""
        if not targets:
            return []
        ids = [t.owner_id for t in targets]
        found = {tuple(p.values): p for p in self.partitions.load_partitions(conn, tk, ids)}
        pp = schema.PARTITION_PARAMS
        for part in chunks(ids):
            conn.execute(
                delete(pp).where(pp.c.PART_ID.in_(part), pp.c.PARAM_KEY == COLUMN_STATS_ACCURATE)
            )
            if tw.write_id is not None:
                conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(WRITE_ID=tw.write_id))
        events = []
        for new in self.partitions.load_partitions(conn, tk, ids):
            body = self.messages.alter_partition(
                table,
                found[tuple(new.values)],
                new,
                write_id=tw.event_write_id,
                valid_write_ids=tw.valid_write_ids,
            )
            events.append(NewEvent(msg.ALTER_PARTITION, body, tk.cat, tk.db, tk.name))
        return events

    def _write_rows(
        self,
        conn: Connection,
        table: Any,
        seq: idseq.IdSequence,
        owner_col: str,
        targets: Sequence[_Target],
        old: Mapping[tuple[int, str], Any],
        names: Mapping[str, str],
        engine: str,
        *,
        partition_names: bool = False,
    ) -> None:
        """Insert new rows and update existing ones: two executemany statements at most.

        An existing row keeps what the new statistics leave unset (setFieldsIntoOldStats);
        COLUMN_TYPE is not rewritten.
        """
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for t in targets:
            owner = dict(names)
            if partition_names:
                owner["PARTITION_NAME"] = t.name
            seen: set[str] = set()
            for obj in t.objs:
                if obj.colName in seen:
                    continue  # one row per column: the first object wins
                seen.add(obj.colName)
                values = row_values(obj)
                prior = old.get((t.owner_id, obj.colName))
                if prior is None:
                    row = {c: values.get(c) for c in VALUE_COLUMNS}
                    row["NUM_NULLS"] = row["NUM_NULLS"] or 0
                    row.update(owner)
                    row.update(
                        {
                            owner_col: t.owner_id,
                            "COLUMN_NAME": obj.colName,
                            "COLUMN_TYPE": obj.colType,
                            "ENGINE": engine,
                            "LAST_ANALYZED": t.analyzed,
                        }
                    )
                    inserts.append(row)
                    continue
                merged = {c: prior._mapping[c] for c in VALUE_COLUMNS}
                merged.update(values)
                if obj.colName in t.clear:
                    for c in SKETCH_COLUMNS:
                        merged[c] = None
                row = {f"v_{c}": v for c, v in merged.items()}
                row.update({f"v_{k}": v for k, v in owner.items()})
                row.update(v_ENGINE=engine, v_LAST_ANALYZED=t.analyzed, v_CS_ID=prior.CS_ID)
                updates.append(row)
        if inserts:
            cs_ids = self.ids.allocate(conn, seq, len(inserts))
            for row, cs_id in zip(inserts, cs_ids, strict=True):
                row["CS_ID"] = cs_id
            conn.execute(insert(table), inserts)
        if updates:
            keys = [k[2:] for k in updates[0] if k != "v_CS_ID"]
            conn.execute(
                update(table)
                .where(table.c.CS_ID == bindparam("v_CS_ID"))
                .values({k: bindparam(f"v_{k}") for k in keys}),
                updates,
            )

    # -- reads -----------------------------------------------------------------------------------
    @writes_events
    def delete_table_column_statistics(
        self, cat: str, db: str, tbl: str, col_name: str | None, engine: str | None = None
    ) -> None:
        """Delete a column's (or, with None, every column's) table statistics of ``engine``
        (None: every engine). A named column without statistics is NoSuchObjectException."""

        def run(conn: Connection) -> None:
            try:
                row = self.reads.stats_table_row(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.NoSuchObjectException(
                    message=f"Table {table_ref(cat, db, tbl)}  for which stats deletion is "
                    "requested doesn't exist"
                ) from None
            if is_transactional(self.reads.table_params(conn, row.TBL_ID)):
                raise hms.MetaException(
                    message="Cannot delete stats via this API for a transactional table"
                )
            cond = [_TCS.c.TBL_ID == row.TBL_ID]
            if col_name is not None:
                cond.append(_TCS.c.COLUMN_NAME == col_name)
            if engine is not None:
                cond.append(_TCS.c.ENGINE == engine)
            deleted = conn.execute(delete(_TCS).where(*cond)).rowcount
            if col_name is not None and not deleted:
                raise hms.NoSuchObjectException(
                    message=f"Column stats doesn't exist for db={db} table={tbl} col={col_name}"
                )
            body = self.messages.delete_table_column_stats(db, col_name)
            self._emit(conn, [NewEvent(msg.DELETE_TBL_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)

    @writes_events
    def delete_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_name: str,
        col_name: str | None,
        engine: str | None = None,
    ) -> None:
        """Delete a partition's statistics of one column (None: all columns) and ``engine``."""

        def run(conn: Connection) -> None:
            try:
                tk = self.partitions.resolve_table(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(message=f"{db}.{tbl} table not found") from None
            try:
                values = partnames.values_from_name(part_name, tk.key_names)
            except partnames.PartitionNameError as exc:
                raise hms.InvalidObjectException(message=str(exc).split(" (name")[0]) from None
            if is_transactional(self.reads.table_params(conn, tk.tbl_id)):
                raise hms.MetaException(
                    message="Cannot delete stats via this API for a transactional table"
                )
            name = partnames.make_part_name(tk.key_names, values)
            prow = self.reads.partition_rows(conn, tk.tbl_id, [name]).get(name)
            if prow is None:
                raise hms.NoSuchObjectException(
                    message=f"Partition {part_name} for which stats deletion is requested "
                    "doesn't exist"
                )
            cond = [_PCS.c.PART_ID == prow.PART_ID]
            if col_name is not None:
                cond.append(_PCS.c.COLUMN_NAME == col_name)
            if engine is not None:
                cond.append(_PCS.c.ENGINE == engine)
            deleted = conn.execute(delete(_PCS).where(*cond)).rowcount
            if col_name is not None and not deleted:
                raise hms.NoSuchObjectException(
                    message=f"Column stats doesn't exist for table={table_ref(cat, db, tbl)} "
                    f"partition={part_name} col={col_name}"
                )
            body = self.messages.delete_partition_column_stats(db, col_name, part_name, values)
            self._emit(conn, [NewEvent(msg.DELETE_PART_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)


def _analyzed(stats: hms.ColumnStatistics) -> int:
    desc = stats.statsDesc
    return desc.lastAnalyzed if desc is not None and desc.lastAnalyzed is not None else now()


def _stored_statistics(
    desc: hms.ColumnStatisticsDesc,
    rows: Mapping[tuple[int, str], Any],
    owner_id: int,
    col_names: Sequence[str],
    engine: str,
) -> hms.ColumnStatistics:
    """The statistics of ``col_names`` as stored (rows of ``_existing``), in that order, bit
    vectors and histograms included: what an event of their write carries."""
    found = [rows[(owner_id, c)] for c in dict.fromkeys(col_names) if (owner_id, c) in rows]
    desc.lastAnalyzed = min((r.LAST_ANALYZED for r in found), default=now())
    return hms.ColumnStatistics(
        statsDesc=desc,
        statsObj=[stats_obj_from_row(r, bit_vectors=True, histograms=True) for r in found],
        engine=engine,
    )


def _validate_table_cols(table: hms.Table, col_names: Sequence[str]) -> None:
    """ObjectStore.validateTableCols: every column must be one of the table's."""
    have = {(c.name or "").lower() for c in (table.sd.cols if table.sd is not None else []) or []}
    for name in col_names:
        if (name or "").lower() not in have:
            raise hms.MetaException(
                message=f"Column {name} doesn't exist in table {table.tableName} in database "
                f"{table.dbName}"
            )


def _prepare_merge(target: _Target, old: Mapping[str, hms.ColumnStatisticsObj]) -> None:
    """getMergableCols + mergeColStats: keep the columns the flag lists, merged with the old."""
    kept = []
    for obj in target.objs:
        if not can_column_stats_merge(target.params, obj.colName):
            continue
        prior = old.get(obj.colName)
        if prior is not None and data_member(prior.statsData) == data_member(obj.statsData):
            obj = merge_stats_obj(obj, prior)
            target.clear.add(obj.colName)
        kept.append(obj)
    target.objs = kept


def _merge_statistics(new: hms.ColumnStatistics, old: hms.ColumnStatistics) -> hms.ColumnStatistics:
    """MetaStoreServerUtils.mergeColStats of two statistics of the same partition."""
    prior = {o.colName: o for o in old.statsObj or []}
    objs = []
    for obj in new.statsObj or []:
        other = prior.get(obj.colName)
        if other is not None and data_member(other.statsData) == data_member(obj.statsData):
            obj = merge_stats_obj(obj, other)
        objs.append(obj)
    return hms.ColumnStatistics(
        statsDesc=new.statsDesc,
        statsObj=objs,
        isStatsCompliant=new.isStatsCompliant,
        engine=new.engine,
    )


def _set_param(
    conn: Connection,
    table: Any,
    owner_col: str,
    owner_id: int,
    old: Mapping[str, str],
    new: Mapping[str, str],
) -> None:
    """Write the COLUMN_STATS_ACCURATE row of one owner as it changed from ``old`` to ``new``."""
    key = COLUMN_STATS_ACCURATE
    where = (table.c[owner_col] == owner_id, table.c.PARAM_KEY == key)
    if key not in new:
        if key in old:
            conn.execute(delete(table).where(*where))
    elif key not in old:
        conn.execute(
            insert(table).values({owner_col: owner_id, "PARAM_KEY": key, "PARAM_VALUE": new[key]})
        )
    elif old[key] != new[key]:
        conn.execute(update(table).where(*where).values(PARAM_VALUE=new[key]))
