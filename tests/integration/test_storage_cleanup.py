"""Storage descriptors go with what owned them: after alter_partitions, drop_partitions and
drop_table of a table whose descriptors have every kind of child row (parameters, bucket and
sort columns, skew with string lists, serde parameters, own columns), no descriptor, serde,
string list or column descriptor row is left behind, on SQLite and PostgreSQL (where the
descriptors go in one statement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from tests.support.cache import instances

DB = "tidy"
CHILDREN = (
    "SDS",
    "SD_PARAMS",
    "BUCKETING_COLS",
    "SORT_COLS",
    "SKEWED_COL_NAMES",
    "SKEWED_VALUES",
    "SKEWED_COL_VALUE_LOC_MAP",
    "SKEWED_STRING_LIST",
    "SKEWED_STRING_LIST_VALUES",
    "SERDES",
    "SERDE_PARAMS",
    "CDS",
    "COLUMNS_V2",
)


def _counts(store: Any) -> dict[str, int]:
    with store.db.read() as conn:
        return {
            t: conn.execute(
                select(func.count()).select_from(schema.metadata.tables[t])
            ).scalar_one()
            for t in CHILDREN
        }


def _sd(tmp: Path, i: int) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="a", type="int"), hms.FieldSchema(name=f"c{i}", type="int")],
        location=f"file:{tmp}/p{i}",
        inputFormat="in",
        outputFormat="out",
        compressed=False,
        numBuckets=4,
        serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={"k": str(i)}),
        bucketCols=["a"],
        sortCols=[hms.Order(col="a", order=1)],
        parameters={"p": str(i)},
        skewedInfo=hms.SkewedInfo(
            skewedColNames=["a"],
            skewedColValues=[["1"], [str(i)]],
            skewedColValueLocationMaps={("1",): f"file:{tmp}/s{i}"},
        ),
        storedAsSubDirectories=True,
    )


def test_nothing_of_a_descriptor_is_left_behind(database_url: str, tmp_path: Path) -> None:
    with instances(database_url, tmp_path, n=1, cache_enabled=False) as (svc,):
        store = svc.store
        store.create_database(hms.Database(name=DB, parameters={}, catalogName="hive"))
        before = _counts(store)
        store.create_table(
            hms.Table(
                tableName="t",
                dbName=DB,
                catName="hive",
                owner="o",
                sd=_sd(tmp_path, 0),
                partitionKeys=[hms.FieldSchema(name="k", type="string")],
                parameters={},
                tableType="EXTERNAL_TABLE",
            )
        )
        parts = [
            hms.Partition(
                values=[f"v{i}"],
                dbName=DB,
                tableName="t",
                sd=_sd(tmp_path, i),
                parameters={},
                catName="hive",
            )
            for i in range(1, 6)
        ]
        store.add_partitions("hive", DB, "t", parts)
        grown = _counts(store)
        assert all(grown[t] > before[t] for t in CHILDREN), grown
        altered = store.get_partitions("hive", DB, "t")
        for p in altered:
            p.sd.parameters["p"] = "altered"
        store.alter_partitions("hive", DB, "t", altered)
        assert _counts(store) == grown  # each old descriptor went, a new one came
        assert {p.sd.parameters["p"] for p in store.get_partitions("hive", DB, "t")} == {"altered"}
        # New columns: the old column descriptors, which nothing uses any more, go too.
        altered = store.get_partitions("hive", DB, "t")
        for i, p in enumerate(altered):
            p.sd.cols = [hms.FieldSchema(name="a", type="int"), hms.FieldSchema(f"d{i}", "int")]
        store.alter_partitions("hive", DB, "t", altered)
        assert _counts(store) == grown
        assert [p.sd.cols[1].name for p in store.get_partitions("hive", DB, "t")] == [
            f"d{i}" for i in range(5)
        ]
        store.drop_partitions("hive", DB, "t", ["k=v1", "k=v2"])
        fewer = _counts(store)
        assert fewer["SDS"] == grown["SDS"] - 2
        assert fewer["SKEWED_STRING_LIST"] == grown["SKEWED_STRING_LIST"] - 2 * 3
        store.drop_table("hive", DB, "t")
        assert _counts(store) == before
