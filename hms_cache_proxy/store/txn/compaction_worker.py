"""The worker side of the compaction queue: the calls Hive's Worker and Cleaner make to take
a request, record their progress and end it (Hive 4's CompactionTxnHandler). The queue itself
and its states: compaction.py.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn.compaction import (
    DID_NOT_INITIATE,
    FAILED,
    INITIATED,
    READY_FOR_CLEANING,
    SUCCEEDED,
    TYPE_CODES,
    WORKING,
    Compaction,
    info_struct,
)
from hms_cache_proxy.store.txn.txn_base import ABORTED, OP_COMPACT, TxnPart, TxnShared

_CQ, _CC = schema.COMPACTION_QUEUE, schema.COMPLETED_COMPACTIONS


class CompactionWorker(TxnPart):
    """find_next_compact, update_compactor_state, set_hadoop_jobid, mark_*, and the columns
    with statistics."""

    def __init__(self, shared: TxnShared, compaction: Compaction) -> None:
        super().__init__(shared)
        self.compaction = compaction

    def find_next_compact(
        self, worker_id: str | None, worker_version: str | None, pool: str | None
    ) -> hms.CompactionInfoStruct | None:
        """Hand the oldest initiated request (of ``pool``; without one, of no pool) to the
        worker: ``w``, its worker id and version, started now. None when there is none."""
        return self.db.transaction(
            lambda conn: self._find_next_compact_txn(conn, worker_id, worker_version, pool)
        )

    def _find_next_compact_txn(
        self, conn: Connection, worker_id: str | None, worker_version: str | None, pool: str | None
    ) -> Any:
        in_pool = _CQ.c.CQ_POOL_NAME == pool if pool else _CQ.c.CQ_POOL_NAME.is_(None)
        candidates = conn.execute(
            select(_CQ).where(_CQ.c.CQ_STATE == INITIATED, in_pool).order_by(_CQ.c.CQ_ID).limit(20)
        ).all()
        for row in candidates:
            taken = conn.execute(
                update(_CQ)
                .where(_CQ.c.CQ_ID == row.CQ_ID, _CQ.c.CQ_STATE == INITIATED)
                .values(
                    CQ_WORKER_ID=worker_id,
                    CQ_WORKER_VERSION=worker_version,
                    CQ_START=self.now_ms(conn),
                    CQ_STATE=WORKING,
                )
            ).rowcount
            if taken == 1:
                fresh = conn.execute(select(_CQ).where(_CQ.c.CQ_ID == row.CQ_ID)).one()
                return info_struct(fresh)
        return None

    def update_compactor_state(self, ci: Any, txn_id: int) -> None:
        """The worker's compactor txn and highest write id, and a TXN_COMPONENTS row (``c``)
        so that an abort of that txn leaves a trace of what it was compacting."""
        self.db.transaction(lambda conn: self._update_compactor_state_txn(conn, ci, txn_id))

    def _update_compactor_state_txn(self, conn: Connection, ci: Any, txn_id: int) -> None:
        found = conn.execute(
            update(_CQ)
            .where(_CQ.c.CQ_ID == ci.id)
            .values(CQ_HIGHEST_WRITE_ID=ci.highestWriteId, CQ_RUN_AS=ci.runas, CQ_TXN_ID=txn_id)
        ).rowcount
        if found != 1:
            raise hms.MetaException(message=f"No compaction with id {ci.id} in the queue")
        row = conn.execute(select(_CQ).where(_CQ.c.CQ_ID == ci.id)).one()
        conn.execute(
            insert(schema.TXN_COMPONENTS).values(
                TC_TXNID=txn_id,
                TC_DATABASE=row.CQ_DATABASE,
                TC_TABLE=row.CQ_TABLE,
                TC_PARTITION=row.CQ_PARTITION,
                TC_OPERATION_TYPE=OP_COMPACT,
                TC_WRITEID=ci.highestWriteId,
            )
        )

    def set_hadoop_jobid(self, job_id: str | None, cq_id: int) -> None:
        """Record the job running a compaction (exactly one queued request, as Hive 4)."""

        def run(conn: Connection) -> None:
            done = conn.execute(
                update(_CQ).where(_CQ.c.CQ_ID == cq_id).values(CQ_HADOOP_JOB_ID=job_id)
            ).rowcount
            if done != 1:
                raise hms.MetaException(message=f"No compaction with id {cq_id} in the queue")

        self.db.transaction(run)

    def mark_compacted(self, ci: Any) -> None:
        """Compacted: ``r``, ready for the Cleaner; the worker id is cleared."""

        def run(conn: Connection) -> None:
            done = conn.execute(
                update(_CQ)
                .where(_CQ.c.CQ_ID == ci.id)
                .values(CQ_STATE=READY_FOR_CLEANING, CQ_WORKER_ID=None)
            ).rowcount
            if done != 1:
                raise hms.MetaException(message=f"No compaction with id {ci.id} in the queue")

        self.db.transaction(run)

    def mark_cleaned(self, ci: Any) -> None:
        """Cleaned: the request goes to history as succeeded, and the txn components its
        compaction made obsolete (committed ones up to its highest write id, aborted ones
        below it) are deleted."""
        self.db.transaction(lambda conn: self._mark_cleaned_txn(conn, ci))

    def _mark_cleaned_txn(self, conn: Connection, ci: Any) -> None:
        row = conn.execute(select(_CQ).where(_CQ.c.CQ_ID == ci.id)).first()
        if row is None:
            raise hms.MetaException(message=f"No compaction with id {ci.id} in the queue")
        self.compaction.move_to_history(conn, int(ci.id), SUCCEEDED, keep_error=True)
        high = row.CQ_HIGHEST_WRITE_ID
        if high is None:
            high = ci.highestWriteId
        ctc, tc = schema.COMPLETED_TXN_COMPONENTS, schema.TXN_COMPONENTS
        committed = [
            ctc.c.CTC_DATABASE == row.CQ_DATABASE,
            ctc.c.CTC_TABLE == row.CQ_TABLE,
        ]
        aborted = [
            tc.c.TC_DATABASE == row.CQ_DATABASE,
            tc.c.TC_TABLE == row.CQ_TABLE,
            tc.c.TC_TXNID.in_(
                select(schema.TXNS.c.TXN_ID).where(schema.TXNS.c.TXN_STATE == ABORTED)
            ),
        ]
        if row.CQ_PARTITION is not None:
            committed.append(ctc.c.CTC_PARTITION == row.CQ_PARTITION)
            aborted.append(tc.c.TC_PARTITION == row.CQ_PARTITION)
        if high is not None:
            committed.append(ctc.c.CTC_WRITEID <= high)
            aborted.append(tc.c.TC_WRITEID <= high)
        conn.execute(delete(ctc).where(*committed))
        conn.execute(delete(tc).where(*aborted))

    def mark_failed(self, ci: Any, state: str = FAILED) -> None:
        """Failed (or, with ``state`` REFUSED, refused by the worker): the request goes to
        history with the worker's error message. One the Initiator could not queue (id 0) is
        recorded with a fresh id, a failure as ``did not initiate``; an id not in the queue
        is an error."""
        self.db.transaction(lambda conn: self._mark_failed_txn(conn, ci, state))

    def _mark_failed_txn(self, conn: Connection, ci: Any, state: str) -> None:
        if self.compaction.move_to_history(conn, int(ci.id or 0), state, ci.errorMessage, True):
            return
        if ci.id:
            raise hms.MetaException(
                message=f"No record with CQ_ID={ci.id} found in COMPACTION_QUEUE"
            )
        ncq = schema.NEXT_COMPACTION_QUEUE_ID
        taken = int(conn.execute(select(ncq.c.NCQ_NEXT).with_for_update()).scalar_one())
        conn.execute(update(ncq).values(NCQ_NEXT=taken + 1))
        now = self.now_ms(conn)
        conn.execute(
            insert(_CC).values(
                CC_ID=taken,
                CC_DATABASE=ci.dbname or "",
                CC_TABLE=ci.tablename or "",
                CC_PARTITION=ci.partitionname,
                CC_STATE=DID_NOT_INITIATE if state == FAILED else state,
                CC_TYPE=TYPE_CODES.get(ci.type, TYPE_CODES[hms.CompactionType.MINOR]),
                CC_TBLPROPERTIES=ci.properties,
                CC_RUN_AS=ci.runas,
                CC_ERROR_MESSAGE=ci.errorMessage,
                CC_ENQUEUE_TIME=now,
                CC_START=now,
                CC_END=now,
                CC_POOL_NAME=ci.poolname,
            )
        )

    def find_columns_with_stats(self, ci: Any) -> list[str]:
        """Columns with statistics in the compacted table or partition (the Worker
        recomputes them after compacting)."""
        if ci.partitionname is None:
            st = schema.TAB_COL_STATS
            where = [st.c.DB_NAME == ci.dbname, st.c.TABLE_NAME == ci.tablename]
        else:
            st = schema.PART_COL_STATS
            where = [
                st.c.DB_NAME == ci.dbname,
                st.c.TABLE_NAME == ci.tablename,
                st.c.PARTITION_NAME == ci.partitionname,
            ]
        query = select(st.c.COLUMN_NAME).where(*where).distinct().order_by(st.c.COLUMN_NAME)
        with self.db.read() as conn:
            return [str(c) for c in conn.execute(query).scalars()]
