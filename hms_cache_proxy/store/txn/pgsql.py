"""The hot transaction calls on PostgreSQL through psycopg2, as hand-written statement text.

Every open_txns and commit_txn of a Hive query goes through here, so each call is a few round
trips and no per-call statement building: several steps share one data-modifying CTE, or one
simple-query message carries several statements (psycopg2 binds parameters on the client, so a
message may hold more than one). The statements do what the general SQLAlchemy path in
``txns.py`` and ``commit.py`` does, in the same order, on the same rows (so the locking order
stays Hive's); ``events.log.one_statement`` says when a connection takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects.postgresql import psycopg2 as postgresql_psycopg2

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db.engine import PooledCursor
from hms_cache_proxy.store.db.prepared import Prepared, generic_prepared

_NOW_MS = "CAST(floor(extract(epoch FROM current_timestamp) * 1000) AS bigint)"
"""TxnUtils.getEpochFn on PostgreSQL: the transaction's start, in epoch milliseconds."""

_LOCK_TXNS_SHARED = 'LOCK TABLE "TXN_LOCK_TBL" IN SHARE MODE; '
_OPEN_NEW = (
    f"WITH now AS (SELECT {_NOW_MS} AS ms), "
    'new AS (INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", '
    '"TXN_HOST", "TXN_AGENT_INFO", "TXN_TYPE") '
    "SELECT 'o', now.ms, now.ms, %(user)s, %(host)s, %(agent)s, %(type)s "
    'FROM now, generate_series(1, %(n)s) RETURNING "TXN_ID") '
)
_OPEN_UNSETTLED = (
    # The lowest of the unsettled txns still open: nothing read when there are none (the usual
    # case), else each looked up by its id (LATERAL, as the open-txn list's): as ``= ANY`` the
    # generic plan made while TXNS was small stayed a sequential scan of it as it grew (with
    # autovacuum off nothing re-plans it: 2,675 rows, 0.27 ms per open in the bench). The array
    # is read through scalar subqueries so custom and generic plans estimate alike (see
    # prepared.generic_prepared).
    "CASE WHEN cardinality((SELECT %(unsettled)s::bigint[])) > 0 THEN (SELECT min(u.id) "
    'FROM unnest((SELECT %(unsettled)s::bigint[])) AS u (id), LATERAL (SELECT 1 FROM "TXNS" x '
    'WHERE x."TXN_ID" = u.id AND x."TXN_STATE" = \'o\' OFFSET 0) o) END'
)
_OPEN_MIN_HISTORY = (
    ', first AS (SELECT min("TXN_ID") AS id FROM new), '
    # The watermark as txns._watermark_expr computes it after the insert (the new rows are not
    # visible to this statement's subqueries, so the first new id stands in for them): Hive's
    # two searches, for an open without a recent settled floor (_OPEN_ON_FLOOR otherwise).
    "mark AS (SELECT LEAST("
    # The lowest open txn: at or above the settled floor (the range bounded above by the top
    # id, as the open-txn list's, so the generic plan walks TXNS_pkey from the floor), or one
    # of the unsettled below it (txns.open_txn_list; floor 0 without one).
    'COALESCE(LEAST((SELECT min("TXN_ID") FROM "TXNS" '
    'WHERE "TXN_STATE" = \'o\' AND "TXN_ID" >= %(floor)s '
    'AND "TXN_ID" <= (SELECT max("TXN_ID") FROM "TXNS")), '
    f"{_OPEN_UNSETTLED}), first.id), "
    'COALESCE((SELECT max("TXN_ID") + 1 FROM "TXNS" '
    'WHERE "TXN_STARTED" < (SELECT ms FROM now) - %(window)s), first.id)) AS m FROM first), '
    'mhl AS (INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID") '
    'SELECT new."TXN_ID", mark.m FROM new, mark) '
)
_OPEN_ON_FLOOR = (
    # The watermark from a recent settled floor (txns.Txns.floor_bounds_watermark): below the
    # floor every txn is committed or gone but the unsettled ones, every id at or above it
    # (the new ones too) is not below it, so the lower of the floor and the unsettled txns
    # still open is a lower bound of every open txn and of Hive's value. Primary-key probes of
    # the unsettled ids only: no walk over the last seconds of TXNS.
    f", mark AS (SELECT LEAST(%(floor)s::bigint, {_OPEN_UNSETTLED}) AS m), "
    'mhl AS (INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID") '
    'SELECT new."TXN_ID", mark.m FROM new, mark) '
)


def _open_steps(min_history: bool, on_floor: bool = False) -> str:
    """The TXNS rows (and, with ``min_history``, their MIN_HISTORY_LEVEL rows, the watermark
    taken from the settled floor ``on_floor``) as CTEs."""
    if not min_history:
        return _OPEN_NEW
    return _OPEN_NEW + (_OPEN_ON_FLOOR if on_floor else _OPEN_MIN_HISTORY)


_LOCK_WAIT = "extract(epoch FROM clock_timestamp() - statement_timestamp())"


def open_sql(min_history: bool, on_floor: bool = False) -> str:
    """openTxns after its TXN_LOCK_TBL share lock: the TXNS rows and, with ``min_history``
    (metastore.txn.use.minhistorylevel), their MIN_HISTORY_LEVEL rows (the watermark from the
    settled floor ``on_floor``). The second column is how long the lock took (the opener's
    clock starts after it, as Hive's)."""
    return (
        _LOCK_TXNS_SHARED
        + _open_steps(min_history, on_floor)
        + f'SELECT "TXN_ID", {_LOCK_WAIT} FROM new ORDER BY "TXN_ID"'
    )


OPEN_SQL = open_sql(True)
_OPEN_TYPES = {"user": "text", "host": "text", "agent": "text", "type": "integer", "n": "integer"}
_FLOOR_TYPES = {"floor": "bigint", "unsettled": "bigint[]"}
_MARK_TYPES = _FLOOR_TYPES | {"window": "bigint"}
_KEEP = (
    "SELECT set_config('hms.open_txn_ids', "
    + 'string_agg("TXN_ID"::text, \',\' ORDER BY "TXN_ID"), true), '
    + f"set_config('hms.open_lock_wait', max({_LOCK_WAIT})::text, true) FROM new"
)
_OPEN_KEEPING = {
    (True, False): Prepared("hms_open_txns", _open_steps(True) + _KEEP, _OPEN_TYPES | _MARK_TYPES),
    (True, True): Prepared(
        "hms_open_txns_on_floor", _open_steps(True, True) + _KEEP, _OPEN_TYPES | _FLOOR_TYPES
    ),
    (False, False): Prepared("hms_open_txns_plain", _open_steps(False) + _KEEP, _OPEN_TYPES),
}


