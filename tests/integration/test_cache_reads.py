"""Every read call the cache answers, compared field for field with the database path's answer
(invariant 5), on SQLite and PostgreSQL; and the processor's pre-encoded replies for clients
of the binary and the compact protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hms_cache_proxy.idl import hms
from tests.support.apache_thrift import apache_client
from tests.support.cache import Counted, clients, instances, ours, settle
from tests.support.metastore import partition, table

DB = "shop"


def _fill(c: Any, T: Any) -> None:
    c.create_database(T.Database(name=DB))
    c.create_table(table(T, DB, "events", keys=("ds:string", "hr:int")))
    c.create_table(table(T, DB, "plain", columns=("a:int", "b:string", "c:double")))
    parts = [
        partition(T, DB, "events", [ds, hr], params={"numRows": str(i)})
        for i, (ds, hr) in enumerate(
            (d, h) for d in ("2024-01-01", "2024-01-02", "2024-02-01") for h in ("1", "05", "12")
        )
    ]
    c.add_partitions(parts)
    desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName="plain")
    c.update_table_column_statistics(
        T.ColumnStatistics(
            statsDesc=desc,
            statsObj=[
                T.ColumnStatisticsObj(
                    colName="a",
                    colType="int",
                    statsData=T.ColumnStatisticsData(
                        longStats=T.LongColumnStatsData(
                            lowValue=1, highValue=9, numNulls=0, numDVs=4
                        )
                    ),
                )
            ],
            engine="hive",
        )
    )
    for ds in ("2024-01-01", "2024-01-02"):
        pdesc = T.ColumnStatisticsDesc(
            isTblLevel=False, dbName=DB, tableName="events", partName=f"ds={ds}/hr=1"
        )
        c.update_partition_column_statistics(
            T.ColumnStatistics(
                statsDesc=pdesc,
                statsObj=[
                    T.ColumnStatisticsObj(
                        colName="a",
                        colType="int",
                        statsData=T.ColumnStatisticsData(
                            longStats=T.LongColumnStatsData(
                                lowValue=1, highValue=len(ds), numNulls=1, numDVs=2
                            )
                        ),
                    )
                ],
                engine="hive",
            )
        )


def _calls(c: Any, T: Any) -> dict[str, Any]:
    """(call -> answer) for every read the cache may answer."""
    names = ["ds=2024-01-01/hr=1", "ds=2024-02-01/hr=12", "ds=nope/hr=1"]
    filters = ['ds = "2024-01-02"', "hr > 3", 'ds like "2024-01%" and hr = 5', ""]
    out: dict[str, Any] = {
        "get_table": c.get_table(DB, "events"),
        "get_table_req": c.get_table_req(T.GetTableRequest(dbName=DB, tblName="plain")).table,
        "get_table_objects_by_name": c.get_table_objects_by_name(DB, ["plain", "x", "events"]),
        "get_fields": c.get_fields(DB, "events"),
        "get_schema": c.get_schema(DB, "events"),
        "get_database": c.get_database(DB),
        "get_all_databases": c.get_all_databases(),
        "get_databases": c.get_databases("sh*|nope"),
        "get_partitions": c.get_partitions(DB, "events", -1),
        "get_partitions_2": c.get_partitions(DB, "events", 2),
        "get_partitions_req": c.get_partitions_req(
            T.PartitionsRequest(dbName=DB, tblName="events", maxParts=-1)
        ).partitions,
        "get_partition": c.get_partition(DB, "events", ["2024-01-02", "05"]),
        "get_partition_by_name": c.get_partition_by_name(DB, "events", "ds=2024-01-02/hr=12"),
        "by_names": c.get_partitions_by_names(DB, "events", names),
        "by_names_req": c.get_partitions_by_names_req(
            T.GetPartitionsByNamesRequest(db_name=DB, tbl_name="events", names=names)
        ).partitions,
        "names": c.get_partition_names(DB, "events", -1),
        "names_2": c.get_partition_names(DB, "events", 2),
        "ps": c.get_partitions_ps(DB, "events", ["2024-01-01"], -1),
        "ps_any_hour": c.get_partitions_ps(DB, "events", ["", "12"], -1),
        "ps_with_auth_req": c.get_partitions_ps_with_auth_req(
            T.GetPartitionsPsWithAuthRequest(
                dbName=DB, tblName="events", partVals=["2024-02-01"], maxParts=-1
            )
        ).partitions,
        "names_ps": c.get_partition_names_ps(DB, "events", ["2024-01-02"], -1),
        "values": c.get_partition_values(
            T.PartitionValuesRequest(
                dbName=DB,
                tblName="events",
                partitionKeys=[T.FieldSchema(name="hr", type="int")],
            )
        ).partitionValues,
        "table_stats": c.get_table_statistics_req(
            T.TableStatsRequest(dbName=DB, tblName="plain", colNames=["a", "b"])
        ).tableStats,
        "table_column_statistics": c.get_table_column_statistics(DB, "plain", "a"),
        "partition_stats": c.get_partitions_statistics_req(
            T.PartitionsStatsRequest(
                dbName=DB, tblName="events", colNames=["a"], partNames=names[:2]
            )
        ).partStats,
        "aggr": c.get_aggr_stats_for(
            T.PartitionsStatsRequest(
                dbName=DB,
                tblName="events",
                colNames=["a"],
                partNames=["ds=2024-01-01/hr=1", "ds=2024-01-02/hr=1", "ds=2024-02-01/hr=1"],
            )
        ),
    }
    for i, f in enumerate(filters):
        out[f"filter_{i}"] = c.get_partitions_by_filter(DB, "events", f, -1)
        out[f"count_{i}"] = c.get_num_partitions_by_filter(DB, "events", f)
    return out


def _plain(value: Any) -> Any:
    """Answers as comparable values: thriftpy2 objects for structs, else as they are."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "thrift_spec"):
        return ours(value)
    return value


