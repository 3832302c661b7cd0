"""``Database.autocommit_cursor`` parks its pooled session between hot calls (store/db/engine.py,
``IdleClosingPool.park``): the next call takes it without the pool's checkout and checkin,
and the pool's promises still hold (bounds, nobody waits on a parked session, idle closing,
no reuse after a disconnect, honest usage, the checkout-time PREPAREs)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import pytest
from sqlalchemy import Connection, event
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy.store.db import prepared
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.prepared import AT_CONNECT
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.txn import pgsql  # noqa: F401 - its statements join AT_CONNECT

pytestmark = pytest.mark.postgres


@pytest.fixture
def checkouts() -> Iterator[Callable[[Database], list[int]]]:
    """Counts the read pool's checkout events of a Database (a list, one pid per checkout)."""
    made: list[Database] = []

    def count(db: Database) -> list[int]:
        seen: list[int] = []

        @event.listens_for(db.read_engine, "checkout")
        def _seen(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
            seen.append(dbapi_conn.info.backend_pid)

        made.append(db)
        return seen

    yield count
    for db in made:
        db.dispose()


def _pid(db: Database) -> int:
    with db.autocommit_cursor() as pooled:
        pooled.cursor.execute("SELECT pg_backend_pid()")
        return int(pooled.cursor.fetchone()[0])


def _terminate(url: str, pids: Any) -> None:
    conn = psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://"))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            for pid in pids:
                cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
    finally:
        conn.close()


def _until(check: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_hot_call_reuses_the_parked_session_without_a_checkout(
    pg_url: str, checkouts: Callable[[Database], list[int]]
) -> None:
    db = Database(pg_url, pool_size=2)
    seen = checkouts(db)
    first = _pid(db)
    assert db.pool_usage()["read"][0] == 0, "a parked session is not in use"
    assert [_pid(db) for _ in range(3)] == [first] * 3
    assert seen == [first], "one checkout, then the parked session"
    with db.autocommit_cursor():
        assert db.pool_usage()["read"][0] == 1


def test_a_transaction_takes_the_parked_session_when_the_pool_has_no_other(
    pg_url: str, checkouts: Callable[[Database], list[int]]
) -> None:
    """A write transaction after a hot call uses that call's session, not a second one."""
    db = Database(pg_url, pool_size=2)
    checkouts(db)
    first = _pid(db)

    def pid(conn: Connection) -> int:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())

    assert db.transaction(pid) == first
    assert db.backend_pids == frozenset({first})
    assert _pid(db) == first


def test_with_a_tiny_pool_nobody_waits_on_a_parked_session(
    pg_url: str, checkouts: Callable[[Database], list[int]]
) -> None:
    """pool_size 1 opens at most 5 sessions: with four held by transactions and the fifth
    parked, the next caller gets the parked one at once (not after the pool timeout)."""
    db = Database(pg_url, pool_size=1, timeout_seconds=3)
    checkouts(db)
    release = threading.Event()
    holding = threading.Barrier(5)
    errors: list[BaseException] = []

    def hold(conn: Connection) -> None:
        conn.exec_driver_sql("SELECT 1")
        holding.wait(10)
        release.wait(10)

    def run() -> None:
        try:
            db.transaction(hold)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        holding.wait(10)
        parked = _pid(db)
        assert db.read_engine.pool.checkedout() == db.pool_limit == 5
        assert db.pool_usage()["read"][0] == 4
        started = time.monotonic()
        with db.single_statement() as conn:
            got = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        assert time.monotonic() - started < 2, "waited for the pool timeout"
        assert got == parked
        assert db.read_engine.pool.checkedout() <= db.pool_limit
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
    assert errors == []


def test_after_its_session_is_terminated_the_next_call_works(
    pg_url: str, checkouts: Callable[[Database], list[int]]
) -> None:
    """Both parked sessions die (a restart, pg_terminate_backend): the first call reports the
    disconnect (counted, marked invalidated), which invalidates the pool, so the next call
    opens a new session instead of meeting the other dead one."""
    db = Database(pg_url, pool_size=2)
    checkouts(db)
    errors: list[str] = []
    db.driver_errors.listeners.append(errors.append)
    with db.autocommit_cursor() as a, db.autocommit_cursor() as b:
        pids = {a.connection.info.backend_pid, b.connection.info.backend_pid}
    assert len(pids) == 2
    _terminate(pg_url, pids)
    with pytest.raises(DBAPIError) as raised:
        _pid(db)
    assert raised.value.connection_invalidated
    assert errors == ["OperationalError"]
    after = _pid(db)
    assert after not in pids
    assert _pid(db) == after
    assert db.backend_pids == frozenset({after})


def test_parked_sessions_close_when_idle(pg_url: str) -> None:
    db = Database(pg_url, pool_size=2, pool_idle_seconds=0.3)
    try:
        with db.autocommit_cursor() as a, db.autocommit_cursor():
            pid = a.connection.info.backend_pid
        assert pid in (db.backend_pids or ())
        _until(lambda: db.backend_pids == frozenset(), "the parked sessions did not close")
        assert db.read_engine.pool.checkedout() == 0
        assert _pid(db) != pid
    finally:
        db.dispose()


def test_a_parked_session_opened_before_the_tables_prepares_them_later(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """What the pool's checkout would prepare (SESSION_CHECKOUT), a parked session prepares
    on its next use too."""
    db = Database(pg_url, pool_size=1)
    try:
        first = _pid(db)
        other = Database(pg_url, pool_size=1)  # the tables made while db's session is parked
        try:
            init_db(other, f"file:{tmp_path}")
        finally:
            other.dispose()
        monkeypatch.setattr(prepared, "RETRY_SECONDS", 0.0)
        with db.autocommit_cursor() as pooled:
            assert pooled.connection.info.backend_pid == first
            pooled.cursor.execute("SELECT name FROM pg_prepared_statements")
            names = {str(row[0]) for row in pooled.cursor.fetchall()}
        assert AT_CONNECT
        assert set(AT_CONNECT) <= names
    finally:
        db.dispose()


def test_many_threads_stay_within_the_pool(pg_url: str) -> None:
    db = Database(pg_url, pool_size=2)
    try:
        pids: set[int] = set()
        errors: list[BaseException] = []

        def work() -> None:
            try:
                for i in range(50):
                    if i % 5 == 0:
                        db.transaction(lambda c: c.exec_driver_sql("SELECT 1").scalar_one())
                    pids.add(_pid(db))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert len(pids) <= db.pool_limit
        assert db.pool_usage()["read"][0] == 0
    finally:
        db.dispose()