def open_keeping_sql(conn: Connection, min_history: bool = True, on_floor: bool = False) -> str:
    """open_sql for a message that goes on (the OPEN_TXN event's sequence lock): the new ids
    and the lock's wait kept in transaction-local settings, read back by OPEN_KEPT. Call it
    before the transaction's first statement (it may prepare the statement)."""
    statement = _OPEN_KEEPING[min_history, on_floor and min_history]
    return _LOCK_TXNS_SHARED + statement.text(conn) + "; "


OPEN_KEPT = ", current_setting('hms.open_txn_ids'), current_setting('hms.open_lock_wait')"

COMMIT_READ_SQL = (
    'SELECT DISTINCT \'op\', "TC_OPERATION_TYPE", NULL::bigint, NULL, NULL FROM "TXN_COMPONENTS" '
    'WHERE "TC_TXNID" = %(txn)s '
    "UNION ALL "
    'SELECT \'wid\', NULL, t."T2W_WRITEID", t."T2W_DATABASE", t."T2W_TABLE" '
    'FROM "NEXT_WRITE_ID" n JOIN "TXN_TO_WRITE_ID" t ON t."T2W_DATABASE" = n."NWI_DATABASE" '
    'AND t."T2W_TABLE" = n."NWI_TABLE" AND t."T2W_TXNID" = %(txn)s ORDER BY 1, 4, 5'
)
"""What a commit needs to know, in one round trip: the txn's operation types and write ids.
The write ids are found per table through Hive's (database, table, txn) index: every table with
write ids has its NEXT_WRITE_ID row (allocation makes it; Hive's drop and rename change both)."""

_MOVE_COMPONENTS = (
    'INSERT INTO "COMPLETED_TXN_COMPONENTS" ("CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", '
    '"CTC_PARTITION", "CTC_WRITEID", "CTC_UPDATE_DELETE") '
    '(SELECT "TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_WRITEID", \'N\' '
    'FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = %(txn)s AND "TC_OPERATION_TYPE" <> \'c\'); '
)
_DELETE_COMPONENTS = 'DELETE FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = %(txn)s; '
_WRITE_SET_OF_INSERTS = (
    'INSERT INTO "WRITE_SET" ("WS_DATABASE", "WS_TABLE", "WS_PARTITION", "WS_TXNID", '
    '"WS_COMMIT_ID", "WS_OPERATION_TYPE") SELECT DISTINCT "TC_DATABASE", "TC_TABLE", '
    '"TC_PARTITION", "TC_TXNID", (SELECT max("TXN_ID") FROM "TXNS"), "TC_OPERATION_TYPE" '
    'FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = %(txn)s AND "TC_OPERATION_TYPE" <> \'c\'; '
)
"""Without MIN_HISTORY_LEVEL a commit records its writes in WRITE_SET, inserts too, with the
txn hwm as commit id (Hive 4; no TXN_LOCK_TBL lock for a txn that updated nothing)."""
_FINISH = (
    'DELETE FROM "HIVE_LOCKS" WHERE "HL_TXNID" = %(txn)s; '
    'UPDATE "TXNS" SET "TXN_STATE" = \'c\' WHERE "TXN_ID" = %(txn)s'
)
_FORGET_LEVEL = '; DELETE FROM "MIN_HISTORY_LEVEL" WHERE "MHL_TXNID" = %(txn)s'
_FORGET_WRITE_ID = '; DELETE FROM "MIN_HISTORY_WRITE_ID" WHERE "MH_TXNID" = %(txn)s'


def finish_commit_sql(
    move_components: bool, min_history_level: bool = True, min_history_write_id: bool = True
) -> str:
    """commitTxn's last statements as text for a message that goes on (placeholder ``txn``):
    with ``move_components`` those of a txn that inserted (no update or delete: no write set,
    no exclusive lock), else of one without components (or a read-only one, whose components
    stay); the txn's MIN_HISTORY_LEVEL / MIN_HISTORY_WRITE_ID rows go with the switches on, and
    with the level switch off a txn that inserted records its writes in WRITE_SET first."""
    sql = (_MOVE_COMPONENTS + _DELETE_COMPONENTS if move_components else "") + _FINISH
    if move_components and not min_history_level:
        sql = _WRITE_SET_OF_INSERTS + sql
    if min_history_level:
        sql += _FORGET_LEVEL
    if min_history_write_id:
        sql += _FORGET_WRITE_ID
    return sql + "; "


def open_params(
    n: int,
    user: str,
    host: str,
    agent_info: str | None,
    txn_type: int,
    window_ms: int,
    floor: int = 0,
    unsettled: list[int] | None = None,
) -> dict[str, Any]:
    """The values of OPEN_SQL's and open_keeping_sql's placeholders."""
    return {
        "floor": floor,
        "unsettled": unsettled or [],
        "user": user,
        "host": host,
        "agent": agent_info,
        "type": txn_type,
        "n": n,
        "window": window_ms,
    }


def opened(kept: tuple[Any, ...]) -> tuple[list[int], float]:
    """The new txn ids and the lock's wait from the OPEN_KEPT columns."""
    ids, wait = kept
    return [int(i) for i in ids.split(",")], float(wait)


def open_txns_with(
    conn: Connection, params: dict[str, Any], min_history: bool = True, on_floor: bool = False
) -> tuple[list[int], float]:
    """open_txns with its values from ``open_params``."""
    rows = conn.exec_driver_sql(open_sql(min_history, on_floor), params).all()
    return [int(r[0]) for r in rows], float(rows[0][1]) if rows else 0.0


_LOCK_OPEN_TXN_ROW = (
    'SELECT 1 FROM "TXNS" WHERE "TXN_ID" = %(txn)s AND "TXN_STATE" = \'o\' FOR UPDATE; '
)
_READ_COMMIT = Prepared(
    "hms_commit_facts",
    'SELECT \'txn\', NULL, "TXN_TYPE"::bigint, NULL, NULL FROM "TXNS" '
    'WHERE "TXN_ID" = %(txn)s AND "TXN_STATE" = \'o\' UNION ALL ' + COMMIT_READ_SQL,
    {"txn": "bigint"},
    at_connect=True,
)
"""commitTxn's first round trip: the open txn's row locked, then (a new statement, so a snapshot
taken once the lock is held) its type, operation types and write ids."""