def test_every_cached_read_equals_the_database_path(
    database_url: str,
    tmp_path: Path,
    T,  # noqa: F811
) -> None:
    with instances(database_url, tmp_path, n=1) as (svc,), clients(svc) as (c,):
        _fill(c, T)
        settle(svc)
        with Counted():
            _calls(c, T)  # statistics are loaded on their first read
        settle(svc)
        with Counted() as counted:
            cached = _calls(c, T)
        # A name the cache does not hold may exist: get_table_objects_by_name asks the
        # database for "x" (and only for it).
        misses = {k: v for k, v in counted.delta.items() if k[0] == "hms_cache_misses"}
        assert misses == {("hms_cache_misses", "get_table_objects_by_name", "not_cached"): 1}
        assert counted.hits("get_partitions_by_filter") == 4
        assert counted.hits("get_aggr_stats_for") == 1
    with instances(database_url, tmp_path, n=1, cache_enabled=False) as (svc,):
        assert svc.cache is None
        with clients(svc) as (c,), Counted() as counted:
            direct = _calls(c, T)
        assert not counted.delta
    for call, answer in cached.items():
        assert _plain(answer) == _plain(direct[call]), call


def test_replies_are_written_from_bytes_or_decoded_for_the_compact_protocol(
    sqlite_url: str, tmp_path: Path, T
) -> None:
    kinds = (("binary", "buffered"), ("compact", "buffered"), ("binary", "framed"))
    for protocol, transport in kinds:
        settings = {"protocol": protocol, "transport": transport}
        with instances(sqlite_url, tmp_path, n=1, **settings) as (svc,):
            client, trans = apache_client(
                "127.0.0.1", svc.port, framed=transport == "framed", compact=protocol == "compact"
            )
            try:
                if transport == "buffered" and protocol == "binary":
                    _fill(client, T)
                settle(svc)
                got = client.get_partitions(DB, "events", -1)
                req = client.get_table_req(T.GetTableRequest(dbName=DB, tblName="events"))
                assert len(got) == 9 and req.table.tableName == "events"
                assert ours(got) == svc.store.get_partitions("hive", DB, "events")
                assert ours(req.table) == svc.store.get_table("hive", DB, "events")
                assert isinstance(ours(req.table), hms.Table)
            finally:
                trans.close()


