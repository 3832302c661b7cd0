"""SIGTERM on a real `serve` process while a call is in flight: the service stops accepting at
once, the call still gets its answer, the database pool is closed, and the exit status is 0.

The call is made slow for real: the test holds an ACCESS EXCLUSIVE lock on DBS in PostgreSQL,
so create_database waits inside the server until the test lets go. pg_stat_activity shows
when the server's statement is waiting on that lock, so SIGTERM is sent only then.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from tests.support.apache_thrift import apache_client
from tests.support.server import ServerProcess

pytestmark = pytest.mark.postgres


def _until(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.05)


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_sigterm_finishes_the_call_in_flight_and_refuses_new_connections(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    conf = tmp_path / "proxy.yaml"
    conf.write_text("cache_enabled: false\nshutdown_grace_seconds: 60\n")  # no background reads
    log_path = tmp_path / "server.log"
    server = ServerProcess(pg_url, tmp_path / "wh", log_path, "--config", str(conf))
    locker = psycopg2.connect(pg_url.replace("postgresql+psycopg2://", "postgresql://"))
    outcome: dict[str, Any] = {}

    def call() -> None:
        client, trans = apache_client("127.0.0.1", server.port, timeout=120)
        try:
            client.create_database(T.Database(name="finished_late", parameters={}))
            outcome["answer"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["answer"] = exc
        finally:
            trans.close()

    caller = threading.Thread(target=call)
    try:
        with locker.cursor() as cur:
            cur.execute('LOCK TABLE "DBS" IN ACCESS EXCLUSIVE MODE')
        caller.start()

        def server_waits_on_the_lock() -> bool:
            with psycopg2.connect(locker.dsn) as watcher, watcher.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE %s AND pid <> %s",
                    ('%"DBS"%', locker.get_backend_pid()),
                )
                waiting = cur.fetchone()[0] > 0
            watcher.close()
            return waiting

        _until(server_waits_on_the_lock, "create_database waiting on the DBS lock")
        server.proc.send_signal(signal.SIGTERM)
        _until(lambda: _refused(server.port), "the listener to close")
        assert caller.is_alive() and server.proc.poll() is None  # the call is still in flight
        locker.rollback()  # let the call finish
        caller.join(120)
        assert outcome.get("answer") == "ok"
        assert server.proc.wait(60) == 0
    finally:
        locker.close()
        server.stop()
    log = log_path.read_text()
    assert "stopped: calls finished, database connections closed" in log
    with psycopg2.connect(locker.dsn) as check, check.cursor() as cur:
        cur.execute('SELECT count(*) FROM "DBS" WHERE "NAME" = %s', ("finished_late",))
        assert cur.fetchone()[0] == 1
    check.close()