def lock_and_read_commit(
    conn: Connection, txn_id: int
) -> tuple[int, set[str], list[tuple[int, str, str]]] | None:
    """Lock ``txn_id``'s row if it is open and read what its commit needs: (TXN_TYPE, -1 for
    NULL; operation types; (write id, database, table) each), or None when it is not open."""
    txn_type: int | None = None
    ops: set[str] = set()
    writes: list[tuple[int, str, str]] = []
    sql = _LOCK_OPEN_TXN_ROW + _READ_COMMIT.text(conn)
    rows = conn.exec_driver_sql(sql, {"txn": txn_id}).all()
    for kind, op, value, db, table in rows:
        if kind == "txn":
            txn_type = -1 if value is None else int(value)
        elif kind == "op":
            ops.add(op)
        else:
            writes.append((int(value), db, table))
    return None if txn_type is None else (txn_type, ops, writes)


def commit_facts(conn: Connection, txn_id: int) -> tuple[set[str], list[tuple[int, str, str]]]:
    """(operation types in TXN_COMPONENTS, (write id, database, table) in TXN_TO_WRITE_ID)."""
    ops: set[str] = set()
    writes: list[tuple[int, str, str]] = []
    for kind, op, write_id, db, table in conn.exec_driver_sql(COMMIT_READ_SQL, {"txn": txn_id}):
        if kind == "op":
            ops.add(op)
        else:
            writes.append((int(write_id), db, table))
    return ops, writes


_PSYCOPG2 = postgresql_psycopg2.dialect()
"""The dialect ``Compiled`` compiles for: its statements run only on psycopg2 sessions."""


class Compiled:
    """A SQLAlchemy statement compiled once (for psycopg2) and then executed as its text with
    the call's values: no per-call construction, compilation or cache-key work. ``build``
    makes the statement; its bind parameters named in ``execute``'s values vary per call, the
    others are the statement's constants."""

    def __init__(
        self, build: Callable[[], Any], prepare_as: str = "", types: dict[str, str] | None = None
    ) -> None:
        self._build = build
        self._prepare_as = prepare_as
        self._types = types or {}
        self._sql: str | None = None
        self._prepared: Prepared | None = None
        self._constants: dict[str, Any] = {}

    def execute(self, conn: Connection, **values: Any) -> Any:
        """``prepare_as`` (with the PostgreSQL ``types`` of the per-call values) also prepares
        it per connection (``Prepared``; the constants' types are left to PostgreSQL)."""
        sql = self._compiled(values)
        if self._prepared is not None:
            sql = self._prepared.text(conn)
        return conn.exec_driver_sql(sql, {**self._constants, **values})

    def rows(self, on: Connection | PooledCursor, **values: Any) -> Sequence[Any]:
        """The statement's rows (indexed by position) on a connection or on
        ``Database.autocommit_cursor``'s bare cursor (no SQLAlchemy Connection or Result)."""
        if not isinstance(on, PooledCursor):
            return self.execute(on, **values).all()  # type: ignore[no-any-return]
        sql = self._compiled(values)
        if self._prepared is not None:
            sql = self._prepared.pooled_text(on)
        on.cursor.execute(sql, {**self._constants, **values})
        return on.cursor.fetchall()  # type: ignore[no-any-return]

    def _compiled(self, values: dict[str, Any]) -> str:
        """The statement's text for psycopg2, compiled on first use."""
        if self._sql is None:
            compiled = self._build().compile(dialect=_PSYCOPG2)
            self._constants = dict(compiled.construct_params(values))
            self._sql = str(compiled)
            if self._prepare_as:
                types = {key: self._types.get(key, "unknown") for key in self._constants}
                self._prepared = Prepared(self._prepare_as, self._sql, {**types, **self._types})
        return self._sql


_ENQUEUE_SQL = (
    "WITH {txn}"
    'nli AS (UPDATE "NEXT_LOCK_ID" SET "NL_NEXT" = "NL_NEXT" + 1 {open} '
    'RETURNING "NL_NEXT" - 1 AS ext), '
    'ins AS (INSERT INTO "HIVE_LOCKS" ("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID", "HL_TXNID", "HL_DB", '
    '"HL_TABLE", "HL_PARTITION", "HL_LOCK_STATE", "HL_LOCK_TYPE", "HL_LAST_HEARTBEAT", '
    '"HL_USER", "HL_HOST", "HL_AGENT_INFO") '
    "SELECT nli.ext, v.int_id, %(txn)s, v.db, v.tbl, v.part, 'w', v.kind, {heartbeat}, "
    "%(user)s, %(host)s, %(agent)s "
    "FROM nli, unnest(%(l_int)s, %(l_db)s, %(l_tbl)s, %(l_part)s, %(l_kind)s) "
    "AS v (int_id, db, tbl, part, kind)) "
    "SELECT ext FROM nli"
)
_TXN_OPEN_CTE = (
    'open_txn AS (SELECT 1 FROM "TXNS" WHERE "TXN_ID" = %(txn)s AND "TXN_STATE" = \'o\' '
    "FOR UPDATE), "
)
_COMPONENTS_CTE = (
    'tc AS (INSERT INTO "TXN_COMPONENTS" ("TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", '
    '"TC_OPERATION_TYPE", "TC_WRITEID") SELECT %(txn)s, c.db, c.tbl, c.part, c.op, '
    # The table's write id of the txn: its first row from the txn up in txn order, which
    # only the (database, table, txn) index gives (see _invalid_write_ids).
    '(SELECT w."T2W_WRITEID" FROM (SELECT "T2W_TXNID", "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" '
    'WHERE "T2W_DATABASE" = c.db AND "T2W_TABLE" = c.tbl AND "T2W_TXNID" >= %(txn)s '
    'ORDER BY "T2W_TXNID" LIMIT 1) w WHERE w."T2W_TXNID" = %(txn)s) '
    "FROM unnest(%(c_db)s, %(c_tbl)s, %(c_part)s, %(c_op)s) "
    "AS c (db, tbl, part, op) WHERE EXISTS (SELECT 1 FROM open_txn)), "
)
_ENQUEUE_TYPES = {
    "txn": "bigint",
    "user": "text",
    "host": "text",
    "agent": "text",
    "l_int": "bigint[]",
    "l_db": "text[]",
    "l_tbl": "text[]",
    "l_part": "text[]",
    "l_kind": "text[]",
}
_COMPONENT_TYPES = {"c_db": "text[]", "c_tbl": "text[]", "c_part": "text[]", "c_op": "text[]"}


