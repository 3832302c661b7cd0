"""Aborting transactions: Hive 4's AbortTxnFunction / AbortTxnsFunction over TXNS.

An abort locks the txns' TXNS rows first (``SELECT ... FOR UPDATE``), marks them aborted with
the reason Hive records (TxnErrorMsg), drops their locks and REPL_TXN_MAP rows and writes one
ABORT_TXN event per txn (none for READ_ONLY txns). TXN_COMPONENTS and TXN_TO_WRITE_ID stay:
readers need the aborted write ids until the compactor has cleaned their data. ``abort_in`` and
``emit_aborts`` are also the steps of the other parts that end txns (a commit's write conflict,
a withdrawn open, housekeeping's timeouts, REPL LOAD).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.repl_props import REPL_INCOMPATIBLE
from hms_cache_proxy.store.txn.function_calls import FunctionCalls
from hms_cache_proxy.store.txn.txn_base import (
    ABORTED,
    OPEN,
    TxnPart,
    TxnShared,
    abort_reason,
    raise_unexpected_state,
    txn_type_of,
)

_T = schema.TXNS


class Abort(TxnPart):
    """abort_txn, abort_txns, and the abort steps the other parts share."""

    def __init__(self, shared: TxnShared) -> None:
        super().__init__(shared)
        self.functions = FunctionCalls(shared)

    def abort_txn(self, txn_id: int, error_code: int | None = None) -> None:
        """Abort one txn; aborting an aborted txn is a no-op, a committed one an error (Hive)."""
        if self.functions.usable() and self.functions.abort_txn(txn_id, abort_reason(error_code)):
            return  # one round trip: plpgsql.ABORT_FUNCTION
        self.db.transaction(lambda conn: self._abort_txn_txn(conn, txn_id, error_code))

    def _abort_txn_txn(self, conn: Connection, txn_id: int, error_code: int | None) -> None:
        txn_type = self.lock_open_txn(conn, txn_id)
        if txn_type is None:
            state = self.find_txn_state(conn, txn_id)
            if state == ABORTED:
                return
            raise_unexpected_state(state, txn_id)
        self.abort_in(conn, [txn_id], reason=abort_reason(error_code))
        self.emit_aborts(conn, {txn_id: txn_type})

    def abort_txns(self, txn_ids: Sequence[int], error_code: int | None = None) -> int:
        """Abort every open txn named; others are skipped silently (Hive); returns the count."""
        ids = sorted(set(txn_ids))
        if not ids:
            return 0
        return self.db.transaction(lambda conn: self._abort_txns_txn(conn, ids, error_code))

    def _abort_txns_txn(self, conn: Connection, ids: list[int], error_code: int | None) -> int:
        locked = conn.execute(
            select(_T.c.TXN_ID, _T.c.TXN_TYPE)
            .where(_T.c.TXN_ID.in_(ids), _T.c.TXN_STATE == OPEN)
            .order_by(_T.c.TXN_ID)
            .with_for_update()
        ).all()
        types = {int(r[0]): txn_type_of(r[1]) for r in locked}
        count = self.abort_in(conn, list(types), reason=abort_reason(error_code))
        self.emit_aborts(conn, types)
        return count

    def abort_in(
        self, conn: Connection, txn_ids: Sequence[int], *, reason: str, replayed: bool = False
    ) -> int:
        """Hive's abortTxns: mark open txns aborted and drop their locks; returns how many.

        TXN_COMPONENTS and TXN_TO_WRITE_ID stay: readers need the aborted write ids until the
        compactor has cleaned their data. An abort that is not REPL LOAD's own (``replayed``)
        of a replayed txn breaks the replica: its database gets ``repl.incompatible=true``
        (Hive's AbortTxnsFunction), and the next load refuses to run.
        """
        if not txn_ids:
            return 0
        hl, rtm = schema.HIVE_LOCKS, schema.REPL_TXN_MAP
        if not replayed:
            self._mark_repl_incompatible(conn, txn_ids)
        self.forget_min_history(conn, txn_ids)
        count = conn.execute(
            update(_T)
            .where(_T.c.TXN_ID.in_(txn_ids), _T.c.TXN_STATE == OPEN)
            .values(TXN_STATE=ABORTED, TXN_META_INFO=reason)
        ).rowcount
        conn.execute(delete(hl).where(hl.c.HL_TXNID.in_(txn_ids)))
        conn.execute(delete(rtm).where(rtm.c.RTM_TARGET_TXN_ID.in_(txn_ids)))
        return int(count)

    @staticmethod
    def _mark_repl_incompatible(conn: Connection, txn_ids: Sequence[int]) -> None:
        rtm, dbs, dp = schema.REPL_TXN_MAP, schema.DBS, schema.DATABASE_PARAMS
        policies = conn.execute(
            select(rtm.c.RTM_REPL_POLICY).where(rtm.c.RTM_TARGET_TXN_ID.in_(txn_ids)).distinct()
        ).scalars()
        names = {p.split(".", 1)[0].strip().lower() for p in policies if p}
        names.discard("*")
        for name in sorted(names):
            db_id = conn.execute(
                select(dbs.c.DB_ID).where(dbs.c.NAME == name, dbs.c.CTLG_NAME == "hive")
            ).scalar()
            if db_id is None:
                continue
            key = (dp.c.DB_ID == db_id, dp.c.PARAM_KEY == REPL_INCOMPATIBLE)
            if conn.execute(update(dp).where(*key).values(PARAM_VALUE="true")).rowcount == 0:
                conn.execute(
                    insert(dp).values(DB_ID=db_id, PARAM_KEY=REPL_INCOMPATIBLE, PARAM_VALUE="true")
                )

    def emit_aborts(self, conn: Connection, txn_types: dict[int, int]) -> None:
        """ABORT_TXN per aborted txn, with the databases it allocated write ids in."""
        ids = [t for t, kind in sorted(txn_types.items()) if kind != hms.TxnType.READ_ONLY]
        if not ids:
            return
        t2w = schema.TXN_TO_WRITE_ID
        dbs: dict[int, list[str]] = {t: [] for t in ids}
        for txn, db in conn.execute(
            select(t2w.c.T2W_TXNID, t2w.c.T2W_DATABASE)
            .where(t2w.c.T2W_TXNID.in_(ids))
            .distinct()
            .order_by(t2w.c.T2W_TXNID, t2w.c.T2W_DATABASE)
        ):
            dbs[int(txn)].append(db)
        self.emit(
            conn,
            [
                NewEvent(msg.ABORT_TXN, self.messages.abort_txn(t, dbs[t]), cat_name=None)
                for t in ids
            ],
        )
