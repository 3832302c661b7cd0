"""What an instance holds on PostgreSQL: an idle one keeps only its LISTEN session and sends
nothing on it; pools open connections for calls and close them once unused; one that reads
and writes holds one pooled connection beside it; every session names the instance; the
housekeeping lease lives on one LISTEN session and moves when its holder stops; a
notification that never came is caught by the safety check."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from sqlalchemy import event

from tests.support.cache import clients, instances
from tests.support.metastore import last_event_id, table

pytestmark = [pytest.mark.postgres]


@pytest.fixture
def watch(pg_url: str) -> Iterator[Callable[[str], list[tuple[Any, ...]]]]:
    """``watch(name)``: (pid, query, query_start) of the sessions named after instance
    ``name`` on the test's database."""
    conn = psycopg2.connect(pg_url.replace("postgresql+psycopg2://", "postgresql://"))
    conn.autocommit = True

    def sessions(name: str) -> list[tuple[Any, ...]]:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT pid, query, query_start FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = %s ORDER BY pid",
                (f"hms-cache-proxy/{name}",),
            )
            return cur.fetchall()

    yield sessions
    conn.close()


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_an_idle_instance_keeps_one_silent_connection_named_after_it(
    pg_url: str, tmp_path: Path, T: Any, watch: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    with (
        instances(
            pg_url,
            tmp_path,
            n=1,
            instance_name="idle-a",
            database_pool_idle_seconds=0.5,
            txn_housekeeping="off",  # its round once a minute is not what is watched here
        ) as (svc,),
        clients(svc) as (client,),
    ):
        client.create_database(T.Database(name="d"))
        client.get_database("d")
        assert len(watch("idle-a")) >= 2  # the calls' pooled connections, LISTEN
        # The start's open-txn floor is settled (when its read under TXN_LOCK_TBL fails, by
        # two reads seconds apart): its reads are over before the silence is watched.
        assert svc.floor_primer is not None
        _until(svc.floor_primer.finished.is_set, "the floor primer did not end")
        _until(lambda: len(watch("idle-a")) == 1, "pooled connections were not closed")
        ((pid, query, started),) = watch("idle-a")
        assert svc.cache.poller._listener.get_backend_pid() == pid
        time.sleep(2)  # 40 poll intervals (0.05 s): nothing may be sent meanwhile
        assert watch("idle-a") == [(pid, query, started)]
        # The instance still serves, and opens a connection again for a call that needs one.
        client.create_database(T.Database(name="e"))
        assert client.get_database("e").name == "e"


class _CheckedOut:
    """The most connections of ``database``'s pools checked out at once, from now on (parked
    ones too: ``autocommit_cursor`` keeps its session checked out between calls)."""

    def __init__(self, database: Any) -> None:
        self.now = self.most = sum(engine.pool.checkedout() for engine in database.engines())
        for engine in database.engines():
            event.listen(engine.pool, "checkout", self._out)
            event.listen(engine.pool, "checkin", self._in)

    def _out(self, *_: Any) -> None:
        self.now += 1
        self.most = max(self.most, self.now)

    def _in(self, *_: Any) -> None:
        self.now -= 1


def test_an_instance_that_reads_and_writes_holds_one_pooled_connection_beside_listen(
    pg_url: str, tmp_path: Path, T: Any, watch: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """The fan-out's sequence (reads, a write, another instance's write followed, a write
    again): the read snapshots, the id blocks and the write transactions all on one pooled
    connection, which idle connections kept for a minute make visible in pg_stat_activity."""
    settings = {
        "database_pool_size": 1,
        "database_pool_idle_seconds": 60,  # every connection opened stays to be counted
        "txn_housekeeping": "off",  # its rounds are another thread's
    }
    with (
        instances(pg_url, tmp_path, n=1, instance_name="rw-a", **settings) as (a,),
        instances(pg_url, tmp_path, n=1, instance_name="rw-b", **settings) as (b,),
        clients(a, b) as (ca, cb),
    ):
        cb.create_database(T.Database(name="d"))
        _until(lambda: a.cache.poller.position >= last_event_id(cb), "A follows")
        checked_out = _CheckedOut(a.database)
        ca.get_all_databases()
        ca.get_database("d")
        ca.get_database("d")
        ca.create_table(table(T, "d", "t1"))
        assert ca.get_table("d", "t1").tableName == "t1"
        cb.create_table(table(T, "d", "other"))  # followed on A's LISTEN session
        ca.create_table(table(T, "d", "t2"))  # its id blocks: new ones, reserved in its write
        assert ca.get_table("d", "t2").tableName == "t2"
        assert checked_out.most == 1
        # LISTEN and the one pooled connection, both still open (idle for a minute).
        assert len(watch("rw-a")) == 2, watch("rw-a")


def test_the_housekeeping_lease_has_one_holder_and_moves_when_it_stops(
    pg_url: str, tmp_path: Path
) -> None:
    with instances(
        pg_url,
        tmp_path,
        n=2,
        poller_safety_interval_seconds=0.2,
        txn_housekeeping_interval_seconds=0.1,
    ) as (a, b):
        pollers = [a.cache.poller, b.cache.poller]
        _until(lambda: all(p.listening for p in pollers), "both LISTEN")
        _until(lambda: any(p.leader for p in pollers), "a lease holder")
        assert [p.leader for p in pollers].count(True) == 1
        holder, other = (a, b) if a.cache.poller.leader else (b, a)
        # Housekeeping rounds run in the holder only.
        _until(lambda: holder.housekeeper.rounds >= 3, "the holder's housekeeping")
        assert other.housekeeper.rounds == 0
        holder.cache.poller.stop()  # its LISTEN session (and the lock) goes
        _until(lambda: other.cache.poller.leader, "the lease moved")
        _until(lambda: other.housekeeper.rounds >= 1, "housekeeping in the new holder")


def test_the_safety_check_catches_up_when_a_notification_never_comes(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    with (
        instances(pg_url, tmp_path, n=2, poller_safety_interval_seconds=0.5) as (a, b),
        clients(a, b) as (ca, _),
    ):
        _until(lambda: b.cache.poller._listener is not None, "B listens")
        listener = b.cache.poller._listener
        # Not while B's poller uses the session (its catch-up after LISTEN, a safety check).
        with b.cache.poller.listener_lock, listener.cursor() as cur:
            cur.execute("UNLISTEN *")  # B's session stays, its notifications stop
        ca.create_database(T.Database(name="unannounced"))
        target = last_event_id(ca)
        assert b.cache.poller.wait_for(target, 30), "B did not catch up"
        assert b.cache.poller._listener is listener  # through the safety check, same session


def test_an_error_on_the_listen_session_is_counted_like_the_pools_errors(
    pg_url: str, tmp_path: Path
) -> None:
    """The LISTEN session is outside SQLAlchemy (whose hook counts the pools' errors): its
    errors must still reach hms_database_errors_total (``Database.driver_errors``)."""
    with instances(pg_url, tmp_path, n=1, instance_name="listen-err") as (svc,):
        poller = svc.cache.poller
        _until(lambda: poller.listening, "it listens")
        seen: list[str] = []
        svc.database.driver_errors.listeners.append(seen.append)
        pid = poller._listener.get_backend_pid()
        conn = psycopg2.connect(pg_url.replace("postgresql+psycopg2://", "postgresql://"))
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
        finally:
            conn.close()
        _until(lambda: bool(seen), "the broken LISTEN session's error was not counted")
        assert seen[0] == "OperationalError"
        # It listens again on a new session.
        _until(lambda: poller.listening and poller._listener.get_backend_pid() != pid, "LISTEN")
