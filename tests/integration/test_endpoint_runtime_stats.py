"""Runtime statistics through Apache Thrift's client, on SQLite and PostgreSQL: stored as
opaque payloads and listed newest first up to a total weight, as Hive 4's ObjectStore does."""

from __future__ import annotations

import time

from tests.support.metastore import raises


def test_runtime_stats_round_trip_newest_first_up_to_a_weight(client, T):
    assert client.get_runtime_stats(T.GetRuntimeStatsRequest(-1, -1)) == []
    before = int(time.time())
    for i, weight in enumerate((5, 3, 4)):
        client.add_runtime_stats(
            T.RuntimeStat(createTime=1, weight=weight, payload=b"p%d\x00\xff" % i)
        )

    def listed(max_weight, max_create_time=-1):
        got = client.get_runtime_stats(T.GetRuntimeStatsRequest(max_weight, max_create_time))
        return [(s.weight, s.payload) for s in got]

    everything = [(4, b"p2\x00\xff"), (3, b"p1\x00\xff"), (5, b"p0\x00\xff")]
    assert listed(-1) == everything
    # the entry that reaches the weight is included, then the listing stops
    assert listed(4) == everything[:1]
    assert listed(5) == everything[:2]
    assert listed(0) == everything[:1]
    # created before maxCreateTime (positive); the client's createTime is not kept
    stats = client.get_runtime_stats(T.GetRuntimeStatsRequest(-1, -1))
    assert all(before <= s.createTime <= int(time.time()) for s in stats)
    assert listed(-1, int(time.time()) + 5) == everything
    assert listed(-1, before - 1) == []


def test_runtime_stat_without_payload_is_refused(client, T):
    with raises(T.MetaException, "A runtime stat needs a weight and a payload"):
        client.add_runtime_stats(T.RuntimeStat(weight=1))
