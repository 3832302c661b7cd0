"""The history knob: finished transactions put straight into a target's database, and taken out.

A metastore that has served a while holds many finished transactions: committed TXNS rows until
housekeeping removes them, COMPLETED_TXN_COMPONENTS until the compactor cleans, TXN_TO_WRITE_ID
rows below the low-water mark. The ``*_history`` cases measure the transaction calls with
``HISTORY_TXNS`` of them in the database (made here in a few statements, since committing that
many through Thrift would take minutes), against the same cases on an empty history.

Our database (Hive 4's schema): TXNS rows in state ``c`` started an hour ago, one
COMPLETED_TXN_COMPONENTS and one TXN_TO_WRITE_ID row each, on a table of their own. The stock
2.3 server's (its own txn tables, unquoted names): Hive 2.3 deletes a txn's TXNS row at commit,
so its history is the COMPLETED_TXN_COMPONENTS rows and the txn ids they used. Every row is
marked (user, table name), so ``remove`` takes out exactly what ``add`` put in.
"""

from __future__ import annotations

from sqlalchemy import create_engine, text

HISTORY_TXNS = 100_000
HISTORY_USER = "hms_bench_history"
HISTORY_DB = "hms_bench"
HISTORY_TABLE = "acid_history"
_HOUR_MS = 3_600_000

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
_OURS_REMOVE = [
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


def _run(url: str, statements: list[str], n: int) -> None:
    import time

    params = {
        "n": n,
        "user": HISTORY_USER,
        "db": HISTORY_DB,
        "tbl": HISTORY_TABLE,
        "started": int(time.time() * 1000) - _HOUR_MS,
    }
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement), params)
    finally:
        engine.dispose()


def add(url: str, stock: bool, n: int = HISTORY_TXNS) -> None:
    """Put ``n`` finished transactions into the database at ``url`` (PostgreSQL)."""
    _run(url, _STOCK_ADD if stock else _OURS_ADD, n)


def remove(url: str, stock: bool) -> None:
    """Take out what ``add`` put in (what housekeeping has removed meanwhile is gone already)."""
    _run(url, _STOCK_REMOVE if stock else _OURS_REMOVE, 0)
