"""init-db and the schema check on a real PostgreSQL, compared with Hive's own schema.

The database init_db creates is read back from PostgreSQL's catalog (format_type, defaults,
constraints, indexes, sequences) and compared with the facts the same way the facts were checked
against a database loaded with Hive's script, and with a database built as schematool builds it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, select, text

from hms_cache_proxy.store.db import ids, schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql import bootstrap
from hms_cache_proxy.store.sql.bootstrap import SchemaError, ensure_ready, init_db
from tests.support.postgres import PostgresServer
from tests.support.schematool import build_schematool_database, load_schema_facts

pytestmark = pytest.mark.postgres

WAREHOUSE = "file:/tmp/hms-warehouse"
FACTS = load_schema_facts()

_FK_ACTIONS = {
    "a": "no action",
    "r": "restrict",
    "c": "cascade",
    "n": "set null",
    "d": "set default",
}


# -- reading PostgreSQL's catalog -----------------------------------------------------------------


def _columns(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    rows = conn.exec_driver_sql(
        """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid)
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY c.relname, a.attnum
        """
    )
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, *col in rows:
        out.setdefault(table, []).append(tuple(col))
    return out


_CONSTRAINT_FIELDS = (
    "table", "name", "kind", "definition", "deferrable", "deferred", "on_delete", "on_update",
    "columns", "ref_table", "ref_columns",
)  # fmt: skip


def _constraints(conn: Connection) -> list[dict[str, Any]]:
    """Every constraint in schema public, as PostgreSQL records it."""
    rows = conn.exec_driver_sql(
        """
        SELECT t.relname, con.conname, con.contype, pg_get_constraintdef(con.oid),
               con.condeferrable, con.condeferred, con.confdeltype, con.confupdtype,
               ARRAY(SELECT a.attname::text
                     FROM unnest(con.conkey) WITH ORDINALITY AS k(num, pos)
                     JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num
                     ORDER BY k.pos),
               r.relname,
               ARRAY(SELECT a.attname::text
                     FROM unnest(con.confkey) WITH ORDINALITY AS k(num, pos)
                     JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num
                     ORDER BY k.pos)
        FROM pg_constraint con
        JOIN pg_class t ON t.oid = con.conrelid
        JOIN pg_namespace n ON n.oid = con.connamespace
        LEFT JOIN pg_class r ON r.oid = con.confrelid
        WHERE n.nspname = 'public'
        ORDER BY t.relname, con.conname
        """
    )
    return [
        {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in zip(_CONSTRAINT_FIELDS, row, strict=True)
        }
        for row in rows
    ]


def _indexes(conn: Connection) -> list[tuple[Any, ...]]:
    """(table, name, unique, method, columns, backs a constraint, definition) for every index."""
    rows = conn.exec_driver_sql(
        """
        SELECT t.relname, i.relname, x.indisunique, am.amname,
               ARRAY(SELECT a.attname::text
                     FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(num, pos)
                     JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.num
                     ORDER BY k.pos),
               EXISTS (SELECT 1 FROM pg_constraint c
                       WHERE c.conindid = x.indexrelid AND c.contype IN ('p', 'u')),
               pg_get_indexdef(x.indexrelid)
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_am am ON am.oid = i.relam
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public'
        ORDER BY t.relname, i.relname
        """
    )
    return [tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in rows]


def _sequences(conn: Connection) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.exec_driver_sql(
            """
            SELECT sequencename, data_type::text, start_value, increment_by, max_value
            FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename
            """
        )
    ]


def catalog_snapshot(conn: Connection) -> dict[str, Any]:
    return {
        "columns": _columns(conn),
        "constraints": _constraints(conn),
        "indexes": _indexes(conn),
        "sequences": _sequences(conn),
    }


def contents(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every metastore table, in a stable order."""
    out = {}
    for table in schema.metadata.sorted_tables:
        rows = conn.execute(select(table).order_by(*table.columns)).all()
        out[table.name] = [tuple(r) for r in rows]
    return out


# -- what the facts say PostgreSQL shows ---------------------------------------------------------


def expected_pg_default(col: dict[str, Any]) -> str | None:
    """The column default as pg_get_expr shows it, per tests/data/README.md."""
    if "serial_sequence" in col:
        return f"nextval('\"{col['serial_sequence']}\"'::regclass)"
    default = col["default"]
    if default is None:
        return None
    if col["pg_type"].startswith("character varying"):
        if default in ("NULL", "NULL::character varying"):
            return "NULL::character varying"
        if default.startswith("'"):
            return f"{default}::character varying"
    if col["pg_type"] == "text" and default == "NULL":
        return None  # PostgreSQL stores no default for text DEFAULT NULL
    return default


