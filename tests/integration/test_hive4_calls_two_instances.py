"""Hive 4's write notifications, runtime statistics and materialized-view calls across two caching
instances on one PostgreSQL database: what one instance writes, the other answers, and the
other's cache follows the ACID write and its commit (the cache's rules for write events)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_txn_calls import (
    allocate,
    as_string,
    commit,
    open_txns,
    transactional_table,
    write_ids,
)
from tests.support.cache import Counted, clients, entry, instances, settle

pytestmark = [pytest.mark.postgres]

NOTHING_OPEN = 9223372036854775807  # Long.MAX_VALUE: no open write id


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _table_req(T: Any, name: str, snapshot: str) -> Any:
    return T.GetTableRequest(dbName="default", tblName=name, validWriteIdList=snapshot)


def test_an_acid_write_on_one_instance_is_answered_and_followed_by_the_other(T, pair) -> None:
    (a, b), (ca, cb) = pair
    transactional_table(ca, T, "acid")
    settle(a, b)
    [before] = write_ids(ca, T, "default.acid")
    # B caches the table at the snapshot before the write
    cb.get_table_req(_table_req(T, "acid", as_string(before)))
    settle(a, b)
    assert entry(b, "default", "acid") is not None

    [txn] = open_txns(ca, T)
    write_id = allocate(ca, T, "acid", [txn])[txn]
    notice = T.WriteNotificationLogRequest(
        txnId=txn,
        writeId=write_id,
        db="default",
        table="acid",
        fileInfo=T.InsertEventRequestData(filesAdded=["file:/w/acid/delta_1/b0"]),
    )
    ca.add_write_notification_log(notice)
    settle(a, b)
    # the write is uncommitted: B's entry does not claim it, B still answers the old snapshot
    [info] = cb.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=txn))
    expected = (write_id, "acid", "file:/w/acid/delta_1/b0###")
    assert (info.writeId, info.table, info.files) == expected
    assert cb.get_table_req(_table_req(T, "acid", as_string(before))).table.tableName == "acid"

    commit(ca, T, txn)
    settle(a, b)
    [after] = write_ids(cb, T, "default.acid")
    assert after.writeIdHighWaterMark == write_id and not after.invalidWriteIds
    # B's entry moved to the committed write (its COMMIT_TXN event), and answers the new snapshot
    b_entry = entry(b, "default", "acid")
    assert b_entry is not None and b_entry.write_ids.high_watermark == write_id
    with Counted() as counted:
        got = cb.get_table_req(_table_req(T, "acid", as_string(after))).table
    assert got.tableName == "acid"
    assert counted.hits("get_table") == 1 and counted.misses("get_table") == 0  # B's cache
    assert [i.writeId for i in ca.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txn))] == [
        write_id
    ]


def test_runtime_statistics_added_on_one_instance_are_listed_by_the_other(T, pair) -> None:
    _, (ca, cb) = pair
    ca.add_runtime_stats(T.RuntimeStat(createTime=1, weight=3, payload=b"plan\x00a"))
    cb.add_runtime_stats(T.RuntimeStat(createTime=1, weight=2, payload=b"plan\x00b"))
    for client in (ca, cb):
        got = client.get_runtime_stats(T.GetRuntimeStatsRequest(-1, -1))
        assert [(s.weight, s.payload) for s in got] == [(2, b"plan\x00b"), (3, b"plan\x00a")]


def test_a_compaction_queued_on_one_instance_invalidates_a_view_on_the_other(T, pair) -> None:
    (a, b), (ca, cb) = pair
    transactional_table(ca, T, "src")
    settle(a, b)
    seen = f"2$default.src:1:{NOTHING_OPEN}::"
    metadata = T.CreationMetadata(
        catName="hive", dbName="default", tblName="mv", tablesUsed={"default.src"},
        validTxnList=seen,
    )  # fmt: skip
    info = cb.get_materialization_invalidation_info(metadata, "")
    assert (info.sourceTablesUpdateDeleteModified, info.sourceTablesCompacted) == (False, False)
    ca.compact(T.CompactionRequest(dbname="default", tablename="src", type=T.CompactionType.MAJOR))
    assert cb.get_materialization_invalidation_info(metadata, "").sourceTablesCompacted is True
    [queued] = cb.show_compact(T.ShowCompactRequest()).compacts
    assert (queued.dbname, queued.tablename, queued.state) == ("default", "src", "initiated")
