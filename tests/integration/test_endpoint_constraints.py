"""Constraint calls through Apache Thrift's client, on SQLite and PostgreSQL: stored in
KEY_CONSTRAINTS as Hive lays them out, answered by the get_* calls, dropped with
drop_constraint and with their table, each change written as Hive's event."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import select

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from tests.support.cache import wait_until
from tests.support.metastore import event_body, events_since, last_event_id, raises, table
from tests.support.server import running_service


def _pk(T, db, tbl, col, seq, name=None):
    return T.SQLPrimaryKey(
        table_db=db, table_name=tbl, column_name=col, key_seq=seq, pk_name=name,
        enable_cstr=False, validate_cstr=False, rely_cstr=True,
    )  # fmt: skip


def _fk(T, col, pkcol, seq, name=None):
    return T.SQLForeignKey(
        pktable_db="db1", pktable_name="parent", pkcolumn_name=pkcol, fktable_db="db1",
        fktable_name="child", fkcolumn_name=col, key_seq=seq, update_rule=0, delete_rule=0,
        fk_name=name, enable_cstr=False, validate_cstr=False, rely_cstr=False,
    )  # fmt: skip


def _nn(T, tbl, col, name=None):
    return T.SQLNotNullConstraint(
        table_db="db1", table_name=tbl, column_name=col, nn_name=name,
        enable_cstr=True, validate_cstr=False, rely_cstr=False,
    )  # fmt: skip


def _parent(T, client):
    client.create_database(T.Database(name="db1"))
    parent = table(T, "db1", "parent", ["id:int", "region:string", "v:string"], ["ds:string"])
    req = T.CreateTableRequest(
        table=parent,
        primaryKeys=[_pk(T, None, None, "ID", 1, "Parent_PK"), _pk(T, None, None, "ds", 2)],
        notNullConstraints=[_nn(T, "parent", "v")],
        defaultConstraints=[
            T.SQLDefaultConstraint(
                table_db="db1",
                table_name="parent",
                column_name="region",
                default_value="'eu'",
                dc_name="dflt",
                enable_cstr=True,
                validate_cstr=False,
                rely_cstr=False,
            )  # fmt: skip
        ],
        checkConstraints=[
            T.SQLCheckConstraint(
                table_db="db1",
                table_name="parent",
                column_name="id",
                check_expression="id > 0",
                dc_name=None,
                enable_cstr=True,
                validate_cstr=False,
                rely_cstr=False,
            )  # fmt: skip
        ],
    )
    client.create_table_req(req)


def test_create_table_req_stores_constraints_and_get_calls_answer_them(client, T):
    before = last_event_id(client)
    _parent(T, client)
    pks = client.get_primary_keys(T.PrimaryKeysRequest(db_name="DB1", tbl_name="Parent"))
    assert [(k.column_name, k.key_seq, k.pk_name) for k in pks.primaryKeys] == [
        ("id", 1, "parent_pk"),
        ("ds", 2, "parent_pk"),  # a partition column, and the name of the constraint it is in
    ]
    assert pks.primaryKeys[0].rely_cstr is True and pks.primaryKeys[0].enable_cstr is False
    assert (pks.primaryKeys[0].table_db, pks.primaryKeys[0].table_name) == ("db1", "parent")
    nn = client.get_not_null_constraints(T.NotNullConstraintsRequest("hive", "db1", "parent"))
    assert [c.column_name for c in nn.notNullConstraints] == ["v"]
    assert re.fullmatch(r"nn_\d+_\d{13}_0", nn.notNullConstraints[0].nn_name)  # Hive's scheme
    dc = client.get_default_constraints(T.DefaultConstraintsRequest("hive", "db1", "parent"))
    assert [(c.column_name, c.default_value, c.dc_name) for c in dc.defaultConstraints] == [
        ("region", "'eu'", "dflt")
    ]
    cc = client.get_check_constraints(T.CheckConstraintsRequest("hive", "db1", "parent"))
    assert [(c.column_name, c.check_expression) for c in cc.checkConstraints] == [("id", "id > 0")]
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == [
        "CREATE_DATABASE",
        "CREATE_TABLE",
        "ADD_PRIMARYKEY",
        "ADD_NOTNULLCONSTRAINT",
        "ADD_DEFAULTCONSTRAINT",
        "ADD_CHECKCONSTRAINT",
    ]
    body = event_body(events[2])
    assert list(body)[:4] == ["server", "servicePrincipal", "timestamp", "primaryKeyListJson"]
    assert len(body["primaryKeyListJson"]) == 2 and "parent_pk" in body["primaryKeyListJson"][0]
    assert (events[2].dbName, events[2].tableName) == ("db1", "parent")


def test_foreign_keys_unique_and_all_table_constraints(client, T):
    _parent(T, client)
    client.create_table(table(T, "db1", "child", ["pid:int", "pds:string", "code:string"]))
    client.add_unique_constraint(
        T.AddUniqueConstraintRequest(
            [
                T.SQLUniqueConstraint(
                    catName="hive",
                    table_db="db1",
                    table_name="child",
                    column_name="code",
                    key_seq=1,
                    uk_name="child_code",
                    enable_cstr=False,
                    validate_cstr=False,
                    rely_cstr=False,
                )  # fmt: skip
            ]
        )
    )
    before = last_event_id(client)
    client.add_foreign_key(
        T.AddForeignKeyRequest([_fk(T, "pid", "id", 1, "child_fk"), _fk(T, "pds", "ds", 2)])
    )
    events = events_since(client, T, before)
    assert [(e.eventType, e.tableName) for e in events] == [("ADD_FOREIGNKEY", "parent")]
    fks = client.get_foreign_keys(
        T.ForeignKeysRequest(foreign_db_name="db1", foreign_tbl_name="child")
    ).foreignKeys
    assert [(k.fkcolumn_name, k.pkcolumn_name, k.key_seq, k.fk_name, k.pk_name) for k in fks] == [
        ("pid", "id", 1, "child_fk", "parent_pk"),
        ("pds", "ds", 2, "child_fk", "parent_pk"),
    ]
    by_parent = client.get_foreign_keys(
        T.ForeignKeysRequest(parent_db_name="db1", parent_tbl_name="parent")
    ).foreignKeys
    assert [k.fkcolumn_name for k in by_parent] == ["pid", "pds"]
    everything = client.get_all_table_constraints(
        T.AllTableConstraintsRequest(dbName="db1", tblName="child", catName="hive")
    ).allTableConstraints
    assert [k.fk_name for k in everything.foreignKeys] == ["child_fk", "child_fk"]
    assert [u.uk_name for u in everything.uniqueConstraints] == ["child_code"]
    assert everything.primaryKeys == [] and everything.checkConstraints == []
    # a foreign key must reference a whole primary or unique key
    with raises(T.MetaException, contains="not a primary key or unique constraint"):
        client.add_foreign_key(T.AddForeignKeyRequest([_fk(T, "code", "v", 1, "bad_fk")]))


def test_bad_constraints_get_the_declared_exception(client, T):
    _parent(T, client)
    with raises(T.MetaException, "Primary key already exists for: hive.db1.parent"):
        client.add_primary_key(T.AddPrimaryKeyRequest([_pk(T, "db1", "parent", "v", 1)]))
    with raises(T.MetaException, "Parent column not found: nope (nn)"):
        client.add_not_null_constraint(T.AddNotNullConstraintRequest([_nn(T, "parent", "nope")]))
    with raises(T.MetaException, "Parent table not found: hive.db1.absent"):
        client.add_not_null_constraint(T.AddNotNullConstraintRequest([_nn(T, "absent", "a")]))
    with raises(T.MetaException, "Constraint name already exists: dflt"):
        client.add_not_null_constraint(
            T.AddNotNullConstraintRequest([_nn(T, "parent", "region", "DFLT")])
        )
    with raises(T.NoSuchObjectException, contains="does not exist for the associated table"):
        client.drop_constraint(T.DropConstraintRequest("db1", "parent", "nothing"))
    other = table(T, "db1", "t2", ["a:int"])
    with raises(T.InvalidObjectException, contains="must be its own"):
        client.create_table_with_constraints(
            other, [_pk(T, "db1", "parent", "a", 1)], [], [], [], [], []
        )
    assert client.get_table_meta("db1", "t2", None) == []  # nothing was created


def test_drop_constraint_and_drop_table_remove_rows(client, T, service, database_url):
    _parent(T, client)
    before = last_event_id(client)
    client.drop_constraint(T.DropConstraintRequest("db1", "parent", "DFLT"))
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["DROP_CONSTRAINT"]
    body = event_body(events[0])
    assert (body["dbName"], body["tableName"], body["constraintName"]) == (
        "db1",
        "parent",
        "dflt",
    )
    req = T.DefaultConstraintsRequest("hive", "db1", "parent")
    assert client.get_default_constraints(req).defaultConstraints == []
    client.drop_table("db1", "parent", True)
    db = Database(database_url)
    try:
        with db.read() as conn:
            assert conn.execute(select(schema.KEY_CONSTRAINTS)).all() == []
    finally:
        db.dispose()
    assert client.get_primary_keys(T.PrimaryKeysRequest("db1", "parent")).primaryKeys == []


def test_constraints_written_on_one_instance_are_read_on_another(
    database_url, tmp_path: Path, T, client, service
):
    from tests.support.apache_thrift import apache_client

    with running_service(database_url, tmp_path / "warehouse2") as other:
        reader, transport = apache_client("127.0.0.1", other.port)
        try:
            _parent(T, client)

            def columns() -> list[str]:
                request = T.PrimaryKeysRequest("db1", "parent")
                return [k.column_name for k in reader.get_primary_keys(request).primaryKeys]

            # the other instance's cache follows the log: eventually, not at once
            wait_until(lambda: columns() == ["id", "ds"], what="the keys on the other instance")
            for _ in range(3):  # table load, constraints load, a cached answer
                assert columns() == ["id", "ds"]
            client.drop_constraint(T.DropConstraintRequest("db1", "parent", "parent_pk"))
            wait_until(lambda: columns() == [], what="the drop on the other instance")
        finally:
            transport.close()