def assert_catalog_matches_facts(snap: dict[str, Any]) -> None:
    tables = {t["name"]: t for t in FACTS["tables"]}
    assert sorted(snap["columns"]) == sorted(tables)

    for name, t in tables.items():
        expected = [
            (c["name"], c["pg_type"], c["nullable"], expected_pg_default(c)) for c in t["columns"]
        ]
        assert snap["columns"][name] == expected, name

    by_type: dict[str, set[tuple[Any, ...]]] = {"p": set(), "u": set(), "c": set(), "f": set()}
    for c in snap["constraints"]:
        key = (c["table"], c["name"])
        if c["kind"] in ("p", "u"):
            by_type[c["kind"]].add((*key, c["columns"]))
        elif c["kind"] == "c":
            by_type["c"].add((*key, c["definition"]))
        elif c["kind"] == "f":
            by_type["f"].add(
                (*key, c["columns"], c["ref_table"], c["ref_columns"],
                 _FK_ACTIONS[c["on_delete"]], _FK_ACTIONS[c["on_update"]],
                 c["deferrable"], c["deferred"])
            )  # fmt: skip
        else:
            pytest.fail(f"unexpected constraint {key} of type {c['kind']}")
    assert by_type["p"] == {
        (n, t["primary_key_name"], tuple(t["primary_key"]))
        for n, t in tables.items()
        if t["primary_key"]
    }
    assert by_type["u"] == {
        (n, u["name"], tuple(u["columns"]))
        for n, t in tables.items()
        for u in t["unique_constraints"]
    }
    assert by_type["c"] == {
        (n, c["name"], f"CHECK (({c['expression']}))")
        for n, t in tables.items()
        for c in t["check_constraints"]
    }
    assert by_type["f"] == {
        (n, f["name"], tuple(f["columns"]), f["ref_table"], tuple(f["ref_columns"]),
         f["on_delete"], f["on_update"], f["deferrable"], f["initially_deferred"])
        for n, t in tables.items()
        for f in t["foreign_keys"]
    }  # fmt: skip

    plain_indexes = {
        (tbl, name, unique, method, cols)
        for tbl, name, unique, method, cols, backs_constraint, _def in snap["indexes"]
        if not backs_constraint
    }
    assert plain_indexes == {
        (n, i["name"], i["unique"], i["method"], tuple(i["columns"]))
        for n, t in tables.items()
        for i in t["indexes"]
    }

    serials = sorted(
        c["serial_sequence"]
        for t in FACTS["tables"]
        for c in t["columns"]
        if "serial_sequence" in c
    )
    assert [seq[0] for seq in snap["sequences"]] == serials


