"""Writes that carry write ids, and events a cache can apply, through Apache Thrift's client on
SQLite and PostgreSQL.

For every write call that carries a writeId or a validWriteIdList, on a transactional table:
the write id of an open txn is stamped (TBLS/PARTITIONS.WRITE_ID, read back through
get_table / get_partitions_by_names), the events carry ``writeId`` and ``validWriteIdList``
(the caller's, else the writer's own snapshot), and a write id of no open txn of that table
(unknown, another table's, a committed txn's) is refused with MetaException before anything
changes. Then the property the cache relies on (docs/cache.md, invariant 5): every object an
event of ours embeds equals, field for field, what the database path answers right after the
write, and every message we write says ``"writer": "hms-cache-proxy"``.
"""

from __future__ import annotations

from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import deserialize

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import message_base, messages
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList
from tests.support.metastore import (
    cols,
    event_body,
    events_since,
    last_event_id,
    partition,
    raises,
    table,
)
from tests.support.pg_template import database_url, pg_template  # noqa: F401

DB = "default"
TXN = {"transactional": "true", "transactional_properties": "default"}
LONG_MAX = 9223372036854775807


# -- helpers ----------------------------------------------------------------------------------


def open_txn(client: Any, T: Any) -> int:
    rqst = T.OpenTxnRequest(num_txns=1, user="tester", hostname="test-host")
    return client.open_txns(rqst).txn_ids[0]


def allocate(client: Any, T: Any, tbl: str, txn: int) -> int:
    rqst = T.AllocateTableWriteIdsRequest(dbName=DB, tableName=tbl, txnIds=[txn])
    return client.allocate_table_write_ids(rqst).txnToWriteIds[0].writeId


def txn_write_id(client: Any, T: Any, tbl: str) -> tuple[int, int]:
    """A new open txn and its write id on ``tbl``."""
    txn = open_txn(client, T)
    return txn, allocate(client, T, tbl, txn)


def commit(client: Any, T: Any, txn: int) -> None:
    client.commit_txn(T.CommitTxnRequest(txnid=txn))


def snapshot(client: Any, T: Any, tbl: str, txn: int | None = None) -> str:
    """The table's ValidWriteIdList as Hive's string: now, or as txn ``txn`` sees it."""
    valid_txns = None
    if txn is not None:
        valid_txns = ValidReadTxnList.from_open_txns_response(client.get_open_txns(), txn)
    rqst = T.GetValidWriteIdsRequest(
        fullTableNames=[f"{DB}.{tbl}"],
        validTxnList=None if valid_txns is None else valid_txns.to_string(),
    )
    tvwi = client.get_valid_write_ids(rqst).tblValidWriteIds[0]
    return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()


def bodies(client: Any, T: Any, after: int) -> list[tuple[str, dict[str, Any]]]:
    return [(e.eventType, event_body(e)) for e in events_since(client, T, after)]


def only(client: Any, T: Any, after: int, event_type: str) -> dict[str, Any]:
    """The body of the one event of ``event_type`` after ``after``."""
    found = [b for t, b in bodies(client, T, after) if t == event_type]
    assert len(found) == 1, [t for t, _ in bodies(client, T, after)]
    return found[0]


def ours(obj: Any) -> Any:
    """A thriftpy2 twin of an Apache-generated struct (thriftpy2's equality, field for field)."""
    buf = TTransport.TMemoryBuffer()
    obj.write(TBinaryProtocol.TBinaryProtocol(buf))
    return deserialize(getattr(hms, type(obj).__name__)(), buf.getvalue(), TBinaryProtocolFactory())


def get_table(client: Any, tbl: str) -> Any:
    return ours(client.get_table(DB, tbl))


def get_parts(client: Any, tbl: str, *names: str) -> list[Any]:
    return [ours(p) for p in client.get_partitions_by_names(DB, tbl, list(names))]


