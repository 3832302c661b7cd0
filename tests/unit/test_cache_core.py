"""The cache's pure parts: the binary encoder (equal to thriftpy2's), partition sets and their
index, write-id advance on commit, installs that must not overwrite newer state, eviction."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.utils import serialize

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import Part, PartitionSet, TableEntry, TableName
from hms_cache_proxy.store.cached.apply import advance_write_ids
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList
from hms_cache_proxy.store.write_id_equivalence import check_equivalent_write_ids

FACTORY = TCyBinaryProtocolFactory()
text = st.text(max_size=12)
maybe = st.none() | text


def _sd(
    draw_cols: list, location: str | None, params: dict, skew: bool = True
) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=draw_cols,
        location=location,
        inputFormat="in",
        outputFormat="out",
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib="lib", parameters=params),
        bucketCols=[],
        sortCols=[hms.Order(col="a", order=1)],
        parameters={},
        skewedInfo=hms.SkewedInfo(
            skewedColNames=["a"],
            skewedColValues=[["1"]],
            skewedColValueLocationMaps={("1",): "loc"} if skew else {},
        ),
        storedAsSubDirectories=False,
    )


partitions = st.builds(
    lambda values, loc, params, cols, wid: hms.Partition(
        values=values,
        dbName="d",
        tableName="t",
        createTime=5,
        lastAccessTime=0,
        sd=_sd(cols, loc, params, skew=bool(values)),
        parameters=params,
        catName="hive",
        writeId=wid,
    ),
    st.lists(text, max_size=3),
    maybe,
    st.dictionaries(text, text, max_size=4),
    st.lists(st.builds(hms.FieldSchema, name=text, type=text, comment=maybe), max_size=4),
    st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=60, deadline=None)
@given(partitions)
def test_encoding_equals_thriftpy2_and_pieces_join_to_it(p: hms.Partition) -> None:
    expected = serialize(p, FACTORY)
    assert thrift_bytes.encode(p) == expected
    head, cols, tail = thrift_bytes.partition_pieces(p)
    assert head + cols + tail == expected
    if not p.sd.skewedInfo.skewedColValueLocationMaps:  # thriftpy2 cannot read list keys
        assert thrift_bytes.decode(hms.Partition, expected) == p


def test_tables_databases_and_statistics_encode_as_thriftpy2_does() -> None:
    table = hms.Table(
        tableName="t",
        dbName="d",
        owner="o",
        sd=_sd([hms.FieldSchema(name="a", type="int")], "file:/x", {"k": "v"}),
        partitionKeys=[hms.FieldSchema(name="p", type="string")],
        parameters={"transactional": "true"},
        tableType="MANAGED_TABLE",
        catName="hive",
        id=3,
    )
    stats = hms.ColumnStatisticsObj(
        colName="a",
        colType="bigint",
        statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(numNulls=1, numDVs=2, bitVectors=b"\x00\xff")
        ),
    )
    database = hms.Database(name="d", parameters={}, ownerType=hms.PrincipalType.ROLE)
    for obj in (table, stats, database):
        assert thrift_bytes.encode(obj) == serialize(obj, FACTORY)
    parts = [hms.Partition(values=[str(i)], dbName="d") for i in range(3)]
    listed = thrift_bytes.encode_list(parts, hms.Partition)
    result = hms.ThriftHiveMetastore.get_partitions_result(success=parts)
    assert thrift_bytes.field_header(listed.ttype, 0) + listed + thrift_bytes.STOP == serialize(
        result, FACTORY
    )


def _part(values: tuple[str, ...]) -> Part:
    return Part(values, b"h" + "".join(values).encode(), b"cols", b"t")


def test_partition_set_orders_names_and_indexes_values() -> None:
    ps = PartitionSet()
    names = [f"a={a}/b={b}" for a in ("x", "y", "z") for b in ("1", "2")]
    shuffled = names[:]
    random.Random(3).shuffle(shuffled)
    for n in shuffled[:3]:
        a, b = (c.split("=")[1] for c in n.split("/"))
        ps.put(n, _part((a, b)))
    assert ps.candidates([(0, ("y",))], 2) == sorted(n for n in shuffled[:3] if "a=y" in n)
    for n in shuffled[3:]:  # the index and the order follow later changes
        a, b = (c.split("=")[1] for c in n.split("/"))
        ps.put(n, _part((a, b)))
    assert ps.names() == sorted(names)
    assert ps.candidates([(0, ("y", "z")), (1, ("2",))], 2) == ["a=y/b=2", "a=z/b=2"]
    assert ps.remove("a=y/b=2") and not ps.remove("a=y/b=2")
    assert ps.candidates([(1, ("2",))], 2) == ["a=x/b=2", "a=z/b=2"]
    assert ps.candidates([(0, ())], 2) == []
    assert "a=y/b=2" not in ps.names()
    # Equal column lists are kept once.
    assert len({id(p.cols) for p in ps.by_name.values()}) == 1


def _w(text: str) -> ValidReaderWriteIdList:
    return ValidReaderWriteIdList.parse(text)


def test_commits_move_w_forward_to_what_a_reader_computes() -> None:
    w = _w("d.t:11:7:7,8:")  # Hive's design writes this [12:7,8]
    # A reader that also sees 12 open is equivalent: the same committed ids.
    assert check_equivalent_write_ids(w, _w("d.t:12:7:7,8,12:"))
    assert not check_equivalent_write_ids(w, _w("d.t:11:7:7:"))  # 8 committed there
    after = advance_write_ids(w, 12)  # 12 commits
    assert after is not None and after.to_string() == "d.t:12:7:7,8:"
    assert advance_write_ids(after, 8).to_string() == "d.t:12:7:7:"
    # Ids skipped above the hwm stay invalid until their own commits.
    skipped = advance_write_ids(after, 15)
    assert skipped is not None and skipped.invalid_write_ids() == (7, 8, 13, 14)
    assert advance_write_ids(_w("d.t:3:9223372036854775807::"), 2).to_string() == (
        "d.t:3:9223372036854775807::"
    )


def _entry(name: str, n: int, as_of: int) -> TableEntry:
    table = hms.Table(tableName=name, dbName="d", parameters={}, partitionKeys=[])
    parts = PartitionSet()
    for i in range(n):
        parts.put(f"p={i}", _part((str(i),)))
    return TableEntry(
        TableName("hive", "d", name), table, b"x" * 100, as_of=as_of, write_ids=None, parts=parts
    )


def test_installs_never_replace_newer_state_or_miss_an_event() -> None:
    cache = Cache(10**9)
    key = TableName("hive", "d", "a")
    assert cache.install(_entry("a", 1, 0), 10, cache.begin_load(key))
    newer = _entry("a", 2, 0)
    with cache.lock:
        cache.get_locked(key).as_of = 12  # an event the entry already reflects
    assert not cache.install(newer, 11, cache.begin_load(key))
    ticket = cache.begin_load(key)
    with cache.lock:
        cache.drop_locked(key)
        cache.touched_locked(key, 15)  # the table changed while this load was reading it
    assert not cache.install(_entry("a", 1, 0), 14, ticket)
    assert cache.install(_entry("a", 1, 0), 16, cache.begin_load(key))


def test_two_loads_of_one_table_each_see_the_events_that_touched_it() -> None:
    """Issue 14, finding 1: the first load to end must not take the second's record away."""
    cache = Cache(10**9)
    key = TableName("hive", "d", "a")
    slow = cache.begin_load(key)  # reads the table at event 10, then is slow
    quick = cache.begin_load(key)
    with cache.lock:
        cache.touched_locked(key, 11)  # the table is dropped
    cache.end_load(quick)  # the second load finds no table
    assert not cache.install(_entry("a", 1, 0), 10, slow)
    with cache.lock:
        assert key not in cache.entries
        assert cache.loading_locked(key) == 0


