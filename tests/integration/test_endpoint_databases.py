"""Database calls through Apache Thrift's client, on SQLite and PostgreSQL: what a stock Hive
4.0 metastore answers (docs/compatibility.md lists where we differ, and why)."""

from __future__ import annotations

import time

import pytest

from tests.support.metastore import (
    event_body,
    event_types,
    events_since,
    last_event_id,
    raises,
    table,
    uri,
    warehouse_dir,
)


def test_create_database_round_trip_fills_location_owner_type_and_create_time(service, client, T):
    before = last_event_id(client)
    started = int(time.time())
    client.create_database(
        T.Database(name="Sales", description="the sales db", parameters={"k": "v"}, ownerName="bob")
    )
    db = client.get_database("SALES")
    wh = warehouse_dir(service)
    assert db.name == "sales"
    assert db.description == "the sales db"
    assert db.locationUri == uri(wh / "sales.db")
    assert db.parameters == {"k": "v"}
    assert db.ownerName == "bob"
    assert db.ownerType == T.PrincipalType.USER
    assert db.catalogName == "hive"
    assert started <= db.createTime <= int(time.time())
    assert db.managedLocationUri is None
    assert (wh / "sales.db").is_dir()
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["CREATE_DATABASE"]
    assert (events[0].dbName, events[0].catName) == ("sales", "hive")


def test_create_database_normalises_given_locations(service, client, T):
    wh = warehouse_dir(service)
    client.create_database(T.Database(name="a", locationUri=f"file://{wh}/dbs//a/"))
    client.create_database(T.Database(name="b", locationUri=f"{wh}/dbs/b"))
    assert client.get_database("a").locationUri == uri(wh / "dbs" / "a")
    assert client.get_database("b").locationUri == uri(wh / "dbs" / "b")
    assert (wh / "dbs" / "a").is_dir() and (wh / "dbs" / "b").is_dir()
    with raises(T.MetaException, contains="Relative path in absolute URI"):
        client.create_database(T.Database(name="c", locationUri="relative/dir"))


def test_create_database_checks_existence_then_name(client, T):
    client.create_database(T.Database(name="db1"))
    with pytest.raises(T.AlreadyExistsException) as exc:
        client.create_database(T.Database(name="DB1"))
    assert exc.value.message == "Database DB1 already exists"
    with pytest.raises(T.InvalidObjectException) as exc:
        client.create_database(T.Database(name="caf\u00e9"))
    assert exc.value.message == "caf\u00e9 is not a valid database name"
    with raises(T.InvalidObjectException, "bad\\name is not a valid database name"):
        client.create_database(T.Database(name="bad\\name"))
    # Hive 4 allows its special characters in database names
    client.create_database(T.Database(name="my-db.v1"))
    assert "my-db.v1" in client.get_all_databases()


def test_get_database_missing_names_catalog_and_database(client, T):
    with pytest.raises(T.NoSuchObjectException) as exc:
        client.get_database("NoSuchDb")
    assert exc.value.message == "database hive.nosuchdb"
    with raises(T.NoSuchObjectException, "database hive.nosuchdb"):
        client.get_database_req(T.GetDatabaseRequest(name="nosuchdb"))
    with raises(T.MetaException, contains="catalog marker"):
        client.get_database("@hive")
    assert client.get_database("@hive#default").name == "default"


def test_get_databases_follows_hive_patterns(client, T):
    for name in ("db1", "db2", "dbx_1", "other"):
        client.create_database(T.Database(name=name))
    assert client.get_all_databases() == ["db1", "db2", "dbx_1", "default", "other"]
    assert client.get_databases("*") == ["db1", "db2", "dbx_1", "default", "other"]
    assert client.get_databases("db.|def*") == ["db1", "db2", "default"]
    assert client.get_databases("DB*") == ["db1", "db2", "dbx_1"]
    assert client.get_databases("db_") == []  # '_' is literal, not a wildcard
    assert client.get_databases("dbx_1") == ["dbx_1"]
    assert client.get_databases("d%") == []
    assert client.get_databases("") == []


def test_database_path_lists_databases_in_one_statement_without_a_transaction(
    database_url, tmp_path, T
):
    """With the cache off, get_all_databases and get_databases are one SELECT each; on
    PostgreSQL in autocommit, so no BEGIN / ROLLBACK round trips around it."""
    from sqlalchemy import event

    from tests.support.cache import clients, instances

    with (
        instances(database_url, tmp_path, n=1, cache_enabled=False) as (svc,),
        clients(svc) as (c,),
    ):
        c.create_database(T.Database(name="zeta"))
        c.create_database(T.Database(name="alpha"))
        seen: list[tuple[str, object]] = []  # (statement, the driver connection's autocommit)

        def on_execute(_conn, cursor, statement, *_rest) -> None:
            seen.append((statement, getattr(cursor.connection, "autocommit", None)))

        engines = svc.store.db.engines()
        for engine in engines:
            event.listen(engine, "before_cursor_execute", on_execute)
        try:
            assert c.get_all_databases() == ["alpha", "default", "zeta"]
            assert c.get_databases("a*|z*") == ["alpha", "zeta"]
        finally:
            for engine in engines:
                event.remove(engine, "before_cursor_execute", on_execute)
        selects = [q for q, _ in seen if 'FROM "DBS"' in q]
        assert len(selects) == 2, seen
        if database_url.startswith("postgresql"):
            assert seen == [(q, True) for q in selects]  # nothing else, both in autocommit
        else:
            assert [q for q, _ in seen if q not in selects] == ["BEGIN", "BEGIN"]