class Refusals:
    """Write ids of no open txn of a table: unknown, another table's, a committed txn's."""

    def __init__(self, client: Any, T: Any, tbl: str) -> None:
        self.tbl = tbl
        other = f"{tbl}_other"
        client.seed_write_id(T.SeedTableWriteIdsRequest(dbName=DB, tableName=other, seedWriteId=90))
        self.other = allocate(client, T, other, open_txn(client, T))  # 91: none of tbl's
        self.done_txn, self.done = txn_write_id(client, T, tbl)
        commit(client, T, self.done_txn)
        self.cases = [
            (77, f"invalid write id 77 for table {DB}.{tbl}"),
            (self.other, f"invalid write id {self.other} for table {DB}.{tbl}"),
            (
                self.done,
                f"write id {self.done} of {DB}.{tbl}: Transaction txnid:{self.done_txn} is "
                "already committed.",
            ),
        ]

    def check(self, client: Any, T: Any, call: Any) -> None:
        """``call(write_id)`` is refused with each case's MetaException and writes nothing."""
        before = last_event_id(client)
        for write_id, message in self.cases:
            with raises(T.MetaException, message):
                call(write_id)
        assert last_event_id(client) == before


def make_table(client: Any, T: Any, name: str, *, keys: tuple[str, ...] = (), txn: bool = True):
    client.create_table(table(T, DB, name, keys=keys, params=dict(TXN) if txn else {}))


def col_stats(T: Any, tbl: str, part_name: str | None = None, high: int = 9) -> Any:
    desc = T.ColumnStatisticsDesc(
        isTblLevel=part_name is None, dbName=DB, tableName=tbl, partName=part_name
    )
    data = T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(lowValue=1, highValue=high, numNulls=0, numDVs=3)
    )
    obj = T.ColumnStatisticsObj(colName="a", colType="int", statsData=data)
    return T.ColumnStatistics(statsDesc=desc, statsObj=[obj], engine="hive")


def stats_request(T: Any, stats: Any, write_id: int, vwil: str | None = None) -> Any:
    return T.SetPartitionsStatsRequest(
        colStats=[stats], writeId=write_id, validWriteIdList=vwil, engine="hive"
    )


# -- write ids: tables ------------------------------------------------------------------------


def test_create_table_in_a_txn_takes_write_id_1_and_commit_makes_it_visible(client, T) -> None:
    """Hive's cache design seed scenario: a transactional table created with write id 1."""
    txn, wid = txn_write_id(client, T, "seeded")  # allocated before the table exists (CTAS)
    assert wid == 1
    start = last_event_id(client)
    seeded = table(T, DB, "seeded", params=dict(TXN))
    seeded.writeId = wid
    client.create_table(seeded)
    assert get_table(client, "seeded").writeId == 1
    body = only(client, T, start, messages.CREATE_TABLE)
    assert messages.write_id(body) == 1
    own = "default.seeded:1:9223372036854775807::"
    assert messages.valid_write_ids(body) == own == snapshot(client, T, "seeded", txn)
    assert snapshot(client, T, "seeded") == "default.seeded:1:1:1:"  # others: not yet
    commit(client, T, txn)
    commit_body = only(client, T, start, messages.COMMIT_TXN)
    assert commit_body["txnid"] == txn
    assert messages.commit_writes(commit_body) == [(DB, "seeded", 1)]
    assert snapshot(client, T, "seeded") == own  # the entry's W equals a reader's S now

    # Table.txnId instead of writeId: the write id that txn holds on the new name.
    txn2, wid2 = txn_write_id(client, T, "by_txn")
    tbl = table(T, DB, "by_txn", params=dict(TXN))
    tbl.txnId = txn2
    client.create_table(tbl)
    assert get_table(client, "by_txn").writeId == wid2 == 1
    bad = table(T, DB, "by_txn2", params=dict(TXN))
    bad.writeId, bad.txnId = 5, txn2
    with raises(T.MetaException, f"write id 5 of default.by_txn2 does not belong to txnid:{txn2}"):
        client.create_table(bad)

    refusals = Refusals(client, T, "late")

    def create(write_id: int) -> None:
        t = table(T, DB, "late", params=dict(TXN))
        t.writeId = write_id
        client.create_table(t)

    refusals.check(client, T, create)
    with raises(T.NoSuchObjectException):
        client.get_table(DB, "late")
    # Hive's ObjectStore: a table that is not transactional takes no write id.
    plain = table(T, DB, "plain")
    plain.writeId = 77
    start = last_event_id(client)
    client.create_table(plain)
    assert get_table(client, "plain").writeId == 0
    assert messages.write_id(only(client, T, start, messages.CREATE_TABLE)) is None