def test_loads_build_the_bytes_the_database_path_objects_encode_to(
    database_url: str,
    tmp_path: Path,  # noqa: F811
) -> None:
    """The lean load (rows to bytes, no objects) on unusual descriptors: own columns, no
    location, descriptor parameters, bucket and sort columns, skew, serde parameters, a null
    parameter value, several keys."""
    from hms_cache_proxy import thrift_bytes
    from hms_cache_proxy.store.cache.entries import TableName
    from hms_cache_proxy.store.cached.prewarm import build_entry
    from hms_cache_proxy.store.sql import cacheload

    with instances(database_url, tmp_path, n=1, prewarm=False) as (svc,):
        store = svc.store
        store.create_database(hms.Database(name=DB, parameters={}, catalogName="hive"))

        def sd(**extra: Any) -> hms.StorageDescriptor:
            fields = {
                "cols": [hms.FieldSchema(name="a", type="int", comment="c")],
                "location": f"file:{tmp_path}/x",
                "inputFormat": "in",
                "outputFormat": "out",
                "compressed": False,
                "numBuckets": -1,
                "serdeInfo": hms.SerDeInfo(serializationLib="lib", parameters={"k": "v"}),
                "bucketCols": [],
                "sortCols": [],
                "parameters": {},
                **extra,
            }
            return hms.StorageDescriptor(**fields)

        keys = [hms.FieldSchema(name="k1", type="string"), hms.FieldSchema(name="k2", type="int")]
        store.create_table(
            hms.Table(
                tableName="odd",
                dbName=DB,
                catName="hive",
                owner="o",
                sd=sd(),
                partitionKeys=keys,
                parameters={},
                tableType="MANAGED_TABLE",
            )
        )
        variants = [
            sd(),
            sd(cols=[hms.FieldSchema(name="b", type="string", comment=None)]),
            sd(location=None),
            sd(
                parameters={"p": "1"},
                bucketCols=["a"],
                numBuckets=4,
                sortCols=[hms.Order(col="a", order=0)],
            ),
            sd(
                serdeInfo=hms.SerDeInfo(
                    name="n", serializationLib="other", parameters={}, description="d", serdeType=1
                )
            ),
            sd(
                skewedInfo=hms.SkewedInfo(
                    skewedColNames=["a"],
                    skewedColValues=[["1"], ["2"]],
                    skewedColValueLocationMaps={("1",): "file:/s"},
                ),
                storedAsSubDirectories=True,
            ),
        ]
        parts = [
            hms.Partition(
                values=[f"v{i}", str(i)],
                dbName=DB,
                tableName="odd",
                sd=v,
                parameters={"only": str(i)},
                catName="hive",
            )
            for i, v in enumerate(variants)
        ]
        store.add_partitions("hive", DB, "odd", parts)
        loaded = cacheload.load_table(store, "hive", DB, "odd")
        entry = build_entry(TableName("hive", DB, "odd"), loaded)
        expected = store.get_partitions("hive", DB, "odd")
        assert entry.parts.names() == [f"k1=v{i}/k2={i}" for i in range(len(variants))]
        for name, obj in zip(entry.parts.names(), expected, strict=True):
            assert entry.parts.by_name[name].encoded() == thrift_bytes.encode(obj), name
        assert thrift_bytes.encode(loaded.table) == thrift_bytes.encode(
            store.get_table("hive", DB, "odd")
        )

        # Prewarm's batch: the same bytes for every table, read in one snapshot with a few
        # queries (a second partitioned table, one without partitions, one not partitioned,
        # one that does not exist).
        for name, with_parts in (("odd2", True), ("empty", True), ("flat", False)):
            store.create_table(
                hms.Table(
                    tableName=name,
                    dbName=DB,
                    catName="hive",
                    owner="o",
                    sd=sd(),
                    partitionKeys=keys if with_parts else [],
                    parameters={},
                    tableType="MANAGED_TABLE",
                )
            )
        store.add_partitions(
            "hive",
            DB,
            "odd2",
            [
                hms.Partition(values=[f"w{i}", str(i)], dbName=DB, tableName="odd2", sd=v)
                for i, v in enumerate(variants[:3])
            ],
        )
        names = ["odd", "odd2", "empty", "flat", "gone"]
        batch = cacheload.load_tables(store, [("hive", DB, n) for n in names])
        assert sorted(batch) == [("hive", DB, n) for n in sorted(names) if n != "gone"]
        for name in names[:-1]:
            one = cacheload.load_table(store, "hive", DB, name)
            many = batch[("hive", DB, name)]
            assert thrift_bytes.encode(many.table) == thrift_bytes.encode(one.table), name
            assert many.partitions == one.partitions, name
            assert many.at == batch[("hive", DB, "odd")].at
        assert len(batch[("hive", DB, "odd2")].partitions) == 3
        assert batch[("hive", DB, "empty")].partitions == []
