"""Compaction calls: the queue a Hive Initiator, HiveServer2 (``ALTER TABLE ... COMPACT``,
``SHOW COMPACTIONS``) and Hive's Worker and Cleaner use. The store's transaction service keeps
the queue (store/txn/compaction.py); this service runs no compactor itself.

Database and table names are lower-cased (Hive's DDL does it before calling); the worker-side
calls name a request by the id the queue gave it.
"""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.handler.base import HandlerBase, normalize
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.rules import COMPACTION_REFUSED


def _required(value: Any, what: str) -> Any:
    if value is None:
        raise hms.MetaException(message=f"{what} must be set")
    return value


class CompactionHandlers(HandlerBase):
    def _compaction_request(self, rqst: hms.CompactionRequest) -> hms.CompactionRequest:
        _required(rqst, "CompactionRequest")
        _required(rqst.type, "CompactionRequest.type")
        rqst.dbname = self.require_name(rqst.dbname, "database")
        rqst.tablename = self.require_name(rqst.tablename)
        rqst.partitionname = rqst.partitionname or None
        return rqst

    def compact(self, rqst: hms.CompactionRequest) -> None:
        self.store.txn.compact(self._compaction_request(rqst))

    def compact2(self, rqst: hms.CompactionRequest) -> hms.CompactionResponse:
        return self.store.txn.compact(self._compaction_request(rqst))

    def show_compact(self, rqst: hms.ShowCompactRequest | None) -> hms.ShowCompactResponse:
        rqst = rqst or hms.ShowCompactRequest()
        rqst.dbName = normalize(rqst.dbName) or None
        rqst.tbName = normalize(rqst.tbName) or None
        return self.store.txn.show_compact(rqst)

    def abort_Compactions(self, rqst: hms.AbortCompactionRequest) -> hms.AbortCompactResponse:  # noqa: N802
        _required(rqst, "AbortCompactionRequest")
        ids = _required(rqst.compactionIds, "compactionIds")
        return self.store.txn.abort_compactions(list(dict.fromkeys(ids)))

    def get_latest_committed_compaction_info(
        self, rqst: hms.GetLatestCommittedCompactionInfoRequest
    ) -> hms.GetLatestCommittedCompactionInfoResponse:
        _required(rqst, "GetLatestCommittedCompactionInfoRequest")
        found = self.store.txn.latest_committed_compactions(
            self.require_name(rqst.dbname, "database"),
            self.require_name(rqst.tablename),
            rqst.partitionnames,
            rqst.lastCompactionId,
        )
        return hms.GetLatestCommittedCompactionInfoResponse(compactions=found)

    # -- the worker side ------------------------------------------------------------------------

    def find_next_compact(self, workerId: str | None) -> hms.OptionalCompactionInfoStruct:  # noqa: N803
        return hms.OptionalCompactionInfoStruct(
            ci=self.store.txn.find_next_compact(workerId, None, None)
        )

    def find_next_compact2(
        self, rqst: hms.FindNextCompactRequest | None
    ) -> hms.OptionalCompactionInfoStruct:
        rqst = rqst or hms.FindNextCompactRequest()
        found = self.store.txn.find_next_compact(rqst.workerId, rqst.workerVersion, rqst.poolName)
        return hms.OptionalCompactionInfoStruct(ci=found)

    def update_compactor_state(self, cr: hms.CompactionInfoStruct, txn_id: int) -> None:
        self.store.txn.update_compactor_state(self._known(cr), _required(txn_id, "txn_id"))

    def set_hadoop_jobid(self, jobId: str | None, cq_id: int) -> None:  # noqa: N803
        self.store.txn.set_hadoop_jobid(jobId, _required(cq_id, "cq_id"))

    def mark_compacted(self, cr: hms.CompactionInfoStruct) -> None:
        self.store.txn.mark_compacted(self._known(cr))

    def mark_cleaned(self, cr: hms.CompactionInfoStruct) -> None:
        self.store.txn.mark_cleaned(self._known(cr))

    def mark_failed(self, cr: hms.CompactionInfoStruct) -> None:
        self.store.txn.mark_failed(_required(cr, "CompactionInfoStruct"))

    def mark_refused(self, cr: hms.CompactionInfoStruct) -> None:
        self.store.txn.mark_failed(_required(cr, "CompactionInfoStruct"), COMPACTION_REFUSED)

    def find_columns_with_stats(self, cr: hms.CompactionInfoStruct) -> list[str]:
        _required(cr, "CompactionInfoStruct")
        cr.dbname = self.require_name(cr.dbname, "database")
        cr.tablename = self.require_name(cr.tablename)
        return self.store.txn.find_columns_with_stats(cr)

    @staticmethod
    def _known(cr: hms.CompactionInfoStruct | None) -> hms.CompactionInfoStruct:
        known = _required(cr, "CompactionInfoStruct")
        _required(known.id, "CompactionInfoStruct.id")
        return known