def _enqueue_statement(in_txn: bool, components: bool, heartbeat: bool) -> Prepared:
    """enqueue_locks' statement: with the txn's row lock (``in_txn``) and its components,
    the new rows' heartbeat now (``heartbeat``: a lock without a txn) or 0. Its lists are
    array parameters: one text (one prepared statement) whatever their lengths.

    Every parameter, the txn id too, is read through an InitPlan (``generic_prepared``). With
    only the arrays hidden, the custom plans knew the txn id: the newest, so the write-id
    lookup's ``"T2W_TXNID" >= txn`` was estimated at a row or two, while the generic plan
    takes a third of TXN_TO_WRITE_ID for it; the generic estimate stayed above the custom
    average and PostgreSQL planned every execution anew (0 generic plans in
    pg_prepared_statements, 0.17 ms of planning per acid insert).
    tests/integration/test_lock_generic_plans.py checks the plan kept and its index reads."""
    txn_part = (_TXN_OPEN_CTE if in_txn else "") + (_COMPONENTS_CTE if components else "")
    sql = _ENQUEUE_SQL.format(
        txn=txn_part,
        open="WHERE EXISTS (SELECT 1 FROM open_txn)" if in_txn else "",
        heartbeat=_NOW_MS if heartbeat else "0",
    )
    name = "hms_enqueue_locks" + ("_txn" if in_txn else "") + ("_tc" if components else "")
    name += "_beat" if heartbeat else ""
    types = _ENQUEUE_TYPES | (_COMPONENT_TYPES if components else {})
    return generic_prepared(name, sql, types, at_connect=True)


_ENQUEUE = {
    (in_txn, components, heartbeat): _enqueue_statement(in_txn, components, heartbeat)
    for in_txn, components, heartbeat in (
        (True, True, False),
        (True, False, False),
        (False, False, False),
        (False, False, True),
    )
}
"""enqueue_locks' statements by (txn > 0, with components, txn == 0)."""


def enqueue_locks(
    on: Connection | PooledCursor,
    txn_id: int,
    rows: list[tuple[int, str, str | None, str | None, str]],
    user: str,
    host: str,
    agent_info: str | None,
    components: list[tuple[str, str | None, str | None, str]] | None = None,
) -> int | None:
    """Take the next lock id under NEXT_LOCK_ID's row lock and insert the waiting rows
    ((int id, db, table, partition, type) each) in one statement; the lock id, or None when
    nothing was written (NEXT_LOCK_ID has no row, or txn ``txn_id`` is not open).

    With a txn (``txn_id`` > 0) the same statement first locks the txn's row if it is open
    (its FOR UPDATE waits for a commit or abort under way, and then sees its outcome) and
    inserts its TXN_COMPONENTS ((db, table, partition, operation) each; the write id is the
    table's for the txn, NULL without one), as Hive's enqueueLock does in its transaction."""
    with_components = txn_id > 0 and bool(components)
    statement = _ENQUEUE[txn_id > 0, with_components, txn_id == 0]
    params: dict[str, Any] = {
        "txn": txn_id,
        "user": user,
        "host": host,
        "agent": agent_info,
        "l_int": [r[0] for r in rows],
        "l_db": [r[1] for r in rows],
        "l_tbl": [r[2] for r in rows],
        "l_part": [r[3] for r in rows],
        "l_kind": [r[4] for r in rows],
    }
    if with_components:
        parts = components or []
        params |= {
            "c_db": [c[0] for c in parts],
            "c_tbl": [c[1] for c in parts],
            "c_part": [c[2] for c in parts],
            "c_op": [c[3] for c in parts],
        }
    found = _rows(on, statement, params)
    return int(found[0][0]) if found else None


_OPEN_TXN_OF_WRITE_ID = Prepared(
    "hms_open_txn_of_write_id",
    'SELECT "TXNS"."TXN_ID" FROM "TXN_TO_WRITE_ID" JOIN "TXNS" '
    'ON "TXNS"."TXN_ID" = "TXN_TO_WRITE_ID"."T2W_TXNID" '
    'WHERE "TXN_TO_WRITE_ID"."T2W_DATABASE" = %(w_db)s '
    'AND "TXN_TO_WRITE_ID"."T2W_TABLE" = %(w_tbl)s '
    'AND "TXN_TO_WRITE_ID"."T2W_WRITEID" = %(w_id)s AND "TXNS"."TXN_STATE" = \'o\' '
    'FOR SHARE OF "TXNS"',
    {"w_db": "text", "w_tbl": "text", "w_id": "bigint"},
    at_connect=True,
)


def open_txn_of_write_id(conn: Connection, params: dict[str, Any]) -> int | None:
    """writeids._OPEN_TXN_OF_WRITE_ID as a prepared statement: the txn of write id ``w_id`` of
    ``w_db``.``w_tbl`` while it is open, its TXNS row share-locked; None otherwise."""
    found = conn.exec_driver_sql(_OPEN_TXN_OF_WRITE_ID.text(conn), params).scalar()
    return None if found is None else int(found)


_T2W_OF_TABLE = '"T2W_DATABASE" = %(db)s AND "T2W_TABLE" = %(tbl)s'
_NEXT_WRITE_ID_LESS_ONE = (
    'COALESCE((SELECT "NWI_NEXT" - 1 FROM "NEXT_WRITE_ID" '
    'WHERE "NWI_DATABASE" = %(db)s AND "NWI_TABLE" = %(tbl)s), 0)'
)


_TOP_AND_HWM = (
    f'top AS (SELECT "T2W_WRITEID" AS w FROM "TXN_TO_WRITE_ID" WHERE {_T2W_OF_TABLE} '
    'ORDER BY "T2W_WRITEID" DESC LIMIT 1), '
    "hwm AS (SELECT CASE WHEN COALESCE((SELECT w FROM top), 0) > 0 THEN (SELECT w FROM top) "
    f"ELSE {_NEXT_WRITE_ID_LESS_ONE} END AS w)"
)
"""CTEs ``top`` (the table's highest write id, down its write-id index) and ``hwm`` (that, or
the last allocated id when the table has no rows): the write-id hwm of a snapshot taken now."""
_READ_ONLY = int(hms.TxnType.READ_ONLY)


def _invalid_write_ids(txns: str) -> str:
    """The table's (txn, write id) rows at or below hwm.w of the txn ids in CTE ``txns``
    (column ``id``), each looked up by Hive's (database, table, txn) index.

    The lookup is the table's first row from txn ``c.id`` up in txn order (``>=``, ORDER BY,
    LIMIT 1; the pair is unique, so it is c.id's row if there is one), not ``= c.id``: as an
    equality the (database, table, write id) index looked as cheap to a plan made on stale or
    small statistics (a TXN_TO_WRITE_ID never analyzed, as in a new metastore), and was used
    with ``T2W_TXNID = c.id`` as a filter over every row of the table per txn (auto_explain at
    8 clients: 198 rows removed per loop). In txn order only the (database, table, txn) index
    gives the first row without reading and sorting them all."""
    return (
        f'SELECT w."T2W_TXNID", w."T2W_WRITEID" FROM {txns} c, hwm, LATERAL (SELECT "T2W_TXNID", '
        f'"T2W_WRITEID" FROM "TXN_TO_WRITE_ID" WHERE {_T2W_OF_TABLE} AND "T2W_TXNID" >= c.id '
        'ORDER BY "T2W_TXNID" LIMIT 1) w '
        'WHERE w."T2W_TXNID" = c.id AND w."T2W_WRITEID" <= hwm.w'
    )


