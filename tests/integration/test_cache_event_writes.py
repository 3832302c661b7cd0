"""Writes that append events bring this instance's cache to the end of the log before they
return (the caching store follows every ``@writes_events`` method with a catch-up), including
the function calls and insert events that the hand-kept list of write names used to miss.

One real service with its cache, on SQLite and PostgreSQL, through Apache Thrift's client. Its
poller polls once an hour and does not listen, so only the write's own catch-up can move the
cache's position in time. Functions are not cached: the calls read them from the database, and
must see each change at once. An exchange of partitions changes two tables' entries with its
ADD_PARTITION and DROP_PARTITION events.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import Counted, clients, entry
from tests.support.metastore import partition, table
from tests.support.server import running_service

DB = "fdb"


@pytest.fixture
def instance(database_url: str, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    with (
        running_service(
            database_url,
            tmp_path / "warehouse",
            cache_poll_interval_seconds=3600,
            cache_listen=False,
        ) as svc,
        clients(svc) as [client],
    ):
        yield svc, client


def _caught_up(svc: Any) -> None:
    """The cache has applied every event in the log, without waiting for the poller."""
    current = svc.store.current_notification_event_id()
    assert svc.cache.poller.position == current


def _function(T: Any, name: str, class_name: str = "com.example.Upper") -> Any:
    return T.Function(
        functionName=name,
        dbName=DB,
        className=class_name,
        ownerName="alice",
        ownerType=T.PrincipalType.USER,
        createTime=0,
        functionType=T.FunctionType.JAVA,
        resourceUris=[T.ResourceUri(T.ResourceType.JAR, "file:///tmp/u.jar")],
    )


def test_function_writes_are_caught_up_and_read_back_at_once(instance, T) -> None:
    svc, client = instance
    client.create_database(T.Database(name=DB, description="", parameters={}))
    _caught_up(svc)
    before = svc.store.current_notification_event_id()

    client.create_function(_function(T, "upper2"))
    assert svc.store.current_notification_event_id() == before + 1  # CREATE_FUNCTION
    _caught_up(svc)
    assert client.get_function(DB, "upper2").className == "com.example.Upper"
    assert [f.functionName for f in client.get_all_functions().functions] == ["upper2"]

    # alter_function writes no event (Hive writes none): nothing to catch up, read at once.
    client.alter_function(DB, "upper2", _function(T, "upper2", "com.example.Upper2"))
    assert svc.store.current_notification_event_id() == before + 1
    assert client.get_function(DB, "upper2").className == "com.example.Upper2"

    client.drop_function(DB, "upper2")
    assert svc.store.current_notification_event_id() == before + 2  # DROP_FUNCTION
    _caught_up(svc)
    assert client.get_all_functions().functions == []
    with pytest.raises(T.NoSuchObjectException):
        client.get_function(DB, "upper2")


def test_insert_events_are_caught_up(instance, T) -> None:
    svc, client = instance
    client.create_database(T.Database(name=DB, description="", parameters={}))
    cols = [T.FieldSchema(name="a", type="int", comment="")]
    sd = T.StorageDescriptor(
        cols=cols,
        location="",
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}
        ),
        parameters={},
    )
    client.create_table(T.Table(tableName="t", dbName=DB, sd=sd, partitionKeys=[], parameters={}))
    _caught_up(svc)
    before = svc.store.current_notification_event_id()

    data = T.FireEventRequestData(
        insertData=T.InsertEventRequestData(filesAdded=["file:/w/fdb/t/f0"])
    )
    client.fire_listener_event(
        T.FireEventRequest(successful=True, data=data, dbName=DB, tableName="t")
    )
    assert svc.store.current_notification_event_id() == before + 1  # INSERT
    _caught_up(svc)


def test_an_exchange_of_partitions_is_caught_up_and_read_from_the_cache_at_once(
    instance, T
) -> None:
    svc, client = instance
    keys = ["ds:string"]
    for name in ("src", "dst"):
        client.create_table(table(T, "default", name, keys=keys))
    for ds in ("x", "y"):
        client.add_partition(partition(T, "default", "src", [ds]))
    for name in ("src", "dst"):
        client.get_partitions("default", name, -1)  # queues the entries' loads
    assert svc.cache.loader.wait_idle(10)
    assert entry(svc, "default", "src") is not None and entry(svc, "default", "dst") is not None
    before = svc.store.current_notification_event_id()

    client.exchange_partitions({"ds": "x"}, "default", "src", "default", "dst")
    assert svc.store.current_notification_event_id() == before + 2  # ADD_ and DROP_PARTITION
    _caught_up(svc)
    with Counted() as counted:
        assert [p.values for p in client.get_partitions("default", "src", -1)] == [["y"]]
        assert [p.values for p in client.get_partitions("default", "dst", -1)] == [["x"]]
    assert counted.hits("get_partitions") == 2
