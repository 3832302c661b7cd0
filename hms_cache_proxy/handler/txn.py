"""Transaction, write-id and lock calls (Hive's HMSHandler passes these to its TxnHandler).

The handler checks what the request must carry, normalises names the way Hive does (database
and table names of write-id allocation and locks are lower-cased) and calls the store's
transaction service (``store.txn``).

Replication: REPL LOAD names a replayed txn (``txn_type=REPL_CREATED`` with ``replPolicy``) by
its source txn id; open, allocate (``srcTxnToWriteIdList``), commit (``writeEventInfos``) and
abort go to the store's replayed-txn calls (``store/txn/repl.py``); ``replPolicy`` on a DEFAULT
txn is REPL LOAD's own statement txn, opened, committed and aborted with no txn events (Hive
writes none for it).

Hive 2.3 clients send an older layout of AddDynamicPartitions (no writeid, so every later field
id is one lower); decoded with the 4.0 layout it arrives without writeid and tablename, and is
refused with an explanation instead of writing wrong rows.
"""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.handler.base import HandlerBase, normalize
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.api import Transactions


def _replayed(repl_policy: str | None, txn_type: int | None) -> bool:
    """Whether the request names a replayed txn (by its source id)."""
    if txn_type == hms.TxnType.REPL_CREATED:
        if not repl_policy:
            raise hms.MetaException(message="a REPL_CREATED txn needs replPolicy")
        return True
    return False


def _load_txn(repl_policy: str | None, txn_type: int | None) -> bool:
    """Whether the request names REPL LOAD's (or DUMP's) own statement txn: ``replPolicy``
    with a DEFAULT txn, for which Hive writes no txn events."""
    return bool(repl_policy) and txn_type in (None, hms.TxnType.DEFAULT)


def _required(value: Any, what: str) -> Any:
    if value is None:
        raise hms.MetaException(message=f"{what} must be set")
    return value


