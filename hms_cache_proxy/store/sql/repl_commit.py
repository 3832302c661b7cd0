"""A replayed commit (REPL LOAD's commit_txn with ``writeEventInfos``): the target's write
notifications and the commit in one database transaction.

Hive does the notifications (HMSHandler) and the commit (TxnHandler) in two transactions, so a
load stopped between them appends the same files again on replay; here a replay finds the txn
no longer mapped and changes nothing. Each file is re-rooted at the target table's (or
partition's) location under its delta directory, as Hive's FileUtils.getTransformedPath does;
no checksum is recorded (Hive records the target filesystem's, none on local or object
stores, and this service reads no files).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.partition_reads import PartitionReads
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared, table_ref
from hms_cache_proxy.store.sql.tables import Tables
from hms_cache_proxy.store.sql.write_notes import WriteNotes
from hms_cache_proxy.store.txn.repl import repl_writes


def replayed_files(files: str | None, location: str) -> list[str]:
    """The source's encoded files (``file#checksum#cmroot#subdir``, comma-separated) as the
    target's: ``<location>/<subdir>/<name>###<subdir>``."""
    out = []
    for encoded in (files or "").split(","):
        if not encoded:
            continue
        parts = encoded.split("#")
        name = parts[0].rstrip("/").rsplit("/", 1)[-1]
        subdir = parts[3] if len(parts) > 3 else ""
        where = f"{location.rstrip('/')}/{subdir}" if subdir else location.rstrip("/")
        out.append(f"{where}/{name}###{subdir}")
    return out


class ReplCommits(SqlPart):
    """commit_txn of a REPL_CREATED txn."""

    def __init__(
        self, shared: SqlShared, notes: WriteNotes, tables: Tables, partitions: PartitionReads
    ) -> None:
        super().__init__(shared)
        self.notes = notes
        self.tables = tables
        self.partitions = partitions

    @writes_events
    def repl_commit_txn(
        self, cat: str, policy: str, src_txn: int, infos: Sequence[hms.WriteEventInfo]
    ) -> None:
        """Commit the target txn of ``src_txn``; nothing when it is no longer mapped."""

        def run(conn: Connection) -> None:
            target = self.txn.target_txns(conn, policy, [src_txn]).get(src_txn)
            if target is None:
                return
            events = [self._note(conn, cat, target, info) for info in infos]
            events += self.txn.repl_commit_in(conn, target, repl_writes(infos))
            self._emit(conn, events)

        self.db.transaction(run)

    def _note(self, conn: Connection, cat: str, target: int, info: hms.WriteEventInfo) -> NewEvent:
        db, tbl = (info.database or "").strip().lower(), (info.table or "").strip().lower()
        row = self._table_row(conn, cat, db, tbl)
        table = self.tables.load_table_by_id(conn, row.TBL_ID)
        part_name, partition = info.partition or "", None
        location = table.sd.location if table.sd is not None else ""
        if part_name:
            tk = self.partitions.resolve_table(conn, cat, db, tbl)
            found = self.partitions.load_by_names(conn, tk, [part_name])
            if not found:
                raise hms.MetaException(
                    message=f"partition {part_name} of {table_ref(cat, db, tbl)} not found: "
                    "a replayed commit's partitions are added before its commit"
                )
            partition = found[0]
            location = partition.sd.location if partition.sd is not None else location
        files = replayed_files(info.files, location or "")
        req = hms.WriteNotificationLogRequest(txnId=target, writeId=info.writeId, db=db, table=tbl)
        self.notes.record_write(conn, req, table, part_name, partition, files)
        body = self.messages.acid_write(target, info.writeId, table, part_name, partition, files)
        return NewEvent(msg.ACID_WRITE_EVENT, body, cat, db, tbl)
