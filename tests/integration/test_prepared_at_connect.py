"""Statements prepared as each pooled PostgreSQL session opens (``Prepared(at_connect=True)``,
store/db/prepared.py): inside a write's transaction they go as EXECUTE (a PREPARE cannot run
there), a session without the tables yet is left clean, and behind a transaction pooler
(``database_pooler: transaction``) nothing is ever prepared. The same sessions run with
PostgreSQL's JIT compiler off."""

from __future__ import annotations

from typing import Any

import psycopg2
import pytest
from sqlalchemy import Connection

from hms_cache_proxy.store.db import prepared
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.prepared import AT_CONNECT
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.partition_reads import ResolvedTable
from hms_cache_proxy.store.txn import pgsql
from tests.support.stores import sql_store

pytestmark = pytest.mark.postgres

WRITE_IDS_NOW = "hms_write_ids_now"


@pytest.fixture
def schema_url(pg_url: str) -> str:
    setup = Database(pg_url)
    try:
        init_db(setup, "file:/tmp/wh")
    finally:
        setup.dispose()
    return pg_url


def _executions(conn: Connection, name: str) -> int:
    """How often this session ran prepared statement ``name`` (0: not prepared)."""
    row = conn.exec_driver_sql(
        "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE name = %(n)s",
        {"n": name},
    ).first()
    return -1 if row is None else int(row[0])


def _write_ids_now(conn: Connection) -> list[tuple[Any, ...]]:
    return _timeless(pgsql.write_ids_now_rows(conn, 1000, 0, [], "default", "t"))


def _timeless(rows: Any) -> list[tuple[Any, ...]]:
    """The rows without their age column (a txn's age changes between two statements)."""
    return [tuple(r[:4]) + tuple(r[5:]) for r in rows]


def test_the_write_ids_statement_is_registered_for_connect() -> None:
    assert AT_CONNECT[WRITE_IDS_NOW] is pgsql._WRITE_IDS_NOW


def test_a_statement_prepared_at_connect_is_executed_inside_a_transaction(
    schema_url: str,
) -> None:
    db = Database(schema_url, pool_size=1)
    try:

        def run(conn: Connection) -> tuple[str, int, int, list[tuple[Any, ...]]]:
            conn.exec_driver_sql("SELECT 1")  # the transaction is under way
            sent = pgsql._WRITE_IDS_NOW.text(conn)
            before = _executions(conn, WRITE_IDS_NOW)
            rows = _write_ids_now(conn)
            return sent, before, _executions(conn, WRITE_IDS_NOW), rows

        sent, before, after, rows = db.transaction(run)
        assert sent.startswith(f"EXECUTE {WRITE_IDS_NOW} ")
        assert before >= 0, "not prepared when the session opened"
        assert after == before + 1
        with db.single_statement() as conn:
            as_text = _timeless(conn.exec_driver_sql(pgsql._WRITE_IDS_NOW.sql, _VALUES))
        assert rows == as_text
    finally:
        db.dispose()


_VALUES = {"window": 1000, "floor": 0, "unsettled": [], "db": "default", "tbl": "t"}


def test_partitions_loaded_by_id_go_as_a_prepared_statement(schema_url: str) -> None:
    """An alter of partitions loads what it wrote by id in its transaction: EXECUTE of
    hms_partitions_by_id (issue 23: planned as text on every acid insert before)."""
    db = Database(schema_url, pool_size=1)
    try:
        store = sql_store(db, "file:/tmp/wh")
        row = type("Row", (), {"TBL_ID": 1, "SD_ID": None})()
        tk = ResolvedTable(row, [], "hive", "default", "t")

        def run(conn: Connection) -> tuple[int, int, list[Any]]:
            before = _executions(conn, "hms_partitions_by_id")
            found = store.partition_reads.load_partitions(conn, tk, [1, 2])
            return before, _executions(conn, "hms_partitions_by_id"), found

        before, after, found = db.transaction(run)
        assert before >= 0, "not prepared when the session opened"
        assert (after, found) == (before + 1, [])
    finally:
        db.dispose()


def test_a_session_opened_before_the_tables_prepares_them_once_they_are_there(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(pg_url, pool_size=1)

    def inside(c: Connection) -> str:
        c.exec_driver_sql("SELECT 1")
        return pgsql._WRITE_IDS_NOW.text(c)

    try:
        with db.single_statement() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            assert raw.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_IDLE
            names = conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").all()
            assert names == []
        assert db.transaction(inside) == pgsql._WRITE_IDS_NOW.sql
        init_db(db, "file:/tmp/wh")
        monkeypatch.setattr(prepared, "RETRY_SECONDS", 0.0)
        assert db.transaction(inside).startswith(f"EXECUTE {WRITE_IDS_NOW} ")
        with db.single_statement() as conn:
            names = conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").scalars()
            assert set(AT_CONNECT) <= set(names)
    finally:
        db.dispose()


def test_behind_a_transaction_pooler_nothing_is_prepared(schema_url: str) -> None:
    db = Database(schema_url, pool_size=1, pooler="transaction")
    try:
        with db.single_statement() as conn:
            _write_ids_now(conn)
            assert pgsql._WRITE_IDS_NOW.text(conn) == pgsql._WRITE_IDS_NOW.sql
            names = conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").all()
        assert names == []

        def inside(conn: Connection) -> list[tuple[Any, ...]]:
            conn.exec_driver_sql("SELECT 1")
            _write_ids_now(conn)
            return [
                tuple(r) for r in conn.exec_driver_sql("SELECT name FROM pg_prepared_statements")
            ]

        assert db.transaction(inside) == []
    finally:
        db.dispose()


def test_pooled_sessions_run_without_the_jit_compiler(schema_url: str) -> None:
    """A session of the service's pools has jit off (a plan crossing jit_above_cost was
    compiled on every call); behind a transaction pooler the server's default stays."""
    db = Database(schema_url, pool_size=1)
    pooled = Database(schema_url, pool_size=1, pooler="transaction")
    try:
        with db.single_statement() as conn:
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
        assert db.transaction(lambda c: c.exec_driver_sql("SHOW jit").scalar()) == "off"
        with pooled.single_statement() as conn:
            assert conn.exec_driver_sql("SHOW jit").scalar() == "on"
    finally:
        db.dispose()
        pooled.dispose()
