"""Column statistics in upstream mode. Hive before 4.0 logs no event when they change (Hive
3.1's HMSHandler writes them through ObjectStore.updateTableColumnStatistics and
updatePartitionColumnStatistics and tells no listener; 4.0's DbNotificationListener logs
UPDATE_/DELETE_TABLE_COLUMN_STAT and UPDATE_/DELETE_PARTITION_COLUMN_STAT), so the sidecar
keeps no reply that carries them, whatever its upstream (server/cached_calls.py). Here its
poller is held still, as in front of an upstream that logs no statistics event: statistics
changed at the upstream are answered at once, every read forwarded. (get_table_req with
getColumnStats and get_partitions_by_names_req with get_col_stats are not cached either:
tests/unit/test_reply_cache.py; the central instance answers them without statistics.)

A statistics write also changes COLUMN_STATS_ACCURATE in the table's or partitions' parameters,
which cached replies hold; behind a Hive 3 upstream no event says so. A write through the
sidecar drops those entries itself (server/statistics_writes.py): tested in front of a central
instance whose log is put back as Hive 3.1 leaves it, without the write's events."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.integration import test_upstream_cache as shared
from tests.integration.test_upstream_cache import (
    Quiet,
    _applied,
    forwarded,
)
from tests.support.metastore import partition, table

pytestmark = pytest.mark.postgres

central, start_sidecar, connect = shared.central, shared.start_sidecar, shared.connect  # fixtures
quiet = shared.quiet  # a fixture

COLS = ["a:int", "b:string"]


def _write(direct: Any, T: Any, high: int) -> None:
    """Column a's statistics of s.t and of s.p's partition ds=1, highest value ``high``."""
    for tbl, part in (("t", None), ("p", "ds=1")):
        data = T.ColumnStatisticsData(
            longStats=T.LongColumnStatsData(numNulls=0, numDVs=3, lowValue=1, highValue=high)
        )
        stats = T.ColumnStatistics(
            statsDesc=T.ColumnStatisticsDesc(
                isTblLevel=part is None, dbName="s", tableName=tbl, partName=part
            ),
            statsObj=[T.ColumnStatisticsObj(colName="a", colType="int", statsData=data)],
            engine="hive",
        )
        if part is None:
            direct.update_table_column_statistics(stats)
        else:
            direct.update_partition_column_statistics(stats)


def _highs(T: Any) -> dict[str, Callable[[Any], int]]:
    """Every read that answers column statistics -> column a's highest value in its answer."""
    parts = T.PartitionsStatsRequest(
        dbName="s", tblName="p", colNames=["a"], partNames=["ds=1"], engine="hive"
    )

    def high(obj: Any) -> int:
        return int(obj.statsData.longStats.highValue)

    return {
        "get_table_column_statistics": lambda c: high(
            c.get_table_column_statistics("s", "t", "a").statsObj[0]
        ),
        "get_partition_column_statistics": lambda c: high(
            c.get_partition_column_statistics("s", "p", "ds=1", "a").statsObj[0]
        ),
        "get_table_statistics_req": lambda c: high(
            c.get_table_statistics_req(
                T.TableStatsRequest(dbName="s", tblName="t", colNames=["a"], engine="hive")
            ).tableStats[0]
        ),
        "get_partitions_statistics_req": lambda c: high(
            c.get_partitions_statistics_req(parts).partStats["ds=1"][0]
        ),
        "get_aggr_stats_for": lambda c: high(c.get_aggr_stats_for(parts).colStats[0]),
    }


def test_statistics_changed_without_an_event_are_answered_at_once(quiet: Quiet, T: Any) -> None:
    client, direct, events = quiet
    direct.create_database(T.Database(name="s"))
    direct.create_table(table(T, "s", "t", COLS))
    direct.create_table(table(T, "s", "p", COLS, ["ds:string"]))
    direct.add_partition(partition(T, "s", "p", ["1"], COLS))
    _write(direct, T, 9)
    _applied(events, direct)
    position = events.position
    reads = _highs(T)
    for high in (9, 99, 999):
        if high != 9:
            _write(direct, T, high)  # logged, but the sidecar's poller applies nothing
        before = {name: forwarded(name) for name in reads}
        assert {name: read(client) for name, read in reads.items()} == dict.fromkeys(reads, high)
        assert {name: forwarded(name) - before[name] for name in reads} == dict.fromkeys(reads, 1)
    assert events.position == position


