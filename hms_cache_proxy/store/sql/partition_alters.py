"""Partition alters: alter_partitions, rename_partition and truncate_table (which resets the
partitions' statistics through an alter), each replacing partition rows in one transaction;
add, drop and exchange are in partition_writes.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    Connection,
    bindparam,
    cast,
    column,
    delete,
    select,
    update,
    values,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.colstats.accuracy import COLUMN_STATS_ACCURATE, stats_valid_for_query
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks, fetch_in
from hms_cache_proxy.store.db.prepared import Prepared
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent, one_statement
from hms_cache_proxy.store.sql.partition_reads import PartitionReads, ResolvedTable
from hms_cache_proxy.store.sql.partition_writes import (
    copy_partition,
    in_order,
    p_name,
    write_id_of_call,
)
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    TxnWrite,
    is_transactional,
    java_list,
    table_ref,
)
from hms_cache_proxy.store.sql.storage import (
    PG_DELETE_SDS_DBAPI,
    delete_storage_descriptors,
    drop_freed_column_descriptors,
    insert_column_descriptors,
    insert_rows,
    insert_storage_descriptors,
    param_rows,
    same_columns,
)
from hms_cache_proxy.store.sql.table_alters import TableAlters
from hms_cache_proxy.store.sql.tables import TABLE_BY_NAME_SHARED, Tables

_P, _KV = schema.PARTITIONS, schema.PARTITION_KEY_VALS


class PartitionAlters(SqlPart):
    """Changes to existing partitions (alter, rename, truncate_table); the partitions are read
    through ``reads``, the table through ``tables`` (and altered through ``table_alters``)."""

    def __init__(
        self, shared: SqlShared, reads: PartitionReads, tables: Tables, table_alters: TableAlters
    ) -> None:
        super().__init__(shared)
        self.reads = reads
        self.tables = tables
        self.table_alters = table_alters

    @writes_events
    def alter_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = None,
        is_truncate: bool = False,
    ) -> list[tuple[hms.Partition, hms.Partition]]:
        """Replace partitions (found by their values); returns (before, after) pairs, as stored.

        A missing partition is NoSuchObjectException ``partition values=[a, b]`` (Hive's
        ObjectStore.getPartition). ``prepare(table, before, after)`` may adjust each new
        partition inside the transaction (``table`` as read there). One ALTER_PARTITION
        event per partition (``is_truncate`` marks them as truncate_table's).

        Write ids (Hive's ObjectStore.alterPartitions): only a transactional table takes one,
        ``write_id`` (the request's) or else the new partitions' writeId (one value; echoes of
        the stored ones count only while their txn is open). It must belong to an open txn,
        becomes PARTITIONS.WRITE_ID, and drops COLUMN_STATS_ACCURATE of partitions whose stored
        statistics are not valid for the writer's snapshot. Without one WRITE_ID stays."""

        return self.db.transaction(
            lambda conn: self.alter_partitions_in(
                conn,
                cat,
                db,
                tbl,
                new_parts,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
                prepare=prepare,
                is_truncate=is_truncate,
                last=True,
            )
        )

    @writes_events
    def alter_partitions_in(
        self,
        conn: Connection,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = None,
        is_truncate: bool = False,
        last: bool = False,
    ) -> list[tuple[hms.Partition, hms.Partition]]:
        """``alter_partitions`` inside the caller's write transaction ``conn``; ``last``: the
        caller runs nothing after it on ``conn`` (its COMMIT may go with the events)."""
        # The table's row FOR SHARE: every writer of the table or of its set of partitions
        # (alter_table, drop_table, add/drop/rename/exchange partitions, statistics, truncate)
        # locks it FOR UPDATE and so waits for this alter, while alters of other partitions of
        # the table go on at once; the partitions' own rows serialize alters of one partition.
        tk, table = self._share_locked_table(conn, cat, db, tbl)
        names = [self.reads.name_for(tk, p.values) for p in new_parts]
        row_ids: dict[str, tuple[int, int | None]] = {}
        loaded = self.reads.load_by_names(conn, tk, names, lock=True, row_ids=row_ids)
        before = {p_name(tk, p): p for p in loaded}
        for name, p in zip(names, new_parts, strict=True):
            if name not in before:
                raise hms.NoSuchObjectException(message=f"partition values={java_list(p.values)}")
        if len(before) != len(names):  # one partition twice (HiveAlterHandler's words)
            raise hms.InvalidOperationException(
                message=f"Alter partition operation failed: new parts size {len(names)} "
                f"not matching with old parts size {len(before)}"
            )
        tw = self._partition_txn_write(
            conn,
            tk,
            table,
            write_id,
            [(p, before[name]) for name, p in zip(names, new_parts, strict=True)],
            valid_write_id_list,
        )
        pairs = []
        for name, p in zip(names, new_parts, strict=True):
            old = before[name]
            new = copy_partition(p, dbName=tk.db, tableName=tk.name, catName=tk.cat)
            if prepare is not None:
                prepare(table, old, new)
            self._stamp_partition(new, old, tw)
            pairs.append((name, old, new))
        ids = self._replace_partitions(conn, tk, table, pairs, row_ids)
        stored = in_order(self.reads.load_partitions(conn, tk, list(ids.values())), new_parts)
        self._emit(
            conn,
            [
                NewEvent(
                    msg.ALTER_PARTITION,
                    self.messages.alter_partition(
                        table,
                        old,
                        new,
                        is_truncate=is_truncate,
                        write_id=tw.event_write_id,
                        valid_write_ids=tw.valid_write_ids,
                    ),
                    cat,
                    db,
                    tbl,
                )
                for (_, old, _), new in zip(pairs, stored, strict=True)
            ],
            last=last,
        )
        return [(old, new) for (_, old, _), new in zip(pairs, stored, strict=True)]

    def _share_locked_table(
        self, conn: Connection, cat: str, db: str, tbl: str
    ) -> tuple[ResolvedTable, hms.Table]:
        """The table, read with its row FOR SHARE, and what partition calls resolve of it
        (``resolve_table(share=True)`` and the table's load in one statement and its details'
        query). NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""
        sd_ids: list[int | None] = []
        params = {"cat": cat, "db": db, "tbl": tbl}
        found = self.tables.load_tables(conn, TABLE_BY_NAME_SHARED, params, sd_ids=sd_ids)
        if not found:
            raise hms.NoSuchObjectException(message=f"{table_ref(cat, db, tbl)} table not found")
        table = found[0]
        row = _TableIds(TBL_ID=table.id, SD_ID=sd_ids[0])
        return ResolvedTable(row, list(table.partitionKeys or []), cat, db, tbl), table

    @writes_events
    def truncate_table(
        self,
        cat: str,
        db: str,
        name: str,
        part_names: Sequence[str] | None,
        *,
        empty: Callable[[str | None, list[str | None] | None], None],
        reset: Callable[[dict[str, str]], None],
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
    ) -> None:
        """Truncate in one write transaction: the table's row is locked, then the table (or the
        named partitions) is read from the database, ``empty(table_location, partition_locations)``
        runs once (``None`` for an unpartitioned table's partitions), ``reset(parameters)`` on
        each parameter map, and what was read is written back
        (ALTER_TABLE or ALTER_PARTITION events with isTruncateOp). Reading inside the write
        under the lock means no concurrent write, through any instance, is overwritten."""
        self.db.transaction(
            lambda conn: self._truncate_table_txn(
                conn,
                cat,
                db,
                name,
                part_names,
                empty=empty,
                reset=reset,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
            )
        )

    def _truncate_table_txn(
        self,
        conn: Connection,
        cat: str,
        db: str,
        name: str,
        part_names: Sequence[str] | None,
        *,
        empty: Callable[[str | None, list[str | None] | None], None],
        reset: Callable[[dict[str, str]], None],
        write_id: int | None,
        valid_write_id_list: str | None,
    ) -> None:
        tk = self.reads.resolve_table(conn, cat, db, name, lock=True)
        table = self.tables.load_table_by_id(conn, tk.tbl_id)
        wid = write_id if write_id is not None and write_id > 0 else None
        if wid is not None and is_transactional(table.parameters):
            # Refuse a write id of no open txn before any directory is emptied.
            self.txn.require_open_write_id(conn, db, name, wid)
        if not table.partitionKeys:
            empty(table.sd.location if table.sd else None, None)
            table.parameters = dict(table.parameters or {})
            reset(table.parameters)
            self.table_alters.alter_table_in(
                conn,
                cat,
                db,
                name,
                table,
                write_id=wid,
                valid_write_id_list=valid_write_id_list,
                is_truncate=True,
            )
            return
        if part_names is None:
            parts = self.reads.load_partitions(conn, tk, None)
        else:
            parts = self.reads.load_by_names(conn, tk, part_names)
        empty(
            table.sd.location if table.sd else None,
            [p.sd.location if p.sd else None for p in parts],
        )
        for p in parts:
            p.parameters = dict(p.parameters or {})
            reset(p.parameters)
        if parts:
            self.alter_partitions_in(
                conn,
                cat,
                db,
                name,
                parts,
                write_id=wid,
                valid_write_id_list=valid_write_id_list,
                is_truncate=True,
            )

    def _partition_txn_write(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        write_id: int | None,
        changes: Sequence[tuple[hms.Partition, hms.Partition]],
        valid_write_id_list: str | None,
    ) -> TxnWrite:
        """The TxnWrite of an alter or rename of partitions: ``write_id`` (the request's),
        else the one new write id the (new, old) pairs carry (a value differing from the
        stored one; several: MetaException). Values equal to the stored ones are what clients
        send back as read: they name a write only while their txn is open (one such txn),
        see ``_txn_write``."""
        params = table.parameters
        if write_id is not None and write_id > 0 or not is_transactional(params):
            return self._txn_write(conn, tk.db, tk.name, params, write_id, valid_write_id_list)
        given = [(new.writeId, old.writeId) for new, old in changes if (new.writeId or 0) > 0]
        fresh = [hms.Partition(writeId=w) for w, stored in given if w != stored]
        carried = write_id_of_call(None, fresh)
        if carried is not None:
            return self._txn_write(conn, tk.db, tk.name, params, carried, valid_write_id_list)
        echoes = {w for w, _ in given}
        still_open = self.txn.open_write_ids(conn, tk.db, tk.name, echoes) if echoes else set()
        if len(still_open) != 1:
            return TxnWrite(valid_write_ids=valid_write_id_list)
        (echo,) = still_open
        return self._txn_write(
            conn, tk.db, tk.name, params, echo, valid_write_id_list, stored_write_id=echo
        )

    def _stamp_partition(self, new: hms.Partition, old: hms.Partition, tw: TxnWrite) -> None:
        """ObjectStore.alterPartitionNoTxn: the write id (else the stored one) and, for a write
        whose snapshot cannot use the stored statistics, no COLUMN_STATS_ACCURATE."""
        if tw.write_id is None:
            new.writeId = tw.replicated_write_id or old.writeId
            return
        new.writeId = tw.write_id
        if COLUMN_STATS_ACCURATE in (new.parameters or {}) and not stats_valid_for_query(
            old.parameters, old.writeId, tw.valid_write_ids, True
        ):
            new.parameters = {k: v for k, v in new.parameters.items() if k != COLUMN_STATS_ACCURATE}

    def _replace_partitions(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        pairs: Sequence[tuple[str, hms.Partition, hms.Partition]],
        row_ids: Mapping[str, tuple[int, int | None]] | None = None,
    ) -> dict[str, int]:
        """Rewrite partitions in place: same PART_IDs, new rows for everything hanging off them.
        ``row_ids``: the partitions' (PART_ID, SD_ID) by name as the caller read them with
        their rows locked (else they are read here). Returns the PART_IDs by (old) name."""
        if row_ids is None:
            row_ids = {
                r.PART_NAME: (r.PART_ID, r.SD_ID)
                for r in fetch_in(
                    conn,
                    _P.c.PART_NAME,
                    [n for n, _, _ in pairs],
                    lambda cond: select(_P.c.PART_ID, _P.c.PART_NAME, _P.c.SD_ID).where(
                        _P.c.TBL_ID == tk.tbl_id, cond
                    ),
                )
            }
        by_name = {n: _RowIds(*row_ids[n]) for n, _, _ in pairs}
        part_ids = [by_name[n].PART_ID for n, _, _ in pairs]
        old_sds = [sd for n, _, _ in pairs if (sd := by_name[n].SD_ID) is not None]
        table_cd = None
        if one_statement(conn):
            table_sd = [] if tk.sd_id is None else [tk.sd_id]
            cds = _clear_partitions_pg(conn, part_ids, old_sds, table_sd)
            table_cd = cds.get(tk.sd_id) if tk.sd_id is not None else None
            old_cd = {sd: cds.get(sd) for sd in old_sds}
        else:
            _lock_freeable_cds(conn, old_sds, tk.sd_id)
            for part in chunks(part_ids):
                conn.execute(
                    delete(schema.PARTITION_PARAMS).where(
                        schema.PARTITION_PARAMS.c.PART_ID.in_(part)
                    )
                )
                conn.execute(delete(_KV).where(_KV.c.PART_ID.in_(part)))
                conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(SD_ID=None))
            if tk.sd_id is not None:
                table_cd = conn.execute(
                    select(schema.SDS.c.CD_ID).where(schema.SDS.c.SD_ID == tk.sd_id)
                ).scalar()
            old_cd = {
                r.SD_ID: r.CD_ID
                for r in fetch_in(
                    conn,
                    schema.SDS.c.SD_ID,
                    old_sds,
                    lambda cond: select(schema.SDS.c.SD_ID, schema.SDS.c.CD_ID).where(cond),
                )
            }
        # New descriptors first, so a column descriptor the old and new share stays alive.
        table_cols = table.sd.cols if table.sd is not None else []
        cd_ids: list[int | None] = []
        new_lists: list[list[hms.FieldSchema]] = []
        pending: list[int] = []
        for name, old, new in pairs:
            if new.sd is None:
                continue
            if table_cd is not None and same_columns(new.sd.cols, table_cols):
                cd_ids.append(table_cd)
            elif old.sd is not None and same_columns(new.sd.cols, old.sd.cols):
                old_sd = by_name[name].SD_ID
                cd_ids.append(None if old_sd is None else old_cd.get(old_sd))
            else:
                pending.append(len(cd_ids))
                cd_ids.append(None)
                new_lists.append(new.sd.cols or [])
        for idx, cd in zip(
            pending, insert_column_descriptors(conn, self.ids, new_lists), strict=True
        ):
            cd_ids[idx] = cd
        with_sd = [(n, new) for n, _, new in pairs if new.sd is not None]
        sd_ids = dict(
            zip(
                [n for n, _ in with_sd],
                insert_storage_descriptors(conn, self.ids, [p.sd for _, p in with_sd], cd_ids),
                strict=True,
            )
        )
        kv_rows: list[dict[str, Any]] = []
        prm: list[dict[str, Any]] = []
        part_rows: list[tuple[Any, ...]] = []
        for name, _, new in pairs:
            pid = by_name[name].PART_ID
            part_rows.append(
                (
                    pid,
                    sd_ids.get(name),
                    new.createTime or 0,
                    new.lastAccessTime or 0,
                    new.writeId if new.writeId and new.writeId > 0 else 0,
                )
            )
            kv_rows.extend(
                {"PART_ID": pid, "PART_KEY_VAL": v, "INTEGER_IDX": i}
                for i, v in enumerate(new.values)
            )
            prm.extend(param_rows("PART_ID", pid, new.parameters))
        if one_statement(conn):
            freed = _rewrite_partitions_pg(conn, part_rows, kv_rows, prm, old_sds)
            # A column descriptor the new descriptors use stays: no statement to check it.
            in_use = set(cd_ids)
            drop_freed_column_descriptors(conn, [cd for cd in freed if cd not in in_use])
        else:
            _update_partition_rows(conn, part_rows)
            insert_rows(conn, _KV, kv_rows)
            insert_rows(conn, schema.PARTITION_PARAMS, prm)
            delete_storage_descriptors(conn, old_sds)
        return {n: by_name[n].PART_ID for n, _, _ in pairs}

    @writes_events
    def rename_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        old_values: Sequence[str],
        new_part: hms.Partition,
        *,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = None,
        valid_write_id_list: str | None = None,
    ) -> tuple[hms.Partition, hms.Partition]:
        """Rename a partition (new values, maybe a new location); returns (before, after), as
        stored. The write id is the new partition's writeId, as in ``alter_partitions``."""
        return self.db.transaction(
            lambda conn: self._rename_partition_txn(
                conn,
                cat,
                db,
                tbl,
                old_values,
                new_part,
                prepare=prepare,
                valid_write_id_list=valid_write_id_list,
            )
        )

    def _rename_partition_txn(
        self,
        conn: Connection,
        cat: str,
        db: str,
        tbl: str,
        old_values: Sequence[str],
        new_part: hms.Partition,
        *,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None,
        valid_write_id_list: str | None,
    ) -> tuple[hms.Partition, hms.Partition]:
        tk = self.reads.resolve_table(conn, cat, db, tbl, lock=True)
        table = self.tables.load_table_by_id(conn, tk.tbl_id)
        old_name = self.reads.name_for(tk, old_values)
        new_name = self.reads.name_for(tk, new_part.values)
        found = self.reads.load_by_names(conn, tk, [old_name])
        if not found:
            raise hms.InvalidOperationException(
                message="Unable to rename partition because old partition does not exist"
            )
        if self.reads.load_by_names(conn, tk, [new_name]):
            # HiveAlterHandler: "Partition already exists:<db>.<tbl>.[v]", names as the
            # client sent them, which the handler knows.
            raise hms.AlreadyExistsException(
                message=f"Partition already exists:{db}.{tbl}.{java_list(new_part.values)}"
            )
        old = found[0]
        new = copy_partition(new_part, dbName=tk.db, tableName=tk.name, catName=tk.cat)
        tw = self._partition_txn_write(conn, tk, table, None, [(new, old)], valid_write_id_list)
        if prepare is not None:
            prepare(table, old, new)
        self._stamp_partition(new, old, tw)
        ids = self._replace_partitions(conn, tk, table, [(old_name, old, new)])
        conn.execute(
            update(_P)
            .where(_P.c.TBL_ID == tk.tbl_id, _P.c.PART_NAME == old_name)
            .values(PART_NAME=new_name)
        )
        conn.execute(
            update(schema.PART_COL_STATS)
            .where(
                schema.PART_COL_STATS.c.PART_ID.in_(
                    select(_P.c.PART_ID)
                    .where(_P.c.TBL_ID == tk.tbl_id, _P.c.PART_NAME == new_name)
                    .scalar_subquery()
                )
            )
            .values(PARTITION_NAME=new_name)
        )
        (stored,) = self.reads.load_partitions(conn, tk, [ids[old_name]])
        self._emit(
            conn,
            [
                NewEvent(
                    msg.ALTER_PARTITION,
                    self.messages.alter_partition(
                        table,
                        old,
                        stored,
                        write_id=tw.event_write_id,
                        valid_write_ids=tw.valid_write_ids,
                    ),
                    cat,
                    db,
                    tbl,
                )
            ],
        )
        return old, stored


class _TableIds(NamedTuple):
    """A table's TBLS.TBL_ID and SD_ID (what ResolvedTable takes of its row)."""

    TBL_ID: int
    SD_ID: int | None


class _RowIds(NamedTuple):
    """A partition's PARTITIONS.PART_ID and SD_ID."""

    PART_ID: int
    SD_ID: int | None


_ROW_COLUMNS = ("PART_ID", "SD_ID", "CREATE_TIME", "LAST_ACCESS_TIME", "WRITE_ID")


def _update_partition_rows(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """Rewrite PARTITIONS rows (PART_ID, SD_ID, CREATE_TIME, LAST_ACCESS_TIME, WRITE_ID) of an
    alter: on PostgreSQL one ``UPDATE ... FROM (VALUES ...)`` per thousand rows instead of a
    statement (a round trip) per partition; elsewhere one executemany."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        stmt = (
            update(_P)
            .where(_P.c.PART_ID == bindparam("pid"))
            .values({c: bindparam(f"v_{c}") for c in _ROW_COLUMNS[1:]})
        )
        conn.execute(stmt, [{"pid": r[0], **dict(zip(_V_NAMES, r[1:], strict=True))} for r in rows])
        return
    for part in chunks(rows, 1000):
        v = values(*(column(c, _P.c[c].type) for c in _ROW_COLUMNS), name="v").data(part)
        conn.execute(
            update(_P)
            .where(_P.c.PART_ID == v.c.PART_ID)
            .values({c: cast(v.c[c], _P.c[c].type) for c in _ROW_COLUMNS[1:]})
        )


_V_NAMES = tuple(f"v_{c}" for c in _ROW_COLUMNS[1:])


# -- PostgreSQL through psycopg2: the same statements, several in one message -----------------

_CLEAR = (
    Prepared(
        "hms_clear_partition_params",
        'DELETE FROM "PARTITION_PARAMS" WHERE "PART_ID" = ANY(%(ids)s::bigint[])',
        {"ids": "bigint[]"},
        at_connect=True,
    ),
    Prepared(
        "hms_clear_partition_key_vals",
        'DELETE FROM "PARTITION_KEY_VALS" WHERE "PART_ID" = ANY(%(ids)s::bigint[])',
        {"ids": "bigint[]"},
        at_connect=True,
    ),
    Prepared(
        "hms_detach_partition_sds",
        'UPDATE "PARTITIONS" SET "SD_ID" = NULL WHERE "PART_ID" = ANY(%(ids)s::bigint[])',
        {"ids": "bigint[]"},
        at_connect=True,
    ),
)
_READ_CDS = Prepared(
    "hms_read_sd_cds",
    'SELECT "SD_ID", "CD_ID" FROM "SDS" WHERE "SD_ID" = ANY(%(sds)s::bigint[])',
    {"sds": "bigint[]"},
    at_connect=True,
)
_LOCK_CDS = Prepared(
    "hms_lock_freeable_cds",
    'SELECT 1 FROM "CDS" WHERE "CD_ID" IN (SELECT "CD_ID" FROM "SDS" '
    'WHERE "SD_ID" = ANY((SELECT %(old)s::bigint[])::bigint[])) AND "CD_ID" NOT IN (SELECT "CD_ID" '
    'FROM "SDS" WHERE "SD_ID" = ANY((SELECT %(tsd)s::bigint[])::bigint[]) AND "CD_ID" IS NOT NULL) '
    'ORDER BY "CD_ID" FOR NO KEY UPDATE',
    {"old": "bigint[]", "tsd": "bigint[]"},
    at_connect=True,
)
"""The statements of ``_clear_partitions_pg``, prepared (store/db/prepared.py): every alter of
partitions runs them inside its transaction. _LOCK_CDS reads its arrays through a scalar
subquery (``ANY((SELECT ...)::bigint[])``): a custom plan then estimates them as the generic
plan does (not from the values), so PostgreSQL settles on the generic plan instead of planning
each execution anew (it kept custom plans while their estimate was lower)."""


def _clear_partitions_pg(
    conn: Connection, part_ids: Sequence[int], old_sds: Sequence[int], table_sd: Sequence[int]
) -> dict[int, int | None]:
    """``_replace_partitions``' first steps in one round trip per thousand partitions (the
    statements, their order and rows as on the general path): lock the column descriptors
    the old descriptors may free (``_lock_freeable_cds``), delete the partitions' parameters
    and key values, detach their descriptors; the last message also reads the column
    descriptors of ``old_sds`` and ``table_sd``, returned by SD_ID."""
    parts = list(chunks(list(part_ids))) or [[]]
    for n, part in enumerate(parts):
        first, last = n == 0, n == len(parts) - 1
        statements = [_LOCK_CDS.text(conn)] if first else []
        statements += [s.text(conn) for s in _CLEAR] if part else ["SELECT 1"]
        statements += [_READ_CDS.text(conn)] if last else []
        sql = "; ".join(statements)
        params = {"ids": list(part), "old": list(old_sds), "tsd": list(table_sd)}
        result = conn.exec_driver_sql(sql, {**params, "sds": list(old_sds) + list(table_sd)})
    return {int(r[0]): r[1] for r in result}


def _lock_freeable_cds(conn: Connection, old_sds: Sequence[int], table_sd_id: int | None) -> None:
    """Lock (FOR NO KEY UPDATE, in CD_ID order) the column descriptors of the partitions' old
    storage descriptors, except the table's own (which stays in use): alters of different
    partitions of one table run at once, and two of them leaving one shared descriptor would
    each still see the other's old descriptor and keep it, leaving it unused for good. Under
    the lock the later one's unused-check runs after the earlier committed. Inserts referencing
    the descriptor (its foreign key's KEY SHARE) do not wait for this lock."""
    if not old_sds:
        return
    sds, cds = schema.SDS.c, schema.CDS.c
    used = select(sds.CD_ID).where(sds.SD_ID.in_(old_sds))
    stmt = select(cds.CD_ID).where(cds.CD_ID.in_(used))
    if table_sd_id is not None:
        table_cd = select(sds.CD_ID).where(sds.SD_ID == table_sd_id, sds.CD_ID.is_not(None))
        stmt = stmt.where(cds.CD_ID.not_in(table_cd))
    conn.execute(stmt.order_by(cds.CD_ID).with_for_update(key_share=True)).all()


_REWRITE = (
    Prepared(
        "hms_rewrite_partitions",
        'UPDATE "PARTITIONS" AS p SET "SD_ID" = v.sd, "CREATE_TIME" = v.created, '
        '"LAST_ACCESS_TIME" = v.accessed, "WRITE_ID" = v.write_id '
        "FROM unnest(%(pid)s::bigint[], %(sd)s::bigint[], %(created)s::bigint[], "
        "%(accessed)s::bigint[], %(write_id)s::bigint[]) "
        "AS v(pid, sd, created, accessed, write_id) "
        'WHERE p."PART_ID" = v.pid',
        {
            "pid": "bigint[]",
            "sd": "bigint[]",
            "created": "bigint[]",
            "accessed": "bigint[]",
            "write_id": "bigint[]",
        },
        at_connect=True,
    ),
    Prepared(
        "hms_insert_partition_key_vals",
        'INSERT INTO "PARTITION_KEY_VALS" ("PART_ID", "PART_KEY_VAL", "INTEGER_IDX") '
        "SELECT * FROM unnest(%(kv_id)s::bigint[], %(kv_val)s::text[], %(kv_idx)s::bigint[])",
        {"kv_id": "bigint[]", "kv_val": "text[]", "kv_idx": "bigint[]"},
        at_connect=True,
    ),
    Prepared(
        "hms_insert_partition_params",
        'INSERT INTO "PARTITION_PARAMS" ("PART_ID", "PARAM_KEY", "PARAM_VALUE") '
        "SELECT * FROM unnest(%(p_id)s::bigint[], %(p_key)s::text[], %(p_value)s::text[])",
        {"p_id": "bigint[]", "p_key": "text[]", "p_value": "text[]"},
        at_connect=True,
    ),
)
"""The writes of ``_rewrite_partitions_pg``, prepared as ``_CLEAR``."""


def _rewrite_partitions_pg(
    conn: Connection,
    part_rows: Sequence[tuple[Any, ...]],
    kv_rows: Sequence[dict[str, Any]],
    params: Sequence[dict[str, Any]],
    old_sds: Sequence[int] = (),
) -> list[int]:
    """``_replace_partitions``' writes in one round trip: the PARTITIONS rows (PART_ID, SD_ID,
    CREATE_TIME, LAST_ACCESS_TIME, WRITE_ID), then their key values and parameters, as the
    general path's update and two inserts do, in that order; then the deletion of the old
    storage descriptors ``old_sds`` (``delete_storage_descriptors``' statement, which the
    rewrite has left unreferenced). Returns the column descriptors that deletion freed
    (``drop_freed_column_descriptors`` drops the unused ones)."""
    sds = sorted(set(old_sds))
    result = conn.exec_driver_sql(
        "; ".join(
            [s.text(conn) for s in _REWRITE] + ([PG_DELETE_SDS_DBAPI.text(conn)] if sds else [])
        ),
        {
            "sds_freed": sds,
            "pid": [r[0] for r in part_rows],
            "sd": [r[1] for r in part_rows],
            "created": [r[2] for r in part_rows],
            "accessed": [r[3] for r in part_rows],
            "write_id": [r[4] for r in part_rows],
            "kv_id": [r["PART_ID"] for r in kv_rows],
            "kv_val": [r["PART_KEY_VAL"] for r in kv_rows],
            "kv_idx": [r["INTEGER_IDX"] for r in kv_rows],
            "p_id": [r["PART_ID"] for r in params],
            "p_key": [r["PARAM_KEY"] for r in params],
            "p_value": [r["PARAM_VALUE"] for r in params],
        },
    )
    return [int(r[0]) for r in result] if sds else []
