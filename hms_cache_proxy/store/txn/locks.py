"""Hive's lock manager over HIVE_LOCKS: lock, check_lock, unlock, show_locks, heartbeat.

One LockRequest is one *external* lock id (HL_LOCK_EXT_ID) with one row per component
(HL_LOCK_INT_ID 1..n), granted all together or not at all. As in Hive 4's TxnHandler:

1. Enqueue (one database transaction): check the txn is open (its TXNS row locked), record the
   write components in TXN_COMPONENTS, take the next id from NEXT_LOCK_ID under its row lock
   and insert the rows in state ``w``. The NEXT_LOCK_ID row lock is held until this commits, so
   ids become visible in id order: whoever reads a lock has already seen every lower id.
2. Check (a second database transaction): the request is blocked by any lower-numbered lock,
   waiting or acquired, of another txn that it conflicts with (same database, and same table
   unless either is database-level, and same partition unless either is table-level). Blocked:
   the rows record the first blocker (HL_BLOCKEDBY_*) and stay ``w``. Otherwise all rows become
   ``a``. Because a lock only ever looks at lower ids, and every lower id is visible when it
   looks, two conflicting locks are never both granted, by any number of metastores (ours or
   Hive's) sharing the database; waiters are granted in id order and nothing deadlocks.

Conflicts (CheckLockFunction's four cases; ``r`` SHARED_READ, ``w`` SHARED_WRITE, ``x``
EXCL_WRITE, ``e`` EXCLUSIVE; requested lock first):

- ``r`` waits for ``e``, except a database-level ``r`` under a table or partition ``e``;
- ``e`` waits for everything, except a database-level ``r`` when it is on a table or partition;
- ``w`` waits for ``x`` and ``e``;
- ``x`` waits for everything but ``r``.

Locks of one txn never block each other (txn-less locks, txnid 0, are each their own owner).
A txn's locks live as long as the txn (heartbeat the txn); txn-less locks carry their own
heartbeat and are removed by housekeeping after the timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    and_,
    bindparam,
    case,
    cast,
    delete,
    exists,
    extract,
    func,
    insert,
    not_,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import PooledCursor
from hms_cache_proxy.store.events.log import one_statement
from hms_cache_proxy.store.partnames import PartitionNameError, make_part_name
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_base import (
    EXCL_WRITE,
    EXCLUSIVE,
    LOCK_ACQUIRED,
    LOCK_TYPE_CODES,
    LOCK_TYPES,
    LOCK_WAITING,
    OP_INSERT,
    OP_UPDATE,
    OPERATION_CODES,
    SHARED_READ,
    SHARED_WRITE,
    TxnPart,
    TxnShared,
    lock_id_str,
    raise_unexpected_state,
    txn_id_str,
)
from hms_cache_proxy.store.txn.txns import Txns

_HL = schema.HIVE_LOCKS
_RESTRICTIVENESS = {SHARED_READ: 1, SHARED_WRITE: 2, EXCL_WRITE: 3, EXCLUSIVE: 4}
EXCL_CTAS_ERR_MSG = (
    "Failed to initiate a concurrent CTAS operation with the same table name, lockInfo : {}"
)
ZERO_WAIT_READ_ERR_MSG = "Unable to acquire read lock due to an existing exclusive lock {{{}}}"


@dataclass(frozen=True)
class LockRow:
    """One HIVE_LOCKS row, printed as Hive's LockInfo.toString (messages quote it)."""

    ext_id: int
    int_id: int
    txn_id: int
    db: str
    table: str | None
    partition: str | None
    state: str
    type: str

    @classmethod
    def of(cls, r: Any) -> LockRow:
        return cls(
            int(r.HL_LOCK_EXT_ID),
            int(r.HL_LOCK_INT_ID),
            int(r.HL_TXNID),
            r.HL_DB,
            r.HL_TABLE,
            r.HL_PARTITION,
            r.HL_LOCK_STATE,
            r.HL_LOCK_TYPE,
        )

    def __str__(self) -> str:
        state = {LOCK_ACQUIRED: "ACQUIRED", LOCK_WAITING: "WAITING"}.get(self.state, "null")
        kind = hms.LockType._VALUES_TO_NAMES.get(LOCK_TYPES.get(self.type), "null")
        return (
            f"{lock_id_str(self.ext_id)} intLockId:{self.int_id} {txn_id_str(self.txn_id)} "
            f"db:{self.db} table:{self.table} partition:{self.partition} state:{state} "
            f"type:{kind}"
        )