_TABLE_WRITE_IDS_SQL = (
    # The highest write id of a txn at or below the snapshot's hwm: down the write-id index
    # from the top (the first row usually qualifies), else the last allocated id.
    'WITH below AS (SELECT "T2W_WRITEID" AS w FROM "TXN_TO_WRITE_ID" '
    f'WHERE {_T2W_OF_TABLE} AND "T2W_TXNID" <= %(txn_hwm)s ORDER BY "T2W_WRITEID" DESC LIMIT 1), '
    "hwm AS (SELECT CASE WHEN COALESCE((SELECT w FROM below), 0) > 0 THEN (SELECT w FROM below) "
    f"ELSE {_NEXT_WRITE_ID_LESS_ONE} END AS w), "
    'valid AS (SELECT (SELECT "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" '
    f'WHERE {_T2W_OF_TABLE} AND "T2W_WRITEID" <= hwm.w AND "T2W_TXNID" <= %(txn_hwm)s '
    'AND "T2W_TXNID" <> ALL(%(invalid)s::bigint[]) ORDER BY "T2W_WRITEID" LIMIT 1) IS NOT NULL '
    "AS found FROM hwm), "
    # The txns the snapshot holds invalid that may have write ids here: those above its hwm
    # (an index range, bounded above by the table's own top txn, which leaves no row out, so
    # that the generic plan estimates a two-sided range, not a third of the table's rows) and
    # its open and aborted ones.
    'above AS MATERIALIZED (SELECT "T2W_TXNID" AS id FROM "TXN_TO_WRITE_ID" '
    f'WHERE {_T2W_OF_TABLE} AND "T2W_TXNID" > %(txn_hwm)s '
    'AND "T2W_TXNID" <= (SELECT "T2W_TXNID" FROM "TXN_TO_WRITE_ID" '
    f'WHERE {_T2W_OF_TABLE} ORDER BY "T2W_TXNID" DESC LIMIT 1) ORDER BY "T2W_TXNID"), '
    "cands AS MATERIALIZED (SELECT id FROM above UNION SELECT unnest(%(invalid)s::bigint[])), "
    "bad AS (" + _invalid_write_ids("cands") + ") "
    'SELECT hwm.w, valid.found, bad."T2W_TXNID", bad."T2W_WRITEID" FROM hwm CROSS JOIN valid '
    'LEFT JOIN bad ON true ORDER BY bad."T2W_WRITEID"'
)
"""getValidWriteIdsForTable's reads in one: the write-id hwm under the snapshot's txn hwm (else
the last allocated id), whether a write id at or below it is valid in the snapshot, and the
(txn, write id) rows at or below it that are not (their txn above the txn hwm, or one of the
snapshot's open and aborted txns ``invalid``). The committed rows, which Hive's cleaner would
have removed, are neither sent nor decoded.

"Whether a valid write id lies at or below the hwm" is the lowest such write id (ORDER BY
LIMIT 1), not an EXISTS: PostgreSQL keeps a generic plan of a prepared statement after five
executions, and with TXN_TO_WRITE_ID's statistics dominated by another table (a history of
inserts elsewhere) the generic plan of the EXISTS scanned the whole heap expecting an early
match (issue 23: 834 pages per call at 100,000 rows); the ordered form has only the (database,
table, write id) index to use (tests/integration/test_write_id_generic_plans.py).

``generic_prepared``, so its generic plan is kept from the sixth call: as a plain Prepared
PostgreSQL judged the custom plans cheaper and planned it on every call, 0.31 ms of planning on
a 0.07 ms execution (`measure_cpu_per_call.py --target cache --cases acid_read_query --stats`,
1.00 plans per operation). With TXN_TO_WRITE_ID's statistics dominated by another table the
generic plan is estimated at ~300,000 (``above`` and ``cands`` at a third of the table), past
``jit_above_cost``: JIT-compiling it took 13 ms per call (acid_read_query_history: 4.5 -> 20
ms p50) before the pools' sessions ran with ``jit = off`` (engine._jit_off; behind a
transaction pooler nothing is prepared). The generic plan itself keeps to the indexes
(tests/integration/test_write_id_generic_plans.py). ``above``'s upper bound keeps its estimate
near the custom plans' after an ANALYZE brings another table's history (8,169 -> 1,028), so
the plan cache, which weighs a new generic plan against the average of all the custom plans
the statement had, goes back to it within a few dozen calls instead of planning every call."""
_TABLE_WRITE_IDS = generic_prepared(
    "hms_table_write_ids",
    _TABLE_WRITE_IDS_SQL,
    {"txn_hwm": "bigint", "db": "text", "tbl": "text", "invalid": "bigint[]"},
    at_connect=True,
)


def table_write_ids(
    on: Connection | PooledCursor, db: str, table: str, txn_hwm: int, invalid: Sequence[int]
) -> tuple[int, bool, list[tuple[int, int]]]:
    """The table's write-id hwm, whether a valid write id lies at or below it, and the
    (txn, write id) rows at or below it whose txn is above ``txn_hwm`` or in ``invalid``."""
    values = {"txn_hwm": txn_hwm, "db": db, "tbl": table, "invalid": list(invalid)}
    rows = _rows(on, _TABLE_WRITE_IDS, values)
    hwm = int(rows[0][0]) if rows else 0
    found = bool(rows[0][1]) if rows else False
    return hwm, found, [(int(r[2]), int(r[3])) for r in rows if r[2] is not None]


