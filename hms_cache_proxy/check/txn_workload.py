"""The transactional part of a checker client's work: multi-statement transactions on the
shared tables x0-x3 (lock, allocate, alter, statistics, add and alter partitions, commit with
or without keyValue, or abort) and snapshot reads of them (see .workload)."""

from __future__ import annotations

import random
import time
from typing import Any

from hms_cache_proxy.check.history import Op
from hms_cache_proxy.check.workload_objects import (
    DB,
    KV_KEY,
    LOCK_WAIT_SECONDS,
    SLOTS,
    TXN_TABLES,
    declared,
    new_partition,
    txn_list,
)
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList


class TxnSteps:
    """Mixin of Client (which provides rng, index, call, _conn and close)."""

    rng: random.Random
    index: int
    call: Any
    _conn: Any
    close: Any

    def txn_write(self) -> None:
        tbl = self.rng.choice(TXN_TABLES)
        _, opened = self.call(
            "open_txns",
            lambda c, op: c.open_txns(
                hms.OpenTxnRequest(num_txns=1, user="checker", hostname=f"client{self.index}")
            ),
        )
        txn = opened.txn_ids[0]
        try:
            self._txn_body(tbl, txn)
        except Exception:
            self._abort_quietly(txn)
            raise

    def _txn_body(self, tbl: str, txn: int) -> None:
        self._lock(tbl, txn)
        _, alloc = self.call(
            "allocate_table_write_ids",
            lambda c, op: c.allocate_table_write_ids(
                hms.AllocateTableWriteIdsRequest(dbName=DB, tableName=tbl, txnIds=[txn])
            ),
            table=tbl,
            txn=txn,
        )
        wid = alloc.txnToWriteIds[0].writeId
        _, current = self.call("get_table", lambda c, op: c.get_table(DB, tbl), table=tbl)
        current.parameters["wmax"] = str(wid)
        self.call(
            "alter_table_req",
            lambda c, op: c.alter_table_req(
                hms.AlterTableRequest(dbName=DB, tableName=tbl, table=current, writeId=wid)
            ),
            table=tbl,
            write_id=wid,
        )
        stats = self.rng.random() < 0.3
        if stats:
            self._write_stats(tbl, txn, wid)
        slots = sorted(self.rng.sample(SLOTS, self.rng.randint(1, 3)))
        adds = [new_partition(tbl, s, {"w": str(wid)}, wid) for s in slots]
        self.call(
            "add_partitions_req",
            lambda c, op: c.add_partitions_req(
                hms.AddPartitionsRequest(
                    dbName=DB, tblName=tbl, parts=adds, ifNotExists=True, needResult=False
                )
            ),
            table=tbl,
            write_id=wid,
            partitions=slots,
        )
        names = [f"p={s}" for s in slots]
        _, parts = self.call(
            "get_partitions_by_names",
            lambda c, op: c.get_partitions_by_names(DB, tbl, names),
            table=tbl,
        )
        for p in parts:
            p.parameters["w"] = str(wid)
        self.call(
            "alter_partitions_req",
            lambda c, op: c.alter_partitions_req(
                hms.AlterPartitionsRequest(dbName=DB, tableName=tbl, partitions=parts, writeId=wid)
            ),
            table=tbl,
            write_id=wid,
            partitions=slots,
        )
        commit = self.rng.random() >= 0.1
        key_value = self.rng.random() < 0.3
        intent = {
            "table": tbl,
            "txn": txn,
            "write_id": wid,
            "partitions": slots,
            "kv": key_value,
            "stats": stats,
        }
        if commit:
            kv = None
            if key_value:
                kv = hms.CommitTxnKeyValue(tableId=current.id, key=KV_KEY, value=str(wid))

            def send(c: Any, op: Op) -> Any:
                op.txn = intent
                return c.commit_txn(hms.CommitTxnRequest(txnid=txn, keyValue=kv))

            self.call("commit_txn", send, txn=txn)
        else:
            self.call(
                "abort_txn", lambda c, op: c.abort_txn(hms.AbortTxnRequest(txnid=txn)), txn=txn
            )

    def _write_stats(self, tbl: str, txn: int, wid: int) -> None:
        """Column statistics of ``a`` with ``highValue=wid``, written under the write id."""

        def snap(c: Any, op: Op) -> str:
            req = hms.GetValidWriteIdsRequest(
                fullTableNames=[f"{DB}.{tbl}"], validTxnList=txn_list(c, txn)
            )
            tvwi = c.get_valid_write_ids(req).tblValidWriteIds[0]
            return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()

        _, writer_snapshot = self.call("get_valid_write_ids", snap, txn=txn)
        desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName=tbl)
        data = hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=0, highValue=wid, numNulls=0, numDVs=1)
        )
        stats = hms.ColumnStatistics(
            statsDesc=desc,
            statsObj=[hms.ColumnStatisticsObj(colName="a", colType="int", statsData=data)],
            engine="hive",
        )
        request = hms.SetPartitionsStatsRequest(
            colStats=[stats], writeId=wid, validWriteIdList=writer_snapshot, engine="hive"
        )
        self.call(
            "update_table_column_statistics_req",
            lambda c, op: c.update_table_column_statistics_req(request),
            table=tbl,
            write_id=wid,
        )

    def _lock(self, tbl: str, txn: int) -> None:
        component = hms.LockComponent(
            type=hms.LockType.EXCLUSIVE,
            level=hms.LockLevel.TABLE,
            dbname=DB,
            tablename=tbl,
            isTransactional=True,
            operationType=hms.DataOperationType.UPDATE,
        )
        request = hms.LockRequest(
            component=[component], txnid=txn, user="checker", hostname=f"client{self.index}"
        )
        _, resp = self.call("lock", lambda c, op: c.lock(request), table=tbl, txn=txn)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        pause = 0.02
        while resp.state == hms.LockState.WAITING:
            if time.monotonic() > deadline:
                raise TimeoutError(f"lock on {tbl} not granted in {LOCK_WAIT_SECONDS:g}s")
            time.sleep(pause)
            pause = min(0.5, pause * 1.5)
            request_check = hms.CheckLockRequest(lockid=resp.lockid, txnid=txn)
            _, resp = self.call(
                "check_lock", lambda c, op, r=request_check: c.check_lock(r), txn=txn
            )
        if resp.state != hms.LockState.ACQUIRED:
            raise RuntimeError(f"lock on {tbl}: {resp.state}")

    def _abort_quietly(self, txn: int) -> None:
        """Abort a transaction a failure interrupted (a few tries: the instance may be down)."""
        for _ in range(3):
            try:
                self._conn()
                self.call(
                    "abort_txn",
                    lambda c, op: c.abort_txn(hms.AbortTxnRequest(txnid=txn)),
                    txn=txn,
                )
                return
            except Exception as exc:  # noqa: BLE001
                self.close()
                if declared(exc):  # already aborted (timed out) or unknown: nothing to do
                    return
                time.sleep(0.3)

    def txn_read(self, tbl: str) -> None:
        def snap(c: Any, op: Op) -> str:
            req = hms.GetValidWriteIdsRequest(fullTableNames=[f"{DB}.{tbl}"])
            tvwi = c.get_valid_write_ids(req).tblValidWriteIds[0]
            op.snapshot = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()
            return op.snapshot

        _, s = self.call("get_valid_write_ids", snap, table=tbl)

        def read_table(c: Any, op: Op) -> None:
            op.snapshot = s
            t = c.get_table_req(
                hms.GetTableRequest(dbName=DB, tblName=tbl, validWriteIdList=s)
            ).table
            op.result = {
                "wmax": int(t.parameters.get("wmax", "0")),
                "kv": int(t.parameters.get(KV_KEY, "0")),
            }

        self.call("get_table_req", read_table, table=tbl)

        def read_parts(c: Any, op: Op) -> None:
            op.snapshot = s
            parts = c.get_partitions_req(
                hms.PartitionsRequest(dbName=DB, tblName=tbl, maxParts=-1, validWriteIdList=s)
            ).partitions
            op.result = {"parts": {p.values[0]: int(p.parameters.get("w", "0")) for p in parts}}

        self.call("get_partitions_req", read_parts, table=tbl)

        def read_stats(c: Any, op: Op) -> None:
            op.snapshot = s
            found = c.get_table_statistics_req(
                hms.TableStatsRequest(
                    dbName=DB, tblName=tbl, colNames=["a"], engine="hive", validWriteIdList=s
                )
            ).tableStats
            high = found[0].statsData.longStats.highValue if found else 0
            op.result = {"stats": int(high or 0)}

        self.call("get_table_statistics_req", read_stats, table=tbl)
