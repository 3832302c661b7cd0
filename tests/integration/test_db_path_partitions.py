"""The database path's get_partitions of a whole table (bytes built from the rows, no objects)
answers exactly what the object path reads, on SQLite and PostgreSQL, through Apache Thrift's
client: names in code-point order, parameters and own storage, tables without partitions or
keys, a limit, and a missing table."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cache import Counted, clients, instances, ours
from tests.support.metastore import partition, table

DB = "lake"


def test_whole_table_replies_equal_the_object_path(
    database_url: str,
    tmp_path: Path,
    T,  # noqa: F811
) -> None:
    with (
        instances(database_url, tmp_path, n=1, cache_enabled=False) as (svc,),
        clients(svc) as (c,),
    ):
        assert svc.cache is None
        c.create_database(T.Database(name=DB))
        c.create_table(table(T, DB, "events", keys=("ds:string", "hr:int")))
        c.create_table(table(T, DB, "empty", keys=("ds:string",)))
        c.create_table(table(T, DB, "plain"))
        values = [["b", "1"], ["a", "10"], ["a", "9"], ["é", "2"], ["Z", "3"], ["a b", "1"]]
        parts = [partition(T, DB, "events", v, params={"n": str(i)}) for i, v in enumerate(values)]
        parts[1].sd.location = None
        parts[2].sd.cols = [T.FieldSchema(name="own", type="string", comment="mine")]
        c.add_partitions(parts)
        store = svc.store  # the SQL store: the object path
        for name in ("events", "empty", "plain"):
            expected = store.get_partitions("hive", DB, name, -1)
            got = c.get_partitions(DB, name, -1)
            assert ours(got) == expected, name
            req = T.PartitionsRequest(dbName=DB, tblName=name, maxParts=-1)
            assert ours(c.get_partitions_req(req).partitions) == expected, name
        names = [p.values for p in c.get_partitions(DB, "events", -1)]
        assert names == sorted(names, key=lambda v: f"ds={v[0]}/hr={v[1]}")
        assert ours(c.get_partitions(DB, "events", 2)) == store.get_partitions(
            "hive", DB, "events", 2
        )
        with pytest.raises(T.NoSuchObjectException):
            c.get_partitions(DB, "nope", -1)


def test_a_cache_miss_answers_the_same_bytes(database_url: str, tmp_path: Path, T) -> None:
    with (
        instances(database_url, tmp_path, n=1, prewarm=False) as (svc,),
        clients(svc) as (c,),
    ):
        c.create_database(T.Database(name=DB))
        c.create_table(table(T, DB, "events", keys=("ds:string", "hr:int")))
        c.add_partitions([partition(T, DB, "events", [d, "1"]) for d in ("b", "a", "c")])
        svc.cache.flush(DB)  # nothing of the table cached: the next read is a miss
        with Counted() as counted:
            got = c.get_partitions(DB, "events", -1)
        assert counted.misses("get_partitions") == 1
        assert ours(got) == svc.store.get_partitions("hive", DB, "events", -1)


def test_whole_table_replies_with_many_shared_parameters_and_unusual_descriptors(
    database_url: str,
    tmp_path: Path,
    T,  # noqa: F811
) -> None:
    """Parameter maps longer than the encoder's prepared headers, entries several partitions
    share, empty values and maps, three keys, and descriptors that differ (bucketing, sorting,
    descriptor and serde parameters, skew) decode to what the object path reads."""
    with (
        instances(database_url, tmp_path, n=1, cache_enabled=False) as (svc,),
        clients(svc) as (c,),
    ):
        c.create_database(T.Database(name=DB))
        c.create_table(table(T, DB, "wide", keys=("y:string", "m:string", "d:int")))
        many = {f"k{i:02d}": f"v{i % 3}" for i in range(40)}  # 40 entries, values repeat
        parts = [
            partition(T, DB, "wide", ["2024", "01", "1"], params=many),
            partition(T, DB, "wide", ["2024", "01", "2"], params={**many, "k00": ""}),
            partition(T, DB, "wide", ["2024", "02", "1"], params={}),
            partition(T, DB, "wide", ["2023", "12", "31"], params={"numFiles": "1"}),
            partition(T, DB, "wide", ["2023", "12", "30"], params={"numFiles": "1"}),
        ]
        parts[2].sd.bucketCols = ["a"]
        parts[2].sd.numBuckets = 8
        parts[2].sd.sortCols = [T.Order(col="a", order=1)]
        parts[2].sd.parameters = {"sd.p": "x"}
        parts[3].sd.serdeInfo.parameters = {"serialization.format": "1", "field.delim": ","}
        parts[4].sd.skewedInfo = T.SkewedInfo(
            skewedColNames=["a"],
            skewedColValues=[["1"]],
            skewedColValueLocationMaps={},  # (Apache Thrift's Python cannot read list keys)
        )
        c.add_partitions(parts)
        expected = svc.store.get_partitions("hive", DB, "wide", -1)
        got = c.get_partitions(DB, "wide", -1)
        assert [p.values for p in got] == [
            ["2023", "12", "30"],
            ["2023", "12", "31"],
            ["2024", "01", "1"],
            ["2024", "01", "2"],
            ["2024", "02", "1"],
        ]
        assert ours(got) == expected
        assert len(got[2].parameters) >= 40 and got[3].parameters["k00"] == ""
        assert got[4].sd.bucketCols == ["a"] and got[1].sd.serdeInfo.parameters["field.delim"]
        assert got[0].sd.skewedInfo.skewedColNames == ["a"]