def seeded_rows(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """The seeded tables' rows, restricted to the columns the script's INSERTs fill."""
    columns: dict[str, list[str]] = {}
    for row in FACTS["seed_rows"]:
        columns.setdefault(row["table"], row["columns"])
    out = {}
    for name, cols in columns.items():
        table = schema.metadata.tables[name]
        rows = conn.execute(select(*(table.c[c] for c in cols)).order_by(*table.columns))
        out[name] = sorted(tuple(r) for r in rows)
    return out


def default_role_sequences(rows: dict[str, list[tuple[Any, ...]]]) -> list[tuple[str, int]]:
    """The SEQUENCE_TABLE rows the first start's roles and admin grant leave behind."""
    return [
        (ids.ROLE.name, max(r[0] for r in rows["ROLES"]) + 1),
        (ids.GLOBAL_PRIVILEGE.name, max(r[0] for r in rows["GLOBAL_PRIVS"]) + 1),
    ]


def assert_default_roles(rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """HMSHandler.createDefaultRoles' rows: roles admin and public, admin's global ``All``."""
    assert sorted((r[3], r[2]) for r in rows["ROLES"]) == [("admin", "admin"), ("public", "public")]
    ((_, created, *grant),) = rows["GLOBAL_PRIVS"]
    assert created > 1_600_000_000
    assert grant == [1, "admin", "ROLE", "admin", "ROLE", "All", "SQL"]


def expected_seed_rows() -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for row in FACTS["seed_rows"]:
        out.setdefault(row["table"], []).append(tuple(row["values"]))
    return {k: sorted(v) for k, v in out.items()}


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture
def database(pg_url: str) -> Iterator[Database]:
    db = Database(pg_url)
    yield db
    db.dispose()


@pytest.fixture
def schematool_db(pg_server: PostgresServer) -> Iterator[Database]:
    """A database as Hive's schematool leaves it (a database of its own, next to pg_url's)."""
    name = f"schematool_{secrets.token_hex(4)}"
    url = pg_server.new_database(name)
    build_schematool_database(url)
    db = Database(url)
    yield db
    db.dispose()
    pg_server.drop_database(name)


def _snapshot(db: Database, fn: Callable[[Connection], Any]) -> Any:
    with db.read() as conn:
        return fn(conn)


# -- tests -----------------------------------------------------------------------------------------


def test_init_db_catalog_matches_facts(database: Database) -> None:
    msg = init_db(database, WAREHOUSE)
    assert msg.startswith("Created the Hive 4.0.0 metastore schema")
    assert_catalog_matches_facts(_snapshot(database, catalog_snapshot))


def test_schematool_catalog_matches_facts(schematool_db: Database) -> None:
    """The stand-in for schematool is itself held to the facts."""
    assert_catalog_matches_facts(_snapshot(schematool_db, catalog_snapshot))


def test_init_db_catalog_equals_schematool_catalog(
    database: Database, schematool_db: Database
) -> None:
    init_db(database, WAREHOUSE)
    ours = _snapshot(database, catalog_snapshot)
    hive = _snapshot(schematool_db, catalog_snapshot)
    assert ours == hive


def test_schematool_seed_rows_match_facts(schematool_db: Database) -> None:
    with schematool_db.read() as conn:
        assert seeded_rows(conn) == expected_seed_rows()


def test_init_db_seed_rows_and_first_start(database: Database) -> None:
    init_db(database, WAREHOUSE)
    with database.read() as conn:
        rows = contents(conn)
        seeded = seeded_rows(conn)
    # The script's rows, plus the first start: catalog location set, DB_ID taken from
    # SEQUENCE_TABLE.
    expected = expected_seed_rows()
    expected["CTLGS"] = [(1, "hive", "Default catalog for Hive", WAREHOUSE, None)]
    expected["SEQUENCE_TABLE"] = sorted(
        [
            *expected["SEQUENCE_TABLE"],
            (ids.DATABASE.name, rows["DBS"][0][0] + 1),
            *default_role_sequences(rows),
        ]
    )
    assert seeded == expected
    assert_default_roles(rows)
    assert rows["CTLGS"] == [(1, "hive", "Default catalog for Hive", WAREHOUSE, None)]
    (
        (db_id, desc, location, name, owner, owner_type, ctlg, created, managed, kind, dc, remote),
    ) = rows["DBS"]
    assert (desc, location, name, owner, owner_type, ctlg, kind) == (
        "Default Hive database",
        WAREHOUSE,
        "default",
        "public",
        "ROLE",
        "hive",
        "NATIVE",
    )
    assert created > 1_600_000_000 and managed is None and dc is None and remote is None
    sequences = dict(rows["SEQUENCE_TABLE"])
    assert sequences[ids.NOTIFICATION_LOG.name] == 1
    assert sequences[ids.TXN_WRITE_NOTIFICATION_LOG.name] == 1
    assert sequences[ids.DATABASE.name] > db_id  # the id came from SEQUENCE_TABLE
    assert rows["NOTIFICATION_SEQUENCE"] == [(1, 1)]
    assert rows["TXNS"] == [(0, "c", 0, 0, "", "", None, None, None, None)]
    assert rows["TXN_LOCK_TBL"] == [(1,)]
    assert rows["NEXT_LOCK_ID"] == [(1,)]
    assert rows["NEXT_COMPACTION_QUEUE_ID"] == [(1,)]
    assert rows["VERSION"] == [(1, "4.0.0", "Hive release version 4.0.0")]
    seeded = {r["table"] for r in FACTS["seed_rows"]} | {"DBS", "ROLES", "GLOBAL_PRIVS"}
    assert all(not v for k, v in rows.items() if k not in seeded), "rows outside the seed"


def test_txn_ids_come_from_hive_sequence(database: Database) -> None:
    init_db(database, WAREHOUSE)

    def open_txn(conn: Connection) -> int:
        return conn.execute(
            schema.TXNS.insert()
            .values(TXN_STATE="o", TXN_STARTED=1, TXN_LAST_HEARTBEAT=1, TXN_USER="u", TXN_HOST="h")
            .returning(schema.TXNS.c.TXN_ID)
        ).scalar_one()

    assert database.transaction(open_txn) == 1
    assert database.transaction(open_txn) == 2
    with database.read() as conn:
        seq = conn.execute(text("SELECT pg_get_serial_sequence('\"TXNS\"', 'TXN_ID')")).scalar()
    assert seq == 'public."TXNS_TXN_ID_seq"'


def test_init_db_twice_changes_nothing(database: Database) -> None:
    init_db(database, WAREHOUSE)
    before = _snapshot(database, lambda c: (catalog_snapshot(c), contents(c)))
    msg = init_db(database, "file:/elsewhere")
    assert "already initialised" in msg and "4.0.0" in msg
    assert _snapshot(database, lambda c: (catalog_snapshot(c), contents(c))) == before
    ensure_ready(database, "file:/elsewhere", auto_create=True)
    assert _snapshot(database, lambda c: (catalog_snapshot(c), contents(c))) == before


def test_concurrent_init_db_creates_once(pg_url: str) -> None:
    barrier = threading.Barrier(2)
    messages: list[str] = []
    errors: list[BaseException] = []

    def run() -> None:
        db = Database(pg_url)
        try:
            barrier.wait()
            messages.append(init_db(db, WAREHOUSE))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            db.dispose()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    created = [m for m in messages if m.startswith("Created")]
    already = [m for m in messages if "already initialised" in m]
    assert len(created) == 1 and len(already) == 1, messages


def test_schematool_database_is_served_as_is(schematool_db: Database) -> None:
    with schematool_db.read() as conn:
        assert conn.execute(select(schema.DBS)).all() == []
        assert conn.execute(select(schema.CTLGS.c.LOCATION_URI)).scalar_one() == "TBD"
        tables_before = contents(conn)

    ensure_ready(schematool_db, WAREHOUSE, auto_create=False)

    with schematool_db.read() as conn:
        after = contents(conn)
    assert after["CTLGS"] == [(1, "hive", "Default catalog for Hive", WAREHOUSE, None)]
    ((db_id, *rest),) = after["DBS"]
    assert rest[:6] == ["Default Hive database", WAREHOUSE, "default", "public", "ROLE", "hive"]
    assert dict(after["SEQUENCE_TABLE"])[ids.DATABASE.name] > db_id
    assert_default_roles(after)
    # Nothing else was touched.
    for name in set(tables_before) - {"CTLGS", "DBS", "SEQUENCE_TABLE", "ROLES", "GLOBAL_PRIVS"}:
        assert after[name] == tables_before[name], name

    msg = init_db(schematool_db, WAREHOUSE)
    assert "already initialised" in msg and "4.0.0" in msg
    ensure_ready(schematool_db, WAREHOUSE, auto_create=False)  # a second start changes nothing
    with schematool_db.read() as conn:
        assert contents(conn) == after


def test_concurrent_first_start_creates_one_default_database(schematool_db: Database) -> None:
    url = schematool_db.url.render_as_string(hide_password=False)
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def run() -> None:
        db = Database(url)
        try:
            barrier.wait()
            ensure_ready(db, WAREHOUSE, auto_create=False)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            db.dispose()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with schematool_db.read() as conn:
        assert len(conn.execute(select(schema.DBS)).all()) == 1


@pytest.mark.parametrize("auto_create", [False, True])
def test_old_schema_version_is_refused(schematool_db: Database, auto_create: bool) -> None:
    schematool_db.transaction(
        lambda conn: conn.execute(schema.VERSION.update().values(SCHEMA_VERSION="3.1.0"))
    )
    with pytest.raises(SchemaError) as info:
        ensure_ready(schematool_db, WAREHOUSE, auto_create=auto_create)
    msg = str(info.value)
    assert "3.1.0" in msg and "4.0.0" in msg and "schematool" in msg
    with schematool_db.read() as conn:
        assert conn.execute(select(schema.DBS)).all() == []  # nothing was done to it

    with pytest.raises(SchemaError) as info:  # not a success: init-db exits non-zero
        init_db(schematool_db, WAREHOUSE)
    msg = str(info.value)
    assert "already initialised" in msg and "3.1.0" in msg and "-upgradeSchema" in msg


def test_missing_version_or_tables_are_refused(schematool_db: Database) -> None:
    schematool_db.transaction(lambda conn: conn.exec_driver_sql('DROP TABLE "WRITE_SET"'))
    with pytest.raises(SchemaError, match="WRITE_SET"):
        ensure_ready(schematool_db, WAREHOUSE, auto_create=True)
    schematool_db.transaction(lambda conn: conn.execute(schema.VERSION.delete()))
    with pytest.raises(SchemaError, match="no VERSION row"):
        ensure_ready(schematool_db, WAREHOUSE, auto_create=True)
    with pytest.raises(SchemaError, match="no VERSION row"):
        init_db(schematool_db, WAREHOUSE)


def test_empty_database_needs_init_db_or_auto_create(database: Database) -> None:
    with pytest.raises(SchemaError) as info:
        ensure_ready(database, WAREHOUSE, auto_create=False)
    assert "`hms-cache-proxy init-db` with the same settings" in str(info.value)
    with database.read() as conn:
        assert bootstrap._read_state(conn).empty  # nothing was created

    ensure_ready(database, WAREHOUSE, auto_create=True)
    with database.read() as conn:
        assert conn.execute(select(schema.VERSION.c.SCHEMA_VERSION)).scalar_one() == "4.0.0"
        assert conn.execute(select(schema.DBS.c.NAME)).scalar_one() == "default"
