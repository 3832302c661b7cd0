"""Materialized-view calls HiveServer2 makes around transactions: update_transaction_statistics
and get_materialization_invalidation_info (store/txn/materializations.py keeps Hive's rules)."""

from __future__ import annotations

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms


class MaterializationHandlers(HandlerBase):
    def update_transaction_statistics(self, req: hms.UpdateTransactionalStatsRequest) -> None:
        counts = (req.tableId, req.insertCount, req.updatedCount, req.deletedCount)
        if any(c is None for c in counts):
            raise hms.MetaException(
                message="tableId, insertCount, updatedCount and deletedCount are required"
            )
        self.store.txn.update_transaction_statistics(*(int(c) for c in counts))

    def get_materialization_invalidation_info(
        self, creation_metadata: hms.CreationMetadata, validTxnList: str | None
    ) -> hms.Materialization | None:
        """None where Hive answers null: the client then sees no result (MISSING_RESULT)."""
        cm = creation_metadata
        if cm is None:
            raise hms.MetaException(message="creation_metadata is required")
        return self.store.txn.materialization_invalidation_info(
            sorted(cm.tablesUsed or ()), cm.validTxnList, validTxnList
        )