def normalize_partition_name(name: str | None) -> str | None:
    """Hive's normalizePartitionCase: ``Key=v/Key2=w`` with the keys in lower case.

    Guava's ``Splitter.on('/').withKeyValueSeparator('=')`` then FileUtils.makePartName.
    """
    if name is None:
        return None
    keys, values = [], []
    for entry in name.split("/"):
        key, sep, value = entry.partition("=")
        if not sep or "=" in value:
            raise hms.MetaException(message=f"Invalid partition name {name!r} in lock request")
        keys.append(key)
        values.append(value)
    try:
        return make_part_name(keys, values)
    except PartitionNameError as exc:
        raise hms.MetaException(message=str(exc)) from exc


def _lower(name: str | None) -> str | None:
    return None if name is None else name.lower()


def conflict_condition(req: Any, ex: Any) -> Any:
    """SQL: lock ``ex`` (lower id) blocks requested lock ``req``: CheckLockFunction's rule."""
    same_place = and_(
        ex.c.HL_DB == req.c.HL_DB,
        or_(
            ex.c.HL_TABLE.is_(None),
            req.c.HL_TABLE.is_(None),
            and_(
                ex.c.HL_TABLE == req.c.HL_TABLE,
                or_(
                    ex.c.HL_PARTITION.is_(None),
                    req.c.HL_PARTITION.is_(None),
                    ex.c.HL_PARTITION == req.c.HL_PARTITION,
                ),
            ),
        ),
    )
    other_owner = or_(req.c.HL_TXNID == 0, ex.c.HL_TXNID != req.c.HL_TXNID)
    rt, et = req.c.HL_LOCK_TYPE, ex.c.HL_LOCK_TYPE
    by_type = or_(
        and_(
            rt == SHARED_READ,
            et == EXCLUSIVE,
            not_(and_(ex.c.HL_TABLE.is_not(None), req.c.HL_TABLE.is_(None))),
        ),
        and_(
            rt == EXCLUSIVE,
            not_(and_(ex.c.HL_TABLE.is_(None), et == SHARED_READ, req.c.HL_TABLE.is_not(None))),
        ),
        and_(rt == SHARED_WRITE, or_(et == EXCL_WRITE, et == EXCLUSIVE)),
        and_(rt == EXCL_WRITE, et != SHARED_READ),
    )
    return and_(same_place, other_owner, by_type)


def conflicts(requested: LockRow, existing: LockRow) -> bool:
    """The same rule in Python, for unit tests and explanations."""
    if existing.db != requested.db:
        return False
    if existing.table is not None and requested.table is not None:
        if existing.table != requested.table:
            return False
        if (
            existing.partition is not None
            and requested.partition is not None
            and existing.partition != requested.partition
        ):
            return False
    if requested.txn_id != 0 and existing.txn_id == requested.txn_id:
        return False
    rt, et = requested.type, existing.type
    if rt == SHARED_READ:
        return et == EXCLUSIVE and not (existing.table is not None and requested.table is None)
    if rt == EXCLUSIVE:
        return not (existing.table is None and et == SHARED_READ and requested.table is not None)
    if rt == SHARED_WRITE:
        return et in (EXCL_WRITE, EXCLUSIVE)
    return et != SHARED_READ


_NO_NEXT_LOCK_ID = "Transaction tables not properly initialized, no record found in next_lock_id"


def _no_such_locks(ext_id: int, mine: list[LockRow]) -> hms.NoSuchLockException:
    return hms.NoSuchLockException(
        message=f"No such lock(s): ({lock_id_str(ext_id)}: "
        f"{', '.join(str(r.int_id) for r in mine)}) {txn_id_str(mine[0].txn_id)}"
    )