def test_an_event_about_a_database_makes_loads_of_its_tables_stale() -> None:
    cache = Cache(10**9)
    ticket = cache.begin_load(TableName("hive", "d", "a"))
    other = cache.begin_load(TableName("hive", "e", "a"))
    with cache.lock:
        cache.touched_db_locked("hive", "d", 20)
    assert not cache.install(_entry("a", 1, 0), 19, ticket)
    assert other.touched == 0  # a table of another database


def test_eviction_keeps_the_budget_dropping_least_recently_used_tables() -> None:
    evicted: list[TableName] = []
    one = _entry("a", 50, 0).size()
    cache = Cache(int(one * 2.5), on_evict=evicted.append)
    for name in ("a", "b"):
        assert cache.install(_entry(name, 50, 0), 1, cache.begin_load(TableName("hive", "d", name)))
    with cache.lock:
        cache.get_locked(TableName("hive", "d", "a"))  # a is now the most recently used
    assert cache.install(_entry("c", 50, 0), 1, cache.begin_load(TableName("hive", "d", "c")))
    assert evicted == [TableName("hive", "d", "b")]
    assert cache.nbytes <= cache.max_bytes
    assert cache.partitions == 100
    with cache.lock:
        assert cache.was_evicted_locked(TableName("hive", "d", "b"))


