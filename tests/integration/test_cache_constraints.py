"""Constraints served from the cached table entry: loaded on the first read, forgotten when an
event changes them (their table's, or a table their foreign keys reference), never installed
from a load read before such an event. Two instances on one PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy import failpoints
from hms_cache_proxy.store.db.engine import Database
from tests.support.cache import Counted, clients, entry, instances, ours, settle, wait_until
from tests.support.metastore import foreign_key, table

pytestmark = [pytest.mark.postgres]

DB = "keys"


@pytest.fixture(autouse=True)
def no_failpoints() -> Any:
    yield
    failpoints.clear()


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        cls[0].create_database(_T().Database(name=DB))
        settle(*svcs)
        yield svcs, cls, url
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _T() -> Any:
    from tests.support.apache_thrift import load_apache_modules

    return load_apache_modules().ttypes


def _flags() -> dict[str, bool]:
    return {"enable_cstr": False, "validate_cstr": False, "rely_cstr": False}


def _parent_and_child(T: Any, client: Any) -> None:
    pk = T.SQLPrimaryKey(
        table_db=DB, table_name="parent", column_name="a", key_seq=1, pk_name="parent_pk",
        **_flags(),
    )  # fmt: skip
    client.create_table_with_constraints(table(T, DB, "parent"), [pk], [], [], [], [], [])
    client.create_table(table(T, DB, "child"))
    fk = foreign_key(T, (DB, "parent", "a"), (DB, "child", "a"), "child_fk")
    client.add_foreign_key(T.AddForeignKeyRequest([fk]))


def _all(T: Any, client: Any, name: str) -> Any:
    request = T.AllTableConstraintsRequest(dbName=DB, tblName=name, catName="hive")
    return client.get_all_table_constraints(request).allTableConstraints


def _fk_pk_names(T: Any, client: Any) -> list[Any]:
    return [k.pk_name for k in _all(T, client, "child").foreignKeys]


def _database_answer(url: str, T: Any, name: str) -> Any:
    """What the database path answers (a fresh store over the same database)."""
    from tests.support.stores import sql_store

    db = Database(url)
    try:
        store = sql_store(db, "file:/unused")
        return store.get_table_constraints("hive", DB, name)
    finally:
        db.dispose()


def test_constraints_are_served_from_the_entry_after_the_first_read(pair) -> None:
    (a, b), (ca, cb), _url = pair
    T = _T()
    _parent_and_child(T, cb)
    settle(a, b)
    first = _all(T, ca, "parent")  # loads the table, then its constraints
    settle(a)
    wait_until(lambda: entry(a, DB, "parent") is not None, what="the table loaded")
    _all(T, ca, "parent")
    assert a.cache.loader.wait_idle(10)
    with Counted() as counted:
        again = _all(T, ca, "parent")
        pks = ca.get_primary_keys(T.PrimaryKeysRequest(DB, "parent")).primaryKeys
    assert counted.hits("get_table_constraints") == 2
    assert again == first and pks == first.primaryKeys
    assert [k.pk_name for k in pks] == ["parent_pk"]


def test_a_change_elsewhere_reaches_the_cached_answer(pair) -> None:
    (a, b), (ca, cb), url = pair
    T = _T()
    _parent_and_child(T, cb)
    settle(a, b)
    for _ in range(3):  # table load, constraints load, then a hit
        assert _fk_pk_names(T, ca) == ["parent_pk"]
        settle(a)
    assert entry(a, DB, "child").constraints is not None
    # The referenced table's primary key goes: the child's foreign key no longer names one.
    cb.drop_constraint(T.DropConstraintRequest(DB, "parent", "parent_pk"))
    wait_until(lambda: _fk_pk_names(T, ca) == [None], what="the dropped key on A")
    nn = T.SQLNotNullConstraint(
        catName="hive", table_db=DB, table_name="child", column_name="b", nn_name="child_nn",
        **_flags(),
    )  # fmt: skip
    cb.add_not_null_constraint(T.AddNotNullConstraintRequest([nn]))
    settle(a, b)
    for _ in range(3):
        got = _all(T, ca, "child")
        settle(a)
    assert ours(got) == _database_answer(url, T, "child")
    assert [c.nn_name for c in got.notNullConstraints] == ["child_nn"]
    # Dropping the referenced table takes the foreign key with it.
    cb.drop_table(DB, "parent", True)
    wait_until(lambda: _all(T, ca, "child").foreignKeys == [], what="the foreign key gone on A")


def test_a_constraints_load_older_than_a_change_never_installs(pair) -> None:
    """A's load of the child's constraints reads them and is held; B drops the parent's key;
    A applies that event; the held load must not install what it read."""
    (a, b), (ca, cb), _url = pair
    T = _T()
    _parent_and_child(T, cb)
    settle(a, b)
    if entry(a, DB, "child") is None:  # our CREATE_TABLE events make the entries
        ca.get_table(DB, "child")
        settle(a)
    assert entry(a, DB, "child").constraints is None  # not read yet
    reached, release = threading.Event(), threading.Event()

    def hold(_name: str, detail: str) -> None:
        if detail == f"{DB}.child" and not reached.is_set():
            reached.set()
            assert release.wait(30), "the test never released the failpoint"

    failpoints.set("load.constraints_after_snapshot", hold)
    assert _fk_pk_names(T, ca) == ["parent_pk"]  # answered by the database; load queued
    assert reached.wait(10), "the constraints load never reached its snapshot"
    cb.drop_constraint(T.DropConstraintRequest(DB, "parent", "parent_pk"))
    target = b.store.current_notification_event_id()
    assert a.cache.poller.wait_for(target, 10)
    release.set()
    assert a.cache.loader.wait_idle(10)
    assert entry(a, DB, "child").constraints is None  # refused
    failpoints.clear()
    assert _fk_pk_names(T, ca) == [None]