def _open_txn_list_parts(info: bool) -> tuple[str, str]:
    """(the CTEs, the two SELECTs joined by UNION ALL) of txns.open_txn_list's query.

    Both SELECTs are written so that the prepared statement's generic plan walks TXNS_pkey:
    a lone ``TXN_ID >= $floor`` is estimated at a third of the table and ``= ANY($array)`` at
    more rows than a small TXNS has, and both were planned as sequential scans of the whole of
    TXNS, a cost that grew with every txn kept behind a long-open one (0.66 -> 0.30 ms in
    PostgreSQL with 3,400 rows kept). The upper bound ``<= max(TXN_ID)`` (always true) makes
    the range estimate small; the ids below the floor are looked up one by one (LATERAL)."""
    extra = ', t."TXN_USER", t."TXN_HOST", t."TXN_STARTED", t."TXN_LAST_HEARTBEAT"' if info else ""
    cols = (
        't."TXN_ID", t."TXN_STATE", t."TXN_TYPE", now.ms - t."TXN_STARTED" AS age, '
        f"fy.id AS first_young{extra}"
    )
    ctes = (
        f"WITH now AS (SELECT {_NOW_MS} AS ms), "
        'fy AS (SELECT min("TXN_ID") AS id FROM "TXNS" '
        'WHERE "TXN_STARTED" > (SELECT ms FROM now) - %(window)s AND "TXN_ID" >= %(floor)s), '
        'st AS (SELECT COALESCE((SELECT max("TXN_ID") FROM "TXNS" '
        'WHERE "TXN_ID" < (SELECT id FROM fy)), (SELECT id FROM fy), '
        '(SELECT max("TXN_ID") FROM "TXNS")) AS id) '
    )
    selects = (
        f'SELECT * FROM (SELECT {cols}, lag(t."TXN_ID") OVER w AS prev_id, '
        'lead(t."TXN_ID") OVER w AS next_id FROM "TXNS" t, now, fy '
        'WHERE t."TXN_ID" >= %(floor)s AND t."TXN_ID" <= (SELECT max("TXN_ID") FROM "TXNS") '
        'AND (t."TXN_STATE" <> \'c\' OR t."TXN_ID" >= (SELECT id FROM st)) '
        'WINDOW w AS (ORDER BY t."TXN_ID")) a '
        "WHERE a.\"TXN_STATE\" <> 'c' OR a.next_id IS NULL OR a.prev_id IS NULL "
        'OR a.prev_id <> a."TXN_ID" - 1 '
        "UNION ALL "
        f"SELECT {cols}, NULL::bigint, NULL::bigint "
        "FROM (SELECT DISTINCT unnest(array_append(%(unsettled)s, (SELECT id FROM st))) AS id) u, "
        'LATERAL (SELECT * FROM "TXNS" x WHERE x."TXN_ID" = u.id OFFSET 0) t, now, fy '
        "WHERE u.id < %(floor)s "
    )
    return ctes, selects


def _open_txn_list_sql(info: bool) -> str:
    ctes, selects = _open_txn_list_parts(info)
    return ctes + selects + "ORDER BY 1"


def _write_ids_now_sql() -> str:
    ctes, selects = _open_txn_list_parts(False)
    return (
        ctes
        + f", l AS ({selects}), "
        + 'bad AS MATERIALIZED (SELECT "TXN_ID" AS id FROM l WHERE "TXN_STATE" <> \'c\'), '
        + f"{_TOP_AND_HWM} "
        + 'SELECT \'t\' AS kind, "TXN_ID", "TXN_STATE", "TXN_TYPE", age, first_young, prev_id, '
        + "NULL::bigint AS write_id, NULL::boolean AS found FROM l "
        + "UNION ALL "
        + 'SELECT \'w\', "T2W_TXNID", NULL, NULL, NULL, NULL, NULL, "T2W_WRITEID", NULL FROM ('
        + _invalid_write_ids("bad")
        + ") w "
        + "UNION ALL "
        + "SELECT 'h', NULL, NULL, NULL, NULL, NULL, NULL, hwm.w, (SELECT \"T2W_WRITEID\" "
        + f'FROM "TXN_TO_WRITE_ID" WHERE {_T2W_OF_TABLE} AND "T2W_WRITEID" <= hwm.w '
        + 'AND "T2W_TXNID" NOT IN (SELECT id FROM bad) ORDER BY "T2W_WRITEID" LIMIT 1) '
        + "IS NOT NULL FROM hwm "
        + "ORDER BY 1, 8, 2"
    )


_WRITE_IDS_NOW = generic_prepared(
    "hms_write_ids_now",
    _write_ids_now_sql(),
    {"window": "bigint", "floor": "bigint", "unsettled": "bigint[]", "db": "text", "tbl": "text"},
    at_connect=True,
)
"""get_valid_write_ids of one table at the current snapshot in one statement: the open-txn
list's rows (kind ``t``, columns as open_txn_rows'), the table's (txn, write id) rows whose txn
is open or aborted in TXNS (``w``, write-id order), and the write-id hwm with whether a write id
at or below it belongs to another txn (``h``). One statement, one snapshot: every txn of a
TXN_TO_WRITE_ID row is at or below the list's hwm (allocation needs the txn's row), and a gap
the list reports as open has no write ids, so the rows left out are exactly the valid ones.
The ``found`` test is an ordered LIMIT 1, not an EXISTS, for the generic plan's sake (see
_TABLE_WRITE_IDS)."""


def write_ids_now_rows(
    on: Connection | PooledCursor,
    window_ms: int,
    floor: int,
    unsettled: list[int],
    db: str,
    table: str,
) -> Sequence[Any]:
    """The rows of _WRITE_IDS_NOW, ``t`` rows first in TXN_ID order, ``w`` rows by write id
    (columns by position: kind, then open_txn_rows' first six, write_id, found)."""
    values = {"window": window_ms, "floor": floor, "unsettled": unsettled, "db": db, "tbl": table}
    return _rows(on, _WRITE_IDS_NOW, values)


def _table_write_ids_settled_sql() -> str:
    # The table's rows that may belong to a txn not committed: those of txns at or above the
    # settled floor (an index range) and those of the unsettled txns below it (a lookup each).
    # The range's upper bound, the top txn id, changes no answer (a row above it has lost its
    # txn's row, finished by the gap rule) but keeps the generic plan's estimate small: a
    # lone lower bound is taken for a third of the table, and with TXN_TO_WRITE_ID's
    # statistics dominated by another table's history that plan was a sequential scan of it.
    return (
        "WITH u AS (SELECT id FROM unnest(%(unsettled)s::bigint[]) AS id WHERE id < %(floor)s), "
        f"{_TOP_AND_HWM}, "
        'cands AS (SELECT "T2W_TXNID" AS txn, "T2W_WRITEID" AS wid FROM "TXN_TO_WRITE_ID" '
        f'WHERE {_T2W_OF_TABLE} AND "T2W_TXNID" >= %(floor)s '
        'AND "T2W_TXNID" <= (SELECT max("TXN_ID") FROM "TXNS") '
        f"UNION ALL {_invalid_write_ids('u')}), "
        # Each candidate's txn, looked up by its id (a join planned for a small TXNS scanned it
        # whole): not committed (and not read-only, which Hive leaves out of a snapshot), or
        # missing from TXNS below a row younger than the open window (the open-txn list's gap
        # rule: an id whose row is not visible is open; below an old row it is finished).
        "bad AS MATERIALIZED (SELECT c.txn, c.wid, CASE WHEN t.\"TXN_ID\" IS NULL THEN 'o' "
        'ELSE t."TXN_STATE" END AS state FROM cands c LEFT JOIN LATERAL (SELECT "TXN_ID", '
        '"TXN_STATE", "TXN_TYPE" FROM "TXNS" x WHERE x."TXN_ID" = c.txn OFFSET 0) t ON true '
        'WHERE CASE WHEN t."TXN_ID" IS NOT NULL THEN '
        f't."TXN_STATE" <> \'c\' AND COALESCE(t."TXN_TYPE", 0) <> {_READ_ONLY} '
        'ELSE (SELECT n."TXN_STARTED" FROM "TXNS" n '
        'WHERE n."TXN_ID" > c.txn ORDER BY n."TXN_ID" LIMIT 1) '
        f"> {_NOW_MS} - %(window)s END) "
        "SELECT 'w', bad.wid, bad.state FROM bad "
        "UNION ALL "
        'SELECT \'h\', hwm.w, CASE WHEN (SELECT "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" '
        f'WHERE {_T2W_OF_TABLE} AND "T2W_WRITEID" <= hwm.w '
        'AND "T2W_TXNID" NOT IN (SELECT txn FROM bad) ORDER BY "T2W_WRITEID" LIMIT 1) '
        "IS NOT NULL THEN 'y' END FROM hwm "
        "ORDER BY 1, 2"
    )


