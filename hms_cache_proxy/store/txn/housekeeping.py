"""Housekeeping: end what clients abandoned, and keep the txn tables small.

Every ``interval`` seconds, as Hive's AcidHouseKeeperService and AcidTxnCleanerService do:

1. Timeouts (Hive's performTimeOuts): delete txn-less locks whose HL_LAST_HEARTBEAT is older
   than the txn timeout, and abort open txns whose TXN_LAST_HEARTBEAT is (REPL_CREATED txns,
   never heartbeated, after the replication txn timeout instead; their database is marked
   ``repl.incompatible`` by the abort), releasing their locks and writing ABORT_TXN events.
   Rows being changed by a concurrent commit or heartbeat are skipped (``FOR UPDATE SKIP
   LOCKED``), so a txn is never both committed and aborted.
2. Cleaning: committed and aborted txns with no TXN_COMPONENTS below the open-txn low-water
   mark leave TXNS (cleanEmptyAbortedAndCommittedTxns); TXN_TO_WRITE_ID rows of txns below the
   lowest txn any open txn may still see as uncommitted are deleted (cleanTxnToWriteIdTable);
   WRITE_SET rows no open txn can conflict with are deleted (performWriteSetGC). Without this,
   get_open_txns and get_valid_write_ids would read every txn ever made. The lowest txn kept
   in TXN_TO_WRITE_ID follows Hive 4's two paths (``TxnConfig.use_min_history_level``).

On PostgreSQL each round takes a transaction-scoped advisory lock first, so with several
instances on one database one does the work and the others skip the round. With a lease
(``txn_housekeeping: lease``) only the instance holding it runs rounds at all.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, delete, func, or_, select, text, union_all

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn.txn_base import (
    ABORT_TIMEOUT,
    ABORTED,
    COMMITTED,
    OPEN,
    txn_type_of,
)
from hms_cache_proxy.store.txn.txn_service import TxnService

log = logging.getLogger(__name__)

_ADVISORY_KEY = 0x484D5354584E  # "HMSTXN"


@dataclass
class HousekeepingResult:
    """What one round did (for logs and tests)."""

    locks_expired: int = 0
    txns_aborted: list[int] = field(default_factory=list)
    txns_removed: int = 0
    write_ids_removed: int = 0
    write_sets_removed: int = 0
    min_history_removed: int = 0
    skipped: bool = False


def _exclusive_round(conn: Connection) -> bool:
    """Only one instance at a time (PostgreSQL advisory lock; SQLite has one writer anyway)."""
    if conn.dialect.name != "postgresql":
        return True
    got = conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": _ADVISORY_KEY})
    return bool(got.scalar())


def perform_timeouts(service: TxnService) -> HousekeepingResult:
    """Expire txn-less locks and abort txns whose heartbeat is older than the txn timeout."""
    result = HousekeepingResult()
    hl, t = schema.HIVE_LOCKS, schema.TXNS
    timeout = service.config.timeout_ms

    def expire_locks(conn: Connection) -> int | None:
        if not _exclusive_round(conn):
            return None
        cut = service.txns.now_ms(conn) - timeout
        rc = conn.execute(
            delete(hl).where(hl.c.HL_TXNID == 0, hl.c.HL_LAST_HEARTBEAT < cut)
        ).rowcount
        return int(rc)

    expired = service.db.transaction(expire_locks)
    if expired is None:
        result.skipped = True
        return result
    result.locks_expired = expired

    def abort_batch(conn: Connection) -> list[int]:
        now = service.txns.now_ms(conn)
        replayed = t.c.TXN_TYPE == hms.TxnType.REPL_CREATED
        rows = conn.execute(
            select(t.c.TXN_ID, t.c.TXN_TYPE)
            .where(
                t.c.TXN_STATE == OPEN,
                or_(
                    and_(
                        or_(t.c.TXN_TYPE.is_(None), ~replayed),
                        t.c.TXN_LAST_HEARTBEAT < now - timeout,
                    ),
                    and_(replayed, t.c.TXN_LAST_HEARTBEAT < now - service.config.repl_timeout_ms),
                ),
            )
            .order_by(t.c.TXN_ID)
            .limit(service.config.abort_batch)
            .with_for_update(skip_locked=True)
        ).all()
        types = {int(r[0]): txn_type_of(r[1]) for r in rows}
        service.aborts.abort_in(conn, list(types), reason=ABORT_TIMEOUT)
        service.aborts.emit_aborts(conn, types)
        return sorted(types)

    while True:
        batch = service.db.transaction(abort_batch)
        result.txns_aborted.extend(batch)
        if len(batch) < service.config.abort_batch:
            break
    if result.locks_expired or result.txns_aborted:
        log.info(
            "housekeeping: %d txn-less locks expired, aborted timed-out txns %s",
            result.locks_expired,
            result.txns_aborted,
        )
    return result


def clean_txn_tables(
    service: TxnService, result: HousekeepingResult | None = None
) -> HousekeepingResult:
    """Remove rows no reader needs any more from TXNS, TXN_TO_WRITE_ID and WRITE_SET (and
    the min-history rows of ended txns that a switched-off table still holds)."""
    result = result or HousekeepingResult()
    t, tc, t2w, ws = schema.TXNS, schema.TXN_COMPONENTS, schema.TXN_TO_WRITE_ID, schema.WRITE_SET

    def run(conn: Connection) -> None:
        if not _exclusive_round(conn):
            result.skipped = True
            return
        # First: MIN_HISTORY_WRITE_ID rows refer to their TXNS rows.
        result.min_history_removed = _forget_switched_off(service, conn)
        cut = service.txns.now_ms(conn) - service.config.open_txn_timeout_ms
        # The highest txn that began before the open window: nothing below it can still appear.
        low = conn.execute(select(func.max(t.c.TXN_ID)).where(t.c.TXN_STARTED < cut)).scalar()
        if low is not None:
            result.txns_removed = int(
                conn.execute(
                    delete(t).where(
                        t.c.TXN_ID.not_in(select(tc.c.TC_TXNID)),
                        t.c.TXN_STATE.in_([ABORTED, COMMITTED]),
                        t.c.TXN_ID < int(low),
                    )
                ).rowcount
            )
        floor = conn.execute(select(func.min(_write_id_bounds(service).c.id))).scalar()
        if floor is not None:
            floor = min(int(floor), service.txns.min_txn_id_seen_open(conn))
            result.write_ids_removed = int(
                conn.execute(delete(t2w).where(t2w.c.T2W_TXNID < floor)).rowcount
            )
        mark = service.txns.min_open_txn_watermark(conn)
        result.write_sets_removed = int(
            conn.execute(delete(ws).where(ws.c.WS_COMMIT_ID < mark)).rowcount
        )

    service.db.transaction(run)
    return result


def _write_id_bounds(service: TxnService) -> Any:
    """cleanTxnToWriteIdTable's candidates for the lowest txn some open txn may still see as
    not committed: the next txn id and the lowest open or aborted txn; without
    MIN_HISTORY_LEVEL (whose lowest watermark the caller adds) also the lowest txn with a
    WRITE_SET row, as Hive 4 does."""
    t, ws = schema.TXNS, schema.WRITE_SET
    parts = [
        select((func.max(t.c.TXN_ID) + 1).label("id")),
        select(func.min(t.c.TXN_ID).label("id")).where(t.c.TXN_STATE.in_([ABORTED, OPEN])),
    ]
    if not service.config.use_min_history_level:
        parts.append(select(func.min(ws.c.WS_TXNID).label("id")))
    return union_all(*parts).subquery()


def _forget_switched_off(service: TxnService, conn: Connection) -> int:
    """With a min-history switch off commit and abort leave that table alone (as Hive's), so
    rows of ended txns written while it was on (or by a metastore that has it on and stopped)
    are removed here; rows of open txns stay for whoever wrote them."""
    t, mhl, mhw = schema.TXNS, schema.MIN_HISTORY_LEVEL, schema.MIN_HISTORY_WRITE_ID
    still_open = select(t.c.TXN_ID).where(t.c.TXN_STATE == OPEN)
    removed = 0
    if not service.config.use_min_history_level:
        removed += conn.execute(delete(mhl).where(mhl.c.MHL_TXNID.not_in(still_open))).rowcount
    if not service.config.use_min_history_write_id:
        removed += conn.execute(delete(mhw).where(mhw.c.MH_TXNID.not_in(still_open))).rowcount
    return int(removed)


def run_once(service: TxnService) -> HousekeepingResult:
    """One round: timeouts, then cleaning."""
    result = perform_timeouts(service)
    if not result.skipped:
        clean_txn_tables(service, result)
    return result


class Housekeeper:
    """A daemon thread running ``run_once`` every ``interval_seconds`` (0: never)."""

    def __init__(
        self,
        service: TxnService,
        interval_seconds: float,
        holds_lease: Callable[[], bool] | None = None,
    ) -> None:
        self.service = service
        self.interval_seconds = interval_seconds
        self.holds_lease = holds_lease
        """When set, a round runs only while this says the instance holds the lease (the
        other instances then touch no connection for housekeeping)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0

    def start(self) -> None:
        if self.interval_seconds <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="hms-txn-housekeeping", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            if self.holds_lease is not None and not self.holds_lease():
                continue
            try:
                run_once(self.service)
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("transaction housekeeping failed")
            self.rounds += 1

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
