"""The history knob: finished transactions put straight into a target's database, and taken out.

A metastore that has served a while holds many finished transactions: committed TXNS rows until
housekeeping removes them, COMPLETED_TXN_COMPONENTS until the compactor cleans, TXN_TO_WRITE_ID
rows below the low-water mark. The ``*_history`` cases measure the transaction calls with
``HISTORY_TXNS`` of them in the database (made here in a few statements, since committing that
many through Thrift would take minutes), against the same cases on an empty history.

Our database (Hive 4's schema): what 100,000 insert txns committed one after another leave
until housekeeping's next round (Hive 4 keeps committed TXNS rows until then with either
min-history switch): TXNS rows in state ``c`` started an hour ago, one COMPLETED_TXN_COMPONENTS
and one TXN_TO_WRITE_ID row each, on a table of their own; with the level switch off
(``min_history_level`` False) also the WRITE_SET row each commit writes then, inserts too (commit
id: the txn hwm, its own id). No MIN_HISTORY_LEVEL rows (commit deletes a txn's) and no
NOTIFICATION_LOG rows: the log is read by EVENT_ID, a unique index, and a cache server would
have to apply any new event first. The stock 2.3 server's (its own txn tables, unquoted names):
Hive 2.3 deletes a txn's TXNS row at commit, so its history is the COMPLETED_TXN_COMPONENTS rows
and the txn ids they used. Every row is marked (user, table name), so ``remove`` takes out
exactly what ``add`` put in.

A server that served those txns would have its settled floor (``txns.Txns._settle``) above
them; one that sees them appear at once reads them all on each open-txn read (and, with the
level switch, each open) until the floor has moved up twice, a few seconds. ``settle`` makes
those reads before the cases are timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import create_engine, text

HISTORY_TXNS = 100_000
HISTORY_USER = "hms_bench_history"
HISTORY_DB = "hms_bench"
HISTORY_TABLE = "acid_history"
_HOUR_MS = 3_600_000
SETTLE_S = 6.0
"""Two moves of the settled floor at the default open_txn_timeout (1 s): 2 x 2 s, and a margin."""

_OURS_ADD = [
    'INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", '
    '"TXN_HOST", "TXN_TYPE") '
    "SELECT 'c', :started, :started, :user, 'bench', 0 FROM generate_series(1, :n)",
    'INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID") '
    'SELECT "TXN_ID", :db, :tbl, row_number() OVER (ORDER BY "TXN_ID") FROM "TXNS" '
    'WHERE "TXN_USER" = :user',
    'INSERT INTO "NEXT_WRITE_ID" ("NWI_DATABASE", "NWI_TABLE", "NWI_NEXT") '
    'SELECT :db, :tbl, count(*) + 1 FROM "TXN_TO_WRITE_ID" WHERE "T2W_TABLE" = :tbl',
    'INSERT INTO "COMPLETED_TXN_COMPONENTS" ("CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", '
    '"CTC_WRITEID", "CTC_UPDATE_DELETE") '
    'SELECT "T2W_TXNID", :db, :tbl, "T2W_WRITEID", \'N\' FROM "TXN_TO_WRITE_ID" '
    'WHERE "T2W_TABLE" = :tbl',
    # Planner statistics as autovacuum would have them in a database that served this history
    # (the benchmark's PostgreSQL runs without autovacuum).
    'ANALYZE "TXNS", "TXN_TO_WRITE_ID", "NEXT_WRITE_ID", "COMPLETED_TXN_COMPONENTS"',
]
_OURS_WRITE_SET = [
    'INSERT INTO "WRITE_SET" ("WS_DATABASE", "WS_TABLE", "WS_PARTITION", "WS_TXNID", '
    '"WS_COMMIT_ID", "WS_OPERATION_TYPE") '
    'SELECT :db, :tbl, NULL, "T2W_TXNID", "T2W_TXNID", \'i\' FROM "TXN_TO_WRITE_ID" '
    'WHERE "T2W_TABLE" = :tbl',
    'ANALYZE "WRITE_SET"',
]
_OURS_REMOVE = [
    'DELETE FROM "WRITE_SET" WHERE "WS_TABLE" = :tbl',
    'DELETE FROM "COMPLETED_TXN_COMPONENTS" WHERE "CTC_TABLE" = :tbl',
    'DELETE FROM "NEXT_WRITE_ID" WHERE "NWI_TABLE" = :tbl',
    'DELETE FROM "TXN_TO_WRITE_ID" WHERE "T2W_TABLE" = :tbl',
    'DELETE FROM "TXNS" WHERE "TXN_USER" = :user AND "TXN_STATE" = \'c\'',
]
_STOCK_ADD = [
    "INSERT INTO completed_txn_components (ctc_txnid, ctc_database, ctc_table) "
    "SELECT ntxn_next + g, :db, :tbl FROM next_txn_id, generate_series(0, :n - 1) AS g",
    "UPDATE next_txn_id SET ntxn_next = ntxn_next + :n",
]
_STOCK_REMOVE = ["DELETE FROM completed_txn_components WHERE ctc_table = :tbl"]


def _run(url: str, statements: list[str], n: int) -> int:
    """Run ``statements`` in one transaction; the rows the last one changed."""
    params = {
        "n": n,
        "user": HISTORY_USER,
        "db": HISTORY_DB,
        "tbl": HISTORY_TABLE,
        "started": int(time.time() * 1000) - _HOUR_MS,
    }
    engine = create_engine(url)
    changed = 0
    try:
        with engine.begin() as conn:
            for statement in statements:
                changed = conn.execute(text(statement), params).rowcount
    finally:
        engine.dispose()
    return int(changed)


def add(url: str, stock: bool, n: int = HISTORY_TXNS, min_history_level: bool = True) -> None:
    """Put ``n`` finished transactions into the database at ``url`` (PostgreSQL), as a server
    with ``txn_use_min_history_level`` as given leaves them."""
    ours = _OURS_ADD if min_history_level else _OURS_ADD + _OURS_WRITE_SET
    _run(url, _STOCK_ADD if stock else ours, n)


def settle(host: str, port: int, seconds: float = SETTLE_S) -> None:
    """get_open_txns on the server at ``host``:``port`` every 0.1 s for ``seconds``: its settled
    floor moves up (at most every open_txn_timeout + 1 s, to the top of an earlier read) until it
    is above the history, as it would be had the server served those txns."""
    from hms_cache_proxy.bench.cases import connect

    client = connect(host, port)
    try:
        keep_reading(client.get_open_txns, seconds)
    finally:
        client.close()


def keep_reading(read: Callable[[], object], seconds: float = SETTLE_S) -> None:
    """``read()`` every 0.1 s for ``seconds`` (``settle``'s calls, on any get_open_txns)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        read()
        time.sleep(0.1)


_OURS_TABLES = ["TXNS", "TXN_TO_WRITE_ID", "NEXT_WRITE_ID", "COMPLETED_TXN_COMPONENTS", "WRITE_SET"]
_STOCK_TABLES = ["completed_txn_components"]


def remove(url: str, stock: bool) -> int:
    """Take out what ``add`` put in (what housekeeping has removed meanwhile is gone already);
    how many of its txns were left (TXNS rows; the stock server's: COMPLETED_TXN_COMPONENTS).

    Then VACUUM ANALYZE the tables, as autovacuum would after a delete this size: without it
    a later target on the same database (with --database-url, the cache server after the db
    path) would read past 100,000 dead rows and plan with the history's statistics
    (docs/benchmarks.md, "The cache server's get_valid_write_ids in the history runs")."""
    left = _run(url, _STOCK_REMOVE if stock else _OURS_REMOVE, 0)
    tables = _STOCK_TABLES if stock else _OURS_TABLES
    engine = create_engine(url, isolation_level="AUTOCOMMIT")  # VACUUM runs outside a txn
    try:
        with engine.connect() as conn:
            conn.execute(text("VACUUM ANALYZE " + ", ".join(f'"{t}"' for t in tables)))
    finally:
        engine.dispose()
    return left