class _NoLoads:
    """The applier's loader, for tests that only look at the cache."""

    def request(self, key: TableName, *, front: bool = False) -> None:
        pass

    def request_databases(self) -> None:
        pass


def test_an_event_of_another_writer_about_a_database_makes_a_databases_load_stale() -> None:
    """Issue 14, also noticed: the database entry goes, and the databases map's as_of moves,
    so a databases load that read the old database cannot put it back."""
    from hms_cache_proxy.store.cached.apply import EventApplier
    from hms_cache_proxy.store.events import messages

    cache = Cache(10**9)
    database = hms.Database(name="d")
    assert cache.install_databases({("hive", "d"): (database, b"x")}, 3)
    event = hms.NotificationEvent(
        eventId=5,
        eventTime=0,
        eventType="SOMETHING_NEW",
        dbName="d",
        tableName=None,
        message="{}",
        messageFormat=messages.JSON_FORMAT,
        catName="hive",
    )
    EventApplier(cache, _NoLoads()).apply([event])  # type: ignore[arg-type]
    assert ("hive", "d") not in cache.databases
    assert not cache.install_databases({("hive", "d"): (database, b"x")}, 4)
    assert cache.install_databases({("hive", "d"): (database, b"y")}, 5)


def test_constraints_install_only_when_nothing_since_may_have_changed_them() -> None:
    cache = Cache(10**9)
    parent, child = TableName("hive", "d", "p"), TableName("hive", "d", "c")
    with cache.lock:
        for name in ("p", "c"):
            cache.put_locked(_entry(name, 0, 5))
        cache.position = 10
        assert not cache.install_constraints_locked(child, b"fk", frozenset({parent}), 11)
        assert cache.install_constraints_locked(child, b"fk", frozenset({parent}), 10)
        assert cache.install_constraints_locked(parent, b"pk", frozenset(), 10)
        size = cache.nbytes
        cache.constraints_changed_locked(parent, 12)  # the child's foreign key names it
        assert cache.entries[parent].constraints is None
        assert cache.entries[child].constraints is None and cache.nbytes < size
        cache.position = 12
        # read before event 12: stale, whichever table it was about
        assert not cache.install_constraints_locked(child, b"fk", frozenset({parent}), 11)
        assert cache.install_constraints_locked(child, b"fk", frozenset({parent}), 12)
        cache.forget_constraints_locked(13, ("hive", "other"))  # no key into that database
        assert cache.entries[child].constraints == b"fk"
        cache.forget_constraints_locked(14, ("hive", "d"))
        assert cache.entries[child].constraints is None
        assert cache.fk_holders == set()