def test_alter_table_calls_stamp_the_write_id_of_an_open_txn(client, T) -> None:
    make_table(client, T, "t")
    refusals = Refusals(client, T, "t")
    # alter_table_req: the request's writeId and validWriteIdList.
    txn, wid = txn_write_id(client, T, "t")
    new = client.get_table(DB, "t")
    new.parameters["k"] = "1"
    vwil = snapshot(client, T, "t", txn)
    start = last_event_id(client)
    client.alter_table_req(
        T.AlterTableRequest(dbName=DB, tableName="t", table=new, writeId=wid, validWriteIdList=vwil)
    )
    assert get_table(client, "t").writeId == wid
    body = only(client, T, start, messages.ALTER_TABLE)
    assert (body["writeId"], messages.valid_write_ids(body)) == (wid, vwil)
    assert body["partitionsChanged"] is False
    commit(client, T, txn)

    def alter_req(write_id: int) -> None:
        client.alter_table_req(
            T.AlterTableRequest(dbName=DB, tableName="t", table=new, writeId=write_id)
        )

    refusals.check(client, T, alter_req)

    # alter_table_with_environment_context: Table.writeId; no list: the writer's own snapshot.
    txn, wid = txn_write_id(client, T, "t")
    new = client.get_table(DB, "t")
    new.writeId = wid
    start = last_event_id(client)
    client.alter_table_with_environment_context(DB, "t", new, None)
    assert get_table(client, "t").writeId == wid
    body = only(client, T, start, messages.ALTER_TABLE)
    assert (body["writeId"], messages.valid_write_ids(body)) == (wid, snapshot(client, T, "t", txn))
    commit(client, T, txn)

    def alter_env(write_id: int) -> None:
        t = client.get_table(DB, "t")
        t.writeId = write_id
        client.alter_table_with_environment_context(DB, "t", t, None)

    refusals.check(client, T, alter_env)
    # A client sending back the table it read (writeId = the stored, committed one) is no
    # write of a txn: accepted, WRITE_ID kept, no write id on the event.
    echo = client.get_table(DB, "t")
    echo.parameters["k"] = "2"
    start = last_event_id(client)
    client.alter_table(DB, "t", echo)
    assert get_table(client, "t").writeId == wid
    assert messages.write_id(only(client, T, start, messages.ALTER_TABLE)) is None
    # Turning a table transactional drops its statistics flag (ObjectStore.alterTable).
    accurate = '{"BASIC_STATS":"true"}'
    client.create_table(table(T, DB, "conv", params={"COLUMN_STATS_ACCURATE": accurate}))
    conv = client.get_table(DB, "conv")
    conv.parameters.update(TXN)
    client.alter_table(DB, "conv", conv)
    assert "COLUMN_STATS_ACCURATE" not in client.get_table(DB, "conv").parameters


# -- write ids: partitions --------------------------------------------------------------------


