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

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import tjson
from tests.support.cache import Counted, allocate, clients, commit, entry, open_txn
from tests.support.metastore import event_body, partition, table
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


def _commit_applied(svc: Any) -> None:
    """What the poller does when a commit's NOTIFY wakes it: apply this process's recorded
    events from memory (a commit leaves its events to the poller; this one does not listen)."""
    assert svc.cache.poller.apply_recorded(svc.store.current_notification_event_id())


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


def _column_stats(T: Any, desc: Any) -> Any:
    data = T.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=4)
    obj = T.ColumnStatisticsObj(
        colName="a", colType="int", statsData=T.ColumnStatisticsData(longStats=data)
    )
    return T.ColumnStatistics(statsDesc=desc, statsObj=[obj], engine="hive")


def _acid_alter(client: Any, T: Any) -> None:
    """An INSERT's metadata on table ``acid``, partition ds=a: open, write id,
    alter_partitions_req with it, commit."""
    txn = open_txn(client, T)
    write_id = allocate(client, T, DB, "acid", txn)
    altered = partition(T, DB, "acid", ["a"], params={"k": "w"})
    altered.writeId = write_id
    client.alter_partitions_req(
        T.AlterPartitionsRequest(
            dbName=DB, tableName="acid", partitions=[altered], writeId=write_id
        )
    )
    commit(client, T, txn)


def test_own_events_are_applied_from_the_bodies_their_writes_kept(instance, T) -> None:
    """The cache applies this process's events from the bodies their writes kept in memory
    (``EventLog.body_of``), not by decoding their messages again: every kept body is exactly
    the body its message decodes to, for the writes an instance makes, and the cache reads
    back what the writes stored."""
    svc, client = instance
    log = svc.store.events
    handed_out: dict[int, dict] = {}
    take = svc.cache.applier._body_of

    def recorded(event: Any) -> dict | None:
        body = take(event)
        if body is not None:
            handed_out[event.eventId] = body
        return body

    svc.cache.applier._body_of = recorded
    first = svc.store.current_notification_event_id() + 1
    client.create_database(T.Database(name=DB, description="", parameters={}))
    client.create_table(table(T, DB, "p", keys=["ds:string"]))
    client.add_partition(partition(T, DB, "p", ["a"]))
    client.add_partitions([partition(T, DB, "p", [ds]) for ds in ("b", "c")])
    client.get_partitions(DB, "p", -1)  # queues the entry's load
    assert svc.cache.loader.wait_idle(10)
    client.alter_partition(DB, "p", partition(T, DB, "p", ["a"], params={"k": "v"}))
    client.alter_partitions(
        DB, "p", [partition(T, DB, "p", [ds], params={"k": ds}) for ds in ("b", "c")]
    )
    client.rename_partition(DB, "p", ["c"], partition(T, DB, "p", ["d"]))
    client.alter_table(DB, "p", table(T, DB, "p", keys=["ds:string"], params={"t": "1"}))
    client.update_table_column_statistics(
        _column_stats(T, T.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName="p"))
    )
    client.update_partition_column_statistics(
        _column_stats(
            T,
            T.ColumnStatisticsDesc(isTblLevel=False, dbName=DB, tableName="p", partName="ds=a"),
        )
    )
    client.drop_partition(DB, "p", ["b"], True)
    acid = {"transactional": "true", "transactional_properties": "insert_only"}
    client.create_table(table(T, DB, "acid", keys=["ds:string"], params=acid))
    client.add_partition(partition(T, DB, "acid", ["a"]))
    _acid_alter(client, T)
    client.drop_table(DB, "acid", True)
    last = svc.store.current_notification_event_id()
    _caught_up(svc)

    events = log.committed_here(first, last)
    assert events is not None, "every event of these writes was committed here"
    kept = {e.eventType for e in events if e.eventId in handed_out}
    assert kept >= {
        "CREATE_DATABASE", "CREATE_TABLE", "ADD_PARTITION", "ALTER_PARTITION", "ALTER_TABLE",
        "UPDATE_TBL_COL_STAT_EVENT",
        "UPDATE_PART_COL_STAT_EVENT", "DROP_PARTITION", "DROP_TABLE",
    }  # fmt: skip
    for e in events:
        if e.eventId in handed_out:
            assert handed_out[e.eventId] == event_body(e), e.eventType
            assert log.body_of(e) is None, "a body is handed out once, then let go"
    # An object read back from the log is not the one the write made: decoded as usual.
    with svc.store.db.read() as conn:
        (from_log,) = log.next_events(conn, events[0].eventId - 1, 1)
    assert from_log.eventId == events[0].eventId and log.body_of(from_log) is None

    got = {tuple(p.values): p.parameters for p in client.get_partitions(DB, "p", -1)}
    assert sorted(got) == [("a",), ("d",)] and got[("a",)]["k"] == "v"
    assert client.get_table(DB, "p").parameters["t"] == "1"