_TABLE_WRITE_IDS_SETTLED = generic_prepared(
    "hms_table_write_ids_settled",
    _table_write_ids_settled_sql(),
    {
        "window": "bigint",
        "floor": "bigint",
        "unsettled": "bigint[]",
        "db": "text",
        "tbl": "text",
    },
    at_connect=True,
)
"""get_valid_write_ids of one table at the current snapshot in one statement, without the
open-txn list: which of the table's write ids belong to a txn open or aborted now. A settled
floor (txns.SettledTxns) says every txn below it is committed or gone but the unsettled ones,
so only the table's rows at or above the floor and those of the unsettled txns are candidates,
each looked up in TXNS. The same answer as the list's snapshot (Hive's getValidWriteIds with no
validTxnList): the list's other entries hold no write ids of the table, as a txn's write ids
need its row (a txn with a row here is visible in the same snapshot); a candidate whose row is
gone since counts as open by the list's gap rule (below a row younger than the open window),
else as finished; read-only txns are not in a snapshot's exceptions. Rows: ``h`` (the write-id
hwm, ``y`` when a write id at or below it is valid) first, then ``w`` (write id, ``o`` or
``a``) by write id."""


def table_write_ids_settled(
    on: Connection | PooledCursor,
    window_ms: int,
    floor: int,
    unsettled: list[int],
    db: str,
    table: str,
) -> tuple[int, bool, list[tuple[int, bool]]]:
    """The table's write-id hwm, whether a write id at or below it is valid, and the (write id,
    aborted) of its write ids whose txn is open or aborted now, by write id."""
    values = {
        "window": window_ms,
        "floor": floor,
        "unsettled": unsettled,
        "db": db,
        "tbl": table,
    }
    rows = _rows(on, _TABLE_WRITE_IDS_SETTLED, values)
    hwm, found = (int(rows[0][1]), rows[0][2] == "y") if rows else (0, False)
    return hwm, found, [(int(r[1]), r[2] == "a") for r in rows[1:]]


_LIST_TYPES = {"window": "bigint", "floor": "bigint", "unsettled": "bigint[]"}
_OPEN_TXN_LIST = generic_prepared(
    "hms_open_txn_list", _open_txn_list_sql(False), _LIST_TYPES, at_connect=True
)
_OPEN_TXN_LIST_INFO = generic_prepared(
    "hms_open_txn_list_info", _open_txn_list_sql(True), _LIST_TYPES, at_connect=True
)
"""txns.open_txn_list's query: from the settled floor up every row not committed and, from the
predecessor of the oldest young one, the committed rows that follow a gap in the ids, and the
top row; below the floor that predecessor and the unsettled rows. Columns TXN_ID, TXN_STATE,
TXN_TYPE, age, first_young (and with info the user, host, start and heartbeat), prev_id (the
id of the row before it from the floor up; NULL below the floor) and next_id. The committed
rows between (a busy server's whole open window: hundreds of rows per call, each sent and
decoded) say nothing the gaps do not."""


def open_txn_rows(
    on: Connection | PooledCursor, window_ms: int, floor: int, unsettled: list[int], info: bool
) -> Sequence[Any]:
    """The rows of txns.open_txn_list's query, in TXN_ID order (columns by position)."""
    statement = _OPEN_TXN_LIST_INFO if info else _OPEN_TXN_LIST
    values = {"window": window_ms, "floor": floor, "unsettled": unsettled}
    return _rows(on, statement, values)


def _rows(on: Connection | PooledCursor, statement: Prepared, values: dict[str, Any]) -> Any:
    """``statement``'s rows on a SQLAlchemy connection (Row objects) or on
    ``Database.autocommit_cursor``'s bare cursor (plain tuples: no Row or Result per call,
    for the hot reads); either way indexed by column position."""
    if isinstance(on, PooledCursor):
        cursor = on.cursor
        cursor.execute(statement.pooled_text(on), values)
        return cursor.fetchall()
    return on.exec_driver_sql(statement.text(on), values).all()


HEARTBEAT_TXN_SQL = (
    f'UPDATE "TXNS" SET "TXN_LAST_HEARTBEAT" = {_NOW_MS} '
    'WHERE "TXN_ID" = %(txn)s AND "TXN_STATE" = \'o\''
)
"""heartbeatTxn: an open txn's heartbeat; no row means it is not open."""
HEARTBEAT_LOCK_SQL = (
    f'UPDATE "HIVE_LOCKS" SET "HL_LAST_HEARTBEAT" = {_NOW_MS} WHERE "HL_LOCK_EXT_ID" = %(ext)s'
)
"""heartbeatLock: every row of the lock; no row means there is no such lock."""


_CHECK_HELD = Prepared(
    "hms_check_held_lock",
    'WITH mine AS (SELECT "HL_TXNID" AS txn, "HL_LOCK_STATE" AS state FROM "HIVE_LOCKS" '
    'WHERE "HL_LOCK_EXT_ID" = %(ext)s), '
    "held AS (SELECT count(*) AS n, count(*) FILTER (WHERE state = 'a') AS acquired, "
    "min(txn) AS txn FROM mine), "
    f'txn_beat AS (UPDATE "TXNS" SET "TXN_LAST_HEARTBEAT" = {_NOW_MS} '
    'WHERE "TXN_ID" = (SELECT txn FROM held WHERE n > 0 AND n = acquired AND txn > 0) '
    "AND \"TXN_STATE\" = 'o' RETURNING 1), "
    f'lock_beat AS (UPDATE "HIVE_LOCKS" SET "HL_LAST_HEARTBEAT" = {_NOW_MS} '
    'WHERE "HL_LOCK_EXT_ID" = %(ext)s AND "HL_TXNID" <= 0 '
    "AND EXISTS (SELECT 1 FROM held WHERE n > 0 AND n = acquired) RETURNING 1) "
    "SELECT held.n, held.acquired, held.txn, (SELECT count(*) FROM txn_beat), "
    '(SELECT count(*) FROM lock_beat), (SELECT "NEXT_EVENT_ID" FROM "NOTIFICATION_SEQUENCE") '
    "FROM held",
    {"ext": "bigint"},
)
"""check_lock of a lock whose rows are all acquired, as one autocommit statement: the
heartbeat checkLock gives first (its txn's if it has one, else the lock's own), the rows'
count, how many are acquired, their txn, how many rows each heartbeat changed, and
NEXT_EVENT_ID in the same snapshot (every write the grant waited for, and every write
acknowledged before this call, committed before it). Nothing is changed unless every row is
acquired."""