def _no_such_lock(ext_id: int) -> hms.NoSuchLockException:
    """heartbeatLock's error for a lock with no rows."""
    return hms.NoSuchLockException(message=f"No such lock: {lock_id_str(ext_id)}")


def _grant_unless_blocked() -> Any:
    """checkLock's grant as one statement (PostgreSQL): every row of lock ``ext`` becomes
    acquired unless a lower lock blocks one of them; selects how many rows it granted and
    NEXT_EVENT_ID as the statement's snapshot sees it (every write a granted lock waited for
    committed before that snapshot, so a cache holding the events below it needs no read of
    the log after the grant)."""
    req, ex = _HL.alias("req"), _HL.alias("ex")
    ext = bindparam("ext", type_=BigInteger)
    blocker = (
        select(ex.c.HL_LOCK_EXT_ID)
        .select_from(req.join(ex, conflict_condition(req, ex)))
        .where(req.c.HL_LOCK_EXT_ID == ext, ex.c.HL_LOCK_EXT_ID < ext)
        .limit(1)
    )
    now = cast(func.floor(extract("epoch", func.current_timestamp()) * 1000), BigInteger)
    granted = (
        update(_HL)
        .where(_HL.c.HL_LOCK_EXT_ID == ext, ~exists(blocker))
        .values(
            HL_LOCK_STATE=LOCK_ACQUIRED,
            HL_LAST_HEARTBEAT=case((_HL.c.HL_TXNID != 0, 0), else_=now),
            HL_ACQUIRED_AT=now,
            HL_BLOCKEDBY_EXT_ID=None,
            HL_BLOCKEDBY_INT_ID=None,
        )
        .returning(_HL.c.HL_LOCK_INT_ID)
        .cte("granted")
    )
    return select(
        select(func.count()).select_from(granted).scalar_subquery(),
        select(schema.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID).scalar_subquery(),
    )


_GRANT_UNLESS_BLOCKED = pgsql.Compiled(_grant_unless_blocked, "hms_grant_locks", {"ext": "bigint"})


