"""``database_pooler: transaction`` through a real PgBouncer in transaction mode (Debian's
package, started by the test): two caching instances write and read through it side by side,
with LISTEN on a direct connection (``database_listen_url``) or off (polling through the pooler),
and a short consistency-checker run finds no violation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.check.runner import CheckConfig, run_check
from tests.support.cache import clients, instances
from tests.support.metastore import last_event_id, partition, table
from tests.support.pgbouncer import PgBouncer, find_pgbouncer

pytestmark = [pytest.mark.postgres]


@pytest.fixture(scope="module")
def bouncer(pg_server: Any) -> Iterator[PgBouncer]:
    if find_pgbouncer() is None:
        pytest.fail("pgbouncer is not installed (scripts/test.sh installs it)", pytrace=False)
    # Few server connections for the writers below: a statement prepared on one would soon
    # be executed on another. Not fewer than twice the concurrent write calls: a write that
    # holds one may need a second for a side transaction (ids), docs/deployment.md.
    pooler = PgBouncer(pg_server, pool_size=10)
    try:
        yield pooler
    finally:
        pooler.stop()


def _urls(pg_server: Any, bouncer: PgBouncer) -> tuple[str, str]:
    direct = pg_server.new_database()
    return direct, bouncer.url_for(direct.rsplit("/", 1)[1])


def _write_and_read_across(a: Any, b: Any, T: Any, db: str) -> None:
    """Writes through A from several threads (transactions, partitions), B follows."""
    with clients(a, b) as (ca, cb):
        ca.create_database(T.Database(name=db))
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                with clients(a) as (c,):
                    c.create_table(table(T, db, f"t{i}", keys=("ds:string",)))
                    c.add_partitions(
                        [partition(T, db, f"t{i}", [f"2024-01-{d:02d}"]) for d in range(1, 6)]
                    )
                    txns = c.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h"))
                    c.heartbeat(T.HeartbeatRequest(txnid=txns.txn_ids[0]))
                    c.commit_txn(T.CommitTxnRequest(txnid=txns.txn_ids[0]))
                    # A txn-less lock, its heartbeat and unlock: single statements on the
                    # bare cursor, sent as text through the pooler (no session PREPAREs).
                    component = T.LockComponent(
                        type=T.LockType.EXCLUSIVE,
                        level=T.LockLevel.TABLE,
                        dbname=db,
                        tablename=f"t{i}",
                        isTransactional=True,
                    )
                    held = c.lock(T.LockRequest(component=[component], user="u", hostname="h"))
                    assert held.state == T.LockState.ACQUIRED
                    c.heartbeat(T.HeartbeatRequest(lockid=held.lockid))
                    c.unlock(T.UnlockRequest(lockid=held.lockid))
                    with pytest.raises(T.NoSuchLockException):
                        c.heartbeat(T.HeartbeatRequest(lockid=held.lockid))
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        target = last_event_id(ca)
        assert b.cache.poller.wait_for(target, 60), "B did not follow A's writes"
        for i in range(4):
            assert len(cb.get_partitions(db, f"t{i}", -1)) == 5


def test_two_instances_through_pgbouncer_with_listen_on_a_direct_connection(
    pg_server: Any, bouncer: PgBouncer, tmp_path: Path, T: Any
) -> None:
    direct, pooled = _urls(pg_server, bouncer)
    with instances(
        pooled,
        tmp_path,
        database_pooler="transaction",
        database_listen_url=direct,
        poller_safety_interval_seconds=60,
    ) as (a, b):
        assert b.cache.poller.listen
        _write_and_read_across(a, b, T, "pooled_listen")
        assert b.cache.poller.listening


def test_two_instances_through_pgbouncer_without_listen_poll_through_it(
    pg_server: Any, bouncer: PgBouncer, tmp_path: Path, T: Any
) -> None:
    _, pooled = _urls(pg_server, bouncer)
    with instances(pooled, tmp_path, database_pooler="transaction") as (a, b):
        assert not b.cache.poller.listen  # no session to LISTEN on through the pooler
        _write_and_read_across(a, b, T, "pooled_poll")


def test_a_short_check_run_through_pgbouncer_finds_no_violation(
    pg_server: Any, bouncer: PgBouncer
) -> None:
    direct, pooled = _urls(pg_server, bouncer)
    cfg = CheckConfig(
        instances=2,
        clients=4,
        duration=4.0,
        faults=["kill", "stall", "drop"],
        database_url=pooled,
        fault_interval=0.5,
        stall_seconds=1.0,
        seed=5,
        settings={"database_pooler": "transaction", "database_listen_url": direct},
    )
    report = run_check(cfg, postgres=pg_server)
    assert report["violations"]["list"] == []
    assert report["faults"]["errors"] == []
    assert report["operations"]["commits_acknowledged"] > 0, report["operations"]
    assert report["checks"]["reads_checked"] > 0
