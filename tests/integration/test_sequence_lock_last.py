"""The NOTIFICATION_SEQUENCE row lock is the last thing a transaction call takes.

Every event-writing transaction holds the sequence row from its event step to its commit (event
ids in commit order, docs/cache.md), so everything else the call does must come before that
step. A test session holds the row; an open_txns or commit_txn then blocks at its event step,
and pg_locks shows what its backend already holds: the call's other writes done (their
relations locked), NOTIFICATION_LOG not touched yet. Through the server-side functions
(plpgsql.py) and through the statements (pgsql.py, events.log), which must agree.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import ensure_ready
from hms_cache_proxy.store.txn import install
from hms_cache_proxy.store.txn.txn_base import TxnConfig
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import sql_store

pytestmark = pytest.mark.postgres

USER, HOST = "tester", "test-host"

_BLOCKED_LOCKS = """
SELECT l.locktype, COALESCE(c.relname, ''), l.mode, l.granted
FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
WHERE l.pid = %s
"""


@pytest.fixture
def raw(pg_url: str) -> Iterator[Any]:
    conn = psycopg2.connect(pg_url.replace("postgresql+psycopg2://", "postgresql://"))
    yield conn
    conn.close()


def _service(pg_url: str, tmp_path: Path, functions: bool) -> tuple[Database, TxnService]:
    db = Database(pg_url)
    ensure_ready(db, (tmp_path / "wh").as_uri(), True)
    usable = install.install(db).usable if functions else False
    assert usable == functions
    config = TxnConfig(use_min_history_level=True, server_functions=usable)
    return db, sql_store(db, (tmp_path / "wh").as_uri(), config).txn


def _blocked_at_sequence(raw: Any, call: Callable[[], Any]) -> tuple[set[tuple[str, str]], Any]:
    """Run ``call`` while ``raw`` holds the sequence row; returns the relation locks
    (relation, mode) the call's backend held while it waited for the row, and its result."""
    holder = raw.cursor()
    holder.execute('UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = "NEXT_EVENT_ID"')
    holder.execute("SELECT pg_backend_pid()")
    (holder_pid,) = holder.fetchone()
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    watcher = psycopg2.connect(raw.dsn)
    watcher.autocommit = True
    try:
        deadline = time.monotonic() + 30
        pid = None
        with watcher.cursor() as cur:
            while pid is None and time.monotonic() < deadline:
                cur.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND %s = ANY(pg_blocking_pids(pid))",
                    (holder_pid,),
                )
                row = cur.fetchone()
                pid = row[0] if row else None
                if pid is None:
                    assert thread.is_alive(), f"the call ended without waiting: {errors}"
                    time.sleep(0.01)
            assert pid is not None, "the call never waited for the sequence row"
            cur.execute(_BLOCKED_LOCKS, (pid,))
            locks = cur.fetchall()
        # What it waits for is the row the holder updated (its transaction id or the tuple).
        waiting = [lk for lk in locks if not lk[3]]
        assert waiting and {lk[0] for lk in waiting} <= {"transactionid", "tuple"}, locks
        held = {(lk[1], lk[2]) for lk in locks if lk[3] and lk[0] == "relation"}
    finally:
        raw.rollback()
        thread.join(30)
        watcher.close()
    assert not errors, errors
    return held, result[0]


@pytest.mark.parametrize("functions", [True, False], ids=["functions", "statements"])
def test_open_and_commit_take_the_sequence_row_after_all_their_other_work(
    pg_url: str, tmp_path: Path, raw: Any, functions: bool
) -> None:
    db, svc = _service(pg_url, tmp_path, functions)
    try:
        held, ids = _blocked_at_sequence(raw, lambda: svc.open_txns(1, USER, HOST))
        # The txn rows and their watermark are written, TXN_LOCK_TBL held shared: the open's
        # work is done before it waits for the sequence row; no event row written yet.
        assert ("TXN_LOCK_TBL", "ShareLock") in held
        assert ("TXNS", "RowExclusiveLock") in held
        assert ("MIN_HISTORY_LEVEL", "RowExclusiveLock") in held
        assert not {rel for rel, _ in held if rel == "NOTIFICATION_LOG"}

        held, _ = _blocked_at_sequence(raw, lambda: svc.commit_txn(ids[0]))
        # The commit has marked the txn committed, dropped its locks and watermark row.
        assert ("TXNS", "RowExclusiveLock") in held
        assert ("HIVE_LOCKS", "RowExclusiveLock") in held
        assert ("MIN_HISTORY_LEVEL", "RowExclusiveLock") in held
        assert not {rel for rel, _ in held if rel == "NOTIFICATION_LOG"}

        events = svc.events
        with db.read() as conn:
            got = events.next_events(conn, 0, 100)
        assert [e.eventType for e in got] == ["OPEN_TXN", "COMMIT_TXN"]
        assert got[0].eventId + 1 == got[1].eventId
        assert got[0].eventTime <= got[1].eventTime
    finally:
        db.dispose()