def test_a_commit_that_wrote_nothing_is_applied_without_decoding_its_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 23: the writer's own OPEN_TXN / COMMIT_TXN of a txn that wrote nothing cost the
    cache a JSON decode each; a commit listing writes is still decoded and moves W."""
    from hms_cache_proxy.store.cached import apply
    from hms_cache_proxy.store.events import messages

    builder = messages.MessageBuilder(clock=lambda: 0, writer=messages.WRITER_NAME)
    decoded: list[str] = []
    real_decode = messages.decode

    def counting(message: str, fmt: str | None) -> dict:
        decoded.append(message)
        return real_decode(message, fmt)

    monkeypatch.setattr(apply.msg, "decode", counting)
    from hms_cache_proxy.store.cached.prewarm import empty_write_ids

    cache = Cache(10**9)
    key = TableName("hive", "d", "t")
    table = hms.Table(
        tableName="t", dbName="d", parameters={"transactional": "true"}, partitionKeys=[]
    )
    entry = TableEntry(key, table, b"x", as_of=5, write_ids=empty_write_ids(key), parts=None)
    assert entry.transactional
    with cache.lock:
        cache.put_locked(entry)
    applier = apply.EventApplier(cache, _NoLoads())  # type: ignore[arg-type]

    def event(event_id: int, kind: str, body: dict) -> Any:
        return hms.NotificationEvent(
            eventId=event_id,
            eventTime=0,
            eventType=kind,
            dbName="d" if kind == messages.ALLOC_WRITE_ID_EVENT else None,
            tableName="t" if kind == messages.ALLOC_WRITE_ID_EVENT else None,
            message=messages.to_json(body),
            messageFormat=messages.JSON_FORMAT,
            catName=None,
        )

    write = hms.WriteEventInfo(writeId=6, database="d", table="t", files=None)
    applier.apply(
        [
            event(10, messages.OPEN_TXN, builder.open_txn(7, 8)),
            event(11, messages.ALLOC_WRITE_ID_EVENT, builder.alloc_write_id([(8, 6)], "d", "t")),
            event(12, messages.COMMIT_TXN, builder.commit_txn(7)),  # wrote nothing
            event(13, messages.COMMIT_TXN, builder.commit_txn(8, [write])),
        ]
    )
    assert len(decoded) == 2 and all('"txnid":7' not in m for m in decoded)
    assert cache.position == 13
    w = cache.entries[TableName("hive", "d", "t")].write_ids
    assert w is not None and w.high_watermark == 6


def test_an_alter_partition_is_applied_without_decoding_the_table_or_the_old_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 23: the writer's catch-up after every INSERT into a partition applied its
    ALTER_PARTITION by decoding the embedded table, the partition before and after; the table's
    name, keys and old values are in the message's db, table and keyValues. A rename (new
    values) still moves the partition; a message without keyValues decodes the table."""
    from hms_cache_proxy.store.cached import apply
    from hms_cache_proxy.store.events import messages

    builder = messages.MessageBuilder(clock=lambda: 0, writer=messages.WRITER_NAME)
    keys = [hms.FieldSchema(name="a", type="string"), hms.FieldSchema(name="b", type="string")]
    table = hms.Table(tableName="T", dbName="D", parameters={}, partitionKeys=keys)
    cache = Cache(10**9)
    key = TableName("hive", "d", "t")
    parts = PartitionSet()
    parts.put("a=1/b=x", _part(("1", "x")))
    parts.put("a=2/b=y", _part(("2", "y")))
    with cache.lock:
        cache.put_locked(TableEntry(key, table, b"x", as_of=5, write_ids=None, parts=parts))
    applier = apply.EventApplier(cache, _NoLoads())  # type: ignore[arg-type]

    def part(a: str, b: str, n: str) -> hms.Partition:
        return hms.Partition(values=[a, b], dbName="d", tableName="t", parameters={"n": n})

    def event(event_id: int, body: dict) -> Any:
        return hms.NotificationEvent(
            eventId=event_id,
            eventTime=0,
            eventType=messages.ALTER_PARTITION,
            dbName="d",
            tableName="t",
            message=messages.to_json(body),
            messageFormat=messages.JSON_FORMAT,
            catName="hive",
        )

    decoded: list[str] = []
    real_table, real_before = messages.table, messages.partition_before

    def table_of(body: dict) -> Any:
        decoded.append("table")
        return real_table(body)

    def before_of(body: dict) -> Any:
        decoded.append("before")
        return real_before(body)

    monkeypatch.setattr(apply.msg, "table", table_of)
    monkeypatch.setattr(apply.msg, "partition_before", before_of)
    altered = builder.alter_partition(table, part("1", "x", "old"), part("1", "x", "new"))
    renamed = builder.alter_partition(table, part("2", "y", "old"), part("3", "z", "new"))
    applier.apply([event(6, altered), event(7, renamed)])
    assert decoded == []
    entry = cache.entries[key]
    assert entry.parts is not None and list(entry.parts.names()) == ["a=1/b=x", "a=3/b=z"]
    stored = thrift_bytes.decode(hms.Partition, entry.parts.by_name["a=1/b=x"].encoded())
    assert stored.parameters == {"n": "new"} and cache.position == 7

    without = dict(builder.alter_partition(table, part("1", "x", "new"), part("1", "x", "3")))
    del without["keyValues"]
    applier.apply([event(8, without)])
    assert decoded == ["table", "before"]
    stored = thrift_bytes.decode(hms.Partition, entry.parts.by_name["a=1/b=x"].encoded())
    assert stored.parameters == {"n": "3"}


