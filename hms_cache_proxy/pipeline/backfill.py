"""The backfill job: many daily partitions of ``events`` in one statement.

``--method insert`` (default): Spark writes every day's files in one dynamic-partition INSERT
OVERWRITE, then registers the new partitions. ``--method add``: one ALTER TABLE ADD IF NOT
EXISTS PARTITION ... listing every day, empty partitions, the metastore's work alone. Either way
Spark sends add_partitions calls of spark.sql.addPartitionInBatch.size (100) partitions: a
burst of partition creates for the metastore and its cache. Prints partitions/s.
"""

from __future__ import annotations

import argparse
import time

from hms_cache_proxy.pipeline import session
from hms_cache_proxy.pipeline.args import manifest_path, resolve_dates, spark_conf
from hms_cache_proxy.pipeline.etl import column_stats, create_tables, partitions
from hms_cache_proxy.pipeline.recorder import now, recorder
from hms_cache_proxy.pipeline.source import events_sql, partition_name


def run(args: argparse.Namespace) -> int:
    days = resolve_dates(args)
    path = manifest_path(args)
    conf = spark_conf(args)
    session.require_pyspark()
    db = args.database
    with recorder(path, db, args.observe_uri, args.tls_ca) as rec:
        spark = session.build(
            "hms-cache-proxy-backfill", args.metastore_uri, args.warehouse, args.master, conf
        )
        try:
            create_tables(spark, db, args.warehouse)
            before = set(partitions(spark, f"{db}.events"))
            names = [partition_name(ds=d.isoformat()) for d in days]
            new = [n for n in names if n not in before]
            t0 = time.monotonic()
            if args.method == "add":
                specs = " ".join(f"PARTITION (ds='{d.isoformat()}')" for d in days)
                spark.sql(f"ALTER TABLE {db}.events ADD IF NOT EXISTS {specs}")
                rows, what = dict.fromkeys(new, 0), "empty"
            else:
                spark.sql(
                    f"INSERT OVERWRITE TABLE {db}.events PARTITION (ds) "
                    + events_sql(days, args.rows_per_day)
                )
                rows, what = dict.fromkeys(names, args.rows_per_day), f"{args.rows_per_day} rows"
            committed = now()
            elapsed = time.monotonic() - t0
            if rows:
                rec.commit("backfill", "events", rows, committed)
            print(
                f"backfill: {len(names)} partitions of {db}.events ({len(new)} new, {what} "
                f"each, method {args.method}) in {elapsed:.2f} s: "
                f"{len(names) / elapsed:.1f} partitions/s",
                flush=True,
            )
            column_stats(spark, rec, db)
        finally:
            spark.stop()
        print(f"backfill: manifest {path}", flush=True)
        if rec.observer is not None:
            print(rec.summary(), flush=True)
    return 0
