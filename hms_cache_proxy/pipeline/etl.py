"""The daily ETL job.

For each day: land the day's raw events as Parquet files written outside Spark's catalog and
register them with MSCK REPAIR TABLE; INSERT OVERWRITE the day's static partition of
``events``; aggregate the day into ``daily_country`` (ds, country) with a dynamic-partition
insert; ANALYZE the new partition. After the last day, column statistics for ``events``.
Every statement rewrites what it covers, so re-running a day leaves the same state.
"""

from __future__ import annotations

import argparse
import datetime
import time
from typing import Any

from hms_cache_proxy.pipeline import session
from hms_cache_proxy.pipeline.args import manifest_path, resolve_dates, spark_conf
from hms_cache_proxy.pipeline.errors import PipelineError
from hms_cache_proxy.pipeline.recorder import Recorder, now, recorder
from hms_cache_proxy.pipeline.source import ddl, events_sql, partition_name

STATS_COLUMNS = ("user_id", "country", "amount")


def table_location(spark: Any, qualified: str) -> str:
    """The table's storage location as the metastore has it."""
    rows = spark.sql(f"DESCRIBE FORMATTED {qualified}").collect()
    for row in rows:
        if row["col_name"] == "Location":
            return row["data_type"]
    raise PipelineError(f"the metastore returned no location for {qualified}")


def partitions(spark: Any, qualified: str, spec: str = "") -> list[str]:
    clause = f" PARTITION ({spec})" if spec else ""
    return [r[0] for r in spark.sql(f"SHOW PARTITIONS {qualified}{clause}").collect()]


def create_tables(spark: Any, database: str, warehouse: str) -> None:
    landing = f"{warehouse.rstrip('/')}/landing/{database}/raw_events"
    for stmt in ddl(database, landing):
        spark.sql(stmt)


def run_day(
    spark: Any, rec: Recorder, database: str, day: datetime.date, rows_per_day: int
) -> None:
    db, ds = database, day.isoformat()
    # 1. Files arrive outside the catalog (plain Parquet writes into a partition directory),
    #    then MSCK REPAIR TABLE finds the directory and registers the partition.
    landing = table_location(spark, f"{db}.raw_events")
    raw = partition_name(ds=ds)
    spark.sql(events_sql([day], rows_per_day, with_ds=False)).write.mode("overwrite").parquet(
        f"{landing}/{raw}"
    )
    spark.sql(f"MSCK REPAIR TABLE {db}.raw_events")
    rec.commit("etl", "raw_events", {raw: rows_per_day}, now(), repaired=True)
    if raw not in partitions(spark, f"{db}.raw_events"):
        raise PipelineError(f"MSCK REPAIR TABLE {db}.raw_events did not register {raw}")
    spark.sql(f"REFRESH TABLE {db}.raw_events")

    # 2. Static partition: the day's events, pruned read from the landing table.
    spark.sql(
        f"INSERT OVERWRITE TABLE {db}.events PARTITION (ds='{ds}') "
        f"SELECT event_id, user_id, country, amount FROM {db}.raw_events WHERE ds = '{ds}'"
    )
    rec.commit("etl", "events", {raw: rows_per_day}, now())

    # 3. Dynamic partitions: one per (ds, country) present that day.
    countries = spark.sql(f"SELECT DISTINCT country FROM {db}.events WHERE ds = '{ds}'")
    expected = sorted(partition_name(ds=ds, country=r[0]) for r in countries.collect())
    spark.sql(
        f"INSERT OVERWRITE TABLE {db}.daily_country PARTITION (ds, country) "
        "SELECT count(*) AS events, count(DISTINCT user_id) AS users, "
        "round(sum(amount), 2) AS amount, ds, country "
        f"FROM {db}.events WHERE ds = '{ds}' GROUP BY ds, country"
    )
    rec.commit("etl", "daily_country", dict.fromkeys(expected, 1), now())
    written = partitions(spark, f"{db}.daily_country", f"ds='{ds}'")
    if sorted(written) != expected:
        raise PipelineError(
            f"the dynamic insert into {db}.daily_country wrote {written}, expected {expected}"
        )

    # 4. Partition statistics (numRows, sizeInBytes in the partition's parameters).
    spark.sql(f"ANALYZE TABLE {db}.events PARTITION (ds='{ds}') COMPUTE STATISTICS")
    rec.mark_stats("events", [raw])


def column_stats(spark: Any, rec: Recorder, database: str) -> None:
    """Table and column statistics of ``events`` (Spark keeps them in the table's parameters;
    an insert clears them, so each writing job ends with this)."""
    cols = ", ".join(STATS_COLUMNS)
    spark.sql(f"ANALYZE TABLE {database}.events COMPUTE STATISTICS FOR COLUMNS {cols}")
    rec.table_info("events", column_stats=list(STATS_COLUMNS))


def run(args: argparse.Namespace) -> int:
    days = resolve_dates(args)
    path = manifest_path(args)
    conf = spark_conf(args)
    session.require_pyspark()
    with recorder(path, args.database, args.observe_uri, args.tls_ca) as rec:
        spark = session.build(
            "hms-cache-proxy-etl", args.metastore_uri, args.warehouse, args.master, conf
        )
        try:
            create_tables(spark, args.database, args.warehouse)
            for day in days:
                t0 = time.monotonic()
                run_day(spark, rec, args.database, day, args.rows_per_day)
                print(f"etl {day}: done in {time.monotonic() - t0:.1f} s", flush=True)
            column_stats(spark, rec, args.database)
        finally:
            spark.stop()
        print(f"etl: {len(days)} day(s) into {args.database}; manifest {path}", flush=True)
        if rec.observer is not None:
            print(rec.summary(), flush=True)
    return 0
