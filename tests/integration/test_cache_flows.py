"""The flows of Hive's design for this cache ("Synchronized Metastore Cache"), step by step, on
two instances sharing one PostgreSQL database, through Apache Thrift's client.

Hive's design writes a table's write-id state as ``[next write id : invalid ids]``: ``[12:7,8]``
is the ValidWriteIdList with high-water mark 11 and write ids 7 and 8 not committed
(``db.t:11:7:7,8:`` in Hive's string form). The tests build those states with real
transactions and name them the design's way in comments.

Hits and misses are read from the service's Prometheus counters (deltas around each call).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.observability import metrics
from tests.support.cache import (
    TXN,
    Counted,
    abort,
    allocate,
    clients,
    commit,
    entry,
    get_partitions_req,
    get_table_req,
    instances,
    open_txn,
    ours,
    settle,
    snapshot,
    wait_until,
)
from tests.support.metastore import partition, table

pytestmark = [pytest.mark.postgres]

DB = "sales"


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _txn_table(client: Any, T: Any, name: str, keys: tuple[str, ...] = ()) -> None:
    client.create_table(table(T, DB, name, keys=keys, params=dict(TXN)))


def _write_ids(client: Any, T: Any, name: str, committed: set[int], last: int) -> dict[int, int]:
    """Allocate write ids 1..last on the table, one txn each; commit those in ``committed``,
    abort the others. Returns write id -> txn."""
    out = {}
    for wid in range(1, last + 1):
        txn = open_txn(client, T)
        assert allocate(client, T, DB, name, txn) == wid
        out[wid] = txn
        (commit if wid in committed else abort)(client, T, txn)
    return out


def test_create_table_then_alter_in_a_txn_move_w_as_the_design_says(pair, T) -> None:
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name=DB))
    # A create table is tagged [1:]: nothing written yet.
    _txn_table(ca, T, "t")
    settle(a, b)
    for svc in (a, b):
        e = entry(svc, DB, "t")
        assert e is not None and e.committed
        assert e.write_ids.to_string() == f"{DB}.t:0:9223372036854775807::"
    s0 = snapshot(cb, T, DB, "t")
    with Counted() as c:
        get_table_req(cb, T, DB, "t", s0)
    assert c.hits("get_table") == 1

    # Write ids 1..9, of which 7 and 8 aborted: [10:7,8].
    _write_ids(ca, T, "t", committed={1, 2, 3, 4, 5, 6, 9}, last=9)
    settle(a, b)
    assert entry(b, DB, "t").write_ids.to_string() == f"{DB}.t:9:9223372036854775807::7,8"
    # An alter table in the txn of write id 10, committed: [11:7,8].
    txn = open_txn(ca, T)
    wid = allocate(ca, T, DB, "t", txn)
    assert wid == 10
    new = ca.get_table(DB, "t")
    new.parameters["step"] = "10"
    ca.alter_table_req(
        T.AlterTableRequest(
            dbName=DB,
            tableName="t",
            table=new,
            writeId=wid,
            validWriteIdList=snapshot(ca, T, DB, "t", txn),
        )
    )
    settle(b)
    assert not entry(b, DB, "t").committed  # applied, but uncommitted until COMMIT_TXN
    commit(ca, T, txn)
    settle(a, b)
    e = entry(b, DB, "t")
    assert e.committed and e.write_ids.to_string() == f"{DB}.t:10:9223372036854775807::7,8"
    assert e.table.parameters["step"] == "10"


def test_equivalent_snapshots_hit_and_others_go_to_the_database(pair, T) -> None:
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name=DB))
    _txn_table(ca, T, "t")
    # The cached state [12:7,8]: write ids 1..11 with 7 and 8 aborted.
    _write_ids(ca, T, "t", committed=set(range(1, 12)) - {7, 8}, last=11)
    settle(a, b)
    assert entry(b, DB, "t").write_ids.to_string() == f"{DB}.t:11:9223372036854775807::7,8"
    # A reader whose list is [13:7,8,12] (write id 12 open): the same committed ids.
    open12 = open_txn(ca, T)
    assert allocate(ca, T, DB, "t", open12) == 12
    s = snapshot(cb, T, DB, "t")
    assert s == f"{DB}.t:12:12:12:7,8"
    with Counted() as c:
        cached = get_table_req(cb, T, DB, "t", s)
    assert c.hits("get_table") == 1 and c.misses("get_table") == 0
    assert ours(cached) == b.store.get_table("hive", DB, "t")
    # A list that differs in what is committed ([12:7]: 8 committed there): the database.
    with Counted() as c:
        from_db = get_table_req(cb, T, DB, "t", f"{DB}.t:11:7:7:")
    assert c.misses("get_table", metrics.MISS_NOT_EQUIVALENT) == 1 and c.hits("get_table") == 0
    assert ours(from_db) == b.store.get_table("hive", DB, "t")
    # No list at all for a transactional table: the database.
    with Counted() as c:
        cb.get_table(DB, "t")
    assert c.misses("get_table", metrics.MISS_NO_SNAPSHOT) == 1
    commit(ca, T, open12)


def test_a_list_call_goes_to_the_database_while_a_partition_is_not_equivalent(pair, T) -> None:
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name=DB))
    _txn_table(ca, T, "p", keys=("ds:string",))
    ca.add_partitions([partition(T, DB, "p", [d]) for d in ("1", "2", "3")])
    settle(a, b)
    s = snapshot(cb, T, DB, "p")
    with Counted() as c:
        assert len(get_partitions_req(cb, T, DB, "p", s)) == 3
    assert c.hits("get_partitions") == 1
    # One partition altered by an open txn: every list call of the table goes to the
    # database until that txn commits.
    txn = open_txn(ca, T)
    wid = allocate(ca, T, DB, "p", txn)
    one = ca.get_partitions_by_names(DB, "p", ["ds=2"])[0]
    one.parameters["changed"] = "yes"
    ca.alter_partitions_req(
        T.AlterPartitionsRequest(dbName=DB, tableName="p", partitions=[one], writeId=wid)
    )
    settle(b)
    reader = snapshot(cb, T, DB, "p")
    with Counted() as c:
        parts = get_partitions_req(cb, T, DB, "p", reader)
        names = cb.get_partition_names_ps_req(
            T.GetPartitionNamesPsRequest(
                dbName=DB, tblName="p", partValues=[""], maxParts=-1, validWriteIdList=reader
            )
        ).names
        by_names = cb.get_partitions_by_names_req(
            T.GetPartitionsByNamesRequest(
                db_name=DB, tbl_name="p", names=["ds=1"], validWriteIdList=reader
            )
        ).partitions
    assert c.misses("get_partitions", metrics.MISS_UNCOMMITTED) == 1
    assert c.misses("get_partition_names_ps", metrics.MISS_UNCOMMITTED) == 1
    assert c.misses("get_partitions_by_names", metrics.MISS_UNCOMMITTED) == 1
    assert ours(parts) == b.store.get_partitions("hive", DB, "p")
    assert names == ["ds=1", "ds=2", "ds=3"] and len(by_names) == 1
    commit(ca, T, txn)
    settle(a, b)
    after = snapshot(cb, T, DB, "p")
    with Counted() as c:
        parts = get_partitions_req(cb, T, DB, "p", after)
    assert c.hits("get_partitions") == 1
    assert [p.parameters.get("changed") for p in parts] == [None, "yes", None]
    assert ours(parts) == b.store.get_partitions("hive", DB, "p")


def test_the_seven_step_update_flow(pair, T) -> None:
    """Hive's design, "a complete flow for a cache update when write happen"."""
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name=DB))
    _txn_table(ca, T, "t")
    _write_ids(ca, T, "t", committed={1, 2}, last=2)
    settle(a, b)
    # 1. Both caches hold the table, tagged with the same committed state.
    before = snapshot(cb, T, DB, "t")
    for svc in (a, b):
        assert entry(svc, DB, "t").write_ids.to_string() == before
    # 2. Instance 1 gets alter_table in a transaction (its write id 3).
    txn = open_txn(ca, T)
    wid = allocate(ca, T, DB, "t", txn)
    new = ca.get_table(DB, "t")
    new.parameters["flow"] = "after"
    ca.alter_table_req(T.AlterTableRequest(dbName=DB, tableName="t", table=new, writeId=wid))
    # 3. Instance 1's cache has the change, uncommitted.
    assert not entry(a, DB, "t").committed
    # 4. Instance 2's poller applies the ALTER_TABLE event, as uncommitted.
    settle(b)
    e = entry(b, DB, "t")
    assert not e.committed and e.table.parameters["flow"] == "after"
    # 5. Reads on instance 2 go to the database meanwhile, whatever their list.
    for vwil in (before, snapshot(cb, T, DB, "t"), snapshot(cb, T, DB, "t", txn)):
        with Counted() as c:
            got = get_table_req(cb, T, DB, "t", vwil)
        assert c.misses("get_table", metrics.MISS_UNCOMMITTED) == 1 and c.hits("get_table") == 0
        assert got.parameters["flow"] == "after"  # the database has it (Hive's semantics)
    # 6. The COMMIT_TXN event marks the entry committed, W now with write id 3.
    commit(ca, T, txn)
    settle(a, b)
    after = snapshot(cb, T, DB, "t")
    e = entry(b, DB, "t")
    assert e.committed and e.write_ids.to_string() == after
    # 7. Reads with the new list are answered from the cache; the old list is not equivalent.
    with Counted() as c:
        got = get_table_req(cb, T, DB, "t", after)
    assert c.hits("get_table") == 1 and got.parameters["flow"] == "after"
    with Counted() as c:
        get_table_req(cb, T, DB, "t", before)
    assert c.misses("get_table", metrics.MISS_NOT_EQUIVALENT) == 1


