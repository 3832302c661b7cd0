"""Committing a transaction: Hive 4's CommitTxnFunction over the shared TXNS tables.

commit_txn locks the txn's TXNS row first (``SELECT ... FOR UPDATE``), as every change of one
txn does. A commit that updated or deleted writes its WRITE_SET rows under a temporary commit
id, takes TXN_LOCK_TBL in EXCLUSIVE mode (no txn opens while it is numbered), checks for write
conflicts when ``exclWriteEnabled`` is false (first committer wins; the loser is aborted), then
moves TXN_COMPONENTS to COMPLETED_TXN_COMPONENTS, writes the COMMIT_TXN event (with the txn's
write ids, databases and tables from TXN_TO_WRITE_ID) and marks the row committed. On
PostgreSQL a commit that updated or deleted nothing takes the hand-written path of
``pgsql.py`` (three round trips, the same steps in the same order).

``move_components_to_completed``, ``commit_events`` and ``finish_commit`` are also the steps
of REPL LOAD's commits (``repl.py``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, literal, or_, select, text, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent, one_statement
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.abort import Abort
from hms_cache_proxy.store.txn.function_calls import FunctionCalls
from hms_cache_proxy.store.txn.txn_base import (
    COMMITTED,
    COMPACTION_TYPES,
    OP_COMPACT,
    OP_DELETE,
    OP_UPDATE,
    TXN_KEY_START,
    TxnPart,
    TxnShared,
    raise_unexpected_state,
    txn_id_str,
    txn_type_of,
)

_T = schema.TXNS


class Commit(TxnPart):
    """commit_txn, and the commit steps REPL LOAD's commits share."""

    def __init__(self, shared: TxnShared, aborts: Abort) -> None:
        super().__init__(shared)
        self.aborts = aborts
        """A write conflict aborts the committing txn."""
        self.functions = FunctionCalls(shared)

    def commit_txn(
        self,
        txn_id: int,
        key_value: Any | None = None,
        excl_write_enabled: bool = True,
    ) -> None:
        """Commit ``txn_id`` (a second commit of a committed txn is a no-op, as in Hive)."""
        if (
            key_value is None
            and self.functions.usable()
            and self.functions.commit_txn(txn_id, excl_write_enabled)
        ):
            return  # one round trip: plpgsql.COMMIT_FUNCTION
        deferred = self.db.transaction(
            lambda conn: self._commit(conn, txn_id, key_value, excl_write_enabled)
        )
        if deferred is not None:
            raise deferred

    def _commit(
        self, conn: Connection, txn_id: int, key_value: Any | None, excl_write_enabled: bool
    ) -> Exception | None:
        if one_statement(conn) and key_value is None:
            done = self._commit_plain(conn, txn_id)
            if done:
                return None
        txn_type = self.lock_open_txn(conn, txn_id)
        if txn_type is None:
            state = self.find_txn_state(conn, txn_id)
            if state == COMMITTED:
                return None  # Nth commitTxn: idempotent
            raise_unexpected_state(state, txn_id)
        tc = schema.TXN_COMPONENTS
        update_delete = "N"
        commit_id: int | None = None
        temp_id = -random.randint(1, 2**62)
        ops = set(
            conn.execute(
                select(tc.c.TC_OPERATION_TYPE).where(tc.c.TC_TXNID == txn_id).distinct()
            ).scalars()
        )
        if txn_type in (hms.TxnType.SOFT_DELETE, hms.TxnType.COMPACTION):
            commit_id = self._lock_txns_exclusive(conn)
        elif txn_type != hms.TxnType.READ_ONLY:
            # Without MIN_HISTORY_LEVEL every write goes to WRITE_SET (inserts too), so that
            # housekeeping keeps the write ids of txns a reader may still hold open (Hive 4).
            level = self.config.use_min_history_level
            writes = and_(
                tc.c.TC_TXNID == txn_id,
                tc.c.TC_OPERATION_TYPE.in_([OP_UPDATE, OP_DELETE])
                if level
                else tc.c.TC_OPERATION_TYPE != OP_COMPACT,
            )
            if not level and ops and not ops & {OP_UPDATE, OP_DELETE}:
                self._insert_write_set(conn, txn_id, temp_id, writes)
                commit_id = int(conn.execute(select(func.max(_T.c.TXN_ID))).scalar_one())
            elif ops & {OP_UPDATE, OP_DELETE}:
                update_delete = "Y"
                savepoint = conn.begin_nested()
                self._insert_write_set(conn, txn_id, temp_id, writes)
                commit_id = self._lock_txns_exclusive(conn)
                conflict = None if excl_write_enabled else self._write_conflict(conn, txn_id)
                if conflict is not None:
                    savepoint.rollback()
                    self.aborts.abort_in(conn, [txn_id], reason="write conflicts")
                    self.aborts.emit_aborts(conn, {txn_id: txn_type})
                    return hms.TxnAbortedException(
                        message=f"Aborting [{txn_id_str(txn_id)},{commit_id}] due to a write "
                        f"conflict on {conflict}"
                    )
                savepoint.commit()
        if ops and txn_type != hms.TxnType.READ_ONLY and txn_type not in COMPACTION_TYPES:
            self.move_components_to_completed(conn, txn_id, update_delete)
        altered = []
        if key_value is not None:
            altered.append(self._update_key_value(conn, txn_id, key_value))
        events = (
            self.commit_events(conn, txn_id, altered)
            if txn_type != hms.TxnType.READ_ONLY or altered
            else []
        )
        self.finish_commit(conn, txn_id, txn_type, commit_id, temp_id, bool(ops))
        self.emit(conn, events)
        return None

    def _commit_plain(self, conn: Connection, txn_id: int) -> bool:
        """PostgreSQL: commit a txn that updated or deleted nothing in three round trips (lock
        and read; finish and the event sequence; the event and COMMIT), the same steps as
        below. False when the txn needs the general path (not open, write set, compaction and
        other special types); the row lock it took
        is the one that path takes first, so nothing differs."""
        facts = pgsql.lock_and_read_commit(conn, txn_id)
        if facts is None:
            return False
        raw_type, ops, writes = facts
        txn_type = txn_type_of(None if raw_type == -1 else raw_type)
        if txn_type not in (hms.TxnType.DEFAULT, hms.TxnType.READ_ONLY):
            return False
        if ops & {OP_UPDATE, OP_DELETE} and txn_type != hms.TxnType.READ_ONLY:
            return False
        read_only = txn_type == hms.TxnType.READ_ONLY
        events = []
        if not read_only:
            infos = [
                hms.WriteEventInfo(writeId=w, database=db, table=tbl, files=None)
                for w, db, tbl in writes
            ]
            body = self.messages.commit_txn(txn_id, infos or None)
            events.append(NewEvent(msg.COMMIT_TXN, body, cat_name=None))
        # The finish travels with the event's sequence lock; the COMMIT with the event.
        finish = pgsql.finish_commit_sql(
            bool(ops) and not read_only,
            self.config.use_min_history_level,
            self.config.use_min_history_write_id,
        )
        self.events.append(conn, events, before=finish, params={"txn": txn_id}, last=True)
        return True

    @staticmethod
    def _lock_txns_exclusive(conn: Connection) -> int:
        """TXN_LOCK_TBL in EXCLUSIVE mode (mutex with openTxns); the commit id is the hwm."""
        if conn.dialect.name == "postgresql":
            conn.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN EXCLUSIVE MODE'))
        return int(conn.execute(select(func.max(_T.c.TXN_ID))).scalar_one())

    @staticmethod
    def _insert_write_set(conn: Connection, txn_id: int, temp_id: int, writes: Any) -> None:
        tc, ws = schema.TXN_COMPONENTS, schema.WRITE_SET
        rows = (
            select(
                tc.c.TC_DATABASE,
                tc.c.TC_TABLE,
                tc.c.TC_PARTITION,
                tc.c.TC_TXNID,
                literal(temp_id),
                tc.c.TC_OPERATION_TYPE,
            )
            .where(writes)
            .distinct()
        )
        conn.execute(
            insert(ws).from_select(
                [
                    "WS_DATABASE",
                    "WS_TABLE",
                    "WS_PARTITION",
                    "WS_TXNID",
                    "WS_COMMIT_ID",
                    "WS_OPERATION_TYPE",
                ],
                rows,
            )
        )

    @staticmethod
    def _write_conflict(conn: Connection, txn_id: int) -> str | None:
        """Hive's checkForWriteConflict (when exclWriteEnabled is false): first committer wins."""
        committed, cur = schema.WRITE_SET.alias("committed"), schema.WRITE_SET.alias("cur")
        ud = [OP_UPDATE, OP_DELETE]
        row = conn.execute(
            select(
                committed.c.WS_TXNID,
                committed.c.WS_COMMIT_ID,
                committed.c.WS_DATABASE,
                committed.c.WS_TABLE,
                committed.c.WS_PARTITION,
                cur.c.WS_OPERATION_TYPE,
                committed.c.WS_OPERATION_TYPE,
            )
            .select_from(
                committed.join(
                    cur,
                    and_(
                        committed.c.WS_DATABASE == cur.c.WS_DATABASE,
                        committed.c.WS_TABLE == cur.c.WS_TABLE,
                        or_(
                            committed.c.WS_PARTITION == cur.c.WS_PARTITION,
                            and_(committed.c.WS_PARTITION.is_(None), cur.c.WS_PARTITION.is_(None)),
                        ),
                    ),
                )
            )
            .where(
                cur.c.WS_TXNID <= committed.c.WS_COMMIT_ID,
                cur.c.WS_TXNID == txn_id,
                committed.c.WS_TXNID != txn_id,
                committed.c.WS_OPERATION_TYPE.in_(ud),
                cur.c.WS_OPERATION_TYPE.in_(ud),
            )
            .limit(1)
        ).first()
        if row is None:
            return None
        resource = f"{row[2]}/{row[3]}" + (f"/{row[4]}" if row[4] is not None else "")
        return f"{resource} committed by [{txn_id_str(row[0])},{row[1]}] {row[5]}/{row[6]}"

    @staticmethod
    def move_components_to_completed(conn: Connection, txn_id: int, update_delete: str) -> None:
        tc, ctc = schema.TXN_COMPONENTS, schema.COMPLETED_TXN_COMPONENTS
        rows = select(
            tc.c.TC_TXNID,
            tc.c.TC_DATABASE,
            tc.c.TC_TABLE,
            tc.c.TC_PARTITION,
            tc.c.TC_WRITEID,
            literal(update_delete),
        ).where(tc.c.TC_TXNID == txn_id, tc.c.TC_OPERATION_TYPE != OP_COMPACT)
        conn.execute(
            insert(ctc).from_select(
                [
                    "CTC_TXNID",
                    "CTC_DATABASE",
                    "CTC_TABLE",
                    "CTC_PARTITION",
                    "CTC_WRITEID",
                    "CTC_UPDATE_DELETE",
                ],
                rows,
            )
        )

    def commit_events(
        self, conn: Connection, txn_id: int, altered: Sequence[tuple[str, str, str]] = ()
    ) -> list[NewEvent]:
        t2w = schema.TXN_TO_WRITE_ID
        rows = conn.execute(
            select(t2w.c.T2W_WRITEID, t2w.c.T2W_DATABASE, t2w.c.T2W_TABLE)
            .where(t2w.c.T2W_TXNID == txn_id)
            .order_by(t2w.c.T2W_DATABASE, t2w.c.T2W_TABLE)
        ).all()
        infos = [
            hms.WriteEventInfo(writeId=int(r[0]), database=r[1], table=r[2], files=None)
            for r in rows
        ]
        body = self.messages.commit_txn(txn_id, infos or None, altered)
        return [NewEvent(msg.COMMIT_TXN, body, cat_name=None)]

    def finish_commit(
        self,
        conn: Connection,
        txn_id: int,
        txn_type: int,
        commit_id: int | None,
        temp_id: int,
        has_components: bool,
    ) -> None:
        """Hive's updateWSCommitIdAndCleanUpMetadata plus the min-history rows."""
        ws, tc, hl = schema.WRITE_SET, schema.TXN_COMPONENTS, schema.HIVE_LOCKS
        if commit_id is not None:
            conn.execute(
                update(ws)
                .where(ws.c.WS_COMMIT_ID == temp_id, ws.c.WS_TXNID == txn_id)
                .values(WS_COMMIT_ID=commit_id)
            )
        if has_components and txn_type != hms.TxnType.READ_ONLY:
            conn.execute(delete(tc).where(tc.c.TC_TXNID == txn_id))
        conn.execute(delete(hl).where(hl.c.HL_TXNID == txn_id))
        conn.execute(update(_T).where(_T.c.TXN_ID == txn_id).values(TXN_STATE=COMMITTED))
        if txn_type == hms.TxnType.MATER_VIEW_REBUILD:
            mrl = schema.MATERIALIZATION_REBUILD_LOCKS
            conn.execute(delete(mrl).where(mrl.c.MRL_TXN_ID == txn_id))
        if txn_type in (hms.TxnType.SOFT_DELETE, hms.TxnType.COMPACTION):
            cq = schema.COMPACTION_QUEUE
            conn.execute(
                update(cq)
                .where(cq.c.CQ_TXN_ID == txn_id)
                .values(CQ_NEXT_TXN_ID=commit_id, CQ_COMMIT_TIME=self.now_ms(conn))
            )
        self.forget_min_history(conn, [txn_id])

    @staticmethod
    def _update_key_value(conn: Connection, txn_id: int, kv: Any) -> tuple[str, str, str]:
        """CommitTxnKeyValue: set one TABLE_PARAMS value with the commit (Hive's wording).
        Returns the table's (cat, db, name): the COMMIT_TXN event names it, as no other event
        describes this change."""
        what = (
            f"Error updating key/value in the sql backend with txnId={txn_id}, "
            f"tableId={kv.tableId}, key={kv.key}, value={kv.value}."
        )
        if not (kv.key or "").startswith(TXN_KEY_START):
            raise hms.MetaException(message=f"{what} key should start with {TXN_KEY_START}.")
        tp = schema.TABLE_PARAMS
        rc = conn.execute(
            update(tp)
            .where(tp.c.TBL_ID == kv.tableId, tp.c.PARAM_KEY == kv.key)
            .values(PARAM_VALUE=kv.value)
        ).rowcount
        if rc != 1:
            raise hms.MetaException(
                message=f"{what} Only one row should have been affected but {rc} rows where "
                "affected."
            )
        t, d = schema.TBLS, schema.DBS
        row = conn.execute(
            select(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME)
            .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID))
            .where(t.c.TBL_ID == kv.tableId)
        ).one()
        return (str(row[0]), str(row[1]), str(row[2]))
