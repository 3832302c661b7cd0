"""Table write ids: allocation (NEXT_WRITE_ID, TXN_TO_WRITE_ID) and snapshots of them.

A write id numbers one txn's writes to one table, 1, 2, 3, ... per table. Allocation locks the
table's NEXT_WRITE_ID row (creating it on first use; a concurrent creator loses on the unique
index and re-reads), maps each txn to its id in TXN_TO_WRITE_ID and emits
ALLOC_WRITE_ID_EVENT; asking again for a txn that already has an id returns the same id.

``table_write_ids`` is Hive's getValidWriteIdsForTable, quirks included, so the strings built
from its answer are the ones Hive's metastore would give: the high-water mark is the highest
id allocated to a txn at or below the snapshot's txn hwm (else NEXT_WRITE_ID-1), ids of open or
aborted txns (or of txns past the hwm) are exceptions, and when no committed id is left in
TXN_TO_WRITE_ID (cleaned after compaction) only the lowest exception is kept and becomes the hwm.

The write calls of tables and partitions use ``require_open_write_id`` and
``txn_table_write_ids`` inside their own database transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent, one_statement
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.function_calls import FunctionCalls
from hms_cache_proxy.store.txn.txn_base import (
    OPEN,
    TxnPart,
    TxnShared,
    raise_unexpected_state,
    settled_bounds,
    txn_type_of,
)
from hms_cache_proxy.store.txn.txns import Txns
from hms_cache_proxy.store.txn_snapshots import (
    LONG_MAX,
    ValidReaderWriteIdList,
    ValidReadTxnList,
    bitset_to_bytes,
)

_T2W, _NWI = schema.TXN_TO_WRITE_ID, schema.NEXT_WRITE_ID

_OPEN_TXN_OF_WRITE_ID = (
    select(schema.TXNS.c.TXN_ID)
    .select_from(_T2W.join(schema.TXNS, schema.TXNS.c.TXN_ID == _T2W.c.T2W_TXNID))
    .where(
        _T2W.c.T2W_DATABASE == bindparam("w_db"),
        _T2W.c.T2W_TABLE == bindparam("w_tbl"),
        _T2W.c.T2W_WRITEID == bindparam("w_id"),
        schema.TXNS.c.TXN_STATE == OPEN,
    )
    .with_for_update(read=True, of=schema.TXNS)
)
"""require_open_write_id's read: the txn of write id w_id of w_db.w_tbl while it is open, its
TXNS row share-locked. Built once, so its SQLAlchemy cache key is too (a write's hot path); on
psycopg2 the same statement prepared (``pgsql.open_txn_of_write_id``)."""


def split_table_name(full_name: str) -> tuple[str, str]:
    """``db.table`` as (db, table) in lower case (TxnUtils.getDbTableName)."""
    db, sep, table = (full_name or "").partition(".")
    if not sep or not db or not table:
        raise hms.MetaException(message=f"Invalid table name {full_name!r}: expected <db>.<table>")
    return db.strip().lower(), table.strip().lower()


class WriteIds(TxnPart):
    """allocate_table_write_ids, get_valid_write_ids and what the write calls check."""

    def __init__(self, shared: TxnShared, txns: Txns) -> None:
        super().__init__(shared)
        self.txns = txns
        self.functions = FunctionCalls(shared)

    # -- allocation ---------------------------------------------------------------------------

    def allocate_table_write_ids(
        self, db: str, table: str, txn_ids: Sequence[int]
    ) -> list[tuple[int, int]]:
        """(txn id, write id) for each txn, ascending by txn; ids already allocated are reused."""
        ids = sorted(set(txn_ids))
        if not ids:
            raise hms.MetaException(message="allocate_table_write_ids needs at least one txnId")
        if self.functions.usable():  # one round trip: plpgsql.ALLOCATE_FUNCTION
            pairs = self.functions.allocate_write_ids(db, table, ids)
            if pairs is not None:
                return pairs
        return self.db.transaction(lambda conn: self._allocate(conn, db, table, ids))

    def _allocate(
        self, conn: Connection, db: str, table: str, ids: list[int]
    ) -> list[tuple[int, int]]:
        fast = one_statement(conn)
        if fast:
            raw, have = pgsql.lock_and_read_allocation(conn, ids, db, table)
            found = {txn: (state, txn_type_of(kind)) for txn, (state, kind) in raw.items()}
        else:
            t = schema.TXNS
            rows = conn.execute(
                select(t.c.TXN_ID, t.c.TXN_STATE, t.c.TXN_TYPE)
                .where(t.c.TXN_ID.in_(ids))
                .order_by(t.c.TXN_ID)
                .with_for_update()
            ).all()
            found = {int(r[0]): (r[1], txn_type_of(r[2])) for r in rows}
        for txn in ids:
            state, txn_type = found.get(txn, (None, None))
            if state is None:
                raise_unexpected_state(self.find_txn_state(conn, txn), txn)
            if state != OPEN:
                raise_unexpected_state(state, txn)
            if txn_type == hms.TxnType.READ_ONLY:
                raise hms.MetaException(
                    message=f"Write ID allocation failed on {db}.{table} as not all input txns "
                    "in open state or read-only"
                )
        if fast:
            return self._allocate_fast(conn, db, table, ids, have)
        have = dict(
            conn.execute(
                select(_T2W.c.T2W_TXNID, _T2W.c.T2W_WRITEID).where(
                    _T2W.c.T2W_DATABASE == db,
                    _T2W.c.T2W_TABLE == table,
                    _T2W.c.T2W_TXNID.in_(ids),
                )
            ).all()
        )
        missing = [txn for txn in ids if txn not in have]
        if missing:
            first = self._reserve_write_ids(conn, db, table, len(missing))
            new = {txn: first + i for i, txn in enumerate(missing)}
            conn.execute(
                insert(_T2W),
                [
                    {"T2W_TXNID": txn, "T2W_DATABASE": db, "T2W_TABLE": table, "T2W_WRITEID": w}
                    for txn, w in new.items()
                ],
            )
            have.update(new)
        pairs = sorted((int(txn), int(w)) for txn, w in have.items())
        if missing:
            body = self.messages.alloc_write_id(pairs, db, table)
            event = NewEvent(msg.ALLOC_WRITE_ID_EVENT, body, None, db, table)
            self.emit(conn, [event])
        return pairs

    def _allocate_fast(
        self, conn: Connection, db: str, table: str, ids: list[int], have: dict[int, int]
    ) -> list[tuple[int, int]]:
        """PostgreSQL through psycopg2, after lock_and_read_allocation: the new write ids and
        the event's sequence lock in one round trip, the event and COMMIT in the next."""
        missing = [txn for txn in ids if txn not in have]
        if not missing:
            return sorted(have.items())
        params = {"k": len(missing), "db": db, "tbl": table, "missing": missing}
        reservation = self.events.reserve(
            conn, 1, before=pgsql.ALLOCATE_WRITE_IDS_SQL, params=params, also=pgsql.ALLOCATED
        )
        (first_text,) = reservation.extra
        first = int(first_text)
        have.update({txn: first + i for i, txn in enumerate(missing)})
        pairs = sorted((int(txn), int(w)) for txn, w in have.items())
        body = self.messages.alloc_write_id(pairs, db, table)
        event = NewEvent(msg.ALLOC_WRITE_ID_EVENT, body, None, db, table)
        self.events.write(conn, reservation, [event], last=True)
        return pairs

    @staticmethod
    def _reserve_write_ids(conn: Connection, db: str, table: str, n: int) -> int:
        """The first of ``n`` fresh write ids, moving NEXT_WRITE_ID on under its row lock."""
        bump = (
            update(_NWI)
            .where(_NWI.c.NWI_DATABASE == db, _NWI.c.NWI_TABLE == table)
            .values(NWI_NEXT=_NWI.c.NWI_NEXT + n)
            .returning(_NWI.c.NWI_NEXT)
        )
        after = conn.execute(bump).scalar()
        if after is None:
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(_NWI).values(NWI_DATABASE=db, NWI_TABLE=table, NWI_NEXT=1 + n)
                    )
                return 1
            except IntegrityError:
                after = conn.execute(bump).scalar_one()  # a concurrent first allocation won
        return int(after) - n

    def max_allocated_write_id(self, db: str, table: str) -> int:
        """NEXT_WRITE_ID - 1, or 0 when the table never had a write id."""
        with self.db.read() as conn:
            nxt = conn.execute(
                select(_NWI.c.NWI_NEXT).where(_NWI.c.NWI_DATABASE == db, _NWI.c.NWI_TABLE == table)
            ).scalar()
        return 0 if nxt is None else int(nxt) - 1

    def seed_write_id(self, db: str, table: str, seed: int) -> None:
        """Start a table's write ids after ``seed`` (conversion of a table to ACID)."""
        self.db.transaction(lambda conn: self._seed_write_id_txn(conn, db, table, seed))

    def _seed_write_id_txn(self, conn: Connection, db: str, table: str, seed: int) -> None:
        try:
            with conn.begin_nested():
                conn.execute(
                    insert(_NWI).values(NWI_DATABASE=db, NWI_TABLE=table, NWI_NEXT=seed + 1)
                )
        except IntegrityError as exc:
            raise hms.MetaException(
                message=f"Unable to update transaction database: {db}.{table} already has write ids"
            ) from exc

    # -- snapshots ----------------------------------------------------------------------------

    def get_valid_write_ids(
        self,
        full_table_names: Sequence[str],
        valid_txn_list: str | None = None,
        write_id: int | None = None,
    ) -> list[Any]:
        """TableValidWriteIds of each table, for the snapshot ``valid_txn_list`` if given, else
        the snapshot of the txn that allocated ``write_id`` (on the first table), else now."""
        names = list(full_table_names or [])
        given: ValidReadTxnList | None = None
        if valid_txn_list:
            try:
                given = ValidReadTxnList.parse(valid_txn_list)
            except ValueError as exc:
                raise hms.MetaException(message=f"Invalid validTxnList: {exc}") from exc
            if len(names) == 1:  # what Hive sends per query: one statement, its own snapshot
                return [self._table_write_ids_given(names[0], given)]
        # Each statement may see its own snapshot, as in Hive (READ COMMITTED): a txn that
        # opens or commits between the list and the write ids is above the list's hwm or
        # stays open in it, so its write ids count as invalid either way. No BEGIN / COMMIT.
        if given is not None:
            snapshot = given
        elif write_id is None and len(names) == 1 and self.db.folds_round_trips:
            return [self._table_write_ids_now(names[0])]  # the list and the write ids at once
        else:
            with self.db.single_statement() as conn:
                if write_id is not None and names:
                    db, table = split_table_name(names[0])
                    txn = self._txn_of_write_id(conn, db, table, write_id)
                    if txn is None:
                        raise hms.MetaException(
                            message=f"invalid write id {write_id} for table {names[0]}"
                        )
                    snapshot = self.txn_snapshot(conn, txn)
                else:  # a statement of its own: its snapshot is taken after the settled floor
                    snapshot = self.txn_snapshot(conn, 0, fresh_snapshot=True)
        with self.db.single_statement() as conn:
            return [self.table_write_ids(conn, name, snapshot) for name in names]

    def txn_snapshot(
        self, conn: Connection, txn_id: int, fresh_snapshot: bool = False
    ) -> ValidReadTxnList:
        """The ValidTxnList txn ``txn_id`` reads with (0: no txn), as TxnCommonUtils builds it."""
        response = self.txns.open_txn_list(conn, fresh_snapshot=fresh_snapshot).response()
        return ValidReadTxnList.from_open_txns_response(response, txn_id)

    def table_write_ids(self, conn: Connection, full_name: str, snapshot: ValidReadTxnList) -> Any:
        """Hive's getValidWriteIdsForTable: the table's write ids as ``snapshot`` sees them."""
        db, table = split_table_name(full_name)
        found_valid: bool | None = None
        if one_statement(conn):
            hwm, found_valid, rows = pgsql.table_write_ids(
                conn, db, table, snapshot.high_watermark, snapshot.exceptions
            )
        else:
            hwm, rows = self._table_write_ids(conn, db, table, snapshot.high_watermark)
        return _valid_write_ids(full_name, snapshot, hwm, rows, found_valid)

    def _table_write_ids_given(self, full_name: str, snapshot: ValidReadTxnList) -> Any:
        """``table_write_ids`` by one autocommit statement: on PostgreSQL through psycopg2 on
        ``Database.autocommit_cursor``'s bare cursor (no SQLAlchemy Connection, Result or Row
        per call), else through ``single_statement``."""
        if not self.db.folds_round_trips:
            with self.db.single_statement() as conn:
                return self.table_write_ids(conn, full_name, snapshot)
        db, table = split_table_name(full_name)
        with self.db.autocommit_cursor() as cur:
            hwm, found_valid, rows = pgsql.table_write_ids(
                cur, db, table, snapshot.high_watermark, snapshot.exceptions
            )
        return _valid_write_ids(full_name, snapshot, hwm, rows, found_valid)

    def _table_write_ids_now(self, full_name: str) -> Any:
        """``table_write_ids`` at a snapshot taken now, by one autocommit statement on
        ``Database.autocommit_cursor``'s bare cursor (PostgreSQL through psycopg2): with a
        settled floor, the table's write ids of txns open or aborted now, read without the
        open-txn list (pgsql.table_write_ids_settled: its cost follows the table's writes, not
        every txn of the open window); before one is set, with the list."""
        db, table = split_table_name(full_name)
        settled = self.txns.settled_for_write_ids()
        if settled is None:
            with self.db.autocommit_cursor() as cur:
                listed, hwm, found, rows = self.txns.open_txn_list_with_write_ids(cur, db, table)
            return _valid_write_ids(full_name, listed.snapshot(), hwm, rows, found)
        floor, unsettled = settled_bounds(settled)
        window = self.config.open_txn_timeout_ms
        with self.db.autocommit_cursor() as cur:
            hwm, found, invalid = pgsql.table_write_ids_settled(
                cur, window, floor, unsettled, db, table
            )
        return _write_ids_response(full_name, hwm, invalid, found)

    @staticmethod
    def _table_write_ids(
        conn: Connection, db: str, table: str, txn_hwm: int
    ) -> tuple[int, list[tuple[int, int]]]:
        """The table's write-id high-water mark for a snapshot whose txn hwm is ``txn_hwm``,
        and the (txn, write id) rows at or below it in write-id order."""
        same = (_T2W.c.T2W_DATABASE == db, _T2W.c.T2W_TABLE == table)
        below = (
            select(func.max(_T2W.c.T2W_WRITEID))
            .where(_T2W.c.T2W_TXNID <= txn_hwm, *same)
            .scalar_subquery()
        )
        allocated = (
            select(_NWI.c.NWI_NEXT - 1)
            .where(_NWI.c.NWI_DATABASE == db, _NWI.c.NWI_TABLE == table)
            .scalar_subquery()
        )
        hwm_row, next_row = conn.execute(select(below, allocated)).one()
        hwm = int(hwm_row or 0)
        if hwm <= 0:
            hwm = int(next_row or 0)
        rows = conn.execute(
            select(_T2W.c.T2W_TXNID, _T2W.c.T2W_WRITEID)
            .where(_T2W.c.T2W_WRITEID <= hwm, *same)
            .order_by(_T2W.c.T2W_WRITEID)
        )
        return hwm, [(int(txn), int(wid)) for txn, wid in rows]

    # -- for the write calls ------------------------------------------------------------------

    @staticmethod
    def _txn_of_write_id(conn: Connection, db: str, table: str, write_id: int) -> int | None:
        found = conn.execute(
            select(_T2W.c.T2W_TXNID).where(
                _T2W.c.T2W_DATABASE == db,
                _T2W.c.T2W_TABLE == table,
                _T2W.c.T2W_WRITEID == write_id,
            )
        ).scalar()
        return None if found is None else int(found)

    def write_id_owner(
        self, conn: Connection, db: str, table: str, write_id: int
    ) -> tuple[int, str] | None:
        """(txn id, TXN_STATE) of the txn ``write_id`` of ``db.table`` belongs to, None if none."""
        txn = self._txn_of_write_id(conn, db, table, write_id)
        if txn is None:
            return None
        state = self.find_txn_state(conn, txn)
        return txn, state

    def require_open_write_id(self, conn: Connection, db: str, table: str, write_id: int) -> int:
        """Check, in the caller's write transaction, that ``write_id`` belongs to an open txn of
        ``db.table``; returns the txn id and holds a share lock on its TXNS row until the
        caller commits, so the txn cannot commit or abort halfway through the write (its
        COMMIT_TXN event then always follows the write's events).

        Raises MetaException naming the write id, or the txn and its state.
        """
        # The usual case in one round trip: the write id's txn, its row share-locked while
        # open (the same row and lock as below; READ COMMITTED re-checks the state after a
        # wait, so a txn that ended meanwhile is not returned).
        params = {"w_db": db, "w_tbl": table, "w_id": write_id}
        if one_statement(conn):
            found = pgsql.open_txn_of_write_id(conn, params)
        else:
            found = conn.execute(_OPEN_TXN_OF_WRITE_ID, params).scalar()
        if found is not None:
            return int(found)
        txn = self._txn_of_write_id(conn, db, table, write_id)
        if txn is None:
            raise hms.MetaException(message=f"invalid write id {write_id} for table {db}.{table}")
        if self.lock_open_txn(conn, txn, shared=True) is None:
            state = self.find_txn_state(conn, txn)
            try:
                raise_unexpected_state(state, txn)
            except (hms.NoSuchTxnException, hms.TxnAbortedException) as exc:
                raise hms.MetaException(
                    message=f"write id {write_id} of {db}.{table}: {exc.message}"
                ) from exc
        return txn

    @staticmethod
    def open_write_ids(
        conn: Connection, db: str, table: str, write_ids: Sequence[int] | set[int]
    ) -> set[int]:
        """Which of ``write_ids`` of ``db.table`` belong to txns that are still open."""
        ids = sorted(set(write_ids))
        found: set[int] = set()
        t = schema.TXNS
        for start in range(0, len(ids), 1000):
            found.update(
                int(r[0])
                for r in conn.execute(
                    select(_T2W.c.T2W_WRITEID)
                    .select_from(_T2W.join(t, t.c.TXN_ID == _T2W.c.T2W_TXNID))
                    .where(
                        _T2W.c.T2W_DATABASE == db,
                        _T2W.c.T2W_TABLE == table,
                        _T2W.c.T2W_WRITEID.in_(ids[start : start + 1000]),
                        t.c.TXN_STATE == OPEN,
                    )
                )
            )
        return found

    def table_write_id(self, conn: Connection, db: str, table: str, txn_id: int) -> int | None:
        """The write id ``txn_id`` holds on ``db.table``, None if it has none."""
        found = conn.execute(
            select(_T2W.c.T2W_WRITEID).where(
                _T2W.c.T2W_DATABASE == db,
                _T2W.c.T2W_TABLE == table,
                _T2W.c.T2W_TXNID == txn_id,
            )
        ).scalar()
        return None if found is None else int(found)

    def txn_table_write_ids(self, conn: Connection, db: str, table: str, txn_id: int) -> Any:
        """TableValidWriteIds of ``db.table`` as txn ``txn_id`` sees it (its own writes valid):
        what a write's events carry as their validWriteIdList."""
        if one_statement(conn):
            # One statement takes the snapshot and reads the write ids (the writer's own
            # statement snapshot, READ COMMITTED, as two statements would each take).
            listed, hwm, found, rows = self.txns.open_txn_list_with_write_ids(conn, db, table)
            snapshot = ValidReadTxnList.from_open_txns_response(listed.response(), txn_id)
            return _valid_write_ids(f"{db}.{table}", snapshot, hwm, rows, found)
        return self.table_write_ids(conn, f"{db}.{table}", self.txn_snapshot(conn, txn_id))

    def txn_write_id_list(self, conn: Connection, db: str, table: str, txn_id: int) -> str:
        """``txn_table_write_ids`` as Hive's string (``db.table:hwm:minOpen:open:aborted``)."""
        tvwi = self.txn_table_write_ids(conn, db, table, txn_id)
        return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()


