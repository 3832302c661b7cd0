"""Upstream mode's cache of table lists, table objects by name and constraints: a sidecar in
front of a central instance (this project's server in database mode on PostgreSQL) answers them
from the replies it kept, and the events that change them drop them (docs/cache.md, "In
upstream mode"). Each test below loads the entries, changes the upstream directly once the
poller has applied everything before, lets the poller apply the change, and reads again:
without its rule the sidecar would answer the old reply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.integration import test_upstream_cache as shared
from tests.integration.test_upstream_cache import Quiet, _applied, forwarded
from tests.support.metastore import table

pytestmark = pytest.mark.postgres

central, start_sidecar, connect = shared.central, shared.start_sidecar, shared.connect  # fixtures
quiet = shared.quiet  # a fixture

Reads = dict[str, Callable[[Any], Any]]


def _same(reads: Reads, client: Any, direct: Any) -> None:
    """Each read through the sidecar answers what the central instance answers now."""
    for name, read in reads.items():
        assert read(client) == read(direct), name


def _pk(T: Any, tbl: str, col: str, name: str) -> Any:
    return T.SQLPrimaryKey(
        table_db="db1", table_name=tbl, column_name=col, key_seq=1, pk_name=name,
        enable_cstr=False, validate_cstr=False, rely_cstr=True,
    )  # fmt: skip


def _fk(T: Any, name: str) -> Any:
    return T.SQLForeignKey(
        pktable_db="db1", pktable_name="parent", pkcolumn_name="id", fktable_db="db2",
        fktable_name="child", fkcolumn_name="pid", key_seq=1, update_rule=0, delete_rule=0,
        fk_name=name, enable_cstr=False, validate_cstr=False, rely_cstr=False,
    )  # fmt: skip


def _keyed_tables(direct: Any, T: Any, *, keyed: bool = True) -> None:
    """db1.parent keyed on id and db2.child, whose foreign key names it (``keyed=False``: no
    constraints yet)."""
    direct.create_database(T.Database(name="db1"))
    direct.create_database(T.Database(name="db2"))
    direct.create_table(table(T, "db1", "parent", ["id:int", "v:string", "w:string"]))
    direct.create_table(table(T, "db2", "child", ["pid:int"]))
    if keyed:
        direct.add_primary_key(T.AddPrimaryKeyRequest([_pk(T, "parent", "id", "parent_pk")]))
        direct.add_foreign_key(T.AddForeignKeyRequest([_fk(T, "child_fk")]))


def _constraint_reads(T: Any) -> Reads:
    def every(db: str, tbl: str) -> Callable[[Any], Any]:
        request = T.AllTableConstraintsRequest(dbName=db, tblName=tbl, catName="hive")
        return lambda c: c.get_all_table_constraints(request).allTableConstraints

    return {
        "get_all_table_constraints parent": every("db1", "parent"),
        "get_all_table_constraints child": every("db2", "child"),
        "get_primary_keys": lambda c: (
            c.get_primary_keys(T.PrimaryKeysRequest(db_name="db1", tbl_name="parent")).primaryKeys
        ),
        "get_foreign_keys by child": lambda c: (
            c.get_foreign_keys(
                T.ForeignKeysRequest(foreign_db_name="db2", foreign_tbl_name="child")
            ).foreignKeys
        ),
        "get_foreign_keys by parent": lambda c: (
            c.get_foreign_keys(
                T.ForeignKeysRequest(parent_db_name="db1", parent_tbl_name="parent")
            ).foreignKeys
        ),
        "get_unique_constraints": lambda c: (
            c.get_unique_constraints(
                T.UniqueConstraintsRequest("hive", "db1", "parent")
            ).uniqueConstraints
        ),
        "get_not_null_constraints": lambda c: (
            c.get_not_null_constraints(
                T.NotNullConstraintsRequest("hive", "db1", "parent")
            ).notNullConstraints
        ),
        "get_default_constraints": lambda c: (
            c.get_default_constraints(
                T.DefaultConstraintsRequest("hive", "db1", "parent")
            ).defaultConstraints
        ),
        "get_check_constraints": lambda c: (
            c.get_check_constraints(
                T.CheckConstraintsRequest("hive", "db1", "parent")
            ).checkConstraints
        ),
    }


def _list_reads(T: Any, db: str, names: list[str]) -> Reads:
    request = T.GetTablesRequest(dbName=db, tblNames=names)
    return {
        f"get_tables {db}": lambda c: sorted(c.get_tables(db, "*")),
        f"get_all_tables {db}": lambda c: sorted(c.get_all_tables(db)),
        f"get_table_objects_by_name {db}": lambda c: c.get_table_objects_by_name(db, names),
        f"get_table_objects_by_name_req {db}": lambda c: (
            c.get_table_objects_by_name_req(request).tables
        ),
    }


def test_table_lists_objects_and_constraints_are_answered_from_the_cache(
    quiet: Quiet, T: Any
) -> None:
    client, direct, events = quiet
    _keyed_tables(direct, T)
    _applied(events, direct)
    reads = {**_list_reads(T, "db1", ["parent"]), **_constraint_reads(T)}
    _same(reads, client, direct)  # each loads its entry
    methods = {name.split()[0] for name in reads}
    before = {m: forwarded(m) for m in methods}
    _same(reads, client, direct)
    assert {m: forwarded(m) for m in methods} == before  # not one of them forwarded


def test_a_table_created_or_dropped_elsewhere_changes_its_databases_names(
    quiet: Quiet, T: Any
) -> None:
    client, direct, events = quiet
    direct.create_database(T.Database(name="db1"))
    direct.create_table(table(T, "db1", "a"))
    reads = _list_reads(T, "db1", ["a", "b"])
    for change in (
        lambda: direct.create_table(table(T, "db1", "b")),  # CREATE_TABLE
        lambda: direct.drop_table("db1", "a", True),  # DROP_TABLE
    ):
        _applied(events, direct)
        _same(reads, client, direct)  # the entries, loaded after every event before
        change()
        _applied(events, direct)
        _same(reads, client, direct)
    assert client.get_all_tables("db1") == ["b"]


def test_a_table_renamed_into_another_database_leaves_one_list_and_joins_the_other(
    quiet: Quiet, T: Any
) -> None:
    client, direct, events = quiet
    direct.create_database(T.Database(name="db1"))
    direct.create_database(T.Database(name="db2"))
    direct.create_table(table(T, "db1", "a"))
    reads = {**_list_reads(T, "db1", ["a"]), **_list_reads(T, "db2", ["a2"])}
    _applied(events, direct)
    _same(reads, client, direct)
    renamed = direct.get_table("db1", "a")
    renamed.dbName, renamed.tableName = "db2", "a2"
    direct.alter_table("db1", "a", renamed)  # its event names db2.a2
    _applied(events, direct)
    _same(reads, client, direct)
    assert (client.get_all_tables("db1"), client.get_all_tables("db2")) == ([], ["a2"])


def test_table_objects_go_with_any_event_about_a_table_of_their_database(
    quiet: Quiet, T: Any
) -> None:
    client, direct, events = quiet
    direct.create_database(T.Database(name="db1"))
    direct.create_table(table(T, "db1", "a"))
    reads = _list_reads(T, "db1", ["a"])
    for n in range(2):
        _applied(events, direct)
        _same(reads, client, direct)
        altered = direct.get_table("db1", "a")
        altered.parameters["n"] = str(n)
        direct.alter_table("db1", "a", altered)  # ALTER_TABLE, not a rename
        _applied(events, direct)
        _same(reads, client, direct)
    (objects,) = client.get_table_objects_by_name("db1", ["a"])
    assert objects.parameters["n"] == "1"


def test_each_constraint_event_changes_the_constraints_answered(quiet: Quiet, T: Any) -> None:
    client, direct, events = quiet
    _keyed_tables(direct, T, keyed=False)
    reads = _constraint_reads(T)

    def constraint(kind: str, **fields: Any) -> Any:
        base = {"table_db": "db1", "table_name": "parent", "enable_cstr": True}
        base |= {"validate_cstr": False, "rely_cstr": False}
        return getattr(T, kind)(**base, **fields)

    changes = [
        ("ADD_PRIMARYKEY", lambda: direct.add_primary_key(
            T.AddPrimaryKeyRequest([_pk(T, "parent", "id", "parent_pk")]))),
        ("ADD_FOREIGNKEY", lambda: direct.add_foreign_key(
            T.AddForeignKeyRequest([_fk(T, "child_fk")]))),
        ("ADD_UNIQUECONSTRAINT", lambda: direct.add_unique_constraint(
            T.AddUniqueConstraintRequest([constraint(
                "SQLUniqueConstraint", column_name="v", key_seq=1, uk_name="uk")]))),
        ("ADD_NOTNULLCONSTRAINT", lambda: direct.add_not_null_constraint(
            T.AddNotNullConstraintRequest([constraint(
                "SQLNotNullConstraint", column_name="w", nn_name="nn")]))),
        ("ADD_DEFAULTCONSTRAINT", lambda: direct.add_default_constraint(
            T.AddDefaultConstraintRequest([constraint(
                "SQLDefaultConstraint", column_name="w", default_value="'x'", dc_name="dc")]))),
        ("ADD_CHECKCONSTRAINT", lambda: direct.add_check_constraint(
            T.AddCheckConstraintRequest([constraint(
                "SQLCheckConstraint", column_name="id", check_expression="id > 0",
                dc_name="cc")]))),
    ]  # fmt: skip
    for name in ("child_fk", "uk", "nn", "dc", "cc", "parent_pk"):
        owner = ("db2", "child") if name == "child_fk" else ("db1", "parent")
        request = T.DropConstraintRequest(*owner, name)
        changes.append(("DROP_CONSTRAINT", lambda r=request: direct.drop_constraint(r)))
    for event, change in changes:
        _applied(events, direct)
        _same(reads, client, direct)
        before = direct.get_current_notificationEventId().eventId
        change()
        logged = direct.get_next_notification(T.NotificationEventRequest(lastEvent=before))
        assert [e.eventType for e in logged.events] == [event]
        _applied(events, direct)
        _same(reads, client, direct)


def test_a_foreign_key_follows_its_referenced_table_renamed_or_dropped(
    quiet: Quiet, T: Any
) -> None:
    client, direct, events = quiet
    _keyed_tables(direct, T)
    reads = _constraint_reads(T)
    _applied(events, direct)
    _same(reads, client, direct)
    renamed = direct.get_table("db1", "parent")
    renamed.tableName = "parent2"
    direct.alter_table("db1", "parent", renamed)  # the child's foreign key names it anew
    _applied(events, direct)
    _same(reads, client, direct)
    child = T.ForeignKeysRequest(foreign_db_name="db2", foreign_tbl_name="child")
    assert [k.pktable_name for k in client.get_foreign_keys(child).foreignKeys] == ["parent2"]
    direct.drop_table("db1", "parent2", True)  # the child's foreign key goes with it
    _applied(events, direct)
    _same(reads, client, direct)
    assert client.get_foreign_keys(child).foreignKeys == []


def test_a_column_change_of_a_keyed_table_changes_its_constraints(quiet: Quiet, T: Any) -> None:
    """Constraints follow a column that moves (the new column list holds it unchanged) and go
    when it is renamed, as Hive's ObjectStore does; each change is an ALTER_TABLE only."""
    client, direct, events = quiet
    _keyed_tables(direct, T)
    reads = _constraint_reads(T)
    request = T.PrimaryKeysRequest(db_name="db1", tbl_name="parent")
    child = T.ForeignKeysRequest(foreign_db_name="db2", foreign_tbl_name="child")

    def keys() -> tuple[list[str], list[str]]:
        pks = client.get_primary_keys(request).primaryKeys
        fks = client.get_foreign_keys(child).foreignKeys
        return [k.column_name for k in pks], [k.pkcolumn_name for k in fks]

    def moved(cols: list[Any]) -> list[Any]:  # id moves to the end
        return [T.FieldSchema("n", "int", None), cols[2], cols[1], cols[0]]

    def renamed(cols: list[Any]) -> list[Any]:  # then is renamed
        return [*cols[:3], T.FieldSchema("key", "int", None)]

    for change, expected in ((moved, (["id"], ["id"])), (renamed, ([], []))):
        _applied(events, direct)
        _same(reads, client, direct)
        altered = direct.get_table("db1", "parent")
        altered.sd.cols = change(altered.sd.cols)
        direct.alter_table("db1", "parent", altered)
        _applied(events, direct)
        _same(reads, client, direct)
        assert keys() == expected
