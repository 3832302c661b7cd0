"""Message bodies of the transaction events: OPEN_TXN, COMMIT_TXN, ABORT_TXN,
ALLOC_WRITE_ID_EVENT and ACID_WRITE_EVENT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hms_cache_proxy.store.events.message_base import (
    TABLES_ALTERED,
    TXN_WRITES,
    MessageBuilderBase,
)


class TxnMessages(MessageBuilderBase):
    """The bodies of the events transactions write."""

    # -- JSONAcidWriteMessage

    def acid_write(
        self,
        txn_id: int,
        write_id: int,
        table: Any,
        partition_name: str,
        partition: Any | None,
        files: Sequence[str],
    ) -> dict[str, Any]:
        """``partition`` is the partition's name ("" for the table); ``files`` are encoded
        as ReplChangeManager encodes them."""
        return self._finish(
            {
                "txnid": txn_id,
                "writeId": write_id,
                "timestamp": self.now(),
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "database": table.dbName,
                "table": table.tableName,
                "partition": partition_name,
                "tableObjJson": self.table_json(table),
                "partitionObjJson": (
                    self.partition_json(partition) if partition is not None else None
                ),
                "files": list(files),
            }
        )

    # -- transactions: JSONOpenTxnMessage, JSONCommitTxnMessage, JSONAbortTxnMessage,
    #    JSONAllocWriteIdMessage

    def open_txn(self, from_txn_id: int, to_txn_id: int) -> dict[str, Any]:
        """Hive 4 writes the range; ``txnIds`` stays null (readers expand from..to)."""
        return self._finish(
            {
                "txnIds": None,
                "timestamp": self.now(),
                "fromTxnId": from_txn_id,
                "toTxnId": to_txn_id,
                "server": self.server,
                "servicePrincipal": self.service_principal,
            }
        )

    def commit_txn(
        self,
        txn_id: int,
        write_events: Sequence[Any] | None = None,
        tables_altered: Sequence[tuple[str, str, str]] = (),
    ) -> dict[str, Any]:
        """``write_events``: WriteEventInfo objects (database, table, writeId), written under
        our :data:`TXN_WRITES`; Hive's seven lists stay null for REPL DUMP to fill.
        ``tables_altered``: (cat, db, table) whose parameters the commit set (keyValue)."""
        body: dict[str, Any] = {
            "txnid": txn_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "writeIds": None,
            "databases": None,
            "tables": None,
            "partitions": None,
            "tableObjs": None,
            "partitionObjs": None,
            "files": None,
        }
        if write_events:
            body[TXN_WRITES] = [[w.database, w.table, w.writeId] for w in write_events]
        if tables_altered:
            body[TABLES_ALTERED] = [list(t) for t in tables_altered]
        return self._finish(body)

    def abort_txn(self, txn_id: int, dbs_updated: Sequence[str] | None = None) -> dict[str, Any]:
        return self._finish(
            {
                "txnid": txn_id,
                "timestamp": self.now(),
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "dbsUpdated": None if dbs_updated is None else list(dbs_updated),
            }
        )

    def alloc_write_id(
        self,
        txn_to_write_ids: Sequence[Any],
        db_name: str,
        table_name: str,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        """``txn_to_write_ids``: TxnToWriteId objects (or (txnId, writeId) pairs)."""
        pairs = [
            (p.txnId, p.writeId) if hasattr(p, "txnId") else tuple(p) for p in txn_to_write_ids
        ]
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "dbName": db_name,
            "tableName": table_name,
            "txnIdList": [t for t, _ in pairs],
            "writeIdList": [w for _, w in pairs],
            "timestamp": self.now(),
        }
        return self._extra(body, valid_write_ids)