class Locks(TxnPart):
    """lock, check_lock, unlock, show_locks and lock heartbeats."""

    def __init__(self, shared: TxnShared, txns: Txns) -> None:
        super().__init__(shared)
        self.txns = txns

    def lock(self, rqst: Any) -> Any:
        """Enqueue the request's locks, then try to grant them: a LockResponse."""
        components = list(rqst.component or [])
        if not components:
            raise hms.MetaException(message="LockRequest has no components")
        txn_id = int(rqst.txnid or 0)
        fast = self.db.folds_round_trips  # PostgreSQL through psycopg2
        enqueued = None
        if fast and txn_id >= 0:  # one statement: no transaction around it
            with self.db.autocommit_cursor() as cur:
                enqueued = self._enqueue_at_once(cur, rqst, components, txn_id)
        if enqueued is None:  # SQLite, other drivers, or an error to name
            enqueued = self.db.transaction(
                lambda conn: self._enqueue(conn, rqst, components, txn_id)
            )
        ext_id, rows = enqueued
        self.events.note_current(None)
        try:
            if fast:
                # The usual case, nothing in the way: the grant is one statement by itself
                # (a lock waits only for lower lock ids, which were committed before this one
                # was numbered). Blocked, nothing changed: the full check records the blocker.
                with self.db.autocommit_cursor() as cur:
                    ((granted, next_event),) = _GRANT_UNLESS_BLOCKED.rows(cur, ext=ext_id)
                if granted == len(rows):
                    self.events.note_current(int(next_event or 1) - 1)
                    return hms.LockResponse(lockid=ext_id, state=hms.LockState.ACQUIRED)
                if granted:
                    raise _no_such_locks(ext_id, rows)
            response, seen = self.db.transaction(
                lambda conn: self._check(
                    conn,
                    ext_id,
                    txn_id,
                    bool(rqst.zeroWaitReadEnabled),
                    bool(rqst.exclusiveCTAS),
                    rows,
                )
            )
            if seen is not None:
                self.events.note_current(seen)
            return response
        except hms.NoSuchLockException as exc:
            raise hms.MetaException(
                message=f"Couldn't find a lock we just created! {exc.message}"
            ) from exc

    def _enqueue_at_once(
        self, cur: PooledCursor, rqst: Any, components: list[Any], txn_id: int
    ) -> tuple[int, list[LockRow]] | None:
        """PostgreSQL through psycopg2: the whole enqueue (the txn's row locked if it is open,
        its components, the lock id and the waiting rows) as one statement; None when it wrote
        nothing (the txn is not open, or NEXT_LOCK_ID has no row): the general path says why."""
        parts = self._component_rows(rqst, components, txn_id) if txn_id > 0 else []
        rows = self._waiting_rows(components, txn_id)
        found = pgsql.enqueue_locks(
            cur,
            txn_id,
            [(r.int_id, r.db, r.table, r.partition, r.type) for r in rows],
            rqst.user or "",
            rqst.hostname or "",
            rqst.agentInfo,
            [
                (p["TC_DATABASE"], p["TC_TABLE"], p["TC_PARTITION"], p["TC_OPERATION_TYPE"])
                for p in parts
            ],
        )
        if found is None:
            return None
        return found, [replace(r, ext_id=found) for r in rows]

    def _waiting_rows(self, components: list[Any], txn_id: int) -> list[LockRow]:
        return [
            LockRow(
                0,
                i,
                txn_id,
                _lower(lc.dbname) or "",
                _lower(lc.tablename),
                normalize_partition_name(lc.partitionname),
                LOCK_WAITING,
                self._type_code(lc.type),
            )
            for i, lc in enumerate(components, start=1)
        ]

    def _enqueue(
        self, conn: Connection, rqst: Any, components: list[Any], txn_id: int
    ) -> tuple[int, list[LockRow]]:
        if txn_id != 0:
            self.require_open_txn(conn, txn_id)
        if txn_id > 0:
            self._insert_txn_components(conn, rqst, components, txn_id)
        rows = self._waiting_rows(components, txn_id)
        # (On psycopg2 lock() tried _enqueue_at_once first: this path then names the error.)
        # The next id, taken under NEXT_LOCK_ID's row lock (held until this commits).
        nli = schema.NEXT_LOCK_ID
        taken = conn.execute(
            update(nli).values(NL_NEXT=nli.c.NL_NEXT + 1).returning(nli.c.NL_NEXT)
        ).scalar()
        if taken is None:
            raise hms.MetaException(message=_NO_NEXT_LOCK_ID)
        ext_id = int(taken) - 1
        heartbeat = 0 if txn_id != 0 else self.now_ms(conn)
        conn.execute(
            insert(_HL).values(
                [
                    {
                        "HL_LOCK_EXT_ID": ext_id,
                        "HL_LOCK_INT_ID": r.int_id,
                        "HL_TXNID": txn_id,
                        "HL_DB": r.db,
                        "HL_TABLE": r.table,
                        "HL_PARTITION": r.partition,
                        "HL_LOCK_STATE": LOCK_WAITING,
                        "HL_LOCK_TYPE": r.type,
                        "HL_LAST_HEARTBEAT": heartbeat,
                        "HL_USER": rqst.user or "",
                        "HL_HOST": rqst.hostname or "",
                        "HL_AGENT_INFO": rqst.agentInfo,
                    }
                    for r in rows
                ]
            )
        )
        return ext_id, [replace(r, ext_id=ext_id) for r in rows]

    @staticmethod
    def _type_code(lock_type: int | None) -> str:
        code = LOCK_TYPE_CODES.get(lock_type) if lock_type is not None else None
        if code is None:
            raise hms.MetaException(message=f"Unknown lock type: {lock_type}")
        return code

    def _insert_txn_components(
        self, conn: Connection, rqst: Any, components: list[Any], txn_id: int
    ) -> None:
        """Hive's insertTxnComponents: what a txn will write, for commit and the compactor."""
        rows = self._component_rows(rqst, components, txn_id)
        write_ids: dict[tuple[str, str | None], int | None] = {}
        for row in rows:
            key = (row["TC_DATABASE"], row["TC_TABLE"])
            if key not in write_ids:
                write_ids[key] = (
                    self.table_write_id_of(conn, key[0], key[1], txn_id) if key[1] else None
                )
            row["TC_WRITEID"] = write_ids[key]
        if rows:
            conn.execute(insert(schema.TXN_COMPONENTS), rows)

    @staticmethod
    def _component_rows(rqst: Any, components: list[Any], txn_id: int) -> list[dict[str, Any]]:
        """The TXN_COMPONENTS rows of a lock request, but for their write ids (the table's
        write id of the txn, looked up by the caller)."""
        dp_update = {
            (_lower(lc.dbname), _lower(lc.tablename))
            for lc in components
            if lc.isDynamicPartitionWrite
            and lc.operationType in (hms.DataOperationType.UPDATE, hms.DataOperationType.DELETE)
        }
        write_ids: dict[tuple[str | None, str | None], int | None] = {}
        rows = []
        for lc in components:
            if lc.isTransactional is False:
                continue  # non-ACID resources are locked, not tracked (unset is not false)
            op = lc.operationType
            if op in (hms.DataOperationType.SELECT, hms.DataOperationType.NO_TXN):
                continue
            if op not in OPERATION_CODES:
                name = hms.DataOperationType._VALUES_TO_NAMES.get(op, op)
                raise hms.MetaException(
                    message=f"Unexpected DataOperationType: {name} agentInfo={rqst.agentInfo} "
                    f"{txn_id_str(txn_id)}"
                )
            key = (_lower(lc.dbname), _lower(lc.tablename))
            part = normalize_partition_name(lc.partitionname)
            code = OPERATION_CODES[op]
            if lc.isDynamicPartitionWrite:
                if key in write_ids:
                    continue
                part = None
                code = OP_UPDATE if key in dp_update else OP_INSERT
            write_ids[key] = None
            rows.append(
                {
                    "TC_TXNID": txn_id,
                    "TC_DATABASE": key[0] or "",
                    "TC_TABLE": key[1],
                    "TC_PARTITION": part,
                    "TC_OPERATION_TYPE": code,
                }
            )
        return rows

    @staticmethod
    def table_write_id_of(conn: Connection, db: str | None, table: str, txn_id: int) -> int | None:
        t2w = schema.TXN_TO_WRITE_ID
        found = conn.execute(
            select(t2w.c.T2W_WRITEID).where(
                t2w.c.T2W_DATABASE == db, t2w.c.T2W_TABLE == table, t2w.c.T2W_TXNID == txn_id
            )
        ).scalar()
        return None if found is None else int(found)

    # -- granting -----------------------------------------------------------------------------

    @staticmethod
    def _lock_rows(conn: Connection, ext_id: int) -> list[LockRow]:
        rows = conn.execute(
            select(_HL).where(_HL.c.HL_LOCK_EXT_ID == ext_id).order_by(_HL.c.HL_LOCK_INT_ID)
        )
        return [LockRow.of(r) for r in rows]

    def _check(
        self,
        conn: Connection,
        ext_id: int,
        txn_id: int,
        zero_wait_read: bool = False,
        exclusive_ctas: bool = False,
        known: list[LockRow] | None = None,
    ) -> tuple[Any, int | None]:
        """Hive's checkLock: grant all rows of ``ext_id`` or record what blocks them. Returns
        the LockResponse and, when this statement granted the lock on PostgreSQL, the last
        event id committed in the grant's snapshot (for ``EventLog.note_current`` once the
        transaction has committed); else None.

        ``known``: the rows, when the caller has just read or enqueued them.
        """
        mine = known if known is not None else self._lock_rows(conn, ext_id)
        if not mine:
            raise hms.MetaException(
                message=f"This should never happen!  We already checked the "
                f"lock({lock_id_str(ext_id)}) existed but now we can't find it!"
            )
        if all(r.state == LOCK_ACQUIRED for r in mine):
            return hms.LockResponse(lockid=ext_id, state=hms.LockState.ACQUIRED), None
        if one_statement(conn):
            # Grant unless blocked, in one statement; when blocked (nothing changed) the steps
            # below find the blocker and record it.
            granted, next_event = _GRANT_UNLESS_BLOCKED.execute(conn, ext=ext_id).one()
            if granted == len(mine):
                acquired = hms.LockResponse(lockid=ext_id, state=hms.LockState.ACQUIRED)
                return acquired, int(next_event or 1) - 1
            if granted:
                raise _no_such_locks(ext_id, mine)
        req, ex = _HL.alias("req"), _HL.alias("ex")
        blocker = conn.execute(
            select(
                ex, req.c.HL_LOCK_INT_ID.label("req_int_id"), req.c.HL_LOCK_TYPE.label("req_type")
            )
            .select_from(req.join(ex, conflict_condition(req, ex)))
            .where(req.c.HL_LOCK_EXT_ID == ext_id, ex.c.HL_LOCK_EXT_ID < ext_id)
            .order_by(ex.c.HL_LOCK_EXT_ID, ex.c.HL_LOCK_INT_ID, req.c.HL_LOCK_INT_ID)
            .limit(1)
        ).first()
        if blocker is not None:
            blocked_by = LockRow.of(blocker)
            if (
                (zero_wait_read and blocker.req_type == SHARED_READ) or exclusive_ctas
            ) and txn_id != 0:
                conn.execute(delete(_HL).where(_HL.c.HL_LOCK_EXT_ID == ext_id))
                template = EXCL_CTAS_ERR_MSG if exclusive_ctas else ZERO_WAIT_READ_ERR_MSG
                return hms.LockResponse(
                    lockid=ext_id,
                    state=hms.LockState.NOT_ACQUIRED,
                    errorMessage=template.format(blocked_by),
                ), None
            conn.execute(
                update(_HL)
                .where(_HL.c.HL_LOCK_EXT_ID == ext_id, _HL.c.HL_LOCK_INT_ID == blocker.req_int_id)
                .values(
                    HL_BLOCKEDBY_EXT_ID=blocked_by.ext_id, HL_BLOCKEDBY_INT_ID=blocked_by.int_id
                )
            )
            return hms.LockResponse(lockid=ext_id, state=hms.LockState.WAITING), None
        now = self.now_ms(conn)
        rc = conn.execute(
            update(_HL)
            .where(_HL.c.HL_LOCK_EXT_ID == ext_id)
            .values(
                HL_LOCK_STATE=LOCK_ACQUIRED,
                HL_LAST_HEARTBEAT=0 if mine[0].txn_id != 0 else now,
                HL_ACQUIRED_AT=now,
                HL_BLOCKEDBY_EXT_ID=None,
                HL_BLOCKEDBY_INT_ID=None,
            )
        ).rowcount
        if rc < len(mine):
            raise _no_such_locks(ext_id, mine)
        return hms.LockResponse(lockid=ext_id, state=hms.LockState.ACQUIRED), None

    def check_lock(self, ext_id: int) -> Any:
        """Heartbeat the lock (or its txn) and try again to grant it.

        A granted answer notes (``EventLog.note_current``) the last event id committed when
        the lock was seen granted, so a cache that has applied that far reads nothing back."""
        self.events.note_current(None)
        if self.db.folds_round_trips:
            held = self._check_held(ext_id)
            if held is not None:
                self.events.note_current(held)
                return hms.LockResponse(lockid=ext_id, state=hms.LockState.ACQUIRED)
        response, seen = self.db.transaction(lambda conn: self._check_lock_txn(conn, ext_id))
        if seen is not None:
            self.events.note_current(seen)
        return response

    def _check_held(self, ext_id: int) -> int | None:
        """The usual poll, a lock already acquired, in one autocommit statement (PostgreSQL
        through psycopg2): the heartbeat and the rows' states together. Returns the last
        event id committed in its snapshot, or None when the lock is not all acquired, or the
        heartbeat found nothing to refresh, or the statement was told to retry: the general
        path then does it all again and answers (or names the error)."""
        try:
            with self.db.autocommit_cursor() as cur:
                n, acquired, txn_id, txn_beat, lock_beat, next_event = pgsql.check_held_lock(
                    cur, ext_id
                )
        except DBAPIError as exc:
            if self.db.is_retryable(exc):
                return None
            raise
        if n == 0 or acquired < n:
            return None
        if (txn_beat if txn_id > 0 else lock_beat) < (1 if txn_id > 0 else n):
            return None
        return max(0, next_event - 1)

    def _check_lock_txn(self, conn: Connection, ext_id: int) -> tuple[Any, int | None]:
        mine = self._lock_rows(conn, ext_id)
        if not mine:
            raise hms.NoSuchLockException(message=f"No such lock {lock_id_str(ext_id)}")
        txn_id = mine[0].txn_id
        if txn_id > 0:
            self.txns.heartbeat_txn_in(conn, txn_id)
        else:
            self.heartbeat_lock_in(conn, ext_id)
        return self._check(conn, ext_id, txn_id, known=mine)

    # -- releasing ----------------------------------------------------------------------------

    def unlock(self, ext_id: int) -> None:
        """Release a txn-less lock, or give up waiting for a txn's lock (Hive's unlock).

        Unlocking a lock that no longer exists is a no-op (Hive 4 made unlock idempotent); an
        acquired lock of a txn ends with its txn: TxnOpenException.
        """
        if self.db.folds_round_trips:  # the DELETE is the only change: no transaction needed
            with self.db.autocommit_cursor() as cur:
                if pgsql.unlock_rows(cur, ext_id) >= 1:
                    return
            # Nothing deleted, nothing changed: the rest only says why.
            with self.db.single_statement() as conn:
                self._why_not_unlocked(conn, ext_id)
        else:
            self.db.transaction(lambda conn: self._unlock_txn(conn, ext_id))

    def _unlock_txn(self, conn: Connection, ext_id: int) -> None:
        rc = conn.execute(
            delete(_HL).where(
                _HL.c.HL_LOCK_EXT_ID == ext_id,
                or_(_HL.c.HL_TXNID == 0, _HL.c.HL_LOCK_STATE == LOCK_WAITING),
            )
        ).rowcount
        if rc < 1:  # nothing deleted, nothing changed: the rest only says why
            self._why_not_unlocked(conn, ext_id)

    def _why_not_unlocked(self, conn: Connection, ext_id: int) -> None:
        """After an unlock deleted nothing: no error when the lock is gone (Hive 4's unlock is
        idempotent), else the one that says why its rows stay."""
        rows = self._lock_rows(conn, ext_id)
        if not rows:
            return
        if rows[0].txn_id != 0:
            raise hms.TxnOpenException(
                message=f"Unlocking locks associated with transaction not permitted.  {rows[0]}"
            )
        raise hms.MetaException(message=f"Found lock in unexpected state {rows[0]}")

    # -- heartbeats and listing ---------------------------------------------------------------

    def heartbeat_lock_in(self, conn: Connection, ext_id: int) -> None:
        """Hive's heartbeatLock (lock id 0 means none)."""
        if ext_id == 0:
            return
        if one_statement(conn):
            rc = pgsql.heartbeat_lock(conn, ext_id)
        else:
            rc = conn.execute(
                update(_HL)
                .where(_HL.c.HL_LOCK_EXT_ID == ext_id)
                .values(HL_LAST_HEARTBEAT=self.now_ms(conn))
            ).rowcount
        if rc < 1:
            raise _no_such_lock(ext_id)

    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None:
        """HeartbeatRequest: the lock first, then the txn (each may be absent)."""

        # Each is one UPDATE (the state reads after a miss only name the error): no
        # transaction around it.
        if lock_id:
            if self.db.folds_round_trips:  # PostgreSQL through psycopg2: the bare cursor
                with self.db.autocommit_cursor() as cur:
                    found = pgsql.heartbeat_lock(cur, int(lock_id))
                if found < 1:
                    raise _no_such_lock(int(lock_id))
            else:
                with self.db.single_statement(write=True) as conn:
                    self.heartbeat_lock_in(conn, int(lock_id))
        if txn_id:
            if self.db.folds_round_trips:
                with self.db.autocommit_cursor() as cur:
                    found = pgsql.heartbeat_txn(cur, int(txn_id))
                if found < 1:  # not open: one more read names its state
                    with self.db.single_statement() as conn:
                        state = self.txns.find_txn_state(conn, int(txn_id))
                    raise_unexpected_state(state, int(txn_id))
            else:
                with self.db.single_statement(write=True) as conn:
                    self.txns.heartbeat_txn_in(conn, int(txn_id))

    def show_locks(
        self,
        db: str | None = None,
        table: str | None = None,
        partition: str | None = None,
        txn_id: int | None = None,
    ) -> list[Any]:
        """ShowLocksResponseElements: acquired first, less restrictive first, then by id."""
        cond = []
        if db:
            cond.append(_HL.c.HL_DB == db)
        if table:
            cond.append(_HL.c.HL_TABLE == table)
        if partition:
            cond.append(_HL.c.HL_PARTITION == partition)
        if txn_id is not None:
            cond.append(_HL.c.HL_TXNID == txn_id)
        with self.db.read() as conn:
            rows = conn.execute(select(_HL).where(*cond)).all()

        def key(r: Any) -> tuple[int, int, int, int]:
            return (
                0 if r.HL_LOCK_STATE == LOCK_ACQUIRED else 1,
                _RESTRICTIVENESS.get(r.HL_LOCK_TYPE, 5),
                int(r.HL_LOCK_EXT_ID),
                int(r.HL_LOCK_INT_ID),
            )

        out = []
        for r in sorted(rows, key=key):
            state = {LOCK_ACQUIRED: hms.LockState.ACQUIRED, LOCK_WAITING: hms.LockState.WAITING}
            if r.HL_LOCK_STATE not in state:
                raise hms.MetaException(message=f"Unknown lock state {r.HL_LOCK_STATE}")
            if r.HL_LOCK_TYPE not in LOCK_TYPES:
                raise hms.MetaException(message=f"Unknown lock type: {r.HL_LOCK_TYPE}")
            out.append(
                hms.ShowLocksResponseElement(
                    lockid=int(r.HL_LOCK_EXT_ID),
                    dbname=r.HL_DB,
                    tablename=r.HL_TABLE,
                    partname=r.HL_PARTITION,
                    state=state[r.HL_LOCK_STATE],
                    type=LOCK_TYPES[r.HL_LOCK_TYPE],
                    txnid=int(r.HL_TXNID),
                    lastheartbeat=int(r.HL_LAST_HEARTBEAT),
                    acquiredat=None if r.HL_ACQUIRED_AT is None else int(r.HL_ACQUIRED_AT),
                    user=r.HL_USER,
                    hostname=r.HL_HOST,
                    heartbeatCount=r.HL_HEARTBEAT_COUNT or 0,
                    agentInfo=r.HL_AGENT_INFO,
                    blockedByExtId=r.HL_BLOCKEDBY_EXT_ID,
                    blockedByIntId=r.HL_BLOCKEDBY_INT_ID,
                    lockIdInternal=int(r.HL_LOCK_INT_ID),
                )
            )
        return out

    def locks_of(self, ext_ids: Sequence[int]) -> list[LockRow]:
        """The rows of these locks (tests and diagnostics)."""
        with self.db.read() as conn:
            rows = conn.execute(select(_HL).where(_HL.c.HL_LOCK_EXT_ID.in_(list(ext_ids))))
            return [LockRow.of(r) for r in rows]
