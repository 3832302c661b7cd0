"""Row locks of alter_partitions on PostgreSQL (issue 23): an alter holds its table's row FOR
SHARE and its partitions' rows FOR UPDATE, so alters of different partitions of one table run at
once, while a writer of the table itself (drop_table) waits for an alter under way. Each alter
is held open inside its transaction (its ``prepare`` callback waits) while the other call runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.integration.test_stats_store import CAT, DB, WAREHOUSE, make_table
from tests.support.stores import sql_store as compose_sql_store

pytestmark = [pytest.mark.postgres]

HANG_S = 60.0
"""How long a call that should finish may take before the test calls it stuck (not a timing
assertion: only a hang reaches it)."""


@pytest.fixture
def pg(pg_url: str) -> Iterator[tuple[SqlStore, str]]:
    db = Database(pg_url)
    init_db(db, WAREHOUSE)
    store = compose_sql_store(db, WAREHOUSE)
    store.create_database(hms.Database(name=DB, parameters={}, catalogName=CAT))
    make_table(store, "t", keys=[("p", "string")])
    store.add_partitions(CAT, DB, "t", [hms.Partition(values=[str(i)]) for i in range(3)])
    yield store, pg_url
    db.dispose()


class HeldAlter:
    """An alter of one partition run in a thread, held inside its transaction (after its
    locks) until ``release``."""

    def __init__(self, store: SqlStore, value: str) -> None:
        self.inside, self.go = threading.Event(), threading.Event()
        self.error: BaseException | None = None
        (part,) = store.get_partitions_by_names(CAT, DB, "t", [f"p={value}"])
        part.parameters = {**(part.parameters or {}), "held": "yes"}

        def prepare(_table: hms.Table, _old: hms.Partition, _new: hms.Partition) -> None:
            self.inside.set()
            assert self.go.wait(HANG_S)

        def run() -> None:
            try:
                store.alter_partitions(CAT, DB, "t", [part], prepare=prepare)
            except BaseException as exc:  # reported by the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.inside.wait(HANG_S), "the held alter never got inside its transaction"

    def release(self) -> None:
        self.go.set()
        self.thread.join(HANG_S)
        assert not self.thread.is_alive() and self.error is None, self.error


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def _wait_for_lock_waiter(url: str) -> None:
    """Until a backend of this database waits for a row lock (a transactionid or tuple lock)."""
    engine = create_engine(url)
    try:
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                waiting = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock'"
                    )
                ).scalar()
            if waiting:
                return
            time.sleep(0.05)
        raise AssertionError("no backend ever waited for a lock")
    finally:
        engine.dispose()


def test_alters_of_different_partitions_of_one_table_do_not_wait_for_each_other(pg) -> None:
    store, _ = pg
    held = HeldAlter(store, "0")
    (part,) = store.get_partitions_by_names(CAT, DB, "t", ["p=1"])
    part.parameters = {**(part.parameters or {}), "other": "yes"}
    thread, errors = _in_thread(lambda: store.alter_partitions(CAT, DB, "t", [part]))
    thread.join(HANG_S)
    stuck = thread.is_alive()
    held.release()
    thread.join(HANG_S)
    assert not stuck, "the alter of p=1 waited for the held alter of p=0"
    assert not errors, errors
    params = {
        p.values[0]: p.parameters
        for p in store.get_partitions_by_names(CAT, DB, "t", ["p=0", "p=1"])
    }
    assert params["0"]["held"] == "yes" and params["1"]["other"] == "yes"


def test_alters_of_one_partition_wait_for_each_other(pg) -> None:
    store, url = pg
    held = HeldAlter(store, "0")
    (part,) = store.get_partitions_by_names(CAT, DB, "t", ["p=0"])
    part.parameters = {**(part.parameters or {}), "second": "yes"}
    thread, errors = _in_thread(lambda: store.alter_partitions(CAT, DB, "t", [part]))
    _wait_for_lock_waiter(url)
    assert thread.is_alive()
    held.release()
    thread.join(HANG_S)
    assert not thread.is_alive() and not errors, errors
    (stored,) = store.get_partitions_by_names(CAT, DB, "t", ["p=0"])
    assert stored.parameters["second"] == "yes"  # the second alter ran after the first


def test_drop_table_waits_for_an_alter_under_way(pg) -> None:
    store, url = pg
    held = HeldAlter(store, "2")
    thread, errors = _in_thread(lambda: store.drop_table(CAT, DB, "t"))
    _wait_for_lock_waiter(url)
    assert thread.is_alive()
    events_before = store.current_notification_event_id()
    held.release()
    thread.join(HANG_S)
    assert not thread.is_alive() and not errors, errors
    with pytest.raises(hms.NoSuchObjectException):
        store.get_table(CAT, DB, "t")
    assert store.current_notification_event_id() == events_before + 2  # ALTER, then DROP


def test_alter_table_waits_for_an_alter_under_way(pg) -> None:
    """The alter holds its table's row FOR SHARE (taken by the read that loads the table):
    alter_table, which locks that row FOR UPDATE and touches no partition row here, waits."""
    store, url = pg
    held = HeldAlter(store, "1")
    table = store.get_table(CAT, DB, "t")
    table.parameters = {**(table.parameters or {}), "altered": "yes"}
    thread, errors = _in_thread(lambda: store.alter_table(CAT, DB, "t", table))
    _wait_for_lock_waiter(url)
    assert thread.is_alive()
    held.release()
    thread.join(HANG_S)
    assert not thread.is_alive() and not errors, errors
    assert store.get_table(CAT, DB, "t").parameters["altered"] == "yes"