class TxnHandlers(HandlerBase):
    @property
    def txn(self) -> Transactions:
        """The store's transaction service."""
        return self.store.txn

    # -- transactions ---------------------------------------------------------------------------

    def get_open_txns(self) -> hms.GetOpenTxnsResponse:
        return self.txn.get_open_txns()

    def get_open_txns_req(self, rqst: hms.GetOpenTxnsRequest | None) -> hms.GetOpenTxnsResponse:
        exclude = (rqst.excludeTxnTypes if rqst is not None else None) or []
        return self.txn.get_open_txns(exclude)

    def get_open_txns_info(self) -> hms.GetOpenTxnsInfoResponse:
        return self.txn.get_open_txns_info()

    def open_txns(self, rqst: hms.OpenTxnRequest) -> hms.OpenTxnsResponse:
        _required(rqst, "OpenTxnRequest")
        if _replayed(rqst.replPolicy, rqst.txn_type):
            src = list(_required(rqst.replSrcTxnIds, "replSrcTxnIds"))
            if len(src) != _required(rqst.num_txns, "num_txns"):
                raise hms.MetaException(
                    message=f"num_txns {rqst.num_txns} does not match the {len(src)} replSrcTxnIds"
                )
            ids = self.txn.repl_open_txns(
                rqst.replPolicy, src, rqst.user or "", rqst.hostname or "", rqst.agentInfo
            )
            return hms.OpenTxnsResponse(txn_ids=ids)
        if _load_txn(rqst.replPolicy, rqst.txn_type):
            if _required(rqst.num_txns, "num_txns") != 1:
                raise hms.MetaException(message="REPL LOAD opens its own txn one at a time")
            txn = self.txn.load_open_txn(rqst.user or "", rqst.hostname or "", rqst.agentInfo)
            return hms.OpenTxnsResponse(txn_ids=[txn])
        if rqst.replPolicy:
            raise hms.MetaException(
                message=f"replPolicy on a txn of type {rqst.txn_type} is not supported"
            )
        txn_type = hms.TxnType.DEFAULT if rqst.txn_type is None else rqst.txn_type
        ids = self.txn.open_txns(
            _required(rqst.num_txns, "num_txns"),
            rqst.user or "",
            rqst.hostname or "",
            rqst.agentInfo,
            txn_type,
        )
        return hms.OpenTxnsResponse(txn_ids=ids)

    def abort_txn(self, rqst: hms.AbortTxnRequest) -> None:
        _required(rqst, "AbortTxnRequest")
        if _replayed(rqst.replPolicy, rqst.txn_type):
            self.txn.repl_abort_txn(rqst.replPolicy, _required(rqst.txnid, "txnid"))
            return
        if _load_txn(rqst.replPolicy, rqst.txn_type):
            self.txn.load_abort_txn(_required(rqst.txnid, "txnid"))
            return
        self.txn.abort_txn(_required(rqst.txnid, "txnid"), rqst.errorCode)

    def abort_txns(self, rqst: hms.AbortTxnsRequest) -> None:
        _required(rqst, "AbortTxnsRequest")
        self.txn.abort_txns(rqst.txn_ids or [], rqst.errorCode)

    def commit_txn(self, rqst: hms.CommitTxnRequest) -> None:
        _required(rqst, "CommitTxnRequest")
        if _replayed(rqst.replPolicy, rqst.txn_type):
            if rqst.keyValue is not None or rqst.replLastIdInfo is not None:
                raise hms.MetaException(
                    message="keyValue and replLastIdInfo are not supported on a replayed commit"
                )
            self.store.repl_commit_txn(
                "hive",
                rqst.replPolicy,
                _required(rqst.txnid, "txnid"),
                list(rqst.writeEventInfos or []),
            )
            return
        if _load_txn(rqst.replPolicy, rqst.txn_type):
            self.txn.load_commit_txn(_required(rqst.txnid, "txnid"))
            return
        self.txn.commit_txn(
            _required(rqst.txnid, "txnid"),
            key_value=rqst.keyValue,
            excl_write_enabled=rqst.exclWriteEnabled is not False,
        )

    def heartbeat(self, ids: hms.HeartbeatRequest) -> None:
        if ids is None:
            return
        self.txn.heartbeat(ids.lockid, ids.txnid)

    def heartbeat_txn_range(self, txns: hms.HeartbeatTxnRangeRequest) -> Any:
        _required(txns, "HeartbeatTxnRangeRequest")
        aborted, nosuch = self.txn.heartbeat_txn_range(
            _required(txns.min, "min"), _required(txns.max, "max")
        )
        return hms.HeartbeatTxnRangeResponse(aborted=aborted, nosuch=nosuch)

    def get_latest_txnid_in_conflict(self, txnId: int) -> int:
        return self.txn.latest_txn_in_conflict(_required(txnId, "txnId"))

    def add_dynamic_partitions(self, rqst: hms.AddDynamicPartitions) -> None:
        _required(rqst, "AddDynamicPartitions")
        if rqst.writeid is None or rqst.tablename is None or rqst.partitionnames is None:
            raise hms.MetaException(
                message="AddDynamicPartitions needs txnid, writeid, dbname, tablename and "
                "partitionnames (Hive 4 layout); a request without writeid comes from a Hive 2 "
                "client, whose layout this server does not read"
            )
        self.txn.add_dynamic_partitions(
            _required(rqst.txnid, "txnid"),
            rqst.writeid,
            self.require_name(rqst.dbname, "database"),
            self.require_name(rqst.tablename),
            list(rqst.partitionnames),
            rqst.operationType,
        )

    # -- write ids ------------------------------------------------------------------------------

    def allocate_table_write_ids(
        self, rqst: hms.AllocateTableWriteIdsRequest
    ) -> hms.AllocateTableWriteIdsResponse:
        _required(rqst, "AllocateTableWriteIdsRequest")
        db = self.require_name(rqst.dbName, "database")
        table = self.require_name(rqst.tableName)
        if rqst.srcTxnToWriteIdList or rqst.replPolicy:
            if not rqst.replPolicy or not rqst.srcTxnToWriteIdList or rqst.txnIds:
                raise hms.MetaException(
                    message="a replayed allocation needs replPolicy and srcTxnToWriteIdList "
                    "(and no txnIds)"
                )
            src = [(p.txnId, p.writeId) for p in rqst.srcTxnToWriteIdList]
            if any(t is None or w is None or w <= 0 for t, w in src):
                raise hms.MetaException(message="srcTxnToWriteIdList needs txnId and writeId > 0")
            pairs = self.txn.repl_allocate_write_ids(db, table, rqst.replPolicy, src)
        else:
            pairs = self.txn.allocate_table_write_ids(db, table, rqst.txnIds or [])
        return hms.AllocateTableWriteIdsResponse(
            txnToWriteIds=[hms.TxnToWriteId(txnId=t, writeId=w) for t, w in pairs]
        )

    def get_valid_write_ids(self, rqst: hms.GetValidWriteIdsRequest) -> Any:
        _required(rqst, "GetValidWriteIdsRequest")
        tables = self.txn.get_valid_write_ids(
            _required(rqst.fullTableNames, "fullTableNames"), rqst.validTxnList, rqst.writeId
        )
        return hms.GetValidWriteIdsResponse(tblValidWriteIds=tables)

    def get_max_allocated_table_write_id(
        self, rqst: hms.MaxAllocatedTableWriteIdRequest
    ) -> hms.MaxAllocatedTableWriteIdResponse:
        _required(rqst, "MaxAllocatedTableWriteIdRequest")
        top = self.txn.max_allocated_write_id(normalize(rqst.dbName), normalize(rqst.tableName))
        return hms.MaxAllocatedTableWriteIdResponse(maxWriteId=top)

    def seed_write_id(self, rqst: hms.SeedTableWriteIdsRequest) -> None:
        _required(rqst, "SeedTableWriteIdsRequest")
        self.txn.seed_write_id(
            self.require_name(rqst.dbName, "database"),
            self.require_name(rqst.tableName),
            _required(rqst.seedWriteId, "seedWriteId"),
        )

    def repl_tbl_writeid_state(self, rqst: hms.ReplTblWriteIdStateRequest) -> None:
        _required(rqst, "ReplTblWriteIdStateRequest")
        text = _required(rqst.validWriteIdlist, "validWriteIdlist")
        try:
            self.txn.repl_table_write_id_state(
                text,
                self.require_name(rqst.dbName, "database"),
                self.require_name(rqst.tableName),
                list(rqst.partNames or []),
            )
        except ValueError as exc:
            raise hms.MetaException(message=f"invalid validWriteIdlist {text!r}: {exc}") from exc

    # -- locks ----------------------------------------------------------------------------------

    def lock(self, rqst: hms.LockRequest) -> hms.LockResponse:
        _required(rqst, "LockRequest")
        for component in rqst.component or []:
            if not component.dbname:
                raise hms.MetaException(message="LockComponent.dbname must be set")
            _required(component.type, "LockComponent.type")
        return self.txn.lock(rqst)

    def check_lock(self, rqst: hms.CheckLockRequest) -> hms.LockResponse:
        _required(rqst, "CheckLockRequest")
        return self.txn.check_lock(_required(rqst.lockid, "lockid"))

    def unlock(self, rqst: hms.UnlockRequest) -> None:
        _required(rqst, "UnlockRequest")
        self.txn.unlock(_required(rqst.lockid, "lockid"))

    def show_locks(self, rqst: hms.ShowLocksRequest | None) -> hms.ShowLocksResponse:
        rqst = rqst or hms.ShowLocksRequest()
        locks = self.txn.show_locks(rqst.dbname, rqst.tablename, rqst.partname, rqst.txnid)
        return hms.ShowLocksResponse(locks=locks)
