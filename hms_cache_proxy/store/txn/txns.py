"""Transactions: open, list, heartbeat, dynamic-partition components (commit and abort are
``commit.py``'s and ``abort.py``'s).

Hive 4's TxnHandler semantics over the shared TXNS tables:

- Txn ids come from TXNS.TXN_ID (PostgreSQL's ``"TXNS_TXN_ID_seq"``, SQLite AUTOINCREMENT).
  Concurrent openers are not serialised, so an id can be taken but its row not yet visible.
  Readers therefore treat every id missing between two rows as *open* when the row after the
  gap is younger than ``open_txn_timeout_ms``, and an opener whose own transaction took longer
  than that deletes its rows and tries again (Hive's getOpenTxnsList / openTxns).
- openTxns takes TXN_LOCK_TBL in SHARE mode, a commit that updated or deleted takes it in
  EXCLUSIVE mode to fix its commit id: no txn opens while such a commit is being numbered.
- Every change of one txn starts with ``SELECT ... FOR UPDATE`` of its TXNS row.
- Committed rows stay in TXNS (state ``c``) until housekeeping removes the old ones.
- OPEN_TXN, COMMIT_TXN and ABORT_TXN events go to NOTIFICATION_LOG in the same database
  transaction (none for READ_ONLY txns, as Hive's DbNotificationListener). Our COMMIT_TXN also
  lists the txn's write ids, databases and tables (from TXN_TO_WRITE_ID), so a cache can tell
  which tables the commit makes visible.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    union_all,
    update,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import PooledCursor
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent, one_statement
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.abort import Abort
from hms_cache_proxy.store.txn.function_calls import FunctionCalls
from hms_cache_proxy.store.txn.txn_base import (
    ABORTED,
    COMMITTED,
    OP_DELETE,
    OP_UPDATE,
    OPEN,
    OPERATION_CODES,
    TXN_STATES,
    SettledTxns,
    TxnPart,
    TxnShared,
    raise_unexpected_state,
    settled_bounds,
    txn_id_str,
    txn_type_of,
)
from hms_cache_proxy.store.txn_snapshots import LONG_MAX, ValidReadTxnList, bitset_to_bytes

log = logging.getLogger(__name__)

_T = schema.TXNS
_OPEN_RETRIES = 10
_SETTLE_MARGIN_S = 1.0
_MARK_SPACING_S = 0.1
"""Reads at most this close together leave one mark for the settled floor between them (or
farther apart with a long open window: the marks kept must reach back past it)."""
_MARKS_KEPT = 64
_PREV_AT = 5
_PREV_AT_INFO = 9
"""Where prev_id sits in pgsql.open_txn_rows' rows (after the four info columns with info)."""
"""Slack on the open window before a read's top id may become the settled floor."""


@dataclass(frozen=True)
class TxnRow:
    """One entry of the open-txn list: a TXNS row that is open or aborted, or a gap (open)."""

    txn_id: int
    state: str
    txn_type: int
    user: str = ""
    host: str = ""
    started: int = 0
    last_heartbeat: int = 0


@dataclass(frozen=True)
class OpenTxnList:
    """Hive's OpenTxnList: the high-water mark and every txn at or below it not committed."""

    hwm: int
    txns: tuple[TxnRow, ...]

    def response(self, exclude_types: Iterable[int] = (hms.TxnType.READ_ONLY,)) -> Any:
        """GetOpenTxnsResponse (OpenTxnList.toOpenTxnsResponse).

        ``min_open_txn`` counts excluded txns too, abortedBits are by position in the list.
        """
        excluded = set(exclude_types)
        listed: list[int] = []
        bits = 0
        min_open: int | None = None
        for t in self.txns:
            if t.state == OPEN:
                min_open = t.txn_id if min_open is None else min(min_open, t.txn_id)
            if t.txn_type in excluded:
                continue
            listed.append(t.txn_id)
            if t.state == ABORTED:
                bits |= 1 << (len(listed) - 1)
        return hms.GetOpenTxnsResponse(
            txn_high_water_mark=self.hwm,
            open_txns=listed,
            min_open_txn=min_open,
            abortedBits=bitset_to_bytes(bits),
        )

    def snapshot(self) -> ValidReadTxnList:
        """``ValidReadTxnList.from_open_txns_response(self.response())`` (a read outside any
        txn) without the reply object and its bitset bytes: get_valid_write_ids' hot path."""
        exceptions: list[int] = []
        bits = 0
        min_open: int | None = None
        for t in self.txns:
            if t.txn_type == hms.TxnType.READ_ONLY:
                continue
            if t.state == ABORTED:
                bits |= 1 << len(exceptions)
            elif min_open is None:
                min_open = t.txn_id
            exceptions.append(t.txn_id)
        return ValidReadTxnList(exceptions, bits, self.hwm, min_open)

    def info_response(self) -> Any:
        """GetOpenTxnsInfoResponse: every listed txn with its user, host and times."""
        return hms.GetOpenTxnsInfoResponse(
            txn_high_water_mark=self.hwm,
            open_txns=[
                hms.TxnInfo(
                    id=t.txn_id,
                    state=TXN_STATES[t.state],
                    user=t.user,
                    hostname=t.host,
                    startedTime=t.started,
                    lastHeartbeatTime=t.last_heartbeat,
                )
                for t in self.txns
            ],
        )


