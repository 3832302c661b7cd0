"""A PostgreSQL server with every connection slot taken (max_connections 20, filled by the test)
does not wedge an instance: cache hits go on, a call that needs a new connection fails with a
MetaException that says so, /readyz and a metric report it, and once slots are free again the
instance recovers by itself. A start while the server is full waits for a slot."""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from hms_cache_proxy.bench.postgres import PostgresServer, PostgresUnavailable
from hms_cache_proxy.observability import metrics
from tests.support.cache import clients, instances, settle
from tests.support.metastore import table
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres]


@pytest.fixture(scope="module")
def small_pg() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer.start({"max_connections": "20"})
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg2://", "postgresql://")


def _sessions(url: str, name: str) -> int:
    with psycopg2.connect(_dsn(url)) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (f"hms-cache-proxy/{name}",),
        )
        (n,) = cur.fetchone()
    conn.close()
    return int(n)


@contextmanager
def every_slot_taken(url: str) -> Iterator[list[Any]]:
    """Open connections until PostgreSQL refuses one; close them all on exit."""
    held: list[Any] = []
    try:
        while True:
            try:
                held.append(psycopg2.connect(_dsn(url)))
            except psycopg2.OperationalError as exc:
                assert "too many clients" in str(exc) or "reserved" in str(exc), exc
                break
            assert len(held) < 100, "max_connections 20 was not in force"
        yield held
    finally:
        for conn in held:
            conn.close()


def _refused() -> float:
    return metrics.REGISTRY.get_sample_value("hms_database_connections_refused_total") or 0.0


def test_a_full_server_leaves_cache_hits_served_and_fails_writes_clearly(
    small_pg: PostgresServer, tmp_path: Path, T: Any
) -> None:
    url = small_pg.new_database()
    with (
        instances(
            url,
            tmp_path,
            n=1,
            instance_name="full",
            database_pool_idle_seconds=0.3,
            database_timeout_seconds=2.0,
            metrics_port=0,
        ) as (svc,),
        clients(svc) as (client,),
    ):
        client.create_database(T.Database(name="d"))
        client.create_table(table(T, "d", "t"))
        client.get_table("d", "t")
        settle(svc)
        deadline = time.monotonic() + 60
        while _sessions(url, "full") > 1:  # only the LISTEN session is left
            assert time.monotonic() < deadline, "pooled connections were not closed"
            time.sleep(0.1)
        refused = _refused()
        with every_slot_taken(url):
            assert client.get_table("d", "t").tableName == "t"  # from the cache
            with pytest.raises(T.MetaException) as err:
                client.create_database(T.Database(name="x"))
            assert "refused a new connection (too many clients" in err.value.message
            assert _refused() > refused
            with urllib.request.urlopen(f"{svc.metrics_url}/readyz", timeout=10) as reply:
                body = json.loads(reply.read())
            assert reply.status == 200 and body["ready"] is True
            assert any("refused a new connection" in d for d in body["degraded"])
        # Slots free again: the next call opens a connection as usual.
        client.create_database(T.Database(name="x"))
        assert client.get_database("x").name == "x"


def test_a_start_on_a_full_server_waits_for_a_slot(
    small_pg: PostgresServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = small_pg.new_database()
    started = threading.Event()
    failed: list[BaseException] = []

    def start() -> None:
        try:
            with running_service(url, tmp_path / "wh", database_start_timeout_seconds=120):
                started.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    caplog.set_level(logging.WARNING, logger="hms_cache_proxy.app")
    with every_slot_taken(url):
        thread = threading.Thread(target=start, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while "cannot take a connection yet" not in caplog.text:
            assert time.monotonic() < deadline and thread.is_alive(), failed
            time.sleep(0.05)
        assert not started.is_set()
    thread.join(120)
    assert not failed and started.is_set(), failed
