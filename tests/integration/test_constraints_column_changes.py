"""Constraints when alter_table replaces a table's columns, over Thrift, with the cache on and
off, on SQLite and PostgreSQL. Hive's ObjectStore (copyMSD, removeUnusedColumnDescriptor)
moves a constraint to the new column list when that list holds its column unchanged (name,
type and comment), wherever it now stands; a constraint on a renamed or retyped column stays on
the old list, and goes with it once no partition uses it (no event but the ALTER_TABLE)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_thrift import apache_client
from tests.support.cache import entry, settle, wait_until
from tests.support.metastore import event_types, foreign_key, last_event_id, partition, table
from tests.support.server import running_service

DB = "db1"


@pytest.fixture(params=[True, False], ids=["cache", "no_cache"])
def svc(request: pytest.FixtureRequest, database_url: str, tmp_path: Path) -> Iterator[Any]:
    with running_service(database_url, tmp_path / "wh", cache_enabled=request.param) as s:
        yield s


@pytest.fixture
def client(svc: Any) -> Iterator[Any]:
    c, transport = apache_client("127.0.0.1", svc.port)
    try:
        yield c
    finally:
        transport.close()


def _flags() -> dict[str, bool]:
    return {"enable_cstr": True, "validate_cstr": False, "rely_cstr": False}


def _keyed(T: Any, c: Any, keys: tuple[str, ...] = ()) -> None:
    """db1.parent (id, v, w) keyed on id, v unique, w not null with a default, a check on id;
    db1.child (pid) with a foreign key into parent.id."""
    c.create_database(T.Database(name=DB))
    on = {"table_db": DB, "table_name": "parent", **_flags()}
    c.create_table_req(
        T.CreateTableRequest(
            table=table(T, DB, "parent", ["id:int", "v:string", "w:string"], keys),
            primaryKeys=[T.SQLPrimaryKey(column_name="id", key_seq=1, pk_name="pk", **on)],
            uniqueConstraints=[
                T.SQLUniqueConstraint(column_name="v", key_seq=1, uk_name="uk", **on)
            ],
            notNullConstraints=[T.SQLNotNullConstraint(column_name="w", nn_name="nn", **on)],
            defaultConstraints=[
                T.SQLDefaultConstraint(column_name="w", default_value="'x'", dc_name="dc", **on)
            ],
            checkConstraints=[
                T.SQLCheckConstraint(
                    column_name="id", check_expression="id > 0", dc_name="cc", **on
                )
            ],
        )
    )
    c.create_table(table(T, DB, "child", ["pid:int"]))
    fk = foreign_key(T, (DB, "parent", "id"), (DB, "child", "pid"), "fk")
    c.add_foreign_key(T.AddForeignKeyRequest([fk]))


def _columns(T: Any, c: Any) -> dict[str, list[str | None]]:
    """The column every constraint names: kind -> [column, ...] (a foreign key: its parent's
    and its child's), as the cached calls and get_foreign_keys (the database's) answer."""

    def every(name: str) -> Any:
        request = T.AllTableConstraintsRequest(dbName=DB, tblName=name, catName="hive")
        return c.get_all_table_constraints(request).allTableConstraints

    parent, fks = every("parent"), every("child").foreignKeys
    by_child = T.ForeignKeysRequest(foreign_db_name=DB, foreign_tbl_name="child")
    assert c.get_foreign_keys(by_child).foreignKeys == fks
    pks = c.get_primary_keys(T.PrimaryKeysRequest(db_name=DB, tbl_name="parent")).primaryKeys
    return {
        "pk": [k.column_name for k in pks],
        "uk": [k.column_name for k in parent.uniqueConstraints],
        "nn": [k.column_name for k in parent.notNullConstraints],
        "dc": [k.column_name for k in parent.defaultConstraints],
        "cc": [k.column_name for k in parent.checkConstraints],
        "fk": [f"{k.pkcolumn_name}->{k.fkcolumn_name}" for k in fks],
    }


def _held(svc: Any, T: Any, c: Any) -> dict[str, list[str | None]]:
    """``_columns``, and with the cache on, read until both tables' entries hold their
    constraints: a change that left them there would be answered stale."""
    if svc.cache is not None:

        def loaded() -> bool:
            _columns(T, c)
            settle(svc)
            held = [entry(svc, DB, name) for name in ("parent", "child")]
            return all(e is not None and e.constraints is not None for e in held)

        wait_until(loaded, what="both tables' constraints in the cache")
    return _columns(T, c)


KEPT = {"pk": ["id"], "uk": ["v"], "nn": ["w"], "dc": ["w"], "cc": ["id"], "fk": ["id->pid"]}


@pytest.fixture
def keyed(svc: Any, client: Any, T: Any) -> None:
    """``_keyed``, its constraints read (and, with the cache on, held in the cache)."""
    _keyed(T, client)
    assert _held(svc, T, client) == KEPT


def _alter_columns(T: Any, c: Any, name: str, cols: list[str], cascade: bool = False) -> None:
    """Give table ``name`` the columns ``cols``: a name keeps that column, ``name:type`` is
    a new one."""
    t = c.get_table(DB, name)
    by_name = {col.name: col for col in t.sd.cols}
    t.sd.cols = [
        by_name[spec] if spec in by_name else T.FieldSchema(*spec.split(":"), None) for spec in cols
    ]
    if cascade:
        c.alter_table_with_cascade(DB, name, t, True)
    else:
        c.alter_table_with_environment_context(DB, name, t, None)


@pytest.mark.usefixtures("keyed")
def test_constraints_follow_their_unchanged_columns_to_new_places(
    svc: Any, client: Any, T: Any
) -> None:
    _alter_columns(T, client, "parent", ["n:int", "w", "v", "id"])
    assert _columns(T, client) == KEPT
    assert _held(svc, T, client) == KEPT
    _alter_columns(T, client, "child", ["pid", "more:int"])
    assert _columns(T, client) == KEPT


@pytest.mark.usefixtures("keyed")
def test_renaming_a_key_column_drops_the_constraints_on_it_as_hive_does(
    svc: Any, client: Any, T: Any
) -> None:
    before = last_event_id(client)
    renamed = client.get_table(DB, "parent")
    renamed.sd.cols[0].name = "key"
    client.alter_table(DB, "parent", renamed)
    # The key, the check on id and the foreign key into it went; v's and w's stayed.
    gone = {"pk": [], "uk": ["v"], "nn": ["w"], "dc": ["w"], "cc": [], "fk": []}
    assert _held(svc, T, client) == gone
    assert event_types(client, T, before) == ["ALTER_TABLE"]
    restored = client.get_table(DB, "parent")
    restored.sd.cols[0].name = "id"  # the name comes back, the constraints do not
    client.alter_table(DB, "parent", restored)
    assert _columns(T, client) == gone


@pytest.mark.usefixtures("keyed")
def test_retyping_a_column_drops_its_constraints_and_renaming_a_foreign_key_column_its_key(
    svc: Any, client: Any, T: Any
) -> None:
    _alter_columns(T, client, "parent", ["id", "v:varchar(10)", "w"])
    assert _held(svc, T, client) == {**KEPT, "uk": []}
    _alter_columns(T, client, "child", ["parent_id:int"])
    assert _columns(T, client) == {**KEPT, "uk": [], "fk": []}


@pytest.mark.parametrize("then", ["drop_partitions", "cascade"])
def test_a_key_goes_with_the_alter_even_while_partitions_keep_the_old_columns(
    svc: Any, client: Any, T: Any, then: str
) -> None:
    """Hive keeps the constraint on the old column list while a partition uses it (naming the
    column as it was) and deletes it, with no event, when the last partition leaves that list.
    Here it goes with the ALTER_TABLE, which caches follow; the partitions leaving later change
    nothing more."""
    _keyed(T, client, ("ds:string",))
    for ds in ("d1", "d2"):
        client.add_partition(partition(T, DB, "parent", [ds], ["id:int", "v:string", "w:string"]))
    assert _held(svc, T, client) == KEPT
    _alter_columns(T, client, "parent", ["key:int", "v", "w"])
    gone = {**KEPT, "pk": [], "cc": [], "fk": []}
    assert _held(svc, T, client) == gone
    if then == "cascade":
        _alter_columns(T, client, "parent", ["key:int", "v", "w", "x:int"], cascade=True)
    else:
        client.drop_partition(DB, "parent", ["d1"], True)
        client.drop_partition(DB, "parent", ["d2"], True)
    assert _held(svc, T, client) == gone