_UNLOCK = Prepared(
    "hms_unlock",
    'DELETE FROM "HIVE_LOCKS" WHERE "HL_LOCK_EXT_ID" = %(ext)s '
    'AND ("HL_TXNID" = 0 OR "HL_LOCK_STATE" = \'w\')',
    {"ext": "bigint"},
)
"""unlock's one change: the rows of a lock without a txn, or of a txn's lock still waiting
(a txn's acquired locks end with the txn)."""


def unlock_rows(on: PooledCursor, ext_id: int) -> int:
    """Delete the rows ``_UNLOCK`` releases of lock ``ext_id``; how many there were."""
    return _rowcount(on, _UNLOCK, {"ext": ext_id})


def check_held_lock(on: PooledCursor, ext_id: int) -> tuple[int, int, int, int, int, int]:
    """``_CHECK_HELD``'s one row: (rows, acquired rows, txn id or 0, TXNS rows heartbeaten,
    lock rows heartbeaten, NEXT_EVENT_ID or 0)."""
    cursor = on.cursor
    cursor.execute(_CHECK_HELD.pooled_text(on), {"ext": ext_id})
    n, acquired, txn, txn_beat, lock_beat, next_event = cursor.fetchone()
    return (
        int(n),
        int(acquired),
        int(txn or 0),
        int(txn_beat),
        int(lock_beat),
        int(next_event or 0),
    )


_HEARTBEAT_TXN = Prepared(
    "hms_heartbeat_txn", HEARTBEAT_TXN_SQL, {"txn": "bigint"}, at_connect=True
)
_HEARTBEAT_LOCK = Prepared(
    "hms_heartbeat_lock", HEARTBEAT_LOCK_SQL, {"ext": "bigint"}, at_connect=True
)


def heartbeat_txn(on: Connection | PooledCursor, txn_id: int) -> int:
    """Refresh ``txn_id``'s heartbeat if it is open; the rows updated (0 or 1)."""
    return _rowcount(on, _HEARTBEAT_TXN, {"txn": txn_id})


def heartbeat_lock(on: Connection | PooledCursor, ext_id: int) -> int:
    """Refresh the heartbeat of lock ``ext_id``'s rows; how many there were."""
    return _rowcount(on, _HEARTBEAT_LOCK, {"ext": ext_id})


def _rowcount(on: Connection | PooledCursor, statement: Prepared, values: dict[str, Any]) -> int:
    """The rows ``statement`` (an INSERT, UPDATE or DELETE) changed, run on a connection or on
    ``Database.autocommit_cursor``'s bare cursor."""
    if isinstance(on, PooledCursor):
        on.cursor.execute(statement.pooled_text(on), values)
        return int(on.cursor.rowcount)
    return int(on.exec_driver_sql(statement.text(on), values).rowcount)


_ALLOCATE_READ = Prepared(
    "hms_allocate_read",
    'SELECT \'txn\', "TXN_ID", "TXN_STATE", "TXN_TYPE", NULL::bigint FROM "TXNS" '
    'WHERE "TXN_ID" = ANY(%(txns)s) UNION ALL '
    'SELECT \'wid\', "T2W_TXNID", NULL, NULL, "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" '
    'WHERE "T2W_DATABASE" = %(db)s AND "T2W_TABLE" = %(tbl)s AND "T2W_TXNID" = ANY(%(txns)s)',
    {"txns": "bigint[]", "db": "text", "tbl": "text"},
    at_connect=True,
)
_LOCK_TXN_ROWS = (
    'SELECT 1 FROM "TXNS" WHERE "TXN_ID" = ANY(%(txns)s) ORDER BY "TXN_ID" FOR UPDATE; '
)

ALLOCATE_WRITE_IDS_SQL = (
    'WITH n AS (INSERT INTO "NEXT_WRITE_ID" AS w ("NWI_DATABASE", "NWI_TABLE", "NWI_NEXT") '
    'VALUES (%(db)s, %(tbl)s, 1 + %(k)s) ON CONFLICT ("NWI_DATABASE", "NWI_TABLE") '
    'DO UPDATE SET "NWI_NEXT" = w."NWI_NEXT" + %(k)s RETURNING "NWI_NEXT" - %(k)s AS first), '
    'ins AS (INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE", '
    '"T2W_WRITEID") SELECT m.txn, %(db)s, %(tbl)s, n.first + m.ord - 1 '
    "FROM n, unnest(%(missing)s::bigint[]) WITH ORDINALITY AS m (txn, ord)) "
    "SELECT set_config('hms.first_write_id', (SELECT first FROM n)::text, true); "
)
"""allocateTableWriteIds' writes for a message that goes on (the event's sequence lock): the
next write ids under NEXT_WRITE_ID's row lock (the row made for the table's first ids: an
upsert, so the sequence lock is never held while that row is waited for) and their
TXN_TO_WRITE_ID rows; the first id is kept in a transaction-local setting, read back by
ALLOCATED."""
ALLOCATED = ", current_setting('hms.first_write_id')"


def lock_and_read_allocation(
    conn: Connection, txns: list[int], db: str, table: str
) -> tuple[dict[int, tuple[str, int | None]], dict[int, int]]:
    """Lock the txns' rows (in id order), then read their (state, type) and the write ids the
    table already has for them. Call it first in the transaction (it may prepare)."""
    values = {"txns": txns, "db": db, "tbl": table}
    sql = _LOCK_TXN_ROWS + _ALLOCATE_READ.text(conn)
    found: dict[int, tuple[str, int | None]] = {}
    have: dict[int, int] = {}
    for kind, txn, state, txn_type, write_id in conn.exec_driver_sql(sql, values):
        if kind == "txn":
            found[int(txn)] = (state, None if txn_type is None else int(txn_type))
        else:
            have[int(txn)] = int(write_id)
    return found, have
