"""init-db and the schema check on an embedded SQLite file (the default database)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, select

from hms_cache_proxy.store.db import ids, schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import SchemaError, ensure_ready, init_db

WAREHOUSE = "file:/tmp/hms-warehouse"


@pytest.fixture
def database(sqlite_url: str) -> Iterator[Database]:
    db = Database(sqlite_url)
    yield db
    db.dispose()


def contents(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.columns))]
        for t in schema.metadata.sorted_tables
    }


def sqlite_objects(conn: Connection) -> list[tuple[Any, ...]]:
    """Every table and index SQLite holds, with the SQL that made it."""
    return [tuple(r) for r in conn.exec_driver_sql("SELECT type, name, sql FROM sqlite_master")]


def test_metadata_creates_cleanly_on_sqlite(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'plain.db'}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema.metadata.create_all(engine)
    with engine.connect() as conn:
        objects = sqlite_objects(conn)
    engine.dispose()
    tables = {name for kind, name, _ in objects if kind == "table"}
    assert tables - {"sqlite_sequence"} == set(schema.metadata.tables)
    indexes = {name for kind, name, _ in objects if kind == "index"}
    assert {i.name for t in schema.metadata.tables.values() for i in t.indexes} <= indexes
    txns_sql = next(sql for kind, name, sql in objects if name == "TXNS")
    assert '"TXN_ID" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT' in txns_sql


def test_init_db_creates_seeds_and_default_database(database: Database) -> None:
    msg = init_db(database, WAREHOUSE)
    assert msg.startswith("Created the Hive 4.0.0 metastore schema")
    with database.read() as conn:
        rows = contents(conn)
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    assert rows["CTLGS"] == [(1, "hive", "Default catalog for Hive", WAREHOUSE, None)]
    ((db_id, *rest),) = rows["DBS"]
    assert rest[:6] == ["Default Hive database", WAREHOUSE, "default", "public", "ROLE", "hive"]
    created, managed, kind = rest[6], rest[7], rest[8]
    assert created > 1_600_000_000 and managed is None and kind == "NATIVE"
    sequences = dict(rows["SEQUENCE_TABLE"])
    assert sorted((r[3], r[2]) for r in rows["ROLES"]) == [("admin", "admin"), ("public", "public")]
    ((grant_id, _, *grant),) = rows["GLOBAL_PRIVS"]
    assert grant == [1, "admin", "ROLE", "admin", "ROLE", "All", "SQL"]
    assert sequences == {
        ids.NOTIFICATION_LOG.name: 1,
        ids.TXN_WRITE_NOTIFICATION_LOG.name: 1,
        ids.DATABASE.name: db_id + 1,
        ids.ROLE.name: max(r[0] for r in rows["ROLES"]) + 1,
        ids.GLOBAL_PRIVILEGE.name: grant_id + 1,
    }
    assert rows["NOTIFICATION_SEQUENCE"] == [(1, 1)]
    assert rows["TXNS"] == [(0, "c", 0, 0, "", "", None, None, None, None)]
    assert rows["TXN_LOCK_TBL"] == [(1,)]
    assert rows["NEXT_LOCK_ID"] == [(1,)]
    assert rows["NEXT_COMPACTION_QUEUE_ID"] == [(1,)]
    assert rows["VERSION"] == [(1, "4.0.0", "Hive release version 4.0.0")]


def test_init_db_twice_changes_nothing(database: Database) -> None:
    init_db(database, WAREHOUSE)
    with database.read() as conn:
        before = (sqlite_objects(conn), contents(conn))
    msg = init_db(database, "file:/elsewhere")
    assert "already initialised" in msg and "4.0.0" in msg
    ensure_ready(database, "file:/elsewhere", auto_create=True)
    with database.read() as conn:
        assert (sqlite_objects(conn), contents(conn)) == before


def test_ensure_ready_auto_creates_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "new.db"
    db = Database(f"sqlite:///{path}")
    try:
        ensure_ready(db, WAREHOUSE, auto_create=True)
        with db.read() as conn:
            assert conn.execute(select(schema.VERSION.c.SCHEMA_VERSION)).scalar_one() == "4.0.0"
            assert conn.execute(select(schema.DBS.c.NAME, schema.DBS.c.DB_LOCATION_URI)).all() == [
                ("default", WAREHOUSE)
            ]
    finally:
        db.dispose()
    assert path.is_file()


def test_ensure_ready_without_auto_create_refuses_an_empty_file(database: Database) -> None:
    with pytest.raises(SchemaError) as info:
        ensure_ready(database, WAREHOUSE, auto_create=False)
    assert "`hms-cache-proxy init-db` with the same settings" in str(info.value)
    with database.read() as conn:
        tables = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'").all()
    assert tables == []


def test_other_schema_version_is_refused(database: Database) -> None:
    init_db(database, WAREHOUSE)
    database.transaction(
        lambda conn: conn.execute(schema.VERSION.update().values(SCHEMA_VERSION="3.1.0"))
    )
    with pytest.raises(SchemaError) as info:
        ensure_ready(database, WAREHOUSE, auto_create=True)
    assert "3.1.0" in str(info.value) and "4.0.0" in str(info.value)


def test_txn_ids_autoincrement_and_are_never_reused(database: Database) -> None:
    init_db(database, WAREHOUSE)

    def open_txn(conn: Connection) -> int:
        return conn.execute(
            schema.TXNS.insert()
            .values(TXN_STATE="o", TXN_STARTED=1, TXN_LAST_HEARTBEAT=1, TXN_USER="u", TXN_HOST="h")
            .returning(schema.TXNS.c.TXN_ID)
        ).scalar_one()

    assert database.transaction(open_txn) == 1
    database.transaction(
        lambda conn: conn.execute(schema.TXNS.delete().where(schema.TXNS.c.TXN_ID == 1))
    )
    assert database.transaction(open_txn) == 2  # a sequence, like PostgreSQL's bigserial
