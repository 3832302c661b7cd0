"""Statistics asked for with a snapshot that does not include the write id that wrote them: a
caching instance answers from its entry exactly what an instance without a cache answers from
the database, on PostgreSQL.

The store answers such statistics with isStatsCompliant=false (ObjectStore's
getTableColumnStatistics and getPartitionColumnStatistics), and the Thrift calls leave them out
as HMSHandler does (get_table_statistics_req, get_partitions_statistics_req: nothing;
get_aggr_stats_for: empty, partsFound 0). The snapshots are ones the cache may serve (its entry's
write ids are equivalent to them): the write id aborted, still open, and above an older
snapshot's high-water mark while open; and, in strong mode, newer statistics written elsewhere
that the caching instance has not applied yet."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import (
    FAST,
    TXN,
    Counted,
    abort,
    allocate,
    clients,
    commit,
    open_txn,
    ours,
    settle,
    snapshot,
)
from tests.support.metastore import partition, table
from tests.support.server import running_service

DB = "snap"
ACCURATE = {"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}
STATS_CALLS = ("get_table_column_statistics", "partition_column_statistics", "get_aggr_stats_for")


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[tuple[Any, Any, Any, Any]]:
    """(caching service, its client, cache-off service, its client) on one PostgreSQL database."""
    with ExitStack() as stack:
        cached = stack.enter_context(running_service(pg_url, tmp_path / "wh", **FAST))
        cached.name = "cached"
        direct = stack.enter_context(running_service(pg_url, tmp_path / "wh", cache_enabled=False))
        c_cached, c_direct = stack.enter_context(clients(cached, direct))
        yield cached, c_cached, direct, c_direct


def _tables(c: Any, T: Any, suffix: str) -> tuple[str, str]:
    """An unpartitioned and a partitioned ACID table (ds=1) with accurate basic statistics."""
    t, p = f"t_{suffix}", f"p_{suffix}"
    c.create_table(table(T, DB, t, params={**TXN, **ACCURATE}))
    c.create_table(table(T, DB, p, keys=["ds:string"], params={**TXN, **ACCURATE}))
    part = partition(T, DB, p, ["1"])
    part.parameters = dict(ACCURATE)
    c.add_partition(part)
    return t, p


def _write_stats(c: Any, T: Any, txn: int, tbl: str, part: str | None) -> None:
    """Column statistics of ``a`` written by ``txn`` at its write id, as Hive's writer does."""
    wid = allocate(c, T, DB, tbl, txn)
    data = T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(numNulls=1, numDVs=5, lowValue=1, highValue=9)
    )
    desc = T.ColumnStatisticsDesc(isTblLevel=part is None, dbName=DB, tableName=tbl, partName=part)
    stats = T.ColumnStatistics(
        statsDesc=desc,
        statsObj=[T.ColumnStatisticsObj(colName="a", colType="int", statsData=data)],
        engine="hive",
    )
    rqst = T.SetPartitionsStatsRequest(
        colStats=[stats],
        writeId=wid,
        validWriteIdList=snapshot(c, T, DB, tbl, txn),
        engine="hive",
    )
    if part is None:
        c.update_table_column_statistics_req(rqst)
    else:
        c.update_partition_column_statistics_req(rqst)


def _answers(c: Any, T: Any, t: str, p: str, s_t: str, s_p: str) -> dict[str, Any]:
    table_rqst = T.TableStatsRequest(dbName=DB, tblName=t, colNames=["a"], validWriteIdList=s_t)
    parts_rqst = T.PartitionsStatsRequest(
        dbName=DB, tblName=p, colNames=["a"], partNames=["ds=1"], validWriteIdList=s_p
    )
    return {
        "get_table_statistics_req": ours(c.get_table_statistics_req(table_rqst)),
        "get_partitions_statistics_req": ours(c.get_partitions_statistics_req(parts_rqst)),
        "get_aggr_stats_for": ours(c.get_aggr_stats_for(parts_rqst)),
    }


def _store_answers(store: Any, t: str, p: str, s_t: str, s_p: str) -> list[Any]:
    """The store's own answers: the rows, each with its isStatsCompliant."""
    return [
        store.get_table_column_statistics("hive", DB, t, ["a"], valid_write_id_list=s_t),
        store.partition_column_statistics("hive", DB, p, ["ds=1"], ["a"], valid_write_id_list=s_p),
    ]