def _valid_write_ids(
    full_name: str,
    snapshot: ValidReadTxnList,
    hwm: int,
    rows: list[tuple[int, int]],
    any_valid: bool | None = None,
) -> Any:
    """Hive's getValidWriteIdsForTable from the hwm and the rows below it (or only the invalid
    ones among them, with ``any_valid`` saying whether a valid one was left out)."""
    invalid: list[tuple[int, bool]] = []
    found_valid = bool(any_valid)
    for txn, wid in rows:
        if snapshot.is_txn_valid(txn):
            found_valid = True
            continue
        invalid.append((int(wid), snapshot.is_txn_aborted(txn)))
    return _write_ids_response(full_name, hwm, invalid, found_valid)


def _write_ids_response(
    full_name: str, hwm: int, rows: list[tuple[int, bool]], found_valid: bool
) -> Any:
    """TableValidWriteIds from the hwm and the invalid write ids at or below it in order, each
    with whether its txn aborted (else it is open); ``found_valid``: a valid one lies there."""
    invalid = [wid for wid, _ in rows]
    bits = 0
    min_open = LONG_MAX
    for i, (wid, aborted) in enumerate(rows):
        if aborted:
            bits |= 1 << i
        else:
            min_open = min(min_open, wid)
    if not found_valid:
        # Compacted (cleaned) writes only: the lowest invalid id becomes the hwm.
        lowest = invalid[0] if invalid else None
        invalid, bits = [], 0
        if lowest is not None:
            invalid, hwm = [lowest], lowest
            if lowest != min_open:
                bits = 1
    return hms.TableValidWriteIds(
        fullTableName=full_name,
        writeIdHighWaterMark=hwm,
        invalidWriteIds=invalid,
        minOpenWriteId=min_open if min_open < LONG_MAX else None,
        abortedBits=bitset_to_bytes(bits),
    )
