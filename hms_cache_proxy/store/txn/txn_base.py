"""What the transaction service's parts share: Hive's codes, clock, settings and txn-state checks.

The TXNS, HIVE_LOCKS and friends are shared with stock Java metastores, so every value written
here is the one Hive's TxnHandler writes (Hive 4.0, ``standalone-metastore/metastore-server``):

- TXN_STATE: ``o`` open, ``a`` aborted, ``c`` committed (``TxnStatus``).
- HL_LOCK_STATE: ``a`` acquired, ``w`` waiting; HL_LOCK_TYPE: ``r`` SHARED_READ, ``w``
  SHARED_WRITE, ``x`` EXCL_WRITE, ``e`` EXCLUSIVE (``LockTypeUtil``).
- TC_OPERATION_TYPE: ``s`` select, ``i`` insert, ``u`` update, ``d`` delete, ``c`` compact
  (``OperationType``).
- Times (TXN_STARTED, TXN_LAST_HEARTBEAT, HL_LAST_HEARTBEAT, HL_ACQUIRED_AT) are epoch
  milliseconds taken from the database's clock (``TxnUtils.getEpochFn``), so metastores on
  hosts with skewed clocks agree on timeouts. SQLite is embedded: this process's clock.

Error texts are Hive's, byte for byte (``TxnUtils.raiseTxnUnexpectedState``,
``JavaUtils.txnIdToString``): clients and people grep for ``txnid:5``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from sqlalchemy import BigInteger, Connection, cast, delete, extract, func, literal, select
from sqlalchemy.sql.elements import ColumnElement

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import EventLog, NewEvent
from hms_cache_proxy.store.events.messages import MessageBuilder

# -- TXNS.TXN_STATE (TxnStatus); "u" is never stored: Hive's UNKNOWN (no such row) -------------
OPEN, ABORTED, COMMITTED, UNKNOWN = "o", "a", "c", "u"

# -- HIVE_LOCKS.HL_LOCK_STATE ---------------------------------------------------------------------
LOCK_ACQUIRED, LOCK_WAITING = "a", "w"

# -- HIVE_LOCKS.HL_LOCK_TYPE (LockTypeUtil) -------------------------------------------------------
SHARED_READ, SHARED_WRITE, EXCL_WRITE, EXCLUSIVE = "r", "w", "x", "e"
LOCK_TYPE_CODES: dict[int, str] = {
    hms.LockType.SHARED_READ: SHARED_READ,
    hms.LockType.SHARED_WRITE: SHARED_WRITE,
    hms.LockType.EXCL_WRITE: EXCL_WRITE,
    hms.LockType.EXCLUSIVE: EXCLUSIVE,
}
LOCK_TYPES: dict[str, int] = {v: k for k, v in LOCK_TYPE_CODES.items()}

# -- TXN_COMPONENTS.TC_OPERATION_TYPE (OperationType) ---------------------------------------------
OP_SELECT, OP_INSERT, OP_UPDATE, OP_DELETE, OP_COMPACT = "s", "i", "u", "d", "c"
OPERATION_CODES: dict[int | None, str] = {
    hms.DataOperationType.SELECT: OP_SELECT,
    hms.DataOperationType.INSERT: OP_INSERT,
    hms.DataOperationType.UPDATE: OP_UPDATE,
    hms.DataOperationType.DELETE: OP_DELETE,
}

TXN_STATES: dict[str, int] = {
    OPEN: hms.TxnState.OPEN,
    ABORTED: hms.TxnState.ABORTED,
    COMMITTED: hms.TxnState.COMMITTED,
}

COMPACTION_TYPES = frozenset({hms.TxnType.COMPACTION, hms.TxnType.REBALANCE_COMPACTION})

TXN_KEY_START = "_meta"
"""CommitTxnRequest.keyValue keys must start with this (TxnStore.TXN_KEY_START)."""

# TxnErrorMsg: the reason Hive records in TXNS.TXN_META_INFO when it aborts a txn.
ABORT_REASONS: dict[int, str] = {
    50000: "none",
    50001: "abort by query command",
    50002: "concurrent committed transaction",
    50003: "write conflicts",
    50004: "heartbeat time-out",
    50005: "rollback",
    50006: "compaction transaction abort",
    50007: "msck transaction abort",
    50008: "managed migration transaction abort",
}
ABORT_NONE, ABORT_WRITE_CONFLICT, ABORT_TIMEOUT = "none", "write conflicts", "heartbeat time-out"


def abort_reason(error_code: int | None) -> str:
    """TxnErrorMsg.getTxnErrorMsg(code) (``none`` for unknown or absent codes)."""
    return ABORT_REASONS.get(error_code, ABORT_NONE) if error_code is not None else ABORT_NONE


def txn_id_str(txn_id: int) -> str:
    """JavaUtils.txnIdToString: how every Hive message names a transaction."""
    return f"txnid:{txn_id}"


def lock_id_str(lock_id: int) -> str:
    """JavaUtils.lockIdToString."""
    return f"lockid:{lock_id}"


def txn_type_of(value: int | None) -> int:
    """TXNS.TXN_TYPE as a TxnType (rows written by old metastores have NULL: DEFAULT)."""
    return hms.TxnType.DEFAULT if value is None else int(value)


def raise_unexpected_state(state: str, txn_id: int) -> NoReturn:
    """TxnUtils.raiseTxnUnexpectedState: the declared exception naming the txn and its state."""
    tid = txn_id_str(txn_id)
    if state == ABORTED:
        raise hms.TxnAbortedException(message=f"Transaction {tid} already aborted")
    if state == COMMITTED:
        raise hms.NoSuchTxnException(message=f"Transaction {tid} is already committed.")
    if state == UNKNOWN:
        raise hms.NoSuchTxnException(message=f"No such transaction {tid}")
    raise hms.NoSuchTxnException(message=f"{tid} is OPEN")


@dataclass(frozen=True)
class TxnConfig:
    """The service's knobs, named after Hive's MetastoreConf keys they mirror."""

    timeout_ms: int = 300_000
    """metastore.txn.timeout: a txn or txn-less lock not heartbeated for this long is ended."""
    repl_timeout_ms: int = 950_400_000
    """metastore.repl.txn.timeout: a replayed (REPL_CREATED) txn, never heartbeated, open this
    long is aborted (11 days)."""
    open_txn_timeout_ms: int = 1_000
    """metastore.txn.opentxn.timeout: how long a TXNS id may stay invisible while being opened."""
    max_open_batch: int = 1_000
    """metastore.txn.max.open.batch: most txns one open_txns call opens."""
    abort_batch: int = 1_000
    """Most timed-out txns aborted in one database transaction."""
    max_heartbeat_range: int = 100_000
    """Most txns one heartbeat_txn_range may name (Hive has no limit; memory must)."""
    max_gap_fill: int = 100_000
    """Most missing TXNS ids one gap may report as open (Hive's txn.opentxn.gapfill.max)."""
    use_min_history_level: bool = True
    """metastore.txn.use.minhistorylevel: each opened txn records the open-txn watermark in
    MIN_HISTORY_LEVEL, and TXN_TO_WRITE_ID is kept down to the lowest one recorded. False
    (Hive 4's openTxn optimisation): no watermark, no row; commits record inserts in
    WRITE_SET too, and the cleaning keeps the write ids of every open or aborted txn and of
    those with a WRITE_SET row instead."""
    use_min_history_write_id: bool = False
    """metastore.txn.use.minhistorywriteid: HiveServer2 records each txn's lowest open write id
    per table in MIN_HISTORY_WRITE_ID (add_write_ids_to_min_history), and the Cleaner's
    watermark is per table instead of the global lowest open txn."""
    server_functions: bool = False
    """PostgreSQL: call the installed functions of ``plpgsql.py`` (``install``) for open_txns
    and commit_txn, one round trip each."""


@dataclass(frozen=True)
class SettledTxns:
    """What an earlier open-txn list proved about old TXNS rows: below ``floor`` every row is
    committed (or gone) but the ``unsettled`` ones (open or aborted then, maybe ended since).
    It stays true: committed is final, and no opener can still add a row below the floor."""

    floor: int
    unsettled: frozenset[int]
    marked_at: float = float("-inf")
    """When the read whose top id became the floor ended (``time.monotonic()``): the floor
    holds no id taken after it, and the open-txn watermark may stand on a recent floor
    (``Txns.floor_bounds_watermark``)."""


def settled_bounds(settled: SettledTxns | None) -> tuple[int, list[int]]:
    """``settled``'s floor and its unsettled ids in order, as the open-txn statements take
    them; (0, []) without one: every row is read."""
    return (settled.floor, sorted(settled.unsettled)) if settled else (0, [])


class TxnShared:
    """What every part of the service works with: the database, the event log, the settings
    and the clock, made once per service."""

    def __init__(
        self,
        db: Database,
        events: EventLog,
        messages: MessageBuilder,
        config: TxnConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.events = events
        self.messages = messages
        self.config = config or TxnConfig()
        self.clock = clock


class TxnPart:
    """One part of the transaction service (txns, write ids, locks, ...): the shared
    collaborators and the txn-state checks every part makes. A part that uses another is
    given it in its constructor."""

    def __init__(self, shared: TxnShared) -> None:
        self.db = shared.db
        self.events = shared.events
        self.messages = shared.messages
        self.config = shared.config
        self._clock = shared.clock

    # -- clock --------------------------------------------------------------------------------

    def now_ms(self, conn: Connection) -> ColumnElement[Any]:
        """The current epoch milliseconds as a SQL expression (the database's clock).

        On PostgreSQL it is the transaction's start (``current_timestamp``), as Hive's getEpochFn.
        """
        if conn.dialect.name == "postgresql":
            return cast(func.floor(extract("epoch", func.current_timestamp()) * 1000), BigInteger)
        return literal(int(self._clock() * 1000), BigInteger)

    def now_ms_value(self, conn: Connection) -> int:
        """``now_ms`` evaluated (one round trip on PostgreSQL)."""
        if conn.dialect.name == "postgresql":
            return int(conn.execute(select(self.now_ms(conn))).scalar_one())
        return int(self._clock() * 1000)

    # -- txn state ----------------------------------------------------------------------------

    @staticmethod
    def lock_open_txn(conn: Connection, txn_id: int, *, shared: bool = False) -> int | None:
        """The TxnType of ``txn_id`` if it is open, its TXNS row locked; None otherwise.

        Every operation on a txn starts here (``SELECT ... FOR UPDATE`` on its row), so commit,
        abort, lock and write-id allocation of one txn never interleave (Hive's
        getOpenTxnTypeAndLock). ``shared`` takes a share lock (FOR SHARE) instead.
        """
        t = schema.TXNS
        stmt = (
            select(t.c.TXN_TYPE)
            .where(t.c.TXN_ID == txn_id, t.c.TXN_STATE == OPEN)
            .with_for_update(read=shared)
        )
        row = conn.execute(stmt).first()
        return None if row is None else txn_type_of(row[0])

    @staticmethod
    def find_txn_state(conn: Connection, txn_id: int) -> str:
        """Hive's findTxnState: TXNS's state, else COMMITTED if it left components, else UNKNOWN."""
        t = schema.TXNS
        state = conn.execute(select(t.c.TXN_STATE).where(t.c.TXN_ID == txn_id)).scalar()
        if state is not None:
            return str(state)
        ctc = schema.COMPLETED_TXN_COMPONENTS
        done = conn.execute(select(ctc.c.CTC_TXNID).where(ctc.c.CTC_TXNID == txn_id).limit(1))
        return COMMITTED if done.first() is not None else UNKNOWN

    def require_open_txn(self, conn: Connection, txn_id: int, *, shared: bool = False) -> int:
        """Lock ``txn_id``'s row and return its TxnType, or raise naming its actual state."""
        txn_type = self.lock_open_txn(conn, txn_id, shared=shared)
        if txn_type is None:
            raise_unexpected_state(self.find_txn_state(conn, txn_id), txn_id)
        return txn_type

    def forget_min_history(self, conn: Connection, txn_ids: Sequence[int]) -> None:
        """The ended txns' MIN_HISTORY_LEVEL / MIN_HISTORY_WRITE_ID rows, as Hive does when
        the switch is on (with it off, housekeeping removes rows left from when it was)."""
        mhl, mhw = schema.MIN_HISTORY_LEVEL, schema.MIN_HISTORY_WRITE_ID
        if self.config.use_min_history_level:
            conn.execute(delete(mhl).where(mhl.c.MHL_TXNID.in_(txn_ids)))
        if self.config.use_min_history_write_id:
            conn.execute(delete(mhw).where(mhw.c.MH_TXNID.in_(txn_ids)))

    # -- events -------------------------------------------------------------------------------

    def emit(self, conn: Connection, events: Iterable[NewEvent]) -> list[int]:
        """Append the events: the last step of the database transaction that made the change."""
        batch = list(events)
        return self.events.append(conn, batch) if batch else []
