"""Replayed transactions: what Hive's REPL LOAD asks of a target metastore (Hive 4's
OpenTxnsFunction, AllocateTableWriteIdsFunction, CommitTxnFunction, AbortTxnFunction and
ReplTableWriteIdStateFunction for ``REPL_CREATED`` txns).

A replayed txn is named by its *source* txn id and a replication policy (``"<db>.*"``);
REPL_TXN_MAP maps the pair to the target txn opened for it while it is open, and the target
txn's TXN_AGENT_INFO keeps the pair after that (``replayed_marker``). REPL LOAD replays an
event again when it stopped between the call and its ``repl.last.id`` update, so every call
here is idempotent: a re-open returns the mapped ids, an allocation already made returns its
pairs, a commit or abort of a txn no longer mapped returns without error.

Write ids are the source's: an allocation is forced to the source write id (NEXT_WRITE_ID moves
there, and when it jumps every TXN_TO_WRITE_ID row of the table goes, the stale mapping of a
table dropped during a bootstrap dump), so snapshots on both sides name the same ids.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.txn.abort import Abort
from hms_cache_proxy.store.txn.commit import Commit
from hms_cache_proxy.store.txn.compaction import Compaction
from hms_cache_proxy.store.txn.txn_base import (
    ABORTED,
    COMMITTED,
    TxnPart,
    TxnShared,
    raise_unexpected_state,
    txn_id_str,
)
from hms_cache_proxy.store.txn.txns import Txns
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

_RTM, _T2W, _NWI = schema.REPL_TXN_MAP, schema.TXN_TO_WRITE_ID, schema.NEXT_WRITE_ID
_T = schema.TXNS
_OPEN_RETRIES = 10

ABORT_REPLAYED = "Replayed transaction abort"
"""TxnErrorMsg ABORT_REPLAYED_REPL_TXN (51001)."""
ABORT_WRITE_ID_STATE = "Abort write id transaction of repl writeid state"
ABORT_LOAD_TXN = "Replication:Abort default replication transaction"
"""TxnErrorMsg ABORT_DEFAULT_REPL_TXN (51000): REPL LOAD's (or DUMP's) own statement txn."""
"""TxnErrorMsg ABORT_REPL_WRITEID_TXN (51002): the helper txns of repl_tbl_writeid_state."""


def replayed_marker(policy: str, src_txn: int) -> str:
    """What a replayed txn's TXN_AGENT_INFO holds: its source txn and policy. REPL_TXN_MAP
    forgets the pair at commit or abort (as Hive); this lets a replay of the OPEN_TXN after
    that find the txn instead of opening another."""
    digest = hashlib.sha1(policy.encode(), usedforsecurity=False).hexdigest()[:16]
    return f"repl:{src_txn}:{digest}"


@dataclass(frozen=True)
class ReplWrite:
    """One WriteEventInfo of a replayed commit, as the target records it."""

    write_id: int
    db: str
    table: str
    partition: str | None


class ReplTxns(TxnPart):
    """repl open/allocate/commit/abort and repl_tbl_writeid_state."""

    def __init__(
        self,
        shared: TxnShared,
        txns: Txns,
        commits: Commit,
        aborts: Abort,
        compaction: Compaction,
    ) -> None:
        super().__init__(shared)
        self.txns = txns
        self.commits = commits
        self.aborts = aborts
        self.compaction = compaction

    # -- the map ------------------------------------------------------------------------------

    @staticmethod
    def target_txns(conn: Connection, policy: str, src_ids: Sequence[int]) -> dict[int, int]:
        """source txn -> target txn, for the pairs REPL_TXN_MAP holds."""
        rows = conn.execute(
            select(_RTM.c.RTM_SRC_TXN_ID, _RTM.c.RTM_TARGET_TXN_ID).where(
                _RTM.c.RTM_REPL_POLICY == policy, _RTM.c.RTM_SRC_TXN_ID.in_(list(src_ids))
            )
        ).all()
        return {int(s): int(t) for s, t in rows}

    # -- open ---------------------------------------------------------------------------------

    def repl_open_txns(
        self, policy: str, src_ids: Sequence[int], user: str, host: str, agent_info: str | None
    ) -> list[int]:
        """Target txns (REPL_CREATED) for the source txns, ascending; the mapped ones if any
        already are (Hive returns those and opens nothing)."""
        if not src_ids:
            raise hms.MetaException(message="replSrcTxnIds must name the source txns")
        if len(src_ids) > self.config.max_open_batch:
            raise hms.MetaException(
                message=f"{len(src_ids)} replayed txns in one open_txns: at most "
                f"{self.config.max_open_batch} (metastore.txn.max.open.batch)"
            )
        timeout_s = self.config.open_txn_timeout_ms / 1000
        for _ in range(_OPEN_RETRIES):
            started: list[float] = []

            def run(conn: Connection, started: list[float] = started) -> tuple[bool, list[int]]:
                return self._open(conn, policy, src_ids, user, host, agent_info, started)

            fresh, ids = self.db.transaction(run)
            slow = started and time.monotonic() - started[-1] >= timeout_s
            if not fresh or not slow or self.db.dialect != "postgresql":
                return ids
            # As Txns.open_txns: readers may have taken these ids for gaps; withdraw and retry.
            self.db.transaction(functools.partial(self._withdraw, ids=ids))
        raise hms.MetaException(
            message=f"Could not open transactions within metastore.txn.opentxn.timeout "
            f"({self.config.open_txn_timeout_ms} ms) after {_OPEN_RETRIES} attempts"
        )

    def _open(
        self,
        conn: Connection,
        policy: str,
        src_ids: Sequence[int],
        user: str,
        host: str,
        agent_info: str | None,
        started: list[float],
    ) -> tuple[bool, list[int]]:
        mapped = self.target_txns(conn, policy, src_ids)
        if mapped:
            return False, sorted(mapped.values())
        markers = {replayed_marker(policy, s): s for s in src_ids}
        done = conn.execute(
            select(_T.c.TXN_ID).where(
                _T.c.TXN_TYPE == hms.TxnType.REPL_CREATED, _T.c.TXN_AGENT_INFO.in_(list(markers))
            )
        ).scalars()
        finished = sorted(int(t) for t in done)
        if finished:  # replayed before, and committed or aborted since (its map row is gone)
            return False, finished
        kind = hms.TxnType.REPL_CREATED
        ids = self.txns.insert_open_rows(conn, len(src_ids), user, host, agent_info, kind, started)
        conn.execute(
            update(_T)
            .where(_T.c.TXN_ID == bindparam("target"))
            .values(TXN_AGENT_INFO=bindparam("marker")),
            [
                {"target": t, "marker": replayed_marker(policy, s)}
                for s, t in zip(src_ids, ids, strict=True)
            ],
        )
        conn.execute(
            insert(_RTM),
            [
                {"RTM_REPL_POLICY": policy, "RTM_SRC_TXN_ID": s, "RTM_TARGET_TXN_ID": t}
                for s, t in zip(src_ids, ids, strict=True)
            ],
        )
        body = self.messages.open_txn(ids[0], ids[-1])
        self.emit(conn, [NewEvent(msg.OPEN_TXN, body, cat_name=None)])
        return True, ids

    def _withdraw(self, conn: Connection, ids: Sequence[int]) -> None:
        """Delete the rows of a too-slow open (its map rows too, or a re-open would return
        them), with the ABORT_TXN events its OPEN_TXN event calls for."""
        conn.execute(delete(_RTM).where(_RTM.c.RTM_TARGET_TXN_ID.in_(list(ids))))
        self.txns.delete_txns(conn, ids)
        self.aborts.emit_aborts(conn, dict.fromkeys(ids, hms.TxnType.REPL_CREATED))

    # -- REPL LOAD's own statement txn -----------------------------------------------------

    def load_open_txn(self, user: str, host: str, agent_info: str | None) -> int:
        """The txn REPL LOAD (or DUMP) runs in (``replPolicy`` with a DEFAULT txn): opened with
        no OPEN_TXN event, as Hive writes none for it, so a load adds to the target's log only
        the events it replays."""
        started: list[float] = []
        kind = hms.TxnType.DEFAULT

        def run(conn: Connection) -> list[int]:
            return self.txns.insert_open_rows(conn, 1, user, host, agent_info, kind, started)

        return self.db.transaction(run)[0]

    def load_commit_txn(self, txn_id: int) -> None:
        """Commit REPL LOAD's own txn, with no COMMIT_TXN event (a second commit: no-op)."""
        self.db.transaction(lambda conn: self._load_commit_txn_txn(conn, txn_id))

    def _load_commit_txn_txn(self, conn: Connection, txn_id: int) -> None:
        kind = self.lock_open_txn(conn, txn_id)
        if kind is None:
            state = self.find_txn_state(conn, txn_id)
            if state == COMMITTED:
                return
            raise_unexpected_state(state, txn_id)
        if conn.execute(
            select(_T2W.c.T2W_WRITEID).where(_T2W.c.T2W_TXNID == txn_id).limit(1)
        ).first():
            raise hms.MetaException(
                message=f"{txn_id_str(txn_id)} is REPL LOAD's own txn (replPolicy, DEFAULT) "
                "and holds write ids: its commit writes no COMMIT_TXN, so no reader's "
                "cache could learn of them; commit it without replPolicy"
            )
        self.commits.move_components_to_completed(conn, txn_id, "N")
        self.commits.finish_commit(conn, txn_id, kind, None, 0, True)

    def load_abort_txn(self, txn_id: int) -> None:
        """Abort REPL LOAD's own txn, with no ABORT_TXN event (aborting it again: no-op)."""

        def run(conn: Connection) -> None:
            if self.lock_open_txn(conn, txn_id) is None:
                state = self.find_txn_state(conn, txn_id)
                if state == ABORTED:
                    return
                raise_unexpected_state(state, txn_id)
            self.aborts.abort_in(conn, [txn_id], reason=ABORT_LOAD_TXN, replayed=True)

        self.db.transaction(run)

    # -- write ids ----------------------------------------------------------------------------

    def repl_allocate_write_ids(
        self, db: str, table: str, policy: str, src_pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """(target txn, write id) with the source's write ids; [] when a source txn is no
        longer mapped (it was committed or aborted before this replay)."""
        if not src_pairs:
            raise hms.MetaException(message="srcTxnToWriteIdList must not be empty")
        return self.db.transaction(lambda conn: self._allocate(conn, db, table, policy, src_pairs))

    def _allocate(
        self,
        conn: Connection,
        db: str,
        table: str,
        policy: str,
        src_pairs: Sequence[tuple[int, int]],
    ) -> list[tuple[int, int]]:
        mapped = self.target_txns(conn, policy, [s for s, _ in src_pairs])
        if len(mapped) != len({s for s, _ in src_pairs}):
            return []
        targets = sorted(mapped.values())
        for txn in targets:
            kind = self.lock_open_txn(conn, txn)
            if kind is None or kind == hms.TxnType.READ_ONLY:
                raise hms.MetaException(
                    message=f"Write ID allocation failed on {db}.{table} as not all input txns "
                    "in open state or read-only"
                )
        have = dict(
            conn.execute(
                select(_T2W.c.T2W_TXNID, _T2W.c.T2W_WRITEID).where(
                    _T2W.c.T2W_DATABASE == db,
                    _T2W.c.T2W_TABLE == table,
                    _T2W.c.T2W_TXNID.in_(targets),
                )
            ).all()
        )
        if len(have) == len(targets):
            return sorted((int(t), int(w)) for t, w in have.items())
        first = int(src_pairs[0][1])
        jumped = self._force_next_write_id(conn, db, table, first, first + len(targets))
        pairs = [(txn, first + i) for i, txn in enumerate(targets)]
        conn.execute(
            insert(_T2W),
            [
                {"T2W_TXNID": t, "T2W_DATABASE": db, "T2W_TABLE": table, "T2W_WRITEID": w}
                for t, w in pairs
            ],
        )
        body = self.messages.alloc_write_id(pairs, db, table)
        if jumped:
            body[msg.WRITE_IDS_FORCED] = True
        self.emit(conn, [NewEvent(msg.ALLOC_WRITE_ID_EVENT, body, None, db, table)])
        return pairs

    @staticmethod
    def _force_next_write_id(conn: Connection, db: str, table: str, first: int, nxt: int) -> bool:
        """NEXT_WRITE_ID := ``nxt``; True when ``first`` is not where the table's ids stood
        (then its TXN_TO_WRITE_ID rows go, as Hive wipes them)."""
        where = (_NWI.c.NWI_DATABASE == db, _NWI.c.NWI_TABLE == table)
        old = conn.execute(select(_NWI.c.NWI_NEXT).where(*where).with_for_update()).scalar()
        if old is None:
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(_NWI).values(NWI_DATABASE=db, NWI_TABLE=table, NWI_NEXT=nxt)
                    )
                return first != 1
            except IntegrityError:
                old = conn.execute(select(_NWI.c.NWI_NEXT).where(*where).with_for_update()).scalar()
        conn.execute(update(_NWI).where(*where).values(NWI_NEXT=nxt))
        if old is None or int(old) != first:
            conn.execute(delete(_T2W).where(_T2W.c.T2W_DATABASE == db, _T2W.c.T2W_TABLE == table))
            return True
        return False

    def repl_table_write_id_state(
        self, valid_write_ids: str, db: str, table: str, part_names: Sequence[str] = ()
    ) -> None:
        """Seed a bootstrapped table's write ids from the source's ValidWriteIdList: its
        aborted ids under aborted helper txns, NEXT_WRITE_ID after its hwm, and a MAJOR
        compaction per partition named (else for the table) to clean the aborted data.
        Nothing when the table already has write ids."""
        w = ValidReaderWriteIdList.parse(valid_write_ids)
        self.db.transaction(lambda conn: self._seed(conn, w, db, table, part_names))

    def _seed(
        self,
        conn: Connection,
        w: ValidReaderWriteIdList,
        db: str,
        table: str,
        part_names: Sequence[str],
    ) -> None:
        where = (_NWI.c.NWI_DATABASE == db, _NWI.c.NWI_TABLE == table)
        if conn.execute(select(_NWI.c.NWI_NEXT).where(*where)).first() is not None:
            return
        aborted = sorted(w.aborted_write_ids())
        if aborted:
            started: list[float] = []
            helpers = self.txns.insert_open_rows(
                conn, len(aborted), "repl", "", None, hms.TxnType.DEFAULT, started
            )
            conn.execute(
                insert(_T2W),
                [
                    {"T2W_TXNID": t, "T2W_DATABASE": db, "T2W_TABLE": table, "T2W_WRITEID": a}
                    for t, a in zip(helpers, aborted, strict=True)
                ],
            )
            self.aborts.abort_in(conn, helpers, reason=ABORT_WRITE_ID_STATE, replayed=True)
            # OPEN_TXN as Hive writes it, and (unlike Hive) the ABORT_TXN that ends them, so a
            # replica of this target does not replay helpers left open forever.
            body = self.messages.open_txn(helpers[0], helpers[-1])
            self.emit(conn, [NewEvent(msg.OPEN_TXN, body, cat_name=None)])
            self.aborts.emit_aborts(conn, dict.fromkeys(helpers, hms.TxnType.DEFAULT))
        hwm = w.high_watermark
        if hwm > 0 and hwm not in w.exceptions:
            self._mark_committed(conn, db, table, hwm)
        try:
            with conn.begin_nested():
                conn.execute(
                    insert(_NWI).values(NWI_DATABASE=db, NWI_TABLE=table, NWI_NEXT=hwm + 1)
                )
        except IntegrityError:
            return  # a concurrent seed won: the same state
        places: list[str | None] = [*part_names] or [None]
        for name in places if aborted else []:
            self.compaction.compact_in(
                conn,
                hms.CompactionRequest(
                    dbname=db, tablename=table, partitionname=name, type=hms.CompactionType.MAJOR
                ),
            )

    def _mark_committed(self, conn: Connection, db: str, table: str, hwm: int) -> None:
        """TXN_TO_WRITE_ID for the committed hwm under a committed helper txn (no events: it is
        never open to anyone). Hive writes only the aborted ids' rows, and its
        getValidWriteIdsForTable, finding no committed row, then answers the lowest aborted id
        as the hwm until the compactor cleans them: a replica reading less than the source
        committed. With this row the target answers the source's list."""
        helper = self.txns.insert_open_rows(conn, 1, "repl", "", None, hms.TxnType.DEFAULT, [])
        conn.execute(
            insert(_T2W).values(
                T2W_TXNID=helper[0], T2W_DATABASE=db, T2W_TABLE=table, T2W_WRITEID=hwm
            )
        )
        self.commits.finish_commit(conn, helper[0], hms.TxnType.DEFAULT, None, 0, False)

    # -- commit and abort ---------------------------------------------------------------------

    def repl_commit_in(
        self, conn: Connection, target: int, writes: Sequence[ReplWrite]
    ) -> list[NewEvent]:
        """Commit the target txn of a replayed commit in ``conn``: COMPLETED_TXN_COMPONENTS
        from the write-event infos (no write-set check: conflicts were settled on the source),
        the map row removed, the COMMIT_TXN event returned for the caller to write last.
        [] when the txn is already committed (a replay)."""
        kind = self.lock_open_txn(conn, target)
        if kind is None:
            state = self.find_txn_state(conn, target)
            if state == COMMITTED:
                conn.execute(delete(_RTM).where(_RTM.c.RTM_TARGET_TXN_ID == target))
                return []
            raise_unexpected_state(state, target)
        if writes:
            conn.execute(
                insert(schema.COMPLETED_TXN_COMPONENTS),
                [
                    {
                        "CTC_TXNID": target,
                        "CTC_DATABASE": w.db,
                        "CTC_TABLE": w.table,
                        "CTC_PARTITION": w.partition,
                        "CTC_WRITEID": w.write_id,
                        "CTC_UPDATE_DELETE": "N",
                    }
                    for w in writes
                ],
            )
        conn.execute(delete(_RTM).where(_RTM.c.RTM_TARGET_TXN_ID == target))
        events = self.commits.commit_events(conn, target)
        self.commits.finish_commit(conn, target, kind, None, 0, True)
        return events

    def repl_abort_txn(self, policy: str, src_txn: int) -> None:
        """Abort the target txn of a replayed abort (ABORT_TXN names the target txn, which
        the write ids of its ALLOC_WRITE_ID events name); nothing when not mapped."""
        self.db.transaction(lambda conn: self._repl_abort_txn_txn(conn, policy, src_txn))

    def _repl_abort_txn_txn(self, conn: Connection, policy: str, src_txn: int) -> None:
        target = self.target_txns(conn, policy, [src_txn]).get(src_txn)
        if target is None:
            return
        kind = self.lock_open_txn(conn, target)
        if kind is None:
            state = self.find_txn_state(conn, target)
            if state != ABORTED:
                raise_unexpected_state(state, target)
            conn.execute(delete(_RTM).where(_RTM.c.RTM_TARGET_TXN_ID == target))
            return
        self.aborts.abort_in(conn, [target], reason=ABORT_REPLAYED, replayed=True)
        self.aborts.emit_aborts(conn, {target: kind})


def repl_writes(infos: Sequence[Any]) -> list[ReplWrite]:
    """WriteEventInfo objects as ReplWrite (names lower-cased, as Hive stores them)."""
    return [
        ReplWrite(
            int(i.writeId),
            (i.database or "").strip().lower(),
            (i.table or "").strip().lower(),
            i.partition or None,
        )
        for i in infos
    ]
