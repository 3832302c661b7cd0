"""ACID write notifications (TXN_WRITE_NOTIFICATION_LOG): which files a transaction's write
added to a table or partition, as Hive's DbNotificationListener records them for replication.

A write is one row per (txn, database, table, partition): a second notice of the same write
appends its files to the row, as Hive does. Each notice also writes an ACID_WRITE_EVENT in
the same transaction. The write id must be the one allocated to that transaction on that
table, and the transaction still open (Hive does not check; a notice for another write would
tell replication the wrong files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events import tjson
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.partition_reads import PartitionReads
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared, java_list, now, table_ref
from hms_cache_proxy.store.sql.tables import Tables

_W = schema.TXN_WRITE_NOTIFICATION_LOG


def encoded_files(info: hms.InsertEventRequestData) -> list[str]:
    """ReplChangeManager.encodeFileUri for each file: ``file#checksum#cmroot#subdir``, which
    REPL DUMP/LOAD decode by position (the fourth part is the delta directory the target
    rebuilds the path with). This service keeps no change-management root, and Hive without
    one writes no checksum either (a checksum without a root would send the load to a CM path
    it cannot build): ``file###subdir``."""
    files = list(info.filesAdded or [])
    subdirs = list(info.subDirectoryList or [])
    out = []
    for i, f in enumerate(files):
        subdir = subdirs[i] if i < len(subdirs) and subdirs[i] else ""
        out.append(f"{f}###{subdir}")
    return out


class WriteNotes(SqlPart):
    """Write notifications of transactions (TXN_WRITE_NOTIFICATION_LOG and ACID_WRITE_EVENT)."""

    def __init__(self, shared: SqlShared, partitions: PartitionReads, tables: Tables) -> None:
        super().__init__(shared)
        self.partitions = partitions
        self.tables = tables

    @writes_events
    def add_write_notifications(
        self, cat: str, db: str, tbl: str, requests: Sequence[hms.WriteNotificationLogRequest]
    ) -> None:
        """Record each write's files and write its ACID_WRITE_EVENT, all in one transaction."""

        def run(conn: Connection) -> None:
            row = self._table_row(conn, cat, db, tbl)
            table = self.tables.load_table_by_id(conn, row.TBL_ID)
            events = [self._note_write(conn, cat, table, r) for r in requests]
            self._emit(conn, events)

        self.db.transaction(run)

    def _note_write(
        self, conn: Connection, cat: str, table: hms.Table, req: hms.WriteNotificationLogRequest
    ) -> NewEvent:
        db, tbl = table.dbName, table.tableName
        if req.fileInfo is None:
            raise hms.MetaException(message="WriteNotificationLogRequest.fileInfo must be set")
        owner = self.txn.require_open_write_id(conn, db, tbl, req.writeId)
        if owner != req.txnId:
            raise hms.MetaException(
                message=f"write id {req.writeId} of {table_ref(cat, db, tbl)} belongs to "
                f"txnid:{owner}, not txnid:{req.txnId}"
            )
        part_name, partition = "", None
        if req.partitionVals:
            tk = self.partitions.resolve_table(conn, cat, db, tbl)
            part_name = self.partitions.name_for(tk, req.partitionVals)
            found = self.partitions.load_by_names(conn, tk, [part_name])
            if not found:
                raise hms.MetaException(
                    message=f"partition values={java_list(req.partitionVals)} of "
                    f"{table_ref(cat, db, tbl)} not found"
                )
            partition = found[0]
        files = encoded_files(req.fileInfo)
        body = self.messages.acid_write(req.txnId, req.writeId, table, part_name, partition, files)
        self.record_write(conn, req, table, part_name, partition, files)
        return NewEvent(msg.ACID_WRITE_EVENT, body, cat, db, tbl)

    def record_write(
        self,
        conn: Connection,
        req: hms.WriteNotificationLogRequest,
        table: hms.Table,
        part_name: str,
        partition: hms.Partition | None,
        files: list[str],
    ) -> None:
        key = (
            _W.c.WNL_TXNID == req.txnId,
            _W.c.WNL_DATABASE == table.dbName,
            _W.c.WNL_TABLE == table.tableName,
            _W.c.WNL_PARTITION == part_name,
        )
        existing = conn.execute(select(_W.c.WNL_FILES).where(*key).with_for_update()).first()
        if existing is not None:
            merged = ",".join(f for f in (existing[0], ",".join(files)) if f)
            conn.execute(update(_W).where(*key).values(WNL_FILES=merged))
            return
        conn.execute(
            insert(_W).values(
                WNL_ID=self.ids.allocate(conn, idseq.TXN_WRITE_NOTIFICATION_LOG)[0],
                WNL_TXNID=req.txnId,
                WNL_WRITEID=req.writeId,
                WNL_DATABASE=table.dbName,
                WNL_TABLE=table.tableName,
                WNL_PARTITION=part_name,
                WNL_TABLE_OBJ=tjson.dumps(table),
                WNL_PARTITION_OBJ=tjson.dumps(partition) if partition is not None else None,
                WNL_FILES=",".join(files),
                WNL_EVENT_TIME=now(),
            )
        )

    def write_event_info(
        self, txn_id: int, db: str | None, tbl: str | None
    ) -> list[hms.WriteEventInfo]:
        """The writes of a transaction (TxnHandler.getAllWriteEventInfo), optionally of one
        database or table."""
        stmt = select(_W).where(_W.c.WNL_TXNID == txn_id).order_by(_W.c.WNL_ID)
        if db:
            stmt = stmt.where(_W.c.WNL_DATABASE == db)
        if tbl:
            stmt = stmt.where(_W.c.WNL_TABLE == tbl)
        with self.db.read() as conn:
            rows = conn.execute(stmt).all()
        return [_info(r) for r in rows]


def _info(r: Any) -> hms.WriteEventInfo:
    return hms.WriteEventInfo(
        writeId=r.WNL_WRITEID,
        database=r.WNL_DATABASE,
        table=r.WNL_TABLE,
        files=r.WNL_FILES or "",
        partition=r.WNL_PARTITION,
        tableObj=r.WNL_TABLE_OBJ,
        partitionObj=r.WNL_PARTITION_OBJ,
    )
