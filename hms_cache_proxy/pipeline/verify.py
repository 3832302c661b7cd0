"""The verification job: is everything the jobs committed visible through another instance?

1. Poll the instance with a plain Thrift client (get_partition_names per table) until every
   partition in the manifest is listed, then until each analysed partition carries its row
   count (get_partition) and each table its column statistics (get_table).
2. Report per partition: committed, visible, lag (exact where the writing job observed this
   instance right after its commit, else bounded by verify's first poll); p50/p99/max.
3. Read the tables through the instance with Spark, filtered to the manifest's days so the
   filter reaches the metastore as get_partitions_by_filter, and compare row counts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.pipeline import manifest as pipeline_manifest
from hms_cache_proxy.pipeline import session
from hms_cache_proxy.pipeline.args import manifest_path, spark_conf
from hms_cache_proxy.pipeline.errors import PipelineError
from hms_cache_proxy.pipeline.thrift_client import connect, wait_visible

NUM_ROWS = "spark.sql.statistics.numRows"
COL_STATS = "spark.sql.statistics.colStats."


def split_name(name: str) -> list[tuple[str, str]]:
    """``ds=2024-03-01/country=US`` as [(ds, 2024-03-01), (country, US)]."""
    out = []
    for part in name.split("/"):
        key, sep, value = part.partition("=")
        if not sep:
            raise PipelineError(f"bad partition name in the manifest: {name!r}")
        out.append((key, value))
    return out


def _stats_missing(client: Any, db: str, manifest: pipeline_manifest.Manifest) -> list[str]:
    """What statistics the instance does not show yet (partition row counts, column stats)."""
    missing = []
    for e in manifest.partitions.values():
        if not e.stats:
            continue
        values = [v for _, v in split_name(e.partition)]
        try:
            params = client.get_partition(db, e.table, values).parameters or {}
        except hms.NoSuchObjectException:
            params = {}
        if params.get(NUM_ROWS) != str(e.rows):
            missing.append(f"{e.key}: {NUM_ROWS}={params.get(NUM_ROWS)!r}, expected {e.rows}")
    for table, info in manifest.tables.items():
        cols = info.get("column_stats") or []
        try:
            params = client.get_table(db, table).parameters or {}
        except hms.NoSuchObjectException:
            params = {}
        for col in cols:
            if not any(k.startswith(f"{COL_STATS}{col}.") for k in params):
                missing.append(f"{table}: no column statistics for {col}")
    return missing


def check_thrift(
    uri: str, manifest: pipeline_manifest.Manifest, timeout_s: float, tls_ca: str | None = None
) -> dict[str, Any]:
    """Visibility and statistics through ``uri``, waiting up to ``timeout_s``."""
    db = manifest.database
    wanted: dict[str, list[str]] = {}
    for e in manifest.partitions.values():
        wanted.setdefault(e.table, []).append(e.partition)
    deadline = time.monotonic() + timeout_s
    with connect(uri, tls_ca=tls_ca) as client:
        seen = wait_visible(client, db, wanted, timeout_s)
        stats_missing = _stats_missing(client, db, manifest)
        while stats_missing and time.monotonic() < deadline:
            time.sleep(0.05)
            stats_missing = _stats_missing(client, db, manifest)
    rows = [
        pipeline_manifest.visibility(e, seen.get((e.table, e.partition)), uri)
        for e in sorted(manifest.partitions.values(), key=lambda e: (e.committed_at, e.key))
    ]
    return {"visibility": rows, "stats_missing": stats_missing}


def check_spark(args: argparse.Namespace, manifest: pipeline_manifest.Manifest) -> list[str]:
    """Row counts read with Spark through the instance, per partition; the mismatches."""
    spark = session.build(
        "hms-cache-proxy-verify", args.metastore_uri, args.warehouse, args.master, spark_conf(args)
    )
    problems = []
    try:
        for table, entries in sorted(manifest.by_table().items()):
            keys = [k for k, _ in split_name(entries[0].partition)]
            first = keys[0]
            values = sorted({split_name(e.partition)[0][1] for e in entries})
            in_list = ", ".join(f"'{v}'" for v in values)
            cols = ", ".join(keys)
            got = {
                "/".join(f"{k}={r[k]}" for k in keys): r["n"]
                for r in spark.sql(
                    f"SELECT {cols}, count(*) AS n FROM {manifest.database}.{table} "
                    f"WHERE {first} IN ({in_list}) GROUP BY {cols}"
                ).collect()
            }
            for e in entries:
                if got.get(e.partition, 0) != e.rows:
                    problems.append(
                        f"{e.key}: Spark read {got.get(e.partition, 0)} rows, expected {e.rows}"
                    )
            print(
                f"spark read {table}: {len(got)} partitions, {sum(got.values())} rows", flush=True
            )
    finally:
        spark.stop()
    return problems


def _ts(t: float | None) -> str:
    if t is None:
        return "never"
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def print_report(uri: str, rows: list[pipeline_manifest.Visibility]) -> dict[str, Any]:
    """The per-partition table and the summary; returns the summary."""
    print(f"{'table':<14} {'partition':<28} {'committed':>12} {'visible':>12} {'lag ms':>9}  how")
    for v in rows:
        lag = "-" if v.lag is None else f"{v.lag * 1000:.1f}"
        how = "NOT VISIBLE" if v.seen_at is None else "at commit" if v.exact else "first poll, <="
        print(
            f"{v.entry.table:<14} {v.entry.partition:<28} {_ts(v.entry.committed_at):>12} "
            f"{_ts(v.visible_at):>12} {lag:>9}  {how}"
        )
    lags = [v.lag for v in rows if v.lag is not None]
    exact = [v.lag for v in rows if v.exact and v.lag is not None]
    summary = {
        "all": pipeline_manifest.summarize(lags),
        "exact": pipeline_manifest.summarize(exact),
    }
    for label, s in (
        ("measured at commit", summary["exact"]),
        ("all (incl. bounds)", summary["all"]),
    ):
        if s["count"]:
            print(
                f"lag on {uri}, {label}: {s['count']} partitions, p50 {s['p50'] * 1000:.1f} ms, "
                f"p99 {s['p99'] * 1000:.1f} ms, max {s['max'] * 1000:.1f} ms"
            )
    return summary


def run(args: argparse.Namespace) -> int:
    path = manifest_path(args)
    if not path.exists():
        raise PipelineError(f"no manifest at {path}: run etl or backfill first, or give --manifest")
    manifest = pipeline_manifest.load(path, args.database)
    if not manifest.partitions:
        raise PipelineError(f"the manifest {path} records no partitions")
    if not args.no_spark:
        session.require_pyspark()
    result = check_thrift(args.metastore_uri, manifest, args.timeout, args.tls_ca)
    rows: list[pipeline_manifest.Visibility] = result["visibility"]
    summary = print_report(args.metastore_uri, rows)
    invisible = [v.entry.key for v in rows if v.seen_at is None]
    problems = [
        f"{k}: not visible on {args.metastore_uri} within {args.timeout:g} s" for k in invisible
    ]
    problems += result["stats_missing"]
    if not args.no_spark and not invisible:
        problems += check_spark(args, manifest)
    if args.report:
        Path(args.report).write_text(
            json.dumps(
                {
                    "uri": args.metastore_uri,
                    "summary": summary,
                    "problems": problems,
                    "partitions": [
                        {
                            "table": v.entry.table,
                            "partition": v.entry.partition,
                            "rows": v.entry.rows,
                            "committed_at": v.entry.committed_at,
                            "visible_at": v.visible_at,
                            "lag_s": v.lag,
                            "exact": v.exact,
                            "repaired": v.entry.repaired,
                            "stats": v.entry.stats,
                        }
                        for v in rows
                    ],
                },
                indent=1,
            )
        )
    for p in problems:
        print(f"FAIL {p}", flush=True)
    print(f"verify: {len(rows)} partitions, {len(problems)} problems", flush=True)
    return 1 if problems else 0
