"""Materialized-view bookkeeping of Hive 4's TxnHandler: update_transaction_statistics (the
MV_TABLES_USED counters) and getMaterializationInvalidationInfo (whether a view's source tables
saw updates, deletes or compactions since the view's snapshot).

An answer of None is Hive's "cannot tell" (no source tables, Iceberg sources, a table missing
from the view's snapshot, a moved minimum open write id): Hive's server then sends no result.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import and_, false, or_, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn.txn_base import TxnPart, TxnShared
from hms_cache_proxy.store.txn.writeids import WriteIds, split_table_name
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidTxnWriteIdList

_MV = schema.MV_TABLES_USED
_CTC = schema.COMPLETED_TXN_COMPONENTS
_CC = schema.COMPLETED_COMPACTIONS
_CQ = schema.COMPACTION_QUEUE


def view_snapshot(text: str | None) -> tuple[str, bool]:
    """(validTxnList, has table snapshots) of a view's creation metadata: Hive 4's
    MaterializationSnapshot JSON, or (older views) the list itself."""
    if text:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return str(data.get("validTxnList") or ""), bool(data.get("tableSnapshots"))
    return text or "", False


def _changed_since(column: Any, seen: ValidReaderWriteIdList) -> Any:
    """Write ids the view's snapshot did not see: above its high watermark or invalid in it."""
    newer = column > seen.high_watermark
    return or_(newer, column.in_(seen.exceptions)) if seen.exceptions else newer


class Materializations(TxnPart):
    """MV_TABLES_USED counters and materialized-view invalidation."""

    def __init__(self, shared: TxnShared, write_ids: WriteIds) -> None:
        super().__init__(shared)
        self.write_ids = write_ids

    def update_transaction_statistics(
        self, table_id: int, inserted: int, updated: int, deleted: int
    ) -> None:
        """Adds a transaction's counts to every view using the table (no row: nothing)."""
        self.db.transaction(
            lambda conn: conn.execute(
                update(_MV)
                .where(_MV.c.TBL_ID == table_id)
                .values(
                    INSERTED_COUNT=_MV.c.INSERTED_COUNT + inserted,
                    UPDATED_COUNT=_MV.c.UPDATED_COUNT + updated,
                    DELETED_COUNT=_MV.c.DELETED_COUNT + deleted,
                )
            )
        )

    def materialization_invalidation_info(
        self, tables_used: list[str], view_txn_list: str | None, valid_txn_list: str | None
    ) -> hms.Materialization | None:
        if not tables_used:
            return None
        txn_list, has_table_snapshots = view_snapshot(view_txn_list)
        if has_table_snapshots:
            return None  # Iceberg sources: not incrementally rebuildable
        try:
            seen_by_view = ValidTxnWriteIdList.parse(txn_list)
        except ValueError as exc:
            raise hms.MetaException(message=f"Invalid validTxnList of the view: {exc}") from None
        current = {
            t.fullTableName: ValidReaderWriteIdList.from_table_valid_write_ids(t)
            for t in self.write_ids.get_valid_write_ids(tables_used, valid_txn_list or None)
        }
        updates, compacted, queued = [], [], []
        for name in tables_used:
            seen = seen_by_view.get(name)
            now = current.get(name)
            if seen is None or now is None or seen.min_open_write_id != now.min_open_write_id:
                return None
            db, table = split_table_name(name)
            updates.append(
                and_(
                    _CTC.c.CTC_DATABASE == db,
                    _CTC.c.CTC_TABLE == table,
                    _changed_since(_CTC.c.CTC_WRITEID, seen),
                )
            )
            compacted.append(
                and_(
                    _CC.c.CC_DATABASE == db,
                    _CC.c.CC_TABLE == table,
                    _changed_since(_CC.c.CC_HIGHEST_WRITE_ID, seen),
                )
            )
            queued.append(and_(_CQ.c.CQ_DATABASE == db, _CQ.c.CQ_TABLE == table))
        with self.db.read() as conn:

            def any_row(table: Any, *conditions: Any) -> bool:
                query = select(1).select_from(table).where(*conditions).limit(1)
                return conn.execute(query).first() is not None

            modified = any_row(_CTC, _CTC.c.CTC_UPDATE_DELETE == "Y", or_(false(), *updates))
            was_compacted = any_row(_CC, or_(false(), *compacted)) or any_row(
                _CQ, or_(false(), *queued)
            )
        return hms.Materialization(
            sourceTablesUpdateDeleteModified=modified, sourceTablesCompacted=was_compacted
        )