def test_partition_calls_stamp_the_write_id_of_an_open_txn(client, T) -> None:
    make_table(client, T, "p", keys=("ds:string",))
    refusals = Refusals(client, T, "p")

    # add_partitions_req: Partition.writeId, the request's validWriteIdList.
    txn, wid = txn_write_id(client, T, "p")
    vwil = snapshot(client, T, "p", txn)
    parts = [partition(T, DB, "p", [v]) for v in ("1", "2")]
    for part in parts:
        part.writeId = wid
    start = last_event_id(client)
    client.add_partitions_req(
        T.AddPartitionsRequest(
            dbName=DB, tblName="p", parts=parts, ifNotExists=False, validWriteIdList=vwil
        )
    )
    assert [q.writeId for q in get_parts(client, "p", "ds=1", "ds=2")] == [wid, wid]
    body = only(client, T, start, messages.ADD_PARTITION)
    assert (messages.write_id(body), messages.valid_write_ids(body)) == (wid, vwil)

    def add(write_id: int) -> None:
        q = partition(T, DB, "p", ["9"])
        q.writeId = write_id
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName=DB, tblName="p", parts=[q], ifNotExists=False)
        )

    refusals.check(client, T, add)
    assert client.get_partition_names(DB, "p", -1) == ["ds=1", "ds=2"]
    commit(client, T, txn)

    # alter_partitions_req: the request's writeId (the list: the writer's own).
    txn, wid = txn_write_id(client, T, "p")
    news = client.get_partitions_by_names(DB, "p", ["ds=1", "ds=2"])
    for q in news:
        q.parameters["k"] = "v"
    start = last_event_id(client)
    client.alter_partitions_req(
        T.AlterPartitionsRequest(dbName=DB, tableName="p", partitions=news, writeId=wid)
    )
    assert [q.writeId for q in get_parts(client, "p", "ds=1", "ds=2")] == [wid, wid]
    found = [b for t, b in bodies(client, T, start) if t == messages.ALTER_PARTITION]
    assert len(found) == 2
    own = snapshot(client, T, "p", txn)
    assert all((b["writeId"], messages.valid_write_ids(b)) == (wid, own) for b in found)

    def alter(write_id: int) -> None:
        client.alter_partitions_req(
            T.AlterPartitionsRequest(dbName=DB, tableName="p", partitions=news, writeId=write_id)
        )

    refusals.check(client, T, alter)
    commit(client, T, txn)

    # rename_partition_req: the new partition's writeId, the request's validWriteIdList.
    txn, wid = txn_write_id(client, T, "p")
    vwil = snapshot(client, T, "p", txn)
    renamed = client.get_partitions_by_names(DB, "p", ["ds=2"])[0]
    renamed.values, renamed.writeId = ["3"], wid
    start = last_event_id(client)
    client.rename_partition_req(
        T.RenamePartitionRequest(
            dbName=DB, tableName="p", partVals=["2"], newPart=renamed, validWriteIdList=vwil
        )
    )
    assert get_parts(client, "p", "ds=3")[0].writeId == wid
    body = only(client, T, start, messages.ALTER_PARTITION)
    assert (body["writeId"], messages.valid_write_ids(body)) == (wid, vwil)

    def rename(write_id: int) -> None:
        q = client.get_partitions_by_names(DB, "p", ["ds=3"])[0]
        q.values, q.writeId = ["4"], write_id
        client.rename_partition_req(
            T.RenamePartitionRequest(dbName=DB, tableName="p", partVals=["3"], newPart=q)
        )

    refusals.check(client, T, rename)
    assert client.get_partition_names(DB, "p", -1) == ["ds=1", "ds=3"]
    # Partitions sent back as read: a stored write id of a txn still open is that txn's
    # write; stored ones of ended txns (here several different ones) are no write id.
    (echo,) = client.get_partitions_by_names(DB, "p", ["ds=3"])
    start = last_event_id(client)
    client.alter_partitions(DB, "p", [echo])
    body = only(client, T, start, messages.ALTER_PARTITION)
    assert (body["writeId"], messages.valid_write_ids(body)) == (wid, snapshot(client, T, "p", txn))
    commit(client, T, txn)
    echoes = client.get_partitions_by_names(DB, "p", ["ds=1", "ds=3"])
    assert len({q.writeId for q in echoes}) == 2
    start = last_event_id(client)
    client.alter_partitions(DB, "p", echoes)
    found = [b for t, b in bodies(client, T, start) if t == messages.ALTER_PARTITION]
    assert [b["writeId"] for b in found] == [-1, -1]
    assert [q.writeId for q in get_parts(client, "p", "ds=1", "ds=3")] == [
        q.writeId for q in echoes
    ]
    twice = client.get_partitions_by_names(DB, "p", ["ds=1"]) * 2
    with raises(
        T.InvalidOperationException,
        "Alter partition operation failed: new parts size 2 not matching with old parts size 1",
    ):
        client.alter_partitions(DB, "p", twice)


