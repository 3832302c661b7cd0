"""A PostgreSQL server with every connection slot taken (max_connections 20, filled by the test)
does not wedge an instance: cache hits go on, a call that needs a new connection fails with a
MetaException that says so, /readyz and a metric report it, and once slots are free again the
instance recovers by itself; a call of an instance holding no connection waits for a slot to
free, up to database_timeout_seconds. A start while the server is full waits for a slot. Eight
instances that each read and write fit in those 20 slots (LISTEN plus one pooled connection
each)."""

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


def test_a_call_that_finds_the_server_full_waits_for_a_slot_to_free(
    small_pg: PostgresServer, tmp_path: Path, T: Any
) -> None:
    """An instance holding no pooled connection (only LISTEN) when PostgreSQL is full: its call
    tries again until a slot frees (other clients' idle connections close), within
    database_timeout_seconds, instead of failing at once."""
    url = small_pg.new_database()
    with (
        instances(
            url,
            tmp_path,
            n=1,
            instance_name="waits",
            database_pool_idle_seconds=0.3,
            database_timeout_seconds=20.0,
        ) as (svc,),
        clients(svc) as (client,),
    ):
        client.create_database(T.Database(name="d"))
        settle(svc)
        deadline = time.monotonic() + 60
        while _sessions(url, "waits") > 1:  # only the LISTEN session is left
            assert time.monotonic() < deadline, "pooled connections were not closed"
            time.sleep(0.1)
        refused = _refused()
        with every_slot_taken(url) as held:
            freed = threading.Timer(1.0, held.pop().close)  # another client lets one go
            freed.start()
            client.create_database(T.Database(name="x"))  # refused, then waits for it
            freed.join()
        assert _refused() > refused
        assert client.get_database("x").name == "x"


def test_a_start_on_a_full_server_waits_for_a_slot(
    small_pg: PostgresServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = small_pg.new_database()
    started = threading.Event()
    failed: list[BaseException] = []

    def start() -> None:
        try:
            with running_service(
                url,
                tmp_path / "wh",
                database_start_timeout_seconds=120,
                database_timeout_seconds=2.0,  # the pool hands a refusal to the start soon
            ):
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


def test_eight_instances_that_read_and_write_fit_in_twenty_connections(
    small_pg: PostgresServer, tmp_path: Path, T: Any
) -> None:
    """Without a pooler, every instance holds its LISTEN session and, reading and writing,
    one pooled connection (kept here for a minute, as if every call came within
    database_pool_idle_seconds of the last): 16 of the 20 slots, so every call succeeds.
    Each with a pooled connection per kind (read snapshots, id blocks, write transactions)
    needed 32."""
    url = small_pg.new_database()
    n = 8
    with instances(
        url,
        tmp_path,
        n=n,
        instance_name="few-slots",
        database_pool_size=1,
        database_pool_idle_seconds=60,
        database_timeout_seconds=5.0,
        txn_housekeeping="off",
    ) as services:
        with clients(services[0]) as (first,):
            first.create_database(T.Database(name="d"))
        errors: list[str] = []

        def read_and_write(i: int) -> None:
            try:
                with clients(services[i]) as (client,):
                    client.get_all_databases()
                    client.get_database("d")
                    client.create_table(table(T, "d", f"t{i}"))
                    assert client.get_table("d", f"t{i}").tableName == f"t{i}"
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}")

        threads = [threading.Thread(target=read_and_write, args=(i,)) for i in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        settle(*services)
        with clients(services[-1]) as (last,):
            assert sorted(last.get_all_tables("d")) == sorted(f"t{i}" for i in range(n))
        assert _sessions(url, "few-slots") <= 2 * n
