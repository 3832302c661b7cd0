"""The compaction queue: COMPACTION_QUEUE and COMPLETED_COMPACTIONS as Hive 4's TxnHandler and
CompactionTxnHandler keep them, so that Hive's compactor (Initiator, Worker, Cleaner) run
against this metastore finds and records its work. No compactor runs here.

A request's life (CQ_STATE / CC_STATE):

- ``compact`` enqueues it ``i`` (initiated) with an id from NEXT_COMPACTION_QUEUE_ID, unless
  the same table or partition already has one initiated or working (or ready for cleaning at
  the table's current write-id high-water mark): then it is refused with that one's id. The
  NEXT_COMPACTION_QUEUE_ID row is locked first (``FOR UPDATE``, as Hive's id function), which
  also serialises concurrent enqueuers, ours and Hive's, on one database.
- A Worker takes it (``find_next_compact``: ``w``, CQ_WORKER_ID, CQ_START), records its
  compactor txn and highest write id (``update_compactor_state``), its job id
  (``set_hadoop_jobid``) and marks it compacted (``r``, ready for cleaning). Committing the
  compactor txn stamps CQ_NEXT_TXN_ID and CQ_COMMIT_TIME (commit.py).
- The Cleaner's ``mark_cleaned`` moves it to COMPLETED_COMPACTIONS as ``s`` (succeeded) and
  drops the completed and aborted txn components the compaction made obsolete;
  ``mark_failed`` / ``mark_refused`` move it there as ``f`` / ``c`` and
  ``abort_compactions`` (initiated ones only) as ``x``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    case,
    delete,
    insert,
    literal,
    null,
    select,
    union_all,
    update,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.rules import COMPACTION_REFUSED
from hms_cache_proxy.store.txn.txn_base import TxnPart

_CQ, _CC = schema.COMPACTION_QUEUE, schema.COMPLETED_COMPACTIONS

INITIATED, WORKING, READY_FOR_CLEANING = "i", "w", "r"
FAILED, SUCCEEDED, DID_NOT_INITIATE, ABORTED_STATE = "f", "s", "a", "x"
REFUSED = COMPACTION_REFUSED

STATE_NAMES: dict[str, str] = {
    INITIATED: "initiated",
    WORKING: "working",
    READY_FOR_CLEANING: "ready for cleaning",
    FAILED: "failed",
    SUCCEEDED: "succeeded",
    DID_NOT_INITIATE: "did not initiate",
    REFUSED: "refused",
    ABORTED_STATE: "aborted",
}
"""CompactionState: the SQL code and the word show_compact and compact2 answer with."""

TYPE_CODES: dict[int, str] = {
    hms.CompactionType.MAJOR: "a",
    hms.CompactionType.MINOR: "i",
    hms.CompactionType.REBALANCE: "r",
}
TYPES = {code: kind for kind, code in TYPE_CODES.items()}

ACCEPTED_RESPONSE, REFUSED_RESPONSE = "initiated", "refused"

_FIELDS = [
    "ID",
    "DATABASE",
    "TABLE",
    "PARTITION",
    "STATE",
    "TYPE",
    "TBLPROPERTIES",
    "WORKER_ID",
    "ENQUEUE_TIME",
    "START",
    "RUN_AS",
    "HIGHEST_WRITE_ID",
    "META_INFO",
    "HADOOP_JOB_ID",
    "ERROR_MESSAGE",
    "NEXT_TXN_ID",
    "TXN_ID",
    "COMMIT_TIME",
    "INITIATOR_ID",
    "INITIATOR_VERSION",
    "WORKER_VERSION",
    "POOL_NAME",
    "NUMBER_OF_BUCKETS",
    "ORDER_BY",
]
"""Columns COMPACTION_QUEUE (CQ_) and COMPLETED_COMPACTIONS (CC_) share."""

_ORDER_TERM = re.compile(r'^\s*"?(?:c[cq]_)?([a-z_]+)"?(?:\s+(asc|desc))?\s*$', re.IGNORECASE)


def stringable_map(props: dict[str, str] | None) -> str | None:
    """Hive's StringableMap.toString, how CQ_TBLPROPERTIES stores a request's properties:
    ``<n>:`` then ``<len>:<key><len>:<value>`` per entry (lengths in Java chars)."""
    if not props:
        return None if props is None else "0:"
    out = [f"{len(props)}:"]
    for key, value in props.items():
        for text in (key or "", value or ""):
            out.append(f"{len(text.encode('utf-16-le')) // 2}:{text}")
    return "".join(out)


def _partition_match(column: Any, partition: str | None) -> Any:
    return column.is_(None) if partition is None else column == partition


def _type_code(kind: int | None) -> str:
    code = TYPE_CODES.get(kind) if kind is not None else None
    if code is None:
        raise hms.MetaException(
            message=f"Unexpected compaction type {kind}; expected one of "
            + ", ".join(hms.CompactionType._VALUES_TO_NAMES[k] for k in TYPE_CODES)
        )
    return code


def _state_code(state: str) -> str:
    """A state as show_compact's filter gives it: the word (any case) or the SQL code."""
    lowered = state.strip().lower()
    for code, name in STATE_NAMES.items():
        if lowered in (code, name):
            return code
    raise hms.MetaException(
        message=f"Unknown compaction state {state!r}; expected one of "
        + ", ".join(STATE_NAMES.values())
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def info_struct(row: Any, prefix: str = "CQ_") -> hms.CompactionInfoStruct:
    """A queue (or completed) row as the CompactionInfoStruct the compactor reads."""

    def col(name: str) -> Any:
        return getattr(row, prefix + name, None)

    return hms.CompactionInfoStruct(
        id=int(col("ID")),
        dbname=col("DATABASE"),
        tablename=col("TABLE"),
        partitionname=col("PARTITION"),
        type=TYPES.get(col("TYPE")),
        runas=col("RUN_AS"),
        properties=col("TBLPROPERTIES"),
        state=col("STATE"),
        workerId=col("WORKER_ID"),
        start=_int(col("START")),
        highestWriteId=_int(col("HIGHEST_WRITE_ID")),
        errorMessage=col("ERROR_MESSAGE"),
        enqueueTime=_int(col("ENQUEUE_TIME")),
        retryRetention=_int(col("RETRY_RETENTION")),
        poolname=col("POOL_NAME"),
        numberOfBuckets=_int(col("NUMBER_OF_BUCKETS")),
        orderByClause=col("ORDER_BY"),
    )


class Compaction(TxnPart):
    """compact, show_compact, abort_compactions, the worker-side calls and the latest
    committed compaction."""

    # -- enqueueing ---------------------------------------------------------------------------

    def compact(self, rqst: Any) -> hms.CompactionResponse:
        """Queue ``rqst`` (db, table and partition names already normalised)."""
        code = _type_code(rqst.type)
        return self.db.transaction(lambda conn: self._enqueue_compaction(conn, rqst, code))

    def compact_in(self, conn: Connection, rqst: Any) -> hms.CompactionResponse:
        """``compact`` inside the caller's database transaction."""
        return self._enqueue_compaction(conn, rqst, _type_code(rqst.type))

    def _enqueue_compaction(self, conn: Connection, rqst: Any, code: str) -> Any:
        ncq = schema.NEXT_COMPACTION_QUEUE_ID
        taken = conn.execute(select(ncq.c.NCQ_NEXT).with_for_update()).scalar()
        if taken is None:
            raise hms.MetaException(
                message="Transaction tables not properly initialized, no record found in "
                "next_compaction_queue_id"
            )
        nwi = schema.NEXT_WRITE_ID
        nxt = conn.execute(
            select(nwi.c.NWI_NEXT).where(
                nwi.c.NWI_DATABASE == rqst.dbname, nwi.c.NWI_TABLE == rqst.tablename
            )
        ).scalar()
        high_water_mark = 0 if nxt is None else int(nxt) - 1
        existing = conn.execute(
            select(_CQ.c.CQ_ID, _CQ.c.CQ_STATE)
            .where(
                _CQ.c.CQ_DATABASE == rqst.dbname,
                _CQ.c.CQ_TABLE == rqst.tablename,
                _partition_match(_CQ.c.CQ_PARTITION, rqst.partitionname),
                (_CQ.c.CQ_STATE.in_([INITIATED, WORKING]))
                | and_(
                    _CQ.c.CQ_STATE == READY_FOR_CLEANING,
                    _CQ.c.CQ_HIGHEST_WRITE_ID == high_water_mark,
                ),
            )
            .order_by(_CQ.c.CQ_ID)
            .limit(1)
        ).first()
        if existing is not None:
            state = STATE_NAMES.get(existing.CQ_STATE, existing.CQ_STATE)
            return hms.CompactionResponse(
                id=-1,
                state=REFUSED_RESPONSE,
                accepted=False,
                errormessage=f"Compaction is already scheduled with state='{state}' and "
                f"id={existing.CQ_ID}",
            )
        cq_id = int(taken)
        conn.execute(update(ncq).values(NCQ_NEXT=cq_id + 1))
        conn.execute(
            insert(_CQ).values(
                CQ_ID=cq_id,
                CQ_DATABASE=rqst.dbname,
                CQ_TABLE=rqst.tablename,
                CQ_PARTITION=rqst.partitionname,
                CQ_STATE=INITIATED,
                CQ_TYPE=code,
                CQ_TBLPROPERTIES=stringable_map(rqst.properties),
                CQ_RUN_AS=rqst.runas,
                CQ_INITIATOR_ID=rqst.initiatorId,
                CQ_INITIATOR_VERSION=rqst.initiatorVersion,
                CQ_POOL_NAME=rqst.poolName,
                CQ_NUMBER_OF_BUCKETS=rqst.numberOfBuckets,
                CQ_ORDER_BY=rqst.orderByClause,
                CQ_ENQUEUE_TIME=self.now_ms(conn),
            )
        )
        return hms.CompactionResponse(id=cq_id, state=ACCEPTED_RESPONSE, accepted=True)

    # -- listing ------------------------------------------------------------------------------

    @staticmethod
    def _all_compactions() -> Any:
        """Queue and history as one relation with CC_ column names (CC_END/CLEANER_START
        are only in one of them)."""
        queue = select(
            *[_CQ.c["CQ_" + f].label("CC_" + f) for f in _FIELDS],
            literal(None).label("CC_END"),
            _CQ.c.CQ_CLEANER_START.label("CC_CLEANER_START"),
        )
        done = select(
            *[_CC.c["CC_" + f] for f in _FIELDS],
            _CC.c.CC_END,
            null().label("CC_CLEANER_START"),
        )
        return union_all(queue, done).subquery("compactions")

    def show_compact(self, rqst: Any) -> hms.ShowCompactResponse:
        """The queue and the history, filtered as the request asks, latest activity first."""
        u = self._all_compactions()
        where = []
        if rqst.id is not None:
            where.append(u.c.CC_ID == rqst.id)
        if rqst.poolName:
            where.append(u.c.CC_POOL_NAME == rqst.poolName)
        if rqst.dbName:
            where.append(u.c.CC_DATABASE == rqst.dbName)
        if rqst.tbName:
            where.append(u.c.CC_TABLE == rqst.tbName)
        if rqst.partName:
            where.append(u.c.CC_PARTITION == rqst.partName)
        if rqst.type is not None:
            where.append(u.c.CC_TYPE == _type_code(rqst.type))
        if rqst.state:
            where.append(u.c.CC_STATE == _state_code(rqst.state))
        query = select(u).where(*where).order_by(*self._order(u, rqst.order))
        if rqst.limit is not None and rqst.limit > 0:
            query = query.limit(rqst.limit)
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        return hms.ShowCompactResponse(compacts=[_element(r) for r in rows])

    @staticmethod
    def _order(u: Any, order: str | None) -> list[Any]:
        """Hive's default (latest of end, start and commit time first, then enqueue time), or
        the request's ``column [asc|desc], ...`` over the listed columns."""
        if not order or not order.strip():
            latest = case(
                (and_(u.c.CC_END > u.c.CC_START, u.c.CC_END > u.c.CC_COMMIT_TIME), u.c.CC_END),
                (u.c.CC_START > u.c.CC_COMMIT_TIME, u.c.CC_START),
                else_=u.c.CC_COMMIT_TIME,
            )
            return [latest.desc().nulls_last(), u.c.CC_ENQUEUE_TIME.asc(), u.c.CC_ID.asc()]
        terms = []
        for part in order.split(","):
            match = _ORDER_TERM.match(part)
            name = match.group(1).upper() if match else None
            column = u.c.get("CC_" + name) if name else None
            if column is None:
                raise hms.MetaException(
                    message=f"Invalid show_compact order {order!r}: give column names of "
                    "COMPLETED_COMPACTIONS (cc_id, cc_enqueue_time, ...) with asc or desc, "
                    "separated by commas"
                )
            desc = (match.group(2) or "").lower() == "desc"  # type: ignore[union-attr]
            terms.append(column.desc() if desc else column.asc())
        return terms

    def latest_committed_compactions(
        self, db: str, table: str, partitions: Sequence[str] | None, after_id: int | None
    ) -> list[hms.CompactionInfoStruct]:
        """Per table or partition, the newest compaction whose result is committed (succeeded,
        or compacted and waiting for the cleaner), newer than ``after_id`` when given."""
        queue = select(
            _CQ.c.CQ_ID.label("CC_ID"),
            _CQ.c.CQ_DATABASE.label("CC_DATABASE"),
            _CQ.c.CQ_TABLE.label("CC_TABLE"),
            _CQ.c.CQ_PARTITION.label("CC_PARTITION"),
            _CQ.c.CQ_TYPE.label("CC_TYPE"),
        ).where(_CQ.c.CQ_STATE == READY_FOR_CLEANING)
        done = select(
            _CC.c.CC_ID, _CC.c.CC_DATABASE, _CC.c.CC_TABLE, _CC.c.CC_PARTITION, _CC.c.CC_TYPE
        ).where(_CC.c.CC_STATE == SUCCEEDED)
        u = union_all(queue, done).subquery("committed")
        where = [u.c.CC_DATABASE == db, u.c.CC_TABLE == table]
        if partitions:
            where.append(u.c.CC_PARTITION.in_(list(partitions)))
        if after_id is not None:
            where.append(u.c.CC_ID > after_id)
        with self.db.read() as conn:
            rows = conn.execute(select(u).where(*where).order_by(u.c.CC_ID.desc())).all()
        seen: set[str | None] = set()
        out = []
        for r in rows:
            if r.CC_PARTITION in seen:
                continue
            seen.add(r.CC_PARTITION)
            out.append(
                hms.CompactionInfoStruct(
                    id=int(r.CC_ID),
                    dbname=r.CC_DATABASE,
                    tablename=r.CC_TABLE,
                    partitionname=r.CC_PARTITION,
                    type=TYPES.get(r.CC_TYPE),
                )
            )
        return out

    # -- aborting -----------------------------------------------------------------------------

    def abort_compactions(self, ids: Sequence[int]) -> hms.AbortCompactResponse:
        """Initiated requests leave the queue as ``aborted``; others are reported, not touched."""
        return hms.AbortCompactResponse(
            abortedcompacts=self.db.transaction(lambda conn: self._abort_compactions_txn(conn, ids))
        )

    def _abort_compactions_txn(self, conn: Connection, ids: Sequence[int]) -> dict[int, Any]:
        out = {
            i: hms.AbortCompactionResponseElement(
                compactionId=i, status="Error", message="No Such Compaction Id Available"
            )
            for i in ids
        }
        u = self._all_compactions()
        rows = conn.execute(select(u.c.CC_ID, u.c.CC_STATE).where(u.c.CC_ID.in_(list(ids)))).all()
        for r in rows:
            cq_id = int(r.CC_ID)
            if r.CC_STATE != INITIATED:
                state = STATE_NAMES.get(r.CC_STATE, r.CC_STATE)
                out[
                    cq_id
                ].message = f"Error while aborting compaction as compaction is in state-{state}"
                continue
            moved = self.move_to_history(
                conn, cq_id, ABORTED_STATE, "Compaction Aborted by Abort Comapction request."
            )
            if moved:
                out[cq_id].status = "Success"
                out[cq_id].message = "Successfully aborted compaction"
        return out

    def move_to_history(
        self,
        conn: Connection,
        cq_id: int,
        state: str,
        error: str | None = None,
        keep_error: bool = False,
    ) -> bool:
        """Copy a queue row to COMPLETED_COMPACTIONS in ``state``, ended now, and delete it."""
        values: dict[str, Any] = {"CC_" + f: _CQ.c["CQ_" + f] for f in _FIELDS}
        values["CC_STATE"] = literal(state)
        values["CC_END"] = self.now_ms(conn)
        if error is not None or not keep_error:
            values["CC_ERROR_MESSAGE"] = literal(error) if error is not None else null()
        source = select(*values.values()).where(_CQ.c.CQ_ID == cq_id)
        copied = conn.execute(
            insert(_CC).from_select([_CC.c[name] for name in values], source)
        ).rowcount
        conn.execute(delete(_CQ).where(_CQ.c.CQ_ID == cq_id))
        return bool(copied)


def _element(r: Any) -> hms.ShowCompactResponseElement:
    return hms.ShowCompactResponseElement(
        dbname=r.CC_DATABASE,
        tablename=r.CC_TABLE,
        partitionname=r.CC_PARTITION,
        type=TYPES.get(r.CC_TYPE),
        state=STATE_NAMES.get(r.CC_STATE, r.CC_STATE),
        workerid=r.CC_WORKER_ID,
        start=_int(r.CC_START),
        runAs=r.CC_RUN_AS,
        hightestTxnId=_int(r.CC_HIGHEST_WRITE_ID),
        metaInfo=_text(r.CC_META_INFO),
        endTime=_int(r.CC_END),
        hadoopJobId=r.CC_HADOOP_JOB_ID or "None",
        id=int(r.CC_ID),
        errorMessage=r.CC_ERROR_MESSAGE,
        enqueueTime=_int(r.CC_ENQUEUE_TIME),
        workerVersion=r.CC_WORKER_VERSION,
        initiatorId=r.CC_INITIATOR_ID,
        initiatorVersion=r.CC_INITIATOR_VERSION,
        cleanerStart=_int(r.CC_CLEANER_START),
        poolName=r.CC_POOL_NAME,
        nextTxnId=_int(r.CC_NEXT_TXN_ID),
        txnId=_int(r.CC_TXN_ID),
        commitTime=_int(r.CC_COMMIT_TIME),
        hightestWriteId=_int(r.CC_HIGHEST_WRITE_ID),
    )