def test_an_altered_partition_is_applied_from_the_object_its_write_read_back(
    instance, T, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process's ALTER_PARTITION events (alter_partition, alter_partitions, an ACID
    insert's alter_partitions_req with a write id, a rename) are applied from the partition
    object the write read back and encoded into the message (``message_base.Body``), without
    decoding that TJSON again; the entry then holds exactly the bytes the database path
    reads, which are the bytes the message's TJSON decodes to."""
    svc, client = instance
    client.create_database(T.Database(name=DB, description="", parameters={}))
    client.create_table(table(T, DB, "p", keys=["ds:string"]))
    client.add_partitions([partition(T, DB, "p", [ds]) for ds in ("a", "b", "c")])
    acid = {"transactional": "true", "transactional_properties": "insert_only"}
    client.create_table(table(T, DB, "acid", keys=["ds:string"], params=acid))
    client.add_partition(partition(T, DB, "acid", ["a"]))
    client.get_partitions(DB, "p", -1)  # queues the entry's load
    assert svc.cache.loader.wait_idle(10)
    _caught_up(svc)
    decoded: list[str] = []
    loads = tjson.loads

    def counted(text: str, cls: type) -> Any:
        decoded.append(cls.__name__)
        return loads(text, cls)

    handed_out: list[Any] = []
    take = svc.cache.applier._body_of

    def recorded(event: Any) -> dict | None:
        body = take(event)
        if event.eventType == "ALTER_PARTITION":
            handed_out.append(body)
        return body

    with monkeypatch.context() as patched:
        patched.setattr(tjson, "loads", counted)
        patched.setattr(svc.cache.applier, "_body_of", recorded)
        client.alter_partition(DB, "p", partition(T, DB, "p", ["a"], params={"k": "v"}))
        client.alter_partitions(
            DB, "p", [partition(T, DB, "p", [ds], params={"k": ds}) for ds in ("b", "c")]
        )
        client.rename_partition(DB, "p", ["c"], partition(T, DB, "p", ["d"]))
        _acid_alter(client, T)
    _commit_applied(svc)
    _caught_up(svc)
    assert len(handed_out) == 5 and None not in handed_out
    assert "Partition" not in decoded, "no partition's TJSON was decoded"
    for body in handed_out:
        kept = body.objects["partitionObjAfterJson"]
        assert thrift_bytes.encode(kept) == thrift_bytes.encode(
            loads(body["partitionObjAfterJson"], hms.Partition)
        )
    e = entry(svc, DB, "p")
    assert e is not None and e.parts is not None and e.parts.names() == ["ds=a", "ds=b", "ds=d"]
    for p in svc.store.get_partitions("hive", DB, "p"):  # the database path
        name = "ds=" + p.values[0]
        assert e.parts.by_name[name].encoded() == thrift_bytes.encode(p), name


def test_a_large_events_body_is_not_kept_and_is_decoded(instance, T) -> None:
    """A body is kept only while its encoded message is small (``_KEEP_BODY_CHARS``), so what
    one client writes bounds the memory kept: a partition with 40 KB of incompressible
    parameters is applied by decoding its event, and read back whole from the cache."""
    svc, client = instance
    log = svc.store.events
    client.create_database(T.Database(name=DB, description="", parameters={}))
    client.create_table(table(T, DB, "p", keys=["ds:string"]))
    client.get_partitions(DB, "p", -1)  # queues the entry's load
    assert svc.cache.loader.wait_idle(10)
    big = os.urandom(20_000).hex()
    before = svc.store.current_notification_event_id()
    seen: list[Any] = []
    take = svc.cache.applier._body_of

    def recorded(event: Any) -> dict | None:
        seen.append((event.eventType, take(event)))
        return seen[-1][1]

    svc.cache.applier._body_of = recorded
    client.add_partitions([partition(T, DB, "p", ["b"], params={"big": big})])
    client.add_partition(partition(T, DB, "p", ["c"]))
    _caught_up(svc)
    (added, _), (small_added, small_body) = seen[-2], seen[-1]
    assert added == small_added == "ADD_PARTITION"
    assert small_body is not None, "a small event's body is kept and used"
    (large,) = log.committed_here(before + 1, before + 1) or [None]
    assert large is not None and len(large.message) > 16384
    assert ("ADD_PARTITION", None) == seen[-2], "a large event's body was not kept"
    got = {tuple(p.values): p.parameters for p in client.get_partitions(DB, "p", -1)}
    assert got[("b",)]["big"] == big and sorted(got) == [("b",), ("c",)]


def test_a_txns_open_allocation_and_commit_are_left_to_the_poller(
    instance, T, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_txns, allocate_table_write_ids and commit_txn (without keyValue) apply nothing
    in the call's thread (their events change only which write ids are valid): the commit
    answers before its events are applied, and the cache does not count as caught up until
    the poller, woken by the commit's NOTIFY, applies all three from memory in one batch,
    reading nothing back from the log."""
    svc, client = instance
    client.create_database(T.Database(name=DB, description="", parameters={}))
    acid = {"transactional": "true", "transactional_properties": "insert_only"}
    client.create_table(table(T, DB, "acid", params=acid))
    _caught_up(svc)
    poller = svc.cache.poller
    start = poller.position
    batches: list[list[str]] = []
    apply = poller._apply

    def counted(events: Any) -> None:
        batches.append([e.eventType for e in events])
        apply(events)

    def no_log_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read the log")

    with monkeypatch.context() as patched:
        patched.setattr(poller, "_apply", counted)
        patched.setattr(poller, "_catch_up_locked", no_log_read)
        txn = open_txn(client, T)
        allocate(client, T, DB, "acid", txn)
        assert poller.position == start and batches == []
        commit(client, T, txn)
        assert poller.position == start and batches == []
        assert not poller.caught_up(), "a commit of this process is not applied yet"
        _commit_applied(svc)
    assert batches == [["OPEN_TXN", "ALLOC_WRITE_ID_EVENT", "COMMIT_TXN"]]
    assert poller.caught_up()
    _caught_up(svc)