def test_truncate_and_statistics_calls_stamp_the_write_id_of_an_open_txn(
    client, T, service
) -> None:
    make_table(client, T, "s")
    make_table(client, T, "sp", keys=("ds:string",))
    client.add_partitions([partition(T, DB, "sp", [v]) for v in ("1", "2")])
    refusals = {t: Refusals(client, T, t) for t in ("s", "sp")}

    # truncate_table_req, unpartitioned: the table is stamped; partitioned: each partition.
    for tbl, event_type in (("s", messages.ALTER_TABLE), ("sp", messages.ALTER_PARTITION)):
        txn, wid = txn_write_id(client, T, tbl)
        start = last_event_id(client)
        client.truncate_table_req(T.TruncateTableRequest(dbName=DB, tableName=tbl, writeId=wid))
        found = [b for t, b in bodies(client, T, start) if t == event_type]
        assert found and all(b["isTruncateOp"] == "true" for b in found)
        own = snapshot(client, T, tbl, txn)
        assert all((b["writeId"], messages.valid_write_ids(b)) == (wid, own) for b in found)
        if tbl == "s":
            assert get_table(client, "s").writeId == wid
        else:
            assert [q.writeId for q in get_parts(client, "sp", "ds=1", "ds=2")] == [wid, wid]
        refusals[tbl].check(
            client,
            T,
            lambda w, tbl=tbl: client.truncate_table_req(
                T.TruncateTableRequest(dbName=DB, tableName=tbl, writeId=w)
            ),
        )
        commit(client, T, txn)

    # update_table_column_statistics_req and set_aggr_stats_for (table level).
    for call in ("update", "aggr"):
        txn, wid = txn_write_id(client, T, "s")
        vwil = snapshot(client, T, "s", txn)
        request = stats_request(T, col_stats(T, "s"), wid, vwil)
        start = last_event_id(client)
        if call == "update":
            client.update_table_column_statistics_req(request)
        else:
            client.set_aggr_stats_for(request)
        assert get_table(client, "s").writeId == wid
        body = only(client, T, start, messages.UPDATE_TBL_COL_STAT_EVENT)
        assert (body["writeId"], messages.valid_write_ids(body)) == (wid, vwil)
        commit(client, T, txn)
    refusals["s"].check(
        client,
        T,
        lambda w: client.update_table_column_statistics_req(stats_request(T, col_stats(T, "s"), w)),
    )

    # update_partition_column_statistics_req, without a list: the writer's own.
    txn, wid = txn_write_id(client, T, "sp")
    start = last_event_id(client)
    client.update_partition_column_statistics_req(stats_request(T, col_stats(T, "sp", "ds=1"), wid))
    assert get_parts(client, "sp", "ds=1")[0].writeId == wid
    body = only(client, T, start, messages.UPDATE_PART_COL_STAT_EVENT)
    assert (body["writeId"], messages.valid_write_ids(body)) == (
        wid,
        snapshot(client, T, "sp", txn),
    )
    refusals["sp"].check(
        client,
        T,
        lambda w: client.update_partition_column_statistics_req(
            stats_request(T, col_stats(T, "sp", "ds=2"), w)
        ),
    )
    commit(client, T, txn)
    # The COMMIT_TXN of a txn lists what it wrote, so a cache can gate on it.
    commit_body = only(client, T, start, messages.COMMIT_TXN)
    assert [(t, w) for _, t, w in messages.commit_writes(commit_body)] == [("sp", wid)]