@pytest.fixture
def unlogged(pg_url: str, tmp_path: Path, connect: Any) -> Iterator[Quiet]:
    """A quiet sidecar (as ``quiet``) in front of a central instance with its cache off, which
    reads its notification log from the database: ``_unlog`` takes events out of it there."""
    with shared.woken_sidecar_on_the_database_log(pg_url, tmp_path / "w") as (sidecar, central):
        assert sidecar.sidecar is not None
        yield Quiet(connect(sidecar.port), connect(central.port), sidecar.sidecar.events)


def _unlog(pg_url: str, last: int) -> None:
    """The log as Hive 3.1 leaves it after statistics writes: the events after ``last`` (the
    writes' UPDATE_*_COL_STAT and the like) never logged, the next event id ``last + 1``."""
    engine = sa.create_engine(pg_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text('DELETE FROM "NOTIFICATION_LOG" WHERE "EVENT_ID" > :last'), {"last": last}
            )
            conn.execute(
                sa.text('UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = :next'),
                {"next": last + 1},
            )
    finally:
        engine.dispose()


def _stats(T: Any, tbl: str, part: str | None, col: str) -> Any:
    data = T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(numNulls=0, numDVs=3, lowValue=1, highValue=9)
    )
    return T.ColumnStatistics(
        statsDesc=T.ColumnStatisticsDesc(
            isTblLevel=part is None, dbName="s", tableName=tbl, partName=part
        ),
        statsObj=[T.ColumnStatisticsObj(colName=col, colType="int", statsData=data)],
        engine="hive",
    )


def _write_through(client: Any, T: Any, col: str, how: str) -> None:
    """Column ``col``'s statistics of table s.t and of s.p's partition ds=1, by ``how``."""
    table_stats, part_stats = _stats(T, "t", None, col), _stats(T, "p", "ds=1", col)
    if how == "update":
        assert client.update_table_column_statistics(table_stats)
        assert client.update_partition_column_statistics(part_stats)
    elif how == "update_req":
        request = T.SetPartitionsStatsRequest
        client.update_table_column_statistics_req(request(colStats=[table_stats], engine="hive"))
        client.update_partition_column_statistics_req(request(colStats=[part_stats], engine="hive"))
    else:
        assert client.set_aggr_stats_for(
            T.SetPartitionsStatsRequest(colStats=[table_stats], engine="hive")
        )
        assert client.set_aggr_stats_for(
            T.SetPartitionsStatsRequest(colStats=[part_stats], engine="hive")
        )


def _accurate(params: dict[str, str]) -> list[str]:
    """The columns COLUMN_STATS_ACCURATE says have accurate statistics."""
    flag = json.loads(params.get("COLUMN_STATS_ACCURATE") or "{}")
    return sorted(flag.get("COLUMN_STATS", {}))


READS: dict[str, Callable[[Any], list[str]]] = {
    "get_table": lambda c: _accurate(c.get_table("s", "t").parameters),
    "get_table_objects_by_name": lambda c: _accurate(
        c.get_table_objects_by_name("s", ["t"])[0].parameters
    ),
    "get_partitions_by_names": lambda c: _accurate(
        c.get_partitions_by_names("s", "p", ["ds=1"])[0].parameters
    ),
}
"""Cached reads whose replies hold s.t's or s.p's ds=1's statistics flags."""


def test_a_statistics_write_through_the_sidecar_drops_its_tables_entries_without_an_event(
    unlogged: Quiet, T: Any, pg_url: str
) -> None:
    client, direct, events = unlogged
    cols = ["a:int", "b:int", "c:int"]
    direct.create_database(T.Database(name="s"))
    direct.create_table(table(T, "s", "t", cols))
    direct.create_table(table(T, "s", "p", cols, ["ds:string"]))
    direct.add_partition(partition(T, "s", "p", ["1"], cols))
    _applied(events, direct)
    position = events.position
    assert {name: read(client) for name, read in READS.items()} == dict.fromkeys(READS, [])
    written: list[str] = []
    for col, how in (("a", "update"), ("b", "update_req"), ("c", "set_aggr_stats_for")):
        before = {name: forwarded(name) for name in READS}
        assert {name: read(client) for name, read in READS.items()} == dict.fromkeys(READS, written)
        assert {name: forwarded(name) for name in READS} == before  # answered by the entries
        _write_through(client, T, col, how)
        _unlog(pg_url, position)  # no event, as Hive 3.1
        written = [*written, col]
        assert {name: read(direct) for name, read in READS.items()} == dict.fromkeys(READS, written)
        assert {name: read(client) for name, read in READS.items()} == dict.fromkeys(READS, written)
        assert {name: forwarded(name) - before[name] for name in READS} == dict.fromkeys(READS, 1)
    assert events.position == position  # every entry went by the writes, none by an event
