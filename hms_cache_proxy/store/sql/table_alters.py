"""Table alters (alter_table, and alter_table_in inside a caller's transaction: rename,
relocation, column and statistics changes, the expected-parameter swap); tables.py keeps the
reads, create and drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    select,
    update,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.api import AlterTablePrepare
from hms_cache_proxy.store.colstats.accuracy import COLUMN_STATS_ACCURATE, stats_valid_for_query
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.constraints import follow_columns
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    TxnWrite,
    is_transactional,
    table_ref,
)
from hms_cache_proxy.store.sql.storage import (
    delete_storage_descriptors,
    drop_unused_column_descriptors,
    insert_column_descriptors,
    insert_rows,
    insert_storage_descriptors,
    param_rows,
    same_columns,
)
from hms_cache_proxy.store.sql.tables import Tables, copy_table, key_rows, tbl_values

_T = schema.TBLS


class TableAlters(SqlPart):
    """alter_table, and alter_table_in for a caller's own transaction (truncate_table); tables
    are read through ``tables``."""

    def __init__(self, shared: SqlShared, tables: Tables) -> None:
        super().__init__(shared)
        self.tables = tables

    @writes_events
    def alter_table(
        self,
        cat: str,
        db: str,
        name: str,
        new_table: hms.Table,
        *,
        cascade: bool = False,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        is_truncate: bool = False,
        prepare: AlterTablePrepare | None = None,
        relocate: Sequence[tuple[str, str]] = (),
        expected: tuple[str, str] | None = None,
    ) -> tuple[hms.Table, hms.Table]:
        """Replace a table's definition; returns (before, after), both as stored.

        ``prepare(before, new_table, exists)`` runs inside the transaction after the old table
        is read and locked, so the handler can apply Hive's alter rules (rename paths, checks)
        against the state that will actually change (``exists(db, name)``: whether that table
        exists, read in the same transaction). ``relocate`` holds the (old, new) table
        locations of a managed rename once ``prepare`` has decided one: partitions below the
        old location move with it.

        Write ids (Hive's ObjectStore.alterTable): only a transactional table takes one, from
        ``write_id`` (the request's) or else the new table's writeId (an echo of the stored one
        counts only while its txn is open, see ``_txn_write``); it must belong to an open txn
        and becomes TBLS.WRITE_ID, and COLUMN_STATS_ACCURATE goes when the stored statistics
        are not valid for the writer's snapshot. Turning a table transactional drops
        COLUMN_STATS_ACCURATE. Without a write id WRITE_ID stays as it was.

        ``expected`` (key, value): the alter happens only if the stored parameter ``key`` still
        has ``value`` (Iceberg's lock-free commit; see ``_check_expected``).
        """

        return self.db.transaction(
            lambda conn: self.alter_table_in(
                conn,
                cat,
                db,
                name,
                new_table,
                cascade=cascade,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
                is_truncate=is_truncate,
                prepare=prepare,
                relocate=relocate,
                expected=expected,
            )
        )

    @writes_events
    def alter_table_in(
        self,
        conn: Connection,
        cat: str,
        db: str,
        name: str,
        new_table: hms.Table,
        *,
        cascade: bool = False,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        is_truncate: bool = False,
        prepare: AlterTablePrepare | None = None,
        relocate: Sequence[tuple[str, str]] = (),
        expected: tuple[str, str] | None = None,
    ) -> tuple[hms.Table, hms.Table]:
        """``alter_table`` inside the caller's write transaction ``conn``."""
        row = self._table_row(conn, cat, db, name, lock=True)
        before = self.tables.load_table_by_id(conn, row.TBL_ID)
        if expected is not None:
            self._check_expected(conn, row.TBL_ID, before, new_table, *expected)
        after = new_table
        if prepare is not None:
            after = (
                prepare(before, new_table, partial(self.tables.table_exists, conn, cat))
                or new_table
            )
        new_cat = after.catName or cat
        if new_cat != cat:
            raise hms.InvalidOperationException(message="Cannot change the catalog of a table")
        new_db_id = row.DB_ID
        renamed = (after.dbName, after.tableName) != (db, name)
        if renamed:
            new_db_id = self._db_row(conn, cat, after.dbName).DB_ID
            if self.tables.table_exists(conn, cat, after.dbName, after.tableName):
                raise hms.InvalidOperationException(
                    message=f"new table {table_ref(cat, after.dbName, after.tableName)} "
                    "already exists"
                )
        after, tw = self._alter_txn_write(
            conn, db, name, before, after, write_id, valid_write_id_list
        )
        columns_changed = self._update_table(conn, row, new_db_id, before, after, cascade=cascade)
        moved = False
        for old_location, new_location in relocate:
            moved |= self._relocate_partitions(conn, row.TBL_ID, old_location, new_location)
        if renamed:
            self._rename_stats(conn, row.TBL_ID, cat, after.dbName, after.tableName)
        stored = self.tables.load_table_by_id(conn, row.TBL_ID)
        partitions_changed = bool(before.partitionKeys) and (
            renamed or moved or is_truncate or (cascade and columns_changed)
        )
        self._emit(
            conn,
            [
                NewEvent(
                    msg.ALTER_TABLE,
                    self.messages.alter_table(
                        before,
                        stored,
                        is_truncate=is_truncate,
                        write_id=tw.event_write_id,
                        valid_write_ids=tw.valid_write_ids,
                        partitions_changed=partitions_changed,
                    ),
                    cat,
                    stored.dbName,  # Hive's ALTER_TABLE event names the new table
                    stored.tableName,
                )
            ],
        )
        return before, stored

    def _check_expected(
        self,
        conn: Connection,
        tbl_id: int,
        before: hms.Table,
        new_table: hms.Table,
        key: str,
        value: str,
    ) -> None:
        """HiveAlterHandler's compare-and-set of one table parameter (HIVE-26882), which
        Iceberg's HiveCatalog relies on when it commits without a lock.

        ``before`` was read under the TBLS row lock (FOR UPDATE on PostgreSQL, the write lock
        of BEGIN IMMEDIATE on SQLite), so of two writers expecting the same value the second
        reads the first one's and is refused. The conditional UPDATE is Hive's own guard: it
        changes nothing and refuses when TABLE_PARAMS no longer holds ``value``, even if a
        writer that does not lock TBLS changed it.
        """
        new_value = (new_table.parameters or {}).get(key)
        if new_value is None:
            raise hms.MetaException(message=f"New value for expected key {key} is not set")
        current = (before.parameters or {}).get(key)
        if current != value:
            shown = "null" if current is None else current  # as Hive's Java prints it
            raise hms.MetaException(
                message=f"The table has been modified. The parameter value for key '{key}' is "
                f"'{shown}'. The expected was value was '{value}'"
            )
        p = schema.TABLE_PARAMS
        changed = conn.execute(
            update(p)
            .where(p.c.TBL_ID == tbl_id, p.c.PARAM_KEY == key, p.c.PARAM_VALUE == value)
            .values(PARAM_VALUE=new_value)
        ).rowcount
        if changed != 1:
            raise hms.MetaException(
                message=f"The table has been modified. The parameter value for key '{key}' is "
                "different"
            )

    def _alter_txn_write(
        self,
        conn: Connection,
        db: str,
        name: str,
        before: hms.Table,
        after: hms.Table,
        write_id: int | None,
        valid_write_id_list: str | None,
    ) -> tuple[hms.Table, TxnWrite]:
        """ObjectStore.alterTable's write-id and stats-state rules; returns the table to store
        (a copy, with writeId and parameters decided) and the write's TxnWrite."""
        params = dict(after.parameters or {})
        txn = is_transactional(params)
        tw = TxnWrite(valid_write_ids=valid_write_id_list)
        if txn and not is_transactional(before.parameters):
            params.pop(COLUMN_STATS_ACCURATE, None)  # turned transactional: not trusted
        elif txn:
            explicit = write_id is not None and write_id > 0
            tw = self._txn_write(
                conn,
                db,
                name,
                params,
                write_id if explicit else after.writeId,
                valid_write_id_list,
                stored_write_id=None if explicit else before.writeId,
            )
            if tw.write_id is not None and not stats_valid_for_query(
                before.parameters, before.writeId, tw.valid_write_ids, True
            ):
                params.pop(COLUMN_STATS_ACCURATE, None)  # a concurrent write's statistics
        stored_id = tw.row_write_id if tw.row_write_id is not None else before.writeId
        return copy_table(after, parameters=params, writeId=stored_id or 0), tw

    def _update_table(
        self,
        conn: Connection,
        row: Any,
        new_db_id: int,
        before: hms.Table,
        after: hms.Table,
        *,
        cascade: bool,
    ) -> bool:
        """Rewrite the table's rows; returns whether its columns changed."""
        tbl_id = row.TBL_ID
        values = tbl_values(after)
        values["CREATE_TIME"] = before.createTime
        conn.execute(
            update(_T)
            .where(_T.c.TBL_ID == tbl_id)
            .values(DB_ID=new_db_id, WRITE_ID=after.writeId or 0, **values)
        )
        conn.execute(delete(schema.TABLE_PARAMS).where(schema.TABLE_PARAMS.c.TBL_ID == tbl_id))
        insert_rows(conn, schema.TABLE_PARAMS, param_rows("TBL_ID", tbl_id, after.parameters))
        if not same_columns(before.partitionKeys, after.partitionKeys):
            conn.execute(
                delete(schema.PARTITION_KEYS).where(schema.PARTITION_KEYS.c.TBL_ID == tbl_id)
            )
            insert_rows(conn, schema.PARTITION_KEYS, key_rows(tbl_id, after.partitionKeys))
        if after.sd is None:
            return False
        old_sd_id = row.SD_ID
        old_cd = before.sd.cols if before.sd is not None else None
        cd_row = (
            conn.execute(select(schema.SDS.c.CD_ID).where(schema.SDS.c.SD_ID == old_sd_id)).first()
            if old_sd_id is not None
            else None
        )
        old_cd_id = cd_row[0] if cd_row is not None else None
        if old_cd_id is not None and same_columns(old_cd, after.sd.cols):
            cd_id = old_cd_id
        else:
            (cd_id,) = insert_column_descriptors(conn, self.ids, [after.sd.cols or []])
        # The descriptor is replaced whole: simpler than diffing six child tables, and the
        # statement count stays the same. The new one goes in first, so a column descriptor
        # the old and new share is still referenced when the old one is deleted.
        (sd_id,) = insert_storage_descriptors(conn, self.ids, [after.sd], [cd_id])
        conn.execute(update(_T).where(_T.c.TBL_ID == tbl_id).values(SD_ID=sd_id))
        replaced = [] if old_cd_id is None or cd_id == old_cd_id else [old_cd_id]
        if replaced and cascade:
            # ALTER ... CASCADE: every partition takes the new columns too.
            replaced += self._partition_column_descriptors(conn, tbl_id, {cd_id, *replaced})
        for old in replaced:  # while the old descriptor's columns are there (Hive's copyMSD)
            follow_columns(conn, old, cd_id, after.sd.cols or [])
        if old_sd_id is not None:
            delete_storage_descriptors(conn, [old_sd_id])
        if replaced and cascade:
            sub = select(schema.PARTITIONS.c.SD_ID).where(schema.PARTITIONS.c.TBL_ID == tbl_id)
            conn.execute(
                update(schema.SDS)
                .where(schema.SDS.c.SD_ID.in_(sub.scalar_subquery()))
                .values(CD_ID=cd_id)
            )
        drop_unused_column_descriptors(conn, replaced)
        return cd_id != old_cd_id

    def _partition_column_descriptors(
        self, conn: Connection, tbl_id: int, but: set[int]
    ) -> list[int]:
        """The column descriptors the table's partitions use, but those in ``but``."""
        p, sds = schema.PARTITIONS.c, schema.SDS.c
        partition_sds = select(p.SD_ID).where(p.TBL_ID == tbl_id).scalar_subquery()
        used = conn.execute(
            select(sds.CD_ID)
            .where(sds.SD_ID.in_(partition_sds), sds.CD_ID.is_not(None), sds.CD_ID.not_in(but))
            .distinct()
        )
        return sorted(r[0] for r in used)

    def _relocate_partitions(
        self, conn: Connection, tbl_id: int, old_location: str, new_location: str
    ) -> bool:
        """Move partition locations below ``old_location``; returns whether any moved."""
        old_prefix = old_location.rstrip("/")
        rows = conn.execute(
            select(schema.SDS.c.SD_ID, schema.SDS.c.LOCATION)
            .select_from(
                schema.PARTITIONS.join(schema.SDS, schema.SDS.c.SD_ID == schema.PARTITIONS.c.SD_ID)
            )
            .where(schema.PARTITIONS.c.TBL_ID == tbl_id)
        ).all()
        moved = [
            {"sd": r.SD_ID, "loc": new_location.rstrip("/") + r.LOCATION[len(old_prefix) :]}
            for r in rows
            if r.LOCATION and (r.LOCATION == old_prefix or r.LOCATION.startswith(old_prefix + "/"))
        ]
        if moved:
            conn.execute(
                update(schema.SDS)
                .where(schema.SDS.c.SD_ID == bindparam("sd"))
                .values(LOCATION=bindparam("loc")),
                moved,
            )
        return bool(moved)

    def _rename_stats(self, conn: Connection, tbl_id: int, cat: str, db: str, name: str) -> None:
        """Column statistics rows repeat the table's names; keep them in step with a rename."""
        conn.execute(
            update(schema.TAB_COL_STATS)
            .where(schema.TAB_COL_STATS.c.TBL_ID == tbl_id)
            .values(CAT_NAME=cat, DB_NAME=db, TABLE_NAME=name)
        )
        parts = select(schema.PARTITIONS.c.PART_ID).where(schema.PARTITIONS.c.TBL_ID == tbl_id)
        conn.execute(
            update(schema.PART_COL_STATS)
            .where(schema.PART_COL_STATS.c.PART_ID.in_(parts.scalar_subquery()))
            .values(CAT_NAME=cat, DB_NAME=db, TABLE_NAME=name)
        )