def test_alter_database_replaces_parameters_and_owner_keeps_blank_fields(service, client, T):
    client.create_database(
        T.Database(name="db1", description="old", parameters={"a": "1"}, ownerName="bob")
    )
    before = last_event_id(client)
    client.alter_database(
        "DB1",
        T.Database(name="ignored", description="  ", parameters={"b": "2"}, ownerName=None),
    )
    db = client.get_database("db1")
    assert db.parameters == {"b": "2"}
    assert db.ownerName is None
    assert db.description == "old"
    assert db.locationUri == uri(warehouse_dir(service) / "db1.db")
    client.alter_database(
        "db1",
        T.Database(
            name="db1",
            locationUri=f"{warehouse_dir(service)}/moved/",
            ownerType=T.PrincipalType.ROLE,
        ),
    )
    db = client.get_database("db1")
    assert db.locationUri == uri(warehouse_dir(service) / "moved")
    assert db.ownerType == T.PrincipalType.ROLE
    assert db.parameters == {}
    assert event_types(client, T, before) == ["ALTER_DATABASE", "ALTER_DATABASE"]
    with raises(T.NoSuchObjectException, "database hive.nope"):
        client.alter_database("nope", T.Database(name="nope"))


def test_drop_database_refuses_default_and_reports_missing(client, T):
    with pytest.raises(T.MetaException) as exc:
        client.drop_database("DEFAULT", True, True)
    assert exc.value.message == "Can not drop default database in catalog hive"
    with raises(T.NoSuchObjectException, "database hive.nope"):
        client.drop_database("nope", True, False)
    client.drop_database_req(T.DropDatabaseRequest(name="nope", ignoreUnknownDb=True))
    with pytest.raises(T.NoSuchObjectException):
        client.drop_database_req(T.DropDatabaseRequest(name="nope", ignoreUnknownDb=False))


def test_drop_database_without_cascade_refuses_tables_and_functions(client, T):
    client.create_database(T.Database(name="db1"))
    client.create_table(table(T, "db1", "t1"))
    with pytest.raises(T.InvalidOperationException) as exc:
        client.drop_database("db1", True, False)
    assert exc.value.message == "Database db1 is not empty. One or more tables exist."
    client.drop_table("db1", "t1", True)
    client.create_function(
        T.Function(
            functionName="f1",
            dbName="db1",
            className="com.example.F",
            ownerName="bob",
            ownerType=T.PrincipalType.USER,
            functionType=T.FunctionType.JAVA,
            resourceUris=[],
        )
    )
    with pytest.raises(T.InvalidOperationException) as exc:
        client.drop_database("db1", True, False)
    assert exc.value.message == "Database db1 is not empty. One or more functions exist."
    assert client.get_database("db1").name == "db1"


def test_drop_database_cascade_drops_functions_tables_and_managed_data(
    service, client, T, tmp_path
):
    wh = warehouse_dir(service)
    client.create_database(T.Database(name="db1"))
    client.create_table(table(T, "db1", "managed", keys=["ds:string"]))
    client.add_partition(
        T.Partition(
            values=["x"],
            dbName="db1",
            tableName="managed",
            sd=table(T, "db1", "managed").sd,
            parameters={},
        )
    )
    external_dir = tmp_path / "ext"  # outside the warehouse: metadata only, never touched
    external_dir.mkdir()
    client.create_table(
        table(
            T,
            "db1",
            "ext",
            location=str(external_dir),
            params={"EXTERNAL": "TRUE"},
            table_type="EXTERNAL_TABLE",
        )
    )
    client.create_function(
        T.Function(
            functionName="f1",
            dbName="db1",
            className="com.example.F",
            ownerType=T.PrincipalType.USER,
            functionType=T.FunctionType.JAVA,
            resourceUris=[],
        )
    )
    (external_dir / "data.txt").write_text("keep me")
    before = last_event_id(client)
    client.drop_database("db1", True, True)
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == [
        "DROP_FUNCTION",
        "DROP_TABLE",
        "DROP_TABLE",
        "DROP_DATABASE",
    ]
    assert sorted(e.tableName for e in events if e.eventType == "DROP_TABLE") == ["ext", "managed"]
    assert event_body(events[-1])["db"] == "db1"
    assert not (wh / "db1.db").exists()
    assert (external_dir / "data.txt").read_text() == "keep me"
    with pytest.raises(T.NoSuchObjectException):
        client.get_database("db1")


def test_drop_database_keeps_directory_without_delete_data(service, client, T):
    client.create_database(T.Database(name="db1"))
    client.create_table(table(T, "db1", "t1"))
    client.drop_database("db1", False, True)
    assert (warehouse_dir(service) / "db1.db" / "t1").is_dir()
    assert "db1" not in client.get_all_databases()
