"""SIGTERM on a real `serve` process while a call is in flight: the service stops accepting at
once, the call still gets its answer, the database pool is closed, and the exit status is 0;
meanwhile /readyz says not ready, with the reason.

The call is made slow for real: the test holds an ACCESS EXCLUSIVE lock on DBS in PostgreSQL,
so create_database waits inside the server until the test lets go. pg_stat_activity shows
when the server's statement is waiting on that lock, so SIGTERM is sent only then.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from tests.support.apache_thrift import apache_client
from tests.support.server import ServerProcess, free_port

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


class _HeldCall:
    """create_database through ``server``, held inside the server by a lock the test holds on
    DBS (pg_stat_activity shows when the server's statement waits on it)."""

    def __init__(self, pg_url: str, server: ServerProcess, T: Any) -> None:
        self.locker = psycopg2.connect(pg_url.replace("postgresql+psycopg2://", "postgresql://"))
        self.outcome: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._call, args=(server.port, T))
        with self.locker.cursor() as cur:
            cur.execute('LOCK TABLE "DBS" IN ACCESS EXCLUSIVE MODE')
        self.thread.start()
        _until(self._waiting, "create_database waiting on the DBS lock")

    def _call(self, port: int, T: Any) -> None:
        client, trans = apache_client("127.0.0.1", port, timeout=120)
        try:
            client.create_database(T.Database(name="finished_late", parameters={}))
            self.outcome["answer"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported by the assertions
            self.outcome["answer"] = exc
        finally:
            trans.close()

    def _waiting(self) -> bool:
        with psycopg2.connect(self.locker.dsn) as watcher, watcher.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE %s AND pid <> %s",
                ('%"DBS"%', self.locker.get_backend_pid()),
            )
            waiting = cur.fetchone()[0] > 0
        watcher.close()
        return waiting

    def release(self) -> None:
        self.locker.rollback()
        self.thread.join(120)

    def close(self) -> None:
        self.locker.close()


def _get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_sigterm_finishes_the_call_in_flight_and_refuses_new_connections(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    conf = tmp_path / "proxy.yaml"
    conf.write_text("cache_enabled: false\nshutdown_grace_seconds: 60\n")  # no background reads
    log_path = tmp_path / "server.log"
    server = ServerProcess(pg_url, tmp_path / "wh", log_path, "--config", str(conf))
    held = None
    try:
        held = _HeldCall(pg_url, server, T)
        server.proc.send_signal(signal.SIGTERM)
        _until(lambda: _refused(server.port), "the listener to close")
        assert held.thread.is_alive() and server.proc.poll() is None  # still in flight
        held.release()  # let the call finish
        assert held.outcome.get("answer") == "ok"
        assert server.proc.wait(60) == 0
    finally:
        if held is not None:
            held.close()
        server.stop()
    log = log_path.read_text()
    assert "stopped: calls finished, database connections closed" in log
    with psycopg2.connect(held.locker.dsn) as check, check.cursor() as cur:
        cur.execute('SELECT count(*) FROM "DBS" WHERE "NAME" = %s', ("finished_late",))
        assert cur.fetchone()[0] == 1
    check.close()


def test_readyz_says_not_ready_while_shutting_down(pg_url: str, tmp_path: Path, T: Any) -> None:
    """The body agrees with the 503: ready false, with the shutdown as the reason."""
    conf = tmp_path / "proxy.yaml"
    conf.write_text("shutdown_grace_seconds: 60\n")  # the cache on: its prewarm reports ready
    http_port = free_port()
    server = ServerProcess(
        pg_url,
        tmp_path / "wh",
        tmp_path / "server.log",
        "--config",
        str(conf),
        "--metrics-host",
        "127.0.0.1",
        "--metrics-port",
        str(http_port),
    )
    held = None
    try:
        _until(lambda: _get(http_port, "/readyz")[0] == 200, "ready before the signal")
        held = _HeldCall(pg_url, server, T)
        server.proc.send_signal(signal.SIGTERM)
        _until(lambda: _refused(server.port), "the listener to close")
        status, body = _get(http_port, "/readyz")  # HTTP stays up until the calls are done
        assert status == 503
        assert body["ready"] is False and body["serving"] is False and body["stopping"] is True
        assert body["reason"].startswith("shutting down")
        health_status, health = _get(http_port, "/healthz")
        assert health_status == 503 and health["thrift"] == "not serving"
        held.release()
        assert held.outcome.get("answer") == "ok"
        assert server.proc.wait(60) == 0
    finally:
        if held is not None:
            held.close()
        server.stop()