class Txns(TxnPart):
    """open_txns, get_open_txns*, heartbeats, add_dynamic_partitions, conflict reads."""

    def __init__(self, shared: TxnShared, aborts: Abort) -> None:
        super().__init__(shared)
        self.aborts = aborts
        """An open that took too long withdraws its txns with ABORT_TXN events."""
        self._settled_lock = threading.Lock()
        self._settled_txns: SettledTxns | None = None
        self._settle_marks: collections.deque[tuple[int, float]] = collections.deque(
            maxlen=_MARKS_KEPT
        )
        """(top txn id, time after the read) of recent reads, oldest first: each becomes the
        floor once a read began the open window (plus a margin) after it."""
        self.functions = FunctionCalls(shared)

    # -- reading ------------------------------------------------------------------------------

    def open_txn_list(
        self, conn: Connection, info: bool = False, fresh_snapshot: bool = False
    ) -> OpenTxnList:
        """Hive's getOpenTxnsList, reading only the rows it needs.

        A gap counts as open only below a row younger than open_txn_timeout_ms, and then the
        gap reaches down to the row before it. Rows from the predecessor of the oldest young row
        upward are read whole; below it only the open and aborted rows (which are listed). With
        ``fresh_snapshot`` (this query takes the snapshot) the rows below the settled floor
        (``SettledTxns``) are skipped but for the few that were not committed, so the cost does
        not grow with the committed history Hive's cleaner would have removed.
        """
        settled = self._settled_txns if fresh_snapshot else None
        floor = settled.floor if settled else 0
        began = time.monotonic()  # before the query takes its snapshot
        if one_statement(conn):
            rows: Any = pgsql.open_txn_rows(
                conn,
                self.config.open_txn_timeout_ms,
                floor,
                sorted(settled.unsettled) if settled else [],
                info,
            )
            prev_at: int | None = _PREV_AT_INFO if info else _PREV_AT
        else:
            rows = conn.execute(self._open_txn_list_query(conn, info, floor, settled))
            prev_at = None
        return self._open_txn_list_of(rows, info, fresh_snapshot, began, prev_at)

    def open_txn_list_now(self, info: bool = False) -> OpenTxnList:
        """``open_txn_list`` of a fresh snapshot by one autocommit statement (one snapshot)
        through ``Database.autocommit_cursor``, on PostgreSQL through psycopg2, else through
        ``single_statement``. The same rows either way; the bare cursor spares the SQLAlchemy
        Connection, Result and Row objects of the hot get_open_txns."""
        if not self.db.folds_round_trips:
            with self.db.single_statement() as conn:
                return self.open_txn_list(conn, info=info, fresh_snapshot=True)
        settled = self._settled_txns
        began = time.monotonic()  # before the query takes its snapshot
        with self.db.autocommit_cursor() as cur:
            rows = pgsql.open_txn_rows(
                cur,
                self.config.open_txn_timeout_ms,
                *settled_bounds(settled),
                info,
            )
        return self._open_txn_list_of(rows, info, True, began, _PREV_AT_INFO if info else _PREV_AT)

    def open_txn_list_with_write_ids(
        self, on: Connection | PooledCursor, db: str, table: str
    ) -> tuple[OpenTxnList, int, bool, list[tuple[int, int]]]:
        """PostgreSQL through psycopg2: ``open_txn_list`` of a fresh snapshot and, from the
        same statement (one snapshot), the table's write-id hwm, whether a write id at or below
        it belongs to a txn that is not open or aborted, and the (txn, write id) rows of open or
        aborted txns, by write id. ``on``: a connection (inside a transaction) or
        ``Database.autocommit_cursor``'s cursor (a call of its own)."""
        settled = self._settled_txns
        began = time.monotonic()
        rows = pgsql.write_ids_now_rows(
            on,
            self.config.open_txn_timeout_ms,
            *settled_bounds(settled),
            db,
            table,
        )
        # Columns: kind, TXN_ID, TXN_STATE, TXN_TYPE, age, first_young, prev_id, write_id, found.
        listed = self._open_txn_list_of(
            [r[1:7] for r in rows if r[0] == "t"], False, True, began, _PREV_AT
        )
        hwm, found = 0, False
        writes: list[tuple[int, int]] = []
        for r in rows:
            kind = r[0]
            if kind == "w":
                writes.append((int(r[1]), int(r[7])))
            elif kind == "h":
                hwm, found = int(r[7]), bool(r[8])
        return listed, hwm, found, writes

    def settled_for_write_ids(self) -> SettledTxns | None:
        """The settled floor a write-id read may stand on (pgsql.table_write_ids_settled),
        after moving it with an open-txn read of its own when one is due: a server answering
        only get_valid_write_ids makes no other reads that move it (as open_txns, which reads
        the list itself when due). None until a read has set it. PostgreSQL only."""
        self._settle_if_due()
        return self._settled_txns

    def _settle_if_due(self) -> None:
        """On PostgreSQL, an open-txn read of its own when the settled floor is due to move."""
        if self.db.dialect == "postgresql" and self._settle_due():
            try:  # only moves the settled floor up: its refusals are get_open_txns' to report
                with self.db.single_statement() as conn:
                    self.open_txn_list(conn, fresh_snapshot=True)
            except hms.MetaException:
                pass

    def _open_txn_list_of(
        self,
        rows: Any,
        info: bool,
        fresh_snapshot: bool,
        began: float,
        prev_at: int | None,
        settle_all: bool = False,
    ) -> OpenTxnList:
        """open_txn_list from its query's rows (TXN_ID order), read after ``began``. Columns by
        position: TXN_ID, TXN_STATE, TXN_TYPE, age, first_young, with ``info`` the user, host,
        start and heartbeat, and at ``prev_at`` (PostgreSQL's statement) the id of the row
        before. ``settle_all``: read while no opener held an id it had not made visible
        (``settle_under_lock``), so the top id (or the first young row) is the floor now."""
        timeout = self.config.open_txn_timeout_ms
        txns: list[TxnRow] = []
        not_committed: list[int] = []
        hwm = 0
        previous = 0
        young: int | None = None
        for r in rows:
            txn_id = int(r[0])
            hwm = txn_id
            young = r[4]
            # PostgreSQL leaves out committed rows with no gap before them and says which row
            # came before each one it sends (prev_id); other databases send every row.
            before = None if prev_at is None else r[prev_at]
            before = previous if before is None else int(before)
            age = r[3]
            if age is not None and age < timeout:
                if txn_id - before - 1 > self.config.max_gap_fill:
                    raise hms.MetaException(
                        message=f"{txn_id - before - 1} txn ids missing from TXNS below "
                        f"{txn_id_str(txn_id)} inside the open-txn window: refusing to list them "
                        "all as open (is TXNS missing its older rows?)"
                    )
                txns.extend(
                    TxnRow(gap, OPEN, hms.TxnType.DEFAULT) for gap in range(before + 1, txn_id)
                )
            previous = txn_id
            state = r[1]
            if state == COMMITTED:
                continue
            not_committed.append(txn_id)
            if info:
                txns.append(
                    TxnRow(
                        txn_id,
                        state,
                        txn_type_of(r[2]),
                        r[5] or "",
                        r[6] or "",
                        int(r[7] or 0),
                        int(r[8] or 0),
                    )
                )
            else:
                txns.append(TxnRow(txn_id, state, txn_type_of(r[2])))
        if fresh_snapshot and hwm:
            self._settle(began, hwm, None if young is None else int(young), not_committed)
        if settle_all and hwm:
            self._settle_at(hwm if young is None else min(hwm, int(young)), not_committed)
        return OpenTxnList(hwm, tuple(txns))

    def _settle_at(self, floor: int, not_committed: list[int]) -> None:
        """Move the settled floor up to ``floor`` now (a read no opener was in the middle of)."""
        with self._settled_lock:
            self._raise_floor(floor, not_committed, time.monotonic())

    def _raise_floor(self, floor: int, not_committed: list[int], marked_at: float) -> None:
        """Make ``floor`` the settled floor if it is higher than the one there, with the ids of
        ``not_committed`` below it as unsettled (``_settled_lock`` held): ``_settle`` and
        ``_settle_at`` end here. ``marked_at``: when the read whose top id it is ended."""
        settled = self._settled_txns
        if settled is None or floor > settled.floor:
            unsettled = frozenset(t for t in not_committed if t < floor)
            self._settled_txns = SettledTxns(floor, unsettled, marked_at)

    def _open_txn_list_query(
        self, conn: Connection, info: bool, floor: int, settled: SettledTxns | None
    ) -> Any:
        """open_txn_list's query through SQLAlchemy (SQLite, other drivers)."""
        now = self.now_ms(conn)
        cut = now - self.config.open_txn_timeout_ms
        first_young = select(func.min(_T.c.TXN_ID)).where(
            _T.c.TXN_STARTED > cut, _T.c.TXN_ID >= floor
        )
        before_young = select(func.max(_T.c.TXN_ID)).where(
            _T.c.TXN_ID < first_young.scalar_subquery()
        )
        top = select(func.max(_T.c.TXN_ID))
        start = func.coalesce(
            before_young.scalar_subquery(), first_young.scalar_subquery(), top.scalar_subquery()
        )
        cols = [
            _T.c.TXN_ID,
            _T.c.TXN_STATE,
            _T.c.TXN_TYPE,
            (now - _T.c.TXN_STARTED).label("age"),
            first_young.scalar_subquery().label("first_young"),
        ]
        if info:
            cols += [_T.c.TXN_USER, _T.c.TXN_HOST, _T.c.TXN_STARTED, _T.c.TXN_LAST_HEARTBEAT]
        wanted: Any = or_(_T.c.TXN_STATE != COMMITTED, _T.c.TXN_ID >= start)
        query: Any = select(*cols).where(wanted).order_by(_T.c.TXN_ID)
        if settled:
            # Two index reads with constant bounds (an OR, or a bound the planner cannot see,
            # would scan the whole table): from the floor up, and below it the unsettled rows
            # and the row before the first young one (``start``, when it lies below the floor).
            below: Any = _T.c.TXN_ID == start
            if settled.unsettled:
                below = or_(below, _T.c.TXN_ID.in_(sorted(settled.unsettled)))
            both = union_all(
                select(*cols).where(_T.c.TXN_ID >= floor, wanted),
                select(*cols).where(_T.c.TXN_ID < floor, below),
            ).subquery()
            query = select(both).order_by(both.c.TXN_ID)
        return query

    def _settle_due(self) -> bool:
        """True when the next open-txn read would set or move the settled floor (without
        get_open_txns calls, open_txns makes that read itself, at most every few seconds)."""
        marks = self._settle_marks
        delay = self.settling_delay_s()
        return not marks or time.monotonic() >= marks[0][1] + delay

    def _settle(
        self, began: float, top: int, first_young: int | None, not_committed: list[int]
    ) -> None:
        """Move the settled floor up after a read that took its own snapshot after ``began``.

        The top txn id of one read becomes the floor once a later read's snapshot is more than
        the open window (plus a second) younger: every id below it was taken before that read,
        and an opener makes its rows visible within the window after taking its ids or
        withdraws them. The floor never passes a young row (the gap rules need the rows around
        those).

        Every read (at most one per ``_MARK_SPACING_S``) leaves a mark, and the newest mark old
        enough is used: under a steady stream of reads the floor trails the top by the window
        plus the margin, not by up to twice that (the rows between are what each open-txn read
        walks: after a burst of opens, thousands; issue 23).
        """
        with self._settled_lock:
            marks = self._settle_marks
            delay = self.config.open_txn_timeout_ms / 1000 + _SETTLE_MARGIN_S
            due: tuple[int, float] | None = None
            while marks and began >= marks[0][1] + delay:
                due = marks.popleft()
            if due is not None:
                floor = due[0] if first_young is None else min(due[0], first_young)
                self._raise_floor(floor, not_committed, due[1])
            now = time.monotonic()
            spacing = max(_MARK_SPACING_S, 2 * delay / _MARKS_KEPT)
            if not marks or now >= marks[-1][1] + spacing:
                marks.append((top, now))

    def settling_delay_s(self) -> float:
        """How much younger a read must be than a mark for the mark's top id to settle."""
        return self.config.open_txn_timeout_ms / 1000 + _SETTLE_MARGIN_S

    def settle_under_lock(self) -> bool:
        """Settle the floor at once (PostgreSQL): TXN_LOCK_TBL in EXCLUSIVE mode, as a commit
        numbering itself takes it, then the open-txn list from ``_settle_bound`` up. Every
        opener takes ids only under the SHARE lock and holds it until its rows are committed
        or rolled back, so once the lock is granted no id is taken but not yet visible: every
        id below the top is committed, gone for good or listed (unsettled), and the floor needs
        no second read an open window later. Like the time-based floor it stops at the first
        young row (the gap rules need the rows around those). Waits at most a second for the
        lock (opens and commits wait behind it as behind a commit); False when not on
        PostgreSQL.

        The read under the lock starts at the bound an unlocked read found first, and below it
        looks up only the ids that read listed: from id 0 it walked the whole committed history
        (TXNS has no index on TXN_STATE), about 15 ms with 100,000 rows, while every other
        instance's opens and commits waited (docs/benchmarks.md)."""
        if self.db.dialect != "postgresql":
            return False
        bound, listed = self._settle_bound()

        def read(conn: Connection) -> list[Any]:
            conn.execute(text("SET LOCAL lock_timeout = '1s'"))
            conn.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN EXCLUSIVE MODE'))
            window = self.config.open_txn_timeout_ms
            return list(pgsql.open_txn_rows(conn, window, bound, listed, False))

        rows = self.db.transaction(read)
        self._open_txn_list_of(rows, False, False, time.monotonic(), _PREV_AT, settle_all=True)
        return self._settled_txns is not None

    def _settle_bound(self) -> tuple[int, list[int]]:
        """Where ``settle_under_lock``'s read may start, and the ids below it it must read
        again, from an open-txn list read now without the lock: the bound is the lowest of the
        gaps that read counted as open, its first young row and its top (0 on an empty TXNS);
        the ids are the open and aborted rows it listed below the bound.

        Below the bound that read saw committed rows, those listed rows, and ids missing that
        it did not count as open; no id of the first or last kind comes back as a txn to list.
        Committed is final (a txn's state only goes from open to committed or aborted, so an
        aborted txn is one of the listed rows, read again); ids are taken increasing (a later
        opener's ids lie above the read's top); and an id missing below an old row is, by the
        gap rule every open-txn read applies (Hive's), no open txn: were its opener still to
        make it visible, that opener took longer than the open window and withdraws it
        (``open_txns``), the assumption the time-based floor (``_settle``) makes too. So with
        the bound as the floor of the read under the lock and the listed rows as its unsettled
        ids, that read walks a primary-key range from the bound and looks up the listed rows
        one by one, and lists what the read from id 0 would but such an overrunning opener's
        ids, which no read counted as open."""
        window = self.config.open_txn_timeout_ms
        with self.db.autocommit_cursor() as cur:
            rows = pgsql.open_txn_rows(cur, window, *settled_bounds(self._settled_txns), False)
        found = self._open_txn_list_of(rows, False, False, time.monotonic(), _PREV_AT)
        real = {int(r[0]) for r in rows if r[1] != COMMITTED}
        young = rows[-1][4] if rows else None
        gaps = [t.txn_id for t in found.txns if t.txn_id not in real]
        bound = min(gaps + ([] if young is None else [int(young)]), default=found.hwm)
        return bound, sorted(t for t in real if t < bound)

    def prime_settled_floor(self, stop: threading.Event) -> bool:
        """Settle the floor right after start (PostgreSQL only; ``stop`` cuts the wait short):
        ``settle_under_lock``, or when that fails (the lock not granted within its timeout,
        an error) the time-based way, the open-txn list read now and again once the first
        read may settle. Without a floor every open_txns with min-history on searches TXNS
        from id 0 for the lowest open txn, through all the committed history housekeeping
        has not removed yet (issue 23: a server started on a database with a long history
        opened at a fraction of the speed for its first seconds). True once the floor is set."""
        if self.db.dialect != "postgresql":
            return False
        try:
            if self.settle_under_lock():
                return True
        except Exception:  # noqa: BLE001 - the time-based way below does without the lock
            log.info("settling the open-txn floor under TXN_LOCK_TBL failed", exc_info=True)
        self.open_txn_list_now()  # the mark
        if stop.wait(self.settling_delay_s() + _MARK_SPACING_S):
            return False
        self.open_txn_list_now()  # began late enough: the mark's top id becomes the floor
        return self._settled_txns is not None

    def floor_bounds_watermark(self, settled: SettledTxns | None) -> bool:
        """Whether ``settled`` is recent enough for open_txns to take the MIN_HISTORY_LEVEL
        watermark from it (the lower of its floor and its unsettled txns still open) instead
        of Hive's two searches of TXNS (docs/compatibility.md, "The open-txn watermark").

        Any settled floor would be a safe watermark: every id below it is committed, gone or
        unsettled, every id at or above it is not below it. A recent one keeps it close to
        Hive's: the floor's read ended at most twice the settling delay plus a margin ago (5 s
        with the default open window), and open_txns reads the list itself when the floor is
        due to move, so under load the floor is never older than that; after a pause the
        first opens search TXNS as Hive does until a read has moved the floor again.
        """
        if settled is None:
            return False
        delay = self.config.open_txn_timeout_ms / 1000 + _SETTLE_MARGIN_S
        return time.monotonic() - settled.marked_at <= 2 * delay + _SETTLE_MARGIN_S

    def get_open_txns(self, exclude_types: Iterable[int] = (hms.TxnType.READ_ONLY,)) -> Any:
        return self.open_txn_list_now().response(exclude_types)  # one query, one snapshot

    def get_open_txns_info(self) -> Any:
        return self.open_txn_list_now(info=True).info_response()

    # -- opening ------------------------------------------------------------------------------

    def open_txns(
        self,
        num_txns: int,
        user: str,
        host: str,
        agent_info: str | None = None,
        txn_type: int = hms.TxnType.DEFAULT,
    ) -> list[int]:
        """Open ``num_txns`` txns (at most max_open_batch) and return their ids, ascending."""
        if num_txns is None or num_txns <= 0:
            raise hms.MetaException(message=f"Invalid input for number of txns: {num_txns}")
        n = min(num_txns, self.config.max_open_batch)
        timeout_s = self.config.open_txn_timeout_ms / 1000
        self._settle_if_due()
        for _ in range(_OPEN_RETRIES):
            started: list[float] = []
            settled = self._settled_txns  # taken before the transaction's snapshot

            def run(
                conn: Connection,
                started: list[float] = started,
                settled: SettledTxns | None = settled,
            ) -> list[int]:
                return self._open(conn, n, user, host, agent_info, txn_type, started, settled)

            if self.functions.usable():  # one round trip: plpgsql.OPEN_FUNCTION
                ids = self.functions.open_txns(
                    n,
                    user,
                    host,
                    agent_info,
                    txn_type,
                    started,
                    settled,
                    self.floor_bounds_watermark(settled),
                )
            else:
                ids = self.db.transaction(run)
            slow = started and time.monotonic() - started[-1] >= timeout_s
            if not slow or txn_type == hms.TxnType.READ_ONLY or self.db.dialect != "postgresql":
                return ids
            # Too slow: readers may already have decided these ids were not open. Withdraw them,
            # with the ABORT_TXN events their OPEN_TXN events call for (caches, replication).
            self.db.transaction(functools.partial(self._withdraw, ids=ids, txn_type=txn_type))
        raise hms.MetaException(
            message=f"Could not open transactions within metastore.txn.opentxn.timeout "
            f"({self.config.open_txn_timeout_ms} ms) after {_OPEN_RETRIES} attempts"
        )

    def _open(
        self,
        conn: Connection,
        n: int,
        user: str,
        host: str,
        agent_info: str | None,
        txn_type: int,
        started: list[float],
        settled: SettledTxns | None = None,
    ) -> list[int]:
        if one_statement(conn):
            sent = time.monotonic()
            params = pgsql.open_params(
                n,
                user or "",
                host or "",
                agent_info,
                txn_type,
                self.config.open_txn_timeout_ms,
                *settled_bounds(settled),
            )
            level = self.config.use_min_history_level
            on_floor = self.floor_bounds_watermark(settled)
            if txn_type == hms.TxnType.READ_ONLY:  # no event
                ids, lock_wait = pgsql.open_txns_with(conn, params, level, on_floor)
                started.append(sent + lock_wait)
                return ids
            # Two round trips: the txns and the event's sequence lock, then the event + COMMIT.
            reservation = self.events.reserve(
                conn,
                1,
                before=pgsql.open_keeping_sql(conn, level, on_floor),
                params=params,
                also=pgsql.OPEN_KEPT,
            )
            ids, lock_wait = pgsql.opened(reservation.extra)
            started.append(sent + lock_wait)
            body = self.messages.open_txn(ids[0], ids[-1])
            self.events.write(
                conn, reservation, [NewEvent(msg.OPEN_TXN, body, cat_name=None)], last=True
            )
            return ids
        ids = self.insert_open_rows(conn, n, user, host, agent_info, txn_type, started)
        self._emit_open(conn, ids, txn_type)
        return ids

    def insert_open_rows(
        self,
        conn: Connection,
        n: int,
        user: str,
        host: str,
        agent_info: str | None,
        txn_type: int,
        started: list[float],
    ) -> list[int]:
        """The TXNS and MIN_HISTORY_LEVEL rows of ``n`` new open txns (no event); ``started``
        gets the moment the ids were taken (the open window starts there)."""
        if conn.dialect.name == "postgresql":
            conn.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN SHARE MODE'))
        now = self.now_ms(conn)
        row = {
            "TXN_STATE": OPEN,
            "TXN_STARTED": now,
            "TXN_LAST_HEARTBEAT": now,
            "TXN_USER": user or "",
            "TXN_HOST": host or "",
            "TXN_AGENT_INFO": agent_info,
            "TXN_TYPE": txn_type,
        }
        started.append(time.monotonic())
        stmt = insert(_T).values([row] * n).returning(_T.c.TXN_ID)
        ids = sorted(int(i) for i in conn.execute(stmt).scalars())
        if self.config.use_min_history_level:
            # Each new txn's MIN_HISTORY_LEVEL row holds the open-txn watermark. Computed after
            # the insert it also sees the new txns, which changes nothing: they are above it.
            mark = self._watermark_expr(conn, _T.c.TXN_ID)
            conn.execute(
                insert(schema.MIN_HISTORY_LEVEL).from_select(
                    ["MHL_TXNID", "MHL_MIN_OPEN_TXNID"],
                    select(_T.c.TXN_ID, mark).where(_T.c.TXN_ID.in_(ids)),
                )
            )
        return ids

    def _emit_open(self, conn: Connection, ids: list[int], txn_type: int) -> None:
        if txn_type != hms.TxnType.READ_ONLY:
            body = self.messages.open_txn(ids[0], ids[-1])
            self.emit(conn, [NewEvent(msg.OPEN_TXN, body, cat_name=None)])

    def _watermark_expr(self, conn: Connection, fallback: Any) -> Any:
        """SQL for min(lowest open txn, highest txn begun before the open window + 1)."""
        cut = self.now_ms(conn) - self.config.open_txn_timeout_ms
        min_open = select(func.min(_T.c.TXN_ID)).where(_T.c.TXN_STATE == OPEN).scalar_subquery()
        low = select(func.max(_T.c.TXN_ID)).where(_T.c.TXN_STARTED < cut).scalar_subquery()
        bound = func.coalesce(low + 1, fallback)
        least = func.least if conn.dialect.name == "postgresql" else func.min
        return least(func.coalesce(min_open, bound), bound)

    def min_open_txn_watermark(self, conn: Connection) -> int:
        """Hive's getMinOpenTxnIdWaterMark: no txn below it is or can become open."""
        cut = self.now_ms(conn) - self.config.open_txn_timeout_ms
        min_open = select(func.min(_T.c.TXN_ID)).where(_T.c.TXN_STATE == OPEN).scalar_subquery()
        low = select(func.max(_T.c.TXN_ID)).where(_T.c.TXN_STARTED < cut).scalar_subquery()
        found, low_mark = conn.execute(select(min_open, low)).one()
        if low_mark is None:
            raise hms.MetaException(
                message="Transaction tables not properly initialized, null record found in "
                "MAX(TXN_ID)"
            )
        candidates = [int(low_mark) + 1] + ([int(found)] if found is not None else [])
        return min(candidates)

    def min_txn_id_seen_open(self, conn: Connection) -> int:
        """Hive's findMinTxnIdSeenOpen: the lowest txn any open txn's snapshot may hold as
        open (MIN_HISTORY_LEVEL); LONG_MAX when there is no row, or when the level switch is
        off or the write-id switch on (Hive reads no MIN_HISTORY_LEVEL then)."""
        if not self.config.use_min_history_level or self.config.use_min_history_write_id:
            return LONG_MAX
        mhl = schema.MIN_HISTORY_LEVEL
        found = conn.execute(select(func.min(mhl.c.MHL_MIN_OPEN_TXNID))).scalar()
        return LONG_MAX if found is None else int(found)

    def _withdraw(self, conn: Connection, ids: Sequence[int], txn_type: int) -> None:
        self.delete_txns(conn, ids)
        self.aborts.emit_aborts(conn, dict.fromkeys(ids, txn_type))

    @staticmethod
    def delete_txns(conn: Connection, ids: Sequence[int]) -> None:
        mh = schema.MIN_HISTORY_LEVEL
        conn.execute(delete(mh).where(mh.c.MHL_TXNID.in_(ids)))
        conn.execute(delete(_T).where(_T.c.TXN_ID.in_(ids)))

    # -- heartbeats ---------------------------------------------------------------------------

    def heartbeat_txn_in(self, conn: Connection, txn_id: int) -> None:
        """Hive's heartbeatTxn: refresh an open txn, else raise naming its state."""
        if txn_id == 0:
            return
        if one_statement(conn):
            rc = pgsql.heartbeat_txn(conn, txn_id)
        else:
            rc = conn.execute(
                update(_T)
                .where(_T.c.TXN_ID == txn_id, _T.c.TXN_STATE == OPEN)
                .values(TXN_LAST_HEARTBEAT=self.now_ms(conn))
            ).rowcount
        if rc < 1:
            raise_unexpected_state(self.find_txn_state(conn, txn_id), txn_id)

    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]:
        """Heartbeat txns low..high; returns (aborted, nosuch) among them."""
        if high - low + 1 > self.config.max_heartbeat_range:
            raise hms.MetaException(
                message=f"heartbeat_txn_range of {high - low + 1} txns: at most "
                f"{self.config.max_heartbeat_range} at once"
            )
        if high < low:
            return set(), set()

        return self.db.transaction(lambda conn: self._heartbeat_txn_range_txn(conn, low, high))

    def _heartbeat_txn_range_txn(
        self, conn: Connection, low: int, high: int
    ) -> tuple[set[int], set[int]]:
        rc = conn.execute(
            update(_T)
            .where(_T.c.TXN_ID.between(low, high), _T.c.TXN_STATE == OPEN)
            .values(TXN_LAST_HEARTBEAT=self.now_ms(conn))
        ).rowcount
        if rc == high - low + 1:
            return set(), set()
        states = dict(
            conn.execute(
                select(_T.c.TXN_ID, _T.c.TXN_STATE).where(_T.c.TXN_ID.between(low, high))
            ).all()
        )
        aborted = {t for t in range(low, high + 1) if states.get(t) == ABORTED}
        nosuch = {t for t in range(low, high + 1) if states.get(t) not in (OPEN, ABORTED)}
        return aborted, nosuch

    # -- dynamic partitions -------------------------------------------------------------------

    def add_dynamic_partitions(
        self,
        txn_id: int,
        write_id: int,
        db: str,
        table: str,
        partition_names: Sequence[str],
        operation_type: int | None,
    ) -> None:
        """Record the partitions a dynamic-partition write touched (Hive's addDynamicPartitions).

        They replace the table-level component the lock recorded, so the commit and the
        compactor see the partitions actually written.
        """
        op = OPERATION_CODES.get(operation_type, OP_UPDATE)  # unset: the most restrictive
        self.db.transaction(
            lambda conn: self._add_dynamic_partitions_txn(
                conn, txn_id, write_id, db, table, partition_names, op
            )
        )

    def _add_dynamic_partitions_txn(
        self,
        conn: Connection,
        txn_id: int,
        write_id: int,
        db: str,
        table: str,
        partition_names: Sequence[str],
        op: str,
    ) -> None:
        tc = schema.TXN_COMPONENTS
        self.require_open_txn(conn, txn_id)
        if partition_names:
            conn.execute(
                insert(tc),
                [
                    {
                        "TC_TXNID": txn_id,
                        "TC_DATABASE": db,
                        "TC_TABLE": table,
                        "TC_PARTITION": name,
                        "TC_OPERATION_TYPE": op,
                        "TC_WRITEID": write_id,
                    }
                    for name in partition_names
                ],
            )
        conn.execute(
            delete(tc).where(
                tc.c.TC_TXNID == txn_id,
                tc.c.TC_DATABASE == db,
                tc.c.TC_TABLE == table,
                tc.c.TC_PARTITION.is_(None),
            )
        )

    # -- conflicts ----------------------------------------------------------------------------

    def databases_touched(
        self, txn_ids: Sequence[int] = (), lock_ids: Sequence[int] = ()
    ) -> set[str]:
        """The databases the transactions (their components, write ids and locks) and the
        locks name: who may commit, abort or unlock them (handler/access.py)."""
        tc, t2w, hl = schema.TXN_COMPONENTS, schema.TXN_TO_WRITE_ID, schema.HIVE_LOCKS
        queries = []
        if txn_ids:
            ids = sorted({int(t) for t in txn_ids})
            queries += [
                select(tc.c.TC_DATABASE).where(tc.c.TC_TXNID.in_(ids)),
                select(t2w.c.T2W_DATABASE).where(t2w.c.T2W_TXNID.in_(ids)),
                select(hl.c.HL_DB).where(hl.c.HL_TXNID.in_(ids)),
            ]
        if lock_ids:
            locks = sorted({int(lock) for lock in lock_ids})
            queries.append(select(hl.c.HL_DB).where(hl.c.HL_LOCK_EXT_ID.in_(locks)))
        found: set[str] = set()
        with self.db.read() as conn:
            for query in queries:
                found.update(r[0].lower() for r in conn.execute(query.distinct()) if r[0])
        return found

    def latest_txn_in_conflict(self, txn_id: int) -> int:
        """Hive's getLatestTxnIdInConflict: the newest committed txn updating what this one did."""
        ws, tc = schema.WRITE_SET, schema.TXN_COMPONENTS
        cur = (
            select(
                tc.c.TC_DATABASE.label("db"),
                tc.c.TC_TABLE.label("tbl"),
                tc.c.TC_PARTITION.label("part"),
                tc.c.TC_TXNID.label("txn"),
            )
            .where(tc.c.TC_TXNID == txn_id, tc.c.TC_OPERATION_TYPE.in_([OP_UPDATE, OP_DELETE]))
            .distinct()
            .subquery()
        )
        query = (
            select(func.max(ws.c.WS_TXNID))
            .select_from(
                ws.join(
                    cur,
                    and_(
                        ws.c.WS_DATABASE == cur.c.db,
                        ws.c.WS_TABLE == cur.c.tbl,
                        or_(ws.c.WS_PARTITION == cur.c.part, cur.c.part.is_(None)),
                    ),
                )
            )
            .where(cur.c.txn <= ws.c.WS_COMMIT_ID)
        )
        with self.db.read() as conn:
            found = conn.execute(query).scalar()
        return -1 if found is None else int(found)
