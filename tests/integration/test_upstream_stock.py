"""Upstream mode in front of the stock Java metastore 2.3.10 (PySpark's jars): its answers
reach the client as it gave them, methods this project does not implement and methods newer
than Hive 2.3 included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.bench.stock_hms import StockMetastore
from hms_cache_proxy.config import Settings
from tests.support.apache_thrift import apache_client
from tests.support.metastore import partition, table

pytestmark = [pytest.mark.postgres, pytest.mark.stock, pytest.mark.slow]


@pytest.fixture(scope="module")
def stock(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory, stock_hms_prerequisites: None
) -> Iterator[StockMetastore]:
    url = pg_server.new_database()
    base = tmp_path_factory.mktemp("upstream-stock")
    try:
        with StockMetastore.start(
            url, workdir=base, jvm_args=["-XX:TieredStopAtLevel=1"]
        ) as server:
            yield server
    finally:
        pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture(scope="module")
def proxy(stock: StockMetastore) -> Iterator[Service]:
    settings = Settings(upstream_uri=stock.uri, host="127.0.0.1", port=0, metrics_port=None)
    svc = build_service(settings)
    svc.start_background()
    try:
        yield svc
    finally:
        svc.stop(grace_seconds=5)


@pytest.fixture
def clients(proxy: Service, stock: StockMetastore) -> Iterator[tuple[Any, Any]]:
    """(through the proxy, straight to the stock metastore)."""
    ours, t1 = apache_client("127.0.0.1", proxy.port)
    direct, t2 = apache_client("127.0.0.1", stock.port)
    try:
        yield ours, direct
    finally:
        t1.close()
        t2.close()


def test_databases_tables_and_partitions_through_the_proxy(clients: Any, T: Any) -> None:
    ours, direct = clients
    ours.create_database(T.Database(name="via_proxy", parameters={}))
    ours.create_table(table(T, "via_proxy", "t", keys=["day:string"]))
    ours.add_partitions([partition(T, "via_proxy", "t", [d]) for d in ("a", "b")])
    assert ours.get_partition_names("via_proxy", "t", -1) == ["day=a", "day=b"]
    assert ours.get_database("via_proxy") == direct.get_database("via_proxy")
    assert ours.get_table("via_proxy", "t") == direct.get_table("via_proxy", "t")


def test_set_ugi_is_answered_by_the_stock_metastore(clients: Any) -> None:
    ours, direct = clients
    assert ours.set_ugi("bob", ["staff"]) == direct.set_ugi("bob", ["staff"])


def test_a_method_this_project_does_not_implement_gets_the_stock_answer(
    clients: Any, T: Any
) -> None:
    ours, _ = clients
    with pytest.raises(T.NoSuchObjectException):  # get_type: answered by Hive 2.3 only
        ours.get_type("no_such_type")


def test_a_method_newer_than_the_upstream_gets_its_unknown_method_answer(
    clients: Any, T: Any
) -> None:
    ours, direct = clients
    answers = []
    for client in (ours, direct):
        with pytest.raises(T.TApplicationException) as exc:
            client.get_catalogs()  # Hive 3's catalogs
        answers.append((exc.value.type, exc.value.message))
    assert answers[0] == answers[1]
    assert answers[0][0] == T.TApplicationException.UNKNOWN_METHOD