# -- events the cache can trust ---------------------------------------------------------------


def check_table(body: dict[str, Any], key: str, client: Any, tbl: str) -> None:
    assert messages.embedded(body, key, hms.Table) == get_table(client, tbl)


def test_every_event_embeds_what_the_database_path_reads_right_after_the_write(client, T) -> None:
    start = last_event_id(client)
    client.create_database(T.Database(name="evdb", parameters={"a": "1"}))
    assert messages.database(only(client, T, start, messages.CREATE_DATABASE)) == ours(
        client.get_database("evdb")
    )
    db = client.get_database("evdb")
    db.parameters = {"b": "2"}
    start = last_event_id(client)
    client.alter_database("evdb", db)
    body = only(client, T, start, messages.ALTER_DATABASE)
    assert messages.database_after(body) == ours(client.get_database("evdb"))

    # CREATE_TABLE / ALTER_TABLE (plain, cascade, rename) of a partitioned transactional table.
    start = last_event_id(client)
    make_table(client, T, "e", keys=("ds:string",))
    check_table(only(client, T, start, messages.CREATE_TABLE), "tableObjJson", client, "e")

    txn, wid = txn_write_id(client, T, "e")
    start = last_event_id(client)
    client.add_partitions_req(
        T.AddPartitionsRequest(
            dbName=DB,
            tblName="e",
            parts=[partition(T, DB, "e", [v]) for v in ("2", "1")],
            ifNotExists=False,
        )
    )
    body = only(client, T, start, messages.ADD_PARTITION)
    check_table(body, "tableObjJson", client, "e")
    one, two = get_parts(client, "e", "ds=1", "ds=2")  # the read answers in name order
    assert messages.partitions(body) == [two, one]  # the event lists them in request order

    before = get_table(client, "e")
    new = client.get_table(DB, "e")
    new.parameters["x"] = "y"
    new.writeId = wid
    start = last_event_id(client)
    client.alter_table(DB, "e", new)
    body = only(client, T, start, messages.ALTER_TABLE)
    assert messages.table_before(body) == before
    check_table(body, "tableObjAfterJson", client, "e")
    assert body["partitionsChanged"] is False

    new = client.get_table(DB, "e")
    new.sd.cols = cols(T, "a:int", "b:string", "c:bigint")
    start = last_event_id(client)
    client.alter_table_with_cascade(DB, "e", new, True)
    body = only(client, T, start, messages.ALTER_TABLE)
    check_table(body, "tableObjAfterJson", client, "e")
    assert body["partitionsChanged"] is True  # partitions took the columns, no events of theirs

    # ALTER_PARTITION: alter, rename; DROP_PARTITION.
    news = client.get_partitions_by_names(DB, "e", ["ds=1"])
    news[0].parameters["q"] = "1"
    start = last_event_id(client)
    client.alter_partitions(DB, "e", news)
    body = only(client, T, start, messages.ALTER_PARTITION)
    check_table(body, "tableObjJson", client, "e")
    assert messages.partition_after(body) == get_parts(client, "e", "ds=1")[0]

    renamed = client.get_partitions_by_names(DB, "e", ["ds=2"])[0]
    renamed.values = ["3"]
    old = get_parts(client, "e", "ds=2")[0]
    start = last_event_id(client)
    client.rename_partition(DB, "e", ["2"], renamed)
    body = only(client, T, start, messages.ALTER_PARTITION)
    assert messages.partition_before(body) == old
    assert messages.partition_after(body) == get_parts(client, "e", "ds=3")[0]

    # Statistics: table object, parameters and partition as stored; the statistics as read.
    start = last_event_id(client)
    client.update_partition_column_statistics_req(stats_request(T, col_stats(T, "e", "ds=1"), wid))
    body = only(client, T, start, messages.UPDATE_PART_COL_STAT_EVENT)
    (stored,) = get_parts(client, "e", "ds=1")
    assert messages.partition_obj(body) == stored
    assert body["parameters"] == stored.parameters and "COLUMN_STATS_ACCURATE" in stored.parameters
    check_table(body, "tableObjJson", client, "e")
    read = client.get_partitions_statistics_req(
        T.PartitionsStatsRequest(
            dbName=DB, tblName="e", colNames=["a"], partNames=["ds=1"], engine="hive"
        )
    ).partStats["ds=1"]
    assert messages.column_statistics(body).statsObj == [ours(o) for o in read]

    start = last_event_id(client)
    client.update_table_column_statistics_req(stats_request(T, col_stats(T, "e"), wid))
    body = only(client, T, start, messages.UPDATE_TBL_COL_STAT_EVENT)
    check_table(body, "tableObjJson", client, "e")
    assert body["parameters"] == get_table(client, "e").parameters
    read = client.get_table_statistics_req(
        T.TableStatsRequest(dbName=DB, tblName="e", colNames=["a"], engine="hive")
    ).tableStats
    assert messages.column_statistics(body).statsObj == [ours(o) for o in read]

    # Truncate: one ALTER_PARTITION per partition, each the partition as stored.
    start = last_event_id(client)
    client.truncate_table_req(T.TruncateTableRequest(dbName=DB, tableName="e", writeId=wid))
    found = [
        messages.partition_after(b)
        for t, b in bodies(client, T, start)
        if t == messages.ALTER_PARTITION
    ]
    assert found == get_parts(client, "e", "ds=1", "ds=3")

    start = last_event_id(client)
    client.drop_partition(DB, "e", ["3"], False)
    body = only(client, T, start, messages.DROP_PARTITION)
    check_table(body, "tableObjJson", client, "e")
    assert body["partitions"] == [{"ds": "3"}]
    commit(client, T, txn)

    # A rename moves partitions: partitionsChanged.
    new = client.get_table(DB, "e")
    new.tableName = "e2"
    start = last_event_id(client)
    client.alter_table(DB, "e", new)
    body = only(client, T, start, messages.ALTER_TABLE)
    check_table(body, "tableObjAfterJson", client, "e2")
    assert body["partitionsChanged"] is True

    # DROP_TABLE carries the table as it was (Hive's JSONDropTableMessage).
    last = get_table(client, "e2")
    start = last_event_id(client)
    client.drop_table(DB, "e2", False)
    assert messages.table(only(client, T, start, messages.DROP_TABLE)) == last

    # Functions.
    start = last_event_id(client)
    client.create_function(
        T.Function(
            functionName="f",
            dbName=DB,
            className="x.F",
            ownerName="alice",
            ownerType=T.PrincipalType.USER,
            functionType=T.FunctionType.JAVA,
            resourceUris=[T.ResourceUri(resourceType=T.ResourceType.JAR, uri="file:/f.jar")],
        )
    )
    body = only(client, T, start, messages.CREATE_FUNCTION)
    assert messages.function(body) == ours(client.get_function(DB, "f"))

    # Every message this store wrote, transaction events included, says so.
    every = bodies(client, T, 0)
    assert {t for t, _ in every} >= {
        messages.OPEN_TXN,
        messages.ALLOC_WRITE_ID_EVENT,
        messages.COMMIT_TXN,
    }
    assert all(messages.written_by_us(b) and list(b)[-1] == message_base.WRITER for _, b in every)