def test_an_event_whose_body_is_kept_in_memory_is_applied_without_decoding_its_message() -> None:
    """Issue 23: the writer's cache decoded its own events' messages (base64, gzip, JSON) to
    apply them, though the write had just built their bodies; ``body_of`` hands the kept body
    over. An event without one (read from the log) is decoded as before."""
    from hms_cache_proxy.store.cached import apply
    from hms_cache_proxy.store.events import messages

    builder = messages.MessageBuilder(clock=lambda: 0, writer=messages.WRITER_NAME)
    keys = [hms.FieldSchema(name="a", type="string")]
    table = hms.Table(tableName="t", dbName="d", parameters={}, partitionKeys=keys)
    cache = Cache(10**9)
    key = TableName("hive", "d", "t")
    parts = PartitionSet()
    parts.put("a=1", _part(("1",)))
    with cache.lock:
        cache.put_locked(TableEntry(key, table, b"x", as_of=5, write_ids=None, parts=parts))

    def part(n: str) -> hms.Partition:
        return hms.Partition(values=["1"], dbName="d", tableName="t", parameters={"n": n})

    def event(event_id: int, message: str) -> Any:
        return hms.NotificationEvent(
            eventId=event_id,
            eventTime=0,
            eventType=messages.ALTER_PARTITION,
            dbName="d",
            tableName="t",
            message=message,
            messageFormat=messages.GZIP_FORMAT,
            catName="hive",
        )

    kept = builder.alter_partition(table, part("old"), part("kept"))
    own = event(6, "not base64 of gzip: never decoded")
    read_back = event(7, messages.encode(builder.alter_partition(table, part("kept"), part("log"))))
    applier = apply.EventApplier(
        cache,
        _NoLoads(),  # type: ignore[arg-type]
        body_of=lambda e: kept if e is own else None,
    )

    def stored() -> dict[str, str]:
        entry = cache.entries[key]
        assert entry.parts is not None
        return thrift_bytes.decode(hms.Partition, entry.parts.by_name["a=1"].encoded()).parameters

    applier.apply([own])
    assert stored() == {"n": "kept"} and cache.position == 6
    applier.apply([read_back])
    assert stored() == {"n": "log"} and cache.position == 7
