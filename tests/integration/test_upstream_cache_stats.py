"""Column statistics in upstream mode. Hive before 4.0 logs no event when they change (Hive
3.1's HMSHandler writes them through ObjectStore.updateTableColumnStatistics and
updatePartitionColumnStatistics and tells no listener; 4.0's DbNotificationListener logs
UPDATE_/DELETE_TABLE_COLUMN_STAT and UPDATE_/DELETE_PARTITION_COLUMN_STAT), so the sidecar
keeps no reply that carries them, whatever its upstream (server/cached_calls.py). Here its
poller is held still, as in front of an upstream that logs no statistics event: statistics
changed at the upstream are answered at once, every read forwarded. (get_table_req with
getColumnStats and get_partitions_by_names_req with get_col_stats are not cached either:
tests/unit/test_reply_cache.py; the central instance answers them without statistics.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.integration import test_upstream_cache as shared
from tests.integration.test_upstream_cache import Quiet, _applied, forwarded
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
