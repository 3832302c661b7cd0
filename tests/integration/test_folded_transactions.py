"""Write transactions on PostgreSQL through psycopg2 with BEGIN and COMMIT folded into the
call's own statements (store/db/engine.py), and statements prepared per connection
(store/db/prepared.py): the same atomicity, isolation and errors as separate messages."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Connection

from hms_cache_proxy import failpoints
from hms_cache_proxy.store.db.engine import Database, commit_after
from hms_cache_proxy.store.db.prepared import Prepared

pytestmark = pytest.mark.postgres


@pytest.fixture
def db(pg_url: str):
    database = Database(pg_url, pool_size=2)
    with database.single_statement() as conn:
        conn.exec_driver_sql("CREATE TABLE t (k int PRIMARY KEY, v text)")
    yield database
    database.dispose()


def _rows(db: Database) -> list[tuple[int, str]]:
    with db.single_statement() as conn:
        return [tuple(r) for r in conn.exec_driver_sql("SELECT k, v FROM t ORDER BY k")]


def _in_transaction(db: Database) -> bool:
    """Is a pooled connection of the write transactions left inside a transaction block?"""
    with db.folded_engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        return raw.info.transaction_status != 0  # 0: TRANSACTION_STATUS_IDLE


def test_the_folding_is_on_for_psycopg2(db: Database) -> None:
    assert db.folds_round_trips


def test_statements_of_one_call_commit_together(db: Database) -> None:
    def run(conn: Connection) -> int:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        conn.exec_driver_sql("INSERT INTO t VALUES (2, 'b')")
        return 7

    assert db.transaction(run) == 7
    assert _rows(db) == [(1, "a"), (2, "b")]
    assert not _in_transaction(db)


def test_a_failure_rolls_back_every_statement_and_the_connection_is_clean(db: Database) -> None:
    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'duplicate')")

    with pytest.raises(Exception, match="duplicate key"):
        db.transaction(run)
    assert _rows(db) == []
    assert not _in_transaction(db)


def test_a_python_error_after_statements_rolls_them_back(db: Database) -> None:
    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        raise ValueError("refused")

    with pytest.raises(ValueError):
        db.transaction(run)
    assert _rows(db) == []


def test_uncommitted_rows_are_invisible_to_others_until_the_call_ends(db: Database) -> None:
    inside, release = threading.Event(), threading.Event()

    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        inside.set()
        release.wait(10)

    worker = threading.Thread(target=db.transaction, args=(run,))
    worker.start()
    assert inside.wait(10)
    try:
        assert _rows(db) == []  # BEGIN went out with the INSERT: not autocommitted
    finally:
        release.set()
        worker.join(10)
    assert _rows(db) == [(1, "a")]


def test_a_folded_commit_travels_with_the_last_statement(db: Database) -> None:
    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        conn.exec_driver_sql("INSERT INTO t VALUES (2, 'b')" + commit_after(conn))

    db.transaction(run)
    assert _rows(db) == [(1, "a"), (2, "b")]
    assert not _in_transaction(db)


def test_a_failing_last_statement_leaves_nothing_though_it_carried_the_commit(
    db: Database,
) -> None:
    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'again')" + commit_after(conn))

    with pytest.raises(Exception, match="duplicate key"):
        db.transaction(run)
    assert _rows(db) == []
    assert not _in_transaction(db)


def test_no_statement_may_follow_the_folded_commit(db: Database) -> None:
    def run(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')" + commit_after(conn))
        conn.exec_driver_sql("INSERT INTO t VALUES (2, 'b')")

    with pytest.raises(RuntimeError, match="after the COMMIT"):
        db.transaction(run)
    assert _rows(db) == [(1, "a")]


def test_an_armed_commit_failpoint_keeps_the_commit_separate(db: Database) -> None:
    def boom(name: str, detail: str) -> None:
        raise failpoints.FailpointError("injected")

    failpoints.set("write.before_commit", boom)
    try:

        def run(conn: Connection) -> None:
            assert commit_after(conn) == ""
            conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')")

        with pytest.raises(failpoints.FailpointError):
            db.transaction(run)
    finally:
        failpoints.clear()
    assert _rows(db) == []


def test_transaction_end_listeners_see_commit_and_failure(db: Database) -> None:
    ended: list[bool] = []
    db.on_transaction_end(lambda conn, committed: ended.append(committed))
    db.transaction(lambda conn: conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')"))
    with pytest.raises(Exception, match="duplicate key"):
        db.transaction(lambda conn: conn.exec_driver_sql("INSERT INTO t VALUES (1, 'a')"))
    assert ended == [True, False]


def test_a_call_without_statements_sends_nothing(db: Database) -> None:
    assert db.transaction(lambda conn: "nothing") == "nothing"
    assert not _in_transaction(db)


def test_prepared_statements_answer_as_the_text_and_are_prepared_once(db: Database) -> None:
    stmt = Prepared("hms_test_lookup", "SELECT v FROM t WHERE k = %(k)s", {"k": "integer"})
    db.transaction(lambda conn: conn.exec_driver_sql("INSERT INTO t VALUES (3, 'c')"))
    with db.single_statement() as conn:
        first = stmt.text(conn)
        assert first.startswith("EXECUTE hms_test_lookup")
        assert conn.exec_driver_sql(first, {"k": 3}).scalar_one() == "c"
        names = conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").scalars().all()
        assert names.count("hms_test_lookup") == 1
        assert stmt.text(conn) == first  # not prepared again


def test_a_statement_that_cannot_be_prepared_runs_as_text(db: Database) -> None:
    stmt = Prepared("hms_test_missing", "SELECT x FROM no_such_table WHERE x = %(x)s", {"x": "int"})
    with db.single_statement() as conn:
        assert stmt.text(conn) == stmt.sql  # the session stays usable
        assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1


def test_nothing_is_prepared_inside_a_transaction_under_way(db: Database) -> None:
    stmt = Prepared("hms_test_inside", "SELECT v FROM t WHERE k = %(k)s", {"k": "integer"})

    def run(conn: Connection) -> str:
        conn.exec_driver_sql("INSERT INTO t VALUES (4, 'd')")
        return stmt.text(conn)

    assert db.transaction(run) == stmt.sql