def test_a_multi_statement_transaction_is_never_seen_in_part(pair, T) -> None:
    """Alter table, add partitions, alter partitions, commit through instance A, while readers
    on instance B ask with fresh lists: once a list has the txn committed, a read has all of it."""
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name=DB))
    _txn_table(ca, T, "m", keys=("ds:string",))
    ca.add_partitions([partition(T, DB, "m", ["0"])])
    settle(a, b)
    stop = threading.Event()
    problems: list[str] = []
    seen = {"full": 0, "hits": 0}
    wid_box: list[int] = []

    def reader() -> None:
        from tests.support.apache_thrift import apache_client

        c, tr = apache_client("127.0.0.1", b.port)
        try:
            while not stop.is_set():
                s = snapshot(c, T, DB, "m")
                with Counted() as counted:
                    t = get_table_req(c, T, DB, "m", s)
                    parts = get_partitions_req(c, T, DB, "m", s)
                if not wid_box:
                    continue
                from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

                if not ValidReaderWriteIdList.parse(s).is_write_id_valid(wid_box[0]):
                    continue
                names = sorted("ds=" + p.values[0] for p in parts)
                full = (
                    t.parameters.get("txn") == "done"
                    and names == ["ds=0", "ds=1", "ds=2"]
                    and all(p.parameters.get("txn") == "done" for p in parts if p.values[0] != "0")
                )
                if not full:
                    problems.append(f"partial read with {s}: {t.parameters} {names}")
                seen["full"] += 1
                seen["hits"] += int(counted.hits("get_partitions"))
        finally:
            tr.close()

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        for round_ in range(3):
            name = f"m{round_}"
            if round_:
                _txn_table(ca, T, name, keys=("ds:string",))
                ca.add_partitions([partition(T, DB, name, ["0"])])
            txn = open_txn(ca, T)
            wid = allocate(ca, T, DB, "m", txn)
            if round_ == 0:
                wid_box.append(wid)
            new = ca.get_table(DB, "m")
            new.parameters["txn"] = "done" if round_ == 0 else new.parameters.get("txn", "")
            ca.alter_table_req(
                T.AlterTableRequest(dbName=DB, tableName="m", table=new, writeId=wid)
            )
            if round_ == 0:
                adds = [partition(T, DB, "m", [d]) for d in ("1", "2")]
                for p in adds:
                    p.writeId = wid
                ca.add_partitions_req(
                    T.AddPartitionsRequest(dbName=DB, tblName="m", parts=adds, ifNotExists=False)
                )
                news = ca.get_partitions_by_names(DB, "m", ["ds=1", "ds=2"])
                for p in news:
                    p.parameters["txn"] = "done"
                ca.alter_partitions_req(
                    T.AlterPartitionsRequest(dbName=DB, tableName="m", partitions=news, writeId=wid)
                )
            commit(ca, T, txn)
        settle(a, b)
        wait_until(lambda: seen["full"] > 20, what="reads after the commit")
        wait_until(lambda: seen["hits"] > 5, what="reads after the commit answered by the cache")
    finally:
        stop.set()
        for th in threads:
            th.join(30)
    assert not problems, problems[:5]
