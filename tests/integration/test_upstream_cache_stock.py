"""Upstream mode in front of the stock Hive Metastore 2.3.10 (PySpark's jars: no
DbNotificationListener, so no notification log): the sidecar says so and caches nothing,
unless a TTL is opted in; a log that stops moving after a write through the sidecar is found
out the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.bench.stock_hms import StockMetastore
from hms_cache_proxy.bench.targets import create_stock_txn_tables
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.server.upstream_events import FOLLOWING, NO_LOG
from tests.integration.test_upstream_cache import forwarded, until
from tests.integration.test_upstream_passthrough import proxy_settings
from tests.support.apache_thrift import apache_client
from tests.support.metastore import table

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.stock]


@pytest.fixture(scope="module")
def stock(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory, stock_hms_prerequisites: None
) -> Iterator[tuple[StockMetastore, str]]:
    url = pg_server.new_database()
    work = tmp_path_factory.mktemp("stock-upstream")
    try:
        create_stock_txn_tables(url)
        with StockMetastore.start(url, workdir=work, jvm_args=["-XX:TieredStopAtLevel=1"]) as hms:
            yield hms, url
    finally:
        pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def sidecar(stock: tuple[StockMetastore, str]) -> Iterator[Callable[..., Service]]:
    started: list[Service] = []

    def _start(**overrides: Any) -> Service:
        svc = build_service(proxy_settings(stock[0].uri, **overrides))
        svc.start_background()
        started.append(svc)
        return svc

    yield _start
    for svc in started:
        svc.stop(grace_seconds=5)


@pytest.fixture
def connect() -> Iterator[Callable[[int], Any]]:
    transports = []

    def _connect(port: int) -> Any:
        client, transport = apache_client("127.0.0.1", port)
        transports.append(transport)
        return client

    yield _connect
    for t in transports:
        t.close()


def _state(svc: Service) -> str:
    assert svc.sidecar is not None
    return svc.sidecar.events.state


def test_no_notification_log_is_reported_and_every_read_passes_through(
    sidecar: Callable[..., Service], connect: Any
) -> None:
    svc = sidecar()
    until(lambda: _state(svc) == NO_LOG, "the sidecar finds no notification log")
    detail = svc.readiness.snapshot()["upstream_cache"]
    assert detail["answering"] is False and detail["by_time"] is False
    assert "event id is 0" in detail["notification_log"]["reason"]
    client = connect(svc.port)
    loads = forwarded("get_database")
    for _ in range(3):
        assert client.get_database("default").name == "default"
    assert forwarded("get_database") == loads + 3


def test_a_ttl_opted_in_caches_for_that_long_and_a_write_through_the_sidecar_empties_it(
    sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    svc = sidecar(upstream_cache_ttl_seconds=600)
    until(lambda: _state(svc) == NO_LOG, "the sidecar finds no notification log")
    assert svc.sidecar is not None and svc.sidecar.answering()
    assert svc.readiness.snapshot()["upstream_cache"]["by_time"] is True
    assert metrics.REGISTRY.get_sample_value("hms_upstream_cache_ttl_seconds") == 600
    client = connect(svc.port)
    client.create_database(T.Database(name="ttl_db", locationUri=None))
    client.create_table(table(T, "ttl_db", "t", location=None))
    loads = forwarded("get_table")
    for _ in range(3):
        assert client.get_table("ttl_db", "t").tableName == "t"
    assert forwarded("get_table") == loads + 1
    t = client.get_table("ttl_db", "t")
    t.parameters["k"] = "v"
    client.alter_table("ttl_db", "t", t)  # forgets every entry
    assert client.get_table("ttl_db", "t").parameters["k"] == "v"


def test_an_event_id_that_a_write_does_not_move_means_no_log(
    stock: tuple[StockMetastore, str], sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    # A metastore whose listener was removed: its sequence says events were logged once.
    engine = sa.create_engine(stock[1])
    try:
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM "NOTIFICATION_SEQUENCE"'))
            conn.execute(
                sa.text(
                    'INSERT INTO "NOTIFICATION_SEQUENCE" ("NNI_ID", "NEXT_EVENT_ID") '
                    "VALUES (1, 100)"
                )
            )
        svc = sidecar()
        until(lambda: _state(svc) == FOLLOWING, "the sidecar takes the log for a live one")
        client = connect(svc.port)
        client.create_database(T.Database(name="moved_db"))
        client.get_database("moved_db")  # catches up: the event id did not move
        assert _state(svc) == NO_LOG
        reason = svc.readiness.snapshot()["upstream_cache"]["notification_log"]["reason"]
        assert "did not move" in reason
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM "NOTIFICATION_SEQUENCE"'))
        engine.dispose()