def _same_from_cache_and_database(
    pair: tuple[Any, Any, Any, Any], T: Any, t: str, p: str, s_t: str, s_p: str
) -> None:
    """The caching instance answers from its entry (hits only), and equals the database path."""
    cached, c_cached, direct, c_direct = pair
    for _ in range(2):  # the first reads load the entries and their statistics rows
        _answers(c_cached, T, t, p, s_t, s_p)
        settle(cached)
    with Counted() as counted:
        from_cache = _answers(c_cached, T, t, p, s_t, s_p)
        rows_cached = _store_answers(cached.cache.store, t, p, s_t, s_p)
    for call in STATS_CALLS:
        assert counted.hits(call) > 0 and counted.misses(call) == 0, (call, counted.delta)
    assert from_cache == _answers(c_direct, T, t, p, s_t, s_p)
    rows_direct = _store_answers(direct.store, t, p, s_t, s_p)
    assert rows_cached == rows_direct
    table_stats, (part_stats,) = rows_direct
    assert table_stats.isStatsCompliant is False and table_stats.statsObj
    assert part_stats.isStatsCompliant is False and part_stats.statsObj
    assert from_cache["get_table_statistics_req"].tableStats == []
    assert from_cache["get_partitions_statistics_req"].partStats == {}
    assert from_cache["get_aggr_stats_for"].partsFound == 0


def test_statistics_of_an_aborted_write_id(pair: tuple[Any, Any, Any, Any], T: Any) -> None:
    cached, c, _, _ = pair
    c.create_database(T.Database(name=DB, parameters={}))
    t, p = _tables(c, T, "aborted")
    txn = open_txn(c, T)
    _write_stats(c, T, txn, t, None)
    _write_stats(c, T, txn, p, "ds=1")
    abort(c, T, txn)
    settle(cached)
    _same_from_cache_and_database(pair, T, t, p, snapshot(c, T, DB, t), snapshot(c, T, DB, p))


def test_statistics_of_an_open_write_id(pair: tuple[Any, Any, Any, Any], T: Any) -> None:
    cached, c, _, _ = pair
    c.create_database(T.Database(name=DB, parameters={}))
    t, p = _tables(c, T, "open")
    before_t, before_p = snapshot(c, T, DB, t), snapshot(c, T, DB, p)
    txn = open_txn(c, T)
    _write_stats(c, T, txn, t, None)
    _write_stats(c, T, txn, p, "ds=1")
    settle(cached)
    c.flushCache()  # loaded again with the write id open: W lists it open, nothing pending
    now_t, now_p = snapshot(c, T, DB, t), snapshot(c, T, DB, p)
    assert now_t.endswith(":1:1:") and before_t.startswith(f"{DB}.{t}:0:")
    _same_from_cache_and_database(pair, T, t, p, now_t, now_p)
    # a snapshot from before the write id was allocated is equivalent to the entry too
    _same_from_cache_and_database(pair, T, t, p, before_t, before_p)


def test_strong_mode_answers_statistics_as_the_database_while_the_cache_lags(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    """Newer statistics written by an open transaction elsewhere, not yet applied here: the
    reader's snapshot excludes their write id and is equivalent to the entry's. Hive keeps one
    version of statistics, so the database path answers none valid for that snapshot (the rows
    with isStatsCompliant=false); in strong mode the caching instance answers the same, not the
    older statistics its entry still holds."""
    with ExitStack() as stack:
        cached = stack.enter_context(
            running_service(
                pg_url, tmp_path / "wh", consistency="strong", consistency_wait_seconds=0.2, **FAST
            )
        )
        cached.name = "cached"
        direct = stack.enter_context(running_service(pg_url, tmp_path / "wh", cache_enabled=False))
        c_cached, c_direct = stack.enter_context(clients(cached, direct))
        c_cached.create_database(T.Database(name=DB, parameters={}))
        t, p = _tables(c_cached, T, "lag")
        first = open_txn(c_cached, T)
        _write_stats(c_cached, T, first, t, None)
        _write_stats(c_cached, T, first, p, "ds=1")
        commit(c_cached, T, first)
        settle(cached)
        s_t, s_p = snapshot(c_cached, T, DB, t), snapshot(c_cached, T, DB, p)
        for _ in range(2):  # load the entries and their statistics rows
            _answers(c_cached, T, t, p, s_t, s_p)
            settle(cached)
        assert _answers(c_cached, T, t, p, s_t, s_p)["get_table_statistics_req"].tableStats

        with cached.cache.poller._poll_lock:  # this instance lags behind the writes below
            newer = open_txn(c_direct, T)
            _write_stats(c_direct, T, newer, t, None)
            _write_stats(c_direct, T, newer, p, "ds=1")
            s_t = snapshot(c_direct, T, DB, t)  # the newer write id listed open
            s_p = snapshot(c_direct, T, DB, p)
            from_database = _answers(c_direct, T, t, p, s_t, s_p)
            assert from_database["get_table_statistics_req"].tableStats == []
            assert from_database["get_partitions_statistics_req"].partStats == {}
            assert from_database["get_aggr_stats_for"].partsFound == 0
            assert _answers(c_cached, T, t, p, s_t, s_p) == from_database
            assert _store_answers(cached.cache.store, t, p, s_t, s_p) == _store_answers(
                direct.store, t, p, s_t, s_p
            )
        abort(c_direct, T, newer)
